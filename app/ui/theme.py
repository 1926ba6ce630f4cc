"""The viewer's look, defined once: the panel's colours (RGBA 0..1; `imgui.ImVec4(*colour)` where drawn),
the panel's width, the font and the ImGui theme. The 3D scene's colours are `app.render.palette`."""

from pathlib import Path

from imgui_bundle import imgui

ERROR_COLOUR = (1.0, 0.42, 0.38, 1.0)  # errors, the recording sign
OK_COLOUR = (0.45, 0.9, 0.55, 1.0)  # what worked: the running model, saved files
DIM_COLOUR = (0.65, 0.68, 0.74, 1.0)  # notes and secondary lines
HIGHLIGHT_COLOUR = (0.98, 0.86, 0.3, 1.0)  # keys in the help, the phase needle, PAUSED, the editor's cuts
HELP_MOUSE_COLOUR, HELP_PAD_COLOUR = (0.6, 0.85, 1.0, 1.0), (0.7, 0.95, 0.7, 1.0)
TRAIN_COLOUR = (0.40, 0.70, 1.0, 1.0)  # the training loss curve
VALIDATION_COLOUR = (1.0, 0.60, 0.15, 1.0)  # the validation loss curve
LITTLE_DATA_COLOUR = (0.98, 0.66, 0.30, 1.0)  # styles the model has little mocap of
DIAL_RING_COLOUR = (0.6, 0.65, 0.75, 0.8)  # the HUD's phase dial
CURVE_COLOUR = (0.9, 0.9, 0.9, 1.0)  # the editor's phase curves
ASKED_COLOUR = (0.85, 0.88, 0.95, 0.9)  # the editor's cuts as asked
LEFT_COLOUR, RIGHT_COLOUR = (0.35, 0.6, 1.0, 0.8), (1.0, 0.45, 0.35, 0.8)  # the editor's contact bands
PIECE_COLOURS = ((0.26, 0.45, 0.72, 1.0), (0.30, 0.58, 0.42, 1.0), (0.62, 0.42, 0.70, 1.0), (0.72, 0.52, 0.28, 1.0))
PANEL_WIDTH = 430  # pixels; the 3D view's lens is shifted so the character stays in the uncovered part


def load_font(size_px: float = 15.0) -> None:
    """Roboto from imgui-bundle's assets as the default font (ImGui's built-in bitmap font otherwise).
    Call before the first frame."""
    import imgui_bundle

    path = Path(imgui_bundle.__file__).parent / "assets" / "fonts" / "Roboto" / "Roboto-Regular.ttf"
    if path.is_file():
        imgui.get_io().fonts.add_font_from_file_ttf(str(path), size_px)


def apply_style() -> None:
    """A calm dark theme with rounded corners and a blue accent."""
    load_font()
    imgui.style_colors_dark()
    style = imgui.get_style()
    style.window_rounding, style.frame_rounding, style.grab_rounding = 8.0, 5.0, 5.0
    style.popup_rounding, style.child_rounding, style.scrollbar_rounding = 6.0, 6.0, 6.0
    style.window_padding, style.frame_padding = imgui.ImVec2(12, 10), imgui.ImVec2(8, 4)
    style.item_spacing, style.window_border_size = imgui.ImVec2(8, 6), 0.0
    colours = {
        imgui.Col_.window_bg: (0.09, 0.10, 0.13, 0.94), imgui.Col_.child_bg: (0.12, 0.13, 0.17, 0.6),
        imgui.Col_.header: (0.20, 0.33, 0.52, 0.55), imgui.Col_.header_hovered: (0.26, 0.42, 0.66, 0.8),
        imgui.Col_.header_active: (0.28, 0.47, 0.74, 1.0), imgui.Col_.frame_bg: (0.17, 0.19, 0.25, 1.0),
        imgui.Col_.frame_bg_hovered: (0.22, 0.25, 0.33, 1.0), imgui.Col_.button: (0.22, 0.36, 0.58, 0.85),
        imgui.Col_.button_hovered: (0.28, 0.45, 0.72, 1.0), imgui.Col_.slider_grab: (0.40, 0.62, 0.95, 1.0),
        imgui.Col_.check_mark: (0.45, 0.72, 1.0, 1.0), imgui.Col_.title_bg_active: (0.12, 0.18, 0.28, 1.0),
        imgui.Col_.plot_histogram: (0.40, 0.62, 0.95, 1.0),
    }
    for index, colour in colours.items():
        style.set_color_(index, imgui.ImVec4(*colour))
