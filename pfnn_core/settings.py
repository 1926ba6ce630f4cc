"""Every live tunable of the character runtime, in physical units, in one dataclass.

The viewer's Tune panel edits a `RuntimeSettings` object and the runtime reads it each tick; the
panel is built generically from each field's metadata (`label`, `help`, and `min`/`max` for numbers,
`choices` for strings; `step` is a suggested slider step).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

PHASE_MODES = ("speed", "network")


def _tunable(default: Any, label: str, help: str, min: float | None = None, max: float | None = None,
             step: float | None = None, choices: tuple[str, ...] | None = None) -> Any:
    metadata = {"label": label, "help": help}
    if min is not None:
        metadata["min"] = min
    if max is not None:
        metadata["max"] = max
    if step is not None:
        metadata["step"] = step
    if choices is not None:
        metadata["choices"] = choices
    return field(default=default, metadata=metadata)


@dataclass
class RuntimeSettings:
    # Bandwidth of the RBF phase function (kernel weights exp(-beta d^2)); pushed to the model next tick.
    beta: float = _tunable(8.0, "Phase RBF beta", "Bandwidth of the RBF phase function (RBF models only).",
                           min=0.5, max=64.0, step=0.5)
    # Drift-correction window in ticks: moving average of (predicted - commanded) root velocity and yaw
    # rate that is removed from the root motion. 0 turns the correction off.
    drift_window: int = _tunable(60, "Drift window (ticks)",
                                 "Ticks over which the mean velocity/yaw-rate error to the command is removed; 0 = off.",
                                 min=0, max=600, step=1)
    # Halflife (s) of the critically damped spring that moves the commanded velocity toward the stick.
    traj_halflife_pos: float = _tunable(0.2, "Trajectory halflife: position (s)",
                                        "Time for the commanded velocity to close half the gap to the stick.",
                                        min=0.02, max=2.0, step=0.01)
    # Halflife (s) of the spring that turns the commanded facing toward the desired facing.
    traj_halflife_dir: float = _tunable(0.27, "Trajectory halflife: facing (s)",
                                        "Time for the commanded facing to close half the angle to the desired facing.",
                                        min=0.02, max=2.0, step=0.01)
    # Blend exponent of future positions, network -> command: w(t) = 1 - (1 - t)^bias [PFNN: 0.5].
    bias_pos: float = _tunable(0.5, "Blend bias: position", "Larger = future positions follow the command sooner (less of the network).",
                               min=0.05, max=5.0, step=0.05)
    # Same while strafing [PFNN: 1.0].
    bias_pos_strafe: float = _tunable(1.0, "Blend bias: position (strafe)", "Position blend exponent while strafing.",
                                      min=0.05, max=5.0, step=0.05)
    # Blend exponent of future facings, network -> command [PFNN: 2.0].
    bias_dir: float = _tunable(2.0, "Blend bias: facing", "Larger = future facings follow the command sooner (less of the network).",
                               min=0.05, max=5.0, step=0.05)
    # Same while strafing [PFNN: 0.5].
    bias_dir_strafe: float = _tunable(0.5, "Blend bias: facing (strafe)", "Facing blend exponent while strafing.",
                                      min=0.05, max=5.0, step=0.05)
    # Full-stick walking speed, m/s (default: the checkpoint's measured walking speed).
    walk_speed: float = _tunable(1.1, "Walk speed (m/s)", "Commanded speed at full stick.", min=0.1, max=3.0, step=0.05)
    # Full-stick running speed, m/s (default: the checkpoint's measured running speed).
    run_speed: float = _tunable(3.4, "Run speed (m/s)", "Commanded speed at full stick while running.",
                                min=0.5, max=8.0, step=0.05)
    # Stick lengths below this count as no input (gamepad sticks rest slightly off centre).
    stick_deadzone: float = _tunable(0.1, "Stick dead zone", "Stick length treated as zero.", min=0.0, max=0.5, step=0.01)
    # 'speed': phase advances by speed / stride_length * dt (stops at zero speed); 'network': predicted dphase.
    phase_mode: str = _tunable("speed", "Phase mode", "Speed-based phase (stops when still) or the network's dphase.",
                               choices=PHASE_MODES)
    # Weight of the previous pose extrapolated by its velocity in the fed-back pose (0 = network only) [PFNN: 0.5].
    pose_smoothing: float = _tunable(0.5, "Pose smoothing", "Blend of the extrapolated previous pose into the prediction.",
                                     min=0.0, max=0.95, step=0.05)
    # Turn each joint so its bones point where the predicted joint POSITIONS put them (the rotation
    # outputs only supply the twist of one-child bones); off = show the predicted rotations as they are.
    fit_rotations: bool = _tunable(True, "Fit rotations to positions",
                                   "Point every bone at the predicted joint positions (robust to poor rotation outputs).")
    # Pin feet in the world while their contact output is high.
    foot_locking: bool = _tunable(True, "Foot locking", "Pin planted feet in place with leg IK.")
    # Contact output (0..1) above which a foot is pinned.
    contact_threshold: float = _tunable(0.5, "Contact threshold", "Contact output above which a foot is pinned.",
                                        min=0.05, max=0.99, step=0.01)
    # Halflife (s) of the fade of a pin's weight in and out.
    lock_fade_halflife: float = _tunable(0.04, "Lock fade halflife (s)", "How fast a pin fades in and out.",
                                         min=0.005, max=0.5, step=0.005)
    # Leash of a pin (m): a pinned foot is dragged along when the network's foot gets further than this
    # from it, so it slides a little instead of letting go and gliding back while still in contact.
    lock_release_distance: float = _tunable(0.4, "Lock leash (m)",
                                            "A pinned foot is dragged along once the network's foot is this far from it.",
                                            min=0.01, max=1.0, step=0.01)
    # Keep each foot joint at or above its height in the model's standing pose (legs solved by IK).
    floor_clamp: bool = _tunable(True, "Keep feet above the floor", "Raise a foot that sinks below its standing height.")
    # Solve two-bone leg IK toward the pins (off: pins are computed but the pose is not changed).
    ik_enabled: bool = _tunable(True, "Leg IK", "Apply two-bone IK to reach pinned feet.")
    # Commanded speed (m/s) below which the character counts as fully standing; root motion and phase
    # advance are scaled by (1 - stand_amount)^0.25 [PFNN].
    stand_speed: float = _tunable(0.15, "Stand speed (m/s)", "Commanded speed at and below which root motion and phase stop; 0 = no stand scaling.",
                                  min=0.0, max=1.0, step=0.01)
    # 0 = root moves by the network's predicted velocity and yaw rate, 1 = by the commanded spring.
    root_motion_from_command: float = _tunable(0.5, "Root motion from command",
                                               "Blend of root motion toward the commanded spring (the data has no starts/stops).",
                                               min=0.0, max=1.0, step=0.05)

    # Commanded speeds below this (m/s) are shown to the network as this walk and played slower (the
    # data has no slow walks: asked for one the network shuffles with its feet always in contact and
    # slides). Default: a little above the slowest walks in the data; 0 = off.
    slow_walk_speed: float = _tunable(0.9, "Slowest network walk (m/s)",
                                      "Slower commands play this walk slower (planted feet); 0 = off.",
                                      min=0.0, max=2.0, step=0.05)
    # Most the network's view of the motion is sped up by (speeds near standing stay a stand).
    max_speed_warp: float = _tunable(3.0, "Slow-walk warp limit", "Largest speed-up of the network's view of a slow walk.",
                                     min=1.0, max=10.0, step=0.1)

    def reset(self) -> None:
        """Restore every field to its default, in place (the UI holds a reference to this object)."""
        for f in dataclasses.fields(self):
            setattr(self, f.name, f.default)

    @classmethod
    def defaults(cls) -> "RuntimeSettings":
        return cls()

    @classmethod
    def bare_network(cls, meta: Mapping[str, Any] | None = None) -> "RuntimeSettings":
        """The bare network, as the evaluation's "network" subject runs it: root motion and turning from
        the network's outputs, its own phase; no command blending, drift correction, stand scaling,
        slow-walk warp, pose smoothing, foot locks, IK or floor clamp. The trajectory input is still
        the command's (that is how the network is steered)."""
        settings = cls.from_checkpoint_meta(meta or {})
        for name, value in (("root_motion_from_command", 0.0), ("drift_window", 0), ("stand_speed", 0.0),
                            ("foot_locking", False), ("ik_enabled", False), ("floor_clamp", False),
                            ("phase_mode", "network"), ("slow_walk_speed", 0.0), ("pose_smoothing", 0.0)):
            setattr(settings, name, value)
        return settings

    @classmethod
    def from_checkpoint_meta(cls, meta: Mapping[str, Any]) -> "RuntimeSettings":
        """Defaults with walk/run speeds taken from a checkpoint's `gait_speeds` when present."""
        settings = cls()
        gait_speeds = meta.get("gait_speeds") or {}
        if "walk" in gait_speeds:
            settings.walk_speed = float(gait_speeds["walk"])
        if "run" in gait_speeds:
            settings.run_speed = float(gait_speeds["run"])
        return settings

    def validate(self) -> None:
        """Raise ValueError naming the first field outside its declared range or choices."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            meta = f.metadata
            if "choices" in meta and value not in meta["choices"]:
                raise ValueError(f"{f.name}: expected one of {meta['choices']}, got {value!r}")
            if "min" in meta and value < meta["min"]:
                raise ValueError(f"{f.name}: {value} is below the minimum {meta['min']}")
            if "max" in meta and value > meta["max"]:
                raise ValueError(f"{f.name}: {value} is above the maximum {meta['max']}")


def tunable_fields(settings: RuntimeSettings | type[RuntimeSettings] = RuntimeSettings) -> list[dataclasses.Field]:
    """The fields in declaration order, for a UI that builds one widget per field from its metadata."""
    return list(dataclasses.fields(settings))
