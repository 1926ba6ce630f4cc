"""Small widgets the panel's sections share: tooltips, a one-line error with the details in its tooltip,
dim notes, labels and buttons that move to their own line rather than be cut off, a slider with its
value beside it, the record / stop button, and the screen rectangles of named widgets
(`state.field_rects`, which the tests click)."""


from imgui_bundle import imgui

from app.input import keys
from app.ui import messages
from app.ui.theme import DIM_COLOUR, ERROR_COLOUR


def remember_rect(state, name: str) -> None:
    """Note the screen rectangle of the last widget under `name` (`state.field_rects`)."""
    low, high = imgui.get_item_rect_min(), imgui.get_item_rect_max()
    state.field_rects[name] = (low.x, low.y, high.x, high.y)


MIN_WIDGET = 80  # px: a slider, combo or field narrower than this is hard to use


def fit_label(text: str, widget_id: str, note: str = "") -> str:
    """The imgui label for a widget drawn next: `text` beside it (right, imgui's way) where widget and
    label fit the line at the current item width; else `text` (and a dim `note`) on a line of its own
    and the widget the line's whole width, so a narrow panel cuts no label off."""
    width = max(imgui.calc_item_width(), MIN_WIDGET)
    spacing = imgui.get_style().item_inner_spacing.x
    if width + spacing + imgui.calc_text_size(f"{text}  {note}" if note else text).x <= imgui.get_content_region_avail().x:
        return f"{text}##{widget_id}"
    imgui.text(text)
    if note:
        imgui.same_line()
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), note)
    imgui.set_next_item_width(-1)
    return f"##{widget_id}"


def same_line_if_fits(next_text: str) -> bool:
    """`imgui.same_line()` when a button labelled `next_text` still fits right of the last item, else
    the button goes on the next line (a narrow panel cuts no button off); returns whether it fitted."""
    style = imgui.get_style()
    needed = imgui.calc_text_size(next_text.split("##")[0]).x + 2 * style.frame_padding.x + style.item_spacing.x
    right = imgui.get_cursor_screen_pos().x + imgui.get_content_region_avail().x  # the line's right edge
    fits = imgui.get_item_rect_max().x + needed <= right
    if fits:
        imgui.same_line()
    return fits


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
    if imgui.calc_text_size(line).x > width:  # too wide: paths by their names first, so the reason shows
        text_shown = messages.short_paths(messages.one_line(text, 10 * limit))
        line = messages.one_line(text_shown, limit)
        while limit > 12 and imgui.calc_text_size(line).x > width:
            limit = int(limit * 0.85)
            line = messages.one_line(text_shown, limit)
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
    """A slider with its value written beside it, where the grab can never cover it; the slider narrows
    (to `MIN_WIDGET`) so that value and label fit the line, and the label goes above it where even that
    is too little."""
    spacing = imgui.get_style().item_spacing.x
    value_width = max(imgui.calc_text_size(text.format(v)).x for v in (low, high)) + spacing
    label_width = imgui.calc_text_size(label).x + spacing if label else 0.0
    avail = imgui.get_content_region_avail().x
    if label and avail - value_width - label_width < MIN_WIDGET:  # the label above, the value beside
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), label)
        label, label_width = "", 0.0
    imgui.set_next_item_width(max(MIN_WIDGET, min(width, avail - value_width - label_width)))
    changed, value = imgui.slider_float(f"##{name}", value, low, high, "")
    remember_rect(state, name)
    imgui.same_line()
    imgui.text(text.format(value))
    remember_rect(state, f"{name}_value")
    if label:
        imgui.same_line()
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), label)
        remember_rect(state, f"{name}_label")
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
        counter = f"REC  {frames} frames"
        same_line_if_fits(counter)
        imgui.text_colored(imgui.ImVec4(*ERROR_COLOUR), counter)
    elif imgui.button(f"Record{what} ({toggle})"):
        state.request(f"{request}_start")
