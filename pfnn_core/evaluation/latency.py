"""Response latency, measured counterfactually (docs/EVALUATION.md).

Owns `InputChange` (one change of the input in a drive: start, stop, turn, direction, gait, speed or
style), `input_changes` (the changes between a drive's segments), `probe_changes` (changes the suite's
drives do not make, tried as branches: walk to run, one style to another), `pose_difference` and
`response_delay` (the time until two runs from the same state, one with the change and one with the
input held, differ by more than POSE_THRESHOLD at some joint), `body_poses` (the same poses in the
character's own frame) and `time_to_90` (the time to 90% of the commanded speed or heading).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pfnn_core.evaluation import metrics
from pfnn_core.motion.root import body_frames, to_body_frame

POSE_THRESHOLD = 0.02     # m: any joint this far from where it would have been is a visible change
WINDOW_S = 1.0            # s each counterfactual runs after its change
TURN_ANGLE = math.radians(20.0)   # a change of the commanded facing or direction larger than this
SPEED_CHANGE = 0.05       # of the stick: a smaller change of its length is no change
RESPONSE_FRACTION = 0.9
BEFORE_S = 0.5            # the speed and heading before a change: their mean over this long
KINDS = ("start", "stop", "turn", "direction", "gait", "speed", "style")
SPEED_KINDS = ("start", "stop", "gait", "speed")   # 90% of the commanded speed; turns: of the heading


@dataclass(frozen=True)
class InputChange:
    """One change of the input. `held` is the input before it, `changed` after it (segments in the
    drive-script format); `probe`: a change the drive does not make, run as a branch from the state at
    `time` (the drive itself goes on with `held`)."""

    kind: str
    time: float       # s into the drive: the first tick that reads the changed input
    held: dict
    changed: dict
    window: float     # s the two runs are compared over
    probe: bool = False

    @property
    def label(self) -> str:
        return f"{self.kind} at {self.time:.1f} s" + (" (probe)" if self.probe else "")


def _move(segment) -> np.ndarray:
    return np.asarray(segment["move"], float)


def _facing(segment) -> np.ndarray | None:
    """Where the character is asked to face: the kept facing, else the direction of the stick (none
    while standing)."""
    if segment.get("face") is not None:
        return np.asarray(segment["face"], float)
    move = _move(segment)
    return move if np.linalg.norm(move) > 0 else None


def _angle(a, b) -> float:
    return abs(math.atan2(a[0] * b[1] - a[1] * b[0], float(np.dot(a, b))))


def change_kind(held, changed) -> str | None:
    """What kind of change goes from segment `held` to `changed`: start (the stick pushed from rest),
    stop (released), turn (the facing asked turns by more than TURN_ANGLE), direction (the stick turns
    while a kept facing stays: a strafe reversed), gait (walk <-> run), speed (the stick's length),
    style; None when nothing the character reads changes."""
    before, after = float(np.linalg.norm(_move(held))), float(np.linalg.norm(_move(changed)))
    if before == 0.0 and after > 0.0:
        return "start"
    if before > 0.0 and after == 0.0:
        return "stop"
    if before > 0.0:
        face_before, face_after = _facing(held), _facing(changed)
        if _angle(face_before, face_after) > TURN_ANGLE:
            return "turn"
        if _angle(_move(held), _move(changed)) > TURN_ANGLE:
            return "direction"
        if bool(held.get("run")) != bool(changed.get("run")):
            return "gait"
        if abs(after - before) > SPEED_CHANGE:
            return "speed"
    if held.get("style") != changed.get("style") and changed.get("style") is not None:
        return "style"
    return None


def input_changes(drive, window: float = WINDOW_S) -> list[InputChange]:
    """The changes between consecutive segments of a drive (`suite.ScriptedDrive`), each compared over
    `window` or until the next segment starts, whichever is sooner."""
    starts = drive.segment_starts()
    changes = []
    for index in range(1, len(drive.segments)):
        held, changed = drive.segments[index - 1], drive.segments[index]
        kind = change_kind(held, changed)
        if kind is not None:
            changes.append(InputChange(kind, float(starts[index]), dict(held), dict(changed),
                                       float(min(window, starts[index + 1] - starts[index]))))
    return changes


def probe_changes(drive, styles=(), window: float = WINDOW_S, lead: float = 0.5) -> list[InputChange]:
    """Changes tried on a drive's last segment, `window` before its end (at least `lead` into it): a
    free full-stick walk also tries running; a style walk also tries the next of `styles` (the
    model's style names)."""
    segments = drive.segments
    last = dict(segments[-1])
    start, end = drive.segment_starts()[-2:]
    time = float(end - window)
    if time < start + lead or np.linalg.norm(_move(last)) < 1.0 - 1e-3 or last.get("face") is not None:
        return []
    probes = []
    if not last.get("run") and drive.style is None:
        probes.append(InputChange("gait", time, last, {**last, "run": True}, window, probe=True))
    if drive.style is not None and drive.style in styles and len(styles) > 1:
        other = list(styles)[(list(styles).index(drive.style) + 1) % len(styles)]
        probes.append(InputChange("style", time, last, {**last, "style": other}, window, probe=True))
    return probes


def pose_difference(a, b) -> np.ndarray:
    """[T] m: the largest distance of a joint between poses a and b [T, J, 3]."""
    return np.linalg.norm(np.asarray(a, float) - np.asarray(b, float), axis=-1).max(axis=-1)


def response_delay(changed, held, dt: float, threshold: float = POSE_THRESHOLD) -> float:
    """Seconds from the change until the runs differ by more than `threshold` at some joint. Frame 0 of
    both [T, J, 3] is the pose of the first tick that read the changed input; that tick counts, so a
    pose that differs in it scores dt (the tick that reads the input is the earliest the screen can
    show it). Inf when they never differ that much within the frames given."""
    above = np.flatnonzero(pose_difference(changed, held) > threshold)
    return float((above[0] + 1) * dt) if len(above) else math.inf


def body_poses(positions, names, parents, joints=None) -> np.ndarray:
    """World joint positions [T, J, 3] in the character's own unsmoothed frame (`motion.root.body_frames`):
    the pose without the root's travel and turn. `joints`: the indices `positions` holds when it is not
    the whole skeleton (the frame comes from the hips and shoulders, which must be among them)."""
    if joints is not None:
        full = np.zeros(positions.shape[:1] + (len(names), 3))
        full[:, joints] = positions
        positions = full
    origin, yaw = body_frames(positions, names, parents)
    local = to_body_frame(positions, origin, yaw)
    return local if joints is None else local[:, joints]


def time_to_90(change: InputChange, t, root_xz, command_xz, dt: float) -> float:
    """Seconds from the change until the root's motion covers RESPONSE_FRACTION of the change asked:
    of the speed for a start, stop, gait or speed change; of the heading of its velocity for a turn; of
    its velocity along the new stick for a reversed strafe; NaN for a style change (nothing to reach).
    t [T] s, root_xz [T, 2] m, command_xz [T, 2] m/s the commanded velocity, with frames before the change."""
    t = np.asarray(t, float)
    velocity = metrics.velocity_from_positions(np.asarray(root_xz, float), dt)
    before = (t >= change.time - BEFORE_S - 1e-9) & (t < change.time - 1e-9)
    index = min(int(np.searchsorted(t, change.time - 1e-9)), len(t) - 1)
    target = np.asarray(command_xz, float)[index]
    if change.kind in SPEED_KINDS:
        speed = np.linalg.norm(velocity, axis=-1)
        start = float(speed[before].mean()) if before.any() else None
        return metrics.response_time(t, speed, float(np.linalg.norm(target)), change.time, RESPONSE_FRACTION, start)
    if change.kind == "turn":
        heading = metrics.heading_of(velocity)
        start = float(metrics.circular_mean(heading[before])) if before.any() else None
        return metrics.heading_response_time(t, heading, float(metrics.heading_of(target)), change.time,
                                             RESPONSE_FRACTION, start)
    if change.kind == "direction":
        along = velocity @ (target / max(float(np.linalg.norm(target)), 1e-9))
        start = float(along[before].mean()) if before.any() else None
        return metrics.response_time(t, along, float(np.linalg.norm(target)), change.time, RESPONSE_FRACTION, start)
    return math.nan
