"""A skinned body mesh for any humanoid skeleton, made from its bone lengths alone (pure numpy).

The body is a smooth implicit surface: tapered capsules ("round cones") along the bones, their signed
distance fields blended with a smooth minimum, meshed once with marching cubes in a bind pose (legs
straight and slightly apart, arms out at 45 degrees, spine upright, twists taken from a reference pose so
that joints bend the way they do in the data), decimated into levels of detail, and skinned with linear
blend skinning: each vertex follows up to four joints, weighted by its distance to their body parts.

- `Rig`: what the generator needs to know about a skeleton (parents, bone offsets, a reference pose).
- `body_layout(rig)`: which joints form the pelvis, spine, neck, arms and legs (topology and the
  reference pose; names are not needed).
- `bind_pose(rig, layout)`: the joint rotations and positions the mesh is made in.
- `body_primitives(...)`: the round cones, each with the joint that drives it and a material.
- `build_body(rig)` -> `BodyModel` (bind pose + `BodyMesh` levels of detail); `load_or_build_body`
  caches it in memory and on disk under a hash of the skeleton.
- `skinning_matrices(...)` and `skin_vertices(...)`: the per-frame transforms (the GPU does the same
  blend in `shaders/body.glsl`).

Conventions as in `pfnn_core/quat.py`: metres, +Y up, quaternions (w, x, y, z). The body frame used
for the bind pose faces +Z with its left side on +X.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pfnn_core.math.quat import quat_between, quat_from_yaw, quat_mul, quat_mul_vec, quat_to_matrix

BODY_MESH_VERSION = 1  # part of the cache key: bump it when the generator changes its output
INFLUENCES = 4  # joints per vertex
UP = np.array([0.0, 1.0, 0.0])

# Materials of a simple outfit (their colours are the renderer's palette)
SKIN, SHIRT, TROUSERS, SHOES, HAIR = range(5)


# ---------------------------------------------------------------------------------------------
# Skeleton description and layout


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


def _children(parents) -> list[list[int]]:
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
    children = _children(parents)
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


# ---------------------------------------------------------------------------------------------
# Bind pose


ARM_DOWN = np.radians(45.0)  # arms out and down in the bind pose, clear of the trunk
LEG_OUT = np.radians(4.0)  # legs slightly apart so the thighs do not merge


def bind_pose(rig: Rig, layout: BodyLayout) -> tuple[np.ndarray, np.ndarray]:
    """(world rotations [J, 4], positions [J, 3]) of the pose the mesh is made in, facing +Z. Every
    bone keeps its length; each limb bone is swung onto a canonical direction and keeps the twist it has
    in the reference pose, so skinning matrices stay close to what the motion needs."""
    parents = np.asarray(rig.parents)
    children = _children(parents)
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
    order = _topological_order(parents)
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


def _topological_order(parents) -> list[int]:
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


# ---------------------------------------------------------------------------------------------
# Primitives and the implicit surface


@dataclass
class Primitives:
    """Round cones: centres `a`, `b` [P, 3], radii `ra`, `rb` [P], a lateral stretch of the cross-section
    along the body's X [P] (the trunk is wider than deep), the joint that drives each [P], the group each
    belongs to [P] (cones of one group join with a plain minimum, groups with a smooth one) and the
    material of the surface they make [P]."""
    a: np.ndarray
    b: np.ndarray
    ra: np.ndarray
    rb: np.ndarray
    stretch: np.ndarray
    joint: np.ndarray
    group: np.ndarray
    material: np.ndarray


class _PrimitiveList:
    def __init__(self):
        self.rows, self.group = [], 0

    def new_group(self) -> None:
        self.group += 1

    def add(self, a, b, ra, rb, joint, material, stretch=1.0) -> None:
        self.rows.append((np.asarray(a, float), np.asarray(b, float), float(ra), float(rb), float(stretch),
                          int(joint), self.group, int(material)))

    def profile(self, points, radii, joint, materials, stretch=1.0) -> None:
        """Cones between consecutive points (one group); `stretch` and `materials` per segment or one."""
        count = len(points) - 1
        stretches = np.broadcast_to(np.asarray(stretch, float), (count,))
        materials = np.broadcast_to(np.asarray(materials, int), (count,))
        joints = np.broadcast_to(np.asarray(joint, int), (count,))
        for k in range(count):
            self.add(points[k], points[k + 1], radii[k], radii[k + 1], joints[k], materials[k], stretches[k])

    def done(self) -> Primitives:
        columns = list(zip(*self.rows))
        return Primitives(np.array(columns[0]), np.array(columns[1]), np.array(columns[2]), np.array(columns[3]),
                          np.array(columns[4]), np.array(columns[5]), np.array(columns[6]), np.array(columns[7]))


# Radii in metres for the bundled skeleton's proportions (hip-to-ankle 0.80 m); scaled by BodyLayout.scale.
TRUNK_PROFILE = (  # height fraction from the pelvis (0) to the neck's base (1): depth radius, width / depth
    (0.00, 0.092, 1.45), (0.22, 0.088, 1.40), (0.42, 0.085, 1.38), (0.70, 0.098, 1.45), (0.88, 0.085, 1.45),
    (1.00, 0.055, 1.10))
WAIST = 0.36  # height fraction where the shirt meets the trousers
THIGH = ((0.0, 0.082), (0.35, 0.073), (1.0, 0.051))
SHIN = ((0.0, 0.050), (0.28, 0.056), (1.0, 0.037))
UPPER_ARM = ((0.0, 0.050), (0.5, 0.044), (1.0, 0.037))
FOREARM = ((0.0, 0.037), (0.35, 0.038), (1.0, 0.028))
SLEEVE = 0.55  # fraction of the upper arm under the shirt
SHOULDER_WIDTH = 0.165  # half-width at the shoulders the arms are moved out to (the data's joints sit inside)
ELBOW_SHIFT = 0.35  # the part of that move left at the elbow


def _profile_points(start, end, profile, scale):
    fractions = np.array([f for f, _ in profile])
    return start + fractions[:, None] * (end - start), np.array([r for _, r in profile]) * scale, fractions


def body_primitives(rig: Rig, layout: BodyLayout, bind_pos: np.ndarray) -> Primitives:
    """The round cones of the body around the bind pose."""
    parents = np.asarray(rig.parents)
    children = _children(parents)
    s = layout.scale
    prims = _PrimitiveList()

    # trunk: one profile from the pelvis through the spine joints to the neck's base, elliptical
    trunk = [layout.pelvis] + layout.spine[1:] + [layout.neck[0]]
    heights = np.array([bind_pos[j, 1] for j in trunk])
    span = max(heights[-1] - heights[0], 1e-6)
    table = np.array(TRUNK_PROFILE)
    for k in range(len(trunk) - 1):
        start, end = bind_pos[trunk[k]], bind_pos[trunk[k + 1]]
        pieces = max(2, int(np.ceil(np.linalg.norm(end - start) / (0.04 * s))))
        t = np.linspace(0.0, 1.0, pieces + 1)
        points = start + t[:, None] * (end - start)
        u = (points[:, 1] - heights[0]) / span
        radii = np.interp(u, table[:, 0], table[:, 1]) * s
        stretch = np.interp(u, table[:, 0], table[:, 2])
        mid = 0.5 * (u[1:] + u[:-1])
        materials = np.where(mid < WAIST, TROUSERS, SHIRT)
        prims.new_group()
        prims.profile(points, radii, trunk[k], materials, 0.5 * (stretch[1:] + stretch[:-1]))

    # hips: the pelvis bones out to the legs
    for leg in layout.legs:
        hip = leg.joints[leg.upper]
        thigh_radius = THIGH[0][1] * s
        prims.new_group()
        prims.add(bind_pos[layout.pelvis] + [0.0, 0.01 * s, -0.01 * s], bind_pos[hip], 0.085 * s, thigh_radius,
                  layout.pelvis, TROUSERS)
        for joint in leg.joints[:leg.upper]:  # extra pelvis-side bones (e.g. a LHipJoint)
            prims.add(bind_pos[joint], bind_pos[children[joint][0]], thigh_radius, thigh_radius, joint, TROUSERS)

    # legs and feet
    for leg in layout.legs:
        hip, knee, ankle = (leg.joints[leg.upper + k] for k in range(3))
        for start, end, profile in ((hip, knee, THIGH), (knee, ankle, SHIN)):
            points, radii, _ = _profile_points(bind_pos[start], bind_pos[end], profile, s)
            prims.new_group()
            prims.profile(points, radii, start, TROUSERS)
        _add_foot(prims, leg, bind_pos, children, s)

    # shoulders and arms: the data's shoulder joints sit close to the spine, so the arm's surface is
    # moved out to a natural shoulder width at the shoulder, less at the elbow and not at all at the
    # wrist (the hands stay on the wrists); it still turns about the real joints
    for arm in layout.arms:
        chest = parents[arm.joints[0]]
        shoulder = arm.joints[arm.upper]
        elbow, wrist = arm.joints[arm.upper + 1], arm.joints[arm.upper + 2]
        shift = np.array([arm.side * max(0.0, SHOULDER_WIDTH * s - abs(bind_pos[shoulder, 0] - bind_pos[chest, 0])),
                          0.0, 0.0])
        clavicle = [chest] + arm.joints[:arm.upper + 1]
        prims.new_group()
        for k in range(len(clavicle) - 1):
            start, end = bind_pos[clavicle[k]], bind_pos[clavicle[k + 1]]
            end_shift = shift if k == len(clavicle) - 2 else shift * 0.5
            start_shift = np.zeros(3) if k == 0 else shift * 0.5
            if k == 0:
                start = start + np.array([0.0, 0.03 * s, 0.0])
            prims.add(start + start_shift, end + end_shift, 0.055 * s, 0.052 * s, clavicle[k], SHIRT)
        shoulder_point, elbow_point = bind_pos[shoulder] + shift, bind_pos[elbow] + ELBOW_SHIFT * shift
        prims.new_group()
        prims.add(shoulder_point, shoulder_point + np.array([0.0, -0.01 * s, 0.0]), 0.052 * s, 0.05 * s, shoulder,
                  SHIRT)  # deltoid
        points, radii, _ = _profile_points(shoulder_point, elbow_point, UPPER_ARM, s)
        points = np.insert(points, 2, shoulder_point + SLEEVE * (elbow_point - shoulder_point), 0)
        radii = np.insert(radii, 2, np.interp(SLEEVE, [f for f, _ in UPPER_ARM], [r for _, r in UPPER_ARM]) * s)
        prims.new_group()
        prims.profile(points, radii, shoulder, [SHIRT, SHIRT, SKIN, SKIN][:len(points) - 1])
        points, radii, _ = _profile_points(elbow_point, bind_pos[wrist], FOREARM, s)
        prims.new_group()
        prims.profile(points, radii, elbow, SKIN)
        direction = _unit(bind_pos[wrist] - elbow_point)
        palm = bind_pos[wrist]
        prims.new_group()
        prims.add(palm + 0.02 * s * direction, palm + 0.08 * s * direction, 0.032 * s, 0.030 * s, wrist, SKIN)
        prims.add(palm + 0.08 * s * direction, palm + 0.125 * s * direction, 0.030 * s, 0.022 * s, wrist, SKIN)

    # neck and head
    neck_chain = layout.neck
    for k in range(len(neck_chain) - 1):
        prims.new_group()
        prims.add(bind_pos[neck_chain[k]], bind_pos[neck_chain[k + 1]], 0.047 * s, 0.045 * s, neck_chain[k], SKIN)
    head = neck_chain[-1]
    base = bind_pos[head]
    forward = np.array([0.0, 0.0, 1.0])
    prims.new_group()  # an egg, narrower than deep, from the chin to the crown
    prims.add(base + s * (0.055 * UP + 0.022 * forward), base + s * (0.125 * UP - 0.004 * forward), 0.066 * s,
              0.088 * s, head, SKIN, 0.88)
    return prims.done()


def _add_foot(prims: _PrimitiveList, leg: Limb, bind_pos, children, s) -> None:
    """Ankle, heel, sole and toes: a shoe whose sole lies on the ground when the foot does in the
    reference pose."""
    ankle = leg.joints[leg.upper + 2]
    rest = leg.joints[leg.upper + 3:]
    forward = np.array([0.0, 0.0, 1.0])
    ankle_radius, toe_radius, heel_radius, tip_radius = 0.040 * s, 0.030 * s, 0.034 * s, 0.026 * s
    if rest:
        toe = rest[0]
        ball = bind_pos[toe]
        toe_joint = toe
    else:  # no toe joint: a foot of typical length ahead of and below the ankle
        ball = bind_pos[ankle] + s * np.array([0.0, -0.085, 0.08])
        toe_joint = ankle
    sole = ball[1] - toe_radius
    heel = np.array([bind_pos[ankle, 0], sole + heel_radius, bind_pos[ankle, 2] - 0.045 * s])
    tip = np.array([ball[0], sole + tip_radius, ball[2] + 0.06 * s])
    prims.new_group()
    prims.add(bind_pos[ankle], ball, ankle_radius, toe_radius, ankle, SHOES, 1.2)
    prims.add(bind_pos[ankle], heel, ankle_radius, heel_radius, ankle, SHOES, 1.15)
    prims.add(heel, ball, heel_radius, toe_radius, ankle, SHOES, 1.25)
    prims.new_group()
    prims.add(ball, tip, toe_radius, tip_radius, toe_joint, SHOES, 1.3)
    for joint in rest[1:]:  # further toe bones, if any
        prims.add(bind_pos[parent_of(children, joint)], bind_pos[joint], tip_radius, tip_radius, joint, SHOES)


def parent_of(children, joint) -> int:
    return next(p for p, kids in enumerate(children) if joint in kids)


def _unit(v):
    return v / max(np.linalg.norm(v), 1e-12)


def round_cone_distance(points: np.ndarray, a, b, ra, rb, stretch=1.0) -> np.ndarray:
    """Signed distance [N] from points [N, 3] to a round cone (spheres of radius ra at a and rb at b and
    the cone tangent to both), with its cross-section stretched `stretch` times along X (a distance
    bound, exact when stretch is 1)."""
    points = np.asarray(points, np.float64)
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if stretch != 1.0:
        points = points.copy()
        axis_x = a[0]
        points[:, 0] = axis_x + (points[:, 0] - axis_x) / stretch
        b = b.copy()
        b[0] = axis_x + (b[0] - axis_x) / stretch
    ba = b - a
    l2 = float(ba @ ba)
    rr = ra - rb
    a2 = l2 - rr * rr
    if l2 < 1e-12 or a2 <= 0.0:  # one sphere contains the other
        return np.minimum(np.linalg.norm(points - a, axis=-1) - ra, np.linalg.norm(points - b, axis=-1) - rb)
    il2 = 1.0 / l2
    pa = points - a
    y = pa @ ba
    z = y - l2
    x2 = np.sum((pa * l2 - y[:, None] * ba) ** 2, axis=-1)
    y2 = y * y * l2
    z2 = z * z * l2
    k = np.sign(rr) * rr * rr * x2
    far_end = np.sign(z) * a2 * z2 > k
    near_end = np.sign(y) * a2 * y2 < k
    side = (np.sqrt(np.maximum(x2 * a2 * il2, 0.0)) + y * rr) * il2 - ra
    return np.where(far_end, np.sqrt(x2 + z2) * il2 - rb, np.where(near_end, np.sqrt(x2 + y2) * il2 - ra, side))


def smooth_min(a: np.ndarray, b: np.ndarray, k: float) -> np.ndarray:
    """Polynomial smooth minimum: min(a, b) where they differ by more than k, a fillet of radius ~k
    where they meet."""
    h = np.maximum(k - np.abs(a - b), 0.0) / k
    return np.minimum(a, b) - h * h * k * 0.25


def primitive_distances(points: np.ndarray, prims: Primitives) -> np.ndarray:
    """[N, P] signed distance of every point to every round cone."""
    return np.stack([round_cone_distance(points, prims.a[p], prims.b[p], prims.ra[p], prims.rb[p], prims.stretch[p])
                     for p in range(len(prims.a))], axis=-1)


def body_field(points: np.ndarray, prims: Primitives, blend: float) -> np.ndarray:
    """The body's signed distance at points [N, 3]: plain minimum within a group, smooth between groups."""
    distances = primitive_distances(points, prims)
    field = None
    for group in np.unique(prims.group):
        group_distance = distances[:, prims.group == group].min(axis=-1)
        field = group_distance if field is None else smooth_min(field, group_distance, blend)
    return field


def _field_on_grid(prims: Primitives, origin, shape, voxel, blend, band) -> np.ndarray:
    """The field on a regular grid, evaluated per group only inside that group's box (elsewhere the
    group is farther than `band` and cannot move the surface); values are clamped at `band`."""
    field = np.full(shape, band, np.float64)
    for group in np.unique(prims.group):
        members = np.flatnonzero(prims.group == group)
        reach = np.maximum(prims.ra[members], prims.rb[members]) * np.maximum(prims.stretch[members], 1.0)
        low = np.minimum(prims.a[members], prims.b[members]) - reach[:, None] - band - blend
        high = np.maximum(prims.a[members], prims.b[members]) + reach[:, None] + band + blend
        lo = np.clip(np.floor((low.min(axis=0) - origin) / voxel).astype(int), 0, np.array(shape) - 1)
        hi = np.clip(np.ceil((high.max(axis=0) - origin) / voxel).astype(int) + 1, 1, np.array(shape))
        axes = [origin[d] + voxel * np.arange(lo[d], hi[d]) for d in range(3)]
        grid = np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, 3)
        group_distance = np.full(len(grid), np.inf)
        for p in members:
            group_distance = np.minimum(group_distance, round_cone_distance(
                grid, prims.a[p], prims.b[p], prims.ra[p], prims.rb[p], prims.stretch[p]))
        block = (slice(lo[0], hi[0]), slice(lo[1], hi[1]), slice(lo[2], hi[2]))
        field[block] = smooth_min(field[block], group_distance.reshape(field[block].shape), blend)
    return np.minimum(field, band)


# ---------------------------------------------------------------------------------------------
# Mesh, weights, levels of detail


@dataclass
class BodyMesh:
    """One level of detail, in the bind pose. Arrays are float32 / int32, ready for the GPU."""
    vertices: np.ndarray  # [V, 3]
    normals: np.ndarray  # [V, 3] unit, outward
    triangles: np.ndarray  # [T, 3] counter-clockwise seen from outside
    joints: np.ndarray  # [V, 4] joint indices
    weights: np.ndarray  # [V, 4] summing to 1
    materials: np.ndarray  # [V, 4] scores of shirt, trousers, shoes, hair against skin (`material_scores`)


@dataclass
class BodyModel:
    key: str
    bind_rot: np.ndarray  # [J, 4] world rotations of the bind pose
    bind_pos: np.ndarray  # [J, 3]
    lods: list = field(default_factory=list)  # [BodyMesh], most detailed first


LOD_TRIANGLES = (12000, 1800, 600)  # followed character; crowd; far crowd and shadows


def marching_cubes_surface(prims: Primitives, voxel: float, blend: float) -> tuple[np.ndarray, np.ndarray]:
    """(vertices [V, 3], triangles [T, 3]) of the field's zero level, outward-wound."""
    from skimage.measure import marching_cubes

    reach = np.maximum(prims.ra, prims.rb) * np.maximum(prims.stretch, 1.0)
    low = np.minimum(prims.a, prims.b).min(axis=0) - reach.max() - 3 * voxel - blend
    high = np.maximum(prims.a, prims.b).max(axis=0) + reach.max() + 3 * voxel + blend
    shape = tuple(int(v) for v in np.ceil((high - low) / voxel) + 1)
    field = _field_on_grid(prims, low, shape, voxel, blend, band=3 * voxel)
    vertices, triangles, _, _ = marching_cubes(field, level=0.0, spacing=(voxel,) * 3)
    vertices = vertices + low
    triangles = triangles.astype(np.int64)
    if _signed_volume(vertices, triangles) < 0:
        triangles = triangles[:, ::-1]
    return vertices, np.ascontiguousarray(triangles)


def _signed_volume(vertices, triangles) -> float:
    a, b, c = (vertices[triangles[:, k]] for k in range(3))
    return float(np.sum(np.einsum("ij,ij->i", a, np.cross(b, c))) / 6.0)


def field_normals(points: np.ndarray, prims: Primitives, blend: float, step: float) -> np.ndarray:
    """Unit gradients of the field (outward normals) by central differences."""
    gradient = np.zeros_like(points)
    for axis in range(3):
        delta = np.zeros(3)
        delta[axis] = step
        gradient[:, axis] = body_field(points + delta, prims, blend) - body_field(points - delta, prims, blend)
    return gradient / np.maximum(np.linalg.norm(gradient, axis=-1, keepdims=True), 1e-12)


def project_to_surface(points: np.ndarray, prims: Primitives, blend: float, step: float,
                       iterations: int = 2) -> np.ndarray:
    """Points moved onto the field's zero level along its gradient (decimation leaves vertices a few
    millimetres off the surface, which shows as dents in the shading)."""
    for _ in range(iterations):
        points = points - body_field(points, prims, blend)[:, None] * field_normals(points, prims, blend, step)
    return points


def skin_weights(points: np.ndarray, prims: Primitives, parents, falloff: float) -> tuple[np.ndarray, np.ndarray]:
    """(joints [V, 4], weights [V, 4]): per vertex the joint of the nearest body part and the joints
    next to it in the skeleton (parent, children), weighted by a Gaussian of how much farther their
    parts are than the nearest, the four largest kept and normalised."""
    parents = np.asarray(parents)
    distances = primitive_distances(points, prims)
    joints = np.unique(prims.joint)
    per_joint = np.stack([distances[:, prims.joint == j].min(axis=-1) for j in joints], axis=-1)  # [V, K]
    nearest = joints[np.argmin(per_joint, axis=-1)]
    nearest_distance = per_joint.min(axis=-1, keepdims=True)
    adjacent = (joints[None, :] == nearest[:, None]) | (parents[joints][None, :] == nearest[:, None]) | \
        (parents[nearest][:, None] == joints[None, :])
    weight = np.exp(-((per_joint - nearest_distance) / falloff) ** 2) * adjacent
    order = np.argsort(-weight, axis=-1)[:, :INFLUENCES]
    top = np.take_along_axis(weight, order, axis=-1)
    top = np.where(top > 0.02 * top[:, :1], top, 0.0)
    top /= top.sum(axis=-1, keepdims=True)
    chosen = joints[order]
    chosen = np.where(top > 0, chosen, chosen[:, :1])
    return chosen.astype(np.int32), top.astype(np.float32)


def material_scores(points: np.ndarray, prims: Primitives, head: int, head_base: np.ndarray,
                    scale: float) -> np.ndarray:
    """[V, 4] scores of shirt, trousers, shoes and hair against skin: positive where that material's
    parts are nearer than the skin's (hair: above a hairline plane on the head). They vary smoothly over
    the surface, so the fragment shader's largest-score choice draws straight hems between vertices."""
    # a part's distance grows with how far the point lies beyond the ends of its cone's axis: where two
    # cones of a profile meet (a sleeve's hem, the waist) the scores then change sign linearly across
    # the plane of the joint instead of hovering near zero (which draws a saw-tooth hem)
    axis = prims.b - prims.a
    length = np.maximum(np.linalg.norm(axis, axis=-1), 1e-9)
    along = np.einsum("npk,pk->np", points[:, None, :] - prims.a[None], axis) / length ** 2
    distances = primitive_distances(points, prims) + np.maximum(np.maximum(-along, along - 1.0), 0.0) * length
    far = 1.0

    def nearest(mask):
        return distances[:, mask].min(axis=-1) if mask.any() else np.full(len(points), far)

    skin = nearest(prims.material == SKIN)
    scores = np.stack([np.clip(skin - nearest(prims.material == m), -far, far) for m in (SHIRT, TROUSERS, SHOES)], -1)
    on_head = nearest(prims.joint != head) - nearest(prims.joint == head)
    relative = points - head_base
    # the hairline: high over the forehead, down to the nape at the back, a little lower at the sides
    line = 0.095 + 0.058 * np.tanh(relative[:, 2] / (0.03 * scale)) - 0.012 * (relative[:, 0] / (0.07 * scale)) ** 2
    hairline = relative[:, 1] - scale * line
    hair = np.clip(np.minimum(hairline, on_head), -far, far)
    return np.concatenate([scores, hair[:, None]], axis=-1).astype(np.float32)


def decimate(vertices, triangles, count) -> tuple[np.ndarray, np.ndarray]:
    """Quadric edge-collapse decimation down to about `count` triangles (unchanged when already fewer)."""
    if len(triangles) <= count:
        return vertices, triangles
    import fast_simplification

    points, faces = fast_simplification.simplify(np.asarray(vertices, np.float64), np.asarray(triangles, np.int32),
                                                 target_count=int(count))
    used = np.unique(faces)
    remap = np.full(len(points), -1, np.int64)
    remap[used] = np.arange(len(used))
    return points[used], remap[faces]


def build_body(rig: Rig, voxel: float | None = None, lod_triangles=LOD_TRIANGLES) -> BodyModel:
    """The body model of a rig: bind pose, surface, levels of detail with normals, weights and material
    scores."""
    layout = body_layout(rig)
    bind_rot, bind_pos = bind_pose(rig, layout)
    prims = body_primitives(rig, layout, bind_pos)
    s = layout.scale
    voxel = 0.009 * s if voxel is None else voxel
    blend = 0.02 * s
    vertices, triangles = marching_cubes_surface(prims, voxel, blend)
    lods = []
    for count in lod_triangles:
        points, faces = decimate(vertices, triangles, count)
        points = project_to_surface(points, prims, blend, 0.25 * voxel)
        normals = field_normals(points, prims, blend, 0.25 * voxel)
        joints, weights = skin_weights(points, prims, rig.parents, falloff=0.022 * s)
        materials = material_scores(points, prims, layout.neck[-1], bind_pos[layout.neck[-1]], s)
        lods.append(BodyMesh(points.astype(np.float32), normals.astype(np.float32), faces.astype(np.int32),
                             joints, weights, materials))
    return BodyModel(rig.key(), bind_rot, bind_pos, lods)


# ---------------------------------------------------------------------------------------------
# Cache


def default_cache_dir() -> Path:
    """Where generated meshes are kept between runs: $PFNN_CACHE_DIR, else the user's cache folder."""
    if os.environ.get("PFNN_CACHE_DIR"):
        return Path(os.environ["PFNN_CACHE_DIR"]) / "body-mesh"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "pfnn-viewer" / "body-mesh"


_MESH_FIELDS = ("vertices", "normals", "triangles", "joints", "weights", "materials")


def save_body(model: BodyModel, path: Path) -> None:
    arrays = {"bind_rot": model.bind_rot, "bind_pos": model.bind_pos}
    for index, lod in enumerate(model.lods):
        arrays.update({f"lod{index}_{name}": getattr(lod, name) for name in _MESH_FIELDS})
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp.npz")
    np.savez_compressed(temporary, **arrays)
    os.replace(temporary, path)


def load_body(path: Path, key: str) -> BodyModel:
    with np.load(path, allow_pickle=False) as data:
        count = len({name.split("_")[0] for name in data.files if name.startswith("lod")})
        lods = [BodyMesh(**{name: data[f"lod{index}_{name}"] for name in _MESH_FIELDS}) for index in range(count)]
        return BodyModel(key, data["bind_rot"], data["bind_pos"], lods)


def load_or_build_body(rig: Rig, cache_dir: Path | None = None) -> BodyModel:
    """The rig's body from the disk cache, or built and saved there (a cache that cannot be read or
    written is rebuilt / skipped, never fatal)."""
    key = rig.key()
    path = Path(cache_dir if cache_dir is not None else default_cache_dir()) / f"{key}.npz"
    if path.exists():
        try:
            model = load_body(path, key)
            if len(model.bind_pos) == len(rig.parents):
                return model
        except (OSError, ValueError, KeyError):
            pass
    model = build_body(rig)
    try:
        save_body(model, path)
    except OSError:
        pass
    return model


# ---------------------------------------------------------------------------------------------
# Skinning


def skinning_matrices(rotations: np.ndarray, positions: np.ndarray, bind_rot: np.ndarray,
                      bind_pos: np.ndarray) -> np.ndarray:
    """[..., J, 3, 4] matrices taking bind-pose points to the pose (world rotations [..., J, 4] or
    rotation matrices [..., J, 3, 3], positions [..., J, 3]): x -> R R_bind^T (x - p_bind) + p."""
    rotations = np.asarray(rotations, np.float64)
    rotation = quat_to_matrix(rotations) if rotations.shape[-1] == 4 else rotations
    relative = rotation @ np.swapaxes(quat_to_matrix(np.asarray(bind_rot, np.float64)), -1, -2)
    translation = positions - np.einsum("...ij,...j->...i", relative, np.asarray(bind_pos, np.float64))
    return np.concatenate([relative, translation[..., None]], axis=-1)


def skin_vertices(mesh: BodyMesh, matrices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Linear blend skinning on the CPU (the reference for the vertex shader): (positions, normals)."""
    blended = np.einsum("vk,vkij->vij", mesh.weights.astype(np.float64), matrices[mesh.joints])
    positions = np.einsum("vij,vj->vi", blended[:, :, :3], mesh.vertices) + blended[:, :, 3]
    normals = np.einsum("vij,vj->vi", blended[:, :, :3], mesh.normals)
    return positions, normals / np.maximum(np.linalg.norm(normals, axis=-1, keepdims=True), 1e-12)



def rotation_plan(rig: Rig):
    """What fitting rotations to a positions-only rig needs (`pfnn_core.pose.skeleton_plan` without names)."""
    from pfnn_core.runtime.pose import skeleton_plan

    parents = np.asarray(rig.parents)
    return skeleton_plan(None, parents, rig.offsets, anchor=int(np.flatnonzero(parents < 0)[0]))


def rotations_from_positions(rig: Rig, positions: np.ndarray, fit=None) -> np.ndarray:
    """World rotation matrices [..., J, 3, 3] for a source that has joint positions only (a rig from
    `rig_from_positions`): each bone swung from its reference direction onto its current one, a joint
    with several children turned to fit all of them, leaves turned with their parents. `fit`:
    `rotation_plan(rig)`, made once by callers that run every frame."""
    from pfnn_core.runtime.pose import fit_rotations_to_positions

    parents = np.asarray(rig.parents)
    positions = np.asarray(positions, np.float64)
    identity = np.broadcast_to(np.eye(3), positions.shape[:-1] + (3, 3))
    matrices = fit_rotations_to_positions(identity, positions, fit if fit is not None else rotation_plan(rig))
    has_children = np.zeros(len(parents), bool)
    has_children[parents[parents >= 0]] = True
    for joint in _topological_order(parents):
        if not has_children[joint] and parents[joint] >= 0:
            matrices[..., joint, :, :] = matrices[..., parents[joint], :, :]
    return matrices
