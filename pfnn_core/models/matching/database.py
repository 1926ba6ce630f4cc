"""The motion-matching database: every stored frame's pose, root motion and features, its file form, and
the mirrored copies made when it is loaded.

A row is a database frame, kept every `frame_step` frames of the 60 Hz simulation rate (2: the bundled
30 fps capture's own frames); the runtime plays between rows. Rows come in segments: a clip (or a
standing clip's arms-down run), contiguous rows of one source and style.

Per row: the root-frame global rotation of every joint (`rotations`, quaternions w, x, y, z; float16
in the file and in memory), the hips' root-frame position, the root's motion to the next row in this
row's root frame (vx, vz m/s, yaw rate rad/s), the four foot contacts, the gait phase and the 27
features (`matching_features`). Per segment (`segments` columns, `SEGMENT_COLUMNS`): first row, rows,
source clip, style, standing, first 60 Hz frame of the clip, mirrored. Per clip, its gait label
(`clip_runs`: true a run or dash clip, false a walk, null unknown; the build's labels, kept in the metadata): a
walk is searched among walking clips only (`search.MatchingIndex`).

The file holds the unmirrored rows; `with_mirrored` appends their left/right mirrors: in the root frame
a mirrored rotation is S Q_pair(j) L_j (S the reflection of x, L_j a per-joint signed axis permutation
measured at build from the skeleton, `mirror_reflections`), positions and velocities have x negated and
left and right swapped, the phase moves half a cycle.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from pfnn_core.math import mat3
from pfnn_core.math.mat3 import njit
from pfnn_core.models.checkpoint import CheckpointError
from pfnn_core.models.matching.features import FEATURE_GROUPS, FEATURE_SIZE, default_weights, mirrored_features

SEGMENT_COLUMNS = ("start", "rows", "clip", "style", "standing", "first_frame", "mirrored")
FUTURE_FRAMES = 60  # 60 Hz frames of future a searchable moving frame has within its clip
# A moving clip too short for that (dataset 1's one-second loops: the 'normal' style's only backward walk)
# keeps the frames with this much of it ahead searchable, their future extrapolated past its end at
# constant velocity and turning (`motion.root.extend_root_path`, as the PFNN's samples are).
SHORT_CLIP_FRAMES = 15
CONTACT_MIRROR = np.array([2, 3, 0, 1])  # (Foot_L, Toes_L, Foot_R, Toes_R) swapped left/right
TENSOR_PREFIX = "matching."
KIND = "matching"
MATCHING_FORMAT = 1


@dataclass(frozen=True)
class MatchingConfig:
    """The database's own facts (metadata key 'matching')."""

    frame_step: int  # 60 Hz frames per database row
    mirrored: bool  # append the rows' left/right mirrors when loading
    clips: tuple[str, ...]  # source file of each clip id
    rows: int  # rows in the file (before mirroring)
    clip_runs: tuple = ()  # per clip: True a run/dash clip, False a walk or stand, None unknown; () none stored

    @staticmethod
    def from_meta(path: Path, values) -> "MatchingConfig":
        if not isinstance(values, dict):
            raise CheckpointError(f"{path}: metadata 'matching' is missing (not a motion-matching database)")
        if values.get("format") != MATCHING_FORMAT:
            raise CheckpointError(f"{path}: matching.format {values.get('format')!r} is not supported "
                                  f"(this program reads {MATCHING_FORMAT})")
        groups = [[g.name, g.size] for g in FEATURE_GROUPS]
        if values.get("feature_groups") != groups:
            raise CheckpointError(f"{path}: matching.feature_groups {values.get('feature_groups')!r} differ from "
                                  f"this program's {groups}")
        step, clips = values.get("frame_step"), values.get("clips")
        if not isinstance(step, int) or not 1 <= step <= 6:
            raise CheckpointError(f"{path}: matching.frame_step must be an integer 1..6, got {step!r}")
        if not isinstance(clips, list) or not all(isinstance(name, str) for name in clips):
            raise CheckpointError(f"{path}: matching.clips must be a list of file names")
        runs = values.get("clip_runs", [])
        if not isinstance(runs, list) or (runs and len(runs) != len(clips)) or not all(r in (True, False, None) for r in runs):
            raise CheckpointError(f"{path}: matching.clip_runs must be a list of true/false/null, one per clip")
        return MatchingConfig(step, bool(values.get("mirrored", True)), tuple(clips), int(values.get("rows") or 0),
                              tuple(runs))

    def gait_of_clips(self) -> np.ndarray | None:
        """[C] int8 per clip id: 1 a run, 0 a walk (or stand), -1 unknown; None without stored labels."""
        if not self.clip_runs:
            return None
        return np.array([-1 if runs is None else int(bool(runs)) for runs in self.clip_runs], np.int8)

    def to_meta(self) -> dict:
        return {"format": MATCHING_FORMAT, "frame_step": self.frame_step, "mirrored": self.mirrored,
                "clips": list(self.clips), "rows": self.rows, "clip_runs": list(self.clip_runs),
                "feature_groups": [[g.name, g.size] for g in FEATURE_GROUPS], "weights": default_weights()}


@dataclass
class MatchingDatabase:
    rotations: np.ndarray  # [N, J, 4] float16, root-frame global rotations
    hips: np.ndarray  # [N, 3] m, the hips in the root frame (float16 as built and in the file)
    root_motion: np.ndarray  # [N, 3] float32: vx, vz (m/s), yaw rate (rad/s) to the next row, this row's frame
    contacts: np.ndarray  # [N, 4] 0 or 1 (uint8 in the file)
    phase: np.ndarray  # [N] in [0, 1) (float16 as built and in the file)
    features: np.ndarray  # [N, 27] raw (unnormalised); float32 when loaded, float16 in the file
    segments: np.ndarray  # [S, 7] int64, `SEGMENT_COLUMNS`
    mirror_pairs: np.ndarray  # [J] int64: each joint's left/right counterpart
    mirror_reflections: np.ndarray  # [J, 3, 3] float32: L_j
    frame_step: int = 2  # 60 Hz frames per row
    clip_gait: np.ndarray | None = None  # [C] int8 per clip id: 1 run, 0 walk, -1 unknown (None: unknown)

    # ---- derived per row ----------------------------------------------------------------------
    def __post_init__(self) -> None:
        self.refresh()

    def refresh(self) -> None:
        """The per-row indices derived from the segments (after building or appending rows)."""
        count = len(self.rotations)
        starts, lengths = self.segments[:, 0], self.segments[:, 1]
        self.segment_of = np.repeat(np.arange(len(self.segments)), lengths) if count else np.zeros(0, np.int64)
        self.segment_end = (starts + lengths - 1)[self.segment_of]  # last row of each row's segment
        self.segment_start = starts[self.segment_of]
        self.row_style = self.segments[self.segment_of, 3]
        self.row_standing = self.segments[self.segment_of, 4].astype(bool)
        left = (self.segment_end - np.arange(count)) * self.frame_step  # 60 Hz frames left in the segment
        short = ((lengths - 1) * self.frame_step < FUTURE_FRAMES)[self.segment_of] if count else np.zeros(0, bool)
        self.candidates = self.row_standing | (left >= FUTURE_FRAMES) | (short & (left >= SHORT_CLIP_FRAMES))
        self.row_gait = np.full(count, -1, np.int8)  # 1 run, 0 walk, -1 unknown
        if self.clip_gait is not None and count:
            clips = self.segments[self.segment_of, 2]
            labelled = (clips >= 0) & (clips < len(self.clip_gait))  # a bad clip id is the loader's error
            self.row_gait[labelled] = np.asarray(self.clip_gait, np.int8)[clips[labelled]]

    @property
    def num_rows(self) -> int:
        return int(len(self.rotations))

    @property
    def num_joints(self) -> int:
        return int(self.rotations.shape[1])

    @property
    def row_dt(self) -> float:
        """s between rows at 60 Hz."""
        return self.frame_step / 60.0

    def next_row(self, rows: np.ndarray) -> np.ndarray:
        """The following row of each row's segment (a segment's last row is its own next)."""
        return np.minimum(rows + 1, self.segment_end[rows])

    def source_frame(self, rows: np.ndarray) -> np.ndarray:
        """The 60 Hz frame of each row within its clip."""
        segment = self.segment_of[rows]
        return self.segments[segment, 5] + (rows - self.segments[segment, 0]) * self.frame_step

    # ---- mirrored copies ------------------------------------------------------------------------
    def with_mirrored(self) -> "MatchingDatabase":
        """This database with every row's left/right mirror appended (segments flagged `mirrored`)."""
        flip = np.array([-1.0, 1.0, 1.0])
        rotations = np.empty_like(self.rotations, dtype=np.float32)
        _mirror_rotations(self.rotations.astype(np.float32), self.mirror_pairs,
                          self.mirror_reflections.astype(np.float64), rotations)
        rotations = rotations.astype(np.float16)
        motion = self.root_motion * np.array([-1.0, 1.0, -1.0], np.float32)
        segments = self.segments.copy()
        segments[:, 0] += self.num_rows
        segments[:, 6] = 1
        return replace(self, rotations=np.concatenate([self.rotations, rotations]),
                       hips=np.concatenate([self.hips, self.hips * flip.astype(self.hips.dtype)]),
                       root_motion=np.concatenate([self.root_motion, motion]),
                       contacts=np.concatenate([self.contacts, self.contacts[:, CONTACT_MIRROR]]),
                       phase=np.concatenate([self.phase, ((self.phase + 0.5) % 1.0).astype(self.phase.dtype)]),
                       features=np.concatenate([self.features, mirrored_features(self.features).astype(self.features.dtype)]),
                       segments=np.concatenate([self.segments, segments]))

    # ---- the file's tensors -----------------------------------------------------------------------
    def to_tensors(self) -> dict[str, torch.Tensor]:
        values = {"rotations": (self.rotations, np.float16), "hips": (self.hips, np.float16),
                  "root_motion": (self.root_motion, np.float32), "contacts": (self.contacts, np.uint8),
                  "phase": (self.phase, np.float16), "features": (self.features, np.float16),
                  "segments": (self.segments, np.int64), "mirror_pairs": (self.mirror_pairs, np.int64),
                  "mirror_reflections": (self.mirror_reflections, np.float32)}
        values = {name: np.ascontiguousarray(value, dtype=dtype) for name, (value, dtype) in values.items()}
        return {TENSOR_PREFIX + name: torch.from_numpy(np.ascontiguousarray(value)) for name, value in values.items()}

    @staticmethod
    def from_tensors(path: Path, tensors: dict, num_joints: int, frame_step: int,
                     clip_gait: np.ndarray | None = None) -> "MatchingDatabase":
        """The database of a checkpoint's tensors; CheckpointError naming the file and the tensor for a
        missing one, a wrong shape, a non-finite value or segments that do not tile the rows."""
        def tensor(name, shape):
            key = TENSOR_PREFIX + name
            if key not in tensors:
                raise CheckpointError(f"{path}: tensor {key!r} is missing")
            value = tensors[key].numpy()
            if value.ndim != len(shape) or any(want is not None and have != want for have, want in zip(value.shape, shape)):
                wanted = tuple("N" if want is None else want for want in shape)
                raise CheckpointError(f"{path}: tensor {key!r} has shape {tuple(value.shape)}, expected {wanted}")
            if value.dtype.kind == "f" and not np.isfinite(value).all():
                raise CheckpointError(f"{path}: tensor {key!r} contains NaN or infinite values")
            return value

        rotations = tensor("rotations", (None, num_joints, 4))
        count = len(rotations)
        database = MatchingDatabase(
            rotations=np.asarray(rotations, np.float16), hips=np.asarray(tensor("hips", (count, 3)), np.float16),
            root_motion=np.asarray(tensor("root_motion", (count, 3)), np.float32),
            contacts=tensor("contacts", (count, 4)).astype(np.float32),
            phase=np.asarray(tensor("phase", (count,)), np.float16),
            features=tensor("features", (count, FEATURE_SIZE)).astype(np.float32),
            segments=_checked_segments(path, tensor("segments", (None, len(SEGMENT_COLUMNS))).astype(np.int64), count),
            mirror_pairs=tensor("mirror_pairs", (num_joints,)).astype(np.int64),
            mirror_reflections=tensor("mirror_reflections", (num_joints, 3, 3)).astype(np.float32),
            frame_step=int(frame_step), clip_gait=clip_gait)
        pairs = database.mirror_pairs
        if (pairs < 0).any() or (pairs >= num_joints).any() or (pairs[pairs] != np.arange(num_joints)).any():
            raise CheckpointError(f"{path}: tensor 'matching.mirror_pairs' is not a left/right pairing of the joints")
        return database


@njit
def _mirror_rotations(rotations, pairs, reflections, out):
    """out[n, j] = S R(rotations[n, pairs[j]]) L_j as quaternions (S: x reflected; rows normalised)."""
    for n in range(rotations.shape[0]):
        for j in range(rotations.shape[1]):
            q = rotations[n, pairs[j]]
            norm = np.sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3])
            m = mat3.matrix_from_quat(q[0] / norm, q[1] / norm, q[2] / norm, q[3] / norm)
            m = (-m[0], -m[1], -m[2], m[3], m[4], m[5], m[6], m[7], m[8])  # S: the x row negated
            mirrored = mat3.quat_from_matrix(mat3.mat_mul(m, mat3.load33(reflections, j)))
            for k in range(4):
                out[n, j, k] = mirrored[k]


def _checked_segments(path: Path, segments: np.ndarray, count: int) -> np.ndarray:
    if len(segments) == 0 or count == 0:
        raise CheckpointError(f"{path}: the matching database is empty (tensor 'matching.segments' has no rows)")
    starts, lengths = segments[:, 0], segments[:, 1]
    expected = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    if (lengths < 1).any() or (starts != expected).any() or int(lengths.sum()) != count:
        raise CheckpointError(f"{path}: tensor 'matching.segments' does not cover the {count} rows in order")
    return segments
