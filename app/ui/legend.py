"""What each mark of the ground overlays means, told once: the help overlay's legend and the View
section's tooltips draw it (`legend_rows`), each mark in the colour `app.render.overlays` draws it with."""

from imgui_bundle import imgui

from app.render import overlays

# overlay (a key of `ViewerState.overlays`) -> [(colour, mark, what it shows)]
LEGEND = {
    "trajectory": [
        (overlays.PAST_COLOUR, "grey path, dots and ticks", "where the character was over the last second, "
         "and how it faced"),
        (overlays.PREDICTED_COLOUR, "blue path, dots and ticks", "the trajectory the network was given for the "
         "next second (a dot every 1/6 s, its tick the facing asked for there)"),
        (overlays.COMMAND_COLOUR, "orange path, dots and ticks", "what the stick or the keys command alone "
         "(the command's spring), before it is blended with the network's own"),
        ((1.0, 1.0, 1.0, 1.0), "white line", "the way the character faces now"),
    ],
    "contacts": [
        (tuple(overlays.CONTACT_ON_COLOUR), "green / grey dots", "under each foot and toe joint: green and large "
         "when the network says it is planted, grey and small when lifted"),
        (overlays.LOCK_COLOUR, "magenta crosses", "a foot pinned to the floor by the foot lock (fading as the "
         "pin lets go)"),
    ],
    "phase": [
        (overlays.PHASE_COLOUR, "yellow circle and hand", "the gait phase on a dial around the character, "
         "12 o'clock ahead of it: the hand turns clockwise (seen from above) once a cycle, at 12 when the "
         "right foot touches down and at 6 when the left one does"),
    ],
    "joint_axes": [
        (overlays.AXIS_COLOURS[0], "red / green / blue", "each joint's own X / Y / Z axes"),
    ],
}


def legend_rows(name: str, wrap_width: float = 0.0) -> None:
    """The legend of one overlay: a colour swatch, the mark and what it shows, a line each."""
    flags = imgui.ColorEditFlags_.no_tooltip | imgui.ColorEditFlags_.no_alpha
    for index, (colour, mark, meaning) in enumerate(LEGEND[name]):
        size = imgui.get_text_line_height()
        imgui.color_button(f"##{name}_{index}", imgui.ImVec4(*colour), flags, imgui.ImVec2(size, size))
        imgui.same_line()
        imgui.push_text_wrap_pos(wrap_width)
        imgui.text_wrapped(f"{mark}: {meaning}")
        imgui.pop_text_wrap_pos()


def legend_tooltip(name: str) -> None:
    """The legend of one overlay in a tooltip of the item just drawn, while it is hovered."""
    if not imgui.is_item_hovered():
        return
    imgui.begin_tooltip()
    legend_rows(name, imgui.get_font_size() * 30)
    imgui.end_tooltip()
