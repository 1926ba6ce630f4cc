"""What a training set measures besides its samples: per-style minutes, speeds and strides, the motion
kind of a clip label, the floor level of each contact joint, the standing stance, the full-stick gait
speeds. Stored in the checkpoint; the runtime reads them from the model card."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pfnn_core.features.contract import FALLBACK_WALK_SPEED, RUN_TO_WALK_SPEED, gait_from_speed
from pfnn_core.motion.gait_labels import GaitLabels, arms_down_frames
from pfnn_core.motion.phase import stride_statistics
from pfnn_core.motion.root import body_frames, to_body_frame


@dataclass
class ClipStatistics:
    """What the unmirrored clip adds to its style's and the pooled statistics, the floor and the stance;
    measured by `clip_samples` (in a worker process, perhaps), combined by `_collect_statistics`."""

    kind: str  # motion_kind of its label
    content: str
    seconds: float
    standing: bool  # a standing clip (then only `stance` is used)
    mean_speed: float = 0.0
    cycle_speeds: np.ndarray = None
    stride_lengths: np.ndarray = None
    planted: tuple = None  # (heights [F, 4], contacts [F, 4] bool) of the contact joints
    stance: np.ndarray = None  # `standing_stance` of a standing clip, when it has arms-down frames


@dataclass
class _StyleSamples:
    """What one style's clips measure (collected while building, summarised by `style_statistics`)."""

    seconds: dict = field(default_factory=dict)  # content -> seconds of mocap
    clip_speeds: dict = field(default_factory=dict)  # motion kind -> [mean clip speed]
    cycle_speeds: list = field(default_factory=list)
    cycle_strides: list = field(default_factory=list)
    walk_cycle_speeds: list = field(default_factory=list)


def motion_kind(label) -> str:
    """'stand', 'walk', 'run', 'back' (walking backwards), 'side' (side-steps) or 'other' from a clip
    label's content, 'unknown' when the content is unknown."""
    content = label.content
    if label.stands:
        return "stand"
    if label.runs is None:
        return "unknown"
    if label.runs:
        return "run"
    if "back" in content:
        return "back"
    if content.endswith(("-left", "-right")) and "turn" not in content:
        return "side"
    return "walk" if content.startswith("walk") else "other"


def style_statistics(samples: _StyleSamples) -> dict:
    """Per style: minutes (total and per content), clips, full-stick walk and run speeds (median mean clip
    speed of forward walks and runs), the slowest walk (10th percentile of forward-walk cycle speeds),
    backward-walk and side-step speeds, and the stride length as a function of speed."""
    def median(kind):
        values = samples.clip_speeds.get(kind) or []
        return float(np.median(values)) if values else None

    walk_cycles = np.asarray(samples.walk_cycle_speeds, float)
    return {
        "minutes": round(sum(samples.seconds.values()) / 60.0, 3),
        "content_minutes": {k: round(v / 60.0, 3) for k, v in sorted(samples.seconds.items())},
        "clips": int(sum(len(v) for v in samples.clip_speeds.values())),
        "walk": median("walk") or median("unknown"), "run": median("run"),
        "slowest_walk": float(np.percentile(walk_cycles, 10)) if len(walk_cycles) else None,
        "walk_back": median("back"), "side_step": median("side"),
        "stride": (stride_statistics(np.concatenate(samples.cycle_speeds), np.concatenate(samples.cycle_strides))
                   if samples.cycle_speeds and sum(map(len, samples.cycle_speeds)) else None),
    }


def floor_heights(heights_and_contacts) -> list:
    """The planted height (m) of each contact joint: the median of its height over its labelled contact
    frames, pooled over clips [(heights [F, 4], contacts [F, 4] bool)]."""
    heights = np.concatenate([h for h, _ in heights_and_contacts]) if heights_and_contacts else np.zeros((0, 4))
    contacts = np.concatenate([c for _, c in heights_and_contacts]) if heights_and_contacts else np.zeros((0, 4), bool)
    return [float(np.median(heights[contacts[:, k], k])) if contacts[:, k].any() else float("nan")
            for k in range(heights.shape[1])]


def standing_stance(labels: GaitLabels, names, parents) -> np.ndarray | None:
    """The contact joints [F', 4, 3] of a standing clip's arms-down frames in the body frame
    (`body_frames`: x along the hip line, z forward, origin under the hips), or None."""
    keep = arms_down_frames(labels, names, parents)
    if not keep.any():
        return None
    positions = labels.global_positions[keep]
    origin, yaw = body_frames(positions, names, parents)
    return to_body_frame(positions[:, labels.contact_joints], origin, yaw)


def _collect_statistics(clip: ClipStatistics, style: _StyleSamples, pooled: _StyleSamples, planted: list,
                        stances: list) -> None:
    """Add one (unmirrored) clip to its style's and the pooled statistics, the floor and the stance."""
    for samples in (style, pooled):
        samples.seconds[clip.content] = samples.seconds.get(clip.content, 0.0) + clip.seconds
    if clip.standing:
        if clip.stance is not None:
            stances.append(clip.stance)
        return
    planted.append(clip.planted)
    for samples in (style, pooled):
        samples.clip_speeds.setdefault(clip.kind, []).append(clip.mean_speed)
        if clip.kind in ("walk", "run", "unknown"):
            samples.cycle_speeds.append(clip.cycle_speeds)
            samples.cycle_strides.append(clip.stride_lengths)
        if clip.kind in ("walk", "unknown"):
            samples.walk_cycle_speeds.extend(clip.cycle_speeds.tolist())


def measured_gait_speeds(clip_speeds: dict) -> dict:
    """Full-stick walk and run speeds (m/s): the median mean speed of the forward-walk and run clips; a
    set without content labels ('unknown') is split into walks and runs by `gait_from_speed`."""
    walks, runs = list(clip_speeds.get("walk") or []), list(clip_speeds.get("run") or [])
    unknown = np.asarray(clip_speeds.get("unknown") or [], float)
    if len(unknown):
        is_run = np.argmax(gait_from_speed(unknown), axis=-1) == 2
        walks += unknown[~is_run].tolist()
        runs += unknown[is_run].tolist()
    walk_speed = float(np.median(walks)) if walks else FALLBACK_WALK_SPEED
    return {"walk": walk_speed, "run": float(np.median(runs)) if runs else RUN_TO_WALK_SPEED * walk_speed,
            "measured": {"walk": len(walks), "run": len(runs)}}
