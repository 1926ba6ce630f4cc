"""Clip editing: splice pieces of BVH clips into one sequence at matching gait phase, with smooth seams.

Owns the edit list (a JSON document), its parsing (errors name the piece and the field), preparing each
piece's clip (mirror, time scale, resample, contacts and phase labels from `features.clip_labels`), the
phase match of each join, the alignment of each incoming piece onto the outgoing one, the transitions
(inertialization or crossfade), feet kept planted across the seams (`ik`), the seam report (foot
skating and pose pops with the evaluation's measures, `pfnn_core.evaluation.measures`; root steps) and
the command `pfnn-edit EDIT.json --out OUT.bvh`.

Edit list::

    {"name": "walk_to_run", "fps": 60,
     "pieces": [{"file": "assets/bvh/.../walk.bvh.gz", "start": 0.0, "end": 4.0, "mirror": false, "speed": 1.0},
                ...],
     "transition": {"kind": "inertialize" | "crossfade", "seconds": 0.3},
     "match": "phase" | "none", "search_seconds": 0.5}

`start`/`end` are seconds of the source clip (`end` defaults to the clip's end); `speed` time-scales a
piece (2 plays it twice as fast); `mirror` swaps left and right on the same skeleton. A relative `file`
is looked up in the current folder, then in the edit list's folder.

A join between piece i (outgoing) and piece i+1 (incoming) pairs the outgoing piece's last frame with
the incoming piece's first frame: they are the same instant. The incoming piece is turned about +Y and
moved on the ground so that its control root (`features.root_frames`: hips on the ground, facing) at
that frame sits where the outgoing root is, and the sequence goes on with the incoming piece's next
frame, so the step across the seam is the incoming clip's own step. With ``"match": "phase"`` both
frames move, each within ``search_seconds`` of its nominal time, to the pair whose gait phases (cyclic
distance) and foot contact states agree best, with the feet in similar places under the body,
preferring small moves.

Transitions, over ``seconds`` of output time after the seam:
- inertialize [Holden's and Bollo's inertialization]: the pose difference at the seam (local rotations
  as rotation vectors, the hips' world rotation and position, the feet) and its velocity decay as a
  critically damped spring, windowed by a smoothstep that closes exactly at ``seconds``; the incoming
  motion is untouched from then on. When the incoming piece is faster, the root's ground velocity
  offset decays instead of its position (catching up would overshoot the incoming speed), and the
  incoming piece goes on from where the root got to (one constant ground shift);
- crossfade: the outgoing piece runs on past its cut and is blended into the incoming one (slerp of
  local rotations, lerp of translations) with smoothstep weights over ``seconds``; speeding up, the
  root moves by the blend of the two velocities, again leaving one ground shift.
Foot contacts that touch the seam (from a quarter second before it to the end of the transition) stay
where they touched down on the ground plane; the correction fades out over the following swing; legs
are solved with `ik.reach_foot_goals`. Everything else is the source clips' own motion.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

import numpy as np

from pfnn_core import bvh, features
from pfnn_core.contacts import contact_joint_order, foot_joints
from pfnn_core.evaluation import measures
from pfnn_core.ik import leg_chains, reach_foot_goals
from pfnn_core.kinematics import forward_kinematics, local_rotations, mirror_keep_skeleton, resample
from pfnn_core.quat import (quat_abs, quat_from_expmap, quat_from_yaw, quat_inv, quat_inv_mul, quat_mul,
                            quat_mul_vec, quat_normalize, quat_slerp, quat_to_expmap)

KINDS = ("inertialize", "crossfade")
MATCHES = ("phase", "none")
DEFAULT_FPS = 60.0
DEFAULT_TRANSITION_S = 0.3
DEFAULT_SEARCH_S = 0.5
MAX_FPS = 480.0
# Phase-match cost = cyclic phase distance (cycles, 0-0.5) + CONTACT_WEIGHT * share of the 4 contact
# joints in a different state + SHIFT_WEIGHT * seconds the two cut frames moved from where they were asked.
CONTACT_WEIGHT = 0.25
SHIFT_WEIGHT = 0.02
# ... + FEET_WEIGHT * the feet's mean distance (root frame, metres): at one phase a run's planted foot can
# sit 30 cm further back under the body than a walk's (too far to hold it across the seam), and a
# mirrored walk's swinging foot lower, landing early.
FEET_WEIGHT = 1.0
# Inertialization spring: decay rate SPRING_RATE / seconds, so a gap closes to ~2% by the end of the
# transition before the window takes it to exactly zero (0.3 s: the gap halves in ~0.08 s).
SPRING_RATE = 6.0
# Bones compare equal within this (the bundled dataset-1 and dataset-2 skeletons differ by 0.04 cm).
BONE_TOLERANCE_M = 0.005
BONE_TOLERANCE_REL = 0.02
# Feet: contact runs touching [seam - LOCK_BEFORE_S, seam + max(transition, LOCK_AFTER_S)] are pinned
# on the ground plane; after a pinned run the correction fades over the swing (at most RELEASE_MAX_S).
LOCK_BEFORE_S = 0.25
LOCK_AFTER_S = 0.25
RELEASE_MAX_S = 0.5
TOE_RELEASE_S = 0.15
# Report: foot skating over SEAM_WINDOW_S centred on each join's twin frame (the instant the pieces share).
SEAM_WINDOW_S = 0.5
FEET = 4  # contact joints: ankle and toe of each leg
EXIT_BAD_INPUT = 2


class EditError(ValueError):
    """An edit list that cannot be built; the message names the piece and the field."""


@dataclass(frozen=True)
class Piece:
    file: str
    start: float = 0.0  # seconds of the source clip
    end: float | None = None  # seconds of the source clip; None = the clip's end
    mirror: bool = False
    speed: float = 1.0  # time scale: 2 plays the piece twice as fast


@dataclass(frozen=True)
class EditList:
    name: str
    pieces: tuple
    fps: float = DEFAULT_FPS
    transition_kind: str = "inertialize"
    transition_seconds: float = DEFAULT_TRANSITION_S
    match: str = "phase"
    search_seconds: float = DEFAULT_SEARCH_S
    base_dir: str = ""  # the edit list's folder: relative piece files are also looked up there


# ---------------------------------------------------------------------------------------------
# The edit list document


def _where(index: int, piece_data) -> str:
    file = piece_data.get("file") if isinstance(piece_data, dict) else None
    return f"pieces[{index}]" + (f" ({Path(file).name})" if isinstance(file, str) and file else "")


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise EditError(f"{where}: expected a finite number, got {json.dumps(value)}")
    return float(value)


def _choice(value, choices, where: str) -> str:
    if value not in choices:
        raise EditError(f"{where}: expected one of {', '.join(map(json.dumps, choices))}, got {json.dumps(value)}")
    return value


def _check_fields(data: dict, allowed: tuple, where: str) -> None:
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise EditError(f"{where}{unknown[0]}: unknown field (expected {', '.join(allowed)})")


def parse_edit_list(data, source: str = "edit list", base_dir="") -> EditList:
    """Validate an edit list's JSON value; raise EditError naming the first bad field.

    The files themselves (existence, ranges, skeletons) are checked when the pieces are loaded."""
    if not isinstance(data, dict):
        raise EditError(f"{source}: expected a JSON object with 'pieces', got {type(data).__name__}")
    _check_fields(data, ("name", "description", "fps", "pieces", "transition", "match", "search_seconds"), "")
    name = data.get("name", Path(source).stem)
    if not isinstance(name, str):
        raise EditError(f"name: expected a string, got {json.dumps(name)}")
    fps = _number(data.get("fps", DEFAULT_FPS), "fps")
    if not 0.0 < fps <= MAX_FPS:
        raise EditError(f"fps: expected frames per second in (0, {MAX_FPS:g}], got {json.dumps(data.get('fps'))}")
    pieces_data = data.get("pieces")
    if not isinstance(pieces_data, list):
        raise EditError(f"pieces: expected a list of pieces, got {json.dumps(pieces_data)}")
    if not pieces_data:
        raise EditError("pieces: the edit list is empty (add at least one piece)")
    pieces = []
    for index, piece in enumerate(pieces_data):
        where = _where(index, piece)
        if not isinstance(piece, dict):
            raise EditError(f"{where}: expected an object with 'file', got {json.dumps(piece)}")
        _check_fields(piece, ("file", "start", "end", "mirror", "speed"), f"{where}.")
        file = piece.get("file")
        if not isinstance(file, str) or not file.strip():
            raise EditError(f"{where}.file: expected a BVH file path, got {json.dumps(file)}")
        start = _number(piece.get("start", 0.0), f"{where}.start")
        end = None if piece.get("end") is None else _number(piece["end"], f"{where}.end")
        if start < 0.0:
            raise EditError(f"{where}.start: {start:g} s is before the clip's start (0 s)")
        if end is not None and end <= start:
            raise EditError(f"{where}.end: {end:g} s is not after the start ({start:g} s)")
        mirror = piece.get("mirror", False)
        if not isinstance(mirror, bool):
            raise EditError(f"{where}.mirror: expected true or false, got {json.dumps(mirror)}")
        speed = _number(piece.get("speed", 1.0), f"{where}.speed")
        if speed <= 0.0:
            raise EditError(f"{where}.speed: expected a positive time scale, got {json.dumps(piece.get('speed'))}")
        pieces.append(Piece(file.strip(), start, end, mirror, speed))
    transition = data.get("transition", {})
    if not isinstance(transition, dict):
        raise EditError(f"transition: expected an object with 'kind' and 'seconds', got {json.dumps(transition)}")
    _check_fields(transition, ("kind", "seconds"), "transition.")
    kind = _choice(transition.get("kind", "inertialize"), KINDS, "transition.kind")
    seconds = _number(transition.get("seconds", DEFAULT_TRANSITION_S), "transition.seconds")
    if seconds <= 0.0:
        raise EditError(f"transition.seconds: expected a positive time, got {json.dumps(transition.get('seconds'))}")
    match = _choice(data.get("match", "phase"), MATCHES, "match")
    search = _number(data.get("search_seconds", DEFAULT_SEARCH_S), "search_seconds")
    if search < 0.0:
        raise EditError(f"search_seconds: expected zero or more seconds, got {json.dumps(data.get('search_seconds'))}")
    return EditList(name, tuple(pieces), fps, kind, seconds, match, search, str(base_dir))


def load_edit_list(path) -> EditList:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise EditError(f"{path}: cannot read the edit list ({error.strerror or error})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise EditError(f"{path}: line {error.lineno}: not valid JSON ({error.msg})") from None
    try:
        return parse_edit_list(data, str(path), base_dir=path.parent)
    except EditError as error:
        raise EditError(f"{path}: {error}") from None


def edit_list_dict(edit: EditList) -> dict:
    """The JSON value of an edit list (what `parse_edit_list` reads)."""
    pieces = []
    for piece in edit.pieces:
        item = {"file": piece.file, "start": piece.start}
        if piece.end is not None:
            item["end"] = piece.end
        item.update(mirror=piece.mirror, speed=piece.speed)
        pieces.append(item)
    return {"name": edit.name, "fps": edit.fps, "pieces": pieces,
            "transition": {"kind": edit.transition_kind, "seconds": edit.transition_seconds},
            "match": edit.match, "search_seconds": edit.search_seconds}


def save_edit_list(edit: EditList, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(edit_list_dict(edit), indent=2) + "\n", encoding="utf-8")
    return path


def piece_path(edit: EditList, index: int) -> Path:
    """Where a piece's file is: as given (absolute or from the current folder), else from the edit
    list's folder; EditError naming the piece when neither exists."""
    piece = edit.pieces[index]
    given = Path(piece.file).expanduser()
    candidates = [given] if given.is_absolute() else [Path.cwd() / given] + (
        [Path(edit.base_dir) / given] if edit.base_dir else [])
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    looked = " and ".join(str(c.parent) for c in candidates)
    raise EditError(f"pieces[{index}] ({given.name}).file: {piece.file}: no such file (looked in {looked})")


# ---------------------------------------------------------------------------------------------
# Clips


@dataclass
class PreparedClip:
    """One source clip as a piece plays it: mirrored if asked, time-scaled, at the edit's frame rate."""

    motion: bvh.Motion  # frame_time = 1 / fps
    labels: features.ClipLabels  # root, contacts [F, 4], phase [F], global pose of `motion`
    source_frame_time: float  # seconds of the source clip per frame (speed / fps, to a hair)
    path: str

    @property
    def num_frames(self) -> int:
        return self.motion.num_frames

    def frame_at(self, seconds: float) -> int:
        return int(round(seconds / self.source_frame_time))


def skeleton_differences(reference: bvh.Motion, motion: bvh.Motion) -> list[str]:
    """How `motion`'s skeleton differs from `reference`'s: joint names and parents, then bone lengths
    (within BONE_TOLERANCE_M + BONE_TOLERANCE_REL); End Sites and the root's start offset (the hips'
    OFFSET is the take's start position in some sets) are not compared. [] when they are one skeleton."""
    if list(motion.names) != list(reference.names):
        if len(motion.names) != len(reference.names):
            return [f"{len(motion.names)} joints instead of {len(reference.names)}"]
        return [f"joint {k} is {b!r} instead of {a!r}" for k, (a, b) in enumerate(zip(reference.names, motion.names))
                if a != b]
    parents, reference_parents = np.asarray(motion.parents), np.asarray(reference.parents)
    if not np.array_equal(parents, reference_parents):
        return [f"{motion.names[k]} hangs from joint {parents[k]} instead of {reference_parents[k]}"
                for k in np.flatnonzero(parents != reference_parents)]
    hips = features.hips_joint(reference.names, reference_parents)
    lengths = np.linalg.norm(motion.offsets, axis=-1)
    reference_lengths = np.linalg.norm(reference.offsets, axis=-1)
    compared = (parents >= 0) & (np.arange(len(parents)) != hips)
    differ = compared & ~np.isclose(lengths, reference_lengths, atol=BONE_TOLERANCE_M, rtol=BONE_TOLERANCE_REL)
    return [f"{motion.names[k]} bone {100 * lengths[k]:.1f} cm instead of {100 * reference_lengths[k]:.1f} cm"
            for k in np.flatnonzero(differ)]


def prepare_clip(motion: bvh.Motion, fps: float, mirror: bool = False, speed: float = 1.0, path: str = "") -> PreparedClip:
    """The clip a piece plays: mirrored on its own skeleton, resampled so that each frame at `fps`
    advances `speed` / fps seconds of the source, and labelled (root, contacts, phase)."""
    if mirror:
        motion = mirror_keep_skeleton(motion)
    if motion.num_frames >= 2:
        scaled = resample(motion, fps / speed)
        source_frame_time = scaled.frame_time
    else:
        scaled, source_frame_time = motion.copy(), speed / fps
    scaled = replace(scaled, frame_time=1.0 / fps)
    return PreparedClip(scaled, features.clip_labels(scaled), source_frame_time, str(path))


def load_motion(path, cache: dict | None = None, where: str = "") -> bvh.Motion:
    """A BVH file's motion, read once per file version while `cache` (a dict the caller keeps) lives;
    EditError (prefixed by `where`, e.g. 'pieces[2] (walk.bvh).file') when it cannot be read."""
    path = Path(path)
    where = where or str(path)
    try:
        key = ("motion", str(path.resolve()), path.stat().st_mtime_ns)
        motion = None if cache is None else cache.get(key)
        if motion is None:
            motion = bvh.load(path)
    except (bvh.BVHError, OSError) as error:
        raise EditError(f"{where}: {error}") from None
    if cache is not None:
        cache[key] = motion
    return motion


def load_clips(edit: EditList, cache: dict | None = None) -> list[PreparedClip]:
    """Each piece's prepared clip; EditError naming the piece for a missing or unreadable file, a range
    outside the clip or a skeleton unlike the first piece's. `cache` (a dict the caller keeps) saves
    reloading and relabelling unchanged files."""
    cache = {} if cache is None else cache
    clips, reference = [], None
    for index, piece in enumerate(edit.pieces):
        path = piece_path(edit, index)
        where = f"pieces[{index}] ({path.name})"
        motion = load_motion(path, cache, f"{where}.file")
        tolerance = 0.5 * motion.frame_time
        if piece.end is not None and piece.end > motion.duration + tolerance:
            raise EditError(f"{where}.end: {piece.end:g} s is past the clip's end ({motion.duration:.3f} s)")
        if piece.start >= motion.duration:
            raise EditError(f"{where}.start: {piece.start:g} s is not before the clip's end ({motion.duration:.3f} s)")
        if reference is None:
            reference = motion
            try:
                foot_joints(motion.names, motion.parents)
            except ValueError as error:
                raise EditError(f"{where}.file: {error}") from None
        else:
            differences = skeleton_differences(reference, motion)
            if differences:
                raise EditError(f"{where}.file: {path} is on another skeleton than pieces[0] "
                                f"({Path(reference.source).name}): {'; '.join(differences[:6])}")
        key = ("clip", str(path.resolve()), path.stat().st_mtime_ns, piece.mirror, piece.speed, edit.fps)
        clip = cache.get(key)
        if clip is None:
            clip = cache[key] = prepare_clip(motion, edit.fps, piece.mirror, piece.speed, str(path))
        clips.append(clip)
    return clips


# ---------------------------------------------------------------------------------------------
# Phase matching


def phase_distance(a, b) -> np.ndarray:
    """Cyclic distance between phases in [0, 1): min(|a - b|, 1 - |a - b|), in [0, 0.5]."""
    d = np.abs(np.asarray(a, float) - np.asarray(b, float)) % 1.0
    return np.minimum(d, 1.0 - d)


class JoinMatch(NamedTuple):
    out_frame: int
    in_frame: int
    phase_difference: float  # cycles, 0-0.5
    contacts_agree: int  # contact joints in the same state (of 4)


def match_join(out_phase, out_contacts, in_phase, in_contacts, out_candidates, in_candidates,
               nominal_out: int, nominal_in: int, fps: float, out_feet=None, in_feet=None) -> JoinMatch:
    """The (outgoing, incoming) frame pair among the candidates whose phases and contact states agree
    best (cost: module constants), preferring pairs near the nominal frames.

    out_phase [F1], out_contacts [F1, K] bool, in_phase [F2], in_contacts [F2, K]; candidates: frame
    indices. out_feet / in_feet [F, K, 3] (optional): the contact joints in the root frame; their mean
    distance then costs FEET_WEIGHT per metre."""
    out_candidates, in_candidates = np.asarray(out_candidates), np.asarray(in_candidates)
    out_contacts, in_contacts = np.asarray(out_contacts, bool), np.asarray(in_contacts, bool)
    distance = phase_distance(np.asarray(out_phase)[out_candidates][:, None], np.asarray(in_phase)[in_candidates][None, :])
    out_down, in_down = out_contacts[out_candidates][:, None, :], in_contacts[in_candidates][None, :, :]
    differ = out_down != in_down
    shift = (np.abs(out_candidates - nominal_out)[:, None] + np.abs(in_candidates - nominal_in)[None, :]) / fps
    cost = distance + CONTACT_WEIGHT * differ.mean(axis=-1) + SHIFT_WEIGHT * shift
    if out_feet is not None and in_feet is not None:
        apart = np.linalg.norm(np.asarray(out_feet)[out_candidates][:, None] - np.asarray(in_feet)[in_candidates][None], axis=-1)
        cost = cost + FEET_WEIGHT * apart.mean(axis=-1)
    i, j = np.unravel_index(int(np.argmin(cost)), cost.shape)
    return JoinMatch(int(out_candidates[i]), int(in_candidates[j]), float(distance[i, j]),
                     int(differ.shape[-1] - differ[i, j].sum()))


def feet_in_root_frame(clip: PreparedClip) -> np.ndarray:
    """[F, 4, 3]: the contact joints relative to each frame's control root (its ground position, turned
    to its facing)."""
    labels = clip.labels
    relative = labels.global_positions[:, labels.contact_joints].copy()
    relative[..., [0, 2]] = features.inverse_rotate_xz(labels.root_yaw[:, None], relative[..., [0, 2]] - labels.root_xz[:, None])
    return relative


def _min_piece_frames(edit: EditList) -> int:
    return int(round(edit.transition_seconds * edit.fps)) + 1


def piece_frames(edit: EditList, clips: list[PreparedClip]) -> list[tuple[int, int]]:
    """(first, last) frame of each piece in its prepared clip, as asked (before any phase match)."""
    frames = []
    for index, (piece, clip) in enumerate(zip(edit.pieces, clips)):
        first = min(clip.frame_at(piece.start), clip.num_frames - 1)
        last = clip.num_frames - 1 if piece.end is None else min(clip.frame_at(piece.end), clip.num_frames - 1)
        if len(edit.pieces) > 1 and last - first < _min_piece_frames(edit):
            raise EditError(f"pieces[{index}] ({Path(clip.path).name}): {(last - first) / edit.fps:.2f} s long "
                            f"(after speed {piece.speed:g}), shorter than the transition ({edit.transition_seconds:g} s)")
        frames.append((first, last))
    return frames


def match_joins(edit: EditList, clips: list[PreparedClip], frames: list[tuple[int, int]]):
    """Move every join to its best phase match (edit.match == 'phase') or keep it where asked.

    Returns (frames with the chosen cuts, [JoinMatch]). Each piece keeps at least the transition's length."""
    frames = [list(f) for f in frames]
    window = int(round(edit.search_seconds * edit.fps)) if edit.match == "phase" else 0
    shortest = _min_piece_frames(edit)
    joins = []
    for index in range(len(clips) - 1):
        out_clip, in_clip = clips[index], clips[index + 1]
        out_first, out_last = frames[index]
        in_first, in_last = frames[index + 1]
        out_candidates = np.arange(max(out_last - window, out_first + shortest), min(out_last + window, out_clip.num_frames - 1) + 1)
        in_candidates = np.arange(max(in_first - window, 0), min(in_first + window, in_last - shortest) + 1)
        if len(out_candidates) == 0:
            out_candidates = np.array([out_last])
        if len(in_candidates) == 0:
            in_candidates = np.array([in_first])
        match = match_join(out_clip.labels.phase, out_clip.labels.contacts, in_clip.labels.phase,
                           in_clip.labels.contacts, out_candidates, in_candidates, out_last, in_first, edit.fps,
                           feet_in_root_frame(out_clip), feet_in_root_frame(in_clip))
        frames[index][1], frames[index + 1][0] = match.out_frame, match.in_frame
        joins.append(match)
    return [tuple(f) for f in frames], joins


# ---------------------------------------------------------------------------------------------
# Poses, alignment and transitions
#
# A pose sequence here is (rotations [F, J + 4, 4], translations [F, J + 4, 3]): local values for every
# joint except the placement joint (the hips), which holds its WORLD rotation and position, so that one
# rigid turn-and-move of the ground plane acts on that joint alone; the last 4 entries are the contact
# joints' world positions (ankles and toes), transitioned like the rest to be the legs' IK goals.


def placement_joint(motion: bvh.Motion) -> int:
    """The joint that carries the motion through the world: the hips, when every joint above them
    keeps one local transform for the whole clip (a 'joint_Root' dummy), else the root."""
    parents = np.asarray(motion.parents)
    hips = features.hips_joint(motion.names, parents)
    above, joint = [], hips
    while parents[joint] >= 0:
        joint = int(parents[joint])
        above.append(joint)
    still = all(np.ptp(motion.rotations[:, j], axis=0).max() < 1e-9 and np.ptp(motion.positions[:, j], axis=0).max() < 1e-9
                for j in above)
    return hips if still else int(np.flatnonzero(parents < 0)[0])


def clip_pose(clip: PreparedClip, placement: int) -> tuple[np.ndarray, np.ndarray]:
    """The clip's pose sequence, with the world positions of its 4 contact joints appended as extra
    translations (identity rotations): the transitions carry the feet along, as the legs' IK goals."""
    frames, joints = clip.motion.rotations.shape[:2]
    feet = len(clip.labels.contact_joints)
    rotations = np.zeros((frames, joints + feet, 4))
    rotations[..., 0] = 1.0
    rotations[:, :joints] = clip.motion.rotations
    rotations[:, placement] = clip.labels.global_rotations[:, placement]
    translations = np.concatenate([clip.motion.positions, clip.labels.global_positions[:, clip.labels.contact_joints]], axis=1)
    translations[:, placement] = clip.labels.global_positions[:, placement]
    return rotations, translations


def _turn_about_y(yaw: float, move_xz, rotations, translations, placement: int):
    """The pose sequence turned by `yaw` about +Y through the origin, then moved by (x, z)."""
    turn = quat_from_yaw(yaw)
    world = _world_entries(placement, rotations.shape[1])
    rotations, translations = rotations.copy(), translations.copy()
    rotations[:, placement] = quat_mul(turn, rotations[:, placement])
    translations[:, world] = quat_mul_vec(turn, translations[:, world]) + [move_xz[0], 0.0, move_xz[1]]
    return rotations, translations


def _root_at(clip: PreparedClip, frame: int) -> tuple[np.ndarray, float]:
    return clip.labels.root_xz[frame], float(clip.labels.root_yaw[frame])


def alignment(out_root_xz, out_yaw: float, in_root_xz, in_yaw: float) -> tuple[float, np.ndarray]:
    """(yaw, move (x, z)) that puts the incoming root (position on the ground, facing) on the outgoing one."""
    yaw = out_yaw - in_yaw
    turned = quat_mul_vec(quat_from_yaw(yaw), np.array([in_root_xz[0], 0.0, in_root_xz[1]]))
    return yaw, np.asarray(out_root_xz, float) - turned[[0, 2]]


def _step_before(rotations, translations, frame: int):
    """The pose one frame before `frame`: the real one, or extrapolated from the next step at frame 0."""
    if frame > 0:
        return rotations[frame - 1], translations[frame - 1]
    if len(rotations) < 2:
        return rotations[0], translations[0]
    step = quat_mul(rotations[1], quat_inv(rotations[0]))
    return quat_mul(quat_inv(step), rotations[0]), 2.0 * translations[0] - translations[1]


def _frames_after(rotations, translations, frame: int, count: int, placement: int):
    """`count` poses after `frame`; past the clip's end the last pose holds and glides on the ground at
    the root's last velocity."""
    last = len(rotations) - 1
    index = np.arange(frame + 1, frame + 1 + count)
    beyond = np.maximum(index - last, 0)
    step = translations[last, placement, [0, 2]] - translations[last - 1, placement, [0, 2]] if last > 0 else np.zeros(2)
    held = translations[np.minimum(index, last)]
    return rotations[np.minimum(index, last)], _move_on_ground(held, _world_entries(placement, held.shape[1]),
                                                                beyond[:, None] * step)


def smoothstep(t) -> np.ndarray:
    t = np.clip(np.asarray(t, float), 0.0, 1.0)
    return t * t * (3.0 - 2.0 * t)


def offset_decay(offset, velocity, times, seconds: float) -> np.ndarray:
    """An offset [..., D] with velocity [..., D] at the seam, at `times` [T] after it: [T, ..., D].

    A critically damped spring (rate SPRING_RATE / seconds) toward zero, times a smoothstep window that
    is 1 with zero slope at the seam and 0 with zero slope at `seconds`: position and velocity are
    continuous at the seam and the offset is exactly zero from `seconds` on."""
    rate = SPRING_RATE / seconds
    t = np.asarray(times, float).reshape((-1,) + (1,) * np.ndim(offset))
    spring = np.exp(-rate * t) * (offset + (velocity + rate * offset) * t)
    return spring * (1.0 - smoothstep(t / seconds))


def _world_entries(placement: int, entries: int) -> list[int]:
    """The entries of a pose sequence that hold world values: the placement joint and the feet."""
    return [placement] + list(range(entries - FEET, entries))


def _move_on_ground(translations, entries, shift) -> np.ndarray:
    """`translations` [T, E, 3] with the world `entries` moved by `shift` [T, 2] (x, z)."""
    translations = translations.copy()
    translations[:, entries, 0] += shift[:, None, 0]
    translations[:, entries, 2] += shift[:, None, 1]
    return translations


def inertialize(out_prev, out_last, in_prev, in_twin, in_after, dt: float, seconds: float, placement: int):
    """The incoming frames `in_after` (rotations [T, E, 4], translations [T, E, 3]) with the difference
    to the outgoing motion decaying over `seconds` (Holden's inertialization); returns them and the
    ground shift (x, z) the root keeps after the transition.

    out_prev / out_last: the last two output poses; in_prev / in_twin: the incoming poses at the same
    two instants (each a (rotations [E, 4], translations [E, 3]) pair). The offsets of the local
    rotations (as rotation vectors) and of the translations (the hips' world position and the feet)
    decay with their velocities (`offset_decay`). The root's ground velocity: slowing down, its offset
    decays with the position, so the body falls back onto the incoming path (and over its planted
    feet); speeding up, catching up would overshoot the incoming speed, so only the velocity offset
    decays and the incoming piece goes on from where the body has got to (a constant ground shift)."""
    def angular_velocity(earlier, later):
        return quat_to_expmap(quat_abs(quat_mul(later, quat_inv(earlier)))) / dt

    world = _world_entries(placement, len(in_twin[1]))
    rotation_offset = quat_to_expmap(quat_abs(quat_mul(out_last[0], quat_inv(in_twin[0]))))
    rotation_velocity = angular_velocity(out_prev[0], out_last[0]) - angular_velocity(in_prev[0], in_twin[0])
    translation_offset = out_last[1] - in_twin[1]
    translation_velocity = (out_last[1] - out_prev[1] - (in_twin[1] - in_prev[1])) / dt
    times = dt * np.arange(1, len(in_after[0]) + 1)
    shift = np.zeros((len(times), 2))
    out_speed = np.linalg.norm((out_last[1] - out_prev[1])[placement, [0, 2]])
    in_speed = np.linalg.norm((in_twin[1] - in_prev[1])[placement, [0, 2]])
    if in_speed > out_speed:
        root_velocity = translation_velocity[placement, [0, 2]].copy()
        translation_velocity[np.ix_(world, [0, 2])] -= root_velocity  # the feet: relative to the root
        shift = np.cumsum(offset_decay(root_velocity, np.zeros(2), times, seconds), axis=0) * dt
    rotation = quat_from_expmap(offset_decay(rotation_offset, rotation_velocity, times, seconds))
    rotations = quat_normalize(quat_mul(rotation, in_after[0]))
    translations = in_after[1] + offset_decay(translation_offset, translation_velocity, times, seconds)
    return rotations, _move_on_ground(translations, world, shift), shift[-1]


def crossfade(out_after, in_after, twin_root, blend_frames: int, placement: int):
    """The first `blend_frames` incoming frames blended from the outgoing piece's continuation (slerp of
    rotations, lerp of translations, smoothstep weights reaching 1 one frame after the blend); returns
    them and the ground shift (x, z) of the root at the end.

    out_after / in_after: the frames after the twin (out_after: blend_frames + 1 of them); twin_root:
    the root's (x, z) at the twin. The root moves on the ground by the blend of the two velocities
    (lerping the positions of two diverging paths would bump its speed); the incoming piece goes on
    from where that leaves it."""
    rotations, translations = in_after[0].copy(), in_after[1].copy()
    n = min(blend_frames, len(rotations))
    weight = smoothstep(np.arange(1, n + 1) / (blend_frames + 1))
    rotations[:n] = quat_slerp(out_after[0][:n], in_after[0][:n], weight[:, None])
    translations[:n] = out_after[1][:n] + weight[:, None, None] * (in_after[1][:n] - out_after[1][:n])
    count = min(n + 1, len(rotations))
    weight = smoothstep(np.arange(1, count + 1) / (blend_frames + 1))[:, None]
    out_root = np.concatenate([[twin_root], out_after[1][:count, placement, [0, 2]]])
    in_root = np.concatenate([[twin_root], in_after[1][:count, placement, [0, 2]]])
    path = twin_root + np.cumsum((1.0 - weight) * np.diff(out_root, axis=0) + weight * np.diff(in_root, axis=0), axis=0)
    shift = path - ((1.0 - weight) * out_root[1:] + weight * in_root[1:])
    if np.linalg.norm(in_root[1] - in_root[0]) <= np.linalg.norm(out_root[1] - out_root[0]):
        shift[:] = 0.0  # slowing down: the positions' blend falls back onto the incoming path, over the planted feet
    shift = np.concatenate([shift, np.repeat(shift[-1:], len(rotations) - count, axis=0)])
    return rotations, _move_on_ground(translations, _world_entries(placement, translations.shape[1]), shift), shift[-1]


# ---------------------------------------------------------------------------------------------
# Feet


def contact_runs(contact) -> list[tuple[int, int]]:
    """(start, end) frame ranges (end exclusive) where `contact` [F] is True."""
    padded = np.concatenate([[0], np.asarray(contact, np.int8), [0]])
    edges = np.diff(padded)
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist()))


def planted_foot_goals(feet, contacts, windows, fps: float) -> tuple[np.ndarray, np.ndarray]:
    """Where the contact joints go [F, 4, 3] so that the feet stay planted around the seams, and how
    much each toe is aimed at its goal [F, 2] (else the foot keeps the pose's orientation).

    feet [F, 4, 3] and contacts [F, 4] bool in contact-slot order (ankle, toe of the left then the
    right leg); windows: (first, last) frames. A contact run that touches a window is held where it
    touched down on the ground plane (the height stays the motion's own, so heel and toe roll as
    captured). Each leg moves as one rigid foot: its correction is the one holding the planted toe (the
    ankle while only the heel is down); a joint taking over is pinned where it is shown. When the leg's
    last held contact ends, the correction and its velocity decay together (`offset_decay`) over the
    swing to the leg's next contact, at most RELEASE_MAX_S, so the foot leaves the ground smoothly; the
    toe's aim fades over TOE_RELEASE_S."""
    feet = np.asarray(feet, float)
    contacts = np.asarray(contacts, bool)
    frames = len(feet)
    held = np.zeros_like(contacts)
    for k in range(contacts.shape[1]):
        for start, end in contact_runs(contacts[:, k]):
            held[start:end, k] = any(start <= last and end > first for first, last in windows)
    goals, toe_weights = feet.copy(), np.zeros((frames, 2))
    ground = feet[..., [0, 2]]
    longest_release = max(1, int(round(RELEASE_MAX_S * fps)))
    for leg, (ankle, toe) in enumerate(((0, 1), (2, 3))):
        leg_down = contacts[:, ankle] | contacts[:, toe]
        driver = np.where(held[:, toe], toe, np.where(held[:, ankle], ankle, -1))
        correction = np.zeros((frames, 2))
        starts = np.flatnonzero(np.diff(driver, prepend=-1) != 0)
        for start, end in zip(starts, np.append(starts[1:], frames)):
            joint = int(driver[start])
            if joint < 0:
                continue
            # pinned where it is shown (a joint taking over, or the foot still settling from a release)
            pin = ground[start, joint] + (correction[start - 1] if start > 0 else 0.0)
            correction[start:end] = pin - ground[start:end, joint]
            toe_weights[start:end, leg] = 1.0
            if end < frames and driver[end] < 0:
                later = np.flatnonzero(leg_down[end:])
                duration = min(max(int(later[0]) if len(later) else frames - end, 1), longest_release) + 1
                velocity = (correction[end - 1] - correction[end - 2]) * fps if end >= 2 else np.zeros(2)
                elapsed = np.arange(1, min(duration, frames - end) + 1) / fps
                correction[end:end + len(elapsed)] = offset_decay(correction[end - 1], velocity, elapsed, duration / fps)
                toe_weights[end:end + len(elapsed), leg] = np.where(
                    elapsed < duration / fps, 1.0 - smoothstep(elapsed / TOE_RELEASE_S), 0.0)
        goals[:, [ankle, toe], 0] += correction[:, None, 0]
        goals[:, [ankle, toe], 2] += correction[:, None, 1]
    return goals, toe_weights


def plant_feet(motion: bvh.Motion, feet, contacts, seam_frames, transition_seconds: float) -> bvh.Motion:
    """The motion with its contact joints taken to `feet` [F, 4, 3] (the transitioned source feet) and
    the contacts touching the seams held in place (`planted_foot_goals`; leg IK, `ik.reach_foot_goals`)."""
    fps = motion.fps
    parents = np.asarray(motion.parents)
    contact_joints = contact_joint_order(foot_joints(motion.names, parents))
    after = int(round(max(transition_seconds, LOCK_AFTER_S) * fps))
    windows = [(seam - int(round(LOCK_BEFORE_S * fps)), seam + after) for seam in seam_frames]
    goals, toe_weights = planted_foot_goals(feet, contacts, windows, fps)
    global_rot, global_pos = forward_kinematics(motion.rotations, motion.positions, parents)
    # Ankles go to their goals; toes are aimed only as much as the planting asks (the transitioned ankle
    # and toe goals of a swinging foot need not be a foot length apart).
    constrained = np.abs(goals - global_pos[:, contact_joints]).max(axis=-1) > 1e-6
    constrained[:, 1::2] = toe_weights > 0
    frames = np.flatnonzero(constrained.any(axis=-1))
    if len(frames) == 0:
        return motion
    legs = leg_chains(motion.names, parents)
    leg_joints = tuple(np.array(joints) for joints in zip(*legs))  # hips, knees, ankles, toes
    facing = features.facing_directions(global_pos, motion.names, parents, motion.frame_time)[frames]
    forward = np.stack([facing[:, 0], np.zeros(len(frames)), facing[:, 1]], axis=-1)[:, None]
    toe_offsets = motion.offsets[leg_joints[3]]
    solved = reach_foot_goals(global_pos[frames], global_rot[frames], goals[frames], constrained[frames], leg_joints,
                              toe_offsets, np.linalg.norm(toe_offsets, axis=-1), forward, toe_weights[frames])
    rotations = motion.rotations.copy()
    changed = np.concatenate(leg_joints[:3])
    rotations[np.ix_(frames, changed)] = local_rotations(solved, parents)[:, changed]
    return replace(motion, rotations=rotations)


# ---------------------------------------------------------------------------------------------
# Measures for the report (the evaluation's: `pfnn_core.evaluation.measures`)


def _steps(skating: measures.Skating, start: int, stop: int) -> measures.Skating:
    """The steps start..stop-1 (clipped to the motion) of a skating measurement."""
    window = slice(max(start, 0), max(stop, 0))
    return measures.Skating(skating.weight[window], skating.speed[window], skating.contact[window])


# ---------------------------------------------------------------------------------------------
# Building a sequence


@dataclass
class PieceResult:
    file: str
    clip: PreparedClip
    first_frame: int  # chosen frames of the prepared clip
    last_frame: int
    nominal_first: int
    nominal_last: int
    output_start: int  # output frame of the piece's first frame

    @property
    def start(self) -> float:
        return self.first_frame * self.clip.source_frame_time

    @property
    def end(self) -> float:
        return self.last_frame * self.clip.source_frame_time


@dataclass
class JoinResult:
    match: JoinMatch
    seam_frame: int  # output frame where the incoming piece begins (the frame after the twin)
    moved_out_s: float  # source seconds the cuts moved from where they were asked
    moved_in_s: float
    seam_skating: float  # m/s over SEAM_WINDOW_S around the join (`measures.foot_skating`)
    source_skating: float  # m/s over the same time in the source clips (before the cut, after it)


@dataclass
class EditResult:
    edit: EditList
    motion: bvh.Motion
    pieces: list
    joins: list
    contacts: np.ndarray  # [F, 4] the sources' contact labels on the output frames
    mocap_skating: float  # m/s over the whole source clips, same measure
    root_step_max: float  # m, largest frame-to-frame step of the output's control root
    source_root_step_max: float  # m, the same over the source clips
    max_trend_deviation: float  # m, largest distance of a joint from its 3-frame trend
    source_max_trend_deviation: float  # m, the same over the pieces in their source clips
    pops: int  # frames with a joint more than measures.POP_DISTANCE off its trend (`measures.pose_pops`)
    written: str = ""

    def report_lines(self) -> list[str]:
        edit, motion = self.edit, self.motion
        lines = [f"{edit.name}: {len(self.pieces)} pieces, {motion.num_frames} frames ({motion.duration:.2f} s at "
                 f"{edit.fps:g} fps), {edit.transition_kind} {edit.transition_seconds:g} s, match {edit.match}"
                 + (f" within {edit.search_seconds:g} s" if edit.match == "phase" else "")]
        lines.append("piece  start     end  speed  mirror  output frames  file")
        for index, piece in enumerate(self.pieces):
            source = self.edit.pieces[index]
            lines.append(f"{index:>5}  {piece.start:6.2f}  {piece.end:6.2f}  {source.speed:5.2f}  "
                         f"{'yes' if source.mirror else 'no':>6}  {piece.output_start:>6}-{piece.output_start + piece.last_frame - piece.first_frame:<6}  "
                         f"{Path(piece.file).name}")
        if self.joins:
            lines.append("join   cut out (s)  cut in (s)  moved out/in (s)  phase diff  contacts agree  "
                         "skating seam / source (m/s)")
        for index, join in enumerate(self.joins):
            out_piece, in_piece = self.pieces[index], self.pieces[index + 1]
            lines.append(f"{index}->{index + 1}  {out_piece.end:11.3f}  {in_piece.start:10.3f}  "
                         f"{join.moved_out_s:+7.2f} / {join.moved_in_s:+5.2f}  {join.match.phase_difference:10.3f}  "
                         f"{join.match.contacts_agree:>12}/4  {join.seam_skating:13.3f} / {join.source_skating:.3f}")
        lines.append(f"foot skating of the source clips: {self.mocap_skating:.3f} m/s; root step max "
                     f"{100 * self.root_step_max:.1f} cm (source clips {100 * self.source_root_step_max:.1f} cm); "
                     f"pose pops {self.pops} (largest trend deviation {100 * self.max_trend_deviation:.1f} cm, "
                     f"source clips {100 * self.source_max_trend_deviation:.1f} cm)")
        if self.written:
            lines.append(f"wrote {self.written}")
        return lines

    def report_dict(self) -> dict:
        return {
            "name": self.edit.name, "frames": self.motion.num_frames, "fps": self.edit.fps,
            "pieces": [{"file": p.file, "start": p.start, "end": p.end, "output_start": p.output_start}
                       for p in self.pieces],
            "joins": [{"cut_out_s": self.pieces[i].end, "cut_in_s": self.pieces[i + 1].start,
                       "cut_out_frame": j.match.out_frame, "cut_in_frame": j.match.in_frame,
                       "moved_out_s": j.moved_out_s, "moved_in_s": j.moved_in_s, "seam_frame": j.seam_frame,
                       "phase_difference": j.match.phase_difference, "contacts_agree": j.match.contacts_agree,
                       "seam_skating": j.seam_skating, "source_skating": j.source_skating}
                      for i, j in enumerate(self.joins)],
            "mocap_skating": self.mocap_skating, "root_step_max": self.root_step_max,
            "source_root_step_max": self.source_root_step_max, "pops": self.pops,
            "max_trend_deviation": self.max_trend_deviation,
            "source_max_trend_deviation": self.source_max_trend_deviation, "written": self.written,
        }


def _splice(edit: EditList, clips: list[PreparedClip], frames, placement: int):
    """Aligned, transitioned pose sequence of all pieces: (rotations, translations, feet [F, 4, 3], contacts,
    output frame of each piece's first frame, output frame of each seam)."""
    dt = 1.0 / edit.fps
    blend_frames = int(round(edit.transition_seconds * edit.fps))
    rotations, translations, contacts, starts, seams = [], [], [], [], []
    out_yaw, out_move, count = 0.0, np.zeros(2), 0
    for index, (clip, (first, last)) in enumerate(zip(clips, frames)):
        pose = clip_pose(clip, placement)
        if index == 0:
            rotations.append(pose[0][first:last + 1])
            translations.append(pose[1][first:last + 1])
            contacts.append(clip.labels.contacts[first:last + 1])
            starts.append(0)
            count = last - first + 1
        else:
            previous_clip, previous_last = clips[index - 1], frames[index - 1][1]
            root_xz, yaw = _root_at(previous_clip, previous_last)
            world_xz = quat_mul_vec(quat_from_yaw(out_yaw), np.array([root_xz[0], 0.0, root_xz[1]]))[[0, 2]] + out_move
            in_xz, in_yaw = _root_at(clip, first)
            yaw_in, move_in = alignment(world_xz, yaw + out_yaw, in_xz, in_yaw)
            pose = _turn_about_y(yaw_in, move_in, *pose, placement)
            after = (pose[0][first + 1:last + 1], pose[1][first + 1:last + 1])
            if edit.transition_kind == "inertialize":
                out_last = (rotations[-1][-1], translations[-1][-1])
                out_prev = (rotations[-1][-2], translations[-1][-2]) if len(rotations[-1]) > 1 else \
                    (rotations[-2][-1], translations[-2][-1])
                segment = inertialize(out_prev, out_last, _step_before(*pose, first), (pose[0][first], pose[1][first]),
                                      after, dt, edit.transition_seconds, placement)
            else:
                previous_pose = _turn_about_y(out_yaw, out_move, *clip_pose(previous_clip, placement), placement)
                segment = crossfade(_frames_after(*previous_pose, previous_last, blend_frames + 1, placement), after,
                                    pose[1][first, placement, [0, 2]], blend_frames, placement)
            rotations.append(segment[0])
            translations.append(segment[1])
            contacts.append(clip.labels.contacts[first + 1:last + 1])
            starts.append(count - 1)  # the twin frame stands for the piece's first frame
            seams.append(count)
            count += last - first
            out_yaw, out_move = yaw_in, move_in + segment[2]
    rotations, translations = np.concatenate(rotations), np.concatenate(translations)
    joints = rotations.shape[1] - FEET
    return (rotations[:, :joints], translations[:, :joints], translations[:, joints:],
            np.concatenate(contacts).astype(bool), starts, seams)


def _to_local(reference: bvh.Motion, rotations, translations, placement: int):
    """Placement joint back from world to local values under the reference's still joints above it."""
    parents = np.asarray(reference.parents)
    rotations, translations = rotations.copy(), translations.copy()
    above = []
    joint = placement
    while parents[joint] >= 0:
        joint = int(parents[joint])
        above.append(joint)
    rotations[:, above] = reference.rotations[0, above]
    translations[:, above] = reference.positions[0, above]
    if above:
        parent_rot, parent_pos = forward_kinematics(reference.rotations[0], reference.positions[0], parents)
        parent = int(parents[placement])
        rotations[:, placement] = quat_inv_mul(parent_rot[parent], rotations[:, placement])
        translations[:, placement] = quat_mul_vec(quat_inv(parent_rot[parent]), translations[:, placement] - parent_pos[parent])
    return quat_normalize(rotations), translations


def build(edit: EditList, cache: dict | None = None) -> EditResult:
    """Load, match, splice, plant the feet and measure; nothing is written. EditError on bad input."""
    clips = load_clips(edit, cache)
    nominal = piece_frames(edit, clips)
    frames, matches = match_joins(edit, clips, nominal)
    reference = clips[0].motion
    placement = placement_joint(reference)
    rotations, translations, feet, contacts, starts, seams = _splice(edit, clips, frames, placement)
    rotations, translations = _to_local(reference, rotations, translations, placement)
    motion = replace(reference, rotations=rotations, positions=translations, frame_time=1.0 / edit.fps,
                     source=edit.name)
    motion = plant_feet(motion, feet, contacts, seams, edit.transition_seconds)
    pieces = [PieceResult(clip.path, clip, first, last, nominal[i][0], nominal[i][1], starts[i])
              for i, (clip, (first, last)) in enumerate(zip(clips, frames))]
    return _measured(edit, motion, clips, pieces, matches, seams, contacts)


def _measured(edit, motion, clips, pieces, matches, seams, contacts) -> EditResult:
    """The report's measures: foot skating against the pieces' capture floor (each contact joint's
    planted height over the clips' labelled contacts, `features.floor_heights`) with the evaluation's
    measure, at each join and over the source clips; root steps; pose pops."""
    dt = 1.0 / edit.fps
    feet = clips[0].labels.contact_joints
    floor = np.asarray(features.floor_heights([(c.labels.global_positions[:, feet, 1], c.labels.contacts)
                                               for c in clips]))
    source_clips = {id(c): c for c in clips}
    source_skating = {key: measures.foot_skating(c.labels.global_positions[:, feet], floor, dt)
                      for key, c in source_clips.items()}
    positions = motion.global_positions()
    output_skating = measures.foot_skating(positions[:, feet], floor, dt)
    half = int(round(0.5 * SEAM_WINDOW_S * edit.fps))
    joins = []
    for index, (match, seam) in enumerate(zip(matches, seams)):
        twin = seam - 1  # the output frame of the instant both pieces share
        out_clip, in_clip = clips[index], clips[index + 1]
        source = measures.pool_skating([_steps(source_skating[id(out_clip)], match.out_frame - half, match.out_frame),
                                        _steps(source_skating[id(in_clip)], match.in_frame, match.in_frame + half)])
        moved_out = (match.out_frame - pieces[index].nominal_last) * out_clip.source_frame_time
        moved_in = (match.in_frame - pieces[index + 1].nominal_first) * in_clip.source_frame_time
        joins.append(JoinResult(match, seam, moved_out, moved_in,
                                _steps(output_skating, twin - half, twin + half).mean(), source.mean()))
    mocap = measures.pool_skating(source_skating.values()).mean()
    root_xz = positions[:, features.hips_joint(motion.names, motion.parents), [0, 2]]
    step = float(np.linalg.norm(np.diff(root_xz, axis=0), axis=-1).max()) if len(root_xz) > 1 else 0.0
    source_step = max(float(np.linalg.norm(np.diff(c.labels.root_xz, axis=0), axis=-1).max()) if c.num_frames > 1 else 0.0
                      for c in clips)
    deviation = measures.trend_deviation(positions)
    source_deviation = max(float(measures.trend_deviation(p.clip.labels.global_positions[p.first_frame:p.last_frame + 1]).max())
                           for p in pieces)
    return EditResult(edit, motion, pieces, joins, contacts, mocap, step, source_step,
                      float(deviation.max()) if deviation.size else 0.0, source_deviation,
                      int(measures.pose_pops(positions).sum()))


def export(edit: EditList, out_path, cache: dict | None = None) -> EditResult:
    """Build the edit and write it as BVH (.bvh.gz compressed); nothing is written on bad input."""
    out_path = Path(out_path)
    if not bvh.is_bvh_path(out_path):
        raise EditError(f"{out_path}: the output must be a .bvh or .bvh.gz file")
    result = build(edit, cache)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    bvh.save(result.motion, out_path)
    result.written = str(out_path)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="pfnn-edit", description="Splice BVH clips at matching phase (edit list "
                                     "JSON) and write the sequence as BVH with a seam report.")
    parser.add_argument("edit_list", help="edit list JSON")
    parser.add_argument("--out", required=True, help="output .bvh or .bvh.gz")
    parser.add_argument("--report", help="also write the report as JSON here")
    args = parser.parse_args(argv)
    try:
        result = export(load_edit_list(args.edit_list), args.out)
    except EditError as error:
        print(f"pfnn-edit: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print("\n".join(result.report_lines()))
    if args.report:
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(json.dumps(result.report_dict(), indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
