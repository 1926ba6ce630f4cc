"""Small widgets the panel's sections share: tooltips, a one-line error with the details in its tooltip,
dim notes, a slider with its value beside it, the record / stop button, and the screen rectangles of
named widgets (`state.field_rects`, which the tests click)."""


from imgui_bundle import imgui

from app.input import keys
from app.ui import messages
from app.ui.theme import DIM_COLOUR, ERROR_COLOUR


def remember_rect(state, name: str) -> None:
    """Note the screen rectangle of the last widget under `name` (`state.field_rects`)."""
    low, high = imgui.get_item_rect_min(), imgui.get_item_rect_max()
    state.field_rects[name] = (low.x, low.y, high.x, high.y)


def tooltip(text: str) -> None:
    if text and imgui.is_item_hovered():
        imgui.set_tooltip(text)


def error_line(text: str) -> None:
    """An error as one line that fits the panel (the full message in a tooltip)."""
    if not text:
        return
    width = imgui.get_content_region_avail().x
    limit = 200
    line = messages.one_line(text, limit)
    while limit > 12 and imgui.calc_text_size(line).x > width:
        limit = int(limit * 0.85)
        line = messages.one_line(text, limit)
    imgui.text_colored(imgui.ImVec4(*ERROR_COLOUR), line)
    if imgui.is_item_hovered():
        imgui.begin_tooltip()
        imgui.push_text_wrap_pos(imgui.get_font_size() * 36)
        imgui.text_unformatted(messages.details(text))
        imgui.pop_text_wrap_pos()
        imgui.end_tooltip()


def dim_line(text: str) -> None:
    if text:
        imgui.push_text_wrap_pos(0.0)
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), text)
        imgui.pop_text_wrap_pos()


def labelled_slider(state, name: str, label: str, value: float, low: float, high: float,
                     text: str, width: float) -> tuple[bool, float]:
    """A slider with its value written beside it, where the grab can never cover it."""
    imgui.set_next_item_width(width)
    changed, value = imgui.slider_float(f"##{name}", value, low, high, "")
    remember_rect(state, name)
    imgui.same_line()
    imgui.text(text.format(value))
    remember_rect(state, f"{name}_value")
    if label:
        imgui.same_line()
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), label)
    return changed, value



def wrapped(colour, text: str) -> None:
    """Coloured text wrapped at the panel's edge (nothing for an empty text)."""
    if text:
        imgui.push_text_wrap_pos(0.0)
        imgui.text_colored(imgui.ImVec4(*colour), text)
        imgui.pop_text_wrap_pos()


def recording_button(state, what: str, control: str, request: str, recording: bool, frames: int) -> None:
    """"Record{what} (key)" or, while recording, "Stop{what} (key)" with the frames so far; the
    button asks for `{request}_start` / `{request}_stop`."""
    toggle = keys.keys_label(keys.control(control))
    if recording:
        if imgui.button(f"Stop{what} ({toggle})"):
            state.request(f"{request}_stop")
        imgui.same_line()
        imgui.text_colored(imgui.ImVec4(*ERROR_COLOUR), f"REC  {frames} frames")
    elif imgui.button(f"Record{what} ({toggle})"):
        state.request(f"{request}_start")
