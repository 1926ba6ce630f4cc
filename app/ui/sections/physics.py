"""The panel's Physics section: physics off / on / both (the kinematic pose as a ghost), the push, the
tracking error (with a plot of the last seconds), the root's help and the floor's force under each
foot, the force arrows, and a widget per `PhysicsSettings` field (live: the tracker reads this object)."""

import dataclasses

import numpy as np
from imgui_bundle import imgui, implot

from app.input import keys
from app.sources.physics import MODES
from app.ui.sections.tune import setting_widget
from app.ui.theme import DIM_COLOUR
from app.ui.widgets import dim_line, error_line, remember_rect, tooltip
from pfnn_core.physics.settings import tunable_fields

MODE_HELP = {"off": "the kinematic character only", "on": "the simulated body is drawn",
             "both": "the simulated body, the kinematic pose as a ghost over it"}
PUSH_RANGE = (5.0, 150.0)  # N s: the push key's strength (the tracker refuses more than 200)


def physics_section(state) -> None:
    panel = state.physics
    if not panel.available:
        dim_line("The physics tracks a network character: load a model.")
        return
    mode_selector(state)
    error_line(panel.error)
    if panel.mode != "off":
        physics_figures(state)
    _, state.overlays["forces"] = imgui.checkbox("Force arrows under the feet", state.overlays.get("forces", True))
    physics_settings(state)


def mode_selector(state) -> None:
    panel = state.physics
    imgui.text(f"Physics ({keys.keys_label(keys.control('cycle_physics'))}):")
    for mode in MODES:
        imgui.same_line()
        if imgui.radio_button(mode, panel.mode == mode):
            panel.mode = mode
        remember_rect(state, f"physics_{mode}")
        tooltip(MODE_HELP[mode])
    if imgui.button(f"Push ({keys.keys_label(keys.control('push_character'))})"):  # its own line: never cut off
        state.request("push_character")
    remember_rect(state, "physics_push")
    tooltip(f"{state.physics.push_strength:.0f} N s at the chest, toward the screen's right")
    imgui.same_line()
    imgui.push_item_width(120)
    _, strength = imgui.slider_float("N s##push_strength", state.physics.push_strength, PUSH_RANGE[0], PUSH_RANGE[1],
                                     "%.0f")
    imgui.pop_item_width()
    state.physics.push_strength = float(min(max(strength, PUSH_RANGE[0]), PUSH_RANGE[1]))
    remember_rect(state, "physics_push_strength")
    tooltip("How hard the push is: 30 N s (the evaluation's push) carries the body about 9 cm and the tracking "
            "takes it back; 80-120 N s is a shove that shows")


def physics_figures(state) -> None:
    figures = state.physics.figures
    if not figures:
        dim_line("starts on the next tick")
        return
    imgui.text(f"tracking error {100 * figures['tracking_error']:5.2f} cm   root help {figures['root_force']:5.0f} N")
    tooltip("Mean distance of the simulated joints from the kinematic ones; the hold on the hips (body weight "
            f"{9.81 * state.physics.settings.body_mass:.0f} N)")
    vertical = np.asarray(figures["foot_forces"])[:, 1]
    for side, (heel, toe) in zip(("left ", "right"), vertical.reshape(2, 2)):  # two short lines: a narrow panel cuts none
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), f"floor {side}  heel {heel:4.0f}  toe {toe:4.0f} N")
    imgui.same_line()
    imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), f"  {figures['physics_ms']:.2f} ms")
    tooltip("The simulated floor's vertical force under each sole (N) and the physics' time per tick")
    error_plot(state.physics.error_trace)


def error_plot(trace) -> None:
    """The tracking error of the last seconds: three y ticks (0, half, top; implot's own crowded six
    labels into the plot's 60 px), no legend (the section's line above names it)."""
    if len(trace) < 2 or not implot.begin_plot("##tracking_error", imgui.ImVec2(-1, 120), implot.Flags_.no_legend):
        return
    values = 100.0 * np.asarray(trace, np.float64)
    seconds = (np.arange(len(values)) - (len(values) - 1)) / 60.0
    top = max(5.0, float(np.ceil(1.1 * values.max())))
    implot.setup_axes("s", "tracking error, cm")
    implot.setup_axis_limits(implot.ImAxis_.x1, float(seconds[0]), 0.0, imgui.Cond_.always)
    implot.setup_axis_limits(implot.ImAxis_.y1, 0.0, top, imgui.Cond_.always)
    implot.setup_axis_ticks(implot.ImAxis_.y1, 0.0, top, 3)
    implot.plot_line("tracking error", seconds, values)
    implot.end_plot()


def physics_settings(state) -> None:
    settings = state.physics.settings
    imgui.set_next_item_open(True, imgui.Cond_.once)
    if imgui.tree_node("Physics settings"):
        if imgui.button("Physics defaults"):
            for field_ in dataclasses.fields(settings):
                setattr(settings, field_.name, field_.default)
        imgui.push_item_width(140)
        for field_ in tunable_fields():
            setting_widget(settings, field_)
            remember_rect(state, f"physics_{field_.name}")
        imgui.pop_item_width()
        imgui.tree_pop()
