"""The drive suite and running it: `ScriptedDrive`, `drive_suite`, `SUBJECTS`, `run_subject`, `DriveRecord`.

Each drive is a `pfnn-drive` script plus what it is built to test. Every drive runs twice: as the
"runtime" subject (everything as shipped, default settings) and as the "network" subject (the bare
network: `RuntimeSettings.bare_network`). The built-in drives are the REPORTED set: nothing is tuned on
them; the drives under `scripts/drives/tuning/` are the ones to tune settings on.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pfnn_core import files
from pfnn_core.evaluation import metrics
from pfnn_core.runtime.settings import RuntimeSettings

SUBJECTS = ("network", "runtime")
LOG_COLUMNS = ("t", "cmd_vx", "cmd_vz", "cmd_face_x", "cmd_face_z", "root_x", "root_z", "root_yaw", "phase",
               "contact_left", "contact_right", "tick_ms", "infer_ms")
STYLE_WALK_STYLES = 7  # the style drives cover the styles with the most data (dataset 2's seven)


@dataclass(frozen=True)
class ScriptedDrive:
    """One scripted input in the `pfnn-drive` script format, plus what it tests."""

    name: str
    segments: tuple  # of dicts: {"duration", "move", "run", optional "face", optional "style"}
    description: str
    style: str | None = None  # the drive's style, for the style drives
    from_script: bool = False  # a script of the user's (`pfnn-eval --scripts`): every start is measured

    def script(self) -> dict:
        return {"name": self.name, "segments": [dict(segment) for segment in self.segments]}

    def segment_starts(self) -> np.ndarray:
        durations = np.array([segment["duration"] for segment in self.segments], dtype=float)
        return np.concatenate([[0.0], np.cumsum(durations)])

    @property
    def duration(self) -> float:
        return float(self.segment_starts()[-1])

    def starts(self) -> list[int]:
        """Indices of the segments that move after standing (the stick pushed from rest)."""
        return [i for i in range(1, len(self.segments))
                if _speed(self.segments[i]) > 0.0 and _speed(self.segments[i - 1]) == 0.0]

    def stops(self) -> list[int]:
        """Indices of the segments that stand after moving (a stick release)."""
        return [i for i in range(1, len(self.segments))
                if _speed(self.segments[i]) == 0.0 and _speed(self.segments[i - 1]) > 0.0]


def _speed(segment) -> float:
    return float(np.hypot(*segment["move"]))


def segment_kind(segment) -> str:
    """What the mocap calls this motion: stand, walk, run, back (walking backwards) or side (side-steps)."""
    move = np.asarray(segment["move"], float)
    if np.linalg.norm(move) == 0.0:
        return "stand"
    if segment.get("run"):
        return "run"
    face = segment.get("face")
    if face is not None:
        cosine = float(np.dot(move, face) / (np.linalg.norm(move) * np.linalg.norm(face)))
        if cosine < -0.7:
            return "back"
        if cosine < 0.7:
            return "side"
    return "walk"


def _segment(duration, move, run=False, face=None, style=None) -> dict:
    segment = {"duration": float(duration), "move": [float(move[0]), float(move[1])], "run": bool(run)}
    if face is not None:
        segment["face"] = [float(face[0]), float(face[1])]
    if style is not None:
        segment["style"] = style
    return segment


def drive_suite(quick: bool = False, styles=()) -> list[ScriptedDrive]:
    """The built-in drives; `quick` shortens them (tests, smoke runs); `styles` (a model's style names,
    most data first) adds a steady walk per style."""
    q = (lambda full, fast: fast) if quick else (lambda full, fast: full)
    stand, forward, right, left, back = (0, 0), (0, 1), (1, 0), (-1, 0), (0, -1)
    diagonal = (0.7071, 0.7071)
    mixed = [_segment(5, forward), _segment(4, right), _segment(5, (-0.7, 0.7), run=True), _segment(3, stand),
             _segment(5, back, face=forward), _segment(4, left), _segment(4, (0, 0.5)),
             _segment(5, forward, run=True), _segment(5, forward), _segment(3, stand),
             _segment(6, (0.7, -0.7)), _segment(5, right, face=back), _segment(6, stand)]  # 60 s
    drives = [
        ScriptedDrive("idle", (_segment(q(12, 3), stand),), "zero command: drift, still feet, standing stance"),
        ScriptedDrive("walk_start", (_segment(q(2, 0.5), stand), _segment(q(6, 2), (0.7071, 0.7071))),
                      "walk from standing, 45 degrees to the right of the facing: response and steady walking"),
        ScriptedDrive("walk_turn", (_segment(q(5, 1.5), forward), _segment(q(6, 2), right)),
                      "walk along +Z, then a 90-degree turn to +X"),
        ScriptedDrive("run", (_segment(q(2, 0.5), stand), _segment(q(8, 2), forward, run=True)),
                      "run forward from standing"),
        ScriptedDrive("run_walk_stop", (_segment(q(4, 1.5), forward, run=True), _segment(q(4, 2), forward),
                                        _segment(q(4, 2), stand)),
                      "run, slow to a walk, stop: planted feet through the change, settling after the stop"),
        ScriptedDrive("stop_and_go", (_segment(q(3, 1.5), forward), _segment(q(3, 2), stand),
                                      _segment(q(3, 1.5), forward), _segment(q(3, 2), stand)),
                      "walk, stop, walk, stop"),
        ScriptedDrive("side_steps", (_segment(q(1, 0.5), stand), _segment(q(4, 2), (0.7071, -0.7071), face=diagonal),
                                     _segment(q(4, 2), (-0.7071, 0.7071), face=diagonal), _segment(q(2, 1.5), stand)),
                      "side-steps right then left, facing 45 degrees right of the start, then stop"),
        ScriptedDrive("backpedal", (_segment(q(1, 0.5), stand), _segment(q(5, 2), (0.7071, -0.7071), face=(-0.7071, 0.7071)),
                                    _segment(q(2, 1.5), stand)),
                      "walk backwards facing 45 degrees left of the start, then stop"),
        ScriptedDrive("slow_walk", (_segment(q(6, 2), (-0.3536, 0.3536)), _segment(q(4, 1.5), (0.3, 0.0))),
                      "a half-stick walk 45 degrees to the left, then a 0.3-stick walk to the right"),
    ]
    if not quick:
        drives.append(ScriptedDrive("long_mixed", tuple(mixed), "60 s of everything: stability"))
    for style in list(styles)[:STYLE_WALK_STYLES]:
        drives.append(ScriptedDrive(f"style_{style}", (_segment(q(1, 0.5), stand, style=style),
                                                       _segment(q(6, 2.5), forward, style=style)),
                                    f"a steady walk in the style '{style}'", style=style))
    return drives


@dataclass
class DriveRecord:
    """What one drive produced for one subject: log columns [T] and the displayed pose of every tick."""

    drive: ScriptedDrive
    subject: str
    log: dict
    positions: np.ndarray          # [T, J, 3] displayed world joint positions (m)
    rotations: np.ndarray          # [T, J, 4] global rotations
    contacts: np.ndarray           # [T, 4] the network's contact outputs
    dt: float
    files: dict = field(default_factory=dict)

    @property
    def t(self) -> np.ndarray:
        return self.log["t"]

    @property
    def root_xz(self) -> np.ndarray:
        return np.stack([self.log["root_x"], self.log["root_z"]], axis=-1)

    @property
    def command_xz(self) -> np.ndarray:
        return np.stack([self.log["cmd_vx"], self.log["cmd_vz"]], axis=-1)

    @property
    def root_velocity(self) -> np.ndarray:
        return metrics.velocity_from_positions(self.root_xz, self.dt)

    def window(self, start: float, end: float) -> np.ndarray:
        return (self.t >= start - 1e-9) & (self.t < end - 1e-9)

    def segment_index(self) -> np.ndarray:
        """[T] the segment each tick belongs to."""
        starts = self.drive.segment_starts()
        return np.clip(np.searchsorted(starts, self.t + 1e-9, side="right") - 1, 0, len(self.drive.segments) - 1)

    def kinds(self) -> np.ndarray:
        """[T] the kind of motion commanded at each tick (`segment_kind`)."""
        kinds = np.array([segment_kind(s) for s in self.drive.segments])
        return kinds[self.segment_index()]


def subject_settings(subject: str, card) -> RuntimeSettings:
    if subject == "network":
        return RuntimeSettings.bare_network(card)
    if subject == "runtime":
        return RuntimeSettings.for_model(card)
    raise ValueError(f"unknown subject {subject!r} (expected one of {SUBJECTS})")


def run_subject(drive: ScriptedDrive, subject: str, checkpoint, out_dir: Path | None) -> DriveRecord:
    """Run one drive as one subject with `pfnn_core.drive`; writes script.json, motion.bvh and log.csv
    into out_dir/SUBJECT/ when given (`pfnn-drive --script` replays the script)."""
    from pfnn_core.drive import cli as drive_module

    settings = subject_settings(subject, checkpoint.card)
    folder = None
    if out_dir is not None:
        folder = Path(out_dir) / subject
        folder.mkdir(parents=True, exist_ok=True)
        files.write_text(folder / "script.json", json.dumps(drive.script(), indent=1))
    result = drive_module.run_drive(drive_module.parse_script(drive.script()), checkpoint, folder, settings=settings)
    log = {name: np.asarray(result.log[name], dtype=np.float64) for name in LOG_COLUMNS}
    return DriveRecord(drive=drive, subject=subject, log=log,
                       positions=np.asarray(result.joint_positions, dtype=np.float64),
                       rotations=result.motion.global_rotations(),
                       contacts=np.asarray(result.joint_contacts, dtype=np.float64), dt=float(result.dt),
                       files=dict(result.files))
