"""The body as round cones ("tapered capsules") around the bind pose: trunk, hips, legs and shoes,
shoulders and arms, neck and head, each cone with the joint that drives it, its blend group and the
material of a simple outfit (whose colours are the renderer's palette)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.render.body.rig import UP, BodyLayout, Limb, Rig, children_of

# Materials of a simple outfit (their colours are the renderer's palette)
SKIN, SHIRT, TROUSERS, SHOES, HAIR = range(5)


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
    children = children_of(parents)
    s = layout.scale
    prims = _PrimitiveList()
    _add_trunk(prims, layout, bind_pos, s)
    _add_hips(prims, layout, bind_pos, children, s)
    for leg in layout.legs:
        _add_leg(prims, leg, bind_pos, s)
        _add_foot(prims, leg, bind_pos, children, s)
    for arm in layout.arms:
        _add_arm(prims, arm, parents, bind_pos, s)
    _add_neck_and_head(prims, layout, bind_pos, s)
    return prims.done()


def _add_trunk(prims: _PrimitiveList, layout: BodyLayout, bind_pos, s) -> None:
    """One profile from the pelvis through the spine joints to the neck's base, elliptical."""
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


def _add_hips(prims: _PrimitiveList, layout: BodyLayout, bind_pos, children, s) -> None:
    """The pelvis bones out to the legs."""
    for leg in layout.legs:
        hip = leg.joints[leg.upper]
        thigh_radius = THIGH[0][1] * s
        prims.new_group()
        prims.add(bind_pos[layout.pelvis] + [0.0, 0.01 * s, -0.01 * s], bind_pos[hip], 0.085 * s, thigh_radius,
                  layout.pelvis, TROUSERS)
        for joint in leg.joints[:leg.upper]:  # extra pelvis-side bones (e.g. a LHipJoint)
            prims.add(bind_pos[joint], bind_pos[children[joint][0]], thigh_radius, thigh_radius, joint, TROUSERS)


def _add_leg(prims: _PrimitiveList, leg: Limb, bind_pos, s) -> None:
    """Thigh and shin profiles."""
    hip, knee, ankle = (leg.joints[leg.upper + k] for k in range(3))
    for start, end, profile in ((hip, knee, THIGH), (knee, ankle, SHIN)):
        points, radii, _ = _profile_points(bind_pos[start], bind_pos[end], profile, s)
        prims.new_group()
        prims.profile(points, radii, start, TROUSERS)


def _add_arm(prims: _PrimitiveList, arm: Limb, parents, bind_pos, s) -> None:
    """Clavicle, deltoid, sleeved upper arm, forearm and hand. The data's shoulder joints sit close to the
    spine, so the arm's surface is moved out to a natural shoulder width at the shoulder, less at the
    elbow and not at all at the wrist (the hands stay on the wrists); it still turns about the real joints."""
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


def _add_neck_and_head(prims: _PrimitiveList, layout: BodyLayout, bind_pos, s) -> None:
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


def _add_foot(prims: _PrimitiveList, leg: Limb, bind_pos, children, s) -> None:
    """Ankle, heel, sole and toes: a shoe whose sole lies on the ground when the foot does in the
    reference pose."""
    ankle = leg.joints[leg.upper + 2]
    rest = leg.joints[leg.upper + 3:]
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
