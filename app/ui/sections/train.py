"""The panel's Train section: the form of a training run (the model kind, data, output, resume file, the
model's shape), Start / Resume / Stop, the progress bar and ETA, the loss plot, and for a motion VAE its
held-out loss per term, live."""

import numpy as np
from imgui_bundle import imgui, implot

from app.jobs.training import DEFAULT_LEARNING_RATES, TRAINED_KINDS
from app.ui.loss_curves import curves_of, log_range, term_curves
from app.ui.path_fields import path_field
from app.ui.theme import HIGHLIGHT_COLOUR, TRAIN_COLOUR, VALIDATION_COLOUR
from app.ui.widgets import dim_line, error_line, fit_label, remember_rect, same_line_if_fits, tooltip

PHASE_FUNCTIONS = ("cubic", "rbf")


def loss_plot_limits(epochs_x, train_loss, val_loss, run_epochs: int) -> tuple[float, float, float, float]:
    """(x min, x max, y min, y max) that hold every point of both curves, y on a log scale with a
    margin, x from 0 to the run's epochs (or further when a resumed run went past them)."""
    x_max = max([float(run_epochs), 1.0] + [float(x) for x in epochs_x])
    return (0.0, x_max, *log_range(list(train_loss) + list(val_loss)))


def loss_ticks(low: float, high: float, most: int = 6) -> list[float]:
    """Numbers for a log-scale loss axis from `low` to `high`: 1, 2, 5 times powers of ten inside the
    range (a log axis labels only whole powers of ten, and a loss going from 0.4 to 0.1 crosses none),
    thinned to at most `most`; a range holding fewer than two of them gets its two ends."""
    ticks = [mantissa * 10.0 ** exponent for exponent in range(int(np.floor(np.log10(low))) - 1,
                                                                int(np.ceil(np.log10(high))) + 1)
             for mantissa in (1, 2, 5) if low <= mantissa * 10.0 ** exponent <= high]
    if len(ticks) < 2:
        return [float(f"{low:.2g}"), float(f"{high:.2g}")] if f"{low:.2g}" != f"{high:.2g}" else [low, high]
    step = int(np.ceil(len(ticks) / most))
    return [float(tick) for tick in ticks[::step]]


def loss_plot(state) -> None:
    train = state.train
    if not train.train_loss or not implot.begin_plot("Loss", imgui.ImVec2(-1, 170)):
        return
    x0, x1, y0, y1 = loss_plot_limits(train.epochs_x, train.train_loss, train.val_loss,
                                      train.plot_epochs or train.epochs)
    implot.setup_axes("epoch", "loss")
    implot.setup_axis_scale(implot.ImAxis_.y1, implot.Scale_.log10)
    implot.setup_axis_limits(implot.ImAxis_.x1, x0, x1, imgui.Cond_.always)
    implot.setup_axis_limits(implot.ImAxis_.y1, y0, y1, imgui.Cond_.always)
    ticks = loss_ticks(y0, y1)
    implot.setup_axis_ticks(implot.ImAxis_.y1, ticks, [f"{tick:.3g}" for tick in ticks])
    implot.setup_legend(implot.Location_.north_east)
    xs = np.asarray(train.epochs_x, np.float64)
    # markers: a curve of one point (after the first epoch) is a dot, not nothing
    for name, values, colour in (("train", train.train_loss, TRAIN_COLOUR),
                                 ("validation", train.val_loss, VALIDATION_COLOUR)):
        if len(values) != len(xs):
            continue
        spec = implot.Spec()
        spec.line_color = spec.marker_fill_color = spec.marker_line_color = imgui.ImVec4(*colour)
        spec.marker, spec.marker_size, spec.line_weight = implot.Marker_.circle, 3.0, 2.0
        implot.plot_line(name, xs, np.asarray(values, np.float64), spec)
    implot.end_plot()
    remember_rect(state, "loss_plot")


def switch_kind(train, kind: str) -> None:
    """The form to another model kind; a learning rate left at the old kind's default becomes the new
    kind's (a PFNN's 1e-3, a motion VAE's 5e-4), one the user typed stays."""
    if train.learning_rate == DEFAULT_LEARNING_RATES[train.kind]:
        train.learning_rate = DEFAULT_LEARNING_RATES[kind]
    train.kind = kind


def train_section(state) -> None:
    train = state.train
    imgui.begin_disabled(train.running)
    kinds = list(TRAINED_KINDS)
    kind = kinds.index(train.kind) if train.kind in kinds else 0
    imgui.set_next_item_width(170)
    _, kind = imgui.combo(fit_label("Model kind", "train_kind"), kind, list(TRAINED_KINDS.values()))
    remember_rect(state, "train_kind")
    if kinds[kind] != train.kind:
        switch_kind(train, kinds[kind])
    path_field(state, "bvh_dir", "BVH folder")
    path_field(state, "train_out", "Save to")
    path_field(state, "resume", "Resume from")
    if not train.resume_path.strip():
        tooltip("Empty: the resumable checkpoint saved next to 'Save to'")
    imgui.push_item_width(170)
    mvae = train.kind == "mvae"
    if not mvae:
        index = PHASE_FUNCTIONS.index(train.phase_function) if train.phase_function in PHASE_FUNCTIONS else 0
        _, index = imgui.combo(fit_label("Phase function", "phase_function"), index, list(PHASE_FUNCTIONS))
        remember_rect(state, "phase_function")
        train.phase_function = PHASE_FUNCTIONS[index]
    if not mvae and train.phase_function == "rbf":
        _, train.kernels = imgui.slider_int(fit_label("Kernels", "kernels"), train.kernels, 2, 16)
        _, train.beta = imgui.slider_float(fit_label("Beta", "train_beta"), train.beta, 0.5, 64.0, "%.1f")
    _, train.hidden = imgui.slider_int(fit_label("Hidden size", "hidden"), train.hidden, 32, 1024)
    _, train.epochs = imgui.slider_int(fit_label("VAE epochs" if mvae else "Epochs", "epochs"), train.epochs, 1, 200)
    if mvae:
        _, train.policy_epochs = imgui.slider_int(fit_label("Policy epochs", "policy_epochs"), train.policy_epochs, 1, 100)
        remember_rect(state, "policy_epochs")
    _, train.learning_rate = imgui.input_float(fit_label("Learning rate", "learning_rate"), train.learning_rate,
                                               0.0, 0.0, "%.1e")
    imgui.pop_item_width()
    imgui.end_disabled()
    _, train.auto_swap = imgui.checkbox("Use the model when training finishes", train.auto_swap)
    if train.running:
        if imgui.button("Stop"):
            state.request("stop_training")
    else:
        if imgui.button("Start"):
            state.request("start_training", {"resume": False})
        same_line_if_fits("Resume")
        if imgui.button("Resume"):
            state.request("start_training", {"resume": True})
    if train.result_path and not train.running:
        same_line_if_fits("Use this model")
        if imgui.button("Use this model"):
            state.request("load_model", train.result_path)
    if train.running:
        eta = "" if train.eta_s is None else f"  ETA {int(train.eta_s) // 60}:{int(train.eta_s) % 60:02d}"
        imgui.progress_bar(train.progress, imgui.ImVec2(-1, 0), f"{100 * train.progress:.0f}%{eta}")
    if train.notice:
        imgui.text_colored(imgui.ImVec4(*HIGHLIGHT_COLOUR), train.notice)
    dim_line(train.status)
    error_line(train.error)
    loss_plot(state)
    for stage, title in (("vae", "VAE loss per term (held out)"), ("policy", "Policy loss per term (held out)")):
        if train.kind == "mvae":  # the last motion-VAE run's (a PFNN has one loss)
            term_curves(state, f"train_terms_{stage}", title, curves_of({"val": train.term_loss}, stage))
