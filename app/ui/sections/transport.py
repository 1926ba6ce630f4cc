"""The panel's Time section: pause / resume, steps back and forward, the simulation speed, how far back
the simulation can step (the rules are `app.transport`)."""

from imgui_bundle import imgui

from app.input import keys
from app.transport import MAX_SPEED, MIN_SPEED
from app.ui.widgets import dim_line, labelled_slider, tooltip


def time_section(state) -> None:
    transport = state.transport
    label = keys.keys_label(keys.control("toggle_pause"))
    if imgui.button(("Resume" if transport.paused else "Pause") + f" ({label})"):
        state.request("toggle_pause")
    for action, text in (("rewind_second", "-1 s"), ("step_back", "< tick"), ("step_forward", "tick >")):
        imgui.same_line()
        if imgui.button(text):
            state.request(action)
        tooltip(f"{keys.control(action).description} ({keys.keys_label(keys.control(action))})")
    changed, speed = labelled_slider(state, "sim_speed", "speed", transport.speed, MIN_SPEED, MAX_SPEED,
                                      "{:.2f}x", 200)
    if changed:
        transport.speed = float(speed)
    dim_line(f"{'PAUSED   ' if transport.paused else ''}can step back {transport.history_s:.1f} s")
