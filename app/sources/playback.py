"""BVH playback source: play and scrub a motion on its own skeleton, with the contacts and phase that
`pfnn_core.contacts` / `pfnn_core.phase` compute for it, shown through the same `SceneFrame` overlays.

`PlaybackClip` holds the precomputed arrays of one file (pure data); `PlaybackSource` owns the play
head. Time is in seconds; frames between file frames are interpolated.
"""

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from app.render.scene import SceneFrame, lerp_phase
from pfnn_core.motion.gait_labels import gait_labels

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
    joint_rot: np.ndarray | None = None  # [F, J, 4] world rotations, consecutive frames in one hemisphere
    offsets: np.ndarray | None = None  # [J, 3] bone offsets (metres)

    @property
    def duration(self) -> float:
        return (len(self.joint_pos) - 1) * self.frame_time


def load_clip(path) -> PlaybackClip:
    """Load a BVH file into a clip, labelled by the same code as the training data (root frames,
    contacts, phase). Raises ValueError (bvh.BVHError) or OSError on a bad file."""
    from pfnn_core.math.quat import quat_unroll
    from pfnn_core.motion import bvh

    motion = bvh.load(str(path))
    if motion.num_frames < 1:
        raise ValueError(f"{path}: no frames")
    try:
        labels = gait_labels(motion)
    except ValueError:
        # A skeleton without recognisable feet plays without contacts and phase, rooted at its root joint.
        joint_pos = motion.global_positions()
        root_pos = joint_pos[:, 0] * np.array([1.0, 0.0, 1.0])
        root_dir = np.tile([0.0, 0.0, 1.0], (motion.num_frames, 1))
        return PlaybackClip(Path(path).name, tuple(motion.names), np.asarray(motion.parents),
                            float(motion.frame_time), joint_pos, root_pos, root_dir, None, None,
                            np.zeros(motion.num_frames), quat_unroll(motion.global_rotations()),
                            np.asarray(motion.offsets, np.float64))
    frames = motion.num_frames
    root_pos = np.zeros((frames, 3))
    root_pos[:, [0, 2]] = labels.root_xz
    root_dir = np.stack([np.sin(labels.root_yaw), np.zeros(frames), np.cos(labels.root_yaw)], axis=-1)
    return PlaybackClip(Path(path).name, tuple(motion.names), np.asarray(motion.parents), float(motion.frame_time),
                        np.asarray(labels.global_positions, np.float64), root_pos, root_dir,
                        np.asarray(labels.contact_joints), labels.contacts.astype(np.float64),
                        np.asarray(labels.phase, np.float64) % 1.0, quat_unroll(labels.global_rotations),
                        np.asarray(motion.offsets, np.float64))


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
    joint_rot = None
    if clip.joint_rot is not None:
        joint_rot = _sample(clip.joint_rot, frame)
        joint_rot = joint_rot / np.linalg.norm(joint_rot, axis=-1, keepdims=True)
    return SceneFrame(
        joint_pos=_sample(clip.joint_pos, frame), parents=clip.parents, root_pos=_sample(clip.root_pos, frame),
        root_dir=direction, phase=lerp_phase(phase_a, phase_b, frame - np.floor(frame)), names=clip.names,
        joint_rot=joint_rot, offsets=clip.offsets, contact_joints=clip.contact_joints, contacts=contacts,
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

    @property
    def gait(self) -> str:
        return "playback"

    def step(self, command, dt: float) -> None:
        if not self.playing:
            return
        self.time += dt * self.speed
        if self.time > self.clip.duration:
            self.time = self.time % max(self.clip.duration, 1e-6) if self.loop else self.clip.duration

    def seek(self, time: float) -> None:
        self.time = float(np.clip(time, 0.0, self.clip.duration))

    def reset(self, yaw: float = 0.0) -> None:
        """Back to the clip's start (a clip keeps its own facing: `yaw` is for the live sources)."""
        self.time = 0.0

    def snapshot(self) -> float:
        return self.time

    def restore(self, snapshot: float) -> None:
        self.time = snapshot

    def frames(self) -> list[SceneFrame]:
        return [clip_frame(self.clip, self.time)]
