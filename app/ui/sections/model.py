"""The panel's Model section: the checkpoint running, a few lines about it, and a field to load another.
At a narrow panel the running path is shortened in its middle (its file name stays; the whole path in
a tooltip) and the lines about it wrap at the panel's edge."""

from imgui_bundle import imgui

from app.paths import display_path
from app.ui.path_fields import path_field
from app.ui.theme import DIM_COLOUR, OK_COLOUR
from app.ui.widgets import error_line, remember_rect, tooltip, wrapped

ELLIPSIS = "..."


def elide_middle(text: str, fits) -> str:
    """`text` with its middle replaced by '...' until `fits(shortened)`: a third of what is kept from
    its start, two thirds from its end (a file name). Returns `text` itself when it fits."""
    if fits(text):
        return text
    for kept in range(len(text) - 1, 0, -1):
        start = kept // 3
        shortened = text[:start] + ELLIPSIS + text[len(text) - (kept - start):]
        if fits(shortened):
            return shortened
    return ELLIPSIS


def model_section(state) -> None:
    model = state.model
    imgui.text("Running:")
    imgui.same_line()
    path = display_path(model.path) or "none (stand-in character)"
    width = imgui.get_content_region_avail().x
    shown = elide_middle(path, lambda text: imgui.calc_text_size(text).x <= width)
    imgui.text_colored(imgui.ImVec4(*OK_COLOUR) if model.path else imgui.ImVec4(*DIM_COLOUR), shown)
    remember_rect(state, "model_running")
    tooltip(model.path)
    for index, line in enumerate(model.summary):
        wrapped(DIM_COLOUR, line)
        remember_rect(state, f"model_summary_{index}")
    if path_field(state, "model", "Checkpoint", "Load"):
        state.request("load_model", model.load_path)
    error_line(model.error)
