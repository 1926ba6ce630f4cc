"""The capsule and skeleton views of a character: capsule radii by bone (from the parent joint's name),
left / right / centre colours, thin sticks and small joints for the skeleton view, and the per-frame
capsule / sphere instances of a batch of poses."""

from dataclasses import dataclass

import numpy as np

from app.render.palette import Palette
from app.render.scene import drawn_bones, drawn_joints
from pfnn_core.skeleton import joint_side

BONE_RADII = (  # keyword in the PARENT joint's name -> capsule radius in metres (first match wins)
    ("upperleg", 0.058), ("upleg", 0.058), ("thigh", 0.058), ("lowerleg", 0.045), ("leg", 0.045),
    ("toe", 0.024), ("foot", 0.034), ("ankle", 0.034), ("hips", 0.07), ("pelvis", 0.07),
    ("spine", 0.085), ("chest", 0.075), ("neck", 0.042), ("head", 0.05), ("shoulder", 0.04),
    ("clavicle", 0.04), ("upperarm", 0.042), ("lowerarm", 0.034), ("forearm", 0.034), ("hand", 0.026),
    ("arm", 0.04),
)
STICK_RADIUS, STICK_JOINT_RADIUS, STICK_HEAD_RADIUS = 0.011, 0.022, 0.075  # the skeleton view


def bone_radius(parent_name: str) -> float:
    lowered = parent_name.lower()
    return next((radius for keyword, radius in BONE_RADII if keyword in lowered), 0.035)


@dataclass
class SkeletonStyle:
    """Per-skeleton instance attributes that do not change from frame to frame."""
    bones: np.ndarray  # [K, 2] (child, parent)
    bone_radius: np.ndarray  # [K]
    bone_colour: np.ndarray  # [K, 3]
    joints: np.ndarray  # [M] joint indices drawn as spheres
    joint_radius: np.ndarray  # [M]
    joint_colour: np.ndarray  # [M, 3]


def skeleton_style(parents: np.ndarray, names, palette: Palette, sticks: bool = False) -> SkeletonStyle:
    """Capsules sized by bone (the capsule view), or with `sticks` thin bones and small joints (the
    skeleton view); left / right / centre colours from the joint names."""
    parents = np.asarray(parents)
    names = list(names) if names is not None else [f"joint{j}" for j in range(len(parents))]
    side_colour = {"left": np.array(palette.left), "right": np.array(palette.right), None: np.array(palette.centre)}
    bones = drawn_bones(parents)
    radius = np.array([bone_radius(names[p]) for _, p in bones], np.float32)
    colour = np.array([side_colour[joint_side(names[c])] for c, _ in bones], np.float32).reshape(-1, 3)
    joints = drawn_joints(parents)
    joint_radius = np.full(len(joints), 0.03, np.float32)
    for index, j in enumerate(joints):
        touching = [radius[k] for k, (c, p) in enumerate(bones) if c == j or p == j]
        joint_radius[index] = 1.12 * max(touching) if touching else 0.04
        if "head" in names[j].lower():
            joint_radius[index] = 0.115
    joint_colour = np.array([side_colour[joint_side(names[j])] * palette.joint_shade for j in joints],
                            np.float32).reshape(-1, 3)
    head = np.array(["head" in names[j].lower() for j in joints], bool)
    joint_colour[head] = np.array(palette.centre, np.float32)
    if sticks:
        radius = np.full_like(radius, STICK_RADIUS)
        joint_radius = np.where(head, STICK_HEAD_RADIUS, STICK_JOINT_RADIUS).astype(np.float32)
    return SkeletonStyle(bones, radius, colour, joints, joint_radius, joint_colour)


def capsule_instances(style: SkeletonStyle, poses: np.ndarray) -> np.ndarray:
    """[B * (K + M), 10] capsule/sphere instances (a, b, radius, colour) of B poses [B, J, 3]."""
    count = len(poses)

    def constant(values):
        return np.broadcast_to(values, (count,) + values.shape)

    bones = np.concatenate([poses[:, style.bones[:, 1]], poses[:, style.bones[:, 0]],
                            constant(style.bone_radius[:, None]), constant(style.bone_colour)], axis=-1)
    joints = poses[:, style.joints]
    spheres = np.concatenate([joints, joints, constant(style.joint_radius[:, None]), constant(style.joint_colour)],
                             axis=-1)
    return np.concatenate([bones.reshape(-1, 10), spheres.reshape(-1, 10)]).astype(np.float32)
