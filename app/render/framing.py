"""Framing a body: how far an orbiting camera must stand for a character to fit in the uncovered view.

The body is a vertical cylinder (ground to the top of the head, the arms' reach around the root) seen
by a camera that looks at a point from a unit direction; a point of the body fits when its projection
lies within the image's half sizes shrunk by a margin. Each point gives its own least distance in
closed form, so the framing distance is their maximum (no search).
"""

import numpy as np

from app.render.scene import drawn_joints

HEAD_ABOVE_TOP_JOINT = 0.12  # m: the skull and hair above the highest joint (the head's)
REACH_BEYOND_JOINTS = 0.10  # m: hands, shoes and clothes beyond the outermost joints
CYLINDER_POINTS = 12  # around each of the bottom and top circles


def body_joints(frame) -> np.ndarray:
    """[J', 3] world positions of a `SceneFrame`'s joints that make up the body (a placement root, which
    may lie metres away, left out)."""
    return np.asarray(frame.joint_pos)[drawn_joints(frame.parents)]


def body_extent(joint_pos: np.ndarray, root_pos: np.ndarray) -> tuple[float, float]:
    """(top of the body above the ground, its horizontal radius around the root), metres."""
    joints = np.asarray(joint_pos, np.float64).reshape(-1, 3)
    top = float(joints[:, 1].max()) + HEAD_ABOVE_TOP_JOINT
    around = joints[:, [0, 2]] - np.asarray(root_pos, np.float64)[[0, 2]]
    return top, float(np.linalg.norm(around, axis=-1).max()) + REACH_BEYOND_JOINTS


def body_points(ground: np.ndarray, top: float, radius: float, ground_reach: float = 0.0) -> np.ndarray:
    """[2 * CYLINDER_POINTS, 3] points of the cylinder standing on `ground` (its y ignored); its bottom
    circle widened to `ground_reach` when what is drawn on the ground around it (the phase ring) is wider."""
    angles = np.linspace(0.0, 2 * np.pi, CYLINDER_POINTS, endpoint=False)
    circle = np.stack([np.cos(angles), np.zeros_like(angles), np.sin(angles)], -1)
    centre = np.array([ground[0], 0.0, ground[2]], np.float64)
    base = centre + circle * max(radius, ground_reach)
    return np.concatenate([base, centre + circle * radius + [0.0, top, 0.0]])


def framing_distance(points: np.ndarray, look: np.ndarray, offset: np.ndarray, fov_y: float, aspect: float,
                     half_width: float = 1.0, margin: float = 0.1) -> float:
    """The least distance from `look` along the unit `offset` (look point -> eye) at which every point
    projects inside the image: within `1 - margin` of its half height and `half_width * (1 - margin)`
    of the half width (in NDC, 1 = the whole half; less where the panel covers part of the view)."""
    offset = np.asarray(offset, np.float64)
    forward = -offset
    right = np.cross(forward, [0.0, 1.0, 0.0])
    right /= max(np.linalg.norm(right), 1e-9)
    up = np.cross(right, forward)
    relative = np.asarray(points, np.float64) - np.asarray(look, np.float64)
    focal = 1.0 / np.tan(fov_y / 2.0)
    # a point at depth z = d - offset.q projects to focal * (r.q) / z: solve for the d that puts it on the edge
    horizontal = focal / aspect * np.abs(relative @ right) / max(half_width * (1.0 - margin), 1e-6)
    vertical = focal * np.abs(relative @ up) / (1.0 - margin)
    return float(np.max(relative @ offset + np.maximum(horizontal, vertical)))
