"""The model card: what a checkpoint says about its model, parsed once into a typed object.

Every model kind (docs/MODELS.md) stores the same facts beside its own tensors: the skeleton, the
feature layout, the floor level of each contact joint, the standing stance, the stride length by speed
(pooled and per style), the full-stick gait speeds, the styles and their statistics, the beta the
model suits, and the training and data facts. `ModelCard.from_meta` reads them from the checkpoint's
JSON metadata with every fallback for older checkpoints in this one place; nobody else reads that
dict with string keys. `to_meta` writes the same keys back (training does, for every kind).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from pfnn_core.features.contract import FALLBACK_STRIDE, FALLBACK_WALK_SPEED, RUN_TO_WALK_SPEED

# The beta range a model without a stored trained range is offered: its trained beta / and x this.
BETA_SPAN = 2.0


class CardError(ValueError):
    """A checkpoint field that cannot be right; the message names the field."""


@dataclass(frozen=True)
class StyleStats:
    """One style's statistics from the training set (`data.statistics.style_statistics`), m/s and minutes."""

    minutes: float = 0.0
    content_minutes: Mapping[str, float] = field(default_factory=dict)
    clips: int = 0
    walk: float | None = None  # median speed of its forward walks
    run: float | None = None
    slowest_walk: float | None = None  # 10th percentile of its walking cycles' speeds
    walk_back: float | None = None
    side_step: float | None = None
    stride: Mapping[str, Any] | None = None  # `motion.phase.stride_statistics`

    @staticmethod
    def from_dict(values: Mapping[str, Any]) -> "StyleStats":
        def speed(name):
            value = values.get(name)
            return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None

        content = _object(values.get("content_minutes"), "content_minutes")
        return StyleStats(minutes=speed("minutes") or 0.0,
                          content_minutes={str(k): float(v) for k, v in content.items() if _is_number(v)},
                          clips=int(values["clips"]) if _is_number(values.get("clips")) else 0,
                          walk=speed("walk"), run=speed("run"),
                          slowest_walk=speed("slowest_walk"), walk_back=speed("walk_back"),
                          side_step=speed("side_step"), stride=values.get("stride") or None)

    def get(self, name: str):
        """A statistic by name (`walk`, `side_step`, ...), None when the style has none."""
        return getattr(self, name, None)


@dataclass(frozen=True)
class ModelCard:
    """The facts of one checkpoint every model kind shares (see the module docstring)."""

    kind: str  # 'pfnn', 'matching', 'mvae' (docs/MODELS.md)
    skeleton: Mapping[str, Any]  # `skeleton.skeleton_dict`: names, parents, offsets (m), channels, hips, ...
    layout: Any  # the feature contract `ModelLayout` (x, y) for this skeleton
    floor_heights: np.ndarray | None  # [4] planted height (m) of each contact joint in the mocap
    stance: np.ndarray | None  # [4, 3] the mocap's standing stance of the contact joints (body frame)
    stance_spread: float | None  # m: RMS distance of the mocap's own standing frames from `stance`
    stride: Mapping[str, Any]  # pooled stride length by speed (`motion.phase.stride_statistics`)
    gait_speeds: Mapping[str, float]  # full-stick 'walk' and 'run' speeds (m/s)
    style_names: tuple[str, ...]  # the style input's order
    style_stats: Mapping[str, StyleStats]
    trained_beta: float | None  # the PFNN's rbf bandwidth in training (None for kinds without one)
    beta_range: tuple[float, float] | None  # the beta the model suits, unclipped (None: beta means nothing here)
    training: Mapping[str, Any] = field(default_factory=dict)  # facts shown to people (epochs, losses, time)
    data: Mapping[str, Any] = field(default_factory=dict)  # files, frames, hash of the training set
    extra: Mapping[str, Any] = field(default_factory=dict)  # the kind's own metadata (e.g. matching weights)
    trained_on: tuple[str, ...] = ()  # the folders and files given to training (where its mocap is)
    data_files: tuple[str, ...] = ()  # the training set's file names, in clip order
    val_files: tuple[str, ...] = ()  # the validation clips, when stored
    val_fraction: float = 0.1  # of the clips held out by the training run's split
    seed: int = 0  # the training run's seed (its split repeats from it)

    # ---- reading ------------------------------------------------------------------------------
    @staticmethod
    def from_meta(meta: Mapping[str, Any], layout=None, config=None, kind: str | None = None) -> "ModelCard":
        """Parse a checkpoint's metadata (`config`: the kind's model config when it has a beta and a
        phase function, as the PFNN's `ModelConfig`)."""
        meta = meta or {}
        styles = _object(meta.get("styles"), "styles")
        stats = _object(styles.get("stats"), "styles.stats")
        training, data = _object(meta.get("training"), "training"), _object(meta.get("data"), "data")
        training_config = _object(training.get("config"), "training.config")
        stance = _object(meta.get("stance"), "stance")
        style_names = styles.get("names") or []
        if not isinstance(style_names, list):
            raise CardError(f"styles.names: expected a list of style names, got {type(style_names).__name__}")
        trained_beta = _trained_beta(training_config, config)
        kind = str(kind or meta.get("kind") or "pfnn")
        return ModelCard(
            kind=kind,
            skeleton=_checked_skeleton(meta.get("skeleton")),
            layout=layout if layout is not None else meta.get("layout"),
            floor_heights=_floor_heights(meta.get("floor_heights")),
            stance=_stance(stance.get("positions")),
            stance_spread=_stance_spread(stance),
            stride=_object(meta.get("stride"), "stride") or dict(FALLBACK_STRIDE),
            gait_speeds=_gait_speeds(_object(meta.get("gait_speeds"), "gait_speeds")),
            style_names=tuple(str(n) for n in style_names),
            style_stats={str(name): StyleStats.from_dict(_object(values, f"styles.stats.{name}"))
                         for name, values in stats.items()},
            trained_beta=trained_beta,
            beta_range=_beta_range(training_config, config, trained_beta),
            training=dict(training), data=dict(data),
            extra=dict(_object(meta.get(kind), kind)),
            **_training_facts(data, training_config),
        )

    # ---- facts derived once -------------------------------------------------------------------
    @property
    def names(self) -> list[str]:
        return list(self.skeleton["names"])

    @property
    def num_styles(self) -> int:
        return len(self.style_names)

    @property
    def default_style(self) -> str | None:
        """'normal' when the model knows it, else its first style; None without styles."""
        if not self.style_names:
            return None
        return "normal" if "normal" in self.style_names else self.style_names[0]

    @property
    def walk_speed(self) -> float:
        return float(self.gait_speeds.get("walk", FALLBACK_WALK_SPEED))

    def style_weights(self, style=None) -> dict[str, float]:
        """{style name: weight} from a name, an index or weights [S] over `style_names`; None gives the
        default style."""
        names = list(self.style_names)
        if not names:
            return {}
        if style is None:
            style = self.default_style
        if isinstance(style, str):
            if style not in names:
                raise ValueError(f"unknown style {style!r}; this model's styles are {names}")
            return {style: 1.0}
        if isinstance(style, (int, np.integer)):
            return {names[int(style)]: 1.0}
        weights = [float(w) for w in style]
        if len(weights) != len(names):
            raise ValueError(f"style weights: expected {len(names)} weights (one per style), got {len(weights)}")
        return {name: weight for name, weight in zip(names, weights) if weight > 0.0}


def _training_facts(data: Mapping[str, Any], training_config: Mapping[str, Any]) -> dict:
    """Where the model's mocap is and how its run split it (older checkpoints store fewer of these)."""
    def names(values):
        return tuple(v for v in values if isinstance(v, str)) if isinstance(values, list) else ()

    fraction, seed = training_config.get("val_fraction", 0.1), training_config.get("seed", 0)
    return {"trained_on": names(data.get("folders")) + names(training_config.get("data")),
            "data_files": names(data.get("files")), "val_files": names(data.get("val_files")),
            "val_fraction": float(fraction) if isinstance(fraction, (int, float)) else 0.1,
            "seed": int(seed) if isinstance(seed, int) else 0}


def _checked_skeleton(skeleton) -> Mapping[str, Any]:
    if not isinstance(skeleton, Mapping):
        raise CardError("skeleton: missing (a checkpoint stores the skeleton it was trained on)")
    names, parents, offsets = skeleton.get("names"), skeleton.get("parents"), skeleton.get("offsets")
    if not isinstance(names, list) or not names:
        raise CardError("skeleton.names: expected a list of joint names")
    if not isinstance(parents, list) or len(parents) != len(names):
        raise CardError(f"skeleton.parents: expected {len(names)} parent indices")
    if any(not isinstance(p, int) or not -1 <= p < j for j, p in enumerate(parents)):
        raise CardError("skeleton.parents: every parent must come before its joint (-1 for the root)")
    if _finite_array(offsets, (len(names), 3)) is None:
        raise CardError(f"skeleton.offsets: expected [{len(names)}, 3] finite offsets (m)")
    return skeleton


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _object(value, where: str) -> Mapping[str, Any]:
    """A field that must be a JSON object: {} when absent, CardError naming it when it is something else."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise CardError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _finite_array(value, shape: tuple) -> np.ndarray | None:
    """`value` as finite floats of `shape`, or None when it is not that (ragged lists, text, NaN...)."""
    try:
        values = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        return None
    return values if values.shape == shape and np.isfinite(values).all() else None


def _floor_heights(heights) -> np.ndarray | None:
    if heights is None or (isinstance(heights, (list, tuple)) and not heights):
        return None  # not measured (a training set without contact labels; a checkpoint older than the field)
    values = _finite_array(heights, (4,))
    if values is None:
        raise CardError(f"checkpoint field floor_heights: expected 4 finite heights (m), got {heights!r}")
    return values


def _stance(positions) -> np.ndarray | None:
    if positions is None:
        return None
    values = _finite_array(positions, (4, 3))
    if values is None:
        raise CardError(f"checkpoint field stance.positions: expected [4, 3] finite positions (m), got {positions!r:.200}")
    return values


def _stance_spread(stance: Mapping[str, Any]) -> float | None:
    if stance.get("positions") is None:
        return None
    spread = _finite_array(stance.get("spread") or np.zeros((4, 3)), (4, 3))
    return float(np.sqrt(np.mean(np.linalg.norm(spread, axis=-1) ** 2))) if spread is not None else None


def _gait_speeds(speeds) -> dict[str, float]:
    speeds = {k: float(v) for k, v in speeds.items() if _is_number(v)}
    if "run" not in speeds and "walk" in speeds:
        speeds["run"] = RUN_TO_WALK_SPEED * speeds["walk"]
    return speeds


def _trained_beta(training_config: Mapping[str, Any], config) -> float | None:
    if config is not None and hasattr(config, "beta"):
        return float(config.beta)
    beta = training_config.get("beta")
    return float(beta) if isinstance(beta, (int, float)) else None


def _beta_range(training_config: Mapping[str, Any], config, beta: float | None) -> tuple[float, float] | None:
    """The trained range `training.config.beta_range` [lo, hi] when stored, else BETA_SPAN around the
    trained beta; None for a model that does not use beta (cubic phase function, other kinds)."""
    phase_function = getattr(config, "phase_function", None) or training_config.get("phase_function", "rbf")
    if phase_function != "rbf" or beta is None and config is None and not training_config:
        return None
    trained = training_config.get("beta_range")
    if (isinstance(trained, (list, tuple)) and len(trained) == 2
            and all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in trained) and trained[0] <= trained[1]):
        return float(trained[0]), float(trained[1])
    if beta is None:
        return None
    return beta / BETA_SPAN, beta * BETA_SPAN
