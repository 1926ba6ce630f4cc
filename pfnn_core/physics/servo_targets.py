"""The servo targets of a tick, compiled (`PhysicsTracker.targets` and `_tick_targets` call these).

Each ball joint's target is its local rotation measured from its reference (`joint_targets`). Along the
tick's substeps every target and the hips' rotation go from last tick's to this tick's by a normalised
linear interpolation (as exact as a slerp for the few degrees a joint turns in one tick, and cheaper),
and each joint's damping is fed the target's angular velocity: the rotation vector from last tick's
target to this one's, over the tick (`substep_targets`). The arithmetic is that of `quat.py`'s term-form
products (`quat_mul_terms`) and `quat_to_expmap`, term by term in the same order (numpy adds a few
numbers one after another), so the results equal the numpy forms' to the bit but where numpy's arctan2
and the C library's differ in the last bit (the damping's feed-forward, 1 element in 60).
"""
from __future__ import annotations

import math

from pfnn_core.math.mat3 import njit

_EXPMAP_EPS = 1e-8  # `quat.quat_to_expmap`'s eps


@njit
def _expmap(w, x, y, z):
    """`quat.quat_to_expmap` of one quaternion: the rotation vector (axis times angle in [0, pi])."""
    if w < 0.0:
        w, x, y, z = -w, -x, -y, -z
    sin_half = math.sqrt(x * x + y * y + z * z)
    angle = 2.0 * math.atan2(sin_half, w)
    scale = angle / max(sin_half, _EXPMAP_EPS) if sin_half > _EXPMAP_EPS else 2.0 / max(w, _EXPMAP_EPS)
    return x * scale, y * scale, z * scale


@njit
def _inverse_times(a, b, index):
    """conj(a[index]) b[index] (4-vectors), the terms of `quat.quat_mul_terms(quat.inverse_terms(a), b)`."""
    return _inverse_times_of(a[index], b[index])


@njit
def _inverse_times_rows(rot, first, second):
    """conj(rot[first]) rot[second]."""
    return _inverse_times_of(rot[first], rot[second])


@njit
def _inverse_times_of(a, b):
    a0, a1, a2, a3 = a[0], a[1], a[2], a[3]
    b0, b1, b2, b3 = b[0], b[1], b[2], b[3]
    return (a0 * b0 + a1 * b1 + a2 * b2 + a3 * b3, a0 * b1 - a1 * b0 - a2 * b3 + a3 * b2,
            a0 * b2 + a1 * b3 - a2 * b0 - a3 * b1, a0 * b3 - a1 * b2 + a2 * b1 - a3 * b0)


@njit
def _times_inverse(a, b):
    """a conj(b) (4-vectors), the terms of `quat.quat_mul_terms(quat.signed_terms(a), quat.quat_inv(b))`."""
    a0, a1, a2, a3 = a[0], a[1], a[2], a[3]
    b0, b1, b2, b3 = b[0], -b[1], -b[2], -b[3]
    return (a0 * b0 - a1 * b1 - a2 * b2 - a3 * b3, a0 * b1 + a1 * b0 + a2 * b3 - a3 * b2,
            a0 * b2 - a1 * b3 + a2 * b0 + a3 * b1, a0 * b3 + a1 * b2 - a2 * b1 + a3 * b0)


@njit
def _nlerp_into(out, start, end, share):
    """The normalised linear interpolation of two 4-vectors at `share` (the end flipped into the start's
    hemisphere), written into `out` [4]."""
    dot = start[0] * end[0] + start[1] * end[1] + start[2] * end[2] + start[3] * end[3]
    sign = -1.0 if dot < 0.0 else 1.0
    q0 = start[0] + share * (sign * end[0] - start[0])
    q1 = start[1] + share * (sign * end[1] - start[1])
    q2 = start[2] + share * (sign * end[2] - start[2])
    q3 = start[3] + share * (sign * end[3] - start[3])
    norm = max(math.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3), 1e-12)
    out[0], out[1], out[2], out[3] = q0 / norm, q1 / norm, q2 / norm, q3 / norm


@njit
def substep_targets(last_targets, targets, last_rot, now_rot, order, gains, dt, springs, rotations, feed, turn):
    """For B characters and N ball joints: last tick's and this tick's targets [B, N, 4] and hips
    rotations [B, 4], the joints in MuJoCo's order `order` [N] and each servo's damping `gains` [B, N];
    writes each substep's spring rotations `springs` [B, n, 4N] (MuJoCo's order) and hips rotation
    `rotations` [B, n, 4], the damping's feed-forward `feed` [B, 3N] (the gain times the target's
    angular velocity, MuJoCo's order) and the hips' turn over the tick `turn` [B, 3] (a rotation vector,
    world)."""
    substeps = springs.shape[1]
    for b in range(targets.shape[0]):
        for slot in range(order.shape[0]):
            joint = order[slot]
            last, now = last_targets[b, joint], targets[b, joint]
            for k in range(substeps):
                _nlerp_into(springs[b, k, 4 * slot:4 * slot + 4], last, now, (k + 1) / substeps)
            w, x, y, z = _inverse_times(last_targets[b], targets[b], joint)
            spin = _expmap(w, x, y, z)
            gain = gains[b, joint]
            for c in range(3):
                feed[b, 3 * slot + c] = gain * (spin[c] / dt)
        for k in range(substeps):
            _nlerp_into(rotations[b, k], last_rot[b], now_rot[b], (k + 1) / substeps)
        w, x, y, z = _times_inverse(now_rot[b], last_rot[b])
        norm = max(math.sqrt(w * w + x * x + y * y + z * z), 1e-12)
        turn[b, 0], turn[b, 1], turn[b, 2] = _expmap(w / norm, x / norm, y / norm, z / norm)


@njit
def joint_targets(world_rot, parents, joints, inverse_reference, out):
    """`out` [B, N, 4]: each ball joint's servo target, its local rotation (the parent's global one
    inverted times its own, `world_rot` [B, J, 4]) measured from its reference (`inverse_reference`
    [N, 4] times it), normalised; as `PhysicsTracker.targets` in numpy, term by term."""
    for b in range(world_rot.shape[0]):
        rot = world_rot[b]
        for n in range(joints.shape[0]):
            w, x, y, z = _inverse_times_rows(rot, parents[n], joints[n])
            r0, r1, r2, r3 = inverse_reference[n, 0], inverse_reference[n, 1], inverse_reference[n, 2], inverse_reference[n, 3]
            q0 = r0 * w - r1 * x - r2 * y - r3 * z
            q1 = r0 * x + r1 * w + r2 * z - r3 * y
            q2 = r0 * y - r1 * z + r2 * w + r3 * x
            q3 = r0 * z + r1 * y - r2 * x + r3 * w
            norm = max(math.sqrt(q0 * q0 + q1 * q1 + q2 * q2 + q3 * q3), 1e-12)
            out[b, n, 0], out[b, n, 1], out[b, n, 2], out[b, n, 3] = q0 / norm, q1 / norm, q2 / norm, q3 / norm


@njit
def hold_targets(qpos, qvel, positions, rotations, push, root_kp, dt, move, turn, hold):
    """`hold` [n, 6]: the hold's force (world) and torque (the hips' frame, without the spin's damping
    term) on the free joint for each of a tick's n substeps, toward the hips' target `positions` [n, 3]
    and `rotations` [n, 4] from where the hips will be then (now, `qpos`, plus their velocity `qvel`
    times the substep's time from the tick's start; `move`, `turn`: the free joint's first translation
    and rotation dof), plus `push` (the damping times the target's velocity); as numpy did it in
    `PhysicsTracker._substeps`, term by term."""
    substeps = positions.shape[0]
    hips = (qpos[3], qpos[4], qpos[5], qpos[6])
    for k in range(substeps):
        ahead = dt * k / substeps
        for c in range(3):
            hold[k, c] = root_kp[c] * (positions[k, c] - qpos[c] - ahead * qvel[move + c]) + push[c]
        w, x, y, z = _inverse_times_of(hips, rotations[k])
        spin = _expmap(w, x, y, z)
        for c in range(3):
            hold[k, 3 + c] = root_kp[3 + c] * (spin[c] - ahead * qvel[turn + c])
