"""BVH motion files: ``load``, ``save``, the ``Motion`` arrays, ``check_motion`` and ``BVHError``.

A BVH file is a HIERARCHY (joints with OFFSETs and CHANNELS, End Sites) and a MOTION block (frame
count, frame time, one line of channel values per frame). Rotation channels are Euler angles in degrees
applied in channel order as intrinsic rotations (R = R_first @ R_second @ R_third); position channels
replace the joint's offset for that axis. Quaternion and unit conventions are those of ``quat.py``.

Reading the text is ``bvh_parse``'s job; every malformed input raises ``BVHError`` naming the file and,
where there is one, the line and what was expected versus found. A loaded ``Motion`` always passes
``check_motion`` (the skeleton's own checks). ``save`` writes atomically (``pfnn_core.files``): a
crash or a full disk leaves the previous file as it was.
"""
from __future__ import annotations

import copy as _copy
import gzip
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pfnn_core import files
from pfnn_core.math.quat import quat_from_angle_axis, quat_inv, quat_mul, quat_mul_vec, quat_to_euler, wrap_angle
from pfnn_core.motion.bvh_parse import (
    CANONICAL_CHANNEL,
    CHANNEL_NAMES,
    FRAME_TIME_RANGE,
    MAX_TEXT_BYTES,
    BVHError,
    Hierarchy,
    gunzip,
    parse,
)
from pfnn_core.motion.kinematics import forward_kinematics

__all__ = ["BVH_SUFFIXES", "CHANNEL_NAMES", "BVHError", "Motion", "check_motion", "clip_name", "detect_scale",
           "find_files", "is_bvh_path", "load", "motion_from_poses", "read_bytes", "save"]

_AXIS = {"X": 0, "Y": 1, "Z": 2}
# Length units a BVH skeleton is commonly written in, as metres per file unit.
_UNIT_SCALES = {"m": 1.0, "cm": 0.01, "in": 0.0254, "mm": 0.001}
_TYPICAL_SPAN_M = 2.0  # hand-to-foot path along the bones of an adult, metres
_MAX_INDENT = 64  # tabs: a deeper hierarchy is written without more, so the file stays linear in size
_UNIT_TOLERANCE = 1e-6  # how far a stored quaternion's norm may be from one


BVH_SUFFIXES = (".bvh", ".bvh.gz")  # compared case-insensitively


def is_bvh_path(path) -> bool:
    """True for a name ending in .bvh or .bvh.gz (any case): the one rule for what counts as a BVH file."""
    return str(path).lower().endswith(BVH_SUFFIXES)


def find_files(folder, recursive: bool = True) -> list[Path]:
    """The BVH files (.bvh and .bvh.gz, any case) in a folder and, by default, its subfolders, sorted."""
    folder = Path(folder)
    candidates = folder.rglob("*") if recursive else folder.iterdir()
    return sorted(p for p in candidates if p.is_file() and is_bvh_path(p.name))


def clip_name(path) -> str:
    """A file's clip name: its file name without .bvh / .bvh.gz."""
    name = Path(path).name
    for suffix in sorted(BVH_SUFFIXES, key=len, reverse=True):
        if name.lower().endswith(suffix):
            return name[: -len(suffix)]
    return Path(name).stem


def read_bytes(path) -> bytes:
    """A BVH file's bytes, decompressed when the file is gzip data (by its magic bytes, whatever its name)."""
    path = Path(path)
    if path.is_file() and path.stat().st_size > MAX_TEXT_BYTES:
        raise BVHError(f"{path}: {path.stat().st_size} bytes is larger than any BVH take (at most {MAX_TEXT_BYTES})")
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        return gunzip(data, str(path))
    return data


@dataclass
class Motion:
    """One clip as arrays. Lengths are in motion units (file units * ``scale``)."""

    names: list[str]
    parents: np.ndarray          # [J] int, -1 for a root
    offsets: np.ndarray          # [J, 3] rest offsets from the parent
    channels: list[list[str]]    # per joint, file order, e.g. ['Xposition', ..., 'Yrotation']
    rotations: np.ndarray        # [F, J, 4] local quaternions (w, x, y, z)
    positions: np.ndarray        # [F, J, 3] local translations (position channels, else the offset)
    frame_time: float            # seconds per frame
    end_sites: dict[int, np.ndarray] = field(default_factory=dict)  # joint -> End Site offset
    scale: float = 1.0           # file units * scale = motion units
    source: str = ""

    @property
    def num_frames(self) -> int:
        return int(self.rotations.shape[0])

    @property
    def num_joints(self) -> int:
        return len(self.names)

    @property
    def fps(self) -> float:
        return 1.0 / self.frame_time

    @property
    def duration(self) -> float:
        """Time of the last frame, (frames - 1) * frame_time, in seconds."""
        return (self.num_frames - 1) * self.frame_time

    def global_rotations(self) -> np.ndarray:
        return forward_kinematics(self.rotations, self.positions, self.parents)[0]

    def global_positions(self) -> np.ndarray:
        return forward_kinematics(self.rotations, self.positions, self.parents)[1]

    def copy(self) -> "Motion":
        return _copy.deepcopy(self)

    def joint_index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"no joint named {name!r} in {self.source or 'motion'}") from None


def load(path, scale: float | None = None) -> Motion:
    """Read a BVH file. ``scale=None`` converts to metres (unit detected from the skeleton's size),
    a number multiplies every length, ``1.0`` keeps file units."""
    path_name = str(path)
    parsed = parse(read_bytes(path), path_name)
    motion = _build_motion(parsed.hierarchy, parsed.values, parsed.frame_time, scale, path_name)
    check_motion(motion)
    return motion


def save(motion: Motion, path) -> None:
    """Write ``motion`` as BVH in its original channel orders and file units (lengths / scale);
    gzip-compressed when the path ends in .gz. Atomic: `files.WriteError` (an OSError naming the file)
    when it cannot be written, and the previous file at `path` is then unchanged."""
    unit = 1.0 / motion.scale
    lines = ["HIERARCHY"] + _hierarchy_lines(motion, unit)
    lines += ["MOTION", f"Frames: {motion.num_frames}", f"Frame Time: {motion.frame_time:.10g}"]
    columns = []
    for j, chans in enumerate(motion.channels):
        rot_axes = "".join(c[0] for c in chans if c.endswith("rotation"))
        euler = _channel_angles(motion.rotations[:, j], rot_axes) if rot_axes else None
        for c in chans:
            if c.endswith("position"):
                columns.append(motion.positions[:, j, _AXIS[c[0]]] * unit)
            else:
                columns.append(euler[:, rot_axes.index(c[0])])
    table = np.stack(columns, axis=1) if columns else np.zeros((motion.num_frames, 0))
    row_format = " ".join(["%.6f"] * table.shape[1])
    body = "\n".join(row_format % tuple(row) for row in table.tolist())
    text = ("\n".join(lines) + "\n" + body + "\n").encode("utf-8")
    if str(path).lower().endswith(".gz"):
        text = gzip.compress(text, mtime=0)
    files.write_bytes(path, text)


def _channel_angles(rotations: np.ndarray, rot_axes: str) -> np.ndarray:
    """Degrees [F, len(rot_axes)] for a joint's rotation channels, applied in channel order.

    Three channels are the Euler decomposition in that order. One or two are solved on their own
    axes (a rotation read from such a joint is exactly R_u(a) R_v(b)): a three-axis decomposition
    with the missing axis appended would put part of the turn on that axis, which the file cannot
    hold, as soon as the middle angle passes 90 degrees or sits at it (gimbal lock)."""
    if len(rot_axes) == 3:
        return np.degrees(quat_to_euler(rotations, rot_axes))
    first = _AXIS[rot_axes[0]]
    if len(rot_axes) == 1:
        return np.degrees(wrap_angle(2.0 * np.arctan2(rotations[..., 1 + first], rotations[..., 0])))[..., None]
    second = _AXIS[rot_axes[1]]
    # R_u(a) R_v(b) carries the v axis to R_u(a) v: a is the turn of v about u, then b is what is left.
    v_axis, turned_to = np.eye(3)[second], np.cross(np.eye(3)[first], np.eye(3)[second])
    carried = quat_mul_vec(rotations, np.broadcast_to(v_axis, rotations.shape[:-1] + (3,)))
    a = np.arctan2(carried @ turned_to, carried @ v_axis)
    rest = quat_mul(quat_inv(quat_from_angle_axis(a, np.eye(3)[first])), rotations)
    b = wrap_angle(2.0 * np.arctan2(rest[..., 1 + second], rest[..., 0]))
    return np.degrees(np.stack([a, b], axis=-1))


def _hierarchy_lines(motion: Motion, unit: float) -> list[str]:
    """ROOT and JOINT blocks in joint order (children inside their parent, End Site last), written
    with an explicit stack so any depth works."""
    children: dict[int, list[int]] = {j: [] for j in range(-1, motion.num_joints)}
    for j, p in enumerate(np.asarray(motion.parents)):
        children[int(p)].append(j)
    lines = []
    stack = [(root, 0, False) for root in reversed(children[-1])]
    while stack:
        j, depth, closing = stack.pop()
        pad = "\t" * min(depth, _MAX_INDENT)
        if closing:
            if j in motion.end_sites:
                lines.extend([f"{pad}\tEnd Site", pad + "\t{",
                              f"{pad}\t\tOFFSET {_fmt_vec(np.asarray(motion.end_sites[j]) * unit)}", pad + "\t}"])
            lines.append(pad + "}")
            continue
        keyword = "ROOT" if motion.parents[j] < 0 else "JOINT"
        lines += [f"{pad}{keyword} {motion.names[j]}", pad + "{", f"{pad}\tOFFSET {_fmt_vec(motion.offsets[j] * unit)}"]
        if motion.channels[j]:
            lines.append(f"{pad}\tCHANNELS {len(motion.channels[j])} {' '.join(motion.channels[j])}")
        stack.append((j, depth, True))
        stack.extend((c, depth + 1, False) for c in reversed(children[j]))
    return lines


def _fmt_vec(v) -> str:
    return " ".join(f"{float(x):.6f}" for x in v)


def motion_from_poses(skeleton: dict, local_rot: np.ndarray, root_translation: np.ndarray, dt: float,
                      source: str = "") -> Motion:
    """A Motion on a checkpoint's skeleton (`skeleton.skeleton_dict`): local rotations [F, J, 4], root
    translation [F, 3] (motion units); every other joint keeps its offset."""
    offsets = np.asarray(skeleton["offsets"], dtype=float)
    parents = np.asarray(skeleton["parents"], dtype=int)
    positions = np.broadcast_to(offsets, local_rot.shape[:-1] + (3,)).copy()
    positions[:, int(np.flatnonzero(parents < 0)[0])] = root_translation
    end_sites = {int(k): np.asarray(v, dtype=float) for k, v in (skeleton.get("end_sites") or {}).items()}
    return Motion(names=list(skeleton["names"]), parents=parents, offsets=offsets,
                  channels=[list(c) for c in skeleton["channels"]], rotations=local_rot, positions=positions,
                  frame_time=dt, end_sites=end_sites, scale=float(skeleton.get("scale", 1.0)), source=source)


def check_motion(motion: Motion) -> None:
    """The skeleton's own checks: BVHError naming `motion.source` when the arrays cannot describe one
    skeleton that `save` can write and `load` read back the same. One root (joint 0), every parent
    before its children, unique names that survive the file's whitespace, known channels once each,
    shapes that agree, finite numbers, unit quaternions, a frame time in `FRAME_TIME_RANGE`."""
    problem = _first_problem(motion)
    if problem:
        raise BVHError(f"{motion.source or 'motion'}: {problem}")


def _first_problem(motion: Motion) -> str | None:
    parents = np.asarray(motion.parents)
    count = len(motion.names)
    frames = np.shape(motion.rotations)[0] if np.ndim(motion.rotations) == 3 else 0
    if count == 0 or parents.shape != (count,) or len(motion.channels) != count:
        return f"{count} joint names, {parents.shape} parents and {len(motion.channels)} channel lists disagree"
    if np.shape(motion.offsets) != (count, 3) or np.shape(motion.rotations) != (frames, count, 4) \
            or np.shape(motion.positions) != (frames, count, 3) or frames < 1:
        return (f"array shapes disagree: offsets {np.shape(motion.offsets)}, rotations {np.shape(motion.rotations)}, "
                f"positions {np.shape(motion.positions)} for {count} joints")
    if parents[0] != -1 or np.any(parents[1:] < 0) or np.any(parents[1:] >= np.arange(1, count)):
        return f"parents {parents.tolist()[:20]} are not one root (joint 0) with every parent before its children"
    if len(set(motion.names)) != count:
        return "two joints share a name"
    for name in motion.names:
        if not isinstance(name, str) or not name or name != " ".join(name.split()) or "{" in name or "}" in name:
            return f"joint name {name!r} cannot be written to a BVH file"
    for name, chans in zip(motion.names, motion.channels):
        if len(set(chans)) != len(chans) or any(CANONICAL_CHANNEL.get(str(c).lower()) != c for c in chans):
            return f"joint {name!r} has channels {chans}, expected each of {', '.join(CHANNEL_NAMES)} at most once"
    for what, values in (("offsets", motion.offsets), ("rotations", motion.rotations), ("positions", motion.positions)):
        if not np.isfinite(values).all():
            return f"{what} hold NaN or infinite values"
    if np.any(np.abs(np.linalg.norm(motion.rotations, axis=-1) - 1.0) > _UNIT_TOLERANCE):
        return "rotations are not unit quaternions"
    for joint, site in motion.end_sites.items():
        if not (0 <= int(joint) < count) or np.shape(site) != (3,) or not np.isfinite(site).all():
            return f"End Site of joint {joint} is not a finite offset of a joint"
    if not (math.isfinite(motion.frame_time) and FRAME_TIME_RANGE[0] <= motion.frame_time <= FRAME_TIME_RANGE[1]):
        return f"frame time {motion.frame_time!r} s is outside {FRAME_TIME_RANGE[0]:g} to {FRAME_TIME_RANGE[1]:g} s"
    if not (math.isfinite(motion.scale) and motion.scale > 0.0):
        return f"scale {motion.scale!r} is not a positive number"
    return None


def _build_motion(hierarchy: Hierarchy, values: np.ndarray, frame_time: float, scale, path_name: str) -> Motion:
    num_frames = values.shape[0]
    names, parents, offsets, channels, end_sites = hierarchy
    num_joints = len(names)

    positions = np.repeat(offsets[None], num_frames, axis=0)
    rotations = np.zeros((num_frames, num_joints, 4))
    rotations[..., 0] = 1.0
    pos_joint, pos_axis, pos_col = [], [], []
    rot_groups: dict[str, tuple[list[int], list[list[int]]]] = {}
    col = 0
    for j, chans in enumerate(channels):
        rot_axes, rot_cols = [], []
        for c in chans:
            if c.endswith("position"):
                pos_joint.append(j)
                pos_axis.append(_AXIS[c[0]])
                pos_col.append(col)
            else:
                rot_axes.append(c[0])
                rot_cols.append(col)
            col += 1
        if rot_axes:
            group = rot_groups.setdefault("".join(rot_axes), ([], []))
            group[0].append(j)
            group[1].append(rot_cols)
    if pos_joint:
        positions[:, pos_joint, pos_axis] = values[:, pos_col]
    for axes, (joints, cols) in rot_groups.items():
        half_angles = values[:, np.array(cols)] * (np.pi / 360.0)  # degrees -> half angles, [F, n, len(axes)]
        cos_half, sin_half = np.cos(half_angles), np.sin(half_angles)
        q = None
        for k, axis in enumerate(axes):
            elementary = np.zeros(half_angles.shape[:2] + (4,))
            elementary[..., 0] = cos_half[..., k]
            elementary[..., 1 + _AXIS[axis]] = sin_half[..., k]
            q = elementary if q is None else quat_mul(q, elementary)
        rotations[:, joints] = q

    if scale is None:
        scale = detect_scale(offsets, parents, end_sites)
    scale = float(scale)
    if not (math.isfinite(scale) and scale > 0.0):
        raise BVHError(f"{path_name}: scale must be a positive number, got {scale}")
    return Motion(names=list(names), parents=parents, offsets=offsets * scale, channels=channels,
                  rotations=rotations, positions=positions * scale, frame_time=frame_time,
                  end_sites={j: v * scale for j, v in end_sites.items()},
                  scale=scale, source=path_name)


def detect_scale(offsets: np.ndarray, parents: np.ndarray, end_sites: dict) -> float:
    """Metres per file unit, guessed from the skeleton's size alone (never from a pose).

    The size is the longest path along the bones between two extremities (leaf joints and End Sites):
    for a person that is hand to foot, about 2 m whatever the pose in the file or the up axis (a first
    frame that happens to be folded or lying down cannot fool it). The unit whose conversion lands
    closest to that length in log scale wins; cm, inches and metres are a factor 2.5 or more apart, so
    the guess tolerates proportions well away from typical. A degenerate skeleton keeps file units.

    The longest path is found in one pass from the leaves up (joints come after their parents): at
    each joint, the two longest ways down to an extremity through different branches.
    """
    parents = np.asarray(parents)
    count = len(parents)
    lengths = np.linalg.norm(np.asarray(offsets, dtype=float), axis=-1)
    has_child = np.zeros(count, dtype=bool)
    has_child[parents[parents >= 0]] = True
    # best[j]: the two longest ways from joint j down to an extremity, through different branches.
    best = [[-math.inf, -math.inf] for _ in range(count)]
    for j in range(count):
        if not has_child[j]:
            _keep_two_longest(best[j], 0.0)
        if j in end_sites:
            _keep_two_longest(best[j], float(np.linalg.norm(end_sites[j])))
    longest = 0.0
    for j in range(count - 1, -1, -1):
        first, second = best[j]
        if second > -math.inf:
            longest = max(longest, first + second)
        if parents[j] >= 0 and first > -math.inf:
            _keep_two_longest(best[int(parents[j])], first + float(lengths[j]))
    if not (math.isfinite(longest) and longest > 0.0):
        return 1.0
    return min(_UNIT_SCALES.values(), key=lambda s: abs(math.log(longest * s / _TYPICAL_SPAN_M)))


def _keep_two_longest(pair: list, value: float) -> None:
    if value > pair[0]:
        pair[0], pair[1] = value, pair[0]
    elif value > pair[1]:
        pair[1] = value
