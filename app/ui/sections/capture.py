"""The panel's Capture section: the folder for screenshots and videos, a screenshot, record / stop a video."""

from imgui_bundle import imgui

from app.input import keys
from app.ui.path_fields import path_field
from app.ui.state import VIDEO_SIZES
from app.ui.theme import OK_COLOUR
from app.ui.widgets import error_line, fit_label, recording_button, same_line_if_fits, tooltip


def capture_section(state) -> None:
    capture = state.capture
    path_field(state, "capture_dir", "Folder")
    if imgui.button(f"Screenshot ({keys.keys_label(keys.control('screenshot'))})"):
        state.request("save_screenshot")
    same_line_if_fits(f"Record video ({keys.keys_label(keys.control('toggle_video'))})")
    recording_button(state, " video", "toggle_video", "video", capture.video_recording, capture.video_frames)
    video_size_choice(capture)
    if capture.message:
        imgui.push_text_wrap_pos(0.0)  # wrapped at the panel's edge: the saved file's whole path is shown
        imgui.text_colored(imgui.ImVec4(*OK_COLOUR), capture.message.strip())
        imgui.pop_text_wrap_pos()
    error_line(capture.error)


def video_size_choice(capture) -> None:
    """The next video's size; 'Auto' says what it means in this window."""
    choices = list(VIDEO_SIZES)
    labels = [VIDEO_SIZES[choice] for choice in choices]
    labels[0] += " (half: drawn on the CPU)" if capture.auto_is_half else " (window size)"
    index = choices.index(capture.video_size) if capture.video_size in choices else 0
    imgui.set_next_item_width(220)
    changed, index = imgui.combo(fit_label("Video size", "video_size"), index, labels)
    if changed:
        capture.video_size = choices[index]
    tooltip("The size of the next video. Half size halves the encoder's work: on a machine without a GPU "
            "the window keeps more of its frame rate while recording.")
