"""The root's velocity made to agree with the model's own contact feet.

A model predicts the root's velocity and the pose in the root frame separately, and the two disagree: a
foot the model says is planted (its contact output) moves in the world by the root's velocity plus its
own motion in the root frame, which do not cancel. Measured on the tuning drives with the network alone,
most of the foot skating of every model kind was this disagreement (docs/EVALUATION.md, "The root from
the contact feet"). The runtime moves the root's velocity toward the one that leaves the contact feet
where they were, weighted by their contact outputs: with both feet up nothing changes, with a foot down
the root follows it. The feet's own motion in the root frame (the model's stride) is kept.

Conventions (the feature contract, `features/samples.py`): the root's velocity is the step from the last
root to the new one in the last root frame over dt; the yaw rate is the root's turn over dt; joint
positions are in their own tick's root frame.
"""
from __future__ import annotations

import numpy as np

from pfnn_core.math.planar import rotate_xz


def contact_root_velocity(root_vel: np.ndarray, yaw_rate: np.ndarray, joint_pos: np.ndarray,
                          joint_pos_before: np.ndarray, contacts: np.ndarray, contact_joints,
                          dt: float, amount: float) -> np.ndarray:
    """[B, 2] the model's root velocity (x, z) [B, 2] moved by `amount` (0..1) toward the velocity that
    keeps its contact joints (`contact_joints` [K]) still in the world.

    `yaw_rate` [B] rad/s, `joint_pos` [B, J, 3] the new pose (new root frame), `joint_pos_before`
    [B, J, 3] the pose the model was given (last root frame), `contacts` [B, K] the contact outputs.
    Per contact joint the still velocity is (p_before - R(turn) p_now) / dt (the joint's step in the
    world is zero); their mean weighted by the contacts (clipped to 0..1) is blended in by `amount`
    times the contacts' sum (at most 1): a foot lifting hands the root back to the model smoothly."""
    root_vel = np.asarray(root_vel, np.float64)
    if amount <= 0.0:
        return root_vel
    joints = np.asarray(contact_joints, np.int64)
    turn = np.asarray(yaw_rate, np.float64) * dt
    now = rotate_xz(turn[:, None], np.asarray(joint_pos, np.float64)[:, joints][..., [0, 2]])
    before = np.asarray(joint_pos_before, np.float64)[:, joints][..., [0, 2]]
    still = (before - now) / dt  # [B, K, 2]
    weight = np.clip(np.asarray(contacts, np.float64), 0.0, 1.0)
    total = weight.sum(axis=1)
    mean = (weight[..., None] * still).sum(axis=1) / np.maximum(total, 1e-9)[:, None]
    share = min(float(amount), 1.0) * np.clip(total, 0.0, 1.0)[:, None]
    return (1.0 - share) * root_vel + share * mean
