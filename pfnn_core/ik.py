"""Two-bone leg IK and foot locking, over numpy arrays with leading batch dimensions.

Rotations here are GLOBAL (world) joint rotations; a caller that needs local rotations takes
`quat_inv_mul(parent_global, child_global)` afterwards. A solved leg keeps the ankle's global
rotation, so the foot keeps its orientation and the toe follows the ankle.

Foot locking [PFNN, MM]: when a foot joint's contact output rises above a threshold its world
position is pinned; the pin's weight fades in and out with a halflife, and a pin is released early
when the network's foot has moved too far from it (the body has moved on).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from pfnn_core.contacts import foot_joints
from pfnn_core.quat import cross3, quat_between, quat_from_angle_axis, quat_mul, quat_mul_vec, quat_normalize, vector_length

_REACH_MARGIN = 1e-4  # keep the leg from locking fully straight (the knee axis would be undefined)


def leg_chains(names, parents) -> list[tuple[int, int, int, int]]:
    """(hip, knee, ankle, toe) joint indices of the left and the right leg."""
    feet = foot_joints(list(names), parents)
    chains = []
    for side in ("left", "right"):
        ankle, toe = feet[f"{side}_foot"], feet[f"{side}_toe"]
        knee = int(parents[ankle])
        hip = int(parents[knee])
        chains.append((hip, knee, ankle, toe))
    return chains


class LegSolution(NamedTuple):
    hip_rot: np.ndarray  # [..., 4] new global rotation of the hip (upper leg) joint
    knee_rot: np.ndarray  # [..., 4] new global rotation of the knee (lower leg) joint
    knee_pos: np.ndarray  # [..., 3] new knee position
    ankle_pos: np.ndarray  # [..., 3] new ankle position (= target when within reach)


def _normalize(v: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    return v / np.maximum(vector_length(v, keepdims=True), eps)


def _angle_between(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    cos = np.sum(_normalize(u) * _normalize(v), axis=-1)
    return np.arccos(np.clip(cos, -1.0, 1.0))


def two_bone_ik(hip_pos, knee_pos, ankle_pos, hip_rot, knee_rot, target, pole_hint) -> LegSolution:
    """Rotate hip and knee (global rotations) so the ankle reaches `target`.

    Bone lengths are kept; a target out of reach is clamped to the nearest reachable point along
    the hip->target line. The knee bends in the leg's current plane; `pole_hint` [..., 3] (the
    direction the knee should point, e.g. the character's forward) picks the plane only when the leg
    is straight. All inputs broadcast over leading dimensions.
    """
    a, b, c = (np.asarray(p, dtype=float) for p in (hip_pos, knee_pos, ankle_pos))
    target = np.asarray(target, dtype=float)
    thigh = b - a
    shin = c - b
    thigh_length = vector_length(thigh)
    shin_length = vector_length(shin)
    reach_max = (thigh_length + shin_length) * (1.0 - _REACH_MARGIN)
    reach_min = np.abs(thigh_length - shin_length) * (1.0 + _REACH_MARGIN) + 1e-6
    reach = np.clip(vector_length(target - a), reach_min, reach_max)

    # 1. Bend the knee to the angle that puts the ankle at the reach distance (law of cosines).
    knee_angle_now = _angle_between(a - b, c - b)
    cos_goal = (thigh_length ** 2 + shin_length ** 2 - reach ** 2) / np.maximum(2.0 * thigh_length * shin_length, 1e-12)
    knee_angle_goal = np.arccos(np.clip(cos_goal, -1.0, 1.0))
    bend_axis = cross3(thigh, shin)
    straight_axis = cross3(np.broadcast_to(np.asarray(pole_hint, dtype=float), thigh.shape), thigh)
    bent = vector_length(bend_axis, keepdims=True) > 1e-6 * np.maximum(
        thigh_length * shin_length, 1e-12)[..., None]
    bend_axis = _normalize(np.where(bent, bend_axis, straight_axis))
    knee_turn = quat_from_angle_axis(knee_angle_now - knee_angle_goal, bend_axis)
    bent_ankle = b + quat_mul_vec(knee_turn, shin)

    # 2. Swing the whole leg about the hip so the hip->ankle line points at the target.
    swing = quat_between(bent_ankle - a, target - a)
    new_hip_rot = quat_normalize(quat_mul(swing, hip_rot))
    new_knee_rot = quat_normalize(quat_mul(swing, quat_mul(knee_turn, knee_rot)))
    new_knee_pos = a + quat_mul_vec(swing, thigh)
    new_ankle_pos = a + quat_mul_vec(swing, bent_ankle - a)
    return LegSolution(new_hip_rot, new_knee_rot, new_knee_pos, new_ankle_pos)


def fade_weight(weight, goal, halflife: float, dt: float) -> np.ndarray:
    """Move `weight` toward `goal` (exponential decay of the gap; half of it closed per halflife)."""
    keep = 0.5 ** (dt / max(halflife, 1e-6))
    return goal + (np.asarray(weight, dtype=float) - goal) * keep


class FootLocks(NamedTuple):
    target: np.ndarray  # [..., F, 3] pinned world positions
    weight: np.ndarray  # [..., F] 0 = free, 1 = fully pinned
    active: np.ndarray  # [..., F] bool: pin held (weight fading in) vs released (fading out)


def update_foot_locks(locks: FootLocks, foot_pos, contacts, previous_contacts, threshold: float,
                      fade_halflife: float, release_distance: float, dt: float) -> FootLocks:
    """Advance the pins of F foot joints by one tick.

    A pin starts on the rising edge of a contact, at full weight and at the foot's currently displayed
    position (so the foot does not jump), and holds while the contact stays high; it is never more than
    `release_distance` (horizontally) from the network's foot `foot_pos`. When the contact ends it fades out.
    """
    foot_pos = np.asarray(foot_pos, dtype=float)
    in_contact = np.asarray(contacts) > threshold
    was_in_contact = np.asarray(previous_contacts) > threshold
    displayed = locked_positions(foot_pos, locks)
    rising = in_contact & ~was_in_contact
    target = np.where(rising[..., None], displayed, locks.target)
    # A pin the network's foot has moved away from is dragged along on a leash of `release_distance`
    # (horizontally) rather than dropped: the shown foot then slides only by the excess, slowly, instead
    # of gliding all the way back to the network's foot while the contact is still on.
    offset = target - foot_pos
    offset[..., 1] = 0.0
    distance = vector_length(offset, keepdims=True)
    target = foot_pos + np.where(distance > release_distance, offset * (release_distance / np.maximum(distance, 1e-12)),
                                 offset) + (target - foot_pos - offset)
    active = in_contact & (locks.active | rising)
    # A new pin starts where the foot is shown, so it can take full weight at once without a jump; only
    # the release fades (the shown foot then glides back to the network's foot).
    weight = np.where(rising & active, 1.0, fade_weight(locks.weight, active.astype(float), fade_halflife, dt))
    return FootLocks(target, weight, active)


def locked_positions(foot_pos, locks: FootLocks) -> np.ndarray:
    """The foot positions after pinning: the network's foot pulled toward its pin by the pin weight."""
    foot_pos = np.asarray(foot_pos, dtype=float)
    return foot_pos + locks.weight[..., None] * (locks.target - foot_pos)


def empty_foot_locks(batch_shape: tuple[int, ...], feet: int) -> FootLocks:
    return FootLocks(np.zeros(batch_shape + (feet, 3)), np.zeros(batch_shape + (feet,)),
                     np.zeros(batch_shape + (feet,), dtype=bool))


def foot_targets(ankle_pos, toe_pos, ankle_pin, toe_pin, ankle_weight, toe_weight):
    """Where a rigid foot should go so that its pinned joints are honoured.

    The ankle pin wins; a toe pinned alone (heel off the ground) drags the whole foot with it.
    Returns (ankle_target [..., 3], toe_aim [..., 3]): the point the toe should end at, which the
    caller reaches by turning the foot about the ankle (`foot_rotation_toward`).
    """
    ankle_w = np.asarray(ankle_weight, dtype=float)[..., None]
    toe_w = np.asarray(toe_weight, dtype=float)[..., None]
    shift = ankle_w * (ankle_pin - ankle_pos) + (1.0 - ankle_w) * toe_w * (toe_pin - toe_pos)
    toe_aim = toe_pos + shift + toe_w * (toe_pin - (toe_pos + shift))
    return ankle_pos + shift, toe_aim


def aim_at_reach(center, aim, length) -> np.ndarray:
    """`aim` [..., 3] moved horizontally to lie `length` from `center`, keeping its height when the
    height difference allows: a foot turned toward it puts the toe at exactly that height."""
    offset = aim - center
    rise = np.clip(offset[..., 1], -length, length)
    flat = offset.copy()
    flat[..., 1] = 0.0
    flat = _normalize(flat) * np.sqrt(np.maximum(length ** 2 - rise ** 2, 0.0))[..., None]
    flat[..., 1] = rise
    return center + flat


def foot_rotation_toward(ankle_rot, ankle_pos, toe_pos, toe_aim, weight) -> np.ndarray:
    """Rotate the ankle's global rotation about the ankle so the toe points toward `toe_aim`,
    by `weight` (0 = unchanged); the toe-to-ankle distance is kept."""
    full = quat_between(toe_pos - ankle_pos, toe_aim - ankle_pos)
    angle = 2.0 * np.arctan2(vector_length(full[..., 1:]), full[..., 0])
    partial = quat_from_angle_axis(np.asarray(weight) * angle, full[..., 1:])
    return quat_normalize(quat_mul(partial, ankle_rot))


def reach_foot_goals(positions, rotations, goals, constrained, leg_joints, toe_offsets, foot_lengths,
                     forward, toe_turn=1.0) -> np.ndarray:
    """Global rotations [..., J, 4] after two-bone IK of both legs toward the foot goals; the foot turns
    so a constrained toe reaches its goal.

    positions / rotations: the pose's global joint positions [..., J, 3] and rotations [..., J, 4];
    goals [..., 4, 3] and constrained [..., 4] per contact slot, (foot, toe) of the left then the right
    leg; leg_joints: (hips, knees, ankles, toes) index arrays [2] (`leg_chains`); toe_offsets [2, 3]
    (the toes' offsets from the ankles) and foot_lengths [2]; forward [..., 1, 3]: the knees' pole hint;
    toe_turn (scalar or [..., 2]): how much of the turn toward the toe's aim each foot makes (a partial
    turn along the shortest arc, where blending two aims could swing the toe through the ankle's vertical).
    Only the hip, knee and ankle rotations change; the caller places the joints (forward kinematics).
    """
    rotations = np.array(rotations, dtype=float, copy=True)
    hips, knees, ankles, toes = leg_joints
    weight = np.asarray(constrained, dtype=float)
    ankle_target, toe_aim = foot_targets(positions[..., ankles, :], positions[..., toes, :], goals[..., 0::2, :],
                                         goals[..., 1::2, :], weight[..., 0::2], weight[..., 1::2])
    legs = two_bone_ik(positions[..., hips, :], positions[..., knees, :], positions[..., ankles, :],
                       rotations[..., hips, :], rotations[..., knees, :], ankle_target, forward)
    rotations[..., hips, :], rotations[..., knees, :] = legs.hip_rot, legs.knee_rot
    toe_now = legs.ankle_pos + quat_mul_vec(rotations[..., ankles, :], toe_offsets)
    toe_aim = aim_at_reach(legs.ankle_pos, toe_aim, foot_lengths)
    rotations[..., ankles, :] = foot_rotation_toward(rotations[..., ankles, :], legs.ankle_pos, toe_now, toe_aim,
                                                     np.asarray(toe_turn, dtype=float))
    return rotations
