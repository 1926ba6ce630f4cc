"""Motion matching's feature vector: what a database frame and a query are compared by.

27 numbers per frame, as in Holden's Motion-Matching demo, in the character's root frame: the left and
right ankle positions (`foot_position`, 6) and velocities (`foot_velocity`, 6), the hips' velocity
(`hip_velocity`, 3), and the future trajectory's positions (x, z) and facings (x, z) at +20, +40 and
+60 frames of 60 Hz (`trajectory_position`, `trajectory_facing`, 6 each). Velocities are world
velocities seen in the root frame (the feature contract's `joint_vel`).

Each group is divided by one standard deviation (the mean of its dimensions' deviations over the
database) and multiplied by its weight, so a weight says how much its group counts whatever its unit
(`Normalisation`). A query takes its pose groups from the frame being played and its trajectory from
the runtime's planned trajectory (`asked_trajectory`).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from pfnn_core.features.contract import FUTURE_OFFSETS, TRAJ_OFFSETS
from pfnn_core.math.mat3 import njit


class FeatureGroup(NamedTuple):
    name: str
    size: int
    weight: float  # default weight [MM]


FEATURE_GROUPS = (
    FeatureGroup("foot_position", 6, 0.75),
    FeatureGroup("foot_velocity", 6, 1.0),
    FeatureGroup("hip_velocity", 3, 1.0),
    FeatureGroup("trajectory_position", 6, 1.0),
    FeatureGroup("trajectory_facing", 6, 1.5),
)
FEATURE_SIZE = sum(group.size for group in FEATURE_GROUPS)
TRAJECTORY_FRAMES = (20, 40, 60)  # 60 Hz frames ahead of the trajectory samples
MIN_STD = 1e-3  # a group that never varies is not blown up by a tiny deviation


def group_slices() -> dict[str, slice]:
    slices, start = {}, 0
    for group in FEATURE_GROUPS:
        slices[group.name] = slice(start, start + group.size)
        start += group.size
    return slices


SLICES = group_slices()
POSE_PART = slice(0, SLICES["hip_velocity"].stop)  # what a query copies from the frame being played
VELOCITY_PART = slice(SLICES["foot_velocity"].start, SLICES["hip_velocity"].stop)  # feet and hips, [6:15]
TRAJECTORY_PART = slice(SLICES["trajectory_position"].start, FEATURE_SIZE)


def default_weights() -> dict[str, float]:
    return {group.name: group.weight for group in FEATURE_GROUPS}


def weight_vector(weights: dict[str, float]) -> np.ndarray:
    """[27] each dimension's group weight, from {group name: weight} (a missing group keeps its default)."""
    out = np.empty(FEATURE_SIZE)
    for group in FEATURE_GROUPS:
        out[SLICES[group.name]] = float(weights.get(group.name, group.weight))
    return out


def pose_features(joint_pos, joint_vel, feet: tuple[int, int], hips: int) -> np.ndarray:
    """[..., 15] the pose groups from root-frame joint positions and velocities [..., J, 3]."""
    left, right = feet
    return np.concatenate([joint_pos[..., left, :], joint_pos[..., right, :], joint_vel[..., left, :],
                           joint_vel[..., right, :], joint_vel[..., hips, :]], axis=-1)


def frame_features(joint_pos, joint_vel, future_pos, future_dir, feet: tuple[int, int], hips: int) -> np.ndarray:
    """[N, 27] float64 features of database frames from the feature contract's outputs: root-frame joint
    positions and velocities [N, J, 3], the future trajectory [N, 6, 2] at FUTURE_OFFSETS."""
    rows = [list(FUTURE_OFFSETS).index(frame) for frame in TRAJECTORY_FRAMES]
    batch = len(joint_pos)
    return np.concatenate([pose_features(joint_pos, joint_vel, feet, hips),
                           np.asarray(future_pos)[:, rows].reshape(batch, -1),
                           np.asarray(future_dir)[:, rows].reshape(batch, -1)], axis=-1).astype(np.float64)


@njit
def _asked(traj_pos, traj_dir, future_rows, query, future_pos, future_dir):
    """Per character the query's trajectory groups and the future answered (see `asked_trajectory`)."""
    at40, at50 = future_rows[3], future_rows[4]
    for b in range(traj_pos.shape[0]):
        for k in range(2):
            future_pos[b, 5, k] = 2.0 * traj_pos[b, at50, k] - traj_pos[b, at40, k]
            future_dir[b, 5, k] = 2.0 * traj_dir[b, at50, k] - traj_dir[b, at40, k]
        norm = max(math.sqrt(future_dir[b, 5, 0] ** 2 + future_dir[b, 5, 1] ** 2), 1e-9)
        future_dir[b, 5, 0], future_dir[b, 5, 1] = future_dir[b, 5, 0] / norm, future_dir[b, 5, 1] / norm
        for s in range(5):
            for k in range(2):
                future_pos[b, s, k] = traj_pos[b, future_rows[s], k]
                future_dir[b, s, k] = traj_dir[b, future_rows[s], k]
        for s, sample in enumerate((1, 3, 5)):  # +20, +40, +60
            for k in range(2):
                query[b, 2 * s + k] = future_pos[b, sample, k]
                query[b, 6 + 2 * s + k] = future_dir[b, sample, k]


def asked_trajectory(x: np.ndarray, x_layout) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """From the model input's planned trajectory (root frame): the query's trajectory groups [B, 12] and the
    future at +10..+60 frames [B, 6, 2] positions and facings.

    The input holds samples up to +50 frames; +60 is carried on from +40 and +50 (a straight line, the
    facing renormalised), which the command springs' smooth paths make exact to millimetres."""
    parts = x_layout.unpack(x)
    offsets = list(TRAJ_OFFSETS)
    future_rows = np.array([offsets.index(frame) for frame in FUTURE_OFFSETS[:5]], dtype=np.int64)
    batch = len(x)
    query, future_pos, future_dir = np.empty((batch, 12)), np.empty((batch, 6, 2)), np.empty((batch, 6, 2))
    _asked(parts["traj_pos"], parts["traj_dir"], future_rows, query, future_pos, future_dir)
    return query, future_pos, future_dir


def query_trajectory(x: np.ndarray, x_layout) -> np.ndarray:
    """[B, 12] the trajectory groups of a query from the model input (`asked_trajectory`)."""
    return asked_trajectory(x, x_layout)[0]


def asked_velocities(trajectory: np.ndarray) -> np.ndarray:
    """[B, 9] velocity groups (left and right ankle, hips; root frame, m/s) of a body moving as the asked
    trajectory [B, 12] does over its first third of a second: its mean velocity there, y 0. The feet get
    it too (over a step an ankle moves on average as the body does)."""
    velocity = np.zeros((len(trajectory), 3))
    velocity[:, [0, 2]] = np.asarray(trajectory)[:, 0:2] * (60.0 / TRAJECTORY_FRAMES[0])
    return np.concatenate([velocity, velocity, velocity], axis=-1)


def asks_to_stand(trajectory: np.ndarray, distance: float, rest_step: float = 0.0) -> np.ndarray:
    """[B] bool: the asked trajectory [B, 12] ends within `distance` (m) of the root at +1 s, or comes to
    rest before it: its last third of a second (+2/3 s to +1 s) covers less than `rest_step` (m). A stop
    is asked at once: the command springs' path of a released stick still ends 0.2-0.6 m ahead (the
    distance the body takes to stop) but no longer moves after about half a second."""
    trajectory = np.asarray(trajectory)
    ending = np.hypot(trajectory[:, 4], trajectory[:, 5]) < distance
    last_step = np.hypot(trajectory[:, 4] - trajectory[:, 2], trajectory[:, 5] - trajectory[:, 3])
    return ending | (last_step < rest_step)


@njit
def sharp_change(query, last, move, turn_cosine) -> bool:
    """Some trajectory sample of `query` [12] moved more than `move` (m) or turned past the angle of
    `turn_cosine` from `last` [12]."""
    for s in range(3):
        dx, dz = query[2 * s] - last[2 * s], query[2 * s + 1] - last[2 * s + 1]
        cosine = query[6 + 2 * s] * last[6 + 2 * s] + query[7 + 2 * s] * last[7 + 2 * s]
        if dx * dx + dz * dz > move * move or cosine < turn_cosine:
            return True
    return False


def mirrored_features(features: np.ndarray) -> np.ndarray:
    """The features of the left/right mirrored frames: left and right feet swapped, every x negated
    (the root frame of a mirrored motion is the mirror of its root frame)."""
    out = np.array(features, copy=True)
    for name in ("foot_position", "foot_velocity"):
        part = SLICES[name]
        block = features[:, part].reshape(-1, 2, 3)[:, ::-1]
        out[:, part] = (block * np.array([-1.0, 1.0, 1.0])).reshape(-1, 6)
    out[:, SLICES["hip_velocity"].start] *= -1.0
    out[:, TRAJECTORY_PART.start:TRAJECTORY_PART.stop:2] *= -1.0  # (x, z) pairs
    return out


class Normalisation(NamedTuple):
    """Per dimension the database mean and its group's deviation: normalised = (f - mean) / scale x weight."""

    mean: np.ndarray  # [27]
    scale: np.ndarray  # [27]

    @staticmethod
    def of(features: np.ndarray) -> "Normalisation":
        features = np.asarray(features, dtype=np.float64)
        mean, std = features.mean(axis=0), features.std(axis=0)
        scale = np.empty(FEATURE_SIZE)
        for part in SLICES.values():
            scale[part] = max(float(std[part].mean()), MIN_STD)
        return Normalisation(mean, scale)

    def apply(self, features: np.ndarray, weights: np.ndarray) -> np.ndarray:
        """Normalised, weighted features [..., 27] (float64), what distances are measured in."""
        return (np.asarray(features, dtype=np.float64) - self.mean) * (weights / self.scale)
