"""Playing database frames with inertialized transitions [MM], as one compiled kernel over the batch.

At a switch from the frame playing (source) to a found frame (destination) the difference between the
two is kept as an offset on the destination and decays to nothing, so the shown pose is continuous at
the switch and becomes the destination's [Bollo 2016, Holden's demo]: per joint a rotation offset
(a rotation vector, applied as exp(offset) * rotation in the root frame) and its angular velocity,
for the hips their position and velocity, for the root its motion (vx, vz, yaw rate). Offsets decay
as a critically damped spring at rest toward zero: after one half-life half of an offset is left
(`runtime.trajectory.spring_rate`, the same rate as the command springs).

The kernel then writes the model's answer in the feature contract's output layout (all but the future
trajectory, `matching.answered_future`): the pose by forward kinematics from the hips, 6D rotations,
velocities as the change from the pose shown last tick, the root motion, contacts, phase change.
"""
from __future__ import annotations

import math

import numpy as np

from pfnn_core.math import mat3
from pfnn_core.math.mat3 import njit
from pfnn_core.math.springs import decay_offset
from pfnn_core.runtime.trajectory import spring_rate

# Where each block of the output layout starts (`output_starts`), in this order.
OUTPUT_BLOCKS = ("root_vel", "root_yaw_rate", "dphase", "contacts", "future_pos", "future_dir", "joint_pos",
                 "joint_vel", "joint_rot")
CURRENT, CURRENT_NEXT, FOUND, FOUND_NEXT = 0, 1, 2, 3  # the four rows gathered per character


def output_starts(y_layout) -> np.ndarray:
    return np.array([y_layout.slice(name).start for name in OUTPUT_BLOCKS], dtype=np.int64)


# ---- quaternions as (w, x, y, z) tuples ------------------------------------------------------------

@njit
def quat_mul(a, b):
    return (a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3],
            a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2],
            a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1],
            a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0])


@njit
def quat_conj(q):
    return (q[0], -q[1], -q[2], -q[3])


@njit
def quat_to_rotation_vector(q):
    """The rotation vector (axis x angle, angle in [0, pi]) of a unit quaternion."""
    if q[0] < 0.0:
        q = (-q[0], -q[1], -q[2], -q[3])
    sine = math.sqrt(q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    if sine < 1e-12:
        return (2.0 * q[1], 2.0 * q[2], 2.0 * q[3])
    angle = 2.0 * math.atan2(sine, q[0])
    return (q[1] * angle / sine, q[2] * angle / sine, q[3] * angle / sine)


@njit
def quat_from_rotation_vector(v):
    angle = math.sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2])
    if angle < 1e-12:
        return (1.0, 0.5 * v[0], 0.5 * v[1], 0.5 * v[2])
    factor = math.sin(0.5 * angle) / angle
    return (math.cos(0.5 * angle), v[0] * factor, v[1] * factor, v[2] * factor)


@njit
def quat_nlerp(a, b, t):
    """Normalised linear interpolation the short way round."""
    if a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] < 0.0:
        b = (-b[0], -b[1], -b[2], -b[3])
    q = (a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]), a[2] + t * (b[2] - a[2]), a[3] + t * (b[3] - a[3]))
    norm = math.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
    return (q[0] / norm, q[1] / norm, q[2] / norm, q[3] / norm)


@njit
def _load_quat(rotations, b, slot, joint):
    return (rotations[b, slot, joint, 0], rotations[b, slot, joint, 1], rotations[b, slot, joint, 2],
            rotations[b, slot, joint, 3])


# ---- the kernel --------------------------------------------------------------------------------

@njit
def _switch_offsets(b, rotations, hips, motion, frac, row_dt, rot_off, rot_vel, hips_off, hips_vel, root_off):
    """A switch from the current rows (at `frac`) to the found rows: every offset grows by the source's
    value less the destination's, so that destination + offset equals what was shown."""
    for j in range(rotations.shape[2]):
        source_a, source_b = _load_quat(rotations, b, CURRENT, j), _load_quat(rotations, b, CURRENT_NEXT, j)
        found_a, found_b = _load_quat(rotations, b, FOUND, j), _load_quat(rotations, b, FOUND_NEXT, j)
        source = quat_nlerp(source_a, source_b, frac)
        offset = quat_from_rotation_vector((rot_off[b, j, 0], rot_off[b, j, 1], rot_off[b, j, 2]))
        moved = quat_to_rotation_vector(quat_mul(quat_mul(offset, source), quat_conj(found_a)))
        source_w = quat_to_rotation_vector(quat_mul(source_b, quat_conj(source_a)))
        found_w = quat_to_rotation_vector(quat_mul(found_b, quat_conj(found_a)))
        for k in range(3):
            rot_off[b, j, k] = moved[k]
            rot_vel[b, j, k] += (source_w[k] - found_w[k]) / row_dt
    for k in range(3):
        source_h = hips[b, CURRENT, k] + frac * (hips[b, CURRENT_NEXT, k] - hips[b, CURRENT, k])
        hips_off[b, k] += source_h - hips[b, FOUND, k]
        hips_vel[b, k] += (hips[b, CURRENT_NEXT, k] - hips[b, CURRENT, k]
                           - hips[b, FOUND_NEXT, k] + hips[b, FOUND, k]) / row_dt
        source_m = motion[b, CURRENT, k] + frac * (motion[b, CURRENT_NEXT, k] - motion[b, CURRENT, k])
        root_off[b, k] += source_m - motion[b, FOUND, k]


@njit
def _decay_all(b, rate, dt, rot_off, rot_vel, hips_off, hips_vel, root_off, root_vel):
    for j in range(rot_off.shape[1]):
        for k in range(3):
            rot_off[b, j, k], rot_vel[b, j, k] = decay_offset(rot_off[b, j, k], rot_vel[b, j, k], rate, dt)
    for k in range(3):
        hips_off[b, k], hips_vel[b, k] = decay_offset(hips_off[b, k], hips_vel[b, k], rate, dt)
        root_off[b, k], root_vel[b, k] = decay_offset(root_off[b, k], root_vel[b, k], rate, dt)


@njit
def _pose(b, rotations, hips, first, second, frac, rot_off, hips_off, parents, bone_offsets, anchor, down_order,
          above_anchor, starts, y, out_pos):
    """The shown pose: rotations and hips of the playing rows at `frac` with their offsets, positions by
    forward kinematics from the hips (joints above them stay at the root)."""
    joints = rotations.shape[2]
    matrices = np.empty((joints, 9))
    rot_start = starts[8]
    for j in range(joints):
        q = quat_nlerp(_load_quat(rotations, b, first, j), _load_quat(rotations, b, second, j), frac)
        q = quat_mul(quat_from_rotation_vector((rot_off[b, j, 0], rot_off[b, j, 1], rot_off[b, j, 2])), q)
        m = mat3.matrix_from_quat(q[0], q[1], q[2], q[3])
        for k in range(9):
            matrices[j, k] = m[k]
        column = rot_start + 6 * j
        y[b, column], y[b, column + 1], y[b, column + 2] = m[0], m[3], m[6]
        y[b, column + 3], y[b, column + 4], y[b, column + 5] = m[1], m[4], m[7]
    for k in range(above_anchor.shape[0]):
        out_pos[b, above_anchor[k], 0], out_pos[b, above_anchor[k], 1], out_pos[b, above_anchor[k], 2] = 0.0, 0.0, 0.0
    for k in range(3):
        out_pos[b, anchor, k] = hips[b, first, k] + frac * (hips[b, second, k] - hips[b, first, k]) + hips_off[b, k]
    for k in range(down_order.shape[0]):
        joint = down_order[k]
        parent = parents[joint]
        if parent < 0:
            continue
        m = (matrices[parent, 0], matrices[parent, 1], matrices[parent, 2], matrices[parent, 3], matrices[parent, 4],
             matrices[parent, 5], matrices[parent, 6], matrices[parent, 7], matrices[parent, 8])
        bone = mat3.mat_vec(m, mat3.load3(bone_offsets, joint))
        mat3.store3(out_pos[b], joint, mat3.add(mat3.load3(out_pos[b], parent), bone))


@njit
def play_kernel(rotations, hips, motion, contacts, phase, frac, switch, row_dt, frame_step, halflife, dt,
                rot_off, rot_vel, hips_off, hips_vel, root_off, root_vel, last_pos, last_root, has_last,
                parents, bone_offsets, anchor, down_order, above_anchor, starts, y, out_pos, out_root):
    """Per character: the offsets' decay over dt, a switch's offsets (`switch`), then the output row y[b]
    from the playing rows (the found ones after a switch, at 0, else the current ones at `frac`).
    Gathered rows per character (`rotations` [B, 4, J, 4] etc.): current, its next, found, its next."""
    rate = spring_rate(halflife)
    for b in range(y.shape[0]):
        t = frac[b]
        first, second = CURRENT, CURRENT_NEXT
        # decay first: a switch starts from what this tick shows without it (the source at `frac` with its
        # offsets decayed), so the switch tick shows exactly that and the velocity carries on; decayed
        # after the switch, the offset's velocity moved the pose once more (a one-tick velocity spike)
        _decay_all(b, rate, dt, rot_off, rot_vel, hips_off, hips_vel, root_off, root_vel)
        if switch[b]:
            _switch_offsets(b, rotations, hips, motion, t, row_dt, rot_off, rot_vel, hips_off, hips_vel, root_off)
            first, second, t = FOUND, FOUND_NEXT, 0.0
        _pose(b, rotations, hips, first, second, t, rot_off, hips_off, parents, bone_offsets, anchor, down_order,
              above_anchor, starts, y, out_pos)
        for k in range(3):
            out_root[b, k] = motion[b, first, k] + t * (motion[b, second, k] - motion[b, first, k]) + root_off[b, k]
        y[b, starts[0]], y[b, starts[0] + 1], y[b, starts[1]] = out_root[b, 0], out_root[b, 1], out_root[b, 2]
        y[b, starts[2]] = min(((phase[b, second] - phase[b, first]) % 1.0) / frame_step, 0.5)
        for k in range(4):
            y[b, starts[3] + k] = contacts[b, first, k] + t * (contacts[b, second, k] - contacts[b, first, k])
        # velocities: the change from last tick's pose carried into this root frame by last tick's root motion
        turn = mat3.yaw_matrix(-last_root[b, 2] * dt)
        shift = (last_root[b, 0] * dt, 0.0, last_root[b, 1] * dt)
        vel_start, pos_start = starts[7], starts[6]
        for j in range(out_pos.shape[1]):
            now = mat3.load3(out_pos[b], j)
            carried = mat3.mat_vec(turn, mat3.sub(mat3.load3(last_pos[b], j), shift))
            velocity = mat3.scale(mat3.sub(now, carried), 1.0 / dt) if has_last[b] else (0.0, 0.0, 0.0)
            for k in range(3):
                y[b, pos_start + 3 * j + k] = now[k]
                y[b, vel_start + 3 * j + k] = velocity[k]
