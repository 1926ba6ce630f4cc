"""The panel's Motion VAE section (a motion-VAE model runs): the followed character's latent path of the
last seconds on its two principal directions, the active latent dimensions with the KL of each, the
variation slider (`RuntimeSettings.variation`), and the model's training curves per loss term (the VAE's
and the policy's, held out)."""

import numpy as np
from imgui_bundle import imgui, implot

from app.ui.loss_curves import curves_of, term_curves
from app.ui.sections.tune import setting_widget
from app.ui.theme import DIM_COLOUR
from app.ui.widgets import remember_rect, tooltip
from pfnn_core.runtime.settings import RuntimeSettings

MIN_PATH_SPAN = 0.2  # latent units: the narrowest view of the path (a walk of 4 s spans ~13 with the shipped model)
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
    for stage, title in (("vae", "VAE loss (held out)"), ("policy", "Policy loss (held out)")):
        term_curves(state, f"loss_terms_{stage}", title, curves_of(panel.loss_history, stage))


def latent_path_plot(path: np.ndarray) -> None:
    """The path as a line, its newest point marked."""
    if len(path) < 2:
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), "latent path: after the first ticks")
        return
    if not implot.begin_plot("Latent path (last 4 s)", imgui.ImVec2(-1, 180)):
        return
    implot.setup_axes("1st principal direction", "2nd")
    x0, x1, y0, y1 = path_limits(path)
    implot.setup_axis_limits(implot.ImAxis_.x1, x0, x1, imgui.Cond_.always)
    implot.setup_axis_limits(implot.ImAxis_.y1, y0, y1, imgui.Cond_.always)
    xs, ys = np.ascontiguousarray(path[:, 0], np.float64), np.ascontiguousarray(path[:, 1], np.float64)
    implot.plot_line("path", xs, ys)
    spec = implot.Spec()
    spec.marker, spec.marker_size = implot.Marker_.circle, 5.0
    implot.plot_scatter("now", xs[-1:], ys[-1:], spec)
    implot.end_plot()


def path_limits(path: np.ndarray) -> tuple[float, float, float, float]:
    """(x min, x max, y min, y max) holding the whole path with a margin, each axis at least
    `MIN_PATH_SPAN` wide: a character standing still is a dot, not its float noise blown up."""
    low, high = path.min(axis=0), path.max(axis=0)
    centre, half = (low + high) / 2, np.maximum((high - low) * 0.55, MIN_PATH_SPAN / 2)
    return float(centre[0] - half[0]), float(centre[0] + half[0]), float(centre[1] - half[1]), float(centre[1] + half[1])


def kl_plot(kl_per_dim: np.ndarray) -> None:
    if len(kl_per_dim) == 0 or not implot.begin_plot("##kl", imgui.ImVec2(-1, 90), implot.Flags_.no_legend):
        return
    implot.setup_axes("latent dimension", "KL (nats)", 0, implot.AxisFlags_.auto_fit)
    implot.setup_axis_limits(implot.ImAxis_.x1, -0.5, len(kl_per_dim) - 0.5, imgui.Cond_.always)
    implot.plot_bars("KL", np.asarray(kl_per_dim, np.float64), 0.7)
    implot.end_plot()
