"""What the panel shows of the running model kind and of the physics, one panel object each (parts of
`ViewerState`): `MatchingPanel` (the clip and frame a motion-matching model plays, its last search),
`MVAEPanel` (a motion VAE's latent path, active dimensions and training curves) and `PhysicsPanel` (off / on / both, the
physics settings the tracker reads, the last tick's figures). The viewer fills them every frame
(`app.sources.readouts`); the sections only read them and write the settings and the mode."""

from dataclasses import dataclass, field

import numpy as np

from pfnn_core.physics.settings import PhysicsSettings


@dataclass
class MatchingPanel:
    playing: dict | None = None  # `MatchingModel.now_playing` of the followed character (None before a tick)
    shown_frames: int = 0  # frames the readout has been drawn (tests see it change)


@dataclass
class MVAEPanel:
    path: np.ndarray = field(default_factory=lambda: np.zeros((0, 2)))  # [T, 2] latent path, oldest first
    latent_size: int = 0
    active_dimensions: int = 0
    kl_per_dim: np.ndarray = field(default_factory=lambda: np.zeros(0))  # nats per latent dimension (held out)
    loss_history: dict = field(default_factory=dict)  # `MVAEModel.loss_history()`: the training's curves per term


@dataclass
class PhysicsPanel:
    mode: str = "off"  # one of `app.sources.physics.MODES`: the section and the G key write it
    settings: PhysicsSettings = field(default_factory=PhysicsSettings)  # the one object the tracker reads
    available: bool = False  # a network character runs (the physics tracks it)
    figures: dict = field(default_factory=dict)  # tracking_error (m), root_force (N), foot_forces [4, 3], physics_ms
    error_trace: list = field(default_factory=list)  # m, the tracking error of the last seconds' ticks
    pushes: int = 0
    push_strength: float = 60.0  # N s: what the push key gives (60 carries the hips ~17 cm; the evaluation's 30, ~9 cm)
    error: str = ""  # why the body could not be made
    preparing: int = 0  # frames drawn saying a body asked for is being made (it is made after two)
