"""The frame's UI: the HUD, the panel with its sections (its width dragged at its left edge, folded to
its title bar by its arrow, the layout remembered between runs: `app.ui.panel_layout`), the file browser,
the help overlay and the quit dialog. `gui(state)` only reads and writes the one `ViewerState`
(`app.ui.state`); errors are shown as one line (`app.ui.messages`) with the details in a tooltip.
"""

from imgui_bundle import imgui

from app import paths
from app.ui import messages
from app.ui.file_browser import browser_window
from app.ui.help import help_window
from app.ui.hud import hud_window
from app.ui.path_fields import apply_choice
from app.ui.recovery import recovery_dialog
from app.ui.sections.capture import capture_section
from app.ui.sections.editor import editor_section
from app.ui.sections.matching import matching_overlay, matching_section
from app.ui.sections.model import model_section
from app.ui.sections.mvae import mvae_section
from app.ui.sections.physics import physics_section
from app.ui.sections.playback import playback_section
from app.ui.sections.record import record_section
from app.ui.sections.stats import stats_section
from app.ui.sections.style import style_section
from app.ui.sections.train import train_section
from app.ui.sections.transport import time_section
from app.ui.sections.tune import tune_section
from app.ui.sections.view import view_section
from app.ui.theme import DIM_COLOUR, PANEL_WIDTH
from app.ui.widgets import remember_rect

SECTIONS = (("Model", model_section), ("Matching", matching_section), ("Motion VAE", mvae_section),
            ("Style", style_section), ("Time", time_section), ("View", view_section), ("Physics", physics_section),
            ("Tune", tune_section), ("Train", train_section), ("Playback", playback_section),
            ("Record", record_section), ("Editor", editor_section), ("Capture", capture_section),
            ("Stats", stats_section))
SHOWN_WHEN = {"Matching": lambda state: state.model.kind == "matching",  # sections of one model kind
              "Motion VAE": lambda state: state.model.kind == "mvae"}
PANEL_MARGIN = 12  # pixels between the panel and the window's edges
MIN_PANEL_WIDTH = 260.0
FITTED_SHARE, WIDEST_SHARE = 0.34, 0.6  # of the window's width: the panel until dragged, and at most
GRIP_WIDTH = 8.0  # the strip left of the panel that resizes it
KEYS_HINT = "Keys go to the panel while the mouse is over it"


def quit_dialog(state, display_size) -> None:
    """Asks before quitting while a training run is going (its progress since the last epoch is lost)."""
    if not state.confirm_quit:
        return
    imgui.set_next_window_pos(imgui.ImVec2(display_size[0] / 2, display_size[1] / 2), imgui.Cond_.always,
                              imgui.ImVec2(0.5, 0.5))
    imgui.set_next_window_focus()
    imgui.begin("Quit?###quit", None, imgui.WindowFlags_.always_auto_resize | imgui.WindowFlags_.no_collapse |
                imgui.WindowFlags_.no_move)
    imgui.text("A training run is in progress.")
    imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), "Quitting stops it; the last finished epoch is saved and can be resumed.")
    if imgui.button("Stop training and quit"):
        state.request("quit_now")
    imgui.same_line()
    if imgui.button("Keep working"):
        state.confirm_quit = False
    imgui.end()


def notice_window(text: str, display_size) -> None:
    """A box in the middle of the window saying `text` (wrapped), nothing else."""
    flags = (imgui.WindowFlags_.no_decoration | imgui.WindowFlags_.always_auto_resize | imgui.WindowFlags_.no_inputs |
             imgui.WindowFlags_.no_nav | imgui.WindowFlags_.no_move)
    imgui.set_next_window_pos(imgui.ImVec2(display_size[0] / 2, display_size[1] / 2), imgui.Cond_.always,
                              imgui.ImVec2(0.5, 0.5))
    imgui.begin("##notice", None, flags)
    imgui.push_text_wrap_pos(imgui.get_cursor_pos_x() + min(440.0, display_size[0] * 0.8))
    imgui.text(text)
    imgui.pop_text_wrap_pos()
    imgui.end()


def gui(state, display_size=(1280, 720)) -> None:
    """Build this frame's UI from `state` (widgets write straight back into it)."""
    hud_window(state, display_size)
    matching_overlay(state, display_size)
    if state.show_panel:
        panel(state, display_size)
    chosen = browser_window(state.browser, state.recent, paths.work_dir(), display_size, state.field_rects)
    if chosen is not None:
        apply_choice(state, state.browser.target, chosen)
    help_window(state, display_size)
    quit_dialog(state, display_size)
    recovery_dialog(state, display_size)


def fitted_width(display_width: float) -> float:
    """The panel's width until it is dragged: about a third of a small window, at most `PANEL_WIDTH`."""
    return float(min(PANEL_WIDTH, max(MIN_PANEL_WIDTH, FITTED_SHARE * display_width)))


def panel_width(state, display_width: float) -> float:
    """The panel's width now: as dragged (`state.panel_width`, 0 = fitted), within what the window allows."""
    widest = max(MIN_PANEL_WIDTH, WIDEST_SHARE * display_width)
    return float(round(min(widest, max(MIN_PANEL_WIDTH, state.panel_width or fitted_width(display_width)))))


def covered_width(state, display_width: float) -> float:
    """How much of the window's right side the panel covers (0 when hidden or folded to its title bar)."""
    return panel_width(state, display_width) if state.show_panel and not state.panel_collapsed else 0.0


def panel(state, display_size) -> None:
    """The panel on the right: sections that open and close one by one, folded to its title bar by its
    arrow, its width dragged at its left edge; the layout is remembered between runs."""
    width = panel_width(state, display_size[0])
    imgui.set_next_window_pos(imgui.ImVec2(display_size[0] - width - PANEL_MARGIN, PANEL_MARGIN), imgui.Cond_.always)
    imgui.set_next_window_size(imgui.ImVec2(width, display_size[1] - 2 * PANEL_MARGIN), imgui.Cond_.always)
    imgui.set_next_window_collapsed(state.panel_collapsed, imgui.Cond_.always)  # `panel_collapsed` is the truth
    imgui.begin("PFNN viewer", None, imgui.WindowFlags_.no_move | imgui.WindowFlags_.no_resize)
    state.panel_collapsed = imgui.is_window_collapsed()
    low, size = imgui.get_window_pos(), imgui.get_window_size()
    state.field_rects["panel"] = (low.x, low.y, low.x + size.x, low.y + size.y)
    state.field_rects.pop("keys_hint", None)
    if not state.panel_collapsed:
        panel_sections(state)
        if imgui.is_window_hovered(imgui.HoveredFlags_.root_and_child_windows):
            state.field_rects["keys_hint"] = keys_hint(display_size, width)
    imgui.end()
    if not state.panel_collapsed:
        resize_grip(state, display_size, width)
    if not imgui.is_mouse_down(imgui.MouseButton_.left):  # not on every frame of a drag
        state.layout.remember(state)


def panel_sections(state) -> None:
    for title, section in SECTIONS:
        if not SHOWN_WHEN.get(title, lambda _: True)(state):
            continue
        was_open = title in state.open_sections
        imgui.set_next_item_open(was_open, imgui.Cond_.always)  # `open_sections` is the one truth
        is_open = imgui.collapsing_header(title)
        if is_open != was_open:
            others = tuple(t for t in state.open_sections if t != title)
            state.open_sections = others + (title,) if is_open else others
        if is_open:
            imgui.push_id(title)
            section(state)
            imgui.pop_id()
    if state.messages:  # the last three, wrapped at the panel's edge (cut at 60 characters, a clamp's
        # reason was lost), until cleared
        imgui.push_text_wrap_pos(0.0)
        for message in state.messages[-3:]:
            imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), messages.one_line(message, 300))
        imgui.pop_text_wrap_pos()
        clear = imgui.small_button("Clear messages")
        remember_rect(state, "clear_messages")
        if clear:
            state.messages.clear()


def keys_hint(display_size, width: float) -> tuple:
    """While the mouse is over the panel the keys go to it, not to the character: said beside the panel
    (returns where)."""
    text = KEYS_HINT
    size = imgui.calc_text_size(text)
    x = display_size[0] - width - PANEL_MARGIN - size.x - 20
    y = display_size[1] - PANEL_MARGIN - size.y - 8
    draw = imgui.get_foreground_draw_list()
    draw.add_rect_filled(imgui.ImVec2(x - 8, y - 4), imgui.ImVec2(x + size.x + 8, y + size.y + 4),
                         imgui.color_convert_float4_to_u32(imgui.ImVec4(0.09, 0.10, 0.13, 0.85)), 5.0)
    draw.add_text(imgui.ImVec2(x, y), imgui.color_convert_float4_to_u32(imgui.ImVec4(*DIM_COLOUR)), text)
    return x - 8, y - 4, x + size.x + 8, y + size.y + 4


def resize_grip(state, display_size, width: float) -> None:
    """A strip along the panel's left edge: dragging it sets the panel's width."""
    left = display_size[0] - width - PANEL_MARGIN
    imgui.set_next_window_pos(imgui.ImVec2(left - GRIP_WIDTH, PANEL_MARGIN + 32), imgui.Cond_.always)
    imgui.set_next_window_size(imgui.ImVec2(GRIP_WIDTH, display_size[1] - 2 * PANEL_MARGIN - 32), imgui.Cond_.always)
    imgui.push_style_var(imgui.StyleVar_.window_padding, imgui.ImVec2(0, 0))
    imgui.push_style_var(imgui.StyleVar_.window_min_size, imgui.ImVec2(1, 1))  # else 32 px: over the panel
    imgui.begin("##panel_grip", None, imgui.WindowFlags_.no_decoration | imgui.WindowFlags_.no_background |
                imgui.WindowFlags_.no_move | imgui.WindowFlags_.no_nav | imgui.WindowFlags_.no_saved_settings)
    imgui.pop_style_var(2)
    imgui.invisible_button("##grip", imgui.get_content_region_avail())
    remember_rect(state, "panel_grip")
    if imgui.is_item_active():
        dragged = round(width - imgui.get_io().mouse_delta.x)
        state.panel_width = min(max(MIN_PANEL_WIDTH, dragged), max(MIN_PANEL_WIDTH, WIDEST_SHARE * display_size[0]))
    if imgui.is_item_hovered() or imgui.is_item_active():
        imgui.set_mouse_cursor(imgui.MouseCursor_.resize_ew)
        low, high = imgui.get_item_rect_min(), imgui.get_item_rect_max()
        middle = (low.x + high.x) / 2
        imgui.get_window_draw_list().add_line(imgui.ImVec2(middle, low.y), imgui.ImVec2(middle, high.y),
                                              imgui.color_convert_float4_to_u32(imgui.ImVec4(*DIM_COLOUR)), 2.0)
    imgui.end()
