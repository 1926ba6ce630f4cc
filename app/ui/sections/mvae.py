"""The panel's Motion VAE section (a motion-VAE model runs): the followed character's latent path of the
last seconds on its two principal directions, the active latent dimensions with the KL of each, and the
variation slider (`RuntimeSettings.variation`)."""

import numpy as np
from imgui_bundle import imgui, implot

from app.ui.sections.tune import setting_widget
from app.ui.theme import DIM_COLOUR
from app.ui.widgets import remember_rect, tooltip
from pfnn_core.runtime.settings import RuntimeSettings

ACTIVE_KL = 0.01  # nats: a dimension whose mean KL is above this carries information (training's rule)


def mvae_section(state) -> None:
    panel = state.mvae
    imgui.push_item_width(140)
    setting_widget(state.settings, RuntimeSettings.__dataclass_fields__["variation"])
    remember_rect(state, "variation")
    imgui.pop_item_width()
    latent_path_plot(panel.path)
    remember_rect(state, "latent_path")
    imgui.text(f"active dimensions: {panel.active_dimensions} of {panel.latent_size}")
    tooltip(f"Latent dimensions whose mean KL on held-out clips is above {ACTIVE_KL} nats (a collapsed "
            "posterior has few)")
    kl_plot(panel.kl_per_dim)


def latent_path_plot(path: np.ndarray) -> None:
    """The path as a line, its newest point marked."""
    if len(path) < 2:
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), "latent path: after the first ticks")
        return
    if not implot.begin_plot("Latent path (last 4 s)", imgui.ImVec2(-1, 180)):
        return
    implot.setup_axes("1st principal direction", "2nd", implot.AxisFlags_.auto_fit, implot.AxisFlags_.auto_fit)
    xs, ys = np.ascontiguousarray(path[:, 0], np.float64), np.ascontiguousarray(path[:, 1], np.float64)
    implot.plot_line("path", xs, ys)
    spec = implot.Spec()
    spec.marker, spec.marker_size = implot.Marker_.circle, 5.0
    implot.plot_scatter("now", xs[-1:], ys[-1:], spec)
    implot.end_plot()


def kl_plot(kl_per_dim: np.ndarray) -> None:
    if len(kl_per_dim) == 0 or not implot.begin_plot("##kl", imgui.ImVec2(-1, 90), implot.Flags_.no_legend):
        return
    implot.setup_axes("latent dimension", "KL (nats)", 0, implot.AxisFlags_.auto_fit)
    implot.setup_axis_limits(implot.ImAxis_.x1, -0.5, len(kl_per_dim) - 0.5, imgui.Cond_.always)
    implot.plot_bars("KL", np.asarray(kl_per_dim, np.float64), 0.7)
    implot.end_plot()
