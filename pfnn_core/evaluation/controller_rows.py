"""The measures that judge controllers side by side, as report rows: response latency (counterfactual),
acceleration noise, turning slip and determinism (docs/EVALUATION.md).

Owns `controller_rows` (every drive of one subject run again with its branches: latency per change and
per kind of change, determinism over the suite), `noise_rows` and `slip_rows` (over the suite's drives,
against the mocap's figures), and the targets.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pfnn_core.evaluation import acceleration_noise, latency, measures, turning_slip
from pfnn_core.evaluation.analysis import Row, at_most
from pfnn_core.evaluation.counterfactual import Branch, max_difference, run_with_branches
from pfnn_core.evaluation.reference import MocapReference
from pfnn_core.evaluation.suite import DriveRecord, segment_kind, subject_settings

MAX_RESPONSE_S = 0.150          # s from an input to a visible change of the pose: starts, stops, turns
TARGETED_KINDS = ("start", "stop", "turn")
MAX_NOISE_RATIO = 1.5           # x the mocap's acceleration noise for the same kind of motion
MAX_SLIP_RATIO = 1.5            # x the mocap's slip in turns
MOVING_KINDS = ("walk", "run", "back", "side")
FORWARD_KINDS = ("walk", "run")  # turns are judged where the character faces where it goes


SUMMARY_MEASURES = ("response latency", "time to 90%", "determinism", "acceleration noise", "turning slip")


def is_summary_row(row: Row) -> bool:
    """A suite-wide row of these measures (the comparison report's table of controllers side by side)."""
    return row.drive == "suite" and row.measure.startswith(SUMMARY_MEASURES)


@dataclass
class ChangeResponse:
    """One change's counterfactual: the pose latency (world and own frame), the time to 90%, the
    largest difference within the window."""

    drive: str
    change: latency.InputChange
    delay: float
    body_delay: float
    to_90: float
    largest: float


def change_responses(record: DriveRecord, checkpoint, styles=(), make_character=None) -> tuple[list[ChangeResponse], float]:
    """Run `record`'s drive again as its subject with a branch at every input change (the input held)
    and every probe (the input changed). Returns (one response per change, the largest difference of
    the re-run from the record: 0 when bit-identical). `make_character`: see `run_with_branches`."""
    drive, dt = record.drive, record.dt
    changes = latency.input_changes(drive) + latency.probe_changes(drive, styles)
    branches = [Branch(c.time, c.changed if c.probe else c.held, c.window) for c in changes]
    main, traces = run_with_branches(drive.script(), checkpoint, subject_settings(record.subject, checkpoint.card),
                                     branches, make_character)
    names, parents = checkpoint.card.names, checkpoint.card.skeleton["parents"]
    body = measures.body_joints(names, parents)  # not a joint above the hips that stays at the origin
    responses = []
    for change, trace in zip(changes, traces):
        first = int(round(change.time / dt))
        own = main.positions[first:first + len(trace.positions)][:, body]
        branch = trace.positions[:len(own)][:, body]
        changed, held = (branch, own) if change.probe else (own, branch)
        delay = latency.response_delay(changed, held, dt)
        body_delay = latency.response_delay(latency.body_poses(changed, names, parents, body),
                                            latency.body_poses(held, names, parents, body), dt)
        to_90 = math.nan
        if not change.probe:  # the drive goes on with the change: the whole rest of it to reach 90%
            to_90 = latency.time_to_90(change, main.t, main.root_xz, main.command_xz, dt)
        responses.append(ChangeResponse(drive.name, change, delay, body_delay, to_90,
                                        float(latency.pose_difference(changed, held).max())))
    return responses, max_difference(main.positions, record.positions)


def _seconds(value) -> str:
    return "never" if not np.isfinite(value) else f"{1000 * value:.0f} ms"


def response_rows(responses: list[ChangeResponse], subject: str) -> list[Row]:
    """A row per change (no target) and per kind of change over the suite: the slowest, against
    MAX_RESPONSE_S for starts, stops and turns, and the median time to 90% of the speed or heading."""
    rows = []
    for r in responses:
        reach = "" if np.isnan(r.to_90) else f"; 90% of the commanded {_aim(r.change.kind)} after {r.to_90:.2f} s"
        rows.append(Row(f"response: {r.change.label}, pose change", subject, r.drive, r.delay, "s", "", None, None,
                        f"{_describe(r.change)}; own-frame pose {_seconds(r.body_delay)}{reach}; largest difference "
                        f"{100 * r.largest:.0f} cm within {r.change.window:g} s"))
    for kind in latency.KINDS:
        mine = [r for r in responses if r.change.kind == kind]
        if not mine:
            continue
        delays = np.array([r.delay for r in mine])
        slowest = max(mine, key=lambda r: r.delay)
        targeted = kind in TARGETED_KINDS
        rows.append(Row(f"response latency ({kind}): slowest", subject, "suite", float(delays.max()), "s",
                        f"<= {1000 * MAX_RESPONSE_S:.0f} ms" if targeted else "",
                        at_most(float(delays.max()), MAX_RESPONSE_S) if targeted else None, None,
                        f"median {_seconds(float(np.median(delays)))} over {len(mine)}; slowest: {slowest.drive} "
                        f"{slowest.change.label}; own-frame pose slowest {_seconds(max(r.body_delay for r in mine))}"))
        reached = [r.to_90 for r in mine if not np.isnan(r.to_90)]
        if reached:
            rows.append(Row(f"time to 90% of the commanded {_aim(kind)} ({kind}): median", subject, "suite",
                            float(np.median(reached)), "s", "", None, None,
                            f"slowest {max(reached):.2f} s over {len(reached)}"))
    return rows


def _aim(kind: str) -> str:
    return {"turn": "heading", "direction": "velocity"}.get(kind, "speed")


def _describe(change: latency.InputChange) -> str:
    def one(segment):
        move = np.asarray(segment["move"], float)
        what = "stand" if not np.linalg.norm(move).any() else ("run" if segment.get("run") else "walk") + \
            f" ({move[0]:.2f}, {move[1]:.2f})"
        face = segment.get("face")
        return what + (f" facing ({face[0]:.2f}, {face[1]:.2f})" if face is not None else "") + \
            (f" {segment['style']}" if segment.get("style") else "")
    return f"{one(change.held)} -> {one(change.changed)}" + (": tried as a branch" if change.probe else "")


def determinism_rows(differences: dict, subject: str, expected: bool) -> list[Row]:
    """The largest difference of a drive run twice over the suite (`differences`: drive -> m);
    `expected`: the settings promise a deterministic model (no variation asked)."""
    largest = max(differences.values()) if differences else math.nan
    worst = max(differences, key=differences.get) if differences else "-"
    identical = sum(1 for value in differences.values() if value == 0.0)
    return [Row("determinism: the same drive twice, largest difference", subject, "suite", largest, "m",
                "= 0" if expected else "", (largest == 0.0) if expected else None, None,
                f"{identical} of {len(differences)} drives bit-identical" + ("" if largest == 0.0 else f"; worst {worst}")
                + ("" if expected else "; variation > 0 asked: runs differ by design"))]


def controller_rows(records: list[DriveRecord], reference: MocapReference, checkpoint, subject: str) -> list[Row]:
    """Latency, determinism, acceleration noise and turning slip of one subject over the suite."""
    mine = [r for r in records if r.subject == subject]
    styles = [name for name in checkpoint.card.style_names if name in reference.database_styles]
    responses, differences = [], {}
    for record in mine:
        found, differences[record.drive.name] = change_responses(record, checkpoint, styles)
        responses += found
    variation = float(getattr(subject_settings(subject, checkpoint.card), "variation", 0.0) or 0.0)
    return (response_rows(responses, subject) + determinism_rows(differences, subject, variation == 0.0)
            + noise_rows(mine, reference, subject) + slip_rows(mine, reference, subject))


def segment_pieces(record: DriveRecord):
    """(kind, positions [T, J, 3]) of each segment of a drive."""
    starts = record.drive.segment_starts()
    for index, segment in enumerate(record.drive.segments):
        window = record.window(starts[index], starts[index + 1])
        yield segment_kind(segment), record.positions[window]


def noise_rows(records: list[DriveRecord], reference: MocapReference, subject: str) -> list[Row]:
    """Acceleration noise per moving kind (the drives' segments of that kind pooled by duration) against
    the mocap's, and the power above the mocap's band that the drives' rate can show (no target)."""
    body = measures.body_joints(reference.names, reference.parents)
    low, high = reference.noise_band
    parts: dict = {kind: [] for kind in MOVING_KINDS}
    above = []
    for record in records:
        nyquist = 0.5 / record.dt
        for kind, positions in segment_pieces(record):
            seconds = len(positions) * record.dt
            if kind in parts:
                parts[kind].append((acceleration_noise.acceleration_noise(positions[:, body], record.dt, low, high), seconds))
            if nyquist > high + 1e-6:
                above.append((acceleration_noise.acceleration_noise(positions[:, body], record.dt, high + 1.0, nyquist),
                              seconds))
    rows = []
    for kind in MOVING_KINDS:
        value, mocap = acceleration_noise.pooled_noise(parts[kind]), reference.acceleration_noise.get(kind, math.nan)
        if not parts[kind] or not np.isfinite(value):
            continue
        rows.append(Row(f"acceleration noise ({kind})", subject, "suite", value, "(m/s^2)^2",
                        f"<= {MAX_NOISE_RATIO:g}x mocap", at_most(value, MAX_NOISE_RATIO * mocap), mocap,
                        f"power of the body joints' accelerations in {low:g}-{high:g} Hz, mean over joints: RMS "
                        f"{math.sqrt(value):.1f} m/s^2 (mocap {math.sqrt(mocap) if np.isfinite(mocap) else math.nan:.1f})"))
    if above:
        value = acceleration_noise.pooled_noise(above)
        rows.append(Row("acceleration noise above the mocap's band", subject, "suite", value, "(m/s^2)^2", "", None,
                        None, f"{high + 1:g} Hz up to the drives' Nyquist frequency, all segments: what the mocap's "
                        f"rate cannot show (RMS {math.sqrt(value):.1f} m/s^2)"))
    return rows


def slip_rows(records: list[DriveRecord], reference: MocapReference, subject: str) -> list[Row]:
    """The root's speed across its facing in the drives' turns (forward walks and runs) against the
    mocap's turns."""
    parts = []
    for record in records:
        forward = np.isin(record.kinds(), FORWARD_KINDS)
        root_xz, yaw = turning_slip.body_root(record.positions, reference.names, reference.parents, record.dt)
        parts.append(turning_slip.turning_slip(root_xz, yaw, record.dt, mask=forward) + (record.dt,))
    frames = sum(n for _, n, _ in parts)
    if not frames:
        return []
    value = turning_slip.pooled_slip([(s, n) for s, n, _ in parts])
    seconds = sum(n * dt for _, n, dt in parts)
    mocap = reference.turning_slip
    return [Row("turning slip: root speed across its facing in turns", subject, "suite", value, "m/s",
                f"<= {MAX_SLIP_RATIO:g}x mocap", at_most(value, MAX_SLIP_RATIO * mocap), mocap,
                f"{seconds:.1f} s of turning (facing faster than {math.degrees(turning_slip.TURN_RATE):.0f} deg/s) in "
                f"forward walks and runs; the mocap's: {reference.turning_frames} frames")]
