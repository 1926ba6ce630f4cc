"""A procedural stand-in character: a 22-joint walker driven by the same `Command` as the network
character, used when no model is loaded (missing or broken checkpoint) so the viewer stays usable.

It is deliberately simple: the root follows the commanded velocity with halflife damping, the facing
turns toward the motion (or keeps the strafe facing), legs and arms swing with a phase that advances
with speed. Joint names match the bundled skeleton so styling and contacts work the same way.
"""

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from app.render.camera import damp_factor
from app.render.scene import SceneFrame

PUPPET_NAMES = ("joint_Root", "Hips", "Spine", "Chest", "Neck", "Head",
                "Shoulder_L", "UpperArm_L", "LowerArm_L", "Hand_L",
                "Shoulder_R", "UpperArm_R", "LowerArm_R", "Hand_R",
                "UpperLeg_L", "LowerLeg_L", "Foot_L", "Toes_L",
                "UpperLeg_R", "LowerLeg_R", "Foot_R", "Toes_R")
PUPPET_PARENTS = np.array([-1, 0, 1, 2, 3, 4, 3, 6, 7, 8, 3, 10, 11, 12, 1, 14, 15, 16, 1, 18, 19, 20])
CONTACT_JOINTS = np.array([16, 17, 20, 21])
STRIDE_LENGTH = 1.4  # m per gait cycle
HISTORY = 61


def _limb(start, angle, length):
    """End of a limb segment swinging in the sagittal plane (angle 0 = straight down, + = forward)."""
    return start + length * np.array([0.0, -np.cos(angle), np.sin(angle)])


def puppet_local_pose(phase: float, speed_fraction: float) -> np.ndarray:
    """Joint positions [22, 3] in the character frame (+Z forward, +X left, Y up, metres)."""
    s = float(np.clip(speed_fraction, 0.0, 1.5))
    cycle = 2 * np.pi * phase
    pos = np.zeros((22, 3))
    pos[1] = [0, 0.93 - 0.025 * s + 0.02 * s * np.cos(2 * cycle), 0.0]
    lean = 0.05 * s
    for joint, height in ((2, 0.13), (3, 0.30), (4, 0.50), (5, 0.62)):
        pos[joint] = pos[1] + [0, height, lean * height]
    for side, base in ((1.0, 6), (-1.0, 10)):
        swing = -side * 0.45 * s * np.sin(cycle) * 0.8
        pos[base] = pos[3] + [side * 0.05, 0.13, 0.0]
        pos[base + 1] = pos[3] + [side * 0.19, 0.12, 0.0]
        pos[base + 2] = _limb(pos[base + 1], swing, 0.28)
        pos[base + 3] = _limb(pos[base + 2], swing + 0.25 + 0.35 * s, 0.25)
    for side, base, offset in ((1.0, 14, 0.0), (-1.0, 18, np.pi)):
        swing = 0.42 * s * np.sin(cycle + offset)
        knee_bend = 0.6 * s * max(0.0, np.cos(cycle + offset)) + 0.05
        pos[base] = pos[1] + [side * 0.09, -0.04, 0.0]
        pos[base + 1] = _limb(pos[base], swing, 0.43)
        pos[base + 2] = _limb(pos[base + 1], swing - knee_bend, 0.41)
        pos[base + 3] = pos[base + 2] + [0.0, -0.05, 0.14]
    pos[0] = [0.0, 0.0, 0.0]
    return pos


def _yaw_matrix(direction: np.ndarray) -> np.ndarray:
    """Rotation taking the character's +Z to `direction` (x, z) about +Y."""
    forward = np.array([direction[0], 0.0, direction[1]])
    left = np.array([forward[2], 0.0, -forward[0]])
    return np.stack([left, [0.0, 1.0, 0.0], forward], axis=1)


@dataclass
class PuppetSource:
    """Procedural character; `step(command, dt)` follows a `pfnn_core.controller.Command`."""
    velocity_halflife: float = 0.2
    turn_halflife: float = 0.15
    root_pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(2))
    facing: np.ndarray = field(default_factory=lambda: np.array([0.0, 1.0]))
    phase: float = 0.0
    commanded_velocity: np.ndarray = field(default_factory=lambda: np.zeros(2))
    past: list = field(default_factory=list)
    timings: dict = field(default_factory=dict)
    label: str = "Stand-in character (no model loaded)"

    @property
    def gait(self) -> None:
        """No gait of its own: the HUD names it from the speed."""
        return None

    def reset(self, yaw: float = 0.0) -> None:
        """Back at the origin, facing `yaw` (0 = +Z)."""
        self.root_pos, self.velocity, self.facing = np.zeros(3), np.zeros(2), np.array([np.sin(yaw), np.cos(yaw)])
        self.phase, self.past = 0.0, []

    def snapshot(self):
        """A shallow copy: `step` rebinds its arrays and history list, never changes them in place."""
        return dataclasses.replace(self)

    def restore(self, snapshot) -> None:
        for f in dataclasses.fields(self):
            setattr(self, f.name, getattr(snapshot, f.name))

    def step(self, command, dt: float) -> None:
        desired = np.asarray(command.desired_velocity, np.float64)
        self.commanded_velocity = desired
        self.velocity = self.velocity + (desired - self.velocity) * damp_factor(self.velocity_halflife, dt)
        speed = float(np.linalg.norm(self.velocity))
        target = command.facing if command.facing is not None else (desired if np.linalg.norm(desired) > 0.1 else None)
        if target is not None:
            target = np.asarray(target, np.float64) / max(np.linalg.norm(target), 1e-9)
            blended = self.facing + (target - self.facing) * damp_factor(self.turn_halflife, dt)
            if np.linalg.norm(blended) < 1e-3:  # turning exactly around: rotate a little first
                blended = self.facing + 0.1 * np.array([-self.facing[1], self.facing[0]])
            self.facing = blended / np.linalg.norm(blended)
        self.root_pos = self.root_pos + np.array([self.velocity[0], 0.0, self.velocity[1]]) * dt
        self.phase = (self.phase + speed / STRIDE_LENGTH * dt) % 1.0
        self.past = (self.past + [(self.root_pos.copy(), self.facing.copy())])[-HISTORY:]

    def frames(self) -> list[SceneFrame]:
        speed = float(np.linalg.norm(self.velocity))
        local = puppet_local_pose(self.phase, speed / 1.2)
        world = local @ _yaw_matrix(self.facing).T + self.root_pos
        facing3 = np.array([self.facing[0], 0.0, self.facing[1]])
        history = self.past or [(self.root_pos.copy(), self.facing.copy())]
        past_pos = np.array([p for p, _ in history])
        past_dir = np.array([[d[0], 0.0, d[1]] for _, d in history])
        offsets = np.arange(1, 7)[:, None] * (10 / 60.0)
        # exponential approach of the velocity toward the command, integrated in closed form
        decay = np.log(2) / self.velocity_halflife
        blend = offsets - (1 - np.exp(-decay * offsets)) / decay
        gap = self.commanded_velocity - self.velocity
        future_xz = self.root_pos[[0, 2]] + self.velocity * offsets + gap * blend
        command_xz = self.root_pos[[0, 2]] + self.commanded_velocity * offsets
        command_dir = self.commanded_velocity / max(np.linalg.norm(self.commanded_velocity), 1e-9) \
            if np.linalg.norm(self.commanded_velocity) > 0.1 else self.facing
        contacts = np.clip((0.09 - (world[CONTACT_JOINTS, 1] - np.array([0.06, 0.02, 0.06, 0.02]))) / 0.06, 0, 1)

        def on_ground(xz):
            return np.stack([xz[:, 0], np.zeros(len(xz)), xz[:, 1]], axis=-1)

        return [SceneFrame(
            joint_pos=world, parents=PUPPET_PARENTS, root_pos=self.root_pos.copy(), root_dir=facing3,
            phase=self.phase, names=PUPPET_NAMES, contact_joints=CONTACT_JOINTS, contacts=contacts,
            traj_past_pos=past_pos, traj_past_dir=past_dir,
            traj_future_pos=on_ground(future_xz), traj_future_dir=np.tile(facing3, (6, 1)),
            traj_command_pos=on_ground(command_xz),
            traj_command_dir=np.tile([command_dir[0], 0.0, command_dir[1]], (6, 1)))]
