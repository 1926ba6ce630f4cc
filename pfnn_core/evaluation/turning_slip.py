"""Turning slip: how fast the root slides across its facing while the body turns (docs/EVALUATION.md).

Owns `lateral_velocity` (the root's velocity across its facing, smoothed over about a step),
`turning_frames` (the facing turns faster than TURN_RATE while the root moves), `turning_slip` (both
from a root path and facing) and `body_root` (that root and facing from world joint positions, the
same for a drive and the mocap: the hips on the ground, facing the smoothed normal of the hip and
shoulder lines, as training labels the control root).

A person turns by stepping: the path bends with the body and the velocity stays near the facing. A
root that keeps its old direction while the body turns on top of it (or turns the path while the body
lags) moves across its facing; that is the slip.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.ndimage import gaussian_filter1d

from pfnn_core.motion.root import SPEED_SIGMA_S, facing_directions
from pfnn_core.skeleton import hips_joint

TURN_RATE = math.radians(45.0)   # rad/s: the facing turns at least this fast (the mocap's straight walks: never)
MIN_TURN_SPEED = 0.2             # m/s: slower is turning on the spot, not a turn of the path


def lateral_velocity(root_xz, yaw, dt: float, sigma_s: float = SPEED_SIGMA_S) -> np.ndarray:
    """[T] m/s: the root's velocity along its facing's right (x, z) = (-cos yaw, sin yaw) for facing
    (sin yaw, cos yaw), each frame in its own facing, then smoothed (Gaussian, `sigma_s`) to cancel
    the hips' sway from step to step. Smoothing the components in the facing frame keeps a constant
    slip constant through a turn (smoothing world velocities would shrink them as they rotate)."""
    root_xz, yaw = np.asarray(root_xz, float), np.asarray(yaw, float)
    velocity = np.gradient(root_xz, dt, axis=0)
    right = np.stack([-np.cos(yaw), np.sin(yaw)], axis=-1)
    lateral = (velocity * right).sum(axis=-1)
    return gaussian_filter1d(lateral, sigma_s / dt, mode="nearest") if sigma_s > 0 else lateral


def turning_frames(root_xz, yaw, dt: float, rate: float = TURN_RATE, min_speed: float = MIN_TURN_SPEED,
                   sigma_s: float = SPEED_SIGMA_S) -> np.ndarray:
    """[T] bool: the facing turns faster than `rate` while the root's smoothed speed is at least `min_speed`."""
    root_xz = np.asarray(root_xz, float)
    yaw_rate = np.gradient(np.unwrap(np.asarray(yaw, float)), dt)
    velocity = np.gradient(root_xz, dt, axis=0)
    if sigma_s > 0:
        velocity = gaussian_filter1d(velocity, sigma_s / dt, axis=0, mode="nearest")
    return (np.abs(yaw_rate) > rate) & (np.linalg.norm(velocity, axis=-1) >= min_speed)


def turning_slip(root_xz, yaw, dt: float, mask=None) -> tuple[float, int]:
    """(mean |lateral velocity| over the turning frames (m/s), their count); `mask` [T] limits the frames
    (e.g. those commanded to walk or run forward). NaN with no turning frame."""
    if len(root_xz) < 3:
        return math.nan, 0
    turning = turning_frames(root_xz, yaw, dt)
    if mask is not None:
        turning &= np.asarray(mask, bool)
    count = int(turning.sum())
    if not count:
        return math.nan, 0
    return float(np.abs(lateral_velocity(root_xz, yaw, dt))[turning].mean()), count


def body_root(positions, names, parents, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """(root (x, z) [T, 2], facing yaw [T]) of world joint positions [T, J, 3]: the hips on the ground
    and the smoothed facing of `motion.root` (0 faces +Z)."""
    positions = np.asarray(positions, float)
    hips = hips_joint(names, np.asarray(parents), positions)
    facing = facing_directions(positions, names, np.asarray(parents), dt)
    return positions[:, hips][:, [0, 2]], np.arctan2(facing[:, 0], facing[:, 1])


def pooled_slip(parts) -> float:
    """(slip, frames) pairs -> the frame-weighted mean (parts without turning frames skipped)."""
    parts = [(s, n) for s, n in parts if n > 0 and np.isfinite(s)]
    total = sum(n for _, n in parts)
    return sum(s * n for s, n in parts) / total if total else math.nan
