"""The MJCF text of a `BodyPlan`: `mjcf_text(plan)`, and `plan_digest` (the hash it is cached by).

Conventions: the MuJoCo world is the project's (+Y up, metres): gravity is (0, -9.81, 0) and the floor
plane, whose normal is its local +Z, is turned to face +Y at height 0 (the capture's floor). Each body's
frame is its joint's BVH frame: a body sits at its BVH offset in its parent's frame, turned by its
joint's reference rotation, so a ball joint's quaternion is the BVH local rotation measured from the
reference. The hips body is free (a free joint); the tracker holds it to the kinematic hips with residual
forces of its own (the "hand of god"), its damping on the free joint's dofs.
Every ball joint is a servo made of its own spring (stiffness toward
`qpos_spring`) and damping; their gains, the root's damping, the friction, the masses and the time
step are set on the compiled model from the live settings (`body.PhysicsBody.apply`). Contacts are
stiffer than MuJoCo's default (a 60 kg body on one foot sank 1.4 cm into the floor with it).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

from pfnn_core.physics.geometry import BodyPlan, Shape

MJCF_VERSION = 2  # part of the cache key: bump it when the text written changes
FLOOR_QUAT = (0.70710678, -0.70710678, 0.0, 0.0)  # turns the plane's +Z normal to +Y
FLOOR = "floor"
CONTACT_SOLREF, CONTACT_SOLIMP = "0.005 1", "0.95 0.99 0.001"  # time constant (s), damping ratio; impedance
DENSITIES = {"trunk": 1000.0, "arm": 1050.0, "leg": 1050.0, "foot": 1100.0}  # kg/m^3 per body part
ARMATURE = 0.01  # kg m^2 added to every joint axis: keeps the light bodies (hands, toes) stable


def _numbers(values) -> str:
    return " ".join(f"{float(v):.6g}" for v in np.ravel(values))


def body_name(plan: BodyPlan, joint: int) -> str:
    return plan.names[joint]


def _geom(shape: Shape, name: str) -> str:
    common = f'name={quoteattr(name)} density="{DENSITIES[shape.part]:g}"'
    if shape.kind == "capsule":
        ends = _numbers(np.concatenate([shape.start, shape.end]))
        return f'<geom {common} type="capsule" size="{shape.radius:.6g}" fromto="{ends}"/>'
    if shape.kind == "sphere":
        return f'<geom {common} type="sphere" size="{shape.radius:.6g}" pos="{_numbers(shape.start)}"/>'
    return (f'<geom {common} type="box" size="{_numbers(shape.half_size)}" pos="{_numbers(shape.start)}" '
            f'quat="{_numbers(shape.quat)}"/>')


def _bodies(plan: BodyPlan) -> list[str]:
    """The body tree as nested <body> lines, the hips first."""
    children = {node.joint: [n for n in plan.nodes if n.parent == node.joint] for node in plan.nodes}
    lines = []

    def write(node, depth):
        pad = "  " * depth
        name = body_name(plan, node.joint)
        if node.parent < 0:
            lines.append(f'{pad}<body name={quoteattr(name)} pos="0 1 0">')
            lines.append(f'{pad}  <freejoint name="root"/>')
        else:
            lines.append(f'{pad}<body name={quoteattr(name)} pos="{_numbers(node.offset)}" quat="{_numbers(node.reference)}">')
            lines.append(f'{pad}  <joint name={quoteattr(name)} type="ball" range="0 {node.limit:.6g}"/>')
        for index, shape in enumerate(node.shapes):
            lines.append(f"{pad}  " + _geom(shape, f"{name}:{shape.kind}{index}"))
        for child in children[node.joint]:
            write(child, depth + 1)
        lines.append(f"{pad}</body>")

    write(plan.nodes[0], 2)
    return lines


def sole_geom_names(plan: BodyPlan) -> list[str]:
    """The names of the contact joints' sole boxes, in the order of `plan.contact_joints`, each once (a
    rig without toes has one box for its heel and toe contact joints)."""
    return list(dict.fromkeys(f"{body_name(plan, j)}:box{i}" for j in plan.contact_joints
                              for i, shape in enumerate(plan.node(j).shapes) if shape.kind == "box"))


def _sole_sensors(plan: BodyPlan) -> list[str]:
    """One contact sensor per sole box: the floor's whole force on it (world axes, N), which MuJoCo sums
    over the box's contacts inside every step."""
    return [f'    <contact name={quoteattr("floor>" + name)} geom1="{FLOOR}" geom2={quoteattr(name)} data="force" '
            f'reduce="netforce" num="1"/>' for name in sole_geom_names(plan)]


def mjcf_text(plan: BodyPlan, timestep: float = 1.0 / 480.0) -> str:
    """The MJCF model of the plan (one character and a floor)."""
    excludes = [f"    <exclude body1={quoteattr(body_name(plan, a))} body2={quoteattr(body_name(plan, b))}/>"
                for a, b in plan.excluded]
    lines = [
        f'<mujoco model="pfnn-body-{plan_digest(plan)}">',
        '  <compiler angle="radian" autolimits="true"/>',
        f'  <option timestep="{timestep:.6g}" integrator="implicitfast" gravity="0 -9.81 0"/>',
        "  <default>",
        f'    <joint armature="{ARMATURE:g}" limited="true"/>',
        f'    <geom condim="3" friction="1 0.005 0.0001" solref="{CONTACT_SOLREF}" solimp="{CONTACT_SOLIMP}"/>',
        "  </default>",
        "  <worldbody>",
        f'    <geom name="{FLOOR}" type="plane" size="0 0 1" quat="{_numbers(FLOOR_QUAT)}"/>',
        *_bodies(plan),
        "  </worldbody>",
        "  <contact>", *excludes, "  </contact>",
        "  <sensor>", *_sole_sensors(plan), "  </sensor>",
        "</mujoco>",
    ]
    return "\n".join(lines) + "\n"


def plan_digest(plan: BodyPlan) -> str:
    """A hash of everything the MJCF text is made of (the skeleton, its fit, the floor levels, and this
    file's own source, which writes it)."""
    source = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()
    parts = [MJCF_VERSION, source, plan.names, plan.parents.tolist(), plan.root, plan.chest, plan.excluded]
    for node in plan.nodes:
        parts.append([node.joint, node.parent, np.round(node.offset, 6).tolist(), np.round(node.reference, 6).tolist(),
                      round(node.limit, 6)])
        for shape in node.shapes:
            parts.append([shape.kind, shape.part, np.round(shape.start, 6).tolist(), np.round(shape.end, 6).tolist(),
                          round(shape.radius, 6), None if shape.half_size is None else np.round(shape.half_size, 6).tolist()])
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]
