"""The panel's Matching section (a motion-matching model runs): the clip and frame playing, the last
search's cost and distance, the switches so far, and the live search interval, transition half-life and
per-group feature weights (`RuntimeSettings.matching_*`); and the same readout as an overlay over the
3D view, top right."""

from imgui_bundle import imgui

from app.ui.sections.tune import setting_widget
from app.ui.theme import DIM_COLOUR
from app.ui.widgets import dim_line, remember_rect
from pfnn_core.runtime.settings import tunable_fields

SETTING_PREFIX = "matching_"  # the settings this section shows (the Tune section leaves them out)
OVERLAY_MARGIN = 12  # px between the readout over the view and the HUD and the panel
MIN_OVERLAY_WIDTH = 200  # px: the readout's narrowest beside the HUD (narrower: not drawn)


def playing_lines(playing: dict | None) -> list[str]:
    """The readout: clip (mirrored, standing), frame, the last search's cost and distance, switches."""
    if playing is None:
        return ["no frame yet"]
    notes = [word for word, on in (("mirrored", playing["mirrored"]), ("standing", playing["standing"])) if on]
    return [f"clip  {playing['clip']}" + (f"  ({', '.join(notes)})" if notes else ""),
            f"frame {playing['frame']}   switches {playing['switches']}",
            f"last search: cost {playing['cost']:.3f}, distance {playing['distance']:.3f}"]


def matching_section(state) -> None:
    imgui.push_text_wrap_pos(0.0)  # a long clip name wraps at the panel's edge
    for index, line in enumerate(playing_lines(state.matching.playing)):
        imgui.text(line)
        if index == 0:
            remember_rect(state, "matching_clip")
    imgui.pop_text_wrap_pos()
    remember_rect(state, "matching_readout")
    state.matching.shown_frames += 1
    dim_line("distance: the weighted, normalised feature distance to the frame found; cost: its square over "
             "the style's weight")
    imgui.push_item_width(140)
    for field_ in tunable_fields(state.settings):
        if field_.name.startswith(SETTING_PREFIX):
            setting_widget(state.settings, field_)
            remember_rect(state, field_.name)
    imgui.pop_item_width()


def overlay_place(hud, view_right: float) -> tuple[float, float, float] | None:
    """Where the readout over the view goes: (its right edge, its top, its width) beside the HUD (`hud`
    its rect) and left of `view_right` (the panel's left edge), or None when the view is too narrow
    for it there (the panel's Matching section shows the same lines). At the view's bottom centre it
    covered the character's feet in a small window, which is where a user looks to judge sliding; the
    HUD's top row is above the character's head."""
    right = view_right - OVERLAY_MARGIN
    width = right - hud[2] - OVERLAY_MARGIN
    return (right, hud[1], width) if width >= MIN_OVERLAY_WIDTH else None


def matching_overlay(state, display_size) -> None:
    """The readout over the 3D view while a motion-matching model runs (with the panel shown), at the
    top right of the view beside the HUD (`overlay_place`)."""
    state.field_rects.pop("matching_overlay", None)
    if state.model.kind != "matching" or not state.show_panel:
        return
    hud = state.field_rects.get("hud", (12.0, 12.0, 12.0, 12.0))
    place = overlay_place(hud, state.field_rects.get("panel", (display_size[0],))[0])
    if place is None:
        return
    right, top, width = place
    flags = (imgui.WindowFlags_.no_decoration | imgui.WindowFlags_.always_auto_resize | imgui.WindowFlags_.no_inputs |
             imgui.WindowFlags_.no_focus_on_appearing | imgui.WindowFlags_.no_nav | imgui.WindowFlags_.no_move)
    imgui.set_next_window_pos(imgui.ImVec2(right, top), imgui.Cond_.always, imgui.ImVec2(1.0, 0.0))
    imgui.set_next_window_bg_alpha(0.6)
    imgui.begin("##matching_overlay", None, flags)
    low, size = imgui.get_window_pos(), imgui.get_window_size()
    state.field_rects["matching_overlay"] = (low.x, low.y, low.x + size.x, low.y + size.y)
    # wrapped at the width it may take (wrapping at its own edge, an auto-sized window shrinks to a word)
    imgui.push_text_wrap_pos(imgui.get_cursor_pos_x() + width - 2.0 * imgui.get_style().window_padding.x)
    imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), "motion matching")
    for line in playing_lines(state.matching.playing):
        imgui.text(line)
    imgui.pop_text_wrap_pos()
    imgui.end()
