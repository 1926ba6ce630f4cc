"""What an earlier run left unsaved, offered back when the viewer starts: the recording journals of takes
a crash, a kill or a power cut interrupted (`pfnn_core.motion.journal`, written by `app.jobs.recorder`)
and the Editor's autosaved edit lists (`app.jobs.edits.EditAutosave`).

The offer (`app.ui.recovery.recovery_dialog`) asks per item: recover the take to a new file in the
recordings folder named by when it started / restore the edit list, discard it, or decide later (it
stays on disk and is offered again, and the Record and Editor sections reopen the dialog). Nothing is
removed unless the person chose to discard it or it was written back in full.
"""

import os
import secrets
import time
from datetime import datetime
from pathlib import Path

from app.jobs.edits import AUTOSAVE_FOLDER, EditAutosave, restore_document
from app.jobs.recorder import journal_folder
from app.paths import free_path
from app.ui.messages import user_error
from app.ui.recovery import SavedEdits
from pfnn_core import edit, files
from pfnn_core.jsonfile import read_json
from pfnn_core.motion import journal


def autosaved_edits(folder, own: Path | None = None) -> list:
    """The autosaved edit lists in `folder` left by runs no longer going (oldest first), as `SavedEdits`."""
    folder = Path(folder)
    found = []
    for path in sorted(folder.glob("edit-list-*.json")) if folder.is_dir() else []:
        if path == own or _writer_alive(path):
            continue
        try:
            document = read_json(path, "autosaved edit list", edit.EditError)
            pieces = len(document["editor"]["pieces"])
            found.append(SavedEdits(path, pieces, str(document.get("autosaved", "")), ""))
        except (edit.EditError, KeyError, TypeError):
            found.append(SavedEdits(path, 0, "", f"{path}: not an autosaved edit list"))
    return found


def _writer_alive(path: Path) -> bool:
    """True when the process that autosaves to `path` (its id ends the name) is still running."""
    pid = path.stem.rsplit("-", 1)[-1]
    if not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def recovered_name(started: str) -> str:
    """'pfnn-YYYYmmdd-HHMMSS-recovered.bvh' from when the take started (now, when that is unknown)."""
    try:
        when = datetime.fromisoformat(started)
    except ValueError:
        when = datetime.now()
    return f"pfnn-{when:%Y%m%d-%H%M%S}-recovered.bvh"


class Recovery:
    """Finds what earlier runs left, runs the dialog's choices, and keeps this run's edit list autosaved."""

    def __init__(self, state, clock=time.monotonic):
        self.state = state
        work = Path(state.work_dir)
        self.journals = journal_folder(work)
        self.autosave_folder = work / AUTOSAVE_FOLDER
        own = self.autosave_folder / f"edit-list-{datetime.now():%Y%m%d-%H%M%S}-{secrets.token_hex(2)}-{os.getpid()}.json"
        self.autosave = EditAutosave(own, clock=clock)
        self.find()
        state.recovery.open = state.recovery.pending > 0

    def find(self) -> None:
        """What is there to offer now (journals being written and this run's own autosave left out)."""
        panel = self.state.recovery
        panel.takes = journal.recoverable(self.journals)
        panel.edits = autosaved_edits(self.autosave_folder, self.autosave.path)

    def action(self, choice) -> None:
        """One choice of the dialog: ('recover' | 'discard', journal path), ('restore' | 'forget', edit
        list path), ('later', None), ('show', None)."""
        kind, path = choice
        panel = self.state.recovery
        panel.message, panel.error = "", ""
        if kind in ("later", "show"):
            self.find()
            panel.open = kind == "show" and panel.pending > 0
            return
        try:
            {"recover": self.recover_take, "discard": self.discard_take, "restore": self.restore_edits,
             "forget": self.forget_edits}[kind](Path(path))
        except (OSError, journal.JournalError, edit.EditError) as error:
            panel.error = files.explain(error) if isinstance(error, OSError) else user_error(error)
        self.find()
        panel.open = panel.open and panel.pending > 0

    def recover_take(self, path: Path) -> None:
        out = free_path(self.takes_folder() / recovered_name(self._started(path)))
        out.parent.mkdir(parents=True, exist_ok=True)
        contents = journal.recover(path, out)  # the journal stays until the BVH is whole on disk
        journal.discard(path)
        frames = contents.motion.num_frames
        self.state.record.last_path = str(out)
        self.state.recovery.message = f"Recovered {frames} frames ({frames * contents.motion.frame_time:.1f} s) to {out}"
        self.state.toast(f"Recovered take {out.name} ({frames} frames)")

    def discard_take(self, path: Path) -> None:
        journal.discard(path)
        self.state.recovery.message = f"Discarded the unsaved take {path.name}"

    def restore_edits(self, path: Path) -> None:
        document = read_json(path, "autosaved edit list", edit.EditError)
        restore_document(self.state.editor, document.get("editor") if isinstance(document, dict) else None, str(path))
        path.unlink(missing_ok=True)  # this run's autosave holds it from now on
        self.state.open_sections = tuple(s for s in self.state.open_sections if s != "Editor") + ("Editor",)
        self.state.recovery.message = f"Restored the edit list ({len(self.state.editor.pieces)} pieces)"
        self.autosave.update(self.state.editor, force=True)

    def forget_edits(self, path: Path) -> None:
        path.unlink(missing_ok=True)
        self.state.recovery.message = f"Discarded the autosaved edit list {path.name}"

    def takes_folder(self) -> Path:
        """The Record section's folder (its file's folder when it names a file)."""
        asked = self.state.record.path.strip() or "recordings/"
        folder = self.state.resolve(asked)
        return folder if asked.endswith(("/", "\\")) or folder.suffix.lower() != ".bvh" else folder.parent

    def _started(self, path: Path) -> str:
        return next((take.started for take in self.state.recovery.takes if take.path == path), "")

    def frame(self) -> None:
        """Each frame: the edit list autosaved when it changed (at most every few seconds)."""
        self.autosave.update(self.state.editor)
        self.state.recovery.autosave_error = self.autosave.error

    def close(self) -> None:
        """The viewer closes: the last change autosaved (kept for the next start while it is unsaved)."""
        self.autosave.update(self.state.editor, force=True)
