"""The motion-model interface: what the runtime tick needs from a model, whatever its kind.

Each tick (`runtime.tick.step`) the runtime plans the trajectory and packs, with the feature contract's
input layout (`features.layout`), the control (the trajectory from 1 s back to 1 s ahead in the root
frame: positions, facings, gait) and the pose shown last tick (joint positions and velocities in the
root frame). A model answers with the output layout: the root's motion (velocity, yaw rate), the phase
change, foot contacts, its own future trajectory and the next pose (joint positions, velocities, 6D
rotations in the root frame). The runtime does the rest for every kind alike: trajectory springs and
blending, drift correction, phase advance, foot pins, IK, settling steps and the guards.

A model may keep state of its own per character (motion matching: the frame it plays and its
transition offsets; a motion VAE: its history window and latent): `initial_model_state(batch)` makes
it, `step` returns the next, and the runtime keeps it in `CharacterState.model_state` (arrays with a
leading batch dimension, in the root frame, so moving a character never touches them).

`MotionModel` holds what every kind shares, read from the `ModelCard` once (skeleton plan, strides per
style, floor levels, stance, gait speeds, tick limits, trajectory offsets); a kind implements
`predict_batch` and, when it has one, its own state. docs/MODELS.md tells how to add a kind.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pfnn_core.device import resolve_device
from pfnn_core.features.contract import FALLBACK_STRIDE, FUTURE_OFFSETS, SIM_FPS, TRAJ_OFFSETS
from pfnn_core.math.mat3 import njit
from pfnn_core.models.card import ModelCard
from pfnn_core.runtime.guards import tick_limits
from pfnn_core.runtime.pose import skeleton_plan

STRIDE_GRID = 96  # speeds of the per-style stride table


class ModelInput(NamedTuple):
    """One tick's question to a model, for B characters."""

    x: np.ndarray  # [B, nx] control + previous pose, packed with the card's input layout
    phase: np.ndarray  # [B] gait phase in [0, 1) the runtime holds
    style: np.ndarray | None  # [B, S] style weights (None for a model without styles)
    state: dict  # the model's own per-character state (`initial_model_state`), [B, ...] arrays
    settings: object  # the live `RuntimeSettings` (each kind reads its own fields)
    dt: float  # s, the simulation step
    warp: np.ndarray | None = None  # [B] the runtime's slow-walk speed warp of x's trajectory (None: none, 1)


class ModelOutput(NamedTuple):
    y: np.ndarray  # [B, ny] float64, packed with the card's output layout
    state: dict  # the model's state after this tick


@njit
def _stride_lengths(speed, style, top_speed, table, out):
    """Per character: each style's stride length at its speed (linear on the table's even speed grid
    0..top_speed, held beyond), blended by the style weights."""
    last = table.shape[1] - 1
    for b in range(speed.shape[0]):
        position = min(max(speed[b] / top_speed, 0.0), 1.0) * last
        lower = min(int(position), last - 1)
        share = position - lower
        length = 0.0
        for s in range(style.shape[1]):
            length += style[b, s] * (table[s, lower] * (1.0 - share) + table[s, lower + 1] * share)
        out[b] = length


class MotionModel:
    """A motion model of one checkpoint on one device, and the card facts the tick reads.

    Subclasses set `kind` and implement `predict_batch` (and `initial_model_state` when they keep
    state, `mean_pose` for the first pose, `set_beta` when beta means something to them).
    """

    kind = "base"
    backend = "numpy"  # how it runs: 'numpy' (CPU) or 'torch'

    def __init__(self, checkpoint, device: str = "auto"):
        card: ModelCard = checkpoint.card
        self.checkpoint, self.card = checkpoint, card
        self.device = resolve_device(device)
        self.x_layout, self.y_layout = card.layout
        self.skeleton = dict(card.skeleton)
        self.names = list(card.skeleton["names"])
        self.parents = np.asarray(card.skeleton["parents"], dtype=int)
        self.offsets = np.asarray(card.skeleton["offsets"], dtype=float)
        self.plan = skeleton_plan(self.names, self.parents, self.offsets, card.skeleton.get("hips"),
                                  card.skeleton.get("contact_joints"))
        self.anchor = self.plan.anchor
        self.contact_joints = [int(j) for j in self.plan.contact_joints]
        self.num_styles = card.num_styles
        self.style_names = list(card.style_names) or [str(i) for i in range(self.num_styles)]
        self.stride = card.stride or dict(FALLBACK_STRIDE)
        self.stride_grid, self.style_stride = self._style_strides()
        self.stance = card.stance
        self.gait_speeds = dict(card.gait_speeds)
        self.floor_heights = None if card.floor_heights is None else card.floor_heights.copy()
        self.limits = tick_limits(self.plan.extent, self.gait_speeds)
        self.sim_fps = float(SIM_FPS)
        offsets = np.asarray(TRAJ_OFFSETS)
        self.past_offsets = offsets[offsets < 0]  # frames, oldest first
        self.future_offsets = np.asarray(FUTURE_OFFSETS)  # frames the model predicts
        self.future_times = self.future_offsets / self.sim_fps  # s
        self.past_back = -self.past_offsets  # ticks before the newest history row (the current root)
        self.future_rows = np.searchsorted(self.future_offsets, offsets[offsets > 0])
        self._blend_cache: dict = {}

    # ---- what a kind implements ---------------------------------------------------------------
    def predict_batch(self, inputs: ModelInput) -> ModelOutput:
        raise NotImplementedError

    def initial_model_state(self, batch: int) -> dict:
        """The model's own per-character state at a fresh start (none by default)."""
        return {}

    def mean_pose(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A neutral first pose in the root frame: joint positions, velocities [J, 3], 6D rotations [J, 6]."""
        raise NotImplementedError

    @property
    def beta(self) -> float | None:
        return None

    def set_beta(self, beta: float) -> None:
        """The PFNN's live phase bandwidth; other kinds have none."""

    def prepare(self, settings, style) -> None:
        """Build now what the first ticks of a character in `style` [S] under `settings` would build on
        first use (a viewer calls this after loading a model, where a wait is expected, so the first
        steps do not stand still); nothing by default."""

    # ---- shared by every kind -------------------------------------------------------------------
    def step(self, inputs: ModelInput) -> ModelOutput:
        """The tick's model stage: styles defaulted, then the kind's `predict_batch`."""
        style = inputs.style
        if self.num_styles and style is None:
            style = self.default_style(len(inputs.x))
        if not self.num_styles:
            style = None
        return self.predict_batch(inputs._replace(style=style))

    @property
    def num_joints(self) -> int:
        return len(self.names)

    def _style_strides(self) -> tuple[np.ndarray, np.ndarray]:
        """Stride length per style on a common speed grid: (speeds [G], lengths [max(S, 1), G]); a style
        without stride statistics (and a model without styles) takes the pooled ones."""
        stats = self.card.style_stats
        strides = [self.stride] + [(stats[name].stride if name in stats else None) for name in self.card.style_names]
        top = max(max(np.asarray(s["speed"], float).max(initial=0.0) for s in strides if s), 1.0)
        grid = np.linspace(0.0, 1.25 * top, STRIDE_GRID)
        table = [np.interp(grid, (s or self.stride)["speed"], (s or self.stride)["stride_length"]) for s in strides[1:]]
        return grid, np.asarray(table if table else [np.interp(grid, self.stride["speed"], self.stride["stride_length"])])

    def stride_length(self, speed, style) -> np.ndarray:
        """Stride length (m per cycle) at `speed` [B] for style weights `style` [B, S]: the styles' own
        stride-by-speed statistics blended by the weights (the pooled statistics without styles)."""
        speed = np.ascontiguousarray(speed, dtype=np.float64)
        if not (self.num_styles and style is not None and np.shape(style)[-1] == len(self.style_stride)):
            style = np.ones((len(speed), 1))
        out = np.empty(len(speed))
        _stride_lengths(speed, np.ascontiguousarray(style, dtype=np.float64), self.stride_grid[-1], self.style_stride,
                        out)
        return out

    def blend_weights(self, bias: float, bias_strafe: float) -> np.ndarray:
        """[2, F] trajectory blend weights (normal, strafing), cached for the current biases."""
        key = (float(bias), float(bias_strafe))
        weights = self._blend_cache.get(key)
        if weights is None:
            from pfnn_core.runtime.trajectory import trajectory_blend_weights

            weights = trajectory_blend_weights(len(self.future_offsets), np.array(key))
            if len(self._blend_cache) > 8:
                self._blend_cache.clear()
            self._blend_cache[key] = weights
        return weights

    def default_style(self, batch: int) -> np.ndarray:
        """[B, S] style weights when none are given: the card's default style (zero-width without styles)."""
        style = np.zeros((batch, self.num_styles))
        if self.num_styles:
            name = self.card.default_style
            style[:, self.style_names.index(name) if name in self.style_names else 0] = 1.0
        return style
