"""The control root and its trajectory: the hips projected on the ground, facing the smoothed mean of the
hip-line and shoulder-line normals (the per-step pelvis twist is largely cancelled by the
counter-rotating shoulders); the body's own unsmoothed frame; trajectory windows extrapolated past the
clip ends (constant root velocity and yaw rate), never dropped."""

from __future__ import annotations

import numpy as np
from scipy.ndimage import gaussian_filter1d

from pfnn_core.math import quat
from pfnn_core.math.planar import inverse_rotate_xz, rotate_xz
from pfnn_core.math.quat import wrap_angle
from pfnn_core.skeleton import body_lines, hips_joint

FACING_SIGMA_S = 0.1


SPEED_SIGMA_S = 0.25  # speed used for gait labels is smoothed over about a step


EXTRAPOLATION_FIT_FRAMES = 10


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
