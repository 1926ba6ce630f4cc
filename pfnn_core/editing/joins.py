"""Joining the pieces: pose sequences, the alignment of each incoming piece onto the outgoing one, the
transitions (inertialization, crossfade) and the spliced sequence of all pieces.

A join between piece i (outgoing) and piece i+1 (incoming) pairs the outgoing piece's last frame with
the incoming piece's first frame: they are the same instant (the twin frame). The incoming piece is
turned about +Y and moved on the ground so that its control root (`root_frames`: hips on the
ground, facing) at that frame sits where the outgoing root is, and the sequence goes on with the
incoming piece's next frame, so the step across the seam is the incoming clip's own step.

Transitions, over ``seconds`` of output time after the seam:
- inertialize [Holden's and Bollo's inertialization]: the pose difference at the seam (local rotations
  as rotation vectors, the hips' world rotation and position, the feet) and its velocity decay as a
  critically damped spring, windowed by a smoothstep that closes exactly at ``seconds``; the incoming
  motion is untouched from then on. When the incoming piece is faster, the root's ground velocity
  offset decays instead of its position (catching up would overshoot the incoming speed), and the
  incoming piece goes on from where the root got to (one constant ground shift);
- crossfade: the outgoing piece runs on past its cut and is blended into the incoming one (slerp of
  local rotations, lerp of translations) with smoothstep weights over ``seconds``; speeding up, the
  root moves by the blend of the two velocities, again leaving one ground shift.

A pose sequence here is (rotations [F, J + 4, 4], translations [F, J + 4, 3]): local values for every
joint except the placement joint (the hips), which holds its WORLD rotation and position, so that one
rigid turn-and-move of the ground plane acts on that joint alone; the last 4 entries are the contact
joints' world positions (ankles and toes), transitioned like the rest to be the legs' IK goals.
"""
from __future__ import annotations

import numpy as np

from pfnn_core.editing.clips import PreparedClip
from pfnn_core.editing.document import EditList
from pfnn_core.math.easing import smoothstep
from pfnn_core.math.planar import rotate_xz
from pfnn_core.math.quat import (
    quat_abs,
    quat_from_expmap,
    quat_from_yaw,
    quat_inv,
    quat_inv_mul,
    quat_inv_mul_vec,
    quat_mul,
    quat_mul_vec,
    quat_normalize,
    quat_slerp,
    quat_to_expmap,
)
from pfnn_core.motion import bvh
from pfnn_core.motion.kinematics import forward_kinematics
from pfnn_core.skeleton import ancestors, hips_joint

# Inertialization spring: decay rate SPRING_RATE / seconds, so a gap closes to ~2% by the end of the
# transition before the window takes it to exactly zero (0.3 s: the gap halves in ~0.08 s).
SPRING_RATE = 6.0
FEET = 4  # contact joints: ankle and toe of each leg


def placement_joint(motion: bvh.Motion) -> int:
    """The joint that carries the motion through the world: the hips, when every joint above them
    keeps one local transform for the whole clip (a 'joint_Root' dummy), else the root."""
    parents = np.asarray(motion.parents)
    hips = hips_joint(motion.names, parents)
    still = all(np.ptp(motion.rotations[:, j], axis=0).max() < 1e-9 and np.ptp(motion.positions[:, j], axis=0).max() < 1e-9
                for j in ancestors(parents, hips))
    return hips if still else int(np.flatnonzero(parents < 0)[0])


def clip_pose(clip: PreparedClip, placement: int) -> tuple[np.ndarray, np.ndarray]:
    """The clip's pose sequence, with the world positions of its 4 contact joints appended as extra
    translations (identity rotations): the transitions carry the feet along, as the legs' IK goals."""
    frames, joints = clip.motion.rotations.shape[:2]
    feet = len(clip.labels.contact_joints)
    rotations = np.zeros((frames, joints + feet, 4))
    rotations[..., 0] = 1.0
    rotations[:, :joints] = clip.motion.rotations
    rotations[:, placement] = clip.labels.global_rotations[:, placement]
    translations = np.concatenate([clip.motion.positions, clip.labels.global_positions[:, clip.labels.contact_joints]], axis=1)
    translations[:, placement] = clip.labels.global_positions[:, placement]
    return rotations, translations


def _turn_about_y(yaw: float, move_xz, rotations, translations, placement: int):
    """The pose sequence turned by `yaw` about +Y through the origin, then moved by (x, z)."""
    turn = quat_from_yaw(yaw)
    world = _world_entries(placement, rotations.shape[1])
    rotations, translations = rotations.copy(), translations.copy()
    rotations[:, placement] = quat_mul(turn, rotations[:, placement])
    translations[:, world] = quat_mul_vec(turn, translations[:, world]) + [move_xz[0], 0.0, move_xz[1]]
    return rotations, translations


def _root_at(clip: PreparedClip, frame: int) -> tuple[np.ndarray, float]:
    return clip.labels.root_xz[frame], float(clip.labels.root_yaw[frame])


def alignment(out_root_xz, out_yaw: float, in_root_xz, in_yaw: float) -> tuple[float, np.ndarray]:
    """(yaw, move (x, z)) that puts the incoming root (position on the ground, facing) on the outgoing one."""
    yaw = out_yaw - in_yaw
    return yaw, np.asarray(out_root_xz, float) - rotate_xz(yaw, np.asarray(in_root_xz, float))


def _step_before(rotations, translations, frame: int):
    """The pose one frame before `frame`: the real one, or extrapolated from the next step at frame 0."""
    if frame > 0:
        return rotations[frame - 1], translations[frame - 1]
    if len(rotations) < 2:
        return rotations[0], translations[0]
    step = quat_mul(rotations[1], quat_inv(rotations[0]))
    return quat_mul(quat_inv(step), rotations[0]), 2.0 * translations[0] - translations[1]


def _frames_after(rotations, translations, frame: int, count: int, placement: int):
    """`count` poses after `frame`; past the clip's end the last pose holds and glides on the ground at
    the root's last velocity."""
    last = len(rotations) - 1
    index = np.arange(frame + 1, frame + 1 + count)
    beyond = np.maximum(index - last, 0)
    step = translations[last, placement, [0, 2]] - translations[last - 1, placement, [0, 2]] if last > 0 else np.zeros(2)
    held = translations[np.minimum(index, last)]
    return rotations[np.minimum(index, last)], _move_on_ground(held, _world_entries(placement, held.shape[1]),
                                                                beyond[:, None] * step)


def offset_decay(offset, velocity, times, seconds: float) -> np.ndarray:
    """An offset [..., D] with velocity [..., D] at the seam, at `times` [T] after it: [T, ..., D].

    A critically damped spring (rate SPRING_RATE / seconds) toward zero, times a smoothstep window that
    is 1 with zero slope at the seam and 0 with zero slope at `seconds`: position and velocity are
    continuous at the seam and the offset is exactly zero from `seconds` on."""
    rate = SPRING_RATE / seconds
    t = np.asarray(times, float).reshape((-1,) + (1,) * np.ndim(offset))
    spring = np.exp(-rate * t) * (offset + (velocity + rate * offset) * t)
    return spring * (1.0 - smoothstep(0.0, seconds, t))


def _world_entries(placement: int, entries: int) -> list[int]:
    """The entries of a pose sequence that hold world values: the placement joint and the feet."""
    return [placement] + list(range(entries - FEET, entries))


def _move_on_ground(translations, entries, shift) -> np.ndarray:
    """`translations` [T, E, 3] with the world `entries` moved by `shift` [T, 2] (x, z)."""
    translations = translations.copy()
    translations[:, entries, 0] += shift[:, None, 0]
    translations[:, entries, 2] += shift[:, None, 1]
    return translations


def inertialize(out_prev, out_last, in_prev, in_twin, in_after, dt: float, seconds: float, placement: int):
    """The incoming frames `in_after` (rotations [T, E, 4], translations [T, E, 3]) with the difference
    to the outgoing motion decaying over `seconds` (Holden's inertialization); returns them and the
    ground shift (x, z) the root keeps after the transition.

    out_prev / out_last: the last two output poses; in_prev / in_twin: the incoming poses at the same
    two instants (each a (rotations [E, 4], translations [E, 3]) pair). The offsets of the local
    rotations (as rotation vectors) and of the translations (the hips' world position and the feet)
    decay with their velocities (`offset_decay`). The root's ground velocity: slowing down, its offset
    decays with the position, so the body falls back onto the incoming path (and over its planted
    feet); speeding up, catching up would overshoot the incoming speed, so only the velocity offset
    decays and the incoming piece goes on from where the body has got to (a constant ground shift)."""
    def angular_velocity(earlier, later):
        return quat_to_expmap(quat_abs(quat_mul(later, quat_inv(earlier)))) / dt

    world = _world_entries(placement, len(in_twin[1]))
    rotation_offset = quat_to_expmap(quat_abs(quat_mul(out_last[0], quat_inv(in_twin[0]))))
    rotation_velocity = angular_velocity(out_prev[0], out_last[0]) - angular_velocity(in_prev[0], in_twin[0])
    translation_offset = out_last[1] - in_twin[1]
    translation_velocity = (out_last[1] - out_prev[1] - (in_twin[1] - in_prev[1])) / dt
    times = dt * np.arange(1, len(in_after[0]) + 1)
    shift = np.zeros((len(times), 2))
    out_speed = np.linalg.norm((out_last[1] - out_prev[1])[placement, [0, 2]])
    in_speed = np.linalg.norm((in_twin[1] - in_prev[1])[placement, [0, 2]])
    if in_speed > out_speed:
        root_velocity = translation_velocity[placement, [0, 2]].copy()
        translation_velocity[np.ix_(world, [0, 2])] -= root_velocity  # the feet: relative to the root
        shift = np.cumsum(offset_decay(root_velocity, np.zeros(2), times, seconds), axis=0) * dt
    rotation = quat_from_expmap(offset_decay(rotation_offset, rotation_velocity, times, seconds))
    rotations = quat_normalize(quat_mul(rotation, in_after[0]))
    translations = in_after[1] + offset_decay(translation_offset, translation_velocity, times, seconds)
    return rotations, _move_on_ground(translations, world, shift), shift[-1]


def crossfade(out_after, in_after, twin_root, blend_frames: int, placement: int):
    """The first `blend_frames` incoming frames blended from the outgoing piece's continuation (slerp of
    rotations, lerp of translations, smoothstep weights reaching 1 one frame after the blend); returns
    them and the ground shift (x, z) of the root at the end.

    out_after / in_after: the frames after the twin (out_after: blend_frames + 1 of them); twin_root:
    the root's (x, z) at the twin. The root moves on the ground by the blend of the two velocities
    (lerping the positions of two diverging paths would bump its speed); the incoming piece goes on
    from where that leaves it."""
    rotations, translations = in_after[0].copy(), in_after[1].copy()
    n = min(blend_frames, len(rotations))
    weight = smoothstep(0.0, blend_frames + 1, np.arange(1, n + 1))
    rotations[:n] = quat_slerp(out_after[0][:n], in_after[0][:n], weight[:, None])
    translations[:n] = out_after[1][:n] + weight[:, None, None] * (in_after[1][:n] - out_after[1][:n])
    count = min(n + 1, len(rotations))
    weight = smoothstep(0.0, blend_frames + 1, np.arange(1, count + 1))[:, None]
    out_root = np.concatenate([[twin_root], out_after[1][:count, placement, [0, 2]]])
    in_root = np.concatenate([[twin_root], in_after[1][:count, placement, [0, 2]]])
    path = twin_root + np.cumsum((1.0 - weight) * np.diff(out_root, axis=0) + weight * np.diff(in_root, axis=0), axis=0)
    shift = path - ((1.0 - weight) * out_root[1:] + weight * in_root[1:])
    if np.linalg.norm(in_root[1] - in_root[0]) <= np.linalg.norm(out_root[1] - out_root[0]):
        shift[:] = 0.0  # slowing down: the positions' blend falls back onto the incoming path, over the planted feet
    shift = np.concatenate([shift, np.repeat(shift[-1:], len(rotations) - count, axis=0)])
    return rotations, _move_on_ground(translations, _world_entries(placement, translations.shape[1]), shift), shift[-1]


def splice(edit: EditList, clips: list[PreparedClip], frames, placement: int):
    """Aligned, transitioned pose sequence of all pieces: (rotations, translations, feet [F, 4, 3], contacts,
    output frame of each piece's first frame, output frame of each seam)."""
    dt = 1.0 / edit.fps
    blend_frames = int(round(edit.transition_seconds * edit.fps))
    rotations, translations, contacts, starts, seams = [], [], [], [], []
    out_yaw, out_move, count = 0.0, np.zeros(2), 0
    for index, (clip, (first, last)) in enumerate(zip(clips, frames)):
        pose = clip_pose(clip, placement)
        if index == 0:
            rotations.append(pose[0][first:last + 1])
            translations.append(pose[1][first:last + 1])
            contacts.append(clip.labels.contacts[first:last + 1])
            starts.append(0)
            count = last - first + 1
        else:
            previous_clip, previous_last = clips[index - 1], frames[index - 1][1]
            root_xz, yaw = _root_at(previous_clip, previous_last)
            world_xz = rotate_xz(out_yaw, root_xz) + out_move
            in_xz, in_yaw = _root_at(clip, first)
            yaw_in, move_in = alignment(world_xz, yaw + out_yaw, in_xz, in_yaw)
            pose = _turn_about_y(yaw_in, move_in, *pose, placement)
            after = (pose[0][first + 1:last + 1], pose[1][first + 1:last + 1])
            if edit.transition_kind == "inertialize":
                out_last = (rotations[-1][-1], translations[-1][-1])
                out_prev = (rotations[-1][-2], translations[-1][-2]) if len(rotations[-1]) > 1 else \
                    (rotations[-2][-1], translations[-2][-1])
                segment = inertialize(out_prev, out_last, _step_before(*pose, first), (pose[0][first], pose[1][first]),
                                      after, dt, edit.transition_seconds, placement)
            else:
                previous_pose = _turn_about_y(out_yaw, out_move, *clip_pose(previous_clip, placement), placement)
                segment = crossfade(_frames_after(*previous_pose, previous_last, blend_frames + 1, placement), after,
                                    pose[1][first, placement, [0, 2]], blend_frames, placement)
            rotations.append(segment[0])
            translations.append(segment[1])
            contacts.append(clip.labels.contacts[first + 1:last + 1])
            starts.append(count - 1)  # the twin frame stands for the piece's first frame
            seams.append(count)
            count += last - first
            out_yaw, out_move = yaw_in, move_in + segment[2]
    rotations, translations = np.concatenate(rotations), np.concatenate(translations)
    joints = rotations.shape[1] - FEET
    return (rotations[:, :joints], translations[:, :joints], translations[:, joints:],
            np.concatenate(contacts).astype(bool), starts, seams)


def to_local(reference: bvh.Motion, rotations, translations, placement: int):
    """Placement joint back from world to local values under the reference's still joints above it."""
    parents = np.asarray(reference.parents)
    rotations, translations = rotations.copy(), translations.copy()
    above = list(ancestors(parents, placement))
    rotations[:, above] = reference.rotations[0, above]
    translations[:, above] = reference.positions[0, above]
    if above:
        parent_rot, parent_pos = forward_kinematics(reference.rotations[0], reference.positions[0], parents)
        parent = int(parents[placement])
        rotations[:, placement] = quat_inv_mul(parent_rot[parent], rotations[:, placement])
        translations[:, placement] = quat_inv_mul_vec(parent_rot[parent], translations[:, placement] - parent_pos[parent])
    return quat_normalize(rotations), translations
