"""The clip a piece plays: each piece's source file read once per version (`load_motion`, a cache the
caller keeps), checked (range, one skeleton with the first piece), mirrored, time-scaled and resampled
to the edit's frame rate, and labelled (root, contacts, phase: `gait_labels`)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from pfnn_core.editing.document import EditError, EditList, piece_path
from pfnn_core.motion import bvh
from pfnn_core.motion.gait_labels import GaitLabels, gait_labels
from pfnn_core.motion.kinematics import mirror_keep_skeleton, resample
from pfnn_core.skeleton import foot_joints, skeleton_difference


@dataclass
class PreparedClip:
    """One source clip as a piece plays it: mirrored if asked, time-scaled, at the edit's frame rate."""

    motion: bvh.Motion  # frame_time = 1 / fps
    labels: GaitLabels  # root, contacts [F, 4], phase [F], global pose of `motion`
    source_frame_time: float  # seconds of the source clip per frame (speed / fps, to a hair)
    path: str

    @property
    def num_frames(self) -> int:
        return self.motion.num_frames

    def frame_at(self, seconds: float) -> int:
        return int(round(seconds / self.source_frame_time))


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
    return PreparedClip(scaled, gait_labels(scaled), source_frame_time, str(path))


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
            why = skeleton_difference(reference, motion)
            if why:
                raise EditError(f"{where}.file: {path} is on another skeleton than pieces[0] "
                                f"({Path(reference.source).name}): {why}")
        key = ("clip", str(path.resolve()), path.stat().st_mtime_ns, piece.mirror, piece.speed, edit.fps)
        clip = cache.get(key)
        if clip is None:
            clip = cache[key] = prepare_clip(motion, edit.fps, piece.mirror, piece.speed, str(path))
        clips.append(clip)
    return clips
