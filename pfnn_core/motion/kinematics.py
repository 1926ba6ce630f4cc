"""Skeleton kinematics over whole motions: forward kinematics (and back to local rotations), resampling
and left/right mirroring.

Arrays follow ``quat.py``'s conventions. Joints are in BVH order, so every parent comes before its
children. ``resample``, ``mirror`` (the exact reflection, on a reflected skeleton) and
``mirror_keep_skeleton`` (the mirror on the original skeleton, for training data) return new
``bvh.Motion`` objects and never modify their input.
"""
from __future__ import annotations

import dataclasses
import itertools
import re

import numpy as np

from pfnn_core.math.quat import quat_from_matrix, quat_inv, quat_mul, quat_mul_vec, quat_normalize, quat_slerp, quat_to_matrix


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


def local_rotations(global_rot, parents) -> np.ndarray:
    """Global rotations ``[..., J, 4]`` back to local ones (the inverse of ``forward_kinematics``'s rotations)."""
    parents = np.asarray(parents)
    local = np.array(global_rot, dtype=float, copy=True)
    has_parent = parents >= 0
    local[..., has_parent, :] = quat_mul(quat_inv(global_rot[..., parents[has_parent], :]),
                                         global_rot[..., has_parent, :])
    return local


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


def _improper_axis_permutations() -> np.ndarray:
    """The 24 signed axis permutations with determinant -1 (reflections of an axis-aligned frame)."""
    found = []
    for perm in itertools.permutations(range(3)):
        for signs in itertools.product((1.0, -1.0), repeat=3):
            m = np.zeros((3, 3))
            m[np.arange(3), perm] = signs
            if np.linalg.det(m) < 0:
                found.append(m)
    return np.stack(found)


_IMPROPER_AXIS_PERMUTATIONS = _improper_axis_permutations()  # a constant, worked out once


def _joint_reflection(estimate: np.ndarray, bone_pairs: list[tuple[np.ndarray, np.ndarray]],
                      preferred: np.ndarray | None) -> np.ndarray:
    """The local reflection of one joint.

    ``preferred`` (the parent's reflection for a joint without bones, the world mirror for a root)
    wins when it maps every child bone onto its counterpart: those joints would otherwise depend on
    the clip. Next, the signed axis permutation (det -1) that maps
    the bones and best matches ``estimate`` (skeleton frames are almost always axis-aligned, so every
    clip of a skeleton gets the same answer); failing that, the nearest reflection to ``estimate``.
    """
    def fits(m):
        return all(counterpart @ m @ own > 0.95 for own, counterpart in bone_pairs)

    if preferred is not None and fits(preferred):
        return preferred
    candidates = _IMPROPER_AXIS_PERMUTATIONS
    fits_bones = np.array([fits(m) for m in candidates])
    if fits_bones.any():
        scores = np.einsum("cij,ij->c", candidates, estimate)
        return candidates[np.flatnonzero(fits_bones)[np.argmax(scores[fits_bones])]]
    u, _, vt = np.linalg.svd(estimate)
    d = np.array([1.0, 1.0, -1.0 if np.linalg.det(u @ vt) > 0 else 1.0])
    return u @ np.diag(d) @ vt


def _body_facing_frames(global_pos, global_rot, parents, pairs, axis_index):
    """Global rotation matrices turned about +Y, per frame, so that the line between the paired
    joints nearest the root (the hips, say) lies along the mirror axis: in these frames the body's
    own sagittal plane is the mirror plane whatever way the clip walks or turns."""
    depth = np.zeros(len(parents), dtype=np.int64)
    for j, parent in enumerate(parents):
        depth[j] = depth[parent] + 1 if parent >= 0 else 0
    paired = np.flatnonzero(pairs != np.arange(len(pairs)))
    matrices = quat_to_matrix(global_rot)
    if paired.size == 0:
        return matrices
    left = paired[np.argmin(depth[paired])]
    across = global_pos[:, left] - global_pos[:, pairs[left]]
    target = np.eye(3)[axis_index]
    yaw = np.arctan2(target[0], target[2]) - np.arctan2(across[:, 0], across[:, 2])
    turn = quat_to_matrix(np.stack([np.cos(yaw / 2), 0 * yaw, np.sin(yaw / 2), 0 * yaw], axis=-1))
    return np.einsum("fik,fjkl->fjil", turn, matrices)


def mirror_keep_skeleton(motion, axis: str = "x"):
    """Mirror left/right like ``mirror`` but on the ORIGINAL skeleton (same offsets, same bone frames).

    ``mirror`` is the exact reflection, but on skeletons whose local frames are not mirror-symmetric
    (the bundled one: the spine runs along local +X and the lateral axis is Y in the hips and Z in the
    chest) it reflects some offsets, so mirrored joint rotations are not comparable with unmirrored
    ones. Here each joint j gets a local reflection L_j (estimated from the clip's poses as the
    reflection best mapping j's frame onto its counterpart's mirrored frame, snapped to a signed axis
    permutation): global G'_j = S G_pair(j) L_j, local R'_j = L_parent^T R_pair(j) L_j. Global positions
    equal the exact mirror up to the skeleton's own left/right asymmetry.
    """
    axis_index = {"x": 0, "y": 1, "z": 2}[axis.lower()]
    flip = np.ones(3)
    flip[axis_index] = -1.0
    reflect = np.diag(flip)
    pairs = mirror_pairs(motion.names)
    parents = np.asarray(motion.parents)
    global_rot, global_pos = forward_kinematics(motion.rotations, motion.positions, parents)
    global_m = _body_facing_frames(global_pos, global_rot, parents, pairs, axis_index)   # [F, J, 3, 3]
    estimate = np.einsum("fjki,kl,fjlm->jim", global_m[:, pairs], reflect, global_m, optimize=True) / motion.num_frames
    unit_offsets = motion.offsets / np.maximum(np.linalg.norm(motion.offsets, axis=-1, keepdims=True), 1e-9)
    bones: dict[int, list] = {j: [] for j in range(motion.num_joints)}
    for child, parent in enumerate(parents):
        if parent >= 0 and np.linalg.norm(motion.offsets[child]) > 1e-9:
            bones[parent].append((unit_offsets[child], unit_offsets[pairs[child]]))
    local_reflections = np.empty((motion.num_joints, 3, 3))
    for j, parent in enumerate(parents):
        # A root mirrors like the world; a joint without bones (hand, toe) like its parent. Other
        # joints let their bones and the poses choose.
        preferred = reflect if parent < 0 else (local_reflections[parent] if not bones[j] else None)
        local_reflections[j] = _joint_reflection(estimate[j], bones[j], preferred)

    local_m = quat_to_matrix(motion.rotations)[:, pairs]                       # R_pair(j)
    parent_l = np.where((parents >= 0)[:, None, None], local_reflections[np.maximum(parents, 0)], reflect)
    new_local = np.einsum("jki,fjkl,jlm->fjim", parent_l, local_m, local_reflections, optimize=True)
    rotations = quat_normalize(quat_from_matrix(new_local))

    source = motion.positions[:, pairs]
    deviation = source - motion.offsets[pairs]
    positions = np.where((parents >= 0)[None, :, None],
                         motion.offsets[None] + np.einsum("jki,fjk->fji", parent_l, deviation),
                         source * flip)
    copy = motion.copy()
    return dataclasses.replace(copy, rotations=rotations, positions=positions)
