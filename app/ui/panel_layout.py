"""The panel's layout remembered between runs: its width, whether it is collapsed and which sections are
open, in `panel.json` beside `recent.json` in the settings folder (`app.paths.config_dir()`).

A missing or unreadable file starts from the defaults; a failed save is reported once, never raised.
"""

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class PanelLayout:
    path: Path
    saved: dict = field(default_factory=dict)  # what the file holds (the last layout read or written)
    error: str = ""  # why the last save failed

    @classmethod
    def load(cls, path) -> "PanelLayout":
        layout = cls(Path(path))
        try:
            stored = json.loads(layout.path.read_text())
            layout.saved = {"width": float(stored["width"]), "collapsed": bool(stored["collapsed"]),
                            "open_sections": [str(title) for title in stored["open_sections"]]}
        except (OSError, ValueError, TypeError, KeyError):
            layout.saved = {}
        return layout

    def restore(self, state) -> None:
        """The remembered layout into the panel's state (nothing when none was saved)."""
        if self.saved:
            state.panel_width, state.panel_collapsed = self.saved["width"], self.saved["collapsed"]
            state.open_sections = tuple(self.saved["open_sections"])

    def remember(self, state) -> None:
        """Save the panel's layout when it changed since the last save."""
        now = {"width": float(state.panel_width), "collapsed": bool(state.panel_collapsed),
               "open_sections": list(state.open_sections)}
        if now == self.saved:
            return
        self.saved = now
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps(now, indent=1))
            self.error = ""
        except OSError as error:
            if not self.error:
                state.messages.append(f"Could not save the panel layout to {self.path}: {error.strerror or error}")
            self.error = str(error)
