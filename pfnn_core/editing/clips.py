"""The clip a piece plays: each piece's source file read once per version (`load_motion`, a cache the
caller keeps), checked (range, one skeleton with the first piece), mirrored, time-scaled and resampled
to the edit's frame rate, and labelled (root, contacts, phase: `features.clip_labels`)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from pfnn_core import bvh, features
from pfnn_core.contacts import foot_joints
from pfnn_core.editing.document import EditError, EditList, piece_path
from pfnn_core.kinematics import mirror_keep_skeleton, resample

# Bones compare equal within this (the bundled dataset-1 and dataset-2 skeletons differ by 0.04 cm).
BONE_TOLERANCE_M = 0.005
BONE_TOLERANCE_REL = 0.02


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
