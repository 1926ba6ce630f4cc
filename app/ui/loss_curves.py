"""Loss curves on a log axis, shared by the Train section (a run's, live) and the Motion VAE section (the
loaded model's): the axis range that holds every point with a margin, and one plot of a stage's loss per
term."""

import numpy as np
from imgui_bundle import imgui, implot

from app.ui.widgets import remember_rect, same_line_if_fits


def log_range(values) -> tuple[float, float]:
    """(low, high) of a log axis holding every positive finite value, with a margin of 8% of the decades
    spanned (at least 0.05 decade); (1e-3, 1) when there is none."""
    values = np.asarray([v for v in values if np.isfinite(v) and v > 0], np.float64)
    if len(values) == 0:
        return 1e-3, 1.0
    low, high = np.log10(values.min()), np.log10(values.max())
    margin = max(0.08 * (high - low), 0.05)
    return float(10 ** (low - margin)), float(10 ** (high + margin))


def curves_of(history: dict, stage: str) -> dict[str, list[float]]:
    """A stage's per-term curves to plot: the held-out ones (`history['val'][stage]`), else the training
    ones; terms with no positive finite value (a log axis cannot show them) left out."""
    curves = (history.get("val") or {}).get(stage) or history.get(stage) or {}
    return {term: [float(v) for v in values] for term, values in curves.items()
            if any(np.isfinite(v) and v > 0 for v in values)}


def term_curves(state, name: str, title: str, curves: dict[str, list[float]]) -> None:
    """One line per loss term over the epochs (log y), each term's name and last value below in its
    colour (nothing when there is nothing to plot). No inputs and no legend inside: a wheel over the
    curves scrolls the panel (they are a record, nothing to zoom into)."""
    if not curves or not implot.begin_plot(title, imgui.ImVec2(-1, 150), implot.Flags_.no_inputs | implot.Flags_.no_legend):
        return
    implot.setup_axes("epoch", "loss", implot.AxisFlags_.lock, implot.AxisFlags_.lock)
    implot.setup_axis_scale(implot.ImAxis_.y1, implot.Scale_.log10)
    epochs = max(len(values) for values in curves.values())
    implot.setup_axis_limits(implot.ImAxis_.x1, 1.0, max(float(epochs), 2.0), imgui.Cond_.always)
    implot.setup_axis_limits(implot.ImAxis_.y1, *log_range([v for values in curves.values() for v in values]),
                             imgui.Cond_.always)
    ticks = [float(epoch) for epoch in range(1, epochs + 1, max(1, int(np.ceil(epochs / 6))))]
    implot.setup_axis_ticks(implot.ImAxis_.x1, ticks, [f"{tick:.0f}" for tick in ticks])
    for term, values in curves.items():
        ys = np.asarray(values, np.float64)
        ys[~(ys > 0)] = np.nan  # a zero or negative epoch leaves a gap, not a line to -inf
        implot.plot_line(term, np.arange(1, len(ys) + 1, dtype=np.float64), ys)
    implot.end_plot()
    remember_rect(state, name)
    for index, (term, values) in enumerate(curves.items()):
        text = f"{term} {values[-1]:.3g}"
        if index:
            same_line_if_fits(text)
        imgui.text_colored(implot.get_colormap_color(index), text)
