"""The panel's Capture section: the folder for screenshots and videos, a screenshot, record / stop a video."""

from imgui_bundle import imgui

from app.input import keys
from app.ui import messages
from app.ui.path_fields import path_field
from app.ui.theme import OK_COLOUR
from app.ui.widgets import error_line, recording_button, tooltip


def capture_section(state) -> None:
    capture = state.capture
    path_field(state, "capture_dir", "Folder")
    if imgui.button(f"Screenshot ({keys.keys_label(keys.control('screenshot'))})"):
        state.request("save_screenshot")
    imgui.same_line()
    recording_button(state, " video", "toggle_video", "video", capture.video_recording, capture.video_frames)
    if capture.message:
        imgui.text_colored(imgui.ImVec4(*OK_COLOUR), messages.one_line(capture.message, 60))
        tooltip(capture.message)
    error_line(capture.error)
