"""The frame's UI: the HUD, the panel with its sections, the file browser, the help overlay and the quit
dialog. `gui(state)` only reads and writes the one `ViewerState` (`app.ui.state`); errors are shown as
one line (`app.ui.messages`) with the details in a tooltip.
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

SECTIONS = (("Model", model_section), ("Matching", matching_section), ("Motion VAE", mvae_section),
            ("Style", style_section), ("Time", time_section), ("View", view_section), ("Physics", physics_section),
            ("Tune", tune_section), ("Train", train_section), ("Playback", playback_section),
            ("Record", record_section), ("Editor", editor_section), ("Capture", capture_section),
            ("Stats", stats_section))
SHOWN_WHEN = {"Matching": lambda state: state.model.kind == "matching",  # sections of one model kind
              "Motion VAE": lambda state: state.model.kind == "mvae"}


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


def panel(state, display_size) -> None:
    imgui.set_next_window_pos(imgui.ImVec2(display_size[0] - PANEL_WIDTH - 12, 12), imgui.Cond_.always)
    imgui.set_next_window_size(imgui.ImVec2(PANEL_WIDTH, display_size[1] - 24), imgui.Cond_.always)
    imgui.begin("PFNN viewer", None, imgui.WindowFlags_.no_move | imgui.WindowFlags_.no_resize |
                imgui.WindowFlags_.no_collapse)
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
    for message in state.messages[-3:]:
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), messages.one_line(message, 60))
    imgui.end()
