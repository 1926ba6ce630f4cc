"""Building a motion-matching database from BVH folders (`pfnn-train DATA --kind matching --out M`): no
training, every clip's frames as they are.

Each file goes through the same steps as the PFNN's training set (`data.build`): labels per clip, the
data checks, resampling to 60 Hz, the root frame, contacts and phase (`features.samples.clip_features`).
Of its frames every `frame_step`-th is kept as a database row (`matching_database`): a moving clip is one
segment; a standing clip gives its arms-down runs (as the PFNN's calm standing samples: no root motion,
feet down, a standing future). The card's shared facts come from the PFNN build's statistics
(`data.statistics`). Mirrored copies are not stored: the loader makes them, with each joint's mirror
reflection measured here on one clip and its pipeline-mirrored copy.

Bad input (no BVH file, an unreadable or mislabelled file, another skeleton, a clip too short to window,
no moving clip) raises ValueError naming the file(s) before anything is written.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pfnn_core.data import checks
from pfnn_core.data.build import _worker_count, clip_statistics, load_checked_clip, run_clip_tasks
from pfnn_core.data.dataset import bvh_paths
from pfnn_core.data.labels import LabelRule, label_clips
from pfnn_core.data.statistics import (
    _collect_statistics,
    _StyleSamples,
    floor_heights,
    measured_gait_speeds,
    motion_kind,
    style_statistics,
)
from pfnn_core.features.contract import FALLBACK_STRIDE, SIM_FPS
from pfnn_core.features.layout import make_layouts
from pfnn_core.features.samples import clip_features
from pfnn_core.math.planar import inverse_rotate_xz
from pfnn_core.math.quat import quat_from_6d, quat_to_matrix, wrap_angle
from pfnn_core.models.checkpoint import write_checkpoint
from pfnn_core.models.matching.database import FUTURE_FRAMES, KIND, SEGMENT_COLUMNS, MatchingConfig, MatchingDatabase
from pfnn_core.models.matching.features import frame_features
from pfnn_core.motion import bvh
from pfnn_core.skeleton import skeleton_dict, skeleton_only

log = logging.getLogger(__name__)

FRAME_STEP = 2  # a row every second 60 Hz frame: the bundled 30 fps capture's own frames
STANDING_FUTURE = np.array([0.0, 1.0])  # a standing row's future facing: straight ahead


@dataclass
class ClipTask:
    """One file to turn into rows (small and picklable, for a process pool)."""

    path: Path
    reference: object  # the first file's skeleton (a one-frame Motion)
    label: object  # labels.ClipLabel
    style_id: int
    frame_step: int


@dataclass
class ClipRows:
    """One file's rows (per segment: the `MatchingDatabase` fields and its first 60 Hz frame), its
    statistics and data-check findings."""

    path: str
    segments: list = field(default_factory=list)  # dicts of row arrays + "first_frame", "standing"
    statistics: object = None  # data.statistics.ClipStatistics; None when unusable
    duration_s: float = 0.0
    fps: float = 0.0
    content_digest: str = ""
    findings: list = field(default_factory=list)


def clip_rows(task: ClipTask) -> ClipRows:
    """The rows one file gives; problems that make it unusable come back as error findings (so one run
    reports every bad file)."""
    result = ClipRows(path=str(task.path))
    try:
        motion = load_checked_clip(Path(task.path), task.reference, result)
        if motion is None:
            return result
        kind = motion_kind(task.label)
        features = clip_features(motion, make_layouts(motion.num_joints),
                                 runs=None if kind in ("unknown", "stand") else task.label.runs)
        result.statistics = clip_statistics(features, kind, task.label.content, motion.duration, motion)
        speed = checks.speed_finding(task.path, features.mean_speed, features.is_standing_clip)
        names = [motion.names[j] for j in features.labels.contact_joints]
        result.findings += ([speed] if speed else []) + checks.contact_findings(task.path, features.labels.contacts,
                                                                              SIM_FPS, names)
        result.segments = segment_rows(features, make_layouts(motion.num_joints), skeleton_dict(motion),
                                       task.frame_step)
    except (ValueError, OSError) as error:
        message = str(error).removeprefix(f"{task.path}: ")
        result.findings.append(checks.Finding(str(task.path), "error", message))
        result.segments, result.statistics = [], None
    return result


def segment_rows(features, layouts, skeleton: dict, frame_step: int) -> list[dict]:
    """The database rows of one clip's features: every `frame_step`-th 60 Hz frame, one segment for a
    moving clip, one per arms-down run of a standing clip."""
    y = layouts.y.unpack(np.asarray(features.y, np.float64))
    frames = len(features.labels.phase)
    rows = np.arange(frame_step - 1, frames - 1, frame_step)  # y row r holds frame r + 1
    if features.is_standing_clip:
        keep = rows[features.arms_down[rows]]
        runs = np.split(keep, np.flatnonzero(np.diff(keep) != frame_step) + 1) if len(keep) else []
    else:
        runs = [rows]
    feet = (skeleton["contact_joints"][0], skeleton["contact_joints"][2])
    segments = []
    for run in runs:
        if len(run) == 0:
            continue
        segment = {
            "rotations": quat_from_6d(y["joint_rot"][run]).astype(np.float16),
            "hips": y["joint_pos"][run, skeleton["hips"]].astype(np.float16),
            "root_motion": _root_motion(features.labels, run + 1, frame_step),
            "contacts": y["contacts"][run].astype(np.float32), "phase": features.phase[run].astype(np.float16),
            "features": frame_features(y["joint_pos"][run], y["joint_vel"][run], y["future_pos"][run],
                                       y["future_dir"][run], feet, skeleton["hips"]).astype(np.float16),
            "first_frame": int(run[0] + 1), "standing": bool(features.is_standing_clip)}
        if features.is_standing_clip:  # as the calm standing samples: still root, feet down, a standing future
            segment["root_motion"][:] = 0.0
            segment["contacts"][:] = 1.0
            segment["features"][:, 15:21] = 0.0
            segment["features"][:, 21:27] = np.tile(STANDING_FUTURE, 3)
        segments.append(segment)
    return segments


def _root_motion(labels, frames: np.ndarray, frame_step: int) -> np.ndarray:
    """[n, 3] the root's motion from each frame to `frame_step` frames on (vx, vz m/s in the frame's own
    root frame, yaw rate rad/s); the clip's last rows repeat the last motion there is."""
    last = len(labels.phase) - 1
    ahead = np.minimum(frames + frame_step, last)
    base = np.minimum(frames, ahead - frame_step).clip(0)
    seconds = frame_step / SIM_FPS
    yaw, xz = labels.root_yaw, labels.root_xz
    velocity = inverse_rotate_xz(yaw[base][:, None], (xz[base + frame_step] - xz[base])[:, None])[:, 0] / seconds
    yaw_rate = wrap_angle(yaw[base + frame_step] - yaw[base]) / seconds
    return np.concatenate([velocity, yaw_rate[:, None]], axis=1).astype(np.float32)


def mirror_reflections(motion) -> tuple[np.ndarray, np.ndarray]:
    """(pairs [J], L [J, 3, 3]): each joint's left/right counterpart and the signed axis permutation with
    which the pipeline's mirrored copy (`kinematics.mirror_keep_skeleton`) turns its root-frame
    rotations: Q'_j = S Q_pair(j) L_j, S the reflection of x. Measured on one clip, snapped to the axes."""
    from pfnn_core.motion.kinematics import mirror_keep_skeleton, mirror_pairs

    layouts = make_layouts(motion.num_joints)
    original, mirrored = (layouts.y.unpack(np.asarray(clip_features(m, layouts).y, np.float64))["joint_rot"]
                          for m in (motion, mirror_keep_skeleton(motion)))
    pairs = np.asarray(mirror_pairs(motion.names), np.int64)
    reflect = np.diag([-1.0, 1.0, 1.0])
    source = quat_to_matrix(quat_from_6d(original))[:, pairs]
    target = quat_to_matrix(quat_from_6d(mirrored))
    measured = np.einsum("fjki,kl,fjlm->jim", source, reflect, target) / len(source)
    return pairs, np.rint(measured).astype(np.float32)


def build_database(paths_or_folder, label_rule: LabelRule | None = None, workers: int = 1, progress=None,
                   frame_step: int = FRAME_STEP, mirror: bool = True) -> tuple[MatchingDatabase, dict]:
    """(database, metadata) of a BVH set; ValueError naming the file(s) for anything that stops it."""
    paths = bvh_paths(paths_or_folder)
    labels = label_clips(paths, label_rule or LabelRule())
    first = bvh.load(str(paths[0]))
    try:
        skeleton = skeleton_dict(first)
    except ValueError as error:
        raise ValueError(f"{paths[0]}: {error}") from None
    styles = sorted({label.style for label in labels})
    reference = skeleton_only(first)
    tasks = [ClipTask(path, reference, label, styles.index(label.style), frame_step) for path, label in zip(paths, labels)]
    clips = run_clip_tasks(tasks, workers, progress, work=clip_rows)
    findings = [finding for clip in clips for finding in clip.findings]
    findings += checks.duplicate_findings({clip.path: clip.content_digest for clip in clips if clip.content_digest})
    findings += checks.frame_rate_findings({clip.path: clip.fps for clip in clips if clip.fps > 0})
    findings += _short_clip_findings(clips, frame_step)
    message = checks.errors_message(findings)
    if message:
        raise ValueError(message)
    for finding in findings:
        if finding.severity == "warning":
            log.warning("%s: %s", finding.file, finding.message)
    meta = _card_facts(clips, labels, styles, skeleton)  # then the clips' statistics are let go
    database = _assembled(clips, tasks, frame_step, mirror_reflections(first))  # ... and their rows
    if not (database.candidates & ~database.row_standing).any():
        raise ValueError(f"{paths[0].parent}: no moving clip to search (only standing clips): "
                         + ", ".join(clip.path for clip in clips[:5]) + (" ..." if len(clips) > 5 else ""))
    meta["data"] = {"files": [p.name for p in paths], "folders": [str(Path(p).resolve()) for p in _folders(paths_or_folder)],
                    "minutes": round(sum(c.duration_s for c in clips) / 60.0, 3), "rows": database.num_rows,
                    "mirror": mirror, "clip_labels": {p.name: [lab.style, lab.content] for p, lab in zip(paths, labels)},
                    "findings": [f.to_dict() for f in findings]}
    config = MatchingConfig(frame_step, mirror, tuple(p.name for p in paths), database.num_rows,
                            tuple(label.runs for label in labels))
    database.clip_gait = config.gait_of_clips()  # as the loader sets it from the metadata
    database.refresh()
    meta[KIND] = config.to_meta()
    return database, meta


def _folders(paths_or_folder) -> list:
    return [paths_or_folder] if isinstance(paths_or_folder, (str, Path)) else list(paths_or_folder)


def _short_clip_findings(clips: list, frame_step: int) -> list:
    """A warning for each moving clip too short to have a frame with a second of its clip after it: its
    frames are searched with the future extrapolated past its end (`matching_database.SHORT_CLIP_FRAMES`)."""
    out = []
    for clip in clips:
        moving = [s for s in clip.segments if not s["standing"]]
        if moving and all((len(s["phase"]) - 1) * frame_step < FUTURE_FRAMES for s in moving):
            out.append(checks.Finding(clip.path, "warning", f"clip shorter than the {FUTURE_FRAMES / SIM_FPS:g} s "
                                      f"future the search matches ({clip.duration_s:.2f} s): its future is "
                                      "extrapolated past its end"))
    return out


def _assembled(clips: list, tasks: list, frame_step: int, mirror) -> MatchingDatabase:
    """The database of every clip's rows (each clip's own arrays are let go as they are copied in, so the
    build holds the rows once)."""
    names = ("rotations", "hips", "root_motion", "contacts", "phase", "features")
    table, start = [], 0
    for clip_id, (clip, task) in enumerate(zip(clips, tasks)):
        for segment in clip.segments:
            count = len(segment["phase"])
            table.append([start, count, clip_id, task.style_id, int(segment["standing"]), segment["first_frame"], 0])
            start += count
    if not table:
        raise ValueError(f"{tasks[0].path}: no database rows (only standing clips without arms-down frames?)")
    arrays = {}
    for name in names:
        first = next(segment[name] for clip in clips for segment in clip.segments)
        arrays[name] = np.empty((start,) + first.shape[1:], first.dtype)
    at = 0
    for clip in clips:
        for segment in clip.segments:
            count = len(segment["phase"])
            for name in names:
                arrays[name][at:at + count] = segment[name]
            at += count
        clip.segments = []
    return MatchingDatabase(rotations=arrays["rotations"], hips=arrays["hips"], root_motion=arrays["root_motion"],
                            contacts=arrays["contacts"], phase=arrays["phase"], features=arrays["features"],
                            segments=np.asarray(table, np.int64).reshape(-1, len(SEGMENT_COLUMNS)),
                            mirror_pairs=mirror[0], mirror_reflections=mirror[1], frame_step=frame_step)


def _card_facts(clips: list, labels: list, styles: list, skeleton: dict) -> dict:
    """The facts every checkpoint stores (`models.card`), by the PFNN build's statistics."""
    per_style = {style: _StyleSamples() for style in styles}
    pooled, planted, stances = _StyleSamples(), [], []
    for clip, label in zip(clips, labels):
        if clip.statistics is not None:
            _collect_statistics(clip.statistics, per_style[label.style], pooled, planted, stances)
    floor = floor_heights(planted)
    del planted[:]
    for clip in clips:
        clip.statistics = None
    stance = np.concatenate(stances) if stances else None
    pooled_stats = style_statistics(pooled)
    return {"skeleton": skeleton, "stride": pooled_stats["stride"] or dict(FALLBACK_STRIDE),
            "gait_speeds": measured_gait_speeds(pooled.clip_speeds),
            "styles": {"names": list(styles), "stats": {s: style_statistics(v) for s, v in per_style.items()}},
            "floor_heights": floor,
            "stance": ({"positions": stance.mean(axis=0).tolist(), "spread": stance.std(axis=0).tolist(),
                        "frames": int(len(stance))} if stance is not None else {})}


def build_matching(paths_or_folder, out, label_rule: LabelRule | None = None, workers: int = 1, progress=None,
                   frame_step: int = FRAME_STEP, mirror: bool = True, say=print) -> Path:
    """Build the database of a BVH set and write it to `out` (checked writable first); prints its size
    and time. ValueError naming the file for bad input; nothing is written then."""
    started = time.perf_counter()
    message = checks.errors_message(checks.output_findings(out))
    if message:
        raise ValueError(message)
    database, meta = build_database(paths_or_folder, label_rule, workers, progress, frame_step, mirror)
    seconds = time.perf_counter() - started
    meta["training"] = {"kind": KIND, "build_seconds": round(seconds, 1), "frame_step": frame_step,
                        "workers": _worker_count(workers, len(meta["data"]["files"]))}
    path = write_checkpoint(out, KIND, database.to_tensors(), make_layouts(database.num_joints), meta)
    size = path.stat().st_size / 1e6
    mirrored = f" ({2 * database.num_rows:,} with the mirrored copies made at load)" if mirror else ""
    say(f"pfnn-train: matching database of {len(meta['data']['files'])} clips: {database.num_rows:,} rows{mirrored}, "
        f"{size:.1f} MB, built in {seconds:.1f} s: {path}")
    return path


def train(config, progress=None, stop=None, data=None):
    """`pfnn-train --kind matching`: build the database of `config.data` (its labels, mirror and worker
    settings) into `config.out`. No training and no PFNN dataset (`data` is not used); a `TrainResult`
    of no epochs. `progress` and `stop` (a training run's) have nothing to follow here."""
    import sys

    from pfnn_core.training.config import TrainResult

    started = time.perf_counter()
    sources = config.data[0] if len(config.data) == 1 else list(config.data)
    path = build_matching(sources, config.out, LabelRule.parse(config.labels), config.workers, mirror=config.mirror,
                          say=lambda message: print(message, file=sys.stderr))
    return TrainResult(out_path=path, resume_path=path, epochs_completed=0, best_epoch=0, best_val_loss=float("nan"),
                       train_losses=[], val_losses=[], stopped=False, early_stopped=False,
                       wall_s=time.perf_counter() - started)
