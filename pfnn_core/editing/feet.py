"""Feet held across the seams: foot contacts that touch a seam (from a quarter second before it to the
end of the transition) stay where they touched down on the ground plane; the correction fades out over
the following swing; legs are solved with `ik.reach_foot_goals`. Everything else is the source clips'
own motion."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from pfnn_core.editing.joins import offset_decay
from pfnn_core.math.easing import smoothstep
from pfnn_core.motion import bvh
from pfnn_core.motion.kinematics import forward_kinematics, local_rotations
from pfnn_core.motion.root import facing_directions
from pfnn_core.runtime.ik import leg_chains, reach_foot_goals
from pfnn_core.skeleton import contact_joint_order, foot_joints

# Feet: contact runs touching [seam - LOCK_BEFORE_S, seam + max(transition, LOCK_AFTER_S)] are pinned
# on the ground plane; after a pinned run the correction fades over the swing (at most RELEASE_MAX_S).
LOCK_BEFORE_S = 0.25
LOCK_AFTER_S = 0.25
RELEASE_MAX_S = 0.5
TOE_RELEASE_S = 0.15


def contact_runs(contact) -> list[tuple[int, int]]:
    """(start, end) frame ranges (end exclusive) where `contact` [F] is True."""
    padded = np.concatenate([[0], np.asarray(contact, np.int8), [0]])
    edges = np.diff(padded)
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist()))


def planted_foot_goals(feet, contacts, windows, fps: float) -> tuple[np.ndarray, np.ndarray]:
    """Where the contact joints go [F, 4, 3] so that the feet stay planted around the seams, and how
    much each toe is aimed at its goal [F, 2] (else the foot keeps the pose's orientation).

    feet [F, 4, 3] and contacts [F, 4] bool in contact-slot order (ankle, toe of the left then the
    right leg); windows: (first, last) frames. A contact run that touches a window is held where it
    touched down on the ground plane (the height stays the motion's own, so heel and toe roll as
    captured). Each leg moves as one rigid foot: its correction is the one holding the planted toe (the
    ankle while only the heel is down); a joint taking over is pinned where it is shown. When the leg's
    last held contact ends, the correction and its velocity decay together (`offset_decay`) over the
    swing to the leg's next contact, at most RELEASE_MAX_S, so the foot leaves the ground smoothly; the
    toe's aim fades over TOE_RELEASE_S."""
    feet = np.asarray(feet, float)
    contacts = np.asarray(contacts, bool)
    frames = len(feet)
    held = np.zeros_like(contacts)
    for k in range(contacts.shape[1]):
        for start, end in contact_runs(contacts[:, k]):
            held[start:end, k] = any(start <= last and end > first for first, last in windows)
    goals, toe_weights = feet.copy(), np.zeros((frames, 2))
    ground = feet[..., [0, 2]]
    longest_release = max(1, int(round(RELEASE_MAX_S * fps)))
    for leg, (ankle, toe) in enumerate(((0, 1), (2, 3))):
        leg_down = contacts[:, ankle] | contacts[:, toe]
        driver = np.where(held[:, toe], toe, np.where(held[:, ankle], ankle, -1))
        correction = np.zeros((frames, 2))
        starts = np.flatnonzero(np.diff(driver, prepend=-1) != 0)
        for start, end in zip(starts, np.append(starts[1:], frames)):
            joint = int(driver[start])
            if joint < 0:
                continue
            # pinned where it is shown (a joint taking over, or the foot still settling from a release)
            pin = ground[start, joint] + (correction[start - 1] if start > 0 else 0.0)
            correction[start:end] = pin - ground[start:end, joint]
            toe_weights[start:end, leg] = 1.0
            if end < frames and driver[end] < 0:
                later = np.flatnonzero(leg_down[end:])
                duration = min(max(int(later[0]) if len(later) else frames - end, 1), longest_release) + 1
                velocity = (correction[end - 1] - correction[end - 2]) * fps if end >= 2 else np.zeros(2)
                elapsed = np.arange(1, min(duration, frames - end) + 1) / fps
                correction[end:end + len(elapsed)] = offset_decay(correction[end - 1], velocity, elapsed, duration / fps)
                toe_weights[end:end + len(elapsed), leg] = np.where(
                    elapsed < duration / fps, 1.0 - smoothstep(0.0, TOE_RELEASE_S, elapsed), 0.0)
        goals[:, [ankle, toe], 0] += correction[:, None, 0]
        goals[:, [ankle, toe], 2] += correction[:, None, 1]
    return goals, toe_weights


def plant_feet(motion: bvh.Motion, feet, contacts, seam_frames, transition_seconds: float) -> bvh.Motion:
    """The motion with its contact joints taken to `feet` [F, 4, 3] (the transitioned source feet) and
    the contacts touching the seams held in place (`planted_foot_goals`; leg IK, `ik.reach_foot_goals`)."""
    fps = motion.fps
    parents = np.asarray(motion.parents)
    contact_joints = contact_joint_order(foot_joints(motion.names, parents))
    after = int(round(max(transition_seconds, LOCK_AFTER_S) * fps))
    windows = [(seam - int(round(LOCK_BEFORE_S * fps)), seam + after) for seam in seam_frames]
    goals, toe_weights = planted_foot_goals(feet, contacts, windows, fps)
    global_rot, global_pos = forward_kinematics(motion.rotations, motion.positions, parents)
    # Ankles go to their goals; toes are aimed only as much as the planting asks (the transitioned ankle
    # and toe goals of a swinging foot need not be a foot length apart).
    constrained = np.abs(goals - global_pos[:, contact_joints]).max(axis=-1) > 1e-6
    constrained[:, 1::2] = toe_weights > 0
    frames = np.flatnonzero(constrained.any(axis=-1))
    if len(frames) == 0:
        return motion
    legs = leg_chains(motion.names, parents)
    leg_joints = tuple(np.array(joints) for joints in zip(*legs))  # hips, knees, ankles, toes
    facing = facing_directions(global_pos, motion.names, parents, motion.frame_time)[frames]
    forward = np.stack([facing[:, 0], np.zeros(len(frames)), facing[:, 1]], axis=-1)[:, None]
    toe_offsets = motion.offsets[leg_joints[3]]
    solved = reach_foot_goals(global_pos[frames], global_rot[frames], goals[frames], constrained[frames], leg_joints,
                              toe_offsets, np.linalg.norm(toe_offsets, axis=-1), forward, toe_weights[frames])
    rotations = motion.rotations.copy()
    changed = np.concatenate(leg_joints[:3])
    rotations[np.ix_(frames, changed)] = local_rotations(solved, parents)[:, changed]
    return replace(motion, rotations=rotations)
