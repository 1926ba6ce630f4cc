"""The motion VAE as a motion model (`base.MotionModel`): `MVAEModel` runs a trained motion VAE's policy
and decoder each tick, for B characters, on the CPU (numpy, float32).

Per tick, per character: the condition (phase as sin/cos, the runtime's planned trajectory in the root
frame, normalised, the style weights); the policy picks the next latent from the current latent, the
last frames of the history and the condition; at variation v > 0 the latent is drawn around the
policy's choice, N(0, (v * s)^2) per dimension with s the posterior's typical standard deviation (v = 0:
the policy's latent itself, deterministic); the decoder gives the next frame from that latent, the
newest history frame and the condition. The frame is the output layout's row (root velocity and yaw
rate in the previous root frame, phase change, contacts, future trajectory, the pose in the root
frame); its root motion, a delta per tick, is low-pass filtered (`ROOT_FILTER_S`) before the runtime
integrates it. A frame that is not finite is replaced by the previous one (never a NaN out).

State (`CharacterState.model_state`, root-frame quantities only): `history` [B, W, F] the last W
normalised frames (W the encoder's training window), `latent` [B, Z], `root` [B, 3] the filtered root
velocity (x, z) and yaw rate. The model steps at the training rate, the simulation's 60 Hz, once per
tick of the runtime's fixed-timestep accumulator.
"""
from __future__ import annotations

import math

import numpy as np

from pfnn_core.models.base import ModelInput, ModelOutput, MotionModel
from pfnn_core.models.mvae.checkpoint import network_of
from pfnn_core.models.mvae.frames import condition, control_indices
from pfnn_core.models.mvae.networks import NumpyMVAE

ROOT_FILTER_S = 0.03  # s: time constant of the root motion's low-pass filter
VARIATION_SEED = 0


class MVAEModel(MotionModel):
    """A motion VAE of one checkpoint (the motion-model interface, `models/base.py`)."""

    kind = "mvae"
    backend = "numpy"

    def __init__(self, checkpoint, device: str = "auto", backend: str = "auto"):
        super().__init__(checkpoint, "cpu")
        if backend not in ("auto", "numpy"):
            raise ValueError(f"the motion VAE runs on the numpy backend (CPU) only, got {backend!r}")
        self.config = checkpoint.config
        self.network = network_of(checkpoint)
        self.runner = NumpyMVAE(self.network)
        self.norm = {name: value.detach().cpu().numpy().astype(np.float32) for name, value in checkpoint.norm.items()}
        self.control_index = control_indices(self.x_layout)
        self.control_mean = self.norm["x_mean"][self.control_index]
        self.control_std = self.norm["x_std"][self.control_index]
        self.latent_scale = checkpoint.tensors["latent.scale"].numpy().astype(np.float32)
        self.window = int(self.config.window)
        self.num_styles = int(self.config.num_styles)
        if len(self.style_names) != self.num_styles:
            self.style_names = [str(i) for i in range(self.num_styles)]
        root_vel, yaw_rate = self.y_layout.slice("root_vel"), self.y_layout.slice("root_yaw_rate")
        self.root_index = np.r_[np.arange(root_vel.start, root_vel.stop), np.arange(yaw_rate.start, yaw_rate.stop)]
        self.rng = np.random.default_rng(VARIATION_SEED)
        extra = checkpoint.card.extra
        self.kl_per_dim = np.asarray(extra.get("kl_per_dim") or np.zeros(self.config.latent_size), float)
        self.active_dimensions = int(extra.get("active_dimensions") or 0)

    def initial_model_state(self, batch: int) -> dict:
        """The training set's mean frame in every history slot, the prior's mean latent, a root at rest."""
        frames = self.config.frame_size
        return {"history": np.zeros((batch, self.window, frames), np.float32),
                "latent": np.zeros((batch, self.config.latent_size), np.float32),
                "root": np.zeros((batch, len(self.root_index)))}

    def mean_pose(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        mean = self.y_layout.unpack(self.norm["y_mean"].astype(float))
        return np.asarray(mean["joint_pos"], float), np.zeros_like(mean["joint_vel"]), np.asarray(mean["joint_rot"], float)

    def _state(self, state: dict, batch: int) -> dict:
        history = state.get("history") if state else None
        if history is None or history.shape != (batch, self.window, self.config.frame_size):
            return self.initial_model_state(batch)
        return state

    def condition_of(self, inputs: ModelInput) -> np.ndarray:
        control = (np.asarray(inputs.x, np.float32)[:, self.control_index] - self.control_mean) / self.control_std
        style = None if not self.num_styles else np.asarray(inputs.style, np.float32)
        return condition(np.asarray(inputs.phase, np.float64) % 1.0, control, style)

    def next_latent(self, latent: np.ndarray, history: np.ndarray, cond: np.ndarray, variation: float) -> np.ndarray:
        """The policy's latent, drawn around at `variation` > 0."""
        z = self.runner.policy(latent, history, cond).astype(np.float32)
        if variation > 0.0:
            z = z + (variation * self.latent_scale * self.rng.standard_normal(z.shape)).astype(np.float32)
        return z

    def predict_batch(self, inputs: ModelInput) -> ModelOutput:
        batch = len(inputs.x)
        state = self._state(inputs.state, batch)
        history = state["history"]
        cond = self.condition_of(inputs)
        variation = min(max(float(getattr(inputs.settings, "variation", 0.0) or 0.0), 0.0), 1.0)
        z = self.next_latent(state["latent"], history, cond, variation)
        frame = self.runner.decode(z, history[:, -1], cond)
        finite = np.isfinite(frame).all(axis=1) & np.isfinite(z).all(axis=1)
        if not finite.all():  # never a NaN out: hold the last frame and latent
            frame = np.where(finite[:, None], frame, history[:, -1])
            z = np.where(finite[:, None], z, state["latent"])
        y = frame.astype(np.float64) * self.norm["y_std"] + self.norm["y_mean"]
        share = 1.0 - math.exp(-float(inputs.dt) / ROOT_FILTER_S)
        root = state["root"] + share * (y[:, self.root_index] - state["root"])
        y[:, self.root_index] = root
        history = np.concatenate([history[:, 1:], frame[:, None].astype(np.float32)], axis=1)
        return ModelOutput(y, {"history": history, "latent": z.astype(np.float32), "root": root})

    def latent_path(self, latents: np.ndarray) -> np.ndarray:
        """`latent_path` of latents [T, Z] (a character's `LatentTrail`)."""
        return latent_path(latents)

    def loss_history(self) -> dict:
        """Per-term loss history of training (`{'vae'|'policy'|'val': {term: [per epoch]}}`), for the panel."""
        return dict(self.card.extra.get("loss_history") or {})


def latent_path(latents: np.ndarray) -> np.ndarray:
    """[T, 2]: latents [T, Z] projected on their two principal directions (the panel's latent path
    plot); zeros for fewer than two latents."""
    latents = np.asarray(latents, float)
    if len(latents) < 2:
        return np.zeros((len(latents), 2))
    centred = latents - latents.mean(0)
    _, _, axes = np.linalg.svd(centred, full_matrices=False)
    path = centred @ axes[:2].T
    return path if path.shape[1] == 2 else np.c_[path, np.zeros(len(path))]


class LatentTrail:
    """One character's latents over the last `seconds` (a ring of ticks), for the panel's latent path:
    `push(state.model_state["latent"][index])` each tick, `path()` the [T, 2] projection, oldest first."""

    def __init__(self, latent_size: int, seconds: float = 4.0, fps: float = 60.0):
        self.values = np.zeros((max(int(round(seconds * fps)), 2), latent_size))
        self.count, self.next = 0, 0

    def push(self, latent) -> None:
        self.values[self.next] = np.asarray(latent, float).reshape(-1)
        self.next = (self.next + 1) % len(self.values)
        self.count = min(self.count + 1, len(self.values))

    def latents(self) -> np.ndarray:
        """[T, Z] oldest first."""
        if self.count < len(self.values):
            return self.values[:self.count].copy()
        return np.roll(self.values, -self.next, axis=0)

    def path(self) -> np.ndarray:
        return latent_path(self.latents())
