"""The character runtime: one simulation tick of B characters driven by a PFNN.

Owns `CharacterState` (every array has a leading batch dimension B), `step(state, command, settings,
dt, network)`, the pieces of the tick as small pure functions (command springs, trajectory blend,
drift correction, phase advance, stand amount, forward kinematics from global rotations,
`local_pose` for BVH output), `Network` (the model on its device plus what the tick needs from the
checkpoint) and `Character` (model + settings + state: `tick`, `reset`, `swap_model`).

The tick follows DESIGN.md section 5. Order inside one tick (the root for this frame was placed at
the end of the previous tick, as in PFNN's demo):
  1. command springs (velocity and facing) -> commanded future trajectory;
  2. blend with the network's previous prediction, w(t) = 1 - (1 - t)^bias;
  3. pack x with the FeatureLayout, normalise, run the network on its device, unnormalise;
  4. pose from the root-frame prediction to the world, optional smoothing of the fed-back pose;
  5. foot locking with two-bone IK (what is displayed);
  6. root motion for the next frame: predicted velocity and yaw rate, minus the moving-average error
     to the command (drift correction), blended toward the command, scaled by the stand amount;
  7. phase advance (speed-based by default), trajectory history, timings.
"""
from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from pfnn_core import contacts as contacts_module
from pfnn_core import features
from pfnn_core.controller import Command, stand_command
from pfnn_core.ik import FootLocks, leg_chains, locked_positions, reach_foot_goals, update_foot_locks
from pfnn_core.kinematics import local_rotations
from pfnn_core.phase import stride_length_at
from pfnn_core.quat import (cross3, quat_between, quat_from_6d, quat_from_matrix, quat_from_yaw,
                            quat_mul, quat_mul_vec, quat_normalize, quat_to_matrix, stack_last, vector_length,
                            wrap_angle)
from pfnn_core.settings import RuntimeSettings

# u solving exp(-u) (1 + u) = 1/2: with decay rate u / halflife a critically damped spring starting
# at rest closes exactly half of a step's gap after one halflife.
HALFLIFE_TO_RATE = 1.6783469900166612
HISTORY_LENGTH = 61  # past trajectory samples kept: 1 s at 60 Hz, newest last
DRIFT_CAPACITY = 600  # most drift-correction ticks remembered (the settings' maximum window)
# Input features whose training std sat at the normalisation floor (1e-3) never varied in the data
# (e.g. the hips' x, z in their own root frame); the network is hypersensitive to them (z = error / 1e-3),
# so they are held at their training value instead of being fed back.
CONSTANT_FEATURE_STD = 1.001e-3
MIN_STRIDE_LENGTH = 0.05  # m; guards the speed / stride division
FACING_MIN_SPEED = 1e-3  # m/s; below this a command has no direction to face
SETTLE_TICKS = 60  # standing ticks run on reset so the first shown pose is the network's own, not the mean pose


# ---------------------------------------------------------------------------------------------
# Springs [MM]: critically damped, halflife in seconds, dt explicit (dt may be an array to predict)


def spring_rate(halflife) -> np.ndarray:
    return HALFLIFE_TO_RATE / np.maximum(np.asarray(halflife, dtype=float), 1e-6)


def spring_velocity_update(position, velocity, acceleration, goal_velocity, halflife, dt):
    """Holden's `spring_character_update`: the velocity approaches `goal_velocity` critically damped;
    returns (position, velocity, acceleration) after `dt`."""
    rate = spring_rate(halflife)
    j0 = velocity - goal_velocity
    j1 = acceleration + j0 * rate
    decay = np.exp(-rate * dt)
    position = (decay * ((-j1) / (rate * rate) + (-j0 - j1 * dt) / rate)
                + j1 / (rate * rate) + j0 / rate + goal_velocity * dt + position)
    velocity = decay * (j0 + j1 * dt) + goal_velocity
    acceleration = decay * (acceleration - j1 * rate * dt)
    return position, velocity, acceleration


def spring_angle_update(angle, angular_velocity, goal_angle, halflife, dt):
    """A yaw angle approaching `goal_angle` (the short way round), critically damped, goal velocity 0;
    returns (angle, angular_velocity) after `dt`. The angle is not wrapped (predictions stay smooth)."""
    rate = spring_rate(halflife)
    j0 = wrap_angle(angle - goal_angle)
    j1 = angular_velocity + j0 * rate
    decay = np.exp(-rate * dt)
    goal_near = angle - j0
    return goal_near + decay * (j0 + j1 * dt), decay * (angular_velocity - j1 * rate * dt)


def trajectory_blend_weights(count: int, bias) -> np.ndarray:
    """w(t) = 1 - (1 - t)^bias at t = k / count, k = 1..count: the weight of the COMMAND against the
    network's own predicted trajectory [PFNN]. `bias` [...] -> weights [..., count]."""
    t = np.arange(1, count + 1) / count
    return 1.0 - (1.0 - t) ** np.asarray(bias, dtype=float)[..., None]


# ---------------------------------------------------------------------------------------------
# Drift correction: remove the moving-average ERROR to the command, never the motion itself


def push_drift_error(history: np.ndarray, count: int, error: np.ndarray) -> tuple[np.ndarray, int]:
    """Append one tick's error [B, C] to the ring buffer history [B, N, C]; returns (history, count)."""
    history = history.copy()
    history[:, count % history.shape[1]] = error
    return history, count + 1


def drift_mean(history: np.ndarray, count: int, window: int) -> np.ndarray:
    """Mean of the last `window` errors pushed (fewer at the start); zero when the window is 0."""
    n = min(int(window), int(count), history.shape[1])
    if n <= 0:
        return np.zeros(history.shape[:1] + history.shape[2:])
    rows = (count - 1 - np.arange(n)) % history.shape[1]
    return history[:, rows].mean(axis=1)


def correct_drift(predicted: np.ndarray, mean_error: np.ndarray) -> np.ndarray:
    """The predicted root motion minus the estimated systematic error (predicted - commanded)."""
    return predicted - mean_error


# ---------------------------------------------------------------------------------------------
# Phase and stand amount


def stand_amount(command_speed, stand_speed: float) -> np.ndarray:
    """1 when the commanded speed is zero, falling linearly to 0 at `stand_speed` (m/s); 0 everywhere
    (no stand-amount scaling at all) when `stand_speed` is 0."""
    command_speed = np.asarray(command_speed, dtype=float)
    if stand_speed <= 0.0:
        return np.zeros_like(command_speed)
    return np.clip(1.0 - command_speed / stand_speed, 0.0, 1.0)


def move_amount(stand) -> np.ndarray:
    """PFNN's scale of root motion and phase advance: (1 - stand)^0.25."""
    return np.power(np.clip(1.0 - np.asarray(stand, dtype=float), 0.0, 1.0), 0.25)


def advance_phase_by_speed(phase, speed, stride: dict, dt: float, stride_speed=None) -> np.ndarray:
    """dphase = speed / stride_length(stride_speed) * dt (one cycle = two steps); stops at zero speed.
    `stride_speed` (default `speed`): the speed whose stride the network is stepping with (see
    `speed_warp`: a slow walk is the network's slowest walk played slower, strides unchanged)."""
    speed = np.asarray(speed, dtype=float)
    stride_speed = speed if stride_speed is None else np.asarray(stride_speed, dtype=float)
    length = np.maximum(stride_length_at(stride, stride_speed), MIN_STRIDE_LENGTH)
    return (np.asarray(phase) + speed / length * dt) % 1.0


def speed_warp(command_speed, slow_walk_speed: float, max_warp: float) -> np.ndarray:
    """Factor k >= 1 [B] by which the network's view of the ground motion is scaled up: a commanded
    speed below `slow_walk_speed` is shown to the network as that walk (trajectory offsets and gait
    times k, its root and trajectory outputs divided by k) and the phase runs at the real speed, so
    the feet plant with the network's own strides. The data has no slow walks: asked for one, the
    network blends a standing pose with a walk and shuffles with its feet always in contact, so a
    slow walk slides. k is at most `max_warp` (speeds near standing stay a stand); 1 when off."""
    command_speed = np.asarray(command_speed, dtype=float)
    if slow_walk_speed <= 0.0:
        return np.ones_like(command_speed)
    return np.clip(slow_walk_speed / np.maximum(command_speed, 1e-9), 1.0, max(float(max_warp), 1.0))


def advance_phase_by_network(phase, dphase_per_frame, scale, dt: float, sim_fps: float) -> np.ndarray:
    """The network's own dphase (cycles per 1/sim_fps frame), rescaled to dt and by `scale`."""
    step = np.clip(np.asarray(dphase_per_frame, dtype=float), 0.0, 0.5) * dt * sim_fps
    return (np.asarray(phase) + step * scale) % 1.0


# ---------------------------------------------------------------------------------------------
# Skeleton


def anchor_joint(parents) -> int:
    """The joint the network's root-frame position places in the world (the hips): the first joint
    from the root down with more than one child. A 'joint_Root'-style dummy above it is carried."""
    parents = np.asarray(parents)
    joint = int(np.flatnonzero(parents < 0)[0])
    while True:
        children = np.flatnonzero(parents == joint)
        if len(children) != 1:
            return joint
        joint = int(children[0])


def joints_above(parents, joint: int) -> list[int]:
    """Ancestors of `joint`, nearest first."""
    above = []
    while parents[joint] >= 0:
        joint = int(parents[joint])
        above.append(joint)
    return above


def chain_matrix(parents, anchor: int) -> np.ndarray:
    """[J, J] signed sums that place every joint from the anchor: position_j = anchor_pos +
    sum_k M[j, k] * bone_k, where bone_k = global_rot[parent(k)] * offset[k] (zero for roots)."""
    parents = np.asarray(parents)
    count = len(parents)
    on_path = np.zeros((count, count))
    for joint in range(count):
        for k in [joint] + joints_above(parents, joint):
            if parents[k] >= 0:
                on_path[joint, k] = 1.0
    return on_path - on_path[anchor]


def forward_kinematics_global(global_rot, anchor_pos, offsets, parents, anchor: int,
                              above_anchor_rot=None, chain: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """World joint positions from GLOBAL rotations [..., J, 4] and the anchor's position [..., 3].

    Joints above the anchor (a 'joint_Root' over the hips) take `above_anchor_rot` [..., 4] (default:
    their given rotation) and hang by their offsets above it, so the pose is fully described by the
    root joint's translation plus local rotations (what a BVH writes). `chain`: `chain_matrix(parents,
    anchor)`, precomputed by callers that run every tick. Returns (positions [..., J, 3], rotations).
    """
    parents = np.asarray(parents)
    rotations = np.array(global_rot, dtype=float, copy=True)
    if above_anchor_rot is not None:
        for joint in joints_above(parents, anchor):
            rotations[..., joint, :] = above_anchor_rot
    chain = chain_matrix(parents, anchor) if chain is None else chain
    parent_rot = rotations[..., np.maximum(parents, 0), :]
    bones = quat_mul_vec(parent_rot, np.asarray(offsets, dtype=float))
    positions = np.asarray(anchor_pos, dtype=float)[..., None, :] + chain @ bones
    return positions, rotations


@dataclass(frozen=True)
class RotationFit:
    """Which joints' rotations the predicted positions determine (precomputed once per skeleton)."""

    single_joints: np.ndarray  # [S] joints with exactly one child: swing toward it
    single_children: np.ndarray  # [S]
    multi_joints: np.ndarray  # [M] joints with several children: best rotation for all of them
    multi_children: np.ndarray  # [M, C] children, padded by repeating the first one
    multi_mask: np.ndarray  # [M, C] 1 for real children, 0 for padding


def rotation_fit(parents, anchor: int) -> RotationFit:
    """Every joint with children, except the joints above the anchor (they carry the root's yaw)."""
    parents = np.asarray(parents)
    skip = set(joints_above(parents, anchor))
    children = {j: [int(c) for c in np.flatnonzero(parents == j)] for j in range(len(parents)) if j not in skip}
    single = [(j, c[0]) for j, c in children.items() if len(c) == 1]
    multi = [(j, c) for j, c in children.items() if len(c) > 1]
    width = max([len(c) for _, c in multi], default=1)
    return RotationFit(
        single_joints=np.array([j for j, _ in single], dtype=int), single_children=np.array([c for _, c in single], dtype=int),
        multi_joints=np.array([j for j, _ in multi], dtype=int),
        multi_children=np.array([c + [c[0]] * (width - len(c)) for _, c in multi], dtype=int).reshape(len(multi), width),
        multi_mask=np.array([[1.0] * len(c) + [0.0] * (width - len(c)) for _, c in multi]).reshape(len(multi), width))


def matrices_from_6d(r6) -> np.ndarray:
    """6D rotations [..., 6] (first two matrix columns) -> rotation matrices [..., 3, 3] (Gram-Schmidt)."""
    c0 = r6[..., :3] / np.maximum(vector_length(r6[..., :3], keepdims=True), 1e-12)
    c1 = r6[..., 3:] - np.sum(c0 * r6[..., 3:], axis=-1, keepdims=True) * c0
    c1 = c1 / np.maximum(vector_length(c1, keepdims=True), 1e-12)
    return stack_last(c0, c1, cross3(c0, c1))


def yaw_matrices(yaw) -> np.ndarray:
    """Rotation matrices [..., 3, 3] about +Y (yaw 0 faces +Z, positive turns +Z toward +X)."""
    c, s = np.cos(yaw), np.sin(yaw)
    matrices = np.zeros(np.shape(c) + (3, 3))
    matrices[..., 0, 0], matrices[..., 0, 2] = c, s
    matrices[..., 1, 1] = 1.0
    matrices[..., 2, 0], matrices[..., 2, 2] = -s, c
    return matrices


def matrices_between(u, v) -> np.ndarray:
    """Shortest rotation matrices [..., 3, 3] taking directions u to v [..., 3]."""
    return quat_to_matrix(quat_between(u, v))


def fit_rotations_to_positions(global_mat, positions, offsets, fit: RotationFit) -> np.ndarray:
    """Global rotation matrices [..., J, 3, 3] turned so every bone points where the predicted joint
    positions [..., J, 3] put its child: a one-child joint gets the shortest swing (its twist stays the
    network's), a several-children joint the best rotation for all of its bones (Kabsch), so the
    displayed skeleton follows the positions and rotations that disagree with them cannot pop it."""
    offsets = np.asarray(offsets, dtype=float)
    matrices = np.array(global_mat, dtype=float, copy=True)
    if len(fit.single_joints):
        joints, children = fit.single_joints, fit.single_children
        bone_now = np.einsum("...ij,...j->...i", matrices[..., joints, :, :], offsets[children])
        bone_goal = positions[..., children, :] - positions[..., joints, :]
        matrices[..., joints, :, :] = matrices_between(bone_now, bone_goal) @ matrices[..., joints, :, :]
    if len(fit.multi_joints):
        joints, children = fit.multi_joints, fit.multi_children
        goal = (positions[..., children, :] - positions[..., joints, None, :]) * fit.multi_mask[..., None]
        rest = offsets[children] * fit.multi_mask[..., None]
        u, _, vt = np.linalg.svd(np.einsum("...mki,mkj->...mij", goal, rest))
        u[..., :, 2] *= np.sign(np.linalg.det(u @ vt))[..., None]
        matrices[..., joints, :, :] = u @ vt
    return matrices


# ---------------------------------------------------------------------------------------------
# State


@dataclass
class CharacterState:
    root_pos: np.ndarray  # [B, 3] world, y = 0; the root of the frame being shown
    root_rot: np.ndarray  # [B, 4] yaw about +Y
    phase: np.ndarray  # [B] in [0, 1)
    joint_pos: np.ndarray  # [B, J, 3] network pose (root frame of `pose_root_*`), fed back next tick
    joint_vel: np.ndarray  # [B, J, 3] m/s, same frame
    world_joint_pos: np.ndarray  # [B, J, 3] displayed, after foot locking
    world_joint_rot: np.ndarray  # [B, J, 4] displayed global rotations
    contacts: np.ndarray  # [B, 4] network contact outputs 0..1 (Foot_L, Toes_L, Foot_R, Toes_R)
    lock_target: np.ndarray  # [B, 4, 3] world pin of each contact joint
    lock_weight: np.ndarray  # [B, 4] 0 = free .. 1 = pinned
    traj_past_pos: np.ndarray  # [B, 61, 3] world, last 1 s, newest last
    traj_past_dir: np.ndarray  # [B, 61, 3] world unit facing
    traj_past_gait: np.ndarray  # [B, 61, 3] stand/walk/run
    traj_future_pos: np.ndarray  # [B, 6, 3] world, blended trajectory the network was conditioned on
    traj_future_dir: np.ndarray  # [B, 6, 3]
    traj_command_pos: np.ndarray  # [B, 6, 3] world, the pure spring prediction of the command
    traj_command_dir: np.ndarray  # [B, 6, 3]
    timings: dict = field(default_factory=lambda: {"tick_ms": 0.0, "infer_ms": 0.0})
    # --- beyond the viewer's contract: what the tick carries from one call to the next
    lock_active: np.ndarray | None = None  # [B, 4] bool: pin held (fading in) vs released
    pose_root_pos: np.ndarray | None = None  # [B, 3] root frame `joint_pos` is expressed in
    pose_root_rot: np.ndarray | None = None  # [B, 4]
    net_future_pos: np.ndarray | None = None  # [B, 6, 3] world, the network's own last prediction
    net_future_dir: np.ndarray | None = None  # [B, 6, 3]
    spring_vel: np.ndarray | None = None  # [B, 2] commanded velocity (x, z) after the spring, m/s
    spring_acc: np.ndarray | None = None  # [B, 2]
    spring_yaw: np.ndarray | None = None  # [B] commanded facing after the spring, rad
    spring_yaw_vel: np.ndarray | None = None  # [B] rad/s
    drift_history: np.ndarray | None = None  # [B, 600, 3] ring: (vx, vz, yaw rate) error to the command
    drift_count: int = 0
    root_vel: np.ndarray | None = None  # [B, 2] world root velocity applied this tick, m/s
    root_yaw_rate: np.ndarray | None = None  # [B] rad/s applied this tick
    stand: np.ndarray | None = None  # [B] stand amount 0..1
    warp: np.ndarray | None = None  # [B] speed warp of this tick's network view (`speed_warp`), >= 1
    ticks: int = 0

    @property
    def batch_size(self) -> int:
        return int(self.root_pos.shape[0])

    @property
    def root_yaw(self) -> np.ndarray:
        return yaw_of(self.root_rot)


def facing_from_yaw(yaw) -> np.ndarray:
    yaw = np.asarray(yaw, dtype=float)
    return stack_last(np.sin(yaw), 0.0, np.cos(yaw))


def yaw_rotate(yaw, vectors) -> np.ndarray:
    """Rotate 3D vectors [B, ..., 3] about +Y by yaw [B] (cheaper than a quaternion for yaw-only frames)."""
    yaw = np.asarray(yaw, dtype=float).reshape((-1,) + (1,) * (vectors.ndim - 2))
    c, s = np.cos(yaw), np.sin(yaw)
    x, z = vectors[..., 0], vectors[..., 2]
    return stack_last(c * x + s * z, vectors[..., 1], c * z - s * x)


def yaw_of(root_rot) -> np.ndarray:
    """Yaw of yaw-only quaternions (the root rotations), in (-pi, pi]."""
    return wrap_angle(2.0 * np.arctan2(root_rot[..., 2], root_rot[..., 0]))


def to_root_frame(points, root_pos, root_yaw) -> np.ndarray:
    """World points [B, N, 3] -> root frame (x, z) [B, N, 2]."""
    return features.inverse_rotate_xz(root_yaw[:, None], (points - root_pos[:, None])[..., [0, 2]])


def dirs_to_root_frame(dirs, root_yaw) -> np.ndarray:
    return features.inverse_rotate_xz(root_yaw[:, None], dirs[..., [0, 2]])


def from_root_frame_xz(points_xz, root_pos, root_yaw) -> np.ndarray:
    """Root-frame (x, z) [B, N, 2] -> world points [B, N, 3] on the ground."""
    return _xz_to_xyz(features.rotate_xz(root_yaw[:, None], points_xz)) + root_pos[:, None]


def _xz_to_xyz(xz: np.ndarray) -> np.ndarray:
    return stack_last(xz[..., 0], 0.0, xz[..., 1])


# ---------------------------------------------------------------------------------------------
# Network: the model on its device plus the checkpoint facts the tick needs


def resolve_device(device: str = "auto") -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


class Network:
    """Normalise -> PFNN -> unnormalise for a batch, on the device that holds the model.

    path 'torch' runs the torch model (inputs and outputs cross to the device once per tick);
    'numpy' runs `NumpyPFNN` (same weights, CPU only; fastest at batch 1 on small CPUs);
    'auto' picks numpy on CPU and torch on CUDA.
    """

    def __init__(self, checkpoint, device: str = "auto", path: str = "auto"):
        self.checkpoint = checkpoint
        self.device = resolve_device(device)
        if path == "auto":
            path = "torch" if self.device.type == "cuda" else "numpy"
        if path == "numpy" and self.device.type != "cpu":
            raise ValueError("the numpy path runs on the CPU only")
        self.path = path
        self.model = checkpoint.model.to(self.device).eval()
        self.numpy_model = self.model.to_numpy_runner() if path == "numpy" else None
        norm = {name: value.detach().to(self.device, torch.float32) for name, value in checkpoint.norm.items()}
        self.norm = norm
        self.norm_np = {name: value.cpu().numpy() for name, value in norm.items()}
        self.constant_inputs = self.norm_np["x_std"] <= CONSTANT_FEATURE_STD
        self.x_layout, self.y_layout = checkpoint.layout
        skeleton = checkpoint.meta["skeleton"]
        self.skeleton = skeleton
        self.names = list(skeleton["names"])
        self.parents = np.asarray(skeleton["parents"], dtype=int)
        self.offsets = np.asarray(skeleton["offsets"], dtype=float)
        self.anchor = int(skeleton.get("hips", anchor_joint(self.parents)))
        self.contact_joints = list(skeleton.get("contact_joints") or contacts_module.contact_joint_order(
            contacts_module.foot_joints(self.names, self.parents)))
        self.legs = leg_chains(self.names, self.parents)
        self.chain = chain_matrix(self.parents, self.anchor)
        self.rotation_fit = rotation_fit(self.parents, self.anchor)
        self.floor_heights: np.ndarray | None = None  # [4] lowest height of each contact joint; set on settling
        self.style_names = list((checkpoint.meta.get("styles") or {}).get("names") or [])
        self.num_styles = int(getattr(checkpoint.config, "num_styles", 0) or 0)
        # The style used when a caller gives none: 'normal' when the model knows it, else the first.
        self.default_style = np.zeros(self.num_styles)
        if self.num_styles:
            self.default_style[self.style_names.index("normal") if "normal" in self.style_names else 0] = 1.0
        self.stride = checkpoint.meta.get("stride") or {"speed": [1.0], "stride_length": [1.2]}
        self.sim_fps = float(features.SIM_FPS)
        offsets = np.asarray(features.TRAJ_OFFSETS)
        self.past_offsets = offsets[offsets < 0]  # frames, oldest first
        self.future_offsets = np.asarray(features.FUTURE_OFFSETS)  # frames the network predicts
        # Per-tick constants, worked out once: the future samples' times, which history and future rows
        # the input trajectory reads, the legs' joints as index arrays and the foot (ankle-toe) lengths.
        self.future_times = self.future_offsets / self.sim_fps  # s
        self.past_rows = HISTORY_LENGTH - 1 + self.past_offsets
        self.future_rows = np.searchsorted(self.future_offsets, offsets[offsets > 0])
        self.leg_joints = tuple(np.array(joints, dtype=int) for joints in zip(*self.legs))  # hips, knees, ankles, toes
        self.foot_lengths = vector_length(self.offsets[self.leg_joints[3]])

    @property
    def num_joints(self) -> int:
        return len(self.names)

    def set_beta(self, beta: float) -> None:
        self.model.beta = float(beta)
        if self.numpy_model is not None:
            self.numpy_model.beta = float(beta)

    @torch.no_grad()
    def predict(self, x: np.ndarray, phase: np.ndarray, style: np.ndarray | None = None) -> np.ndarray:
        """Raw (unnormalised) x [B, nx], phase [B] and style weights [B, S] (style models) -> raw y [B, ny]
        as float64 numpy."""
        x = np.where(self.constant_inputs, self.norm_np["x_mean"], x)
        if style is None and self.num_styles:
            style = np.broadcast_to(self.default_style, (len(x), self.num_styles))
        if self.path == "numpy":
            n = self.norm_np
            y = self.numpy_model((x - n["x_mean"]) / n["x_std"], phase, style)
            return (y * n["y_std"] + n["y_mean"]).astype(np.float64)
        packed = np.concatenate([x, np.asarray(phase)[:, None]], axis=1).astype(np.float32)
        inputs = torch.from_numpy(packed).to(self.device, non_blocking=True)
        x_t, phase_t = inputs[:, :-1], inputs[:, -1]
        style_t = None if style is None else torch.as_tensor(np.asarray(style, np.float32), device=self.device)
        y = self.model((x_t - self.norm["x_mean"]) / self.norm["x_std"], phase_t, style_t)
        return (y * self.norm["y_std"] + self.norm["y_mean"]).cpu().numpy().astype(np.float64)

    def mean_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """The training set's mean input pose (root frame): a neutral first pose."""
        parts = self.x_layout.unpack(self.norm_np["x_mean"].astype(float))
        return np.asarray(parts["joint_pos"], dtype=float), np.zeros_like(np.asarray(parts["joint_pos"], dtype=float))


# ---------------------------------------------------------------------------------------------
# Commands, initial state


def command_arrays(command: Command | Sequence[Command], batch: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One command for all characters or one per character -> (desired velocity [B, 2],
    strafe facing [B, 2] (zero where not strafing), strafing [B] bool)."""
    commands = [command] * batch if isinstance(command, Command) else list(command)
    if len(commands) != batch:
        raise ValueError(f"got {len(commands)} commands for {batch} characters")
    desired = np.array([np.asarray(c.desired_velocity, dtype=float).reshape(2) for c in commands])
    strafe = np.array([c.facing is not None for c in commands])
    facing = np.array([np.zeros(2) if c.facing is None else np.asarray(c.facing, dtype=float).reshape(2)
                       for c in commands])
    return desired, facing, strafe


def _batched(values, batch: int, width: int, default: float = 0.0) -> np.ndarray:
    if values is None:
        return np.full((batch, width), default)
    return np.broadcast_to(np.asarray(values, dtype=float).reshape(-1, width), (batch, width)).copy()


def initial_state(network: Network, batch: int = 1, positions=None, yaws=None) -> CharacterState:
    """B characters standing in the training set's mean pose at `positions` ([B, 2] x, z or [B, 3])
    facing `yaws` ([B] rad, 0 = +Z)."""
    if positions is not None and np.asarray(positions).shape[-1] == 3:
        positions = np.asarray(positions, dtype=float)[..., [0, 2]]
    ground = _batched(positions, batch, 2)
    root_pos = np.stack([ground[:, 0], np.zeros(batch), ground[:, 1]], axis=-1)
    yaw = _batched(yaws, batch, 1)[:, 0]
    root_rot = quat_from_yaw(yaw)
    mean_pos, mean_vel = network.mean_pose()
    joint_pos = np.broadcast_to(mean_pos, (batch,) + mean_pos.shape).copy()
    joint_vel = np.broadcast_to(mean_vel, (batch,) + mean_vel.shape).copy()
    mean_rot6 = network.y_layout.unpack(network.norm_np["y_mean"].astype(float))["joint_rot"]
    world_rot = quat_normalize(quat_mul(root_rot[:, None], quat_from_6d(np.broadcast_to(mean_rot6, (batch,) + mean_rot6.shape))))
    anchor_world = yaw_rotate(yaw, joint_pos[:, network.anchor]) + root_pos
    world_pos, world_rot = forward_kinematics_global(world_rot, anchor_world, network.offsets, network.parents,
                                                     network.anchor, above_anchor_rot=root_rot)
    facing = facing_from_yaw(yaw)
    stand_gait = features.gait_from_speed(np.zeros(batch))
    future = len(network.future_offsets)
    feet = len(network.contact_joints)

    def repeat(values, count):
        return np.repeat(values[:, None], count, axis=1)

    return CharacterState(
        root_pos=root_pos, root_rot=root_rot, phase=np.zeros(batch),
        joint_pos=joint_pos, joint_vel=joint_vel, world_joint_pos=world_pos, world_joint_rot=world_rot,
        contacts=np.zeros((batch, feet)), lock_target=world_pos[:, network.contact_joints].copy(),
        lock_weight=np.zeros((batch, feet)),
        traj_past_pos=repeat(root_pos, HISTORY_LENGTH), traj_past_dir=repeat(facing, HISTORY_LENGTH),
        traj_past_gait=repeat(stand_gait, HISTORY_LENGTH),
        traj_future_pos=repeat(root_pos, future), traj_future_dir=repeat(facing, future),
        traj_command_pos=repeat(root_pos, future), traj_command_dir=repeat(facing, future),
        lock_active=np.zeros((batch, feet), dtype=bool),
        pose_root_pos=root_pos.copy(), pose_root_rot=root_rot.copy(),
        net_future_pos=repeat(root_pos, future), net_future_dir=repeat(facing, future),
        spring_vel=np.zeros((batch, 2)), spring_acc=np.zeros((batch, 2)),
        spring_yaw=yaw.copy(), spring_yaw_vel=np.zeros(batch),
        drift_history=np.zeros((batch, DRIFT_CAPACITY, 3)), drift_count=0,
        root_vel=np.zeros((batch, 2)), root_yaw_rate=np.zeros(batch), stand=np.ones(batch), warp=np.ones(batch),
    )


# ---------------------------------------------------------------------------------------------
# The tick


def _normalized_or(dirs: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    length = vector_length(dirs, keepdims=True)
    return np.where(length > 1e-6, dirs / np.maximum(length, 1e-12), fallback)


def foot_goals(foot_pos, locks: FootLocks, floor_heights=None) -> tuple[np.ndarray, np.ndarray]:
    """Where each contact joint should be shown [B, 4, 3] and whether it is constrained [B, 4]: pulled
    toward its pin by the pin weight, and kept at or above its floor height when one is given."""
    goals = locked_positions(foot_pos, locks)
    constrained = locks.weight > 1e-4
    if floor_heights is not None:
        below = goals[..., 1] < floor_heights
        goals[..., 1] = np.maximum(goals[..., 1], floor_heights)
        constrained = constrained | below
    return goals, constrained


def apply_foot_locks(positions, rotations, goals, constrained, network: Network, root_rot) -> tuple[np.ndarray, np.ndarray]:
    """Two-bone IK of both legs at once toward the foot goals; the foot turns so a constrained toe
    reaches its goal. Contact slots are (foot, toe) of the left then the right leg, as `network.legs`."""
    forward = facing_from_yaw(yaw_of(root_rot))[:, None]
    rotations = reach_foot_goals(positions, rotations, goals, constrained, network.leg_joints,
                                 network.offsets[network.leg_joints[3]], network.foot_lengths, forward)
    return forward_kinematics_global(rotations, positions[:, network.anchor], network.offsets,
                                     network.parents, network.anchor, chain=network.chain)


def step(state: CharacterState, command: Command | Sequence[Command], settings: RuntimeSettings, dt: float,
         network: Network) -> CharacterState:
    """One simulation tick of all B characters (one network call); returns the new state."""
    tick_start = time.perf_counter()
    batch = state.batch_size
    desired, strafe_facing, strafe = command_arrays(command, batch)
    root_pos, root_rot = state.root_pos, state.root_rot
    root_yaw = yaw_of(root_rot)
    network.set_beta(settings.beta)

    # 1. Command springs: the commanded velocity and facing, then their prediction over the future samples.
    desired_speed = vector_length(desired)
    motion_yaw = np.arctan2(desired[:, 0], desired[:, 1])
    goal_yaw = np.where(strafe, np.arctan2(strafe_facing[:, 0], strafe_facing[:, 1]),
                        np.where(desired_speed > FACING_MIN_SPEED, motion_yaw, state.spring_yaw))
    _, spring_vel, spring_acc = spring_velocity_update(
        np.zeros_like(desired), state.spring_vel, state.spring_acc, desired, settings.traj_halflife_pos, dt)
    spring_yaw, spring_yaw_vel = spring_angle_update(
        state.spring_yaw, state.spring_yaw_vel, goal_yaw, settings.traj_halflife_dir, dt)
    spring_yaw = wrap_angle(spring_yaw)
    future_t = network.future_times
    offsets_xz, future_vel, _ = spring_velocity_update(
        np.zeros((batch, len(future_t), 2)), spring_vel[:, None], spring_acc[:, None], desired[:, None],
        settings.traj_halflife_pos, future_t[None, :, None])
    command_pos = root_pos[:, None] + _xz_to_xyz(offsets_xz)
    future_yaw, _ = spring_angle_update(spring_yaw[:, None], spring_yaw_vel[:, None], goal_yaw[:, None],
                                        settings.traj_halflife_dir, future_t[None, :])
    command_dir = facing_from_yaw(future_yaw)

    # 2. Blend with the network's own previous prediction [PFNN].
    count = len(future_t)
    w_pos = trajectory_blend_weights(count, np.where(strafe, settings.bias_pos_strafe, settings.bias_pos))[..., None]
    w_dir = trajectory_blend_weights(count, np.where(strafe, settings.bias_dir_strafe, settings.bias_dir))[..., None]
    future_pos = state.net_future_pos + w_pos * (command_pos - state.net_future_pos)
    future_pos[..., 1] = 0.0
    future_dir = _normalized_or(state.net_future_dir + w_dir * (command_dir - state.net_future_dir), command_dir)
    command_speed = vector_length(spring_vel)
    warp = speed_warp(command_speed, settings.slow_walk_speed, settings.max_speed_warp)
    current_gait = features.gait_from_speed(warp * command_speed)
    future_gait = features.gait_from_speed(warp[:, None] * vector_length(future_vel))

    # 3. Network input from the layout: trajectory in the current root frame, previous pose as fed back.
    past_rows, future_rows = network.past_rows, network.future_rows
    traj_pos = np.concatenate([state.traj_past_pos[:, past_rows], root_pos[:, None], future_pos[:, future_rows]], axis=1)
    traj_dir = np.concatenate([state.traj_past_dir[:, past_rows], facing_from_yaw(root_yaw)[:, None],
                               future_dir[:, future_rows]], axis=1)
    traj_gait = np.concatenate([state.traj_past_gait[:, past_rows], current_gait[:, None],
                                future_gait[:, future_rows]], axis=1)
    x = network.x_layout.pack({
        "traj_pos": warp[:, None, None] * to_root_frame(traj_pos, root_pos, root_yaw), "traj_dir": dirs_to_root_frame(traj_dir, root_yaw),
        "traj_gait": traj_gait, "joint_pos": state.joint_pos, "joint_vel": state.joint_vel,
    }, dtype=np.float64)
    infer_start = time.perf_counter()
    y = network.predict(x, state.phase)
    infer_ms = (time.perf_counter() - infer_start) * 1000.0
    out = network.y_layout.unpack(y)

    # 4. Pose: root frame -> world; the fed-back positions optionally blend in the extrapolated previous pose.
    predicted_pos = out["joint_pos"]
    previous_warp = state.warp if state.warp is not None else np.ones(batch)
    if settings.pose_smoothing > 0.0:
        # previous pose + velocity * dt, from its root frame into the current one
        extrapolated = (yaw_rotate(yaw_of(state.pose_root_rot) - root_yaw, state.joint_pos + state.joint_vel * (dt / previous_warp)[:, None, None])
                        + yaw_rotate(-root_yaw, (state.pose_root_pos - root_pos)[:, None]))
        predicted_pos = predicted_pos + settings.pose_smoothing * (extrapolated - predicted_pos)
    world_mat = yaw_matrices(root_yaw)[:, None] @ matrices_from_6d(out["joint_rot"])
    predicted_world = yaw_rotate(root_yaw, predicted_pos) + root_pos[:, None]
    if settings.fit_rotations:
        world_mat = fit_rotations_to_positions(world_mat, predicted_world, network.offsets, network.rotation_fit)
    world_rot = quat_from_matrix(world_mat)
    anchor_world = predicted_world[:, network.anchor]
    pose_pos, pose_rot = forward_kinematics_global(world_rot, anchor_world, network.offsets, network.parents,
                                                   network.anchor, above_anchor_rot=root_rot, chain=network.chain)

    # 5. Foot locking: pin planted feet, reach the pins with leg IK.
    contacts_now = np.clip(out["contacts"], 0.0, 1.0)
    locks = FootLocks(state.lock_target, state.lock_weight, state.lock_active)
    foot_pos = pose_pos[:, network.contact_joints]
    if settings.foot_locking:
        locks = update_foot_locks(locks, foot_pos, contacts_now, state.contacts, settings.contact_threshold,
                                  settings.lock_fade_halflife, settings.lock_release_distance, dt)
    else:
        locks = FootLocks(foot_pos, np.zeros_like(locks.weight), np.zeros_like(locks.active))
    display_pos, display_rot = pose_pos, pose_rot
    floor = network.floor_heights if settings.floor_clamp else None
    goals, constrained = foot_goals(foot_pos, locks, floor)
    if settings.ik_enabled and np.any(constrained):
        display_pos, display_rot = apply_foot_locks(pose_pos, pose_rot, goals, constrained, network, root_rot)

    # 6. Root motion for the next frame: predicted, drift-corrected, blended toward the command, stand-scaled.
    predicted_vel = features.rotate_xz(root_yaw[:, None], out["root_vel"][:, None])[:, 0] / warp[:, None]
    predicted_motion = np.concatenate([predicted_vel, out["root_yaw_rate"][:, :1]], axis=-1)
    commanded_yaw_rate = wrap_angle(future_yaw[:, 0] - root_yaw) / future_t[0]
    commanded_motion = np.concatenate([spring_vel, commanded_yaw_rate[:, None]], axis=-1)
    drift_history, drift_count = push_drift_error(state.drift_history, state.drift_count,
                                                  predicted_motion - commanded_motion)
    corrected = correct_drift(predicted_motion, drift_mean(drift_history, drift_count, settings.drift_window))
    blended = corrected + settings.root_motion_from_command * (commanded_motion - corrected)
    stand = stand_amount(command_speed, settings.stand_speed)
    moving = move_amount(stand)
    applied = blended * moving[:, None]
    root_vel, root_yaw_rate = applied[:, :2], applied[:, 2]
    new_root_pos = root_pos + _xz_to_xyz(root_vel) * dt
    new_yaw = wrap_angle(root_yaw + root_yaw_rate * dt)

    # 7. Phase, history, the network's own future for the next blend.
    if settings.phase_mode == "network":
        phase = advance_phase_by_network(state.phase, out["dphase"][:, 0], 0.9 * moving + 0.1, dt, network.sim_fps)
    else:
        root_speed = vector_length(root_vel)
        phase = advance_phase_by_speed(state.phase, root_speed, network.stride, dt, warp * root_speed)
    new_facing = facing_from_yaw(new_yaw)
    net_future_pos = from_root_frame_xz(out["future_pos"] / warp[:, None, None], root_pos, root_yaw)
    net_future_dir = _normalized_or(_xz_to_xyz(features.rotate_xz(root_yaw[:, None], out["future_dir"])), command_dir)

    return dataclasses.replace(
        state,
        root_pos=new_root_pos, root_rot=quat_from_yaw(new_yaw), phase=phase,
        joint_pos=predicted_pos, joint_vel=out["joint_vel"].copy(),
        world_joint_pos=display_pos, world_joint_rot=display_rot,
        contacts=contacts_now, lock_target=locks.target, lock_weight=locks.weight, lock_active=locks.active,
        traj_past_pos=np.concatenate([state.traj_past_pos[:, 1:], new_root_pos[:, None]], axis=1),
        traj_past_dir=np.concatenate([state.traj_past_dir[:, 1:], new_facing[:, None]], axis=1),
        traj_past_gait=np.concatenate([state.traj_past_gait[:, 1:], current_gait[:, None]], axis=1),
        traj_future_pos=future_pos, traj_future_dir=future_dir,
        traj_command_pos=command_pos, traj_command_dir=command_dir,
        pose_root_pos=root_pos, pose_root_rot=root_rot,
        net_future_pos=net_future_pos, net_future_dir=net_future_dir,
        spring_vel=spring_vel, spring_acc=spring_acc, spring_yaw=spring_yaw, spring_yaw_vel=spring_yaw_vel,
        drift_history=drift_history, drift_count=drift_count,
        root_vel=root_vel, root_yaw_rate=root_yaw_rate, stand=stand, warp=warp, ticks=state.ticks + 1,
        timings={"tick_ms": (time.perf_counter() - tick_start) * 1000.0, "infer_ms": infer_ms},
    )


# ---------------------------------------------------------------------------------------------
# BVH output and the object the viewer holds


def local_pose(state: CharacterState, skeleton: dict) -> tuple[np.ndarray, np.ndarray]:
    """The displayed pose on the training skeleton: (local rotations [B, J, 4], root joint translation
    [B, 3] in metres); every other joint sits at its skeleton offset."""
    parents = np.asarray(skeleton["parents"], dtype=int)
    root = int(np.flatnonzero(parents < 0)[0])
    return local_rotations(state.world_joint_rot, parents), state.world_joint_pos[:, root].copy()


class Character:
    """Model + settings + state of B characters: what the viewer and the headless drive hold."""

    def __init__(self, checkpoint, settings: RuntimeSettings | None = None, batch: int = 1,
                 device: str = "auto", path: str = "auto", positions=None, yaws=None,
                 settle_ticks: int = SETTLE_TICKS):
        self.network = Network(checkpoint, device=device, path=path)
        self.settings = settings if settings is not None else RuntimeSettings.from_checkpoint_meta(checkpoint.meta)
        self.batch = batch
        self.settle_ticks = settle_ticks
        self.state = self._settled(initial_state(self.network, batch, positions, yaws))
        self.previous_state = self.state

    def _settled(self, state: CharacterState) -> CharacterState:
        """Stand for `settle_ticks` (the mean input pose is an average, not a pose the network holds)."""
        for _ in range(self.settle_ticks):
            state = step(state, stand_command(), self.settings, 1.0 / self.network.sim_fps, self.network)
        if self.settle_ticks > 0 and self.network.floor_heights is None:
            # The model's own standing pose has its feet on the floor: their heights are the floor.
            self.network.floor_heights = state.world_joint_pos[:, self.network.contact_joints, 1].min(axis=0)
        return dataclasses.replace(state, ticks=0, drift_count=0, drift_history=np.zeros_like(state.drift_history))

    @property
    def skeleton(self) -> dict:
        return self.network.skeleton

    def tick(self, command: Command | Sequence[Command], dt: float) -> CharacterState:
        self.previous_state = self.state
        self.state = step(self.state, command, self.settings, dt, self.network)
        return self.state

    def reset(self, positions=None, yaws=None) -> CharacterState:
        self.state = self._settled(initial_state(self.network, self.batch, positions, yaws))
        self.previous_state = self.state
        return self.state

    def swap_model(self, checkpoint, device: str | None = None, path: str | None = None) -> None:
        """Hot swap the network; the characters keep their place, heading, phase and trajectory."""
        old = self.state
        network = Network(checkpoint, device=device or str(self.network.device),
                          path=path or self.network.path)
        fresh = initial_state(network, self.batch, old.root_pos, old.root_yaw)
        keep = ["phase", "traj_past_pos", "traj_past_dir", "traj_past_gait", "traj_future_pos", "traj_future_dir",
                "traj_command_pos", "traj_command_dir", "net_future_pos", "net_future_dir", "spring_vel",
                "spring_acc", "spring_yaw", "spring_yaw_vel", "root_vel", "root_yaw_rate", "stand", "warp"]
        if network.names == self.network.names:
            keep += ["joint_pos", "joint_vel", "world_joint_pos", "world_joint_rot", "pose_root_pos", "pose_root_rot"]
        self.network = network
        self._settled(initial_state(network, 1))  # measures the new model's floor heights
        self.state = dataclasses.replace(fresh, **{name: getattr(old, name) for name in keep})
        self.previous_state = self.state

    def local_pose(self) -> tuple[np.ndarray, np.ndarray]:
        return local_pose(self.state, self.network.skeleton)

    def set_style(self, weights) -> None:
        """Style weights [S] over `network.style_names` (summing to 1) for every character, from the next tick."""
        weights = np.asarray(weights, dtype=float)
        if weights.shape != (self.network.num_styles,):
            raise ValueError(f"expected {self.network.num_styles} style weights, got shape {weights.shape}")
        self.network.default_style = weights

    def style_name(self) -> str:
        """The dominant style's name ('' for a model without styles)."""
        if not self.network.num_styles:
            return ""
        return self.network.style_names[int(np.argmax(self.network.default_style))]
