"""Network features: the control root frame, the trajectory window, the feature layout and the dataset.

Owns (contract in ARCHITECTURE.md): `SIM_FPS`, `TRAJ_OFFSETS`, `FUTURE_OFFSETS`, `root_frames`,
`gait_from_speed`, `FeatureLayout` (named slices; the only place that knows offsets), `make_layouts`,
`clip_features`, `build_training_data -> TrainingData` (one file's share in `clip_samples`, which a
process pool can run; the result cached by `dataset_cache` under `feature_config`), `normalisation`,
`split_by_clip`, `skeleton_dict`.

Conventions: Y up, metres, seconds; yaw about +Y with yaw 0 facing +Z (`quat_from_yaw`). A vector in
"root frame i" is the world vector rotated by the inverse root yaw of frame i, relative to the root
position (hips projected on the ground).

Decisions measured on the bundled data (see tests/test_features.py for the checks):
- Facing = average of the hip-line and shoulder-line normals (left-to-right vector x up), gaussian
  smoothed (sigma 0.1 s): the per-step pelvis twist is largely cancelled by the counter-rotating
  shoulders, and it points along the walking direction.
- When the skeleton's root joint is not the hips (the bundled `joint_Root` never moves), that joint's
  features are the control root itself (position 0, identity rotation, root velocity), so they do
  not grow with the distance walked from the world origin.
- Standing data. The bundled set has no idle clips; its standing clips (feet planted, arms raised
  and lowered) are detected as clips whose root barely moves. Only their arms-down frames (hand
  heights within ARMS_DOWN_TOLERANCE of the clip's first frame) are kept, as calm standing samples:
  zero root motion and trajectory, facing straight ahead, gait 'stand', contacts on, dphase 0. Each
  arms-down run is replicated STANDING_REPLICAS times with phase offsets spread over [0, 1), so a zero
  command gives a calm pose at whatever phase the runtime holds (raised arms are never shown as
  "standing", and standing does not tie to phase 0 only). Every other replica sees a past trajectory
  that drifts a little (`with_past_drift`) and must still stand still.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np
from scipy.ndimage import gaussian_filter1d

from pfnn_core import bvh, data_checks, quat
from pfnn_core.quat import wrap_angle
from pfnn_core.contacts import contact_joint_order, foot_contacts, foot_joints, joint_side
from pfnn_core.kinematics import forward_kinematics
from pfnn_core.phase import (
    cycle_strides, phase_from_contacts, phase_from_root_height, standing_frames, stride_statistics, touchdowns,
)

log = logging.getLogger(__name__)

SIM_FPS = 60
TRAJ_OFFSETS = tuple(range(-60, 60, 10))  # 12 samples, 1 s back to ~1 s ahead, frames at 60 Hz
FUTURE_OFFSETS = tuple(range(10, 70, 10))  # 6 samples the network predicts, +10..+60 frames
GAIT_NAMES = ("stand", "walk", "run")
CONTACT_NAMES = ("foot_left", "toe_left", "foot_right", "toe_right")

FACING_SIGMA_S = 0.1
SPEED_SIGMA_S = 0.25  # speed used for gait labels is smoothed over about a step
EXTRAPOLATION_FIT_FRAMES = 10
MIN_CLIP_S = 0.5
STANDING_MAX_SPEED = 0.25  # m/s: a clip whose mean root speed is below this is standing data
ARMS_DOWN_TOLERANCE = 0.05  # m: hands within this height of the clip's first frame are "down"
STANDING_REPLICAS = 40  # calm standing ~10% of the bundled set: at 2% (8) the network stood still only to 0.1 m/s
STAND_DRIFT_SPEED = 0.3  # m/s: the most a standing sample's past trajectory drifts (see `with_past_drift`)
STAND_DRIFT_TURN = 0.4  # rad/s
STAND_FADE = (0.1, 0.35)  # m/s: gait 'stand' fades out between these speeds
RUN_FADE = (1.6, 2.2)  # m/s: without content labels, 'run' fades in between these speeds
SKELETON_TOLERANCE_M = 0.002  # bone offsets of one training set may differ by this much (dataset 1: 0.4 mm)
FEATURE_VERSION = 4  # bump when the features computed from the same files change (keys the dataset cache)
# Modules whose code decides the samples: their source is part of the dataset cache key.
FEATURE_CODE_MODULES = ("bvh", "quat", "kinematics", "contacts", "phase", "features", "data_checks", "labels")
MIN_FILES_PER_WORKER = 32  # automatic worker count: a process pool only for sets this large per worker


# ----------------------------------------------------------------------------------------------
# Feature layout


class FeatureLayout:
    """Named blocks of one flat feature vector: name -> shape -> slice.

    `pack(dict) -> array [..., size]` and `unpack(array) -> dict of views [..., *shape]` work on any
    leading batch dims; `to_json`/`from_json` round trip (stored in checkpoints).
    """

    def __init__(self, entries):
        self.entries = [(str(name), tuple(int(n) for n in shape)) for name, shape in entries]
        self._slices, start = {}, 0
        for name, shape in self.entries:
            if name in self._slices:
                raise ValueError(f"duplicate feature name {name!r}")
            width = int(np.prod(shape)) if shape else 1
            self._slices[name] = slice(start, start + width)
            start += width
        self.size = start

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.entries]

    def shape(self, name: str) -> tuple:
        return dict(self.entries)[name]

    def slice(self, name: str) -> slice:
        return self._slices[name]

    def pack(self, values: dict, dtype=np.float32) -> np.ndarray:
        missing = [name for name in self.names if name not in values]
        if missing:
            raise KeyError(f"missing features {missing}")
        first = np.asarray(values[self.names[0]])
        batch = first.shape[: first.ndim - len(self.shape(self.names[0]))]
        out = np.empty(batch + (self.size,), dtype=dtype)
        for name, shape in self.entries:
            out[..., self._slices[name]] = np.asarray(values[name]).reshape(batch + (-1,))
        return out

    def unpack(self, array) -> dict:
        batch = array.shape[:-1]
        if array.shape[-1] != self.size:
            raise ValueError(f"feature vector has {array.shape[-1]} values, layout expects {self.size}")
        return {name: array[..., self._slices[name]].reshape(batch + shape) for name, shape in self.entries}

    def to_json(self) -> str:
        return json.dumps({"entries": [[name, list(shape)] for name, shape in self.entries]})

    @staticmethod
    def from_json(text):
        """Rebuild what `to_json` wrote: a FeatureLayout, or a ModelLayout for an {x, y} pair."""
        value = json.loads(text) if isinstance(text, (str, bytes)) else text
        if "x" in value and "y" in value:
            return ModelLayout(FeatureLayout.from_json(value["x"]), FeatureLayout.from_json(value["y"]))
        return FeatureLayout(value["entries"])

    def __eq__(self, other):
        return isinstance(other, FeatureLayout) and self.entries == other.entries

    def __repr__(self):
        return f"FeatureLayout(size={self.size}, {', '.join(f'{n}{list(s)}' for n, s in self.entries)})"


class ModelLayout(NamedTuple):
    """The input (x) and output (y) layouts of the network; unpacks as `x_layout, y_layout`."""

    x: FeatureLayout
    y: FeatureLayout

    def to_json(self) -> str:
        return json.dumps({"x": json.loads(self.x.to_json()), "y": json.loads(self.y.to_json())})

    @staticmethod
    def from_json(text) -> "ModelLayout":
        return FeatureLayout.from_json(text)


def make_layouts(num_joints: int) -> ModelLayout:
    """(x_layout, y_layout) for a skeleton of num_joints joints (ARCHITECTURE.md)."""
    traj, future, j = len(TRAJ_OFFSETS), len(FUTURE_OFFSETS), num_joints
    x_layout = FeatureLayout([
        ("traj_pos", (traj, 2)), ("traj_dir", (traj, 2)), ("traj_gait", (traj, len(GAIT_NAMES))),
        ("joint_pos", (j, 3)), ("joint_vel", (j, 3)),
    ])
    y_layout = FeatureLayout([
        ("root_vel", (2,)), ("root_yaw_rate", (1,)), ("dphase", (1,)), ("contacts", (len(CONTACT_NAMES),)),
        ("future_pos", (future, 2)), ("future_dir", (future, 2)),
        ("joint_pos", (j, 3)), ("joint_vel", (j, 3)), ("joint_rot", (j, 6)),
    ])
    return ModelLayout(x_layout, y_layout)


# ----------------------------------------------------------------------------------------------
# Small planar helpers (yaw about +Y; yaw 0 faces +Z, positive yaw turns +Z toward +X)


def rotate_xz(yaw, vectors):
    """Rotate (x, z) pairs [..., 2] by yaw [...]: local root frame -> world."""
    c, s = np.cos(yaw), np.sin(yaw)
    x, z = vectors[..., 0], vectors[..., 1]
    return np.stack([c * x + s * z, -s * x + c * z], axis=-1)


def inverse_rotate_xz(yaw, vectors):
    """Rotate (x, z) pairs [..., 2] by -yaw: world -> local root frame."""
    c, s = np.cos(yaw), np.sin(yaw)
    x, z = vectors[..., 0], vectors[..., 1]
    return np.stack([c * x - s * z, s * x + c * z], axis=-1)


def smoothstep(low, high, value):
    t = np.clip((np.asarray(value, float) - low) / (high - low), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def gait_from_speed(speed, run=None) -> np.ndarray:
    """Soft (stand, walk, run) labels [..., 3] from ground speed (m/s) and how much the motion is a run;
    shared by training and runtime.

    stand is 1 below STAND_FADE[0] m/s and 0 above STAND_FADE[1] (the slowest walks in the data, sad and
    elderly styles, move at 0.45-0.65 m/s); the moving rest is split between walk and run by `run`
    [...] in [0, 1]: a clip's content (run/dash clips 1) in training, the run button at run time.
    Without `run` (data without content labels) the run share fades in from 1.6 to 2.2 m/s.
    """
    speed = np.asarray(speed, float)
    stand = 1.0 - smoothstep(*STAND_FADE, speed)
    run_share = smoothstep(*RUN_FADE, speed) if run is None else np.clip(np.broadcast_to(run, speed.shape), 0.0, 1.0)
    return np.stack([stand, (1.0 - stand) * (1.0 - run_share), (1.0 - stand) * run_share], axis=-1)


# ----------------------------------------------------------------------------------------------
# Skeleton roles from names and hierarchy


def hips_joint(names, parents, global_positions=None) -> int:
    """The joint whose ground projection is the control root: 'Hips'/'Pelvis' by name, else the root
    joint, or its first child when the root joint itself never moves (as `joint_Root` here)."""
    for index, name in enumerate(names):
        lower = name.lower()
        if lower in ("hips", "hip", "pelvis") or (("hips" in lower or "pelvis" in lower) and joint_side(name) is None):
            return index
    root = int(np.flatnonzero(np.asarray(parents) < 0)[0])
    if global_positions is not None:
        children = [j for j, p in enumerate(parents) if p == root]
        if children and np.ptp(global_positions[:, root], axis=0).max() < 1e-6:
            return children[0]
    return root


def _topmost_side_ancestor(joint: int, parents, names, positions=None) -> int:
    """The highest joint of `joint`'s side chain (hip for a foot, shoulder/clavicle for a hand).

    With `positions` (one pose, [J, 3]) a side joint sitting exactly on its parent (CMU's LHipJoint on
    the hips) is not taken: both sides' lines would start at the same point and give no direction.
    """
    side = joint_side(names[joint])
    top = joint
    parent = parents[joint]
    while parent >= 0 and joint_side(names[parent]) == side:
        grandparent = parents[parent]
        if positions is not None and grandparent >= 0 and \
                np.linalg.norm(positions[parent] - positions[grandparent]) < 1e-6:
            break
        top, parent = parent, grandparent
    return top


def _hand_joints(names) -> dict:
    hands = {}
    for index, name in enumerate(names):
        side, lower = joint_side(name), name.lower()
        if side and ("hand" in lower or "wrist" in lower) and side not in hands:
            hands[side] = index
    return hands


def body_lines(names, parents, positions=None) -> dict:
    """Joint pairs (left, right) for the hip line and, when found, the shoulder line.

    `positions` ([J, 3], any one pose) lets the search skip side joints that coincide with their parent.
    """
    feet = foot_joints(names, parents)
    lines = {"hips": (_topmost_side_ancestor(feet["left_foot"], parents, names, positions),
                      _topmost_side_ancestor(feet["right_foot"], parents, names, positions))}
    hands = _hand_joints(names)
    if "left" in hands and "right" in hands:
        lines["shoulders"] = (_topmost_side_ancestor(hands["left"], parents, names, positions),
                              _topmost_side_ancestor(hands["right"], parents, names, positions))
    return lines


# ----------------------------------------------------------------------------------------------
# Root frames and trajectories


def facing_directions(global_positions, names, parents, dt: float, sigma_s: float = FACING_SIGMA_S) -> np.ndarray:
    """Unit facing (x, z) [F, 2]: the smoothed mean of the hip-line and shoulder-line normals."""
    normals = []
    for left, right in body_lines(names, parents, global_positions[0]).values():
        across = global_positions[:, left, [0, 2]] - global_positions[:, right, [0, 2]]
        # forward = across x up: with +X on the left, this is +Z.
        normal = np.stack([-across[:, 1], across[:, 0]], axis=-1)
        normals.append(normal / np.maximum(np.linalg.norm(normal, axis=-1, keepdims=True), 1e-9))
    facing = np.mean(normals, axis=0)
    if sigma_s > 0 and len(facing) > 1:
        facing = gaussian_filter1d(facing, sigma_s / dt, axis=0, mode="nearest")
    return facing / np.maximum(np.linalg.norm(facing, axis=-1, keepdims=True), 1e-9)


def body_frames(global_positions, names, parents) -> tuple[np.ndarray, np.ndarray]:
    """The character's own frame in every frame, unsmoothed: origin under the hips (y = 0), x along the
    hip line (right hip to left hip, on the ground), y up, z forward. Returns (origin [F, 3], yaw [F])
    with yaw as everywhere (0 faces +Z); `to_body_frame` expresses points in it. Used to compare poses
    (stance, realism), where the smoothed control root would hide the pelvis' own turn."""
    global_positions = np.asarray(global_positions, float)
    left, right = body_lines(names, parents, global_positions[0])["hips"]
    across = global_positions[:, left, [0, 2]] - global_positions[:, right, [0, 2]]
    origin = global_positions[:, hips_joint(names, parents, global_positions)].copy()
    origin[:, 1] = 0.0
    return origin, np.arctan2(-across[:, 1], across[:, 0])


def to_body_frame(points, origin, yaw) -> np.ndarray:
    """World points [F, K, 3] -> the frame of `body_frames` (or any origin [F, 3] and yaw [F])."""
    local = np.asarray(points, float) - np.asarray(origin, float)[:, None]
    local[..., [0, 2]] = inverse_rotate_xz(np.asarray(yaw, float)[:, None], local[..., [0, 2]])
    return local


def root_frames(motion, sigma_s: float = FACING_SIGMA_S):
    """Control root per frame: (root_pos [F, 3] hips on the ground y=0, root_rot [F, 4] yaw quaternion)."""
    global_positions = motion.global_positions()
    names, parents = motion.names, np.asarray(motion.parents)
    hips = hips_joint(names, parents, global_positions)
    root_pos = global_positions[:, hips].copy()
    root_pos[:, 1] = 0.0
    facing = facing_directions(global_positions, names, parents, motion.frame_time, sigma_s)
    return root_pos, quat.quat_from_yaw(np.arctan2(facing[:, 0], facing[:, 1]))


def extend_root_path(root_xz, root_yaw, pad: int, fit_frames: int = EXTRAPOLATION_FIT_FRAMES):
    """Extrapolate the root path `pad` frames past both ends: constant local velocity and yaw rate.

    root_xz [F, 2], root_yaw [F] -> ([F + 2 pad, 2], [F + 2 pad]).
    """
    frames = len(root_xz)
    if pad == 0:
        return root_xz, root_yaw
    if frames < 2:
        return np.repeat(root_xz, frames + 2 * pad, axis=0)[: frames + 2 * pad], np.full(frames + 2 * pad, root_yaw[0])
    n = max(1, min(fit_frames, frames - 1))

    def one_end(positions, yaws, direction):
        # positions/yaws ordered away from the end (index 0 = the end frame).
        steps_local = inverse_rotate_xz(yaws[:n], positions[:n] - positions[1 : n + 1])
        velocity = steps_local.mean(axis=0)
        yaw_rate = np.mean(wrap_angle(yaws[:n] - yaws[1 : n + 1]))
        k = np.arange(1, pad + 1)
        new_yaws = yaws[0] + yaw_rate * k
        new_positions = positions[0] + np.cumsum(rotate_xz(new_yaws, np.broadcast_to(velocity, (pad, 2))), axis=0)
        return new_positions, new_yaws

    unwrapped = np.unwrap(root_yaw)
    after_pos, after_yaw = one_end(root_xz[::-1], unwrapped[::-1], 1)
    before_pos, before_yaw = one_end(root_xz, unwrapped, -1)
    return (np.concatenate([before_pos[::-1], root_xz, after_pos]),
            np.concatenate([before_yaw[::-1], unwrapped, after_yaw]))


def trajectory_window(root_xz, root_yaw, offsets, dt: float):
    """Trajectory samples at frame offsets, each in the root frame of its own frame i.

    Returns positions [F, K, 2], facing directions [F, K, 2] and speeds [F, K] (m/s, smoothed);
    frames past the clip ends come from `extend_root_path`.
    """
    offsets = np.asarray(offsets)
    pad = int(np.abs(offsets).max())
    xz, yaw = extend_root_path(root_xz, root_yaw, pad)
    velocity = np.gradient(xz, dt, axis=0) if len(xz) > 1 else np.zeros_like(xz)
    speed = np.linalg.norm(gaussian_filter1d(velocity, SPEED_SIGMA_S / dt, axis=0, mode="nearest"), axis=-1)
    frames = np.arange(len(root_xz))
    index = frames[:, None] + pad + offsets[None, :]
    here = frames + pad
    positions = inverse_rotate_xz(yaw[here][:, None], xz[index] - xz[here][:, None])
    relative_yaw = yaw[index] - yaw[here][:, None]
    directions = np.stack([np.sin(relative_yaw), np.cos(relative_yaw)], axis=-1)
    return positions, directions, speed[index]


# ----------------------------------------------------------------------------------------------
# Per-clip labels and features


@dataclass
class ClipLabels:
    """Everything measured on one clip at its own frame rate (arrays over frames F)."""

    global_positions: np.ndarray  # [F, J, 3]
    global_rotations: np.ndarray  # [F, J, 4]
    root_xz: np.ndarray  # [F, 2]
    root_yaw: np.ndarray  # [F]
    root_speed: np.ndarray  # [F] m/s
    contact_joints: list  # 4 joint indices (CONTACT_NAMES order)
    contacts: np.ndarray  # [F, 4] bool
    phase: np.ndarray  # [F] in [0, 1)
    phase_method: str  # 'contacts' | 'root_height' | 'none'
    standing: np.ndarray  # [F] bool: both feet planted and the root nearly still
    hips: int
    dt: float


def clip_labels(motion) -> ClipLabels:
    """Root frames, contacts and phase of one clip (at the motion's own frame rate)."""
    dt = motion.frame_time
    global_rotations, global_positions = forward_kinematics(motion.rotations, motion.positions, motion.parents)
    names, parents = motion.names, np.asarray(motion.parents)
    hips = hips_joint(names, parents, global_positions)
    root_xz = global_positions[:, hips, [0, 2]]
    facing = facing_directions(global_positions, names, parents, dt)
    root_yaw = np.arctan2(facing[:, 0], facing[:, 1])
    root_speed = np.linalg.norm(np.gradient(root_xz, dt, axis=0), axis=-1) if len(root_xz) > 1 else np.zeros(len(root_xz))

    joints = contact_joint_order(foot_joints(names, parents))
    contacts = foot_contacts(global_positions[:, joints], dt)
    left, right = contacts[:, 0] | contacts[:, 1], contacts[:, 2] | contacts[:, 3]
    standing = standing_frames(right, left, root_speed)
    steps = min(len(touchdowns(right)), len(touchdowns(left)))
    moving = np.mean(root_speed) > STANDING_MAX_SPEED
    if steps >= 1 or not moving:
        phase, method = phase_from_contacts(right, left, standing=standing), "contacts" if steps >= 1 else "none"
    else:
        min_cycle = 0.5 if np.mean(root_speed) > 2.0 else 0.8
        phase, method = phase_from_root_height(global_positions[:, hips, 1], dt, min_cycle), "root_height"
    return ClipLabels(global_positions, global_rotations, root_xz, root_yaw, root_speed, joints, contacts,
                      phase, method, standing, hips, dt)


def arms_down_frames(labels: ClipLabels, names, parents, tolerance: float = ARMS_DOWN_TOLERANCE) -> np.ndarray:
    """[F] bool: every hand within `tolerance` m of its height in the clip's first frame."""
    hands = list(_hand_joints(names).values())
    if not hands:
        return np.ones(len(labels.phase), bool)
    heights = labels.global_positions[:, hands, 1]
    return np.all(np.abs(heights - heights[:1]) < tolerance, axis=-1)


@dataclass
class ClipFeatures:
    """Network samples of one clip at SIM_FPS: row r is frame r + 1 (frame 0 has no previous pose)."""

    x: np.ndarray  # [N, nx] float32
    y: np.ndarray  # [N, ny] float32
    phase: np.ndarray  # [N]
    is_standing_clip: bool
    arms_down: np.ndarray  # [N] bool (all True unless a standing clip)
    mean_speed: float
    cycle_speeds: np.ndarray  # per complete cycle: mean speed (m/s)
    stride_lengths: np.ndarray  # per complete cycle: stride length (m)
    labels: ClipLabels = field(repr=False)


def _resampled(motion):
    if abs(motion.frame_time * SIM_FPS - 1.0) < 1e-6:
        return motion
    from pfnn_core.kinematics import resample

    return resample(motion, SIM_FPS)


def clip_features(motion, layouts: ModelLayout | None = None, runs: bool | None = None) -> ClipFeatures:
    """X, Y and phase for every frame (but the first) of one clip, resampled to SIM_FPS first.

    `runs`: the clip is a run (True) or a walk (False) by its content label; None takes the gait from
    the speed alone (`gait_from_speed`)."""
    motion = _resampled(motion)
    dt = 1.0 / SIM_FPS
    layouts = layouts or make_layouts(motion.num_joints)
    labels = clip_labels(motion)
    frames = len(labels.phase)
    if frames < 2:
        raise ValueError(f"{motion.source or 'clip'}: too short ({frames} frames) to make samples")
    names, parents = motion.names, np.asarray(motion.parents)

    yaw = labels.root_yaw
    root_xyz = np.zeros((frames, 3))
    root_xyz[:, [0, 2]] = labels.root_xz
    root_rot = quat.quat_from_yaw(yaw)
    world_pos, world_rot = labels.global_positions.copy(), labels.global_rotations.copy()
    root_joint = int(np.flatnonzero(parents < 0)[0])
    if root_joint != labels.hips:
        world_pos[:, root_joint], world_rot[:, root_joint] = root_xyz, root_rot
    world_vel = np.gradient(world_pos, dt, axis=0)

    local_pos = world_pos - root_xyz[:, None]
    local_pos[..., [0, 2]] = inverse_rotate_xz(yaw[:, None], local_pos[..., [0, 2]])
    local_vel = world_vel.copy()
    local_vel[..., [0, 2]] = inverse_rotate_xz(yaw[:, None], world_vel[..., [0, 2]])
    local_rot6 = quat.quat_to_6d(quat.quat_inv_mul(root_rot[:, None], world_rot))

    traj_pos, traj_dir, traj_speed = trajectory_window(labels.root_xz, yaw, TRAJ_OFFSETS, dt)
    future_pos, future_dir, _ = trajectory_window(labels.root_xz, yaw, FUTURE_OFFSETS, dt)

    now, before = np.arange(1, frames), np.arange(0, frames - 1)
    root_vel = inverse_rotate_xz(yaw[before][:, None], (labels.root_xz[now] - labels.root_xz[before])[:, None])[:, 0] / dt
    x = layouts.x.pack({
        "traj_pos": traj_pos[now], "traj_dir": traj_dir[now], "traj_gait": gait_from_speed(traj_speed[now], None if runs is None else float(runs)),
        "joint_pos": local_pos[before], "joint_vel": local_vel[before],
    })
    y = layouts.y.pack({
        "root_vel": root_vel,
        "root_yaw_rate": wrap_angle(yaw[now] - yaw[before])[:, None] / dt,
        "dphase": ((labels.phase[now] - labels.phase[before]) % 1.0)[:, None],
        "contacts": labels.contacts[now].astype(np.float32),
        "future_pos": future_pos[now], "future_dir": future_dir[now],
        "joint_pos": local_pos[now], "joint_vel": local_vel[now], "joint_rot": local_rot6[now],
    })
    mean_speed = float(np.mean(labels.root_speed))
    standing_clip = mean_speed < STANDING_MAX_SPEED
    arms_down = arms_down_frames(labels, names, parents) if standing_clip else np.ones(frames, bool)
    if standing_clip:
        speeds, strides = np.zeros(0), np.zeros(0)
    else:
        speeds, strides = cycle_strides(labels.phase, root_xyz, dt)
    return ClipFeatures(x, y, labels.phase[now], standing_clip, arms_down[now] & arms_down[before],
                        mean_speed, speeds, strides, labels)


def calm_standing_samples(features: ClipFeatures, layouts: ModelLayout, replicas: int, rng):
    """Arms-down rows of a standing clip as calm standing samples (see the module docstring).

    Returns (x, y, phase, next_index_local) with each arms-down run replicated `replicas` times
    at phase offsets spread over [0, 1); next_index_local chains rows within a run, -1 at its end.
    """
    keep = np.flatnonzero(features.arms_down)
    if len(keep) == 0:
        return None
    x, y = features.x[keep].copy(), features.y[keep].copy()
    xv, yv = layouts.x.unpack(x), layouts.y.unpack(y)
    xv["traj_pos"][:] = 0.0
    xv["traj_dir"][:] = (0.0, 1.0)
    xv["traj_gait"][:] = (1.0, 0.0, 0.0)
    for name in ("root_vel", "root_yaw_rate", "dphase", "future_pos"):
        yv[name][:] = 0.0
    yv["future_dir"][:] = (0.0, 1.0)
    yv["contacts"][:] = 1.0
    run_start = np.r_[True, np.diff(keep) != 1]
    run_id = np.cumsum(run_start) - 1
    last_in_run = np.r_[run_id[1:] != run_id[:-1], True]
    xs, ys, phases, nexts = [], [], [], []
    for replica in range(replicas):
        offsets = (replica + rng.random(run_id.max() + 1)) / replicas
        phases.append(offsets[run_id])
        nexts.append(np.where(last_in_run, -1, np.arange(len(keep)) + 1 + replica * len(keep)))
        xs.append(with_past_drift(x, layouts, rng, run_id) if replica % 2 else x)
        ys.append(y)
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(phases), np.concatenate(nexts)


def with_past_drift(x, layouts: ModelLayout, rng, run_id) -> np.ndarray:
    """Calm standing inputs whose PAST trajectory drifts a little (up to STAND_DRIFT_SPEED and
    STAND_DRIFT_TURN, one draw per run of rows), the future still standing: the answer stays "stand
    still" (zero root motion). Without them a network driven by its own root motion feeds a small
    drift back through the past trajectory and walks off while it should stand."""
    x = x.copy()
    parts = layouts.x.unpack(x)
    runs = run_id.max() + 1
    speed = rng.uniform(0.0, STAND_DRIFT_SPEED, runs)[run_id]
    heading = rng.uniform(-np.pi, np.pi, runs)[run_id]
    turn = rng.uniform(-STAND_DRIFT_TURN, STAND_DRIFT_TURN, runs)[run_id]
    times = np.minimum(np.asarray(TRAJ_OFFSETS, float), 0.0) / SIM_FPS  # s, 0 for now and the future
    parts["traj_pos"][...] = (speed[:, None, None] * times[None, :, None]
                              * np.stack([np.sin(heading), np.cos(heading)], axis=-1)[:, None, :])
    parts["traj_dir"][...] = np.stack([np.sin(turn[:, None] * times), np.cos(turn[:, None] * times)], axis=-1)
    return x


# ----------------------------------------------------------------------------------------------
# The training set


@dataclass
class TrainingData:
    """Packed samples of a BVH set (ARCHITECTURE.md 'Training data'); arrays are float32/int64."""

    x: np.ndarray  # [N, nx] raw (unnormalised), packed with layout.x
    y: np.ndarray  # [N, ny] raw, packed with layout.y
    phase: np.ndarray  # [N] in [0, 1)
    clip: np.ndarray  # [N] clip id; mirrored copies share their source clip's id
    next_index: np.ndarray  # [N] row of the next sample of the same clip, -1 at the end
    layout: ModelLayout  # (x, y) layouts; `x_layout, y_layout = data.layout`
    clip_names: list  # clip id -> source file name
    skeleton: dict
    stride: dict
    gait_speeds: dict
    mirrored: np.ndarray = None  # [N] bool
    standing: np.ndarray = None  # [N] bool: calm standing samples
    summary: dict = field(default_factory=dict)  # counts, hash, build seconds
    style: np.ndarray = None  # [N] int64: index into `styles` of each row's style
    styles: list = field(default_factory=list)  # style names, in the order of the model's style input
    clip_labels: list = field(default_factory=list)  # clip id -> {"style": ..., "content": ...}
    style_stats: dict = field(default_factory=dict)  # style -> `style_statistics` (speeds, strides, minutes)
    floor_heights: list = field(default_factory=list)  # [4] planted height (m) of each contact joint
    stance: dict = field(default_factory=dict)  # `standing_stance`: the feet under the hips when standing


def bvh_paths(paths_or_folder) -> list[Path]:
    """Sorted BVH files (.bvh, .bvh.gz) from folders (searched recursively), files, or a list of them;
    ValueError when there are none."""
    items = [paths_or_folder] if isinstance(paths_or_folder, (str, os.PathLike)) else list(paths_or_folder)
    found = []
    for item in items:
        item = Path(item)
        if item.is_dir():
            found += bvh.find_files(item)
        elif item.exists():
            found.append(item)
        else:
            raise ValueError(f"{item}: no such file or folder")
    if not found:
        raise ValueError(f"{paths_or_folder}: no BVH files found")
    return sorted(set(found))


def skeleton_dict(motion) -> dict:
    """The skeleton as stored in checkpoints: enough to rebuild a Motion and to write BVH."""
    names, parents = list(motion.names), np.asarray(motion.parents)
    feet = foot_joints(names, parents)
    hips = hips_joint(names, parents)
    root_joint = int(np.flatnonzero(parents < 0)[0])
    return {
        "names": names,
        "parents": [int(p) for p in parents],
        "offsets": np.asarray(motion.offsets, float).tolist(),
        "channels": [list(c) for c in motion.channels],
        "scale": float(motion.scale),
        "end_sites": {str(int(j)): np.asarray(o, float).tolist() for j, o in getattr(motion, "end_sites", {}).items()},
        "frame_time": float(motion.frame_time),
        "hips": int(hips),
        "contact_joints": contact_joint_order(feet),
        "contact_names": list(CONTACT_NAMES),
        # When true, joint `root_joint`'s features are the control root itself (see module docstring).
        "root_joint_is_control_root": bool(root_joint != hips),
    }


def skeleton_difference(reference, motion) -> str | None:
    """Why two motions are not on one skeleton, or None when they are.

    Joint names and parents must be equal; bone offsets may differ by SKELETON_TOLERANCE_M. End Sites
    are not compared, nor the offsets of the root joint and of the joints down to the hips: those hold
    each take's start position (the bundled files' Hips OFFSET does)."""
    if list(motion.names) != list(reference.names) or not np.array_equal(motion.parents, reference.parents):
        differing = [f"{a} vs {b}" for a, b in zip(motion.names, reference.names) if a != b]
        detail = (f"joints {', '.join(differing[:3])}" if differing
                  else f"{motion.num_joints} joints vs {reference.num_joints}" if motion.num_joints != reference.num_joints
                  else "the joint hierarchy (parents)")
        return f"its joints differ ({detail})"
    parents = np.asarray(reference.parents)
    start = hips_joint(reference.names, parents)
    skip = [start] + list(ancestors(parents, start))
    gap = np.abs(np.asarray(motion.offsets, float) - np.asarray(reference.offsets, float)).max(axis=-1)
    gap[skip] = 0.0
    joint = int(np.argmax(gap))
    if gap[joint] > SKELETON_TOLERANCE_M:
        return (f"its bone offsets differ (joint {reference.names[joint]!r} by {100 * gap[joint]:.2f} cm, "
                f"tolerance {100 * SKELETON_TOLERANCE_M:.1f} cm)")
    return None


def ancestors(parents, joint: int):
    """The joints above `joint`, nearest first."""
    while parents[joint] >= 0:
        joint = int(parents[joint])
        yield joint


def _check_same_skeleton(reference, motion, path):
    why = skeleton_difference(reference, motion)
    if why:
        raise ValueError(f"{path}: {why} from {reference.source}; use one skeleton per training set")


def data_hash(paths, settings: dict) -> str:
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for path in paths:
        digest.update(Path(path).name.encode())
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]


def feature_config(mirror: bool, standing_replicas: int, seed: int, clip_labels=(), label_rule: str = "filename") -> dict:
    """Everything besides the files that decides the built samples; the dataset cache's key holds it,
    with the clip labels and the rule that gave them, and a digest of the code that makes the samples
    (so an edit can never be served stale samples)."""
    return {"mirror": bool(mirror), "standing_replicas": int(standing_replicas), "seed": int(seed),
            "fps": SIM_FPS, "version": FEATURE_VERSION, "code": _feature_code_digest(), "label_rule": str(label_rule),
            "labels": [[label.style, label.content] for label in clip_labels]}


def _feature_code_digest() -> str:
    import importlib

    digest = hashlib.sha256()
    for name in FEATURE_CODE_MODULES:
        digest.update(Path(importlib.import_module(f"pfnn_core.{name}").__file__).read_bytes())
    return digest.hexdigest()[:16]


@dataclass
class _StyleSamples:
    """What one style's clips measure (collected while building, summarised by `style_statistics`)."""

    seconds: dict = field(default_factory=dict)  # content -> seconds of mocap
    clip_speeds: dict = field(default_factory=dict)  # motion kind -> [mean clip speed]
    cycle_speeds: list = field(default_factory=list)
    cycle_strides: list = field(default_factory=list)
    walk_cycle_speeds: list = field(default_factory=list)


def motion_kind(label) -> str:
    """'stand', 'walk', 'run', 'back' (walking backwards), 'side' (side-steps) or 'other' from a clip
    label's content, 'unknown' when the content is unknown."""
    content = label.content
    if label.stands:
        return "stand"
    if label.runs is None:
        return "unknown"
    if label.runs:
        return "run"
    if "back" in content:
        return "back"
    if content.endswith(("-left", "-right")) and "turn" not in content:
        return "side"
    return "walk" if content.startswith("walk") else "other"


def style_statistics(samples: _StyleSamples) -> dict:
    """Per style: minutes (total and per content), clips, full-stick walk and run speeds (median mean clip
    speed of forward walks and runs), the slowest walk (10th percentile of forward-walk cycle speeds),
    backward-walk and side-step speeds, and the stride length as a function of speed."""
    def median(kind):
        values = samples.clip_speeds.get(kind) or []
        return float(np.median(values)) if values else None

    walk_cycles = np.asarray(samples.walk_cycle_speeds, float)
    return {
        "minutes": round(sum(samples.seconds.values()) / 60.0, 3),
        "content_minutes": {k: round(v / 60.0, 3) for k, v in sorted(samples.seconds.items())},
        "clips": int(sum(len(v) for v in samples.clip_speeds.values())),
        "walk": median("walk") or median("unknown"), "run": median("run"),
        "slowest_walk": float(np.percentile(walk_cycles, 10)) if len(walk_cycles) else None,
        "walk_back": median("back"), "side_step": median("side"),
        "stride": (stride_statistics(np.concatenate(samples.cycle_speeds), np.concatenate(samples.cycle_strides))
                   if samples.cycle_speeds and sum(map(len, samples.cycle_speeds)) else None),
    }


def floor_heights(heights_and_contacts) -> list:
    """The planted height (m) of each contact joint: the median of its height over its labelled contact
    frames, pooled over clips [(heights [F, 4], contacts [F, 4] bool)]."""
    heights = np.concatenate([h for h, _ in heights_and_contacts]) if heights_and_contacts else np.zeros((0, 4))
    contacts = np.concatenate([c for _, c in heights_and_contacts]) if heights_and_contacts else np.zeros((0, 4), bool)
    return [float(np.median(heights[contacts[:, k], k])) if contacts[:, k].any() else float("nan")
            for k in range(heights.shape[1])]


def standing_stance(labels: ClipLabels, names, parents) -> np.ndarray | None:
    """The contact joints [F', 4, 3] of a standing clip's arms-down frames in the body frame
    (`body_frames`: x along the hip line, z forward, origin under the hips), or None."""
    keep = arms_down_frames(labels, names, parents)
    if not keep.any():
        return None
    positions = labels.global_positions[keep]
    origin, yaw = body_frames(positions, names, parents)
    return to_body_frame(positions[:, labels.contact_joints], origin, yaw)


def build_training_data(paths_or_folder, mirror: bool = True, standing_replicas: int = STANDING_REPLICAS,
                        seed: int = 0, cache_dir=None, progress=None, workers: int = 1,
                        label_rule=None) -> TrainingData:
    """Load every BVH, label it (`pfnn_core.labels`), make samples (plus mirrored copies), calm standing
    samples, style, stride and floor statistics.

    Raises ValueError naming the file(s) for: no BVH, a clip the labelling rule cannot label, an
    unreadable file, mixed skeletons, a clip too short to window (every file is checked first; the
    message lists them all). Warnings about the data (`data_checks`: implausible speeds, reference-pose
    first frames, missing or fragmented contacts, duplicates, mixed frame rates) are logged and kept in
    `summary["findings"]`.
    cache_dir: when given, the result is stored there (`dataset_cache`) keyed by the files' contents and
    `feature_config` (settings, labels, feature code), and a later call with the same files, settings and
    labels reads it back memory-mapped.
    workers: processes building clips in parallel (0 = one per CPU core); the samples do not depend on it.
    progress: called as progress(files_done, files_total).
    """
    from pfnn_core import labels as labelling

    paths = bvh_paths(paths_or_folder)
    rule = label_rule or labelling.LabelRule()
    labels = labelling.label_clips(paths, rule)
    config = feature_config(mirror, standing_replicas, seed, labels, rule.describe())

    def build() -> TrainingData:
        return _build_training_data(paths, labels, config, progress, workers)

    if cache_dir is None:
        return build()
    from pfnn_core import dataset_cache

    return dataset_cache.load_or_build(paths, config, build, TrainingData, cache_dir)


@dataclass
class ClipTask:
    """What `clip_samples` needs to turn one file into samples (small and picklable, for a process pool)."""

    path: Path
    reference: object  # the first file's skeleton (a Motion with one frame): every file must match it
    label: object  # its labels.ClipLabel
    style_id: int  # index of its style in the set's sorted style names
    num_styles: int
    mirror: bool
    standing_replicas: int
    seed: int


@dataclass
class ClipStatistics:
    """What the unmirrored clip adds to its style's and the pooled statistics, the floor and the stance;
    measured by `clip_samples` (in a worker process, perhaps), combined by `_collect_statistics`."""

    kind: str  # motion_kind of its label
    content: str
    seconds: float
    standing: bool  # a standing clip (then only `stance` is used)
    mean_speed: float = 0.0
    cycle_speeds: np.ndarray = None
    stride_lengths: np.ndarray = None
    planted: tuple = None  # (heights [F, 4], contacts [F, 4] bool) of the contact joints
    stance: np.ndarray = None  # `standing_stance` of a standing clip, when it has arms-down frames


@dataclass
class ClipSamples:
    """One file's contribution to the training set."""

    path: str
    # per kept version (the clip, its mirror): TrainingData's per-row fields by name (next_index local to the
    # version, clip id added when the set is assembled); a per-row field added here is assembled as it is
    versions: list = field(default_factory=list)
    statistics: ClipStatistics | None = None  # of the unmirrored clip; None when the file is unusable
    duration_s: float = 0.0
    fps: float = 0.0
    content_digest: str = ""  # of the decompressed file, to find duplicates
    findings: list = field(default_factory=list)  # data_checks.Finding


def _error_finding(path, error: Exception) -> data_checks.Finding:
    message = str(error)
    for prefix in (f"{path}: ", f"{path.name}: "):
        message = message.removeprefix(prefix)
    return data_checks.Finding(str(path), "error", message)


def clip_samples(task: ClipTask) -> ClipSamples:
    """The samples one file gives (and its mirrored copy's), with its measurements and data-check findings.

    Depends on no other file (its random draws come from the seed and its file name), so files can be
    built in any order, in parallel worker processes, with the same result. Problems that make the file
    unusable are returned as error findings, not raised, so one run reports every bad file.
    """
    from pfnn_core.kinematics import mirror_keep_skeleton as mirror_motion

    path = Path(task.path)
    result = ClipSamples(path=str(path))
    try:
        result.content_digest = data_checks.content_digest(bvh.read_bytes(path))
        motion = bvh.load(str(path))
        result.fps, result.duration_s = motion.fps, motion.duration
        reordered = data_checks.reorder_joints(motion, task.reference.names)
        if reordered is not motion:
            result.findings.append(data_checks.reorder_finding(path, task.reference.source))
            motion = reordered
        _check_same_skeleton(task.reference, motion, path)
        reference_pose = data_checks.reference_pose_finding(path, motion.global_positions())
        if reference_pose is not None:
            result.findings.append(reference_pose)
            motion = dataclasses.replace(motion, rotations=motion.rotations[1:], positions=motion.positions[1:])
        too_short = data_checks.too_short_finding(path, motion.duration, MIN_CLIP_S)
        if too_short is not None:
            result.findings.append(too_short)
            return result
        layouts = make_layouts(motion.num_joints)
        rng = np.random.default_rng([task.seed, zlib.crc32(path.name.encode())])
        kind = motion_kind(task.label)
        runs = None if kind in ("unknown", "stand") else task.label.runs
        versions = [(motion, False)] + ([(mirror_motion(motion), True)] if task.mirror else [])
        for version, is_mirror in versions:
            features = clip_features(version, layouts, runs=runs)
            if not is_mirror:
                result.findings += _clip_findings(path, features, version)
                result.statistics = clip_statistics(features, kind, task.label.content, motion.duration, version)
            if features.is_standing_clip:
                samples = calm_standing_samples(features, layouts, task.standing_replicas, rng)
                if samples is None:
                    continue
                x, y, phase, next_local = samples
                standing = np.ones(len(x), bool)
                # Standing looks alike in every style: each replica is shown as a random style.
                replica = np.arange(len(x)) // max(len(x) // task.standing_replicas, 1)
                style = rng.integers(task.num_styles, size=task.standing_replicas + 1)[replica]
            else:
                x, y, phase = features.x, features.y, features.phase
                next_local = np.r_[np.arange(1, len(x)), -1]
                standing = np.zeros(len(x), bool)
                style = np.full(len(x), task.style_id)
            result.versions.append({"x": x, "y": y, "phase": phase, "next_index": next_local, "standing": standing,
                                    "mirrored": np.full(len(x), is_mirror), "style": style})
    except (ValueError, OSError) as error:
        result.findings.append(_error_finding(path, error))
        result.versions, result.statistics = [], None
    return result


def clip_statistics(features: ClipFeatures, kind: str, content: str, seconds: float, motion) -> ClipStatistics:
    """One unmirrored clip's measurements for the style, floor and stance statistics."""
    if features.is_standing_clip:
        return ClipStatistics(kind, content, seconds, standing=True,
                              stance=standing_stance(features.labels, motion.names, np.asarray(motion.parents)))
    labels = features.labels
    return ClipStatistics(kind, content, seconds, standing=False, mean_speed=features.mean_speed,
                          cycle_speeds=features.cycle_speeds, stride_lengths=features.stride_lengths,
                          planted=(labels.global_positions[:, labels.contact_joints, 1], labels.contacts))


def _clip_findings(path, features: ClipFeatures, motion) -> list:
    speed = data_checks.speed_finding(path, features.mean_speed, features.is_standing_clip)
    joint_names = [motion.names[j] for j in features.labels.contact_joints]
    contacts = data_checks.contact_findings(path, features.labels.contacts, SIM_FPS, joint_names)
    return ([speed] if speed else []) + contacts


def labels_at_sim_rate(motion) -> ClipLabels:
    """Contacts, phase and root of a clip resampled to SIM_FPS, as the dataset builder labels it."""
    return clip_labels(_resampled(motion))


def skeleton_only(motion):
    """The motion's first frame only: its skeleton, small enough to send to worker processes or keep per file."""
    return dataclasses.replace(motion, rotations=motion.rotations[:1], positions=motion.positions[:1])


def _worker_count(workers: int, tasks: int) -> int:
    """`workers`, or for 0 one per CPU core but no more than one per MIN_FILES_PER_WORKER files (starting a
    worker process costs seconds: a few files build faster in this process)."""
    if workers <= 0:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        workers = min(cores, tasks // MIN_FILES_PER_WORKER)
    return max(1, min(workers, tasks))


def _run_clip_tasks(tasks: list, workers: int, progress=None) -> list:
    """clip_samples over every task, in order; in `workers` processes when more than one."""
    workers = _worker_count(workers, len(tasks))
    if workers == 1:
        results = []
        for done, task in enumerate(tasks, 1):
            results.append(clip_samples(task))
            if progress:
                progress(done, len(tasks))
        return results
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # spawn, not fork: the caller may be a multi-threaded program (the viewer) or may have torch loaded.
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    results = [None] * len(tasks)
    try:
        futures = {pool.submit(clip_samples, task): index for index, task in enumerate(tasks)}
        for done, future in enumerate(as_completed(futures), 1):
            results[futures[future]] = future.result()
            if progress:
                progress(done, len(tasks))
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return results


def _build_training_data(paths: list, labels: list, config: dict, progress, workers: int) -> TrainingData:
    started = time.perf_counter()
    first = bvh.load(str(paths[0]))
    try:
        skeleton_dict(first)  # the foot, hip and hand roles every clip needs, found by name
    except ValueError as error:
        raise ValueError(f"{paths[0]}: {error}") from None
    reference, layouts = skeleton_only(first), make_layouts(first.num_joints)
    styles = sorted({label.style for label in labels})
    tasks = [ClipTask(path, reference, label, styles.index(label.style), len(styles), config["mirror"],
                      config["standing_replicas"], config["seed"]) for path, label in zip(paths, labels)]
    clips = _run_clip_tasks(tasks, workers, progress)

    findings = [finding for clip in clips for finding in clip.findings]
    findings += data_checks.duplicate_findings({clip.path: clip.content_digest for clip in clips if clip.content_digest})
    findings += data_checks.frame_rate_findings({clip.path: clip.fps for clip in clips if clip.fps > 0})
    for finding in findings:
        if finding.severity == "warning":
            log.warning("%s: %s", finding.file, finding.message)
    message = data_checks.errors_message(findings)
    if message:
        raise ValueError(message)

    columns: dict[str, list] = {}
    per_style = {style: _StyleSamples() for style in styles}
    pooled = _StyleSamples()
    planted, stances = [], []
    row_count = 0
    for clip_id, (clip, label) in enumerate(zip(clips, labels)):
        for rows in clip.versions:
            count = len(rows["x"])
            rows = {**rows, "clip": np.full(count, clip_id),
                    "next_index": np.where(rows["next_index"] >= 0, rows["next_index"] + row_count, -1)}
            for name, values in rows.items():
                columns.setdefault(name, []).append(values)
            row_count += count
        _collect_statistics(clip.statistics, per_style[label.style], pooled, planted, stances)
    if not columns:
        raise ValueError(f"{paths[0].parent}: no training samples (only standing clips without calm frames?)")
    per_row = {name: np.concatenate(parts) for name, parts in columns.items()}
    for name, dtype in (("x", np.float32), ("y", np.float32), ("phase", np.float32), ("clip", np.int64),
                        ("next_index", np.int64), ("style", np.int64)):
        per_row[name] = per_row[name].astype(dtype)

    pooled_stats = style_statistics(pooled)
    stride = pooled_stats["stride"] or {"speed": [1.2], "stride_length": [1.4], "linear": [1.4, 0.0], "num_cycles": 0}
    stance = np.concatenate(stances) if stances else None
    data = TrainingData(
        **per_row, layout=layouts, clip_names=[p.name for p in paths], skeleton=skeleton_dict(first),
        stride=stride, gait_speeds=measured_gait_speeds(pooled.clip_speeds), styles=styles,
        clip_labels=[{"style": label.style, "content": label.content} for label in labels],
        style_stats={style: style_statistics(samples) for style, samples in per_style.items()},
        floor_heights=floor_heights(planted),
        stance=({"positions": stance.mean(axis=0).tolist(), "spread": stance.std(axis=0).tolist(),
                 "frames": int(len(stance))} if stance is not None else {}),
    )
    data.summary = {"files": len(paths), "rows": int(len(data.x)), "standing_rows": int(data.standing.sum()),
                    "minutes": round(sum(clip.duration_s for clip in clips) / 60.0, 3),
                    "mirror": config["mirror"], "hash": data_hash(paths, config),
                    "findings": [finding.to_dict() for finding in findings],
                    "workers": _worker_count(workers, len(paths)),
                    "build_seconds": round(time.perf_counter() - started, 2)}
    return data


def _collect_statistics(clip: ClipStatistics, style: _StyleSamples, pooled: _StyleSamples, planted: list,
                        stances: list) -> None:
    """Add one (unmirrored) clip to its style's and the pooled statistics, the floor and the stance."""
    for samples in (style, pooled):
        samples.seconds[clip.content] = samples.seconds.get(clip.content, 0.0) + clip.seconds
    if clip.standing:
        if clip.stance is not None:
            stances.append(clip.stance)
        return
    planted.append(clip.planted)
    for samples in (style, pooled):
        samples.clip_speeds.setdefault(clip.kind, []).append(clip.mean_speed)
        if clip.kind in ("walk", "run", "unknown"):
            samples.cycle_speeds.append(clip.cycle_speeds)
            samples.cycle_strides.append(clip.stride_lengths)
        if clip.kind in ("walk", "unknown"):
            samples.walk_cycle_speeds.extend(clip.cycle_speeds.tolist())


def measured_gait_speeds(clip_speeds: dict) -> dict:
    """Full-stick walk and run speeds (m/s): the median mean speed of the forward-walk and run clips; a
    set without content labels ('unknown') is split into walks and runs by `gait_from_speed`."""
    walks, runs = list(clip_speeds.get("walk") or []), list(clip_speeds.get("run") or [])
    unknown = np.asarray(clip_speeds.get("unknown") or [], float)
    if len(unknown):
        is_run = np.argmax(gait_from_speed(unknown), axis=-1) == 2
        walks += unknown[~is_run].tolist()
        runs += unknown[is_run].tolist()
    walk_speed = float(np.median(walks)) if walks else 1.2
    return {"walk": walk_speed, "run": float(np.median(runs)) if runs else 2.5 * walk_speed,
            "measured": {"walk": len(walks), "run": len(runs)}}
# ----------------------------------------------------------------------------------------------
# Normalisation and split


def normalisation(data: TrainingData, rows=None, std_floor: float = 1e-3, chunk_rows: int = 1 << 16):
    """(x_mean, x_std, y_mean, y_std) float32 over the given rows (training rows only); std floored.

    Reads `chunk_rows` rows at a time (merging chunk statistics with Chan's formula), so a memory-mapped
    set is never copied whole into memory; up to one chunk the numbers equal numpy's mean and std.
    """
    rows = np.arange(len(data.x)) if rows is None else np.asarray(rows)
    x_mean, x_std = _mean_std(data.x, rows, chunk_rows)
    y_mean, y_std = _mean_std(data.y, rows, chunk_rows)
    return (x_mean.astype(np.float32), np.maximum(x_std, std_floor).astype(np.float32),
            y_mean.astype(np.float32), np.maximum(y_std, std_floor).astype(np.float32))


def _mean_std(array, rows: np.ndarray, chunk_rows: int):
    count, mean, squares = 0, None, None
    for start in range(0, len(rows), chunk_rows):
        block = np.asarray(array[rows[start:start + chunk_rows]]).astype(np.float64)
        block_mean = block.mean(0)
        block_squares = ((block - block_mean) ** 2).sum(0)
        if mean is None:
            count, mean, squares = len(block), block_mean, block_squares
            continue
        total = count + len(block)
        delta = block_mean - mean
        mean = mean + delta * (len(block) / total)
        squares = squares + block_squares + delta ** 2 * (count * len(block) / total)
        count = total
    return mean, np.sqrt(squares / count)


def split_by_clip(data: TrainingData, val_fraction: float = 0.1, seed: int = 0):
    """(train_rows, val_rows): whole clips (with their mirrored copies) go to one side only.

    With clip labels of several kinds, the split is drawn within each (style, content) group:
    round(val_fraction * n) clips of a group of n, always leaving two in training, so a content that
    has only a clip or two per style (side-steps, backward walks) is never held out altogether. When
    that holds nothing out (tiny sets), clips are drawn from all, at least one."""
    clip_ids = np.unique(data.clip)
    rng = np.random.default_rng(seed)
    groups = {}
    for clip_id in clip_ids:
        label = data.clip_labels[clip_id] if data.clip_labels else {}
        groups.setdefault((label.get("style"), label.get("content")), []).append(clip_id)
    val_clips = []
    if len(groups) > 1:
        for key in sorted(groups, key=str):
            members = rng.permutation(groups[key])
            val_clips += list(members[:max(0, min(int(round(val_fraction * len(members))), len(members) - 2))])
    if not val_clips:  # one kind of clip, or groups too small to stratify: draw from all clips
        shuffled = rng.permutation(clip_ids)
        val_count = int(round(val_fraction * len(clip_ids)))
        if val_fraction > 0 and len(clip_ids) > 1:
            val_count = min(max(val_count, 1), len(clip_ids) - 1)
        val_clips = shuffled[:val_count]
    is_val = np.isin(data.clip, val_clips)
    return np.flatnonzero(~is_val), np.flatnonzero(is_val)
