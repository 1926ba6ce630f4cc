"""Skeleton kinematics over whole motions: forward kinematics, resampling and left/right mirroring.

Arrays follow ``quat.py``'s conventions. Joints are in BVH order, so every parent comes before its
children. ``resample`` and ``mirror`` return new ``bvh.Motion`` objects and never modify their input.
"""
from __future__ import annotations

import dataclasses
import re

import numpy as np

from .quat import quat_mul, quat_mul_vec, quat_slerp


def forward_kinematics(rotations: np.ndarray, positions: np.ndarray, parents) -> tuple[np.ndarray, np.ndarray]:
    """Local rotations ``[..., J, 4]`` and translations ``[..., J, 3]`` to global (rotations, positions).

    A joint's global position is its parent's global position plus the parent's global rotation applied
    to the joint's local translation; roots (parent -1) keep their local values.
    """
    rotations = np.asarray(rotations, dtype=float)
    positions = np.asarray(positions, dtype=float)
    global_rot = np.empty(np.broadcast_shapes(rotations.shape[:-1], positions.shape[:-1]) + (4,))
    global_pos = np.empty(global_rot.shape[:-1] + (3,))
    for j, parent in enumerate(np.asarray(parents)):
        if parent < 0:
            global_rot[..., j, :] = rotations[..., j, :]
            global_pos[..., j, :] = positions[..., j, :]
        else:
            if parent >= j:
                raise ValueError(f"joint {j} comes before its parent {parent}; joints must be in hierarchy order")
            global_rot[..., j, :] = quat_mul(global_rot[..., parent, :], rotations[..., j, :])
            global_pos[..., j, :] = global_pos[..., parent, :] + quat_mul_vec(global_rot[..., parent, :],
                                                                              positions[..., j, :])
    return global_rot, global_pos


def resample(motion, fps: float):
    """The motion at about ``fps`` frames per second, keeping its first and last frames.

    The frame count is round(duration * fps) + 1 and the frame time is adjusted so the last frame falls
    exactly at the original duration (so the rate can differ from ``fps`` by a hair). Rotations are
    slerped, translations lerped, between the two nearest source frames.
    """
    if fps <= 0:
        raise ValueError(f"fps must be positive, got {fps}")
    if motion.num_frames < 2:
        return dataclasses.replace(motion.copy(), frame_time=1.0 / fps)
    duration = motion.duration
    num_frames = max(int(round(duration * fps)) + 1, 2)
    source_index = np.linspace(0.0, motion.num_frames - 1, num_frames)
    i0 = np.minimum(np.floor(source_index).astype(np.int64), motion.num_frames - 2)
    alpha = source_index - i0
    rotations = quat_slerp(motion.rotations[i0], motion.rotations[i0 + 1], alpha[:, None])
    positions = motion.positions[i0] + alpha[:, None, None] * (motion.positions[i0 + 1] - motion.positions[i0])
    copy = motion.copy()
    return dataclasses.replace(copy, rotations=rotations, positions=positions,
                               frame_time=duration / (num_frames - 1))


_SIDE_WORDS = (("left", "right"), ("right", "left"))


def _swap_case_like(word: str, template: str) -> str:
    if template.isupper():
        return word.upper()
    if template[:1].isupper():
        return word.capitalize()
    return word


def _counterpart_candidates(name: str) -> list[str]:
    """Names the left/right counterpart of ``name`` could have, most specific rule first."""
    swap_letter = {"L": "R", "R": "L", "l": "r", "r": "l"}
    candidates = []
    for pattern in (r"left|right",):
        def repl(m):
            other = "right" if m.group().lower() == "left" else "left"
            return _swap_case_like(other, m.group())
        swapped = re.sub(pattern, repl, name, flags=re.IGNORECASE)
        if swapped != name:
            candidates.append(swapped)
    # A standalone side letter between separators: Foot_L, L_Foot, Bip01 L Thigh, foot.l
    swapped = re.sub(r"(?:(?<=^)|(?<=[_.\-\s:]))([LlRr])(?=$|[_.\-\s:])", lambda m: swap_letter[m.group(1)], name)
    if swapped != name:
        candidates.append(swapped)
    # camelCase prefix or suffix: lFoot / rFoot, LFoot / RFoot, FootL / FootR
    m = re.match(r"^(.*[:_]|)([LlRr])(?=[A-Z])", name)
    if m:
        candidates.append(name[:m.start(2)] + swap_letter[m.group(2)] + name[m.end(2):])
    m = re.search(r"(?<=[a-z0-9])([LR])$", name)
    if m:
        candidates.append(name[:m.start(1)] + swap_letter[m.group(1)])
    return candidates


def mirror_pairs(names: list[str]) -> np.ndarray:
    """For each joint the index of its left/right counterpart (itself when it has none), from the names.

    Recognised: Left/Right anywhere (LeftFoot, mixamorig:RightArm, left_foot), a separated side letter
    (Foot_L, L_Foot, foot.l, Bip01 L Thigh), l/r or L/R camelCase prefixes (lFoot, RFoot) and L/R
    suffixes (FootL). Exact matches win over case-insensitive ones; only mutual pairs are kept.
    """
    exact = {n: i for i, n in enumerate(names)}
    folded: dict[str, list[int]] = {}
    for i, n in enumerate(names):
        folded.setdefault(n.lower(), []).append(i)
    proposal = np.arange(len(names))
    for i, name in enumerate(names):
        for candidate in _counterpart_candidates(name):
            if candidate in exact and exact[candidate] != i:
                proposal[i] = exact[candidate]
                break
            matches = [k for k in folded.get(candidate.lower(), []) if k != i]
            if len(matches) == 1:
                proposal[i] = matches[0]
                break
    pairs = np.arange(len(names))
    mutual = proposal[proposal] == np.arange(len(names))
    pairs[mutual] = proposal[mutual]
    return pairs


def mirror(motion, axis: str = "x"):
    """Reflect the motion across the plane normal to ``axis`` (default x -> -x, the sagittal plane) and
    swap the left/right joints' data.

    The reflection of a rotation about the x plane negates its y and z quaternion components; offsets,
    translations and End Sites have their x negated. The result is the exact mirror image on the
    mirrored skeleton; mirroring twice gives the original back.
    """
    axis_index = {"x": 0, "y": 1, "z": 2}[axis.lower()]
    flip_vec = np.ones(3)
    flip_vec[axis_index] = -1.0
    flip_quat = np.concatenate([[1.0], -flip_vec])  # reflection S R S keeps the component along the normal
    pairs = mirror_pairs(motion.names)
    rotations = (motion.rotations * flip_quat)[:, pairs]
    positions = (motion.positions * flip_vec)[:, pairs]
    offsets = (motion.offsets * flip_vec)[pairs]
    end_sites = {}
    for j in range(motion.num_joints):
        if int(pairs[j]) in motion.end_sites:
            end_sites[j] = np.asarray(motion.end_sites[int(pairs[j])]) * flip_vec
    copy = motion.copy()
    return dataclasses.replace(copy, rotations=rotations, positions=positions, offsets=offsets, end_sites=end_sites)
