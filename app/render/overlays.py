"""Overlay geometry built from a `SceneFrame`: trajectory, foot contacts, phase dial, joint axes, and with
the physics on the kinematic pose's ghost and the floor's forces under the feet.

Pure functions: a frame in, `Lines`/`Points` arrays out (world metres, RGBA 0..1); the renderer only
uploads them. Each overlay has its own builder so it can be toggled and tested on its own.
"""

from dataclasses import dataclass, field

import numpy as np

from app.render.scene import SceneFrame, drawn_bones

PAST_COLOUR = (0.55, 0.62, 0.72, 1.0)
PREDICTED_COLOUR = (0.16, 0.72, 0.95, 1.0)  # the network's trajectory (what it was conditioned on)
COMMAND_COLOUR = (1.0, 0.62, 0.15, 1.0)  # the commanded target (spring prediction)
CONTACT_OFF_COLOUR = np.array([0.55, 0.55, 0.6, 0.5])
CONTACT_ON_COLOUR = np.array([0.15, 0.95, 0.45, 1.0])
LOCK_COLOUR = (0.95, 0.25, 0.75, 1.0)
PHASE_COLOUR = (0.98, 0.86, 0.3, 1.0)
AXIS_COLOURS = ((0.95, 0.25, 0.25, 1.0), (0.3, 0.9, 0.3, 1.0), (0.3, 0.5, 1.0, 1.0))
GHOST_COLOUR = (0.78, 0.86, 1.0, 0.42)  # the kinematic pose behind the simulated one
FORCE_COLOUR = (1.0, 0.36, 0.18, 0.95)
FORCE_SCALE = 0.0005  # m of arrow per newton: a body's weight (~590 N) on one foot draws 0.3 m
FORCE_MIN = 5.0  # N: smaller forces (a grazing toe) are not drawn
GROUND_LIFT = 0.012  # draw ground overlays just above the floor to avoid z-fighting


@dataclass
class Lines:
    starts: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.float32))  # [N, 3]
    ends: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.float32))  # [N, 3]
    colours: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), np.float32))  # [N, 4]
    width_px: float = 3.0
    through: bool = False  # drawn over the bodies (no depth test): the ghost shows through the body


@dataclass
class Points:
    positions: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.float32))  # [N, 3]
    colours: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), np.float32))  # [N, 4]
    sizes_px: np.ndarray = field(default_factory=lambda: np.zeros((0,), np.float32))  # [N]


@dataclass
class OverlayGeometry:
    lines: list = field(default_factory=list)  # list[Lines]
    points: list = field(default_factory=list)  # list[Points]

    def extend(self, other: "OverlayGeometry") -> "OverlayGeometry":
        self.lines += other.lines
        self.points += other.points
        return self


def _colours(colour, count: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(colour, np.float32), (count, 4)).copy()


def _on_ground(positions: np.ndarray) -> np.ndarray:
    lifted = np.array(positions, np.float32)
    lifted[..., 1] = GROUND_LIFT
    return lifted


def polyline(positions: np.ndarray, colours: np.ndarray, width_px: float) -> Lines:
    """Segments joining consecutive points; segment colour is the colour of its end point."""
    positions = np.asarray(positions, np.float32)
    return Lines(positions[:-1], positions[1:], np.asarray(colours, np.float32)[1:], width_px)


def facing_ticks(positions: np.ndarray, directions: np.ndarray, colour, length: float = 0.22,
                 width_px: float = 2.5) -> Lines:
    """A short segment from each sample along its facing direction."""
    starts = _on_ground(positions)
    ends = starts + np.asarray(directions, np.float32) * np.array([1, 0, 1], np.float32) * length
    return Lines(starts, ends, _colours(colour, len(starts)), width_px)


def trajectory_geometry(frame: SceneFrame, sample_every: int = 10) -> OverlayGeometry:
    """Past path (fading with age), the network's future trajectory and the commanded one, each with
    sample points and facing ticks; the command is drawn in its own colour, slightly thinner."""
    geometry = OverlayGeometry()
    root = _on_ground(frame.root_pos[None])
    if frame.traj_past_pos is not None and len(frame.traj_past_pos) > 1:
        past = _on_ground(frame.traj_past_pos)
        age_alpha = np.linspace(0.15, 1.0, len(past), dtype=np.float32)
        colours = _colours(PAST_COLOUR, len(past))
        colours[:, 3] = age_alpha
        geometry.lines.append(polyline(past, colours, 3.0))
        samples = np.arange(len(past) - 1, -1, -sample_every)[1:][::-1]
        geometry.points.append(Points(past[samples], colours[samples], np.full(len(samples), 9.0, np.float32)))
        if frame.traj_past_dir is not None:
            geometry.lines.append(facing_ticks(past[samples], frame.traj_past_dir[samples], PAST_COLOUR))
    for positions, directions, colour, width, size in (
            (frame.traj_command_pos, frame.traj_command_dir, COMMAND_COLOUR, 2.5, 9.0),
            (frame.traj_future_pos, frame.traj_future_dir, PREDICTED_COLOUR, 3.5, 11.0)):
        if positions is None or len(positions) == 0:
            continue
        path = np.concatenate([root, _on_ground(positions)])
        geometry.lines.append(polyline(path, _colours(colour, len(path)), width))
        geometry.points.append(Points(path[1:], _colours(colour, len(path) - 1),
                                      np.full(len(path) - 1, size, np.float32)))
        if directions is not None:
            geometry.lines.append(facing_ticks(path[1:], directions, colour))
    geometry.lines.append(facing_ticks(root, frame.root_dir[None], (1, 1, 1, 1), 0.45, 3.5))
    return geometry


def contact_colours(strength: np.ndarray) -> np.ndarray:
    """Grey for lifted, green for planted, mixed by contact strength."""
    s = np.clip(np.asarray(strength, np.float32), 0, 1)[:, None]
    return (CONTACT_OFF_COLOUR * (1 - s) + CONTACT_ON_COLOUR * s).astype(np.float32)


def contacts_geometry(frame: SceneFrame) -> OverlayGeometry:
    """A marker on the floor under each foot joint, coloured and sized by contact strength, and a
    cross at each locked IK target, as opaque as its lock weight."""
    geometry = OverlayGeometry()
    if frame.contacts is None or frame.contact_joints is None:
        return geometry
    strength = np.clip(np.asarray(frame.contacts, np.float32), 0, 1)
    feet = _on_ground(frame.joint_pos[frame.contact_joints])
    geometry.points.append(Points(feet, contact_colours(strength), 7.0 + 7.0 * strength))
    if frame.lock_target is not None and frame.lock_weight is not None:
        weight = np.clip(np.asarray(frame.lock_weight, np.float32), 0, 1)
        active = weight > 0.02
        centres = _on_ground(frame.lock_target[active])
        colours = _colours(LOCK_COLOUR, len(centres))
        colours[:, 3] = weight[active]
        arm = 0.06
        offsets = np.array([[arm, 0, arm], [arm, 0, -arm]], np.float32)
        starts = np.concatenate([centres - offsets[0], centres - offsets[1]])
        ends = np.concatenate([centres + offsets[0], centres + offsets[1]])
        geometry.lines.append(Lines(starts, ends, np.concatenate([colours, colours]), 3.0))
    return geometry


def phase_dial_outline(phase: float, segments: int = 48) -> tuple[np.ndarray, np.ndarray]:
    """Unit circle [segments + 1, 2] and the needle tip [2] at `phase` (0 at 12 o'clock, clockwise
    seen from above), shared by the 3D ground dial and the panel dial."""
    angles = np.linspace(0.0, 2 * np.pi, segments + 1)
    circle = np.stack([np.sin(angles), np.cos(angles)], axis=-1)
    needle = np.array([np.sin(2 * np.pi * phase), np.cos(2 * np.pi * phase)])
    return circle, needle


PHASE_DIAL_RADIUS = 0.55  # m: the phase ring on the ground around the root (the camera keeps it in view)


def phase_geometry(frame: SceneFrame, radius: float = PHASE_DIAL_RADIUS) -> OverlayGeometry:
    """A ring on the ground around the root, oriented with the facing, and a needle at the phase."""
    circle, needle = phase_dial_outline(frame.phase)
    forward = np.asarray(frame.root_dir, np.float64)
    right = np.array([-forward[2], 0.0, forward[0]])
    centre = _on_ground(frame.root_pos[None])[0]

    def to_world(xy):
        return (centre + radius * (xy[..., :1] * right + xy[..., 1:] * forward)).astype(np.float32)

    ring = to_world(circle)
    colour = np.array(PHASE_COLOUR, np.float32)
    ring_colours = _colours(colour * np.array([1, 1, 1, 0.45]), len(ring))
    tip = to_world(needle[None])
    return OverlayGeometry(
        lines=[polyline(ring, ring_colours, 2.0), Lines(centre[None].astype(np.float32), tip, colour[None], 3.0)],
        points=[Points(tip, colour[None], np.array([12.0], np.float32))])


def joint_axes_geometry(frame: SceneFrame, length: float = 0.15) -> OverlayGeometry:
    """Local X/Y/Z axes of every joint (red/green/blue) from its world rotation."""
    if frame.joint_rot is None:
        return OverlayGeometry()
    q = np.asarray(frame.joint_rot, np.float64)
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    columns = np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y + w * z), 2 * (x * z - w * y)], -1),
        np.stack([2 * (x * y - w * z), 1 - 2 * (x * x + z * z), 2 * (y * z + w * x)], -1),
        np.stack([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)], -1)])
    starts = np.tile(frame.joint_pos, (3, 1)).astype(np.float32)
    ends = (starts + length * columns.reshape(-1, 3)).astype(np.float32)
    colours = np.repeat(np.asarray(AXIS_COLOURS, np.float32), len(q), axis=0)
    return OverlayGeometry(lines=[Lines(starts, ends, colours, 2.0)])


def ghost_geometry(frame: SceneFrame, width_px: float = 5.0) -> OverlayGeometry:
    """The kinematic pose (`frame.ghost_pos`) as translucent sticks drawn through the simulated body."""
    if frame.ghost_pos is None:
        return OverlayGeometry()
    ghost = np.asarray(frame.ghost_pos, np.float32)
    bones = drawn_bones(frame.parents)
    return OverlayGeometry(lines=[Lines(ghost[bones[:, 1]], ghost[bones[:, 0]], _colours(GHOST_COLOUR, len(bones)),
                                        width_px, through=True)])


def foot_force_geometry(frame: SceneFrame, scale: float = FORCE_SCALE) -> OverlayGeometry:
    """An arrow from the floor under each contact joint along the simulated floor's force on its sole
    (`frame.foot_forces`, N), `scale` metres per newton."""
    if frame.foot_forces is None or frame.contact_joints is None:
        return OverlayGeometry()
    forces = np.asarray(frame.foot_forces, np.float64)
    shown = np.linalg.norm(forces, axis=-1) > FORCE_MIN
    if not shown.any():
        return OverlayGeometry()
    starts = _on_ground(frame.joint_pos[np.asarray(frame.contact_joints)[shown]]).astype(np.float64)
    ends = starts + forces[shown] * scale
    along = (ends - starts) / np.maximum(np.linalg.norm(ends - starts, axis=-1, keepdims=True), 1e-9)
    side = np.cross(along, np.asarray(frame.root_dir, np.float64)[None])
    side /= np.maximum(np.linalg.norm(side, axis=-1, keepdims=True), 1e-9)
    head = np.minimum(0.05, 0.4 * np.linalg.norm(ends - starts, axis=-1, keepdims=True))
    barbs = [ends - head * (along + 0.6 * side), ends - head * (along - 0.6 * side)]
    line_starts = np.concatenate([starts, ends, ends]).astype(np.float32)
    line_ends = np.concatenate([ends, *barbs]).astype(np.float32)
    return OverlayGeometry(lines=[Lines(line_starts, line_ends, _colours(FORCE_COLOUR, len(line_starts)), 3.0,
                                        through=True)])  # seen through the foot and the leg


OVERLAY_BUILDERS = {
    "trajectory": trajectory_geometry,
    "contacts": contacts_geometry,
    "phase": phase_geometry,
    "joint_axes": joint_axes_geometry,
    "forces": foot_force_geometry,
    "ghost": ghost_geometry,
}


def build_overlays(frame: SceneFrame, enabled: dict) -> OverlayGeometry:
    """All enabled overlays of one frame, in a fixed order."""
    geometry = OverlayGeometry()
    for name, builder in OVERLAY_BUILDERS.items():
        if enabled.get(name, False):
            geometry.extend(builder(frame))
    return geometry
