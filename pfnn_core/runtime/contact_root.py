"""The root's velocity made to agree with the model's own contact feet.

A model predicts the root's velocity and the pose in the root frame separately, and the two disagree: a
foot the model says is planted (its contact output) moves in the world by the root's velocity plus its
own motion in the root frame, which do not cancel. Measured on the tuning drives with the network alone,
most of the foot skating of every model kind was this disagreement (docs/EVALUATION.md, "The root from
the contact feet"). The runtime moves the root's velocity toward the one that leaves the contact feet
where they were, weighted by their contact outputs: with both feet up nothing changes, with a foot down
the root follows it. The feet's own motion in the root frame (the model's stride) is kept.

At a start from standing the root leans on the command (`root_motion.start_lean`: the data has no
starts); moving it with the first steps' feet slowed a walk's start from 0.51 to 0.64 s to 90% of the
speed on the tuning drives. The tick scales the amount by 1 - (share of the last second stood) **
GIVE_WAY_SHAPE, so the feet take the root back over that second: starts 0.52 s, the same skating
(docs/EVALUATION.md, "The root from the contact feet").

Conventions (the feature contract, `features/samples.py`): the root's velocity is the step from the last
root to the new one in the last root frame over dt; the yaw rate is the root's turn over dt; joint
positions are in their own tick's root frame.
"""
from __future__ import annotations

import numpy as np

from pfnn_core.math import mat3
from pfnn_core.math.mat3 import njit

GIVE_WAY_SHAPE = 0.1  # a start gives the root to the command by (share of the last second stood) ** this


@njit
def _contact_root_kernel(root_vel, yaw_rate, joint_pos, joint_pos_before, contacts, joints, dt, amount, out):
    for b in range(root_vel.shape[0]):
        turn = mat3.yaw_matrix(yaw_rate[b] * dt)  # the new root frame seen from the last one
        total, mean_x, mean_z = 0.0, 0.0, 0.0
        for k in range(joints.shape[0]):
            weight = min(max(contacts[b, k], 0.0), 1.0)
            now = mat3.mat_vec(turn, mat3.load3(joint_pos[b], joints[k]))
            before = mat3.load3(joint_pos_before[b], joints[k])
            mean_x += weight * (before[0] - now[0]) / dt
            mean_z += weight * (before[2] - now[2]) / dt
            total += weight
        share = amount[b] * min(total, 1.0)
        if total > 0.0:
            mean_x, mean_z = mean_x / total, mean_z / total
        out[b, 0] = (1.0 - share) * root_vel[b, 0] + share * mean_x
        out[b, 1] = (1.0 - share) * root_vel[b, 1] + share * mean_z


def contact_root_velocity(root_vel: np.ndarray, yaw_rate: np.ndarray, joint_pos: np.ndarray,
                          joint_pos_before: np.ndarray, contacts: np.ndarray, contact_joints,
                          dt: float, amount) -> np.ndarray:
    """[B, 2] the model's root velocity (x, z) [B, 2] moved by `amount` (0..1, one or [B]) toward the velocity that
    keeps its contact joints (`contact_joints` [K]) still in the world.

    `yaw_rate` [B] rad/s, `joint_pos` [B, J, 3] the new pose (new root frame), `joint_pos_before`
    [B, J, 3] the pose the model was given (last root frame), `contacts` [B, K] the contact outputs.
    Per contact joint the still velocity is (p_before - R(turn) p_now) / dt (the joint's step in the
    world is zero); their mean weighted by the contacts (clipped to 0..1) is blended in by `amount`
    times the contacts' sum (at most 1): a foot lifting hands the root back to the model smoothly."""
    root_vel = np.asarray(root_vel, np.float64)
    amount = np.clip(np.broadcast_to(np.asarray(amount, np.float64), (len(root_vel),)), 0.0, 1.0)
    if not amount.any():
        return root_vel
    out = np.empty((len(root_vel), 2))
    _contact_root_kernel(np.ascontiguousarray(root_vel), np.ascontiguousarray(yaw_rate, np.float64),
                         np.ascontiguousarray(joint_pos, np.float64), np.ascontiguousarray(joint_pos_before, np.float64),
                         np.ascontiguousarray(contacts, np.float64), np.asarray(contact_joints, np.int64), float(dt),
                         np.ascontiguousarray(amount), out)
    return out
