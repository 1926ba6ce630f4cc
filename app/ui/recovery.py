"""The recovery offer: a dialog at the start listing what an earlier run left unsaved (takes from
recording journals, autosaved edit lists), each with recover / discard, and "Later" (kept on disk,
offered again; the Record and Editor sections reopen it). `recovery_dialog(state, size)` only reads and
writes `state.recovery` and queues `state.request("recovery", (choice, path))`; `app.jobs.recovery` runs
the choice."""

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from imgui_bundle import imgui

from app.ui.theme import DIM_COLOUR, ERROR_COLOUR, OK_COLOUR
from app.ui.widgets import remember_rect, wrapped


class SavedEdits(NamedTuple):
    path: Path
    pieces: int
    autosaved: str  # when (ISO 8601, local time)
    problem: str  # why it cannot be restored ('' when it can)


@dataclass
class RecoveryPanel:
    takes: list = field(default_factory=list)  # journal.JournalSummary of takes an earlier run did not save
    edits: list = field(default_factory=list)  # SavedEdits an earlier run autosaved
    open: bool = False  # the dialog shows
    message: str = ""
    error: str = ""
    autosave_error: str = ""  # why this run's edit list could not be autosaved

    @property
    def pending(self) -> int:
        return len(self.takes) + len(self.edits)


def _choice(state, label: str, name: str, choice: str, path) -> None:
    if imgui.button(f"{label}##{name}"):
        state.request("recovery", (choice, str(path) if path is not None else None))
    remember_rect(state, name)


def _take_rows(state) -> None:
    for index, take in enumerate(state.recovery.takes):
        if take.problem:
            wrapped(ERROR_COLOUR, f"Take {take.path.name}: cannot be recovered ({take.problem})")
        else:
            imgui.text(f"Take: {take.frames} frames ({take.duration_s:.1f} s), started {take.started.replace('T', ' ')}")
            _choice(state, "Recover to the recordings folder", f"recover_take_{index}", "recover", take.path)
            imgui.same_line()
        _choice(state, "Discard", f"discard_take_{index}", "discard", take.path)


def _edit_rows(state) -> None:
    for index, saved in enumerate(state.recovery.edits):
        if saved.problem:
            wrapped(ERROR_COLOUR, saved.problem)
        else:
            imgui.text(f"Edit list: {saved.pieces} pieces, autosaved {saved.autosaved.replace('T', ' ')}")
            _choice(state, "Restore in the Editor", f"restore_edits_{index}", "restore", saved.path)
            imgui.same_line()
        _choice(state, "Discard", f"forget_edits_{index}", "forget", saved.path)


def recovery_dialog(state, display_size) -> None:
    panel = state.recovery
    if not panel.open:
        return
    imgui.set_next_window_pos(imgui.ImVec2(display_size[0] / 2, display_size[1] / 2), imgui.Cond_.always,
                              imgui.ImVec2(0.5, 0.5))
    imgui.begin("Unsaved work from the last run###recovery", None, imgui.WindowFlags_.always_auto_resize |
                imgui.WindowFlags_.no_collapse | imgui.WindowFlags_.no_move)
    imgui.text("The viewer stopped before saving these (a crash, a kill or a power cut):")
    _take_rows(state)
    _edit_rows(state)
    imgui.separator()
    _choice(state, "Later", "recovery_later", "later", None)
    imgui.same_line()
    imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), "kept on disk and offered again (Record / Editor sections)")
    wrapped(OK_COLOUR, panel.message)
    wrapped(ERROR_COLOUR, panel.error)
    imgui.end()


def reopen_button(state, what: str) -> None:
    """In a section: 'N unsaved takes / edit lists from an earlier run...' reopening the dialog."""
    count = len(state.recovery.takes if what == "takes" else state.recovery.edits)
    if count and imgui.small_button(f"{count} unsaved {what} from an earlier run...##reopen_{what}"):
        state.request("recovery", ("show", None))
