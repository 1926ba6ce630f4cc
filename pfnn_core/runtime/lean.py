"""The lean stage of a tick: the upper body tilted toward the commanded acceleration.

A person leans into a start, back against a stop and into a turn before the feet have done much; the
data has no starts or stops (`root_motion.primed_past`), so the model's first steps are late and a slow
style's start showed nothing for 167 ms (`docs/EVALUATION.md`, response latency). The command springs'
acceleration (`trajectory.SpringState.acceleration`, continuous from the first tick of a change) turns
the joints above the hips about the first spine joint (each subtree hanging from the anchor that is not a
leg) by `lean_per_acceleration` degrees per m/s^2, at most `lean_max` degrees, about the horizontal axis
across the acceleration. The legs and the feet's pins are untouched; the pose fed back to the model is
the model's own.
"""
from __future__ import annotations

import math

import numpy as np

from pfnn_core.math import mat3
from pfnn_core.math.mat3 import njit


def lean_roots_of(parents, anchor: int, legs) -> np.ndarray:
    """[J] for each joint the lean root it hangs from (a child of `anchor` that starts no leg in `legs`
    [L, 4]), itself for a root, -1 for the anchor, the legs and the joints above the anchor; all -1
    without legs (a rig known by its positions only: the spine cannot be told from a leg)."""
    parents = np.asarray(parents, dtype=np.int64)
    hips = {int(leg[0]) for leg in np.asarray(legs).reshape(-1, 4)}
    root_of = np.full(len(parents), -1, dtype=np.int64)
    if not hips:
        return root_of
    for j in range(len(parents)):  # parents come first
        parent = int(parents[j])
        if parent == anchor and j not in hips:
            root_of[j] = j
        elif parent >= 0 and root_of[parent] >= 0:
            root_of[j] = root_of[parent]
    return root_of


@njit
def _lean_kernel(pos, rot, acceleration, per_acceleration, most, root_of):
    for b in range(pos.shape[0]):
        ax, az = acceleration[b, 0], acceleration[b, 1]
        size = math.hypot(ax, az)
        angle = min(per_acceleration * size, most)
        if angle <= 0.0 or not size > 1e-9:
            continue
        turn = mat3.axis_angle((az / size, 0.0, -ax / size), angle)  # up x the acceleration's direction
        for j in range(root_of.shape[0]):
            root = root_of[j]
            if root < 0:
                continue
            mat3.store33(rot[b], j, mat3.mat_mul(turn, mat3.load33(rot[b], j)))
            if j != root:
                pivot = mat3.load3(pos[b], root)
                mat3.store3(pos[b], j, mat3.add(pivot, mat3.mat_vec(turn, mat3.sub(mat3.load3(pos[b], j), pivot))))


def lean_upper_body(positions, rotations, acceleration, degrees_per_acceleration: float, most_degrees: float,
                    root_of) -> None:
    """Tilt, in place, the world joint positions [B, J, 3] and rotation matrices [B, J, 3, 3] of the joints
    with a lean root (`lean_roots_of`) toward the horizontal `acceleration` [B, 2] (world x, z; m/s^2):
    degrees_per_acceleration x |acceleration|, at most most_degrees, each subtree about its root joint."""
    if degrees_per_acceleration <= 0.0 or most_degrees <= 0.0:
        return
    _lean_kernel(positions, rotations, np.ascontiguousarray(acceleration, dtype=np.float64),
                 math.radians(float(degrees_per_acceleration)), math.radians(float(most_degrees)), root_of)
