"""What changes over a run, each a function of the config and the step or epoch (random draws seeded by
them), so a resumed run replays it exactly: the learning rate (`cosine_lr`), the RBF beta of each batch
(`batch_beta`), the scheduled-sampling probability (`feedback_probability`), each epoch's batches of
rollout starts (`epoch_start_rows`) and the training rows with scarce motion kinds repeated
(`oversampled_rows`)."""
from __future__ import annotations

import math

import numpy as np

from pfnn_core.data.labels import ClipLabel
from pfnn_core.data.statistics import motion_kind
from pfnn_core.training.config import TrainConfig


def cosine_lr(config: TrainConfig, step: int, total_steps: int) -> float:
    """The learning rate of optimizer step `step` of `total_steps`: a cosine from `lr` down to
    `lr * lr_final_fraction`."""
    final = config.lr * config.lr_final_fraction
    progress = min(step / max(total_steps, 1), 1.0)
    return final + 0.5 * (config.lr - final) * (1.0 + math.cos(math.pi * progress))


def batch_beta(config: TrainConfig, step: int) -> float:
    """The RBF beta of one optimizer step: log-uniform in `beta_range`, drawn from (seed, step) so a
    resumed run draws the same values; `beta` when there is no range."""
    if not config.beta_range:
        return float(config.beta)
    low, high = (float(v) for v in config.beta_range)
    draw = np.random.default_rng([config.seed, 7919, step]).random()
    return float(math.exp(math.log(low) + draw * (math.log(high) - math.log(low))))


def feedback_probability(config: TrainConfig, epoch: int) -> float:
    """The probability of feeding a rollout the model's own pose in epoch `epoch` (0-based): from 0 up to
    `feedback_max` over the ramp's epochs, then held."""
    ramp = config.feedback_ramp_epochs or max(config.epochs // 2, 1)
    return config.feedback_max * min(epoch / ramp, 1.0)


def epoch_start_rows(train_rows: np.ndarray, config: TrainConfig, epoch: int) -> list[np.ndarray]:
    """Shuffled rollout starts for one epoch, in batches; derived from (seed, epoch) so a resumed run
    replays the same batches. One epoch feeds about as many frames as the training set has."""
    order = np.random.default_rng([config.seed, epoch]).permutation(train_rows)
    starts = order[:max(1, math.ceil(len(order) / config.rollout_length))]
    return [starts[i:i + config.batch_size] for i in range(0, len(starts), config.batch_size)]


def oversampled_rows(train_rows: np.ndarray, data, factors: dict) -> np.ndarray:
    """`train_rows` with the rows of each motion kind in `factors` (`motion_kind`: 'side',
    'back', 'run', 'walk', ...) repeated to `factors[kind]` copies in all; calm standing rows keep one.
    Side-steps and backward walks are seconds per style among an hour of forward walks: repeating them
    makes every epoch weigh them more. ValueError for an unknown kind or a factor below 1."""
    if not factors:
        return train_rows
    known = ("walk", "run", "back", "side", "stand", "other", "unknown")
    for kind, factor in factors.items():
        if kind not in known:
            raise ValueError(f"oversample: unknown motion kind '{kind}' (known: {', '.join(known[:5])})")
        if int(factor) != factor or factor < 1:
            raise ValueError(f"oversample: the factor of '{kind}' must be a whole number >= 1, got {factor}")
    if not data.clip_labels:
        raise ValueError("oversample: this dataset has no clip labels to find motion kinds by")
    kinds = row_kinds(data, train_rows)
    parts = [train_rows]
    for kind, factor in factors.items():
        parts += [train_rows[kinds == kind]] * (int(factor) - 1)
    return np.concatenate(parts)


def row_kinds(data, rows: np.ndarray) -> np.ndarray:
    """The motion kind (`statistics.motion_kind`) of each row: its clip's, 'stand' for calm standing
    rows, 'unknown' for every row of a set without clip labels."""
    if not data.clip_labels:
        return np.full(len(rows), "unknown")
    clip_kinds = np.array([motion_kind(ClipLabel(label["style"], label["content"])) for label in data.clip_labels])
    kinds = clip_kinds[data.clip[rows]]
    standing = getattr(data, "standing", None)
    return kinds if standing is None else np.where(standing[rows], "stand", kinds)
