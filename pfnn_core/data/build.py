"""Building the training set of a BVH folder: each file's samples and statistics in `clip_samples` (which a
process pool can run), the data checks' findings gathered, and the rows, statistics and summary
assembled into one `TrainingData` (`build_training_data`, cached by `dataset_cache`)."""

from __future__ import annotations

import dataclasses
import logging
import os
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pfnn_core.data import checks
from pfnn_core.data.dataset import TrainingData, bvh_paths, data_hash, feature_config
from pfnn_core.data.statistics import (
    ClipStatistics,
    _collect_statistics,
    _StyleSamples,
    floor_heights,
    measured_gait_speeds,
    motion_kind,
    standing_stance,
    style_statistics,
)
from pfnn_core.features.contract import FALLBACK_STRIDE, SIM_FPS
from pfnn_core.features.layout import make_layouts
from pfnn_core.features.samples import MIN_CLIP_S, STANDING_REPLICAS, ClipFeatures, calm_standing_samples, clip_features
from pfnn_core.motion import bvh
from pfnn_core.skeleton import check_same_skeleton, skeleton_dict, skeleton_only

log = logging.getLogger(__name__)


MIN_FILES_PER_WORKER = 32  # automatic worker count: a process pool only for sets this large per worker


def build_training_data(paths_or_folder, mirror: bool = True, standing_replicas: int = STANDING_REPLICAS,
                        seed: int = 0, cache_dir=None, progress=None, workers: int = 1,
                        label_rule=None) -> TrainingData:
    """Load every BVH, label it (`pfnn_core.labels`), make samples (plus mirrored copies), calm standing
    samples, style, stride and floor statistics.

    Raises ValueError naming the file(s) for: no BVH, a clip the labelling rule cannot label, an
    unreadable file, mixed skeletons, a clip too short to window (every file is checked first; the
    message lists them all). Warnings about the data (`data_checks`: implausible speeds, reference-pose
    first frames, missing or fragmented contacts, duplicates, mixed frame rates) are logged and kept in
    `summary["findings"]`.
    cache_dir: when given, the result is stored there (`dataset_cache`) keyed by the files' contents and
    `feature_config` (settings, labels, feature code), and a later call with the same files, settings and
    labels reads it back memory-mapped.
    workers: processes building clips in parallel (0 = one per CPU core); the samples do not depend on it.
    progress: called as progress(files_done, files_total).
    """
    from pfnn_core.data import labels as labelling

    paths = bvh_paths(paths_or_folder)
    rule = label_rule or labelling.LabelRule()
    labels = labelling.label_clips(paths, rule)
    config = feature_config(mirror, standing_replicas, seed, labels, rule.describe())

    def build() -> TrainingData:
        return _build_training_data(paths, labels, config, progress, workers)

    if cache_dir is None:
        return build()
    from pfnn_core.data import dataset_cache

    return dataset_cache.load_or_build(paths, config, build, TrainingData, cache_dir)


@dataclass
class ClipTask:
    """What `clip_samples` needs to turn one file into samples (small and picklable, for a process pool)."""

    path: Path
    reference: object  # the first file's skeleton (a Motion with one frame): every file must match it
    label: object  # its labels.ClipLabel
    style_id: int  # index of its style in the set's sorted style names
    num_styles: int
    mirror: bool
    standing_replicas: int
    seed: int


@dataclass
class ClipSamples:
    """One file's contribution to the training set."""

    path: str
    # per kept version (the clip, its mirror): TrainingData's per-row fields by name (next_index local to the
    # version, clip id added when the set is assembled); a per-row field added here is assembled as it is
    versions: list = field(default_factory=list)
    statistics: ClipStatistics | None = None  # of the unmirrored clip; None when the file is unusable
    duration_s: float = 0.0
    fps: float = 0.0
    content_digest: str = ""  # of the decompressed file, to find duplicates
    findings: list = field(default_factory=list)  # checks.Finding


def _error_finding(path, error: Exception) -> checks.Finding:
    message = str(error)
    for prefix in (f"{path}: ", f"{path.name}: "):
        message = message.removeprefix(prefix)
    return checks.Finding(str(path), "error", message)


def load_checked_clip(path: Path, reference, result):
    """One file's motion on the reference skeleton (joints reordered to it, a reference-pose first frame
    left out), or None when it is too short; `result` (its `content_digest`, `fps`, `duration_s` and
    `findings`) takes what the data checks say. Raises ValueError / OSError for an unusable file."""
    result.content_digest = checks.content_digest(bvh.read_bytes(path))
    motion = bvh.load(str(path))
    result.fps, result.duration_s = motion.fps, motion.duration
    reordered = checks.reorder_joints(motion, reference.names)
    if reordered is not motion:
        result.findings.append(checks.reorder_finding(path, reference.source))
        motion = reordered
    check_same_skeleton(reference, motion, path)
    reference_pose = checks.reference_pose_finding(path, motion.global_positions())
    if reference_pose is not None:
        result.findings.append(reference_pose)
        motion = dataclasses.replace(motion, rotations=motion.rotations[1:], positions=motion.positions[1:])
    too_short = checks.too_short_finding(path, motion.duration, MIN_CLIP_S)
    if too_short is not None:
        result.findings.append(too_short)
        return None
    return motion


def clip_samples(task: ClipTask) -> ClipSamples:
    """The samples one file gives (and its mirrored copy's), with its measurements and data-check findings.

    Depends on no other file (its random draws come from the seed and its file name), so files can be
    built in any order, in parallel worker processes, with the same result. Problems that make the file
    unusable are returned as error findings, not raised, so one run reports every bad file.
    """
    from pfnn_core.motion.kinematics import mirror_keep_skeleton as mirror_motion

    path = Path(task.path)
    result = ClipSamples(path=str(path))
    try:
        motion = load_checked_clip(path, task.reference, result)
        if motion is None:
            return result
        layouts = make_layouts(motion.num_joints)
        rng = np.random.default_rng([task.seed, zlib.crc32(path.name.encode())])
        kind = motion_kind(task.label)
        runs = None if kind in ("unknown", "stand") else task.label.runs
        versions = [(motion, False)] + ([(mirror_motion(motion), True)] if task.mirror else [])
        for version, is_mirror in versions:
            features = clip_features(version, layouts, runs=runs)
            if not is_mirror:
                result.findings += _clip_findings(path, features, version)
                result.statistics = clip_statistics(features, kind, task.label.content, motion.duration, version)
            if features.is_standing_clip:
                samples = calm_standing_samples(features, layouts, task.standing_replicas, rng)
                if samples is None:
                    continue
                x, y, phase, next_local = samples
                standing = np.ones(len(x), bool)
                # Standing looks alike in every style: each replica is shown as a random style.
                replica = np.arange(len(x)) // max(len(x) // task.standing_replicas, 1)
                style = rng.integers(task.num_styles, size=task.standing_replicas + 1)[replica]
            else:
                x, y, phase = features.x, features.y, features.phase
                next_local = np.r_[np.arange(1, len(x)), -1]
                standing = np.zeros(len(x), bool)
                style = np.full(len(x), task.style_id)
            result.versions.append({"x": x, "y": y, "phase": phase, "next_index": next_local, "standing": standing,
                                    "mirrored": np.full(len(x), is_mirror), "style": style})
    except (ValueError, OSError) as error:
        result.findings.append(_error_finding(path, error))
        result.versions, result.statistics = [], None
    return result


def clip_statistics(features: ClipFeatures, kind: str, content: str, seconds: float, motion) -> ClipStatistics:
    """One unmirrored clip's measurements for the style, floor and stance statistics."""
    if features.is_standing_clip:
        return ClipStatistics(kind, content, seconds, standing=True,
                              stance=standing_stance(features.labels, motion.names, np.asarray(motion.parents)))
    labels = features.labels
    return ClipStatistics(kind, content, seconds, standing=False, mean_speed=features.mean_speed,
                          cycle_speeds=features.cycle_speeds, stride_lengths=features.stride_lengths,
                          planted=(labels.global_positions[:, labels.contact_joints, 1], labels.contacts))


def _clip_findings(path, features: ClipFeatures, motion) -> list:
    speed = checks.speed_finding(path, features.mean_speed, features.is_standing_clip)
    joint_names = [motion.names[j] for j in features.labels.contact_joints]
    contacts = checks.contact_findings(path, features.labels.contacts, SIM_FPS, joint_names)
    return ([speed] if speed else []) + contacts


def _worker_count(workers: int, tasks: int) -> int:
    """`workers`, or for 0 one per CPU core but no more than one per MIN_FILES_PER_WORKER files (starting a
    worker process costs seconds: a few files build faster in this process)."""
    if workers <= 0:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        workers = min(cores, tasks // MIN_FILES_PER_WORKER)
    return max(1, min(workers, tasks))


def run_clip_tasks(tasks: list, workers: int, progress=None, work=None) -> list:
    """`work` (default `clip_samples`; a module-level function, for the worker processes) over every
    task, in order; in `workers` processes when more than one (0: `_worker_count`)."""
    work = clip_samples if work is None else work
    workers = _worker_count(workers, len(tasks))
    if workers == 1:
        results = []
        for done, task in enumerate(tasks, 1):
            results.append(work(task))
            if progress:
                progress(done, len(tasks))
        return results
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    # spawn, not fork: the caller may be a multi-threaded program (the viewer) or may have torch loaded.
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
    results = [None] * len(tasks)
    try:
        futures = {pool.submit(work, task): index for index, task in enumerate(tasks)}
        for done, future in enumerate(as_completed(futures), 1):
            results[futures[future]] = future.result()
            if progress:
                progress(done, len(tasks))
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown()
    return results


def _build_training_data(paths: list, labels: list, config: dict, progress, workers: int) -> TrainingData:
    started = time.perf_counter()
    first = bvh.load(str(paths[0]))
    try:
        skeleton_dict(first)  # the foot, hip and hand roles every clip needs, found by name
    except ValueError as error:
        raise ValueError(f"{paths[0]}: {error}") from None
    reference, layouts = skeleton_only(first), make_layouts(first.num_joints)
    styles = sorted({label.style for label in labels})
    tasks = [ClipTask(path, reference, label, styles.index(label.style), len(styles), config["mirror"],
                      config["standing_replicas"], config["seed"]) for path, label in zip(paths, labels)]
    clips = run_clip_tasks(tasks, workers, progress)

    findings = [finding for clip in clips for finding in clip.findings]
    findings += checks.duplicate_findings({clip.path: clip.content_digest for clip in clips if clip.content_digest})
    findings += checks.frame_rate_findings({clip.path: clip.fps for clip in clips if clip.fps > 0})
    for finding in findings:
        if finding.severity == "warning":
            log.warning("%s: %s", finding.file, finding.message)
    message = checks.errors_message(findings)
    if message:
        raise ValueError(message)

    columns: dict[str, list] = {}
    per_style = {style: _StyleSamples() for style in styles}
    pooled = _StyleSamples()
    planted, stances = [], []
    row_count = 0
    for clip_id, (clip, label) in enumerate(zip(clips, labels)):
        for rows in clip.versions:
            count = len(rows["x"])
            rows = {**rows, "clip": np.full(count, clip_id),
                    "next_index": np.where(rows["next_index"] >= 0, rows["next_index"] + row_count, -1)}
            for name, values in rows.items():
                columns.setdefault(name, []).append(values)
            row_count += count
        _collect_statistics(clip.statistics, per_style[label.style], pooled, planted, stances)
    if not columns:
        raise ValueError(f"{paths[0].parent}: no training samples (only standing clips without calm frames?)")
    per_row = {name: np.concatenate(parts) for name, parts in columns.items()}
    for name, dtype in (("x", np.float32), ("y", np.float32), ("phase", np.float32), ("clip", np.int64),
                        ("next_index", np.int64), ("style", np.int64)):
        per_row[name] = per_row[name].astype(dtype)

    pooled_stats = style_statistics(pooled)
    stride = pooled_stats["stride"] or dict(FALLBACK_STRIDE)
    stance = np.concatenate(stances) if stances else None
    data = TrainingData(
        **per_row, layout=layouts, clip_names=[p.name for p in paths], skeleton=skeleton_dict(first),
        stride=stride, gait_speeds=measured_gait_speeds(pooled.clip_speeds), styles=styles,
        clip_labels=[{"style": label.style, "content": label.content} for label in labels],
        style_stats={style: style_statistics(samples) for style, samples in per_style.items()},
        floor_heights=floor_heights(planted),
        stance=({"positions": stance.mean(axis=0).tolist(), "spread": stance.std(axis=0).tolist(),
                 "frames": int(len(stance))} if stance is not None else {}),
    )
    data.summary = {"files": len(paths), "rows": int(len(data.x)), "standing_rows": int(data.standing.sum()),
                    "minutes": round(sum(clip.duration_s for clip in clips) / 60.0, 3),
                    "mirror": config["mirror"], "hash": data_hash(paths, config),
                    "findings": [finding.to_dict() for finding in findings],
                    "workers": _worker_count(workers, len(paths)),
                    "build_seconds": round(time.perf_counter() - started, 2)}
    return data
