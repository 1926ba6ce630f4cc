"""BVH playback source: play and scrub a motion on its own skeleton, with the contacts and phase that
`pfnn_core.contacts` / `pfnn_core.phase` compute for it, shown through the same `SceneFrame` overlays.

`PlaybackClip` holds the precomputed arrays of one file (pure data); `PlaybackSource` owns the play
head. Time is in seconds; frames between file frames are interpolated.
"""

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from app.scene import SceneFrame, lerp_phase

PAST_SECONDS = 1.0
FUTURE_OFFSETS_S = np.arange(1, 7) * 10 / 60.0  # +10..+60 sim frames, as the runtime's trajectory


@dataclass
class PlaybackClip:
    name: str
    names: tuple
    parents: np.ndarray  # [J]
    frame_time: float
    joint_pos: np.ndarray  # [F, J, 3] world metres
    root_pos: np.ndarray  # [F, 3] hips on the ground
    root_dir: np.ndarray  # [F, 3] unit facing on the ground
    contact_joints: np.ndarray | None  # [4] Foot_L, Toes_L, Foot_R, Toes_R
    contacts: np.ndarray | None  # [F, 4] 0/1
    phase: np.ndarray  # [F] in [0, 1)

    @property
    def duration(self) -> float:
        return (len(self.joint_pos) - 1) * self.frame_time


def _side(name: str) -> int:
    lowered = name.lower()
    if lowered.endswith(("_l", ".l")) or "left" in lowered or lowered.startswith("l_"):
        return 1
    if lowered.endswith(("_r", ".r")) or "right" in lowered or lowered.startswith("r_"):
        return -1
    return 0


def hips_index(names, parents) -> int:
    """The hips: a joint named hips/pelvis, else the first joint with more than one child."""
    for index, name in enumerate(names):
        if any(key in name.lower() for key in ("hips", "pelvis")):
            return index
    parents = np.asarray(parents)
    return next((j for j in range(len(parents)) if np.sum(parents == j) > 1), 0)


def facing_directions(joint_pos: np.ndarray, names, smooth_frames: int = 5) -> np.ndarray:
    """[F, 3] facing on the ground: the normal of the left-minus-right line through the top joints of
    the legs and arms (the average of the hip-line and shoulder-line normals), smoothed over time."""
    left = [j for j, n in enumerate(names) if _side(n) > 0]
    right = [j for j, n in enumerate(names) if _side(n) < 0]
    if not left or not right:
        return np.tile(np.array([0.0, 0.0, 1.0]), (len(joint_pos), 1))
    # the two joints nearest the root on each side (upper leg, shoulder) carry the body's orientation
    across = joint_pos[:, left[:2]].mean(axis=1) - joint_pos[:, right[:2]].mean(axis=1)
    facing = np.cross(across, np.array([0.0, 1.0, 0.0]))
    facing[:, 1] = 0.0
    if smooth_frames > 1 and len(facing) > smooth_frames:
        kernel = np.ones(smooth_frames) / smooth_frames
        padded = np.pad(facing, ((smooth_frames // 2, smooth_frames - 1 - smooth_frames // 2), (0, 0)), mode="edge")
        facing = np.stack([np.convolve(padded[:, k], kernel, mode="valid") for k in range(3)], axis=-1)
    return facing / np.maximum(np.linalg.norm(facing, axis=-1, keepdims=True), 1e-9)


def clip_from_positions(name: str, names, parents, frame_time: float, joint_pos: np.ndarray) -> PlaybackClip:
    """Precompute root path, facing, contacts and phase of a motion given as world joint positions."""
    from pfnn_core import contacts as contacts_module
    from pfnn_core import phase as phase_module

    joint_pos = np.asarray(joint_pos, np.float64)
    hips = hips_index(names, parents)
    root_pos = joint_pos[:, hips] * np.array([1.0, 0.0, 1.0])
    contact_joints, contact_labels = None, None
    phase = np.zeros(len(joint_pos))
    try:
        feet = contacts_module.foot_joints(list(names), parents)
        contact_joints = np.array(contacts_module.contact_joint_order(feet))
        labels = contacts_module.foot_contacts(joint_pos[:, contact_joints], frame_time)
        contact_labels = labels.astype(np.float64)
        phase = phase_module.phase_from_contacts(labels[:, 2] | labels[:, 3], labels[:, 0] | labels[:, 1])
    except ValueError:
        pass  # a skeleton without recognisable feet plays without contacts and phase
    return PlaybackClip(name, tuple(names), np.asarray(parents), float(frame_time), joint_pos, root_pos,
                        facing_directions(joint_pos, names), contact_joints, contact_labels,
                        np.asarray(phase, np.float64) % 1.0)


def load_clip(path) -> PlaybackClip:
    """Load a BVH file into a clip. Raises ValueError (bvh.BVHError) or OSError on a bad file."""
    from pfnn_core import bvh

    motion = bvh.load(str(path))
    positions = np.asarray(motion.global_positions(), np.float64)
    if positions.ndim != 3 or len(positions) < 1:
        raise ValueError(f"{path}: no frames")
    return clip_from_positions(Path(path).name, list(motion.names), np.asarray(motion.parents),
                               float(motion.frame_time), positions)


def _sample(values: np.ndarray, frame: float):
    """Linear interpolation of per-frame values at a fractional frame (clamped to the clip)."""
    frame = float(np.clip(frame, 0, len(values) - 1))
    low = int(np.floor(frame))
    high = min(low + 1, len(values) - 1)
    t = frame - low
    return values[low] * (1 - t) + values[high] * t


def clip_frame(clip: PlaybackClip, time: float) -> SceneFrame:
    """The scene at `time` seconds: pose, root, contacts, phase, and 1 s of past / 1 s of future path."""
    frame = time / clip.frame_time
    direction = _sample(clip.root_dir, frame)
    direction /= max(np.linalg.norm(direction), 1e-9)
    phase_a = clip.phase[int(np.clip(np.floor(frame), 0, len(clip.phase) - 1))]
    phase_b = clip.phase[int(np.clip(np.floor(frame) + 1, 0, len(clip.phase) - 1))]
    past_times = np.linspace(time - PAST_SECONDS, time, 61)
    past = np.array([_sample(clip.root_pos, t / clip.frame_time) for t in past_times])
    past_dir = np.array([_sample(clip.root_dir, t / clip.frame_time) for t in past_times])
    future_times = time + FUTURE_OFFSETS_S
    future = np.array([_sample(clip.root_pos, t / clip.frame_time) for t in future_times])
    future_dir = np.array([_sample(clip.root_dir, t / clip.frame_time) for t in future_times])
    contacts = None if clip.contacts is None else _sample(clip.contacts, frame)
    return SceneFrame(
        joint_pos=_sample(clip.joint_pos, frame), parents=clip.parents, root_pos=_sample(clip.root_pos, frame),
        root_dir=direction, phase=lerp_phase(phase_a, phase_b, frame - np.floor(frame)), names=clip.names,
        contact_joints=clip.contact_joints, contacts=contacts,
        traj_past_pos=past, traj_past_dir=past_dir, traj_future_pos=future, traj_future_dir=future_dir)


@dataclass
class PlaybackSource:
    """Play head over a clip: play/pause, speed, loop, scrub. Ignores movement commands."""
    clip: PlaybackClip
    time: float = 0.0
    playing: bool = True
    speed: float = 1.0
    loop: bool = True
    timings: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"Playback: {self.clip.name}"

    def step(self, command, dt: float) -> None:
        if not self.playing:
            return
        self.time += dt * self.speed
        if self.time > self.clip.duration:
            self.time = self.time % max(self.clip.duration, 1e-6) if self.loop else self.clip.duration

    def seek(self, time: float) -> None:
        self.time = float(np.clip(time, 0.0, self.clip.duration))

    def reset(self) -> None:
        self.time = 0.0

    def frames(self) -> list[SceneFrame]:
        return [clip_frame(self.clip, self.time)]
