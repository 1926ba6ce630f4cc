"""The panel's Model section: the checkpoint running, a few lines about it, and a field to load another."""

from imgui_bundle import imgui

from app.paths import display_path
from app.ui.path_fields import path_field
from app.ui.theme import DIM_COLOUR, OK_COLOUR
from app.ui.widgets import error_line, tooltip


def model_section(state) -> None:
    model = state.model
    imgui.text("Running:")
    imgui.same_line()
    imgui.text_colored(imgui.ImVec4(*OK_COLOUR) if model.path else imgui.ImVec4(*DIM_COLOUR),
                       display_path(model.path) or "none (stand-in character)")
    tooltip(model.path)
    for line in model.summary:
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), line)
    if path_field(state, "model", "Checkpoint", "Load"):
        state.request("load_model", model.load_path)
    error_line(model.error)
