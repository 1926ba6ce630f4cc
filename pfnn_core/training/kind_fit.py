"""How well a trained model fits each motion kind of its own data, one step at a time (teacher-forced: each
row's real input). Two numbers per kind: the mean fit loss (SmoothL1 on the normalised outputs, the
training's `fit` term) and the root speed the model predicts over the speed the data has on the kind's
moving rows. A rare kind the model underfits shows here before any drive: the shipped PFNN predicted
backward walks' root 23% slower than its own training rows (docs/EVALUATION.md, "Speed reached")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pfnn_core.training.schedules import row_kinds

MOVING_SPEED = 0.3  # m/s: a row whose root moves at least this fast counts in the speed ratio
KIND_ORDER = ("walk", "run", "side", "back", "stand", "other", "unknown")


@dataclass(frozen=True)
class KindFit:
    kind: str
    rows: int  # rows of the kind measured (a sample of them on a large set)
    fit: float  # mean SmoothL1 over the normalised outputs
    speed_ratio: float  # predicted / data root speed, means over the moving rows; nan without any


def smooth_l1(error: np.ndarray) -> np.ndarray:
    size = np.abs(error)
    return np.where(size < 1.0, 0.5 * size * size, size - 0.5)


def fit_of_rows(predicted: np.ndarray, target: np.ndarray, y_std: np.ndarray, root_vel: slice) -> tuple[float, float]:
    """(mean SmoothL1 of the normalised error, predicted / target root speed over the moving rows)."""
    fit = float(smooth_l1((predicted - target) / y_std).mean())
    true_speed = np.linalg.norm(target[:, root_vel], axis=1)
    moving = true_speed >= MOVING_SPEED
    if not moving.any():
        return fit, float("nan")
    predicted_speed = np.linalg.norm(predicted[:, root_vel], axis=1)
    return fit, float(predicted_speed[moving].mean() / true_speed[moving].mean())


def kind_fit(predict, data, y_std, rows=None, max_rows: int = 20000, seed: int = 0) -> list[KindFit]:
    """Per motion kind of `rows` (default all): `predict(x, phase, style) -> y` (raw arrays, as
    `PFNNModel.predict`) against the data's own outputs, on at most `max_rows` rows of each kind."""
    rows = np.arange(len(data.x)) if rows is None else np.asarray(rows)
    kinds = row_kinds(data, rows)
    one_hot = np.eye(len(data.styles)) if data.styles and data.style is not None else None
    rng = np.random.default_rng(seed)
    root_vel = data.layout.y.slice("root_vel")
    fits = []
    for kind in [k for k in KIND_ORDER if (kinds == k).any()]:
        chosen = rows[kinds == kind]
        if len(chosen) > max_rows:
            chosen = np.sort(rng.choice(chosen, max_rows, replace=False))
        predicted = np.asarray(predict(data.x[chosen].astype(np.float64), data.phase[chosen],
                                       None if one_hot is None else one_hot[data.style[chosen]]), dtype=np.float64)
        fit, ratio = fit_of_rows(predicted, data.y[chosen].astype(np.float64), np.asarray(y_std, np.float64), root_vel)
        fits.append(KindFit(kind, len(chosen), fit, ratio))
    return fits


def kind_fit_lines(fits: list[KindFit]) -> list[str]:
    """What pfnn-train prints after a run: one line per kind."""
    lines = ["pfnn-train: one-step fit per motion kind (its own data, teacher-forced): fit loss, "
             "root speed predicted / the data's"]
    for item in fits:
        speed = "" if np.isnan(item.speed_ratio) else f", root speed {item.speed_ratio:.2f}x"
        lines.append(f"  {item.kind:<7} {item.rows:>6} rows: fit {item.fit:.4f}{speed}")
    return lines
