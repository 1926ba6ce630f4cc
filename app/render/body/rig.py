"""What the body generator knows about a skeleton: `Rig` (parents, bone offsets, one reference pose),
`body_layout` (which joints form the pelvis, spine, neck, arms and legs: found from the topology and the
reference pose, names are not needed) and `bind_pose` (the pose the mesh is made in, facing +Z)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from app.render.body.mesh import BODY_MESH_VERSION, LOD_TRIANGLES
from pfnn_core.math.quat import quat_between, quat_from_yaw, quat_mul, quat_mul_vec

UP = np.array([0.0, 1.0, 0.0])


@dataclass(frozen=True)
class Rig:
    """A skeleton and one reference pose of it. `offsets[j]` is joint j's offset from its parent in the
    parent's frame (world-aligned frames when the source has positions only); `ref_rot` / `ref_pos` are
    world rotations and positions that satisfy ref_pos[j] = ref_pos[p] + ref_rot[p] * offsets[j]; the
    reference gives the bind pose its joint twists and the feet their angle to the ground."""
    parents: np.ndarray  # [J]
    offsets: np.ndarray  # [J, 3] metres
    ref_rot: np.ndarray  # [J, 4]
    ref_pos: np.ndarray  # [J, 3]
    facing: np.ndarray  # [3] the reference pose's facing on the ground

    def key(self) -> str:
        """Hash of the skeleton (topology and bone offsets to 0.1 mm), not of the reference pose."""
        digest = hashlib.sha1()
        digest.update(f"body-mesh-v{BODY_MESH_VERSION}-{LOD_TRIANGLES}".encode())
        digest.update(np.asarray(self.parents, np.int64).tobytes())
        offsets = np.round(np.asarray(self.offsets, np.float64) * 1e4).astype(np.int64)
        offsets[np.asarray(self.parents) < 0] = 0  # a root's offset is where it starts, not a bone
        digest.update(offsets.tobytes())
        return digest.hexdigest()[:20]


def rig_from_positions(parents, positions, facing) -> Rig:
    """A rig for a source that has joint positions only: world-aligned joint frames in that pose."""
    parents = np.asarray(parents)
    positions = np.asarray(positions, np.float64)
    offsets = positions - positions[np.maximum(parents, 0)]
    offsets[parents < 0] = positions[parents < 0]
    identity = np.tile([1.0, 0.0, 0.0, 0.0], (len(parents), 1))
    return Rig(parents, offsets, identity, positions, np.asarray(facing, np.float64))


@dataclass
class Limb:
    joints: list  # chain of joints from the one attached to the trunk outward
    side: float  # +1 on the body's left (+X of the body frame), -1 on its right
    upper: int  # index into `joints` of the upper limb bone's start (thigh / upper arm)


@dataclass
class BodyLayout:
    pelvis: int
    spine: list  # joints from the pelvis up to the chest, both included
    neck: list  # joints from the chest's child up to the head (the last one)
    arms: list  # [Limb]
    legs: list  # [Limb]
    scale: float  # body size relative to the proportions the radii below are written for


def children_of(parents) -> list[list[int]]:
    parents = np.asarray(parents)
    return [[int(c) for c in np.flatnonzero(parents == j)] for j in range(len(parents))]


def _subtree(children, joint) -> list[int]:
    out, stack = [], [joint]
    while stack:
        j = stack.pop()
        out.append(j)
        stack.extend(children[j])
    return out


def _body_frame_positions(rig: Rig) -> np.ndarray:
    """Reference positions turned so the body faces +Z, with the root above the origin."""
    facing = np.asarray(rig.facing, np.float64)
    yaw = np.arctan2(facing[0], facing[2]) if np.hypot(facing[0], facing[2]) > 1e-6 else 0.0
    positions = quat_mul_vec(quat_from_yaw(-yaw), np.asarray(rig.ref_pos, np.float64))
    root = int(np.flatnonzero(np.asarray(rig.parents) < 0)[0])
    return positions - positions[root] * np.array([1.0, 0.0, 1.0])


def _chain(children, start, prefer) -> list[int]:
    """Follow single children from `start`; at a branch take the child `prefer` picks, unless the branch
    is the end of a limb (a hand with fingers): then stop."""
    chain = [start]
    while len(children[chain[-1]]) == 1:
        chain.append(children[chain[-1]][0])
    if len(children[chain[-1]]) > 1 and prefer is not None:
        chain += _chain(children, prefer(children[chain[-1]]), prefer)
    return chain


def body_layout(rig: Rig) -> BodyLayout:
    """Find the trunk and limbs from the topology and the reference pose. Raises ValueError for a
    skeleton that is not a biped with a branching pelvis and chest."""
    parents = np.asarray(rig.parents)
    children = children_of(parents)
    positions = _body_frame_positions(rig)
    root = int(np.flatnonzero(parents < 0)[0])
    pelvis = root
    while len(children[pelvis]) == 1:
        pelvis = children[pelvis][0]
    if len(children[pelvis]) < 3:
        raise ValueError("no pelvis: no joint with a spine and two legs below it")
    top = {c: positions[_subtree(children, c), 1].max() for c in children[pelvis]}
    spine_child = max(top, key=top.get)
    legs_start = [c for c in children[pelvis] if c != spine_child]
    spine = [pelvis] + _chain(children, spine_child, None)
    chest = spine[-1]
    if len(children[chest]) < 3:
        raise ValueError("no chest: no joint with a neck and two arms")
    top = {c: positions[_subtree(children, c), 1].max() for c in children[chest]}
    neck_child = max(top, key=top.get)
    highest = lambda options: max(options, key=lambda c: positions[_subtree(children, c), 1].max())  # noqa: E731
    neck = _chain(children, neck_child, highest)

    def limb(start, lowest_first):
        farthest = (lambda options: min(options, key=lambda c: positions[c, 1])) if lowest_first else None
        joints = _chain(children, start, farthest)
        if len(joints) < 3:
            raise ValueError(f"limb from joint {start} has fewer than two bones")
        lengths = np.linalg.norm(np.diff(positions[joints], axis=0), axis=-1)
        upper = int(np.argmax(lengths[:-1] + lengths[1:]))
        side = 1.0 if positions[joints[upper], 0] > positions[pelvis, 0] else -1.0
        return Limb(joints, side, upper)

    legs = [limb(c, True) for c in legs_start]
    arms = [limb(c, False) for c in children[chest] if c != neck_child]
    if len(legs) != 2 or len(arms) != 2:
        raise ValueError("expected two legs and two arms")
    leg_lengths = [sum(np.linalg.norm(positions[l.joints[l.upper + k + 1]] - positions[l.joints[l.upper + k]])
                       for k in range(2)) for l in legs]
    scale = float(np.mean(leg_lengths)) / 0.80  # the bundled skeleton's hip-to-ankle length
    return BodyLayout(pelvis, spine, neck, arms, legs, scale)



ARM_DOWN = np.radians(45.0)  # arms out and down in the bind pose, clear of the trunk
LEG_OUT = np.radians(4.0)  # legs slightly apart so the thighs do not merge


def bind_pose(rig: Rig, layout: BodyLayout) -> tuple[np.ndarray, np.ndarray]:
    """(world rotations [J, 4], positions [J, 3]) of the pose the mesh is made in, facing +Z. Every
    bone keeps its length; each limb bone is swung onto a canonical direction and keeps the twist it has
    in the reference pose, so skinning matrices stay close to what the motion needs."""
    parents = np.asarray(rig.parents)
    children = children_of(parents)
    facing = np.asarray(rig.facing, np.float64)
    yaw = np.arctan2(facing[0], facing[2]) if np.hypot(facing[0], facing[2]) > 1e-6 else 0.0
    turn = quat_from_yaw(-yaw)
    ref_rot = quat_mul(turn, np.asarray(rig.ref_rot, np.float64))
    offsets = np.asarray(rig.offsets, np.float64)

    target = {}  # joint -> world direction of the bone to its (first) child in the bind pose
    for joint in layout.spine[:-1] + layout.neck[:-1]:
        target[joint] = UP
    target[layout.pelvis] = UP  # the pelvis turns so that its spine child is straight above it
    target[layout.spine[-1]] = UP  # the chest likewise with its neck child
    for leg in layout.legs:
        down = np.array([leg.side * np.sin(LEG_OUT), -np.cos(LEG_OUT), 0.0])
        for joint in leg.joints[leg.upper:leg.upper + 2]:
            target[joint] = down
        for joint in leg.joints[leg.upper + 2:-1]:  # foot and toes: pointing ahead, slope as in the reference
            child = children[joint][0]
            direction = quat_mul_vec(ref_rot[joint], offsets[child])
            target[joint] = np.array([0.0, direction[1], np.hypot(direction[0], direction[2])])
    for arm in layout.arms:
        out = np.array([arm.side * np.cos(ARM_DOWN), -np.sin(ARM_DOWN), 0.0])
        for joint in arm.joints[arm.upper:-1]:
            target[joint] = out
    chosen_child = {layout.pelvis: layout.spine[1], layout.spine[-1]: layout.neck[0]}

    rotations = ref_rot.copy()
    positions = np.zeros_like(offsets)
    root = int(np.flatnonzero(parents < 0)[0])
    positions[root] = _body_frame_positions(rig)[root]
    order = topological_order(parents)
    correction = {}
    for joint in order:
        parent = parents[joint]
        if parent >= 0:
            positions[joint] = positions[parent] + quat_mul_vec(rotations[parent], offsets[joint])
        kids = children[joint]
        if joint in target and kids:
            child = chosen_child.get(joint, kids[0])
            current = quat_mul_vec(ref_rot[joint], offsets[child])
            swing = quat_between(current, target[joint]) if np.linalg.norm(current) > 1e-9 else np.array([1.0, 0, 0, 0])
        elif parent >= 0:
            swing = correction[parent]  # keep the reference's rotation relative to the parent
        else:
            swing = np.array([1.0, 0.0, 0.0, 0.0])
        correction[joint] = swing
        rotations[joint] = quat_mul(swing, ref_rot[joint])
    return rotations, positions


def topological_order(parents) -> list[int]:
    parents = np.asarray(parents)
    order, seen = [], set()
    for joint in range(len(parents)):
        chain = []
        j = joint
        while j >= 0 and j not in seen:
            chain.append(j)
            j = parents[j]
        for j in reversed(chain):
            seen.add(j)
            order.append(int(j))
    return order

