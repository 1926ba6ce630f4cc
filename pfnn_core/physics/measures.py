"""Measures of the simulated body (and the same on the kinematic pose, to set beside them), as pure
functions over arrays: tracking error, feet below the floor, the root's help, the centre of mass over
the support polygon while standing, the time to recover after a push. Skating and pops are the
evaluation's own (`evaluation.measures`), run on both.

Conventions: metres, seconds, Y up; frames every `dt` s; `feet` [T, 4, 3] are the contact joints in the
order Foot_L, Toes_L, Foot_R, Toes_R and `floor` [4] their floor levels.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np
from scipy.spatial import ConvexHull, QhullError

from pfnn_core.math.quat import quat_inv, quat_mul, quat_mul_vec, quat_normalize, quat_to_matrix
from pfnn_core.motion.kinematics import local_rotations
from pfnn_core.physics.body import PhysicsBody

RECOVERED_ERROR = 0.05  # m: a pushed body has recovered once its tracking error stays below this
RECOVERY_WINDOW_S = 3.0  # s after a push in which the recovery is looked for
SOLE_CONTACT = 0.01  # m: sole corners this close to the floor (or below it) support the body


def percentiles(values, qs=(50, 95)) -> tuple[float, ...]:
    values = np.asarray(values, float)
    values = values[np.isfinite(values)]
    return tuple(float(np.percentile(values, q)) if len(values) else math.nan for q in qs)


def depth_below_floor(feet, floor) -> np.ndarray:
    """[T] m: how far the lowest contact joint is below its floor level (0 when none is)."""
    return np.clip(np.max(np.asarray(floor, float) - np.asarray(feet, float)[..., 1], axis=-1), 0.0, None)


def recovery_time(error, push_frames, dt: float, limit: float = RECOVERED_ERROR,
                  window_s: float = RECOVERY_WINDOW_S) -> np.ndarray:
    """[n] s from each push until the tracking error [T] is below `limit` for the rest of the window
    (the next push or `window_s`, whichever comes first); 0 when it never went above; `window_s`
    when it did not come back inside the window."""
    error = np.asarray(error, float)
    times = []
    for index, frame in enumerate(push_frames):
        end = min(len(error), frame + int(round(window_s / dt)))
        if index + 1 < len(push_frames):
            end = min(end, int(push_frames[index + 1]))
        above = np.flatnonzero(error[frame:end] >= limit)
        if len(above) == 0:
            times.append(0.0)
        elif frame + above[-1] + 1 >= end and end - frame >= int(round(window_s / dt)):
            times.append(window_s)
        else:
            times.append((above[-1] + 1) * dt)
    return np.asarray(times)


@dataclass(frozen=True)
class Support:
    """The centre of mass against the support polygon while standing."""

    inside_share: float  # share of the standing frames with the centre of mass over the polygon
    worst_outside: float  # m: the farthest its ground projection got outside it (0 when always inside)
    frames: int  # standing frames measured


def _outside_distance(point, corners) -> float:
    """m: how far `point` [2] is outside the convex hull of `corners` [K, 2] (0 inside; the distance to
    the nearest corner when the corners do not span an area)."""
    if len(corners) < 3:
        return float(np.min(np.linalg.norm(corners - point, axis=-1))) if len(corners) else math.inf
    try:
        hull = ConvexHull(corners)
    except QhullError:
        return float(np.min(np.linalg.norm(corners - point, axis=-1)))
    offsets = hull.equations[:, :2] @ point + hull.equations[:, 2]  # outward normals: > 0 outside
    return float(max(offsets.max(), 0.0))


def sole_corners(body: PhysicsBody, positions, rotations) -> np.ndarray:
    """[T, K, 3] world corners of every sole box over a motion (joint positions [T, J, 3], global
    rotations [T, J, 4])."""
    signs = np.array([[x, y, z] for x in (-1, 1) for y in (-1, 1) for z in (-1, 1)], float)
    corners = []
    for joint in body.plan.contact_joints:
        for shape in body.plan.node(joint).shapes:
            if shape.sole:
                local = shape.start + (signs * shape.half_size) @ quat_to_matrix(shape.quat).T  # [8, 3]
                world = quat_mul_vec(rotations[:, joint, None], local[None]) + positions[:, joint, None]
                corners.append(world)
    return np.concatenate(corners, axis=1) if corners else np.zeros((len(positions), 0, 3))


def support(body: PhysicsBody, positions, rotations, centre_of_mass, standing) -> Support:
    """The centre of mass [T, 3] against the support polygon (the sole corners within SOLE_CONTACT of
    the floor) in the `standing` [T] frames."""
    frames = np.flatnonzero(np.asarray(standing, bool))
    if len(frames) == 0:
        return Support(math.nan, math.nan, 0)
    corners = sole_corners(body, positions[frames], rotations[frames])
    outside = np.array([_outside_distance(centre_of_mass[f, [0, 2]], c[c[:, 1] < SOLE_CONTACT][:, [0, 2]])
                        for f, c in zip(frames, corners)])
    return Support(float(np.mean(outside <= 0.0)), float(outside.max()), len(frames))


def kinematic_centre_of_mass(body: PhysicsBody, positions, rotations) -> np.ndarray:
    """[T, 3] the centre of mass of the body's masses posed as the kinematic motion."""
    model, data = body.model, mujoco.MjData(body.model)
    inverse = quat_inv(np.array([body.plan.node(int(j)).reference for j in body.ball_joints]))
    local = local_rotations(rotations, body.plan.parents)[:, body.ball_joints]
    joints = quat_normalize(quat_mul(inverse[None], local))
    root = body.plan.root
    out = np.zeros((len(positions), 3))
    for frame in range(len(positions)):
        data.qpos[0:3], data.qpos[3:7] = positions[frame, root], rotations[frame, root]
        data.qpos[body.spring_index] = joints[frame].ravel()
        mujoco.mj_kinematics(model, data)
        mujoco.mj_comPos(model, data)
        out[frame] = data.subtree_com[body.root_body]
    return out
