"""Joint roles from names and the hierarchy, one rule each: sides (L/R, Left/Right, _L/_R, l/r prefixes),
the foot and toe joints, the hips (the control root), the hip and shoulder lines, the hands; the skeleton
as stored in checkpoints, and whether two motions share one skeleton."""

from __future__ import annotations

import dataclasses
import re

import numpy as np

from pfnn_core.features.contract import CONTACT_NAMES

SKELETON_TOLERANCE_M = 0.002  # bone offsets of one training set may differ by this much (dataset 1: 0.4 mm)


def hips_joint(names, parents, global_positions=None) -> int:
    """The joint whose ground projection is the control root: 'Hips'/'Pelvis' by name, else the root
    joint, or its first child when the root joint itself never moves (as `joint_Root` here)."""
    for index, name in enumerate(names):
        lower = name.lower()
        if lower in ("hips", "hip", "pelvis") or (("hips" in lower or "pelvis" in lower) and joint_side(name) is None):
            return index
    root = int(np.flatnonzero(np.asarray(parents) < 0)[0])
    if global_positions is not None:
        children = [j for j, p in enumerate(parents) if p == root]
        if children and np.ptp(global_positions[:, root], axis=0).max() < 1e-6:
            return children[0]
    return root


def _topmost_side_ancestor(joint: int, parents, names, positions=None) -> int:
    """The highest joint of `joint`'s side chain (hip for a foot, shoulder/clavicle for a hand).

    With `positions` (one pose, [J, 3]) a side joint sitting exactly on its parent (CMU's LHipJoint on
    the hips) is not taken: both sides' lines would start at the same point and give no direction.
    """
    side = joint_side(names[joint])
    top = joint
    parent = parents[joint]
    while parent >= 0 and joint_side(names[parent]) == side:
        grandparent = parents[parent]
        if positions is not None and grandparent >= 0 and \
                np.linalg.norm(positions[parent] - positions[grandparent]) < 1e-6:
            break
        top, parent = parent, grandparent
    return top


def hand_joints(names) -> dict:
    hands = {}
    for index, name in enumerate(names):
        side, lower = joint_side(name), name.lower()
        if side and ("hand" in lower or "wrist" in lower) and side not in hands:
            hands[side] = index
    return hands


def body_lines(names, parents, positions=None) -> dict:
    """Joint pairs (left, right) for the hip line and, when found, the shoulder line.

    `positions` ([J, 3], any one pose) lets the search skip side joints that coincide with their parent.
    """
    feet = foot_joints(names, parents)
    lines = {"hips": (_topmost_side_ancestor(feet["left_foot"], parents, names, positions),
                      _topmost_side_ancestor(feet["right_foot"], parents, names, positions))}
    hands = hand_joints(names)
    if "left" in hands and "right" in hands:
        lines["shoulders"] = (_topmost_side_ancestor(hands["left"], parents, names, positions),
                              _topmost_side_ancestor(hands["right"], parents, names, positions))
    return lines


def skeleton_dict(motion) -> dict:
    """The skeleton as stored in checkpoints: enough to rebuild a Motion and to write BVH."""
    names, parents = list(motion.names), np.asarray(motion.parents)
    feet = foot_joints(names, parents)
    hips = hips_joint(names, parents)
    root_joint = int(np.flatnonzero(parents < 0)[0])
    return {
        "names": names,
        "parents": [int(p) for p in parents],
        "offsets": np.asarray(motion.offsets, float).tolist(),
        "channels": [list(c) for c in motion.channels],
        "scale": float(motion.scale),
        "end_sites": {str(int(j)): np.asarray(o, float).tolist() for j, o in getattr(motion, "end_sites", {}).items()},
        "frame_time": float(motion.frame_time),
        "hips": int(hips),
        "contact_joints": contact_joint_order(feet),
        "contact_names": list(CONTACT_NAMES),
        # When true, joint `root_joint`'s features are the control root itself (see module docstring).
        "root_joint_is_control_root": bool(root_joint != hips),
    }


def skeleton_difference(reference, motion) -> str | None:
    """Why two motions are not on one skeleton, or None when they are.

    Joint names and parents must be equal; bone offsets may differ by SKELETON_TOLERANCE_M. End Sites
    are not compared, nor the offsets of the root joint and of the joints down to the hips: those hold
    each take's start position (the bundled files' Hips OFFSET does)."""
    if list(motion.names) != list(reference.names) or not np.array_equal(motion.parents, reference.parents):
        differing = [f"{a} vs {b}" for a, b in zip(motion.names, reference.names) if a != b]
        detail = (f"joints {', '.join(differing[:3])}" if differing
                  else f"{motion.num_joints} joints vs {reference.num_joints}" if motion.num_joints != reference.num_joints
                  else "the joint hierarchy (parents)")
        return f"its joints differ ({detail})"
    parents = np.asarray(reference.parents)
    start = hips_joint(reference.names, parents)
    skip = [start] + list(ancestors(parents, start))
    gap = np.abs(np.asarray(motion.offsets, float) - np.asarray(reference.offsets, float)).max(axis=-1)
    gap[skip] = 0.0
    joint = int(np.argmax(gap))
    if gap[joint] > SKELETON_TOLERANCE_M:
        return (f"its bone offsets differ (joint {reference.names[joint]!r} by {100 * gap[joint]:.2f} cm, "
                f"tolerance {100 * SKELETON_TOLERANCE_M:.1f} cm)")
    return None


def ancestors(parents, joint: int):
    """The joints above `joint`, nearest first."""
    while parents[joint] >= 0:
        joint = int(parents[joint])
        yield joint


def check_same_skeleton(reference, motion, path):
    why = skeleton_difference(reference, motion)
    if why:
        raise ValueError(f"{path}: {why} from {reference.source}; use one skeleton per training set")


def skeleton_only(motion):
    """The motion's first frame only: its skeleton, small enough to send to worker processes or keep per file."""
    return dataclasses.replace(motion, rotations=motion.rotations[:1], positions=motion.positions[:1])


def joint_side(name: str) -> str | None:
    """'left', 'right' or None from a joint name (Foot_L, LeftFoot, lFoot, L_Ankle, foot.l, LHipJoint)."""
    # Camel-case prefixes: 'lFoot' / 'LHip' (l or L followed by an upper-case letter).
    if not name.isupper():
        if re.match(r"^[lL](?=[A-Z])", name):
            return "left"
        if re.match(r"^[rR](?=[A-Z])", name):
            return "right"
    lower = name.lower()
    if "left" in lower:
        return "left"
    if "right" in lower:
        return "right"
    tokens = [t for t in re.split(r"[^a-z]+", lower) if t]
    if "l" in tokens:
        return "left"
    if "r" in tokens:
        return "right"
    return None


def _body_part(name: str) -> str | None:
    lower = name.lower()
    if "toe" in lower:
        return "toe"
    if "ankle" in lower:
        return "ankle"
    if "foot" in lower:
        return "foot"
    return None


def foot_joints(names: list[str], parents=None) -> dict:
    """Indices of the ankle/foot and toe joint of each side.

    Returns {'left_foot', 'left_toe', 'right_foot', 'right_toe'} -> joint index. The first matching
    joint in file order wins (closest to the root: ToeBase before Toe_End). Skeletons that name the
    ankle 'Ankle' and the toe 'Foot' (SMPL) are handled; without a toe joint the foot's first child
    is used when `parents` is given. Raises ValueError when a side has no foot joint.
    """
    found: dict[str, dict[str, int]] = {"left": {}, "right": {}}
    for index, name in enumerate(names):
        side, part = joint_side(name), _body_part(name)
        if side and part and part not in found[side]:
            found[side][part] = index
    result = {}
    for side, parts in found.items():
        if "ankle" in parts:
            foot, toe = parts["ankle"], parts.get("toe", parts.get("foot"))
        else:
            foot, toe = parts.get("foot"), parts.get("toe")
        if foot is None:
            raise ValueError(
                f"no {side} foot joint: looked for a name containing 'foot' or 'ankle' (any case) with a "
                f"{side} side marker ('{side.capitalize()}' anywhere, an {side[0].upper()}/{side[0]} prefix "
                f"before a capital, or a separate {side[0].upper()}/{side[0]} as in Foot_{side[0].upper()}, "
                f"{side[0]}_ankle, foot.{side[0]}); joints are {list(names)}")
        if toe is None and parents is not None:
            children = [j for j, p in enumerate(parents) if p == foot]
            toe = children[0] if children else None
        result[f"{side}_foot"] = foot
        result[f"{side}_toe"] = toe if toe is not None else foot
    return result


def contact_joint_order(feet: dict) -> list[int]:
    """Joint indices in the feature order (Foot_L, Toes_L, Foot_R, Toes_R)."""
    return [feet["left_foot"], feet["left_toe"], feet["right_foot"], feet["right_toe"]]
