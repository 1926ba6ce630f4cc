"""The mocap reference: the training clips measured with the same code as the drives.

Owns `MocapClip` (one clip's arrays and labels at its own frame rate), `load_mocap` (the clips of a
folder on the model's skeleton, labelled), `MocapReference` and `mocap_reference` (floor levels,
skating per kind of motion, pops, floating, stance, jerk, acceleration noise per kind of motion,
the slip in turns, the pose database and leave-one-clip-out realism), and the folder and held-out-clip lookups a checkpoint needs.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from pfnn_core.data.labels import LabelRule, label_clips
from pfnn_core.data.normalise import split_by_clip
from pfnn_core.data.statistics import floor_heights, motion_kind, standing_stance
from pfnn_core.evaluation import acceleration_noise as noise_measure
from pfnn_core.evaluation import measures, metrics, turning_slip
from pfnn_core.features.contract import gait_from_speed
from pfnn_core.models.card import ModelCard
from pfnn_core.motion import bvh
from pfnn_core.motion.gait_labels import STANDING_MAX_SPEED, GaitLabels, gait_labels
from pfnn_core.skeleton import contact_joint_order, foot_joints, hips_joint

ROOT_DIR = Path(__file__).resolve().parents[2]
DEFAULT_BVH_DIR = ROOT_DIR / "assets" / "bvh"
QUICK_CLIPS = 24          # clips of the quick suite's reference, spread over styles and contents
LEAVE_ONE_OUT_CLIPS = 40  # mocap clips scored against all the others (realism reference)
KINDS = ("walk", "run", "back", "side", "stand")
STYLE_SKATING_MIN_S = 60.0  # a style's own skating figure for a kind needs this much of its mocap


@dataclass
class MocapClip:
    path: Path
    style: str
    kind: str                  # motion_kind: walk, run, back, side, stand, other
    positions: np.ndarray      # [F, J, 3] world joint positions (m)
    dt: float
    motion: object = field(repr=False)

    @cached_property
    def labels(self) -> GaitLabels:
        """The pipeline's contacts and phase (made only when needed: floor levels, stance)."""
        return gait_labels(self.motion)


def bvh_joint_names(path) -> list[str]:
    """Joint names of a BVH file from its HIERARCHY alone (the motion is not read)."""
    names = []
    for raw in bvh.read_bytes(path).splitlines():
        words = raw.decode("utf-8", errors="replace").split()
        if words and words[0].upper() == "MOTION":
            break
        if len(words) >= 2 and words[0].upper() in ("ROOT", "JOINT"):
            names.append(" ".join(words[1:]).split("{")[0].strip())
    return names


def clips_on_skeleton(paths, joint_names) -> list[Path]:
    """The files whose joints are exactly `joint_names` (a model only runs on its own skeleton)."""
    return [Path(p) for p in paths if bvh_joint_names(p) == list(joint_names)]


def reference_folder(card: ModelCard, bvh_dir=None) -> Path:
    """Where the mocap reference comes from: `bvh_dir` when given, else the folder the model was
    trained on (when it still exists), else the bundled clips."""
    if bvh_dir is not None:
        return Path(bvh_dir)
    for item in map(Path, card.trained_on):
        folder = item if item.is_dir() else item.parent if item.is_file() else None
        if folder is not None:
            return folder
    return DEFAULT_BVH_DIR


def held_out_clips(card: ModelCard, bvh_dir: Path) -> tuple[list[Path], str]:
    """The model's validation clips found in bvh_dir, and a note on where the list came from.

    The validation files when the checkpoint stores them; otherwise `split_by_clip` repeated over the
    stored file list with the training run's seed and validation fraction; when neither names a file
    in bvh_dir, every clip there, marked as possibly trained on."""
    files = list(card.data_files)
    if card.val_files:
        names, note = set(card.val_files), "validation clips stored in the checkpoint"
    elif files:
        stand_in = SimpleNamespace(clip=np.arange(len(files)), clip_labels=[])
        _, val_ids = split_by_clip(stand_in, card.val_fraction, card.seed)
        names, note = {files[i] for i in val_ids}, "validation split repeated from the training seed"
    else:
        names = set()
    everything = bvh.find_files(bvh_dir)
    wanted = {bvh.clip_name(name) for name in names}  # a clip may since have been compressed (.bvh -> .bvh.gz)
    paths = [p for p in everything if bvh.clip_name(p) in wanted]
    if not paths:
        return everything, "no held-out clip known among these files: clips may have been trained on"
    return paths, note


def spread(keys, count: int) -> list[int]:
    """Indices of up to `count` items spread over their groups (keys, e.g. (style, kind)), round robin."""
    groups: dict = {}
    for index, key in enumerate(keys):
        groups.setdefault(key, []).append(index)
    order, queues = [], [list(v) for _, v in sorted(groups.items(), key=lambda item: str(item[0]))]
    while len(order) < count and any(queues):
        for queue in queues:
            if queue and len(order) < count:
                order.append(queue.pop(len(queue) // 2))
    return sorted(order)


def load_mocap(paths, label_rule: LabelRule | None = None) -> list[MocapClip]:
    """The clips at their own frame rate with their labels (style, kind); a clip without a content
    label is a standing clip, a walk or a run by its mean speed."""
    from pfnn_core.data.inspector import mean_ground_speed

    paths = [Path(p) for p in paths]
    clips = []
    for path, label in zip(paths, label_clips(paths, label_rule)):
        motion = bvh.load(path)
        kind = motion_kind(label)
        if kind == "unknown":
            speed = mean_ground_speed(motion)
            kind = "stand" if speed < STANDING_MAX_SPEED else (
                "run" if np.argmax(gait_from_speed(speed)) == 2 else "walk")
        clips.append(MocapClip(path, label.style, kind, motion.global_positions(), motion.frame_time, motion))
    return clips


@dataclass
class MocapReference:
    """The body measures on the mocap (each clip at its own rate)."""

    clips: list                    # MocapClip
    names: list
    parents: np.ndarray
    contact_joints: list
    floor: np.ndarray              # [4] planted height of each contact joint (m)
    floor_source: str
    skating: dict                  # kind -> contact-weighted speed (m/s)
    style_skating: dict            # (style, kind) -> the same over that style's clips alone, where it has
                                   # STYLE_SKATING_MIN_S of them
    ground_share: dict             # kind -> share of contact-joint steps on the floor (`Skating.ground_share`)
    style_ground_share: dict       # (style, kind) -> the same, where `style_skating` has the pair
    fast_share: dict               # kind -> share of contact steps faster than 0.25 m/s
    airborne_share: dict           # kind -> share of frames with both feet up (`measures.both_feet_up`)
    near_floor_slide: dict         # kind -> mean speed of foot joints within 5 cm of the floor (m/s)
    speed: dict                    # kind -> median ground speed of its clips (m/s)
    style_speed: dict              # (style, kind) -> the same over that style's clips
    pops_per_minute: float
    floating_share: float          # share of still-foot frames that float
    stance: np.ndarray | None      # [4, 3] contact joints when standing, body frame (m)
    stance_spread: float           # m: RMS distance of the mocap's own standing frames from `stance`
    jerk: float                    # m/s^3 at the mocap's rate
    jerk_dt: float
    database: measures.PoseDatabase
    database_styles: list          # style name of each database label (style index)
    realism: dict                  # leave-one-clip-out: {"median", "p95", "clips"}
    acceleration_noise: dict = field(default_factory=dict)  # kind -> power of the body joints' accelerations
                                   # in `noise_band`, (m/s^2)^2 (`acceleration_noise.acceleration_noise`)
    noise_band: tuple = (noise_measure.NOISE_LOW_HZ, 15.0)  # Hz: up to the slowest clip's Nyquist (and 30)
    turning_slip: float = math.nan  # m/s across the facing in the turns of forward walks and runs
    turning_frames: int = 0        # the frames that slip is the mean over

    @property
    def styles(self) -> list[str]:
        return list(self.database_styles)


def mocap_reference(clips: list, names, parents, card: ModelCard | None = None,
                    leave_one_out: int = LEAVE_ONE_OUT_CLIPS) -> MocapReference:
    """Measure the mocap clips; the model's `card` supplies the floor levels and stance measured on its
    training set when it has them, else they are measured on these clips."""
    parents = np.asarray(parents)
    contact_joints = list((card.skeleton.get("contact_joints") if card is not None else None)
                          or contact_joint_order(foot_joints(list(names), parents)))
    floor, floor_source = _floor(clips, contact_joints, card)
    by_kind = _by_kind(clips, contact_joints, floor)
    faults = _faults(clips, contact_joints, floor, parents)
    stance, stance_spread = _stance(clips, names, parents, card)
    styles = sorted({c.style for c in clips})
    database, realism = _realism(clips, names, parents, styles, leave_one_out)
    return MocapReference(
        clips=clips, names=list(names), parents=parents, contact_joints=contact_joints, floor=floor,
        floor_source=floor_source, **by_kind, **faults, stance=stance, stance_spread=stance_spread,
        database=database, database_styles=styles, realism=realism, **_naturalness(clips, names, parents))


SIM_NYQUIST_HZ = 30.0  # the drives run at 60 Hz: the noise band stops at the lower of this and the mocap's


def noise_band(clips) -> tuple[float, float]:
    """(low, high) Hz of the acceleration-noise band: from NOISE_LOW_HZ up to the Nyquist frequency of
    the slowest clip (a 30 fps capture shows nothing above 15 Hz), at most the drives' 30 Hz."""
    high = min([SIM_NYQUIST_HZ] + [0.5 / c.dt for c in clips])
    return noise_measure.NOISE_LOW_HZ, high


def _naturalness(clips, names, parents) -> dict:
    """Acceleration noise per moving kind (clips pooled by duration) and the slip in the turns of the
    forward walks and runs (pooled by turning frames)."""
    body = measures.body_joints(names, parents)
    low, high = noise_band(clips)
    noise = {}
    for kind in ("walk", "run", "back", "side"):
        parts = [(noise_measure.acceleration_noise(c.positions[:, body], c.dt, low, high), len(c.positions) * c.dt)
                 for c in clips if c.kind == kind]
        noise[kind] = noise_measure.pooled_noise(parts)
    slips = [turning_slip.turning_slip(*turning_slip.body_root(c.positions, names, parents, c.dt), c.dt)
             for c in clips if c.kind in ("walk", "run")]
    return {"acceleration_noise": noise, "noise_band": (low, high), "turning_slip": turning_slip.pooled_slip(slips),
            "turning_frames": int(sum(n for _, n in slips))}


def _floor(clips, contact_joints, card) -> tuple[np.ndarray, str]:
    if card is not None and card.floor_heights is not None:
        return np.asarray(card.floor_heights, float), "stored in the checkpoint (training mocap)"
    moving = [c for c in clips if c.kind != "stand"]
    floor = floor_heights([(c.labels.global_positions[:, contact_joints, 1], c.labels.contacts) for c in moving])
    return np.asarray(floor, float), "measured on the reference clips (the checkpoint stores none)"


def _clip_speed(clip: MocapClip) -> float:
    """The clip's mean ground speed (m/s) of its hips (what training measures a style's speeds by)."""
    if len(clip.positions) < 2:
        return 0.0
    hips = hips_joint(clip.motion.names, np.asarray(clip.motion.parents), clip.positions)
    steps = np.linalg.norm(np.diff(clip.positions[:, hips][:, [0, 2]], axis=0), axis=-1)
    return float(steps.mean() / clip.dt)


def _by_kind(clips, contact_joints, floor) -> dict:
    """Skating, feet on the floor, fast contacts, both feet up and speed per kind of motion (and per
    style where a style has enough of a kind)."""
    out = {name: {} for name in ("skating", "fast_share", "style_skating", "ground_share", "style_ground_share",
                                 "airborne_share", "near_floor_slide", "speed", "style_speed")}
    for kind in KINDS:
        kind_clips = [c for c in clips if c.kind == kind]
        parts = [measures.foot_skating(c.positions[:, contact_joints], floor, c.dt) for c in kind_clips]
        pooled = measures.pool_skating(parts)
        out["skating"][kind], out["fast_share"][kind] = pooled.mean(), pooled.fast_share()
        out["ground_share"][kind] = pooled.ground_share()
        up = [measures.both_feet_up(c.positions[:, contact_joints], floor) for c in kind_clips]
        out["airborne_share"][kind] = float(np.concatenate(up).mean()) if up else math.nan
        slides = [measures.near_floor_slide(c.positions[:, contact_joints], floor, c.dt) for c in kind_clips]
        near = np.concatenate([n.ravel() for _, n in slides]) if slides else np.zeros(0, bool)
        speed = np.concatenate([v.ravel() for v, _ in slides]) if slides else np.zeros(0)
        out["near_floor_slide"][kind] = float(speed[near].mean()) if near.any() else math.nan
        speeds = [_clip_speed(c) for c in kind_clips]
        out["speed"][kind] = float(np.median(speeds)) if speeds else math.nan
        for style in sorted({c.style for c in kind_clips}):
            mine = [(c, part, v) for c, part, v in zip(kind_clips, parts, speeds) if c.style == style]
            out["style_speed"][(style, kind)] = float(np.median([v for _, _, v in mine]))
            if sum(len(c.positions) * c.dt for c, _, _ in mine) >= STYLE_SKATING_MIN_S:
                own = measures.pool_skating([part for _, part, _ in mine])
                out["style_skating"][(style, kind)], out["style_ground_share"][(style, kind)] = \
                    own.mean(), own.ground_share()
    return out


def _faults(clips, contact_joints, floor, parents) -> dict:
    """Pops per minute, the floating share of still-foot frames and the jerk of the mocap itself."""
    popped = minutes = still = floating = jerk_sum = jerk_count = 0.0
    for clip in clips:
        popped += float(measures.pose_pops(clip.positions).sum())
        minutes += len(clip.positions) * clip.dt / 60.0
        heights = measures.foot_heights(clip.positions[:, contact_joints], floor, clip.dt)
        still += float(heights.still.sum())
        floating += float((heights.still & (heights.lowest > measures.FLOAT_HEIGHT)).sum())
        body = clip.positions[:, parents >= 0]
        if len(body) >= 4:
            jerk_sum += float(metrics.mean_jerk(body, clip.dt)) * (len(body) - 3)
            jerk_count += len(body) - 3
    return {"pops_per_minute": popped / minutes if minutes else math.nan,
            "floating_share": floating / still if still else math.nan,
            "jerk": jerk_sum / jerk_count if jerk_count else math.nan,
            "jerk_dt": float(np.median([c.dt for c in clips]))}


def _stance(clips, names, parents, card) -> tuple[np.ndarray | None, float]:
    if card is not None and card.stance is not None:
        spread = card.stance_spread
        return np.asarray(card.stance, float), spread if spread is not None else 0.0
    frames = [s for s in (standing_stance(c.labels, names, parents) for c in clips if c.kind == "stand")
              if s is not None]
    if not frames:
        return None, math.nan
    stance = np.concatenate(frames).mean(axis=0)
    return stance, float(np.sqrt(np.mean(np.sum((np.concatenate(frames) - stance) ** 2, axis=-1))))


def _realism(clips, names, parents, styles, leave_one_out: int) -> tuple[measures.PoseDatabase, dict]:
    """The pose database of every frame, and leave-one-clip-out realism of a spread of moving clips."""
    pose_frames, clip_ids, style_ids = [], [], []
    for index, clip in enumerate(clips):
        frames = measures.pose_features(clip.positions, clip.dt, names, parents)
        pose_frames.append(frames)
        clip_ids.append(np.full(len(frames), index))
        style_ids.append(np.full(len(frames), styles.index(clip.style)))
    database = measures.PoseDatabase(np.concatenate(pose_frames), np.concatenate(style_ids))
    clip_of_frame = np.concatenate(clip_ids)
    distances = []
    moving_ids = [i for i, c in enumerate(clips) if c.kind != "stand"]
    scored = [moving_ids[i] for i in spread([(clips[i].style, clips[i].kind) for i in moving_ids], leave_one_out)]
    for index in scored:
        distance, _ = database.nearest(pose_frames[index], mask=clip_of_frame != index)
        distances.append(distance)
    pooled = np.concatenate(distances) if distances else np.zeros(0)
    return database, {"median": float(np.median(pooled)) if len(pooled) else math.nan,
                      "p95": float(np.percentile(pooled, 95)) if len(pooled) else math.nan,
                      "clip_medians": [float(np.median(d)) for d in distances], "clips": len(distances)}
