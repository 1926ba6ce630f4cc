"""`pfnn-eval`: run a built-in suite of scripted drives, measure motion quality, write a report.

Owns the suite (idle, walk from standing, walk then a 90-degree turn, run, run to walk, strafe,
half-stick walk, a long mixed drive), the analysis of each drive with `pfnn_core.metrics`, the mocap
reference (the same measures on the bundled clips resampled to the simulation rate), the phase
consistency check (the network rolled out on held-out clips with the mocap's trajectory and its own
pose fed back), `DIR/report.md` (measure, value, mocap reference, target, pass/fail against the
targets of the runtime issue) and PNG plots per drive.

    pfnn-eval [--model M] --out DIR [--quick]

`evaluate(checkpoint_path, out_dir, quick=False) -> dict` does the same for code and tests.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pfnn_core import bvh, metrics
from pfnn_core.settings import RuntimeSettings

ROOT_DIR = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = ROOT_DIR / "assets" / "models" / "default.safetensors"
DEFAULT_BVH_DIR = ROOT_DIR / "assets" / "bvh"
SIM_DT = 1.0 / 60.0
LOG_COLUMNS = ("t", "cmd_vx", "cmd_vz", "cmd_face_x", "cmd_face_z", "root_x", "root_z", "root_yaw", "phase",
               "contact_left", "contact_right", "tick_ms", "infer_ms")

# Targets of the runtime issue (shipped default model, default settings, foot locking on).
MAX_PENETRATION = 0.03          # m below the floor
MAX_IDLE_EXCURSION = 0.03       # m over 10 s after 1 s of zero command
MAX_IDLE_YAW = math.radians(2.0)
IDLE_SETTLE_S = 1.0
IDLE_WINDOW_S = 10.0
MAX_SPEED_ERROR = 0.10          # fraction of the commanded speed
MAX_HEADING_ERROR = math.radians(5.0)
MAX_START_RESPONSE_S = 0.8      # standing -> 90% of walking speed
# "Settles without overshoot loops": our reading is a swing past the target of at most this much.
MAX_TURN_OVERSHOOT = math.radians(15.0)
MAX_JERK_RATIO = 1.5            # against the mocap's own
MIN_PHASE_CONSISTENCY = 0.9     # DESIGN.md section 6
STEADY_TAIL_S = 3.0             # the last seconds of a segment count as its steady part (at most half of it)
# Speed and heading before a command change: their mean over this long before it (about one stride, so
# the speed's swing within a running stride does not set the start value).
BEFORE_CHANGE_S = 0.5


# ----------------------------------------------------------------------------------------------
# The suite


@dataclass(frozen=True)
class ScriptedDrive:
    """One scripted input in the `pfnn-drive` script format, plus what to measure on it."""

    name: str
    segments: tuple  # of dicts: {"duration", "move", "run", optional "face"}
    description: str

    def script(self) -> dict:
        return {"name": self.name, "segments": [dict(segment) for segment in self.segments]}

    def segment_starts(self) -> np.ndarray:
        durations = np.array([segment["duration"] for segment in self.segments], dtype=float)
        return np.concatenate([[0.0], np.cumsum(durations)])


def _segment(duration, move, run=False, face=None) -> dict:
    segment = {"duration": float(duration), "move": [float(move[0]), float(move[1])], "run": bool(run)}
    if face is not None:
        segment["face"] = [float(face[0]), float(face[1])]
    return segment


def drive_suite(quick: bool = False) -> list[ScriptedDrive]:
    """The built-in drives; `quick` shortens every segment (for tests and smoke runs)."""
    short = (lambda full, fast: fast) if quick else (lambda full, fast: full)
    stand, forward, right = (0, 0), (0, 1), (1, 0)
    mixed_pattern = [_segment(5, forward), _segment(4, right), _segment(5, (-0.7, 0.7), run=True),
                     _segment(3, stand), _segment(5, (0, -1), face=(0, 1)), _segment(4, (-1, 0)),
                     _segment(4, (0, 0.5)), _segment(5, forward, run=True), _segment(5, forward),
                     _segment(3, stand), _segment(6, (0.7, -0.7)), _segment(5, (1, 0), face=(0, -1)),
                     _segment(6, stand)]  # 60 s
    mixed = tuple(mixed_pattern) if not quick else tuple(_segment(0.5, s["move"], s["run"], s.get("face"))
                                                         for s in mixed_pattern[:6])
    return [
        ScriptedDrive("idle", (_segment(short(IDLE_SETTLE_S + IDLE_WINDOW_S + 1.0, 2.5), stand),),
                      "zero command: root drift and still feet"),
        ScriptedDrive("walk_start", (_segment(short(2, 0.5), stand), _segment(short(6, 1.5), forward)),
                      "walk forward from standing: response time and steady walking"),
        ScriptedDrive("walk_turn", (_segment(short(5, 1.5), forward), _segment(short(6, 1.5), right)),
                      "walk along +Z, then a 90-degree turn to +X"),
        ScriptedDrive("run", (_segment(short(2, 0.5), stand), _segment(short(8, 1.5), forward, run=True)),
                      "run forward from standing"),
        ScriptedDrive("run_to_walk", (_segment(short(5, 1.5), forward, run=True), _segment(short(6, 1.5), forward)),
                      "run, then walk: slowing down"),
        ScriptedDrive("strafe", (_segment(short(3, 0.5), forward), _segment(short(6, 1.5), right, face=forward)),
                      "walk sideways (+X) while facing forward (+Z)"),
        ScriptedDrive("half_walk", (_segment(short(8, 1.5), (0, 0.5)),), "half-stick walk"),
        ScriptedDrive("long_mixed", mixed, "long mixed drive: stability, NaN, penetration"),
    ]


# ----------------------------------------------------------------------------------------------
# One drive's arrays


@dataclass
class DriveRecord:
    """What a drive produced: the log columns [T] and the displayed joint positions [T, J, 3] (m)."""

    log: dict
    joint_positions: np.ndarray
    joint_names: list
    joint_parents: np.ndarray
    dt: float = SIM_DT
    joint_rotations: np.ndarray | None = None  # [T, J, 4] global rotations, when known
    joint_contacts: np.ndarray | None = None  # [T, 4] contact output per contact joint, when known

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


def foot_joint_indices(joint_names, parents=None) -> list[int]:
    """Foot_L, Toes_L, Foot_R, Toes_R joint indices (the contact feature order); with `parents`, a
    skeleton without toe joints uses each foot's child (as training does), else the foot itself."""
    from pfnn_core import contacts

    return contacts.contact_joint_order(contacts.foot_joints(list(joint_names), parents))


# ----------------------------------------------------------------------------------------------
# Report rows


@dataclass
class Row:
    """One line of the report; `passed` is None for measures without a target."""

    measure: str
    value: float
    unit: str = ""
    reference: float | None = None
    target: str = ""
    passed: bool | None = None
    note: str = ""

    def as_dict(self) -> dict:
        return {"measure": self.measure, "value": _json_number(self.value), "unit": self.unit,
                "reference": _json_number(self.reference), "target": self.target, "passed": self.passed,
                "note": self.note}


def _json_number(value):
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else str(value)


def _at_most(value, limit) -> bool:
    return bool(np.isfinite(value) and value <= limit)


def _steady_window(drive: ScriptedDrive, record: DriveRecord, segment_index: int) -> np.ndarray:
    starts = drive.segment_starts()
    start, end = starts[segment_index], starts[segment_index + 1]
    tail = min(STEADY_TAIL_S, 0.5 * (end - start))
    return record.window(end - tail, end)


def steady_rows(label: str, drive: ScriptedDrive, record: DriveRecord, segment_index: int) -> list[Row]:
    """Steady-state speed and heading error over the tail of one segment."""
    window = _steady_window(drive, record, segment_index)
    errors = metrics.steady_state_errors(record.root_velocity[window], record.command_xz[window])
    speed_error, heading_error = float(errors.speed_error), float(errors.heading_error)
    return [
        Row(f"{label}: steady speed error", 100.0 * speed_error, "%", None, f"<= {100 * MAX_SPEED_ERROR:.0f}%",
            _at_most(speed_error, MAX_SPEED_ERROR)),
        Row(f"{label}: steady heading error", math.degrees(heading_error), "deg", None,
            f"<= {math.degrees(MAX_HEADING_ERROR):.0f} deg", _at_most(heading_error, MAX_HEADING_ERROR)),
    ]


def idle_rows(drive: ScriptedDrive, record: DriveRecord, foot_indices) -> list[Row]:
    end = min(IDLE_SETTLE_S + IDLE_WINDOW_S, drive.segment_starts()[-1])
    window = record.window(IDLE_SETTLE_S, end + 1e-6)
    span = f"{end - IDLE_SETTLE_S:g} s"
    drift = metrics.idle_drift(record.root_xz[window], record.log["root_yaw"][window])
    feet_xz = record.joint_positions[window][:, foot_indices][..., [0, 2]]
    foot_drift = metrics.idle_drift(np.moveaxis(feet_xz, 1, 0), np.zeros((len(foot_indices), int(window.sum()))))
    foot_excursion = float(np.max(foot_drift.excursion))
    return [
        Row(f"idle: root drift over {span}", 100.0 * float(drift.excursion), "cm", None,
            f"<= {100 * MAX_IDLE_EXCURSION:.0f} cm", _at_most(drift.excursion, MAX_IDLE_EXCURSION),
            "largest distance from the position at 1 s"),
        Row(f"idle: yaw drift over {span}", math.degrees(float(drift.yaw_excursion)), "deg", None,
            f"<= {math.degrees(MAX_IDLE_YAW):.0f} deg", _at_most(drift.yaw_excursion, MAX_IDLE_YAW)),
        Row(f"idle: foot drift over {span}", 100.0 * foot_excursion, "cm", None,
            f"<= {100 * MAX_IDLE_EXCURSION:.0f} cm", _at_most(foot_excursion, MAX_IDLE_EXCURSION),
            "feet still: largest horizontal move of any foot joint"),
    ]


def _commanded_speed(record: DriveRecord, time: float) -> float:
    index = min(int(np.searchsorted(record.t, time + 1e-9)), len(record.t) - 1)
    return float(np.linalg.norm(record.command_xz[index]))


def response_rows(label: str, drive: ScriptedDrive, record: DriveRecord, segment_index: int,
                  limit: float | None) -> list[Row]:
    change = drive.segment_starts()[segment_index]
    speed = np.linalg.norm(record.root_velocity, axis=-1)
    before = record.window(change - BEFORE_CHANGE_S, change)
    start = float(speed[before].mean()) if before.any() else None
    seconds = metrics.response_time(record.t, speed, _commanded_speed(record, change), change, start_speed=start)
    target = f"<= {limit:.1f} s" if limit is not None else ""
    passed = _at_most(seconds, limit) if limit is not None else None
    return [Row(f"{label}: time to 90% of the speed change", seconds, "s", None, target, passed)]


def turn_rows(drive: ScriptedDrive, record: DriveRecord, segment_index: int) -> list[Row]:
    change = drive.segment_starts()[segment_index]
    heading = metrics.heading_of(record.root_velocity)
    index = min(int(np.searchsorted(record.t, change + 1e-9)), len(record.t) - 1)
    target = float(metrics.heading_of(record.command_xz[index]))
    before = record.window(change - BEFORE_CHANGE_S, change)
    start = float(metrics.circular_mean(heading[before])) if before.any() else None
    seconds = metrics.heading_response_time(record.t, heading, target, change, start_heading=start)
    overshoot = metrics.turn_overshoot(record.t, heading, target, change, start_heading=start)
    return [
        Row("turn 90 deg: time to 90% of the heading change", seconds, "s"),
        Row("turn 90 deg: overshoot", math.degrees(overshoot), "deg", None,
            f"<= {math.degrees(MAX_TURN_OVERSHOOT):.0f} deg", _at_most(overshoot, MAX_TURN_OVERSHOOT),
            "settles without overshoot loops"),
    ]


def strafe_rows(drive: ScriptedDrive, record: DriveRecord, segment_index: int) -> list[Row]:
    window = _steady_window(drive, record, segment_index)
    face = np.asarray(drive.segments[segment_index]["face"], dtype=float)
    error = float(metrics.facing_error(record.log["root_yaw"][window], face))
    return [Row("strafe: facing error", math.degrees(error), "deg", None,
                f"<= {math.degrees(MAX_HEADING_ERROR):.0f} deg", _at_most(error, MAX_HEADING_ERROR))]


def path_rows(label: str, record: DriveRecord) -> list[Row]:
    command_path = metrics.integrate_path(record.command_xz, record.dt, start_xz=record.root_xz[0])
    error = metrics.path_following_error(command_path, record.root_xz)
    return [Row(f"{label}: path error mean / max", error.mean, "m", None, "", None, f"max {error.max:.2f} m")]


def analyse_drive(drive: ScriptedDrive, record: DriveRecord, foot_indices) -> list[Row]:
    """Rows for the measures this drive is built to test."""
    name = drive.name
    if name == "idle":
        return idle_rows(drive, record, foot_indices)
    if name == "walk_start":
        return (response_rows("walk from standing", drive, record, 1, MAX_START_RESPONSE_S)
                + steady_rows("walk", drive, record, 1) + path_rows("walk", record))
    if name == "walk_turn":
        return turn_rows(drive, record, 1) + steady_rows("after turn", drive, record, 1) + path_rows("turn", record)
    if name == "run":
        return response_rows("run from standing", drive, record, 1, None) + steady_rows("run", drive, record, 1)
    if name == "run_to_walk":
        return response_rows("run to walk", drive, record, 1, None) + steady_rows("walk after run", drive, record, 1)
    if name == "strafe":
        return steady_rows("strafe", drive, record, 1) + strafe_rows(drive, record, 1)
    if name == "half_walk":
        return steady_rows("half-stick walk", drive, record, 0)
    if name == "long_mixed":
        return path_rows("long mixed", record)
    return []


# ----------------------------------------------------------------------------------------------
# Suite-wide rows: stability, feet, jerk, timings


@dataclass
class MocapReference:
    """The same measures on the training mocap at the simulation rate."""

    ground_heights: np.ndarray   # [4] planted height of Foot_L, Toes_L, Foot_R, Toes_R (m)
    height_band: float           # m above the planted height that counts as near the ground
    skating: float               # m/s, near-ground steps
    skating_weighted: float      # m/s, MANN weighting
    skating_ratio: float         # share
    contact_speed: float         # m/s, foot joints over the steps their side is labelled in contact
    jerk: float                  # m/s^3, at the clips' own frame rate
    jerk_dt: float               # s, that frame rate's step
    pops_per_minute: float       # frames with a joint turning > 30 deg in one simulation step
    clips: list = field(default_factory=list)


def foot_rows(records: dict, foot_indices, reference: MocapReference) -> list[Row]:
    """Skating (pooled over the moving drives the mocap has an equal of) and penetration (all drives).

    Strafing is left out of the pooled figures and reported on its own: the training data has no
    side-stepping, so the mocap is no reference for it (the feet cannot both follow a forward gait and
    a sideways root without sliding).
    """
    ground = reference.ground_heights
    penetration = max(float(metrics.foot_penetration(r.joint_positions[:, foot_indices], ground))
                      for r in records.values())
    moving = [r for name, r in records.items() if name not in ("idle", "strafe")] or list(records.values())
    threshold = RuntimeSettings().contact_threshold
    pieces = [piece for r in moving for piece in _forward_pieces(r, foot_indices, threshold)]
    skating, weighted, ratio = _pooled_skating([(feet, dt) for feet, _, dt in pieces], ground,
                                               reference.height_band)
    band = f"within {100 * reference.height_band:.1f} cm of the planted height"
    on_contact = _pooled_contact_speed([piece for piece in pieces if piece[1] is not None])
    return [
        Row("foot penetration (deepest)", 100.0 * penetration, "cm", None, f"<= {100 * MAX_PENETRATION:.0f} cm",
            _at_most(penetration, MAX_PENETRATION)),
        Row("foot speed on contact frames", 100.0 * on_contact, "cm/s", 100.0 * reference.contact_speed, "<= mocap",
            _at_most(on_contact, reference.contact_speed),
            f"foot locking on; the network's contact > {threshold:g} against the mocap's labels"),
        Row("foot skating (near-ground speed)", 100.0 * skating, "cm/s", 100.0 * reference.skating, "<= mocap",
            _at_most(skating, reference.skating), f"all drives but idle and strafed segments; {band}"),
        Row("foot skating (MANN-weighted)", 100.0 * weighted, "cm/s", 100.0 * reference.skating_weighted,
            "<= mocap", _at_most(weighted, reference.skating_weighted)),
        Row("foot skating ratio (> 2.5 cm per 1/30 s)", 100.0 * ratio, "%", 100.0 * reference.skating_ratio),
    ] + strafe_contact_rows(records, foot_indices, threshold)


def _forward_pieces(record: DriveRecord, foot_indices, threshold: float) -> list:
    """(feet [T, 4, 3], contacts [T, 4] bool or None, dt) for each run of ticks without a strafe facing."""
    strafing = (record.log["cmd_face_x"] != 0.0) | (record.log["cmd_face_z"] != 0.0)
    edges = np.flatnonzero(np.diff(np.concatenate([[1], strafing.astype(int), [1]])))
    feet = record.joint_positions[:, foot_indices]
    contacts = None if record.joint_contacts is None else record.joint_contacts > threshold
    return [(feet[a:b], None if contacts is None else contacts[a:b], record.dt)
            for a, b in zip(edges[::2], edges[1::2]) if b - a >= 2]


def strafe_contact_rows(records: dict, foot_indices, threshold: float) -> list[Row]:
    strafe = records.get("strafe")
    if strafe is None or strafe.joint_contacts is None:
        return []
    speed = _pooled_contact_speed([(strafe.joint_positions[:, foot_indices], strafe.joint_contacts > threshold,
                                    strafe.dt)])
    return [Row("strafe: foot speed on contact frames", 100.0 * speed, "cm/s", None, "-", None,
                "no side-stepping in the training data: reported, not judged")]


def stability_rows(records: dict) -> list[Row]:
    nonfinite = sum(int(np.size(r.joint_positions) - np.isfinite(r.joint_positions).sum())
                    + sum(int(np.size(v) - np.isfinite(v).sum()) for v in r.log.values())
                    for r in records.values())
    longest = max(float(r.t[-1] - r.t[0] + r.dt) for r in records.values())
    extent = max(float(np.nanmax(np.abs(r.joint_positions - r.joint_positions[:, :1, :]))) for r in records.values())
    return [
        Row("non-finite values (all drives)", float(nonfinite), "values", None, "0", nonfinite == 0,
            f"longest drive {longest:.0f} s"),
        Row("largest joint distance from the root joint", extent, "m", None, "<= 2 m", _at_most(extent, 2.0),
            "no explosion"),
    ]


def jerk_rows(records: dict, reference: MocapReference) -> list[Row]:
    """Mean jerk of all joints but the skeleton root, at the mocap's own frame rate, pooled over drives."""
    total = count = 0.0
    for record in records.values():
        positions = _at_rate(record.joint_positions, record.dt, reference.jerk_dt)
        positions = positions[:, _non_root_joints(record.joint_parents)]
        if len(positions) < 4:
            continue
        total += float(metrics.mean_jerk(positions, reference.jerk_dt)) * (len(positions) - 3)
        count += len(positions) - 3
    jerk = total / count if count else math.nan
    rows = [Row("joint jerk (mean)", jerk, "m/s^3", reference.jerk, f"<= {MAX_JERK_RATIO:.1f}x mocap",
                _at_most(jerk, MAX_JERK_RATIO * reference.jerk),
                f"mocap and drives both at {1 / reference.jerk_dt:.0f} Hz")]
    with_rotations = [r for r in records.values() if r.joint_rotations is not None and len(r.t) > 1]
    if with_rotations:
        popped = sum(float(metrics.pose_pops_per_minute(r.joint_rotations, r.dt)) * (len(r.t) - 1) * r.dt
                     for r in with_rotations)
        minutes = sum((len(r.t) - 1) * r.dt for r in with_rotations)
        rows.append(Row("pose pops per minute", popped / minutes, "", reference.pops_per_minute, "", None,
                        "ticks in which a joint turns > 30 deg"))
    return rows


def _at_rate(positions: np.ndarray, dt: float, target_dt: float) -> np.ndarray:
    """Drive positions [T, J, 3] sampled every `target_dt` (>= dt): every k-th tick when the ratio is
    a whole number, else linear interpolation between ticks (a 24 or 25 fps mocap)."""
    ratio = target_dt / dt
    if abs(ratio - round(ratio)) < 1e-6:
        return positions[::max(1, int(round(ratio)))]
    times = np.arange(0.0, (len(positions) - 1) * dt + 1e-12, target_dt) / dt
    lower = np.minimum(np.floor(times).astype(int), len(positions) - 2)
    alpha = (times - lower)[:, None, None]
    return (1.0 - alpha) * positions[lower] + alpha * positions[lower + 1]


def timing_rows(records: dict) -> list[Row]:
    tick = np.concatenate([r.log["tick_ms"] for r in records.values()])
    infer = np.concatenate([r.log["infer_ms"] for r in records.values()])
    return [
        Row("tick time (mean)", float(np.mean(tick)), "ms", None, "", None, f"p95 {np.percentile(tick, 95):.2f} ms"),
        Row("inference time (mean)", float(np.mean(infer)), "ms", None, "", None,
            f"p95 {np.percentile(infer, 95):.2f} ms"),
    ]


# ----------------------------------------------------------------------------------------------
# Report and plots


def _format_number(value, unit="") -> str:
    if value is None:
        return "-"
    value = float(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "never" if unit == "s" else str(value)
    magnitude = abs(value)
    if unit == "values" and value.is_integer():
        return f"{value:.0f}"
    text = f"{value:.0f}" if magnitude >= 100 else f"{value:.2f}" if magnitude >= 0.1 or value == 0 else f"{value:.3f}"
    return f"{text} {unit}".strip()


def report_table(rows: list[Row]) -> str:
    """Markdown table: measure | value | mocap reference | target | result."""
    lines = ["| measure | value | mocap reference | target | result |", "|---|---|---|---|---|"]
    for row in rows:
        result = "-" if row.passed is None else ("pass" if row.passed else "FAIL")
        value = _format_number(row.value, row.unit) + (f" ({row.note})" if row.note else "")
        lines.append(f"| {row.measure} | {value} | {_format_number(row.reference, row.unit)} | "
                     f"{row.target or '-'} | {result} |")
    return "\n".join(lines)


def write_report(path: Path, rows: list[Row], header: dict, plots: list[Path]) -> None:
    passed = sum(1 for row in rows if row.passed)
    checked = sum(1 for row in rows if row.passed is not None)
    lines = ["# Motion-quality report", ""]
    lines += [f"- {key}: {value}" for key, value in header.items()]
    lines += [f"- targets met: {passed} of {checked}", "", report_table(rows), "", "## Plots", ""]
    lines += [f"![{plot.stem}]({plot.relative_to(path.parent).as_posix()})" for plot in plots]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def plot_drive(path: Path, drive: ScriptedDrive, record: DriveRecord, foot_indices, ground_heights) -> Path:
    """Root path vs commanded path, speed vs command, foot heights with contacts, phase; one PNG."""
    from matplotlib.figure import Figure

    t = record.t
    figure = Figure(figsize=(12, 8), dpi=80)
    axes = figure.subplots(2, 2)
    command_path = metrics.integrate_path(record.command_xz, record.dt, start_xz=record.root_xz[0])
    ax = axes[0, 0]
    ax.plot(command_path[:, 0], command_path[:, 1], "--", color="grey", label="commanded")
    ax.plot(record.root_xz[:, 0], record.root_xz[:, 1], color="C0", label="root")
    ax.set_aspect("equal", adjustable="datalim")
    ax.set(title="root path (m)", xlabel="x", ylabel="z")
    ax.legend(loc="best")

    ax = axes[0, 1]
    ax.plot(t, np.linalg.norm(record.command_xz, axis=-1), "--", color="grey", label="commanded")
    ax.plot(t, np.linalg.norm(record.root_velocity, axis=-1), color="C0", label="root")
    ax.set(title="speed (m/s)", xlabel="t (s)")
    ax.legend(loc="best")

    ax = axes[1, 0]
    labels = ("Foot_L", "Toes_L", "Foot_R", "Toes_R")
    for k, (joint, label) in enumerate(zip(foot_indices, labels)):
        ax.plot(t, record.joint_positions[:, joint, 1] - ground_heights[k], color=f"C{k}", label=label)
    top = max(float(np.nanmax(record.joint_positions[:, foot_indices, 1] - ground_heights)), 0.1)
    for column, offset, colour in (("contact_left", 1.02, "C0"), ("contact_right", 1.06, "C2")):
        on = record.log[column] > 0.5
        ax.fill_between(t, top * offset, top * (offset + 0.03), where=on, color=colour, step="mid",
                        label=column.replace("_", " "))
    ax.set(title="foot height above planted level (m), contacts", xlabel="t (s)")
    ax.legend(loc="upper right", fontsize="small", ncol=2)

    ax = axes[1, 1]
    ax.plot(t, record.log["phase"], color="C3")
    ax.set(title="phase", xlabel="t (s)", ylim=(-0.05, 1.05))
    for start in drive.segment_starts()[1:-1]:
        for axis in (axes[0, 1], axes[1, 0], axes[1, 1]):
            axis.axvline(start, color="grey", lw=0.5)
    figure.suptitle(f"{drive.name}: {drive.description}")
    figure.subplots_adjust(left=0.06, right=0.98, bottom=0.07, top=0.9, wspace=0.18, hspace=0.3)
    figure.savefig(path)
    return path


def plot_rollouts(path: Path, rollouts: list) -> Path:
    """Root paths integrated from the network's velocities against the mocap's, one panel per clip."""
    from matplotlib.figure import Figure

    figure = Figure(figsize=(4 * max(len(rollouts), 1), 4), dpi=80)
    axes = np.atleast_1d(figure.subplots(1, max(len(rollouts), 1)))
    for ax, rollout in zip(axes, rollouts):
        ax.plot(rollout.mocap_path[:, 0], rollout.mocap_path[:, 1], "--", color="grey", label="mocap")
        ax.plot(rollout.predicted_path[:, 0], rollout.predicted_path[:, 1], color="C0", label="network")
        ax.set_aspect("equal", adjustable="datalim")
        ax.set_title(f"{rollout.clip}\nr = {rollout.correlation:.3f}", fontsize="small")
        ax.legend(loc="best", fontsize="small")
    figure.suptitle("root paths on held-out clips (trajectory from the mocap, own pose fed back)")
    figure.subplots_adjust(left=0.08, right=0.98, bottom=0.1, top=0.8, wspace=0.3)
    figure.savefig(path)
    return path


# ----------------------------------------------------------------------------------------------
# Mocap reference


def _non_root_joints(parents) -> np.ndarray:
    return np.flatnonzero(np.asarray(parents) >= 0)


def _is_standing_clip(global_positions, parents, names, frame_time) -> bool:
    from pfnn_core import features

    hips = features.hips_joint(names, parents, global_positions)
    steps = np.linalg.norm(np.diff(global_positions[:, hips, [0, 2]], axis=0), axis=-1)
    return float(steps.mean() / frame_time) < features.STANDING_MAX_SPEED if len(steps) else True


def mocap_reference(paths, height_band: float = metrics.DEFAULT_HEIGHT_BAND) -> MocapReference:
    """Skating (at the simulation rate) and jerk (at the clips' own rate) of the locomotion clips.

    Standing clips are left out (the drives' skating is measured on the moving drives). Jerk is taken
    at the file's frame rate because slerp-resampling 30 -> 60 Hz puts a kink at every source frame
    (on the bundled walks: ~100 m/s^3 at 30 Hz, ~570 m/s^3 after resampling); mocap faster than the
    simulation is measured at the simulation rate instead; the drives' jerk is
    measured at the same rate (every other frame of a 60 Hz drive).
    """
    from pfnn_core import bvh, contacts, features, kinematics

    feet_60, clips = [], []
    jerk_sum = jerk_count = popped_steps = steps_60 = 0.0
    jerk_dt = None
    for path in paths:
        motion = bvh.load(str(path))
        positions = motion.global_positions()
        if motion.num_frames < 4 or _is_standing_clip(positions, motion.parents, motion.names, motion.frame_time):
            continue
        joints = _non_root_joints(motion.parents)
        resampled = motion if abs(motion.frame_time * features.SIM_FPS - 1) < 1e-6 else kinematics.resample(
            motion, features.SIM_FPS)
        # Mocap faster than the simulation (120 fps) is measured at the simulation rate: the drives
        # have no finer samples to compare with.
        jerk_positions, clip_jerk_dt = ((positions, motion.frame_time) if motion.frame_time * features.SIM_FPS > 1 - 1e-6
                                        else (resampled.global_positions(), resampled.frame_time))
        jerk_dt = clip_jerk_dt if jerk_dt is None else jerk_dt
        jerk_sum += float(metrics.mean_jerk(jerk_positions[:, joints], jerk_dt)) * (len(jerk_positions) - 3)
        jerk_count += len(jerk_positions) - 3
        feet_60.append((resampled.global_positions()[:, foot_joint_indices(motion.names, motion.parents)],
                        resampled.frame_time))
        pops = float(metrics.pose_pops_per_minute(resampled.global_rotations(), resampled.frame_time))
        popped_steps += pops * (resampled.num_frames - 1) * resampled.frame_time / 60.0
        steps_60 += resampled.num_frames - 1
        clips.append(Path(path).name)
    if not clips:
        raise ValueError("no locomotion clips among the reference BVH files")
    ground = metrics.ground_heights_from_motion(np.concatenate([feet for feet, _ in feet_60]))
    skating = _pooled_skating([(feet, dt) for feet, dt in feet_60], ground, height_band)
    # Joint by joint (ankle with its ankle label, toe with its toe label): a heel lifting while the toe
    # is planted is rolling, not skating.
    labelled = [(feet, contacts.foot_contacts(feet, dt, ground_heights=ground), dt) for feet, dt in feet_60]
    return MocapReference(ground_heights=ground, height_band=height_band, skating=skating[0],
                          skating_weighted=skating[1], skating_ratio=skating[2],
                          contact_speed=_pooled_contact_speed(labelled), jerk=jerk_sum / jerk_count,
                          jerk_dt=jerk_dt, pops_per_minute=popped_steps / (steps_60 / features.SIM_FPS / 60.0),
                          clips=clips)


def _pooled_contact_speed(feet_contacts_dt) -> float:
    """Foot speed on contact steps pooled over motions: [(feet [T, 4, 3], contacts [T, 4], dt)]."""
    total = count = 0.0
    for feet, contact, dt in feet_contacts_dt:
        steps = float((contact[1:] & contact[:-1]).sum())
        if steps:
            total += float(metrics.contact_foot_speed(feet, contact, dt)) * steps
            count += steps
    return total / count if count else math.nan


def _pooled_skating(feet_and_dt, ground, height_band) -> tuple[float, float, float]:
    """(speed, MANN-weighted speed, ratio) pooled over all near-ground steps of several motions."""
    speed_sum = weighted_sum = sliding = near = 0.0
    for feet, dt in feet_and_dt:
        plain = metrics.foot_skating(feet, dt, ground, height_band)
        steps = float(plain.near_ground_share.sum()) * (len(feet) - 1)
        if steps == 0:
            continue
        speed_sum += float(plain.mean) * steps
        weighted_sum += float(metrics.foot_skating(feet, dt, ground, height_band, weighted=True).mean) * steps
        sliding += float(metrics.skating_ratio(feet, dt, ground, height_band)) * steps
        near += steps
    if near == 0:
        return math.nan, math.nan, math.nan
    return speed_sum / near, weighted_sum / near, sliding / near


# ----------------------------------------------------------------------------------------------
# Phase consistency: the network on held-out clips


@dataclass
class Rollout:
    clip: str
    predicted_path: np.ndarray   # [T + 1, 2]
    mocap_path: np.ndarray       # [T + 1, 2]
    correlation: float
    length_ratio: float          # predicted path length / mocap path length


def held_out_clips(meta: dict, bvh_dir: Path) -> tuple[list[Path], str]:
    """The checkpoint's validation clips (bundled files), and a note on where the list came from.

    Uses `data.val_files` when the checkpoint stores it; otherwise repeats `features.split_by_clip`
    over the stored file list with the training run's seed and validation fraction; when neither
    names a file in bvh_dir, every clip there, marked as not known to be held out.
    """
    from types import SimpleNamespace

    from pfnn_core import features

    data = meta.get("data") or {}
    files = list(data.get("files") or [])
    if data.get("val_files"):
        names, note = list(data["val_files"]), "validation clips stored in the checkpoint"
    elif files:
        config = (meta.get("training") or {}).get("config") or {}
        stand_in = SimpleNamespace(clip=np.arange(len(files)))
        _, val_ids = features.split_by_clip(stand_in, float(config.get("val_fraction", 0.1)),
                                            int(config.get("seed", 0)))
        names, note = [files[i] for i in val_ids], "validation split repeated from the training seed"
    else:
        names = []
    paths = [Path(bvh_dir) / name for name in sorted(names) if (Path(bvh_dir) / name).is_file()]
    if not paths:
        return bvh.find_files(bvh_dir), "no held-out clip known among these files: clips may have been trained on"
    return paths, note


def rollout_on_clip(network, clip_features, dt: float, name: str) -> Rollout:
    """Run the network through a clip: trajectory from the mocap, its own pose and phase fed back.

    The phase starts at the clip's and advances by the network's dphase (cycles per frame); both root
    paths are integrated the same way (`metrics.integrate_root_motion`) so only the network differs.
    """
    x_layout, y_layout = network.x_layout, network.y_layout
    inputs = np.array(clip_features.x, dtype=np.float64)
    predictions = np.empty((len(inputs), y_layout.size))
    phase = float(clip_features.phase[0])
    pose = None
    for i in range(len(inputs)):
        x = inputs[i:i + 1].copy()
        if pose is not None:
            parts = x_layout.unpack(x)
            parts["joint_pos"][...] = pose[0]
            parts["joint_vel"][...] = pose[1]
        y = network.predict(x, np.array([phase]))
        predictions[i] = y[0]
        outputs = y_layout.unpack(y)
        pose = (np.array(outputs["joint_pos"]), np.array(outputs["joint_vel"]))
        phase = (phase + float(np.clip(outputs["dphase"][0, 0], 0.0, 0.5))) % 1.0

    def root_path(y):
        parts = y_layout.unpack(np.asarray(y, dtype=np.float64))
        return metrics.integrate_root_motion(parts["root_vel"], parts["root_yaw_rate"][..., 0], dt)[0]

    predicted, mocap = root_path(predictions), root_path(clip_features.y)
    length = lambda path: float(np.linalg.norm(np.diff(path, axis=0), axis=-1).sum())
    return Rollout(clip=name, predicted_path=predicted, mocap_path=mocap,
                   correlation=float(metrics.phase_consistency(predicted, mocap)),
                   length_ratio=length(predicted) / max(length(mocap), 1e-9))


def phase_consistency_rollouts(checkpoint, clip_paths, count: int) -> list[Rollout]:
    """Rollouts on up to `count` locomotion clips spread evenly over `clip_paths`."""
    from pfnn_core import bvh, features, runtime

    network = runtime.Network(checkpoint, device="cpu")
    layouts = features.ModelLayout(network.x_layout, network.y_layout)
    dt = 1.0 / features.SIM_FPS
    paths = list(clip_paths)
    step = max(1, len(paths) // max(count, 1))
    order = [i for offset in range(step) for i in range(offset, len(paths), step)]  # spread over the kinds
    rollouts = []
    for i in order:
        if len(rollouts) >= count:
            break
        clip = features.clip_features(bvh.load(str(paths[i])), layouts)
        if clip.is_standing_clip or len(clip.x) < 4:
            continue
        rollouts.append(rollout_on_clip(network, clip, dt, paths[i].name))
    return rollouts


def phase_rows(rollouts: list, note: str) -> list[Row]:
    if not rollouts:
        return [Row("phase consistency", math.nan, "", None, f">= {MIN_PHASE_CONSISTENCY}", False,
                    "no locomotion clip to roll out")]
    correlations = [r.correlation for r in rollouts]
    ratios = [r.length_ratio for r in rollouts]
    worst = float(np.min(correlations))
    return [
        Row("phase consistency (worst clip)", worst, "", None, f">= {MIN_PHASE_CONSISTENCY}",
            bool(np.isfinite(worst) and worst >= MIN_PHASE_CONSISTENCY),
            f"mean {np.mean(correlations):.3f} over {len(rollouts)} clips; {note}"),
        Row("rollout path length / mocap's", float(np.mean(ratios)), "", 1.0, "", None,
            f"range {np.min(ratios):.2f}-{np.max(ratios):.2f}"),
    ]


# ----------------------------------------------------------------------------------------------
# Running the suite


def run_scripted_drive(drive: ScriptedDrive, checkpoint, out_dir: Path) -> DriveRecord:
    """Run one drive with `pfnn_core.drive` and keep its arrays.

    Writes out_dir/script.json, which `pfnn-drive --script` replays, next to the drive's log.csv and
    motion.bvh. `checkpoint` is a loaded Checkpoint or a path.
    """
    from pfnn_core import drive as drive_module

    out_dir.mkdir(parents=True, exist_ok=True)
    script_path = out_dir / "script.json"
    script_path.write_text(json.dumps(drive.script(), indent=1), encoding="utf-8")
    result = drive_module.run_drive(drive_module.load_script(script_path), checkpoint, out_dir)
    return record_from_drive_result(result)


def record_from_drive_result(result) -> DriveRecord:
    log = {name: np.asarray(result.log[name], dtype=np.float64) for name in LOG_COLUMNS}
    return DriveRecord(log=log, joint_positions=np.asarray(result.joint_positions, dtype=np.float64),
                       joint_names=list(result.joint_names), joint_parents=np.asarray(result.motion.parents),
                       dt=float(result.dt), joint_rotations=result.motion.global_rotations(),
                       joint_contacts=np.asarray(result.joint_contacts, dtype=np.float64))


def reference_clips(bvh_dir: Path, quick: bool, joint_names=None) -> list[Path]:
    """All clips of the folder (on the model's skeleton when `joint_names` is given), or a few spread
    over the sorted list (every kind) for --quick."""
    paths = bvh.find_files(bvh_dir)
    if joint_names is not None:
        paths = clips_on_skeleton(paths, joint_names)
    if quick and len(paths) > 8:
        paths = [paths[i] for i in np.linspace(0, len(paths) - 1, 8).round().astype(int)]
    return paths


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


def reference_folder(meta: dict, bvh_dir=None) -> Path:
    """Where the mocap reference and the held-out clips come from: `bvh_dir` when given, else the
    folder the checkpoint was trained on (when it still exists), else the bundled clips."""
    if bvh_dir is not None:
        return Path(bvh_dir)
    data = meta.get("data") or {}
    stored = list(data.get("folders") or []) + list(((meta.get("training") or {}).get("config") or {}).get("data") or [])
    for item in map(Path, stored):
        folder = item if item.is_dir() else item.parent if item.is_file() else None
        if folder is not None:
            return folder
    return DEFAULT_BVH_DIR


def evaluate(checkpoint_path, out_dir, quick: bool = False, bvh_dir=None) -> dict:
    """Run the suite on one checkpoint; write out_dir/report.md, results.json and plots/*.png.

    The mocap reference and held-out clips are the files of `reference_folder(meta, bvh_dir)` on the
    checkpoint's skeleton; ValueError when there are none.

    Returns {"rows": [row dicts], "passed": n, "checked": m, "report": path, "results": path,
    "plots": [paths], "drives": {name: DriveRecord}}.
    """
    from pfnn_core.checkpoint import load_checkpoint

    checkpoint_path, out_dir = Path(checkpoint_path), Path(out_dir)
    plots_dir = out_dir / "plots"
    plots_dir.mkdir(parents=True, exist_ok=True)
    checkpoint = load_checkpoint(checkpoint_path)
    skeleton = checkpoint.meta.get("skeleton") or {}
    joint_names = list(skeleton.get("names") or [])
    bvh_dir = reference_folder(checkpoint.meta, bvh_dir)
    reference_paths = reference_clips(bvh_dir, quick, joint_names or None)
    if not reference_paths:
        raise ValueError(f"{bvh_dir}: no BVH file on the model's skeleton ({len(joint_names)} joints: "
                         f"{', '.join(joint_names[:6])}, ...); pass --data FOLDER with clips of that skeleton")
    suite = drive_suite(quick)
    records = {drive.name: run_scripted_drive(drive, checkpoint, out_dir / "drives" / drive.name)
               for drive in suite}
    any_record = next(iter(records.values()))
    foot_indices = list(skeleton.get("contact_joints") or foot_joint_indices(any_record.joint_names,
                                                                              any_record.joint_parents))
    reference = mocap_reference(reference_paths)
    held_out, held_out_note = held_out_clips(checkpoint.meta, bvh_dir)
    held_out = clips_on_skeleton(held_out, joint_names) if joint_names else held_out
    rollouts = phase_consistency_rollouts(checkpoint, held_out, count=1 if quick else 6)

    rows = stability_rows(records)
    for drive in suite:
        rows += analyse_drive(drive, records[drive.name], foot_indices)
    rows += foot_rows(records, foot_indices, reference)
    rows += jerk_rows(records, reference)
    rows += phase_rows(rollouts, held_out_note)
    rows += timing_rows(records)

    plots = [plot_drive(plots_dir / f"{drive.name}.png", drive, records[drive.name], foot_indices,
                        reference.ground_heights) for drive in suite]
    if rollouts:
        plots.append(plot_rollouts(plots_dir / "phase_consistency.png", rollouts))
    header = {"model": checkpoint_path, "suite": "quick" if quick else "full",
              "mocap reference": f"{len(reference.clips)} locomotion clips from {bvh_dir}",
              "drives": ", ".join(f"{d.name} ({d.segment_starts()[-1]:.0f} s)" for d in suite)}
    report_path = out_dir / "report.md"
    write_report(report_path, rows, header, plots)
    results_path = out_dir / "results.json"
    row_dicts = [row.as_dict() for row in rows]
    passed = sum(1 for row in rows if row.passed)
    checked = sum(1 for row in rows if row.passed is not None)
    results_path.write_text(json.dumps({"model": str(checkpoint_path), "quick": quick, "rows": row_dicts,
                                        "passed": passed, "checked": checked}, indent=1), encoding="utf-8")
    return {"rows": row_dicts, "passed": passed, "checked": checked, "report": report_path,
            "results": results_path, "plots": plots, "drives": records, "table": report_table(rows)}


def main(argv=None) -> int:
    from pfnn_core.threads import add_threads_argument, set_thread_counts

    parser = argparse.ArgumentParser(prog="pfnn-eval", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=str(DEFAULT_MODEL), help="checkpoint (.safetensors)")
    parser.add_argument("--out", required=True, help="folder for report.md, results.json, plots/ and drives/")
    parser.add_argument("--quick", action="store_true", help="short drives and a small mocap reference")
    parser.add_argument("--data", default=None, help="BVH folder of the reference mocap (default: the "
                        "folder the model was trained on, else the bundled clips)")
    add_threads_argument(parser)
    args = parser.parse_args(argv)
    try:
        set_thread_counts(args.threads)
    except ValueError as error:
        print(f"pfnn-eval: {error}", file=sys.stderr)
        return 2
    from pfnn_core.checkpoint import CheckpointError

    try:
        result = evaluate(args.model, args.out, quick=args.quick, bvh_dir=Path(args.data) if args.data else None)
    except (CheckpointError, FileNotFoundError, ValueError) as error:
        print(f"pfnn-eval: {error}", file=sys.stderr)
        return 2
    print(result["table"])
    print(f"\n{result['passed']} of {result['checked']} targets met; report: {result['report']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
