"""The simulated body beside the live character (`pfnn_core.physics`): physics off, on (the simulated
pose is drawn) or both (the kinematic pose drawn as a ghost over it).

The body tracks the followed character (the first of a crowd) in the simulation tick, after the
runtime's tick, from the pose the runtime shows; the frames then carry the simulated pose, the floor's
forces under the feet and, in "both", the kinematic pose as the ghost, and are interpolated for
rendering like the kinematic ones. The physics never feeds back into the runtime. Turning it on again
or resetting the character starts the body again on the kinematic pose; stepping back restores the
body as it was at that tick (`snapshot` / `restore`, kept with the runtime's state).
"""

import dataclasses
import time
from collections import deque

import numpy as np

from pfnn_core.physics.layer import physics_for
from pfnn_core.physics.settings import PhysicsSettings

MODES = ("off", "on", "both")
PUSH_IMPULSE = 60.0  # N s at the chest: what the push key gives by default (twice the evaluation's 30)
ERROR_TRACE_TICKS = 240  # the tracking error of the last 4 s (60 Hz), for the panel's plot


def push_impulse(view_yaw: float, size: float = PUSH_IMPULSE) -> np.ndarray:
    """[3] N s across the camera's view on the ground, toward the screen's right (`Camera.view_yaw`: 0
    looks along +Z, the screen's right then -X). Along the view, a push was toward or away from the
    camera: with the camera behind a walker, along its walk, and a newcomer saw no reaction at all."""
    return size * np.array([-np.cos(view_yaw), 0.0, np.sin(view_yaw)])


def followed_tracker(character, settings: PhysicsSettings):
    """One simulated body for the followed character of a `runtime.Character`, its kernels compiled (the
    first landing's too: not in the middle of a walk, where a fresh machine stood the window still)."""
    model = character.model
    tracker = physics_for(character.skeleton, model.floor_heights, 1, settings, trained_on=model.card.trained_on)
    state = character.state
    tracker.landing.warm(np.asarray(state.world_joint_pos[:1], float), np.asarray(state.world_joint_rot[:1], float))
    return tracker


class LivePhysics:
    """The followed character's simulated body; `settings` is the panel's `PhysicsSettings` object."""

    def __init__(self, settings: PhysicsSettings, make_tracker=followed_tracker):
        self.settings, self.make_tracker = settings, make_tracker
        self.mode, self.tracker, self.pose = "off", None, None
        self.physics_ms = 0.0
        self.errors = deque(maxlen=ERROR_TRACE_TICKS)  # m per tick, newest last

    @property
    def active(self) -> bool:
        return self.mode != "off" and self.tracker is not None

    def set_mode(self, mode: str, character) -> None:
        """Off / on / both; the body is made on first use and starts on the kinematic pose when turned on
        (a body that cannot be made raises, the mode staying as it was)."""
        if mode not in MODES:
            raise ValueError(f"physics mode: expected one of {', '.join(MODES)}, got {mode!r}")
        if mode != "off" and self.tracker is None:
            self.tracker = self.make_tracker(character, self.settings)
        if self.mode == "off" and mode != "off":
            self.reset()
        self.mode = mode
        if mode == "off":
            self.pose = None

    def step(self, state, dt: float) -> None:
        """One tick of the body toward the runtime state's shown pose (character 0)."""
        if not self.active:
            return
        started = time.perf_counter()
        self.pose = self.tracker.step(state.world_joint_pos[:1], state.world_joint_rot[:1], dt)
        self.physics_ms = 1000.0 * (time.perf_counter() - started)
        self.errors.append(float(self.pose.tracking_error[0]))

    def push(self, impulse) -> bool:
        """An impulse (N s, world) at the chest over the next tick; False when the physics is off."""
        if not self.active:
            return False
        self.tracker.push(impulse)
        return True

    def reset(self) -> None:
        if self.tracker is not None:
            self.tracker.reset()
        self.pose = None
        self.errors.clear()

    def snapshot(self):
        """What stepping back to this tick restores (None while the physics is off)."""
        if not self.active:
            return None
        return self.tracker.snapshot(), self.pose, tuple(self.errors)

    def restore(self, snapshot) -> None:
        """The body as it was at `snapshot`; one taken while the physics was off (None) starts it again
        on the kinematic pose."""
        if snapshot is None or not self.active:
            self.reset()
            return
        tracker_state, self.pose, errors = snapshot
        self.tracker.restore(tracker_state)
        self.errors.clear()
        self.errors.extend(errors)

    def forget_body(self) -> None:
        """A new model (maybe another skeleton): the next use makes its body again."""
        self.tracker, self.pose = None, None
        if self.mode != "off":
            self.mode = "off"

    def take_messages(self) -> list[str]:
        return self.tracker.take_messages() if self.tracker is not None else []

    def figures(self) -> dict:
        """What the panel shows of the last tick (empty before one)."""
        if self.pose is None:
            return {}
        pose = self.pose
        return {"tracking_error": float(pose.tracking_error[0]), "root_force": float(pose.root_force[0]),
                "foot_forces": pose.foot_forces[0].copy(), "physics_ms": self.physics_ms}

    def shown(self, frame):
        """The followed character's frame as the physics shows it: the simulated pose (and in "both" the
        kinematic one as the ghost), the floor's forces under the feet."""
        if self.pose is None or self.mode == "off":
            return frame
        pose = self.pose
        return dataclasses.replace(frame, joint_pos=np.array(pose.positions[0], np.float64),
                                   joint_rot=np.array(pose.rotations[0], np.float64),
                                   ghost_pos=frame.joint_pos if self.mode == "both" else None,
                                   foot_forces=np.array(pose.foot_forces[0], np.float64))
