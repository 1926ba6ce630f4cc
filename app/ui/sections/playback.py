"""The panel's Playback section: open a BVH file, play / pause, speed, scrub, back to the live character."""

from imgui_bundle import imgui

from app.ui.path_fields import path_field
from app.ui.widgets import error_line, labelled_slider


def playback_section(state) -> None:
    playback = state.playback
    if path_field(state, "playback", "BVH file", "Open"):
        state.request("open_bvh", playback.path)
    error_line(playback.error)
    if playback.active:
        imgui.text(playback.clip_name)
        _, playback.playing = imgui.checkbox("Play", playback.playing)
        imgui.same_line()
        _, playback.speed = labelled_slider(state, "playback_speed", "speed", playback.speed, 0.1, 2.0,
                                             "{:.2f}x", 150)
        imgui.set_next_item_width(-1)
        changed, playback.time = imgui.slider_float("##time", playback.time, 0.0, max(playback.duration, 1e-3),
                                                    "%.2f s")
        if changed:
            state.request("seek", playback.time)
        if imgui.button("Back to the live character"):
            state.request("live")
