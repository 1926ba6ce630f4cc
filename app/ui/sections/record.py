"""The panel's Record section: where the BVH recording of the live character goes, record / stop, a
journal that stopped (disk trouble: the take goes on in memory), takes an earlier run left unsaved."""

from imgui_bundle import imgui

from app.ui.path_fields import path_field
from app.ui.recovery import reopen_button
from app.ui.theme import OK_COLOUR
from app.ui.widgets import error_line, recording_button, tooltip


def record_section(state) -> None:
    record = state.record
    path_field(state, "record", "BVH folder or file")
    recording_button(state, "", "toggle_recording", "record", record.recording, record.frames)
    if record.message:
        imgui.text_colored(imgui.ImVec4(*OK_COLOUR), record.message)
        tooltip(record.message)
    error_line(record.error)
    if record.recording:
        error_line(record.journal_problem)
    reopen_button(state, "takes")
