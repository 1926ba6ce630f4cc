"""`pfnn-eval --physics`: every drive the evaluation ran, tracked by the simulated body, measured, and
set beside the kinematic motion it tracked: `physics_rows(records, tracker, reference)` -> [PhysicsRow],
`push_rows(...)` (a 30 N s push at the chest during a walk), `physics_table`, `physics_section`, and
`evaluate_physics` (all of it, appended to the evaluation's report.md, and physics.json beside it).

Per drive and subject (network, runtime): tracking error (median, p95), the deepest contact joint
below its floor level, foot skating (the evaluation's measure, all contact steps), pops per minute (at
the mocap's rate), the root's help, the centre of mass over the support polygon while standing, and
non-finite values. Over the suite the same, pooled. Targets (issue: the physics layer): no foot more
than 1 cm below the floor, skating no worse than the kinematic motion's, tracking error median under
3 cm and p95 under 8 cm, never NaN, a push recovered (error back under 5 cm) within 2 s.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pfnn_core.evaluation import measures as body_measures
from pfnn_core.evaluation.analysis import at_rate
from pfnn_core.physics import measures
from pfnn_core.physics.events import PushEvent
from pfnn_core.physics.layer import physics_for
from pfnn_core.physics.replay import TrackedMotion, track_motion
from pfnn_core.skeleton import hips_joint

MAX_DEPTH = 0.01  # m below a contact joint's floor level
MAX_ERROR_MEDIAN, MAX_ERROR_P95 = 0.03, 0.08  # m
MAX_RECOVERY_S = 2.0
SKATING_SLACK = 0.005  # m/s: "no worse than the kinematic motion's", up to the jitter of a standing sole
PUSH = (0.0, 0.0, 30.0)  # N s; turned to push the walker from its side (see push_rows)
PUSH_DRIVE, PUSH_AFTER_S = "walk_turn", 2.0  # the drive pushed, and when (into its steady walk)
STAND_SETTLE_S = 1.0  # standing frames are measured from this long after the stick's release


@dataclass
class PhysicsRow:
    measure: str
    subject: str
    drive: str
    kinematic: float | None  # the same measure on the kinematic motion (None where it has no meaning)
    physics: float
    unit: str = ""
    target: str = ""
    passed: bool | None = None
    note: str = ""

    def as_dict(self) -> dict:
        def number(value):
            return None if value is None or not math.isfinite(value) else float(value)
        return {"measure": self.measure, "subject": self.subject, "drive": self.drive, "kinematic": number(self.kinematic),
                "physics": number(self.physics), "unit": self.unit, "target": self.target, "passed": self.passed,
                "note": self.note}


def standing_frames(record) -> np.ndarray:
    """[T] bool: commanded to stand and at least STAND_SETTLE_S into the standing segment."""
    starts = record.drive.segment_starts()[record.segment_index()]
    return (record.kinds() == "stand") & (record.t - starts >= STAND_SETTLE_S)


def _pops_per_minute(positions, dt: float, mocap_dt: float) -> float:
    sampled = at_rate(positions, dt, mocap_dt)
    minutes = len(sampled) * mocap_dt / 60.0
    return float(body_measures.pose_pops(sampled).sum()) / minutes if minutes else math.nan


def _at_most(value, limit) -> bool | None:
    return None if not math.isfinite(value) else bool(value <= limit)


def drive_rows(record, tracked: TrackedMotion, tracker, reference) -> list[PhysicsRow]:
    """The physics measures of one drive of one subject."""
    name, subject, floor, contact = record.drive.name, record.subject, reference.floor, reference.contact_joints
    kin_feet, sim_feet = record.positions[:, contact], tracked.positions[:, contact]
    median, p95 = measures.percentiles(tracked.tracking_error)
    kin_depth, sim_depth = measures.depth_below_floor(kin_feet, floor), measures.depth_below_floor(sim_feet, floor)
    kin_skate = body_measures.foot_skating(kin_feet, floor, record.dt).mean()
    sim_skate = body_measures.foot_skating(sim_feet, floor, record.dt).mean()
    help_median, help_p95 = measures.percentiles(tracked.root_force)
    weight = tracked.body_mass * 9.81
    rows = [
        PhysicsRow("tracking error (median)", subject, name, None, 100 * median, "cm", "< 3 cm", median < MAX_ERROR_MEDIAN),
        PhysicsRow("tracking error (p95)", subject, name, None, 100 * p95, "cm", "< 8 cm", p95 < MAX_ERROR_P95),
        PhysicsRow("deepest foot below the floor", subject, name, 100 * float(kin_depth.max()), 100 * float(sim_depth.max()),
                   "cm", "<= 1 cm", bool(sim_depth.max() <= MAX_DEPTH)),
        PhysicsRow("foot skating", subject, name, kin_skate, sim_skate, "m/s", "<= kinematic + 0.005",
                   None if not math.isfinite(kin_skate) else _at_most(sim_skate, kin_skate + SKATING_SLACK)),
        PhysicsRow("pops", subject, name, _pops_per_minute(record.positions, record.dt, reference.jerk_dt),
                   _pops_per_minute(tracked.positions, record.dt, reference.jerk_dt), "per min"),
        PhysicsRow("root help (median)", subject, name, None, help_median, "N", "",
                   note=f"p95 {help_p95:.0f} N; body weight {weight:.0f} N"),
    ]
    standing = standing_frames(record)
    if standing.any():
        kin_com = measures.kinematic_centre_of_mass(tracker.body, record.positions, record.rotations)
        kin = measures.support(tracker.body, record.positions, record.rotations, kin_com, standing)
        sim = measures.support(tracker.body, tracked.positions, tracked.rotations, tracked.centre_of_mass, standing)
        rows.append(PhysicsRow("centre of mass over the feet while standing", subject, name, 100 * kin.inside_share,
                               100 * sim.inside_share, "%", note=f"farthest outside: kinematic {100 * kin.worst_outside:.1f} cm, "
                               f"physics {100 * sim.worst_outside:.1f} cm ({sim.frames} frames)"))
    finite = bool(np.isfinite(tracked.positions).all() and np.isfinite(tracked.root_force).all())
    rows.append(PhysicsRow("non-finite values", subject, name, None, 0.0 if finite else 1.0, "", "none", finite,
                           note=f"{tracked.resets} resets" if tracked.resets else ""))
    return rows


def suite_rows(pairs, reference, subject: str) -> list[PhysicsRow]:
    """The pooled measures of one subject over the suite: pairs of (record, tracked)."""
    pairs = [(r, t) for r, t in pairs if r.subject == subject]
    if not pairs:
        return []
    floor, contact = reference.floor, reference.contact_joints
    error = np.concatenate([t.tracking_error for _, t in pairs])
    median, p95 = measures.percentiles(error)
    kin = body_measures.pool_skating(body_measures.foot_skating(r.positions[:, contact], floor, r.dt) for r, _ in pairs)
    sim = body_measures.pool_skating(body_measures.foot_skating(t.positions[:, contact], floor, r.dt) for r, t in pairs)
    kin_depth = max(float(measures.depth_below_floor(r.positions[:, contact], floor).max()) for r, _ in pairs)
    sim_depth = max(float(measures.depth_below_floor(t.positions[:, contact], floor).max()) for _, t in pairs)
    tick = np.concatenate([t.tick_ms for _, t in pairs])
    return [
        PhysicsRow("tracking error (median)", subject, "suite", None, 100 * median, "cm", "< 3 cm", median < MAX_ERROR_MEDIAN),
        PhysicsRow("tracking error (p95)", subject, "suite", None, 100 * p95, "cm", "< 8 cm", p95 < MAX_ERROR_P95),
        PhysicsRow("deepest foot below the floor", subject, "suite", 100 * kin_depth, 100 * sim_depth, "cm", "<= 1 cm",
                   sim_depth <= MAX_DEPTH),
        PhysicsRow("foot skating", subject, "suite", kin.mean(), sim.mean(), "m/s", "<= kinematic + 0.005",
                   _at_most(sim.mean(), kin.mean() + SKATING_SLACK)),
        PhysicsRow("physics time per tick (median)", subject, "suite", None, float(np.median(tick)), "ms",
                   note="offline tracking, one character"),
    ]


def push_rows(record, tracker, reference) -> list[PhysicsRow]:
    """A 30 N s push at the chest, from the walker's left, PUSH_AFTER_S into the push drive's walk:
    the peak tracking error (the push shows), the time until it is back under 5 cm, and the distance
    of the simulated hips from the kinematic ones 2 s after the push (it walks on where it was steered)."""
    dt, hips = record.dt, hips_joint(reference.names, reference.parents)
    frame = int(round(PUSH_AFTER_S / dt))
    if frame + 2 >= len(record.positions):
        return []
    heading = record.positions[frame + 1, hips, [0, 2]] - record.positions[frame - 1, hips, [0, 2]]
    heading = heading / max(float(np.linalg.norm(heading)), 1e-9)
    side = np.array([heading[1], 0.0, -heading[0]]) * np.linalg.norm(PUSH)  # the walker's right: pushed from its left
    tracked = track_motion(tracker, record.positions, record.rotations, dt, [PushEvent(frame * dt, tuple(side))])
    recovery = float(measures.recovery_time(tracked.tracking_error, tracked.push_frames, dt)[0])
    later = min(len(record.positions) - 1, frame + int(round(2.0 / dt)))
    hips_off = float(np.linalg.norm(tracked.positions[later, hips] - record.positions[later, hips]))
    peak = float(tracked.tracking_error[frame:frame + int(round(1.0 / dt))].max())
    name, subject = f"{record.drive.name} + push", record.subject
    return [
        PhysicsRow("tracking error after a 30 N s push (peak)", subject, name, None, 100 * peak, "cm"),
        PhysicsRow("time to recover after the push", subject, name, None, recovery, "s", "<= 2 s",
                   recovery <= MAX_RECOVERY_S, "tracking error back under 5 cm"),
        PhysicsRow("hips off the kinematic hips 2 s after the push", subject, name, None, 100 * hips_off, "cm"),
    ]


def physics_rows(records, tracker, reference, log=None) -> list[PhysicsRow]:
    """Track every record (DriveRecord) with `tracker` (batch 1) and measure; the push on PUSH_DRIVE."""
    say = log or (lambda message: None)
    pairs, rows = [], []
    for record in records:
        tracked = track_motion(tracker, record.positions, record.rotations, record.dt)
        pairs.append((record, tracked))
        rows += drive_rows(record, tracked, tracker, reference)
        if record.drive.name == PUSH_DRIVE:
            rows += push_rows(record, tracker, reference)
        say(f"physics: {record.drive.name} ({record.subject}) tracked, error median "
            f"{100 * float(np.median(tracked.tracking_error)):.1f} cm")
    for subject in dict.fromkeys(r.subject for r in records):
        rows = suite_rows(pairs, reference, subject) + rows
    return rows


def _cell(value, unit) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:.3g} {unit}".strip()


def physics_table(rows) -> str:
    """Markdown: drive | measure | network kinematic | network physics | runtime kinematic | runtime physics | target."""
    keyed: dict = {}
    for row in rows:
        keyed.setdefault((row.drive, row.measure), {})[row.subject] = row
    lines = ["| drive | measure | network kinematic | network physics | runtime kinematic | runtime physics | target | note |",
             "|---|---|---|---|---|---|---|---|"]
    for (drive, measure), by_subject in keyed.items():
        cells = []
        for subject in ("network", "runtime"):
            row = by_subject.get(subject)
            mark = "" if row is None or row.passed is None else (" ok" if row.passed else " MISS")
            cells += [_cell(row.kinematic, row.unit) if row else "-", (_cell(row.physics, row.unit) + mark) if row else "-"]
        first = next(iter(by_subject.values()))
        note = "; ".join(dict.fromkeys(r.note for r in by_subject.values() if r.note))
        lines.append(f"| {drive} | {measure} | " + " | ".join(cells) + f" | {first.target or '-'} | {note} |")
    return "\n".join(lines)


def physics_section(rows, settings) -> str:
    """The report's physics section (appended to report.md)."""
    checked = [row for row in rows if row.passed is not None]
    passed = sum(1 for row in checked if row.passed)
    values = ", ".join(f"{name}={value:g}" if isinstance(value, float) else f"{name}={value}"
                       for name, value in zip(settings.__dataclass_fields__, settings.values()))
    return "\n".join(["", "## Physics (`--physics`)", "",
                      "Every drive tracked by the simulated body (MuJoCo; docs/PHYSICS.md), measured beside the kinematic "
                      f"motion it tracks. {passed} of {len(checked)} physics targets met. Settings: {values}.", "",
                      physics_table(rows), ""])


def evaluate_physics(settings, records, reference, card, out_dir, log=None) -> dict:
    """Track and measure every record of an evaluation (`evaluation.cli.evaluate` calls this with
    `--physics`); the body rests its contact joints at the evaluation's floor levels. Appends the
    physics section to out_dir/report.md and writes out_dir/physics.json. Returns {"physics_rows",
    "physics_table", "physics_summary", "physics_results"}."""
    out_dir = Path(out_dir)
    tracker = physics_for(card.skeleton, reference.floor, 1, settings, trained_on=card.trained_on)
    rows = physics_rows(records, tracker, reference, log)
    checked = [row for row in rows if row.passed is not None]
    summary = f"physics: {sum(1 for row in checked if row.passed)} of {len(checked)} targets met"
    report_path, results_path = out_dir / "report.md", out_dir / "physics.json"
    with open(report_path, "a", encoding="utf-8") as stream:
        stream.write(physics_section(rows, tracker.settings))
    results_path.write_text(json.dumps({"settings": dict(zip(tracker.settings.__dataclass_fields__, tracker.settings.values())),
                                        "body_mass_kg": tracker.body.mass, "rows": [row.as_dict() for row in rows]},
                                       indent=1), encoding="utf-8")
    return {"physics_rows": rows, "physics_table": physics_table(rows), "physics_summary": summary,
            "physics_results": results_path}
