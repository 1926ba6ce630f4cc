"""The simulated body's shapes from a skeleton's bone lengths alone: `body_plan(skeleton, fit, floor_heights)`.

One rigid body per joint from the hips down (joints above the hips, such as the bundled rig's
`joint_Root`, only carry the hips and are not simulated). A body owns a capsule per bone to each of its
children, with the radius its name suggests (`BONE_RADII`, scaled by the leg length against the
bundled rig's), pulled in at both ends by its radius so it ends at the joints instead of poking past
them; a leaf joint gets a short capsule (a hand) or a sphere (a head) past its end. The feet are boxes
whose soles lie on the capture's floor when the foot is flat: the ankle's box from the heel to the toe
joint, the toe's from there to the tip, each at its joint's floor level below it (`BodyFit` says which
way is up in the joint's frame). Body pairs whose shapes overlap in the reference pose (a chest and its
head, a pelvis and the thighs) never collide.

Everything here is in each joint's own BVH frame; MuJoCo's body frames are those frames (`mjcf.py`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pfnn_core.math.quat import cross3, quat_from_matrix, quat_mul, quat_mul_vec
from pfnn_core.physics.fit import BodyFit
from pfnn_core.skeleton import contact_joint_order, foot_joints, hand_joints, hips_joint, joint_side

BONE_RADII = (  # keyword in the owning joint's name -> capsule radius (m) on the bundled rig (first match wins)
    ("upperleg", 0.07), ("upleg", 0.07), ("thigh", 0.07), ("lowerleg", 0.05), ("shin", 0.05), ("calf", 0.05),
    ("knee", 0.05), ("leg", 0.05), ("hips", 0.1), ("pelvis", 0.1), ("hip", 0.1), ("abdomen", 0.1),
    ("spine", 0.1), ("chest", 0.1), ("neck", 0.05), ("head", 0.05), ("shoulder", 0.045), ("clavicle", 0.045),
    ("collar", 0.045), ("upperarm", 0.045), ("shldr", 0.045), ("lowerarm", 0.038), ("forearm", 0.038),
    ("elbow", 0.038), ("hand", 0.035), ("wrist", 0.035), ("arm", 0.045),
)
DEFAULT_RADIUS = 0.04
BUNDLED_LEG = 0.801  # m, hip to ankle of the bundled rig: radii scale by a rig's leg against this
HEAD_RADIUS, HAND_LENGTH = 0.1, 0.09  # m on the bundled rig: a head sphere, a hand capsule past the wrist
# m on the bundled rig: sole width, heel behind the ankle, tip past the toe joint
FOOT_WIDTH, HEEL_BACK, TOE_TIP = 0.09, 0.05, 0.06
SOLE_THICKNESS = 0.04  # m on the bundled rig: height of the foot boxes above the sole
OVERLAP_MARGIN = 0.01  # m: shapes of two bodies closer than this in the reference pose never collide
PARTS = ("trunk", "arm", "leg", "foot")  # what a density applies to


@dataclass
class Shape:
    """One collision shape in its body's frame."""

    kind: str  # 'capsule', 'sphere' or 'box'
    part: str  # one of PARTS
    start: np.ndarray  # [3] capsule start; the centre of a sphere or a box
    end: np.ndarray  # [3] capsule end (= start for the others)
    radius: float = 0.0  # capsule and sphere radius
    half_size: np.ndarray = None  # [3] box half extents along its axes
    quat: np.ndarray = None  # [4] box axes in the body frame
    sole: bool = False  # a foot box whose bottom is the sole


@dataclass
class BodyNode:
    """One simulated joint and its rigid body."""

    joint: int
    parent: int  # parent joint (-1: the root body, free in the world)
    offset: np.ndarray  # [3] position in the parent's frame
    reference: np.ndarray  # [4] local rotation at the ball joint's zero
    limit: float  # rad, cone around the reference
    shapes: list = field(default_factory=list)


@dataclass
class BodyPlan:
    names: list
    parents: np.ndarray
    offsets: np.ndarray  # [J, 3] every joint's offset in its parent's frame (m)
    nodes: list  # BodyNode, parents first, the hips first
    root: int  # the hips joint
    chest: int  # the joint a push is applied to
    contact_joints: list  # Foot_L, Toes_L, Foot_R, Toes_R joint indices
    floor_heights: np.ndarray  # [4] m: their floor levels (where the soles put them on the floor)
    excluded: list  # (joint, joint) body pairs that never collide
    scale: float  # radii and foot sizes against the bundled rig's

    @property
    def joints(self) -> list:
        return [node.joint for node in self.nodes]

    def node(self, joint: int) -> BodyNode:
        return next(n for n in self.nodes if n.joint == joint)


def bone_radius(name: str, scale: float) -> float:
    lowered = name.lower()
    return scale * next((radius for keyword, radius in BONE_RADII if keyword in lowered), DEFAULT_RADIUS)


def body_part(name: str) -> str:
    lowered = name.lower()
    if any(key in lowered for key in ("leg", "thigh", "shin", "calf", "knee")):
        return "leg"
    if joint_side(name) is not None and any(key in lowered for key in ("arm", "hand", "shoulder", "shldr", "collar",
                                                                        "clavicle", "wrist", "elbow")):
        return "arm"
    return "trunk"


def _children(parents, joint) -> list[int]:
    return [int(j) for j in np.flatnonzero(np.asarray(parents) == joint)]


def _capsule(start, end, radius, part) -> Shape:
    """A capsule along the bone start-end, its axis pulled in at both ends by its radius (then it ends
    at the joints instead of poking past them), by at most a quarter of the bone each (the short, wide
    bones of a trunk stay capsules that reach their neighbours)."""
    start, end = np.asarray(start, float), np.asarray(end, float)
    length = float(np.linalg.norm(end - start))
    if length < 1e-6:
        return Shape("sphere", part, start, start, radius=radius)
    axis = (end - start) / length
    pull = min(radius, 0.25 * length)
    return Shape("capsule", part, start + pull * axis, end - pull * axis, radius=radius)


def _leg_scale(skeleton: dict, feet: dict) -> float:
    parents, offsets = np.asarray(skeleton["parents"]), np.asarray(skeleton["offsets"], float)
    length, joint = 0.0, feet["left_foot"]
    for _ in range(2):  # ankle -> knee -> hip
        length += float(np.linalg.norm(offsets[joint]))
        joint = int(parents[joint])
    return length / BUNDLED_LEG if length > 0.0 else 1.0


def _push_joint(names, parents, body: list[int], hips: int) -> int:
    """The chest: the joint the shoulder lines hang from (else the topmost central joint with children)."""
    hands = hand_joints(names)
    for hand in hands.values():
        joint = hand
        while joint >= 0 and joint_side(names[joint]) is not None:
            joint = int(parents[joint])
        if joint in body:
            return joint
    central = [j for j in body if joint_side(names[j]) is None and _children(parents, j)]
    return central[-1] if central else hips


def _bone_shapes(skeleton: dict, fit: BodyFit, joint: int, scale: float) -> list[Shape]:
    """The capsules of a non-foot joint: one per bone to a child, or one past a leaf joint."""
    names, parents = skeleton["names"], np.asarray(skeleton["parents"])
    offsets = np.asarray(skeleton["offsets"], float)
    name, shapes = names[joint], []
    own_radius = bone_radius(name, scale)
    for child in _children(parents, joint):
        radius = own_radius
        if joint_side(name) is None and joint_side(names[child]) is not None:
            radius = min(own_radius, bone_radius(names[child], scale))  # a central joint's bone to a side (hip, shoulder)
        shapes.append(_capsule(np.zeros(3), offsets[child], radius, body_part(name)))
    if shapes:
        return shapes
    end_site = np.asarray((skeleton.get("end_sites") or {}).get(str(joint), np.zeros(3)), float)
    if np.linalg.norm(end_site) > 0.02 * scale:
        return [_capsule(np.zeros(3), end_site, own_radius, body_part(name))]
    # no end site: continue the bone that leads here (its direction in this joint's frame)
    incoming = quat_mul_vec(np.array([1.0, -1.0, -1.0, -1.0]) * fit.reference[joint], offsets[joint])
    direction = incoming / max(float(np.linalg.norm(incoming)), 1e-9)
    if "head" in name.lower():
        radius = HEAD_RADIUS * scale
        return [Shape("sphere", "trunk", 0.8 * radius * direction, 0.8 * radius * direction, radius=radius)]
    return [_capsule(np.zeros(3), HAND_LENGTH * scale * direction, own_radius, body_part(name))]


def _sole_box(up, forward, back: float, front: float, depth: float, scale: float) -> Shape:
    """A box in a foot joint's frame: its bottom `depth` below the joint along `up`, from `back` behind
    to `front` ahead of it along `forward`."""
    side = cross3(up, forward)
    axes = np.stack([side, up, forward], axis=1)  # columns: the box's x (width), y (height), z (length)
    thickness = SOLE_THICKNESS * scale
    centre = forward * 0.5 * (front - back) + up * (thickness - depth)
    half = np.array([0.5 * FOOT_WIDTH * scale, thickness, 0.5 * (front + back)])
    return Shape("box", "foot", centre, centre, half_size=half, quat=quat_from_matrix(axes), sole=True)


def _foot_shapes(skeleton: dict, fit: BodyFit, foot: int, toe: int, floors, scale: float) -> dict:
    """{joint: [Shape]} for one foot: the ankle's sole box (heel to the toe joint, or to the tip without
    a toe joint) and the toe's (to the tip)."""
    offsets = np.asarray(skeleton["offsets"], float)
    end_sites = skeleton.get("end_sites") or {}
    up, forward = fit.sole_up[foot], fit.sole_forward[foot]
    if toe != foot:
        toe_ahead = float(offsets[toe] @ forward)
        shapes = {foot: [_sole_box(up, forward, HEEL_BACK * scale, toe_ahead, floors[0], scale)]}
        tip = np.asarray(end_sites.get(str(toe), np.zeros(3)), float)
        tip_ahead = max(float(tip @ fit.sole_forward[toe]), TOE_TIP * scale)
        shapes[toe] = [_sole_box(fit.sole_up[toe], fit.sole_forward[toe], 0.0, tip_ahead, floors[1], scale)]
        return shapes
    tip = np.asarray(end_sites.get(str(foot), np.zeros(3)), float)
    front = max(float(tip @ forward), (0.118 + TOE_TIP) * scale)
    return {foot: [_sole_box(up, forward, HEEL_BACK * scale, front, floors[0], scale)]}


def body_plan(skeleton: dict, fit: BodyFit, floor_heights) -> BodyPlan:
    """The simulated body of `skeleton` (the checkpoint's skeleton dict: names, parents, offsets in
    metres, end_sites) with joint zeros, limits and soles from `fit` and the floor level of each
    contact joint (Foot_L, Toes_L, Foot_R, Toes_R, m)."""
    names, parents = list(skeleton["names"]), np.asarray(skeleton["parents"], int)
    offsets = np.asarray(skeleton["offsets"], float)
    hips = hips_joint(names, parents)
    feet = foot_joints(names, parents)
    contact = contact_joint_order(feet)
    floors = np.asarray(floor_heights, float)
    scale = _leg_scale(skeleton, feet)
    body = [hips]
    for joint in range(len(names)):
        if parents[joint] in body:
            body.append(joint)
    foot_shapes = {**_foot_shapes(skeleton, fit, contact[0], contact[1], floors[0:2], scale),
                   **_foot_shapes(skeleton, fit, contact[2], contact[3], floors[2:4], scale)}
    nodes = []
    for joint in body:
        shapes = foot_shapes.get(joint) or _bone_shapes(skeleton, fit, joint, scale)
        if joint in (contact[0], contact[2]) and contact[1] != contact[0]:
            shapes = foot_shapes[joint]  # the ankle's bone to the toe is inside its sole box
        nodes.append(BodyNode(joint, -1 if joint == hips else int(parents[joint]), offsets[joint].copy(),
                              np.array([1.0, 0.0, 0.0, 0.0]) if joint == hips else fit.reference[joint].copy(),
                              float(fit.limits[joint]), shapes))
    plan = BodyPlan(names, parents, offsets, nodes, hips, _push_joint(names, parents, body, hips), contact, floors, [], scale)
    plan.excluded = overlapping_pairs(plan) + crossing_feet(plan)
    return plan


# ---------------------------------------------------------------------------------------------
# Overlaps in the reference pose


def reference_frames(plan: BodyPlan) -> dict:
    """{joint: (rotation [4], position [3])} of every body in the reference pose (hips at the origin)."""
    frames = {}
    for node in plan.nodes:
        if node.parent < 0:
            frames[node.joint] = (np.array([1.0, 0.0, 0.0, 0.0]), np.zeros(3))
            continue
        parent_rot, parent_pos = frames[node.parent]
        frames[node.joint] = (quat_mul(parent_rot, node.reference), parent_pos + quat_mul_vec(parent_rot, node.offset))
    return frames


def _segment(shape: Shape, rotation, position) -> tuple[np.ndarray, np.ndarray, float]:
    """A shape as a swept sphere (segment ends in the world, radius); a box by its long axis."""
    if shape.kind == "box":
        axis = quat_mul_vec(shape.quat, np.array([0.0, 0.0, shape.half_size[2]]))
        start, end, radius = shape.start - axis, shape.start + axis, float(max(shape.half_size[:2]))
    else:
        start, end, radius = shape.start, shape.end, shape.radius
    return position + quat_mul_vec(rotation, start), position + quat_mul_vec(rotation, end), radius


def segment_distance(a0, a1, b0, b1) -> float:
    """Shortest distance between segments a0-a1 and b0-b1 (sampled finely: exact enough for a margin)."""
    t = np.linspace(0.0, 1.0, 33)[:, None]
    a, b = a0 + t * (a1 - a0), b0 + t * (b1 - b0)
    return float(np.sqrt(((a[:, None] - b[None]) ** 2).sum(-1)).min())


def overlapping_pairs(plan: BodyPlan) -> list[tuple[int, int]]:
    """Pairs of bodies (not parent and child: MuJoCo never collides those) whose shapes come within
    OVERLAP_MARGIN of each other in the reference pose."""
    frames = reference_frames(plan)
    swept = {node.joint: [_segment(s, *frames[node.joint]) for s in node.shapes] for node in plan.nodes}
    pairs = []
    for i, first in enumerate(plan.nodes):
        for second in plan.nodes[i + 1:]:
            if second.parent == first.joint or first.parent == second.joint:
                continue
            gap = min((segment_distance(a0, a1, b0, b1) - ra - rb for a0, a1, ra in swept[first.joint]
                       for b0, b1, rb in swept[second.joint]), default=np.inf)
            if gap < OVERLAP_MARGIN:
                pairs.append((first.joint, second.joint))
    return pairs


def crossing_feet(plan: BodyPlan) -> list[tuple[int, int]]:
    """The lower legs and feet of the two sides (shin, ankle, toe): mocap steps brush them past each
    other (narrow walks, turns), and a sole catching the other foot would trip a body that only follows."""
    contact = plan.contact_joints
    sides = [{contact[0], contact[1], int(plan.parents[contact[0]])}, {contact[2], contact[3], int(plan.parents[contact[2]])}]
    return sorted((min(a, b), max(a, b)) for a in sides[0] for b in sides[1] if (min(a, b), max(a, b)) not in plan.excluded)
