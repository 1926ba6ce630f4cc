"""The report: markdown with the two subjects side by side, results.json, plots and filmstrips.

Owns `summary` (passed / checked per subject), `report_table`, `write_report`, `write_results`,
`plot_drive` (root path, speed, foot heights against the capture's floor, phase; both subjects) and
`plot_filmstrip` (the skeleton from the side and from above at moments of a drive, both subjects).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from pfnn_core import files
from pfnn_core.evaluation import metrics
from pfnn_core.evaluation.analysis import Row
from pfnn_core.evaluation.suite import SUBJECTS
from pfnn_core.motion.root import body_frames, to_body_frame


def summary(rows: list[Row]) -> dict:
    """{subject: {"passed": n, "checked": m}}."""
    out = {}
    for subject in SUBJECTS:
        mine = [row for row in rows if row.subject == subject and row.passed is not None]
        out[subject] = {"passed": sum(1 for row in mine if row.passed), "checked": len(mine)}
    return out


def format_number(value, unit="") -> str:
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


def _cell(row: Row | None) -> str:
    if row is None:
        return "-"
    mark = "" if row.passed is None else (" ok" if row.passed else " **FAIL**")
    return format_number(row.value, row.unit) + mark


def report_table(rows: list[Row]) -> str:
    """Markdown: drive | measure | network | runtime | mocap | target | note, one line per measure."""
    keyed: dict = {}
    for row in rows:
        keyed.setdefault((row.drive, row.measure), {})[row.subject] = row
    lines = ["| drive | measure | network | runtime | mocap | target | note |", "|---|---|---|---|---|---|---|"]
    for (drive, measure), by_subject in keyed.items():
        first = next(iter(by_subject.values()))
        note = "; ".join(dict.fromkeys(r.note for r in by_subject.values() if r.note))
        lines.append(f"| {drive} | {measure} | {_cell(by_subject.get('network'))} | {_cell(by_subject.get('runtime'))} | "
                     f"{format_number(first.reference, first.unit)} | {first.target or '-'} | {note} |")
    return "\n".join(lines)


def summary_text(rows: list[Row]) -> str:
    counts = summary(rows)
    return "\n".join(f"{subject}: {c['passed']} of {c['checked']} targets met" for subject, c in counts.items())


def write_report(path: Path, rows: list[Row], header: dict, plots: list[Path]) -> None:
    lines = ["# Motion-quality report", "",
             "Two subjects: **network** is the bare network (root motion, turning and phase from its own outputs; "
             "no command blending, drift correction, stand scaling, start priming, foot locks, catch-up steps, "
             "swing lift, IK or floor clamp); **runtime** is everything as shipped. Measures and targets: "
             "docs/EVALUATION.md.", ""]
    lines += [f"- {key}: {value}" for key, value in header.items()]
    lines += [f"- {line}" for line in summary_text(rows).splitlines()]
    lines += ["", report_table(rows), "", "## Plots", ""]
    lines += [f"![{plot.stem}]({plot.relative_to(path.parent).as_posix()})" for plot in plots]
    files.write_text(path, "\n".join(lines) + "\n")


def write_results(path: Path, rows: list[Row], extra: dict) -> None:
    counts = summary(rows)
    files.write_text(path, json.dumps({**extra, "rows": [row.as_dict() for row in rows],
                                      "passed": {s: c["passed"] for s, c in counts.items()},
                                      "checked": {s: c["checked"] for s, c in counts.items()}}, indent=1))


def plot_drive(path: Path, records: dict, contact_joints, floor) -> Path:
    """One PNG per drive: root path vs command, speed, foot heights above the capture's floor, phase;
    `records`: subject -> DriveRecord of the same drive."""
    from matplotlib.figure import Figure

    first = next(iter(records.values()))
    figure = Figure(figsize=(13, 8), dpi=80)
    axes = figure.subplots(2, 2)
    styles = {"network": dict(color="C1", ls="--"), "runtime": dict(color="C0", ls="-")}
    command_path = metrics.integrate_path(first.command_xz, first.dt, start_xz=first.root_xz[0])
    axes[0, 0].plot(command_path[:, 0], command_path[:, 1], ":", color="grey", label="commanded")
    axes[0, 1].plot(first.t, np.linalg.norm(first.command_xz, axis=-1), ":", color="grey", label="commanded")
    for subject, record in records.items():
        axes[0, 0].plot(record.root_xz[:, 0], record.root_xz[:, 1], label=subject, **styles[subject])
        axes[0, 1].plot(record.t, np.linalg.norm(record.root_velocity, axis=-1), label=subject, **styles[subject])
        axes[1, 1].plot(record.t, record.log["phase"], label=subject, **styles[subject])
    runtime = records.get("runtime", first)
    for k, (joint, label) in enumerate(zip(contact_joints, ("Foot_L", "Toes_L", "Foot_R", "Toes_R"))):
        axes[1, 0].plot(runtime.t, runtime.positions[:, joint, 1] - floor[k], color=f"C{k}", label=label)
    axes[1, 0].axhline(0.02, color="grey", lw=0.6, ls=":")
    axes[0, 0].set_aspect("equal", adjustable="datalim")
    axes[0, 0].set(title="root path (m)", xlabel="x", ylabel="z")
    axes[0, 1].set(title="speed (m/s)", xlabel="t (s)")
    axes[1, 0].set(title=f"{runtime.subject}: foot height above the capture's floor (m); 2 cm band", xlabel="t (s)")
    axes[1, 1].set(title="phase", xlabel="t (s)", ylim=(-0.05, 1.05))
    for axis in axes.flat:
        axis.legend(loc="best", fontsize="small")
    for start in first.drive.segment_starts()[1:-1]:
        for axis in (axes[0, 1], axes[1, 0], axes[1, 1]):
            axis.axvline(start, color="grey", lw=0.5)
    figure.suptitle(f"{first.drive.name}: {first.drive.description}")
    figure.subplots_adjust(left=0.06, right=0.98, bottom=0.07, top=0.9, wspace=0.18, hspace=0.3)
    files.write_figure(path, figure)
    return path


def plot_filmstrip(path: Path, records: dict, names, parents, times=None, frames: int = 8) -> Path:
    """The skeleton at `frames` moments (default spread over the drive) in the character's own frame
    (`body_frames`): from its left side (forward to the right, up) and from above (its left
    up the page... forward up), two rows per subject; the left side in orange, the floor in grey."""
    from matplotlib.figure import Figure

    from pfnn_core.evaluation.measures import body_joints
    from pfnn_core.skeleton import joint_side

    parents = np.asarray(parents)
    body = set(body_joints(names, parents).tolist())
    bones = [(j, int(p)) for j, p in enumerate(parents) if j in body and int(p) in body]
    colours = ["C1" if joint_side(names[j]) == "left" else "C0" for j in range(len(names))]
    first = next(iter(records.values()))
    times = np.linspace(0.0, first.t[-1], frames) if times is None else np.asarray(times, float)
    figure = Figure(figsize=(1.7 * len(times), 4.6 * len(records)), dpi=70)
    axes = np.asarray(figure.subplots(2 * len(records), len(times), squeeze=False))
    for row, (subject, record) in enumerate(records.items()):
        for column, time in enumerate(times):
            frame = min(int(round(time / record.dt)), len(record.t) - 1)
            origin, yaw = body_frames(record.positions[frame:frame + 1], names, parents)
            pose = to_body_frame(record.positions[frame:frame + 1], origin, yaw)[0]
            # side: forward (body z) to the right, up; top: forward up, the left (body +x) to the left
            for view, (horizontal, vertical, flip) in enumerate(((2, 1, 1.0), (0, 2, -1.0))):
                axis = axes[2 * row + view, column]
                for joint, parent in bones:
                    axis.plot([flip * pose[joint, horizontal], flip * pose[parent, horizontal]],
                              [pose[joint, vertical], pose[parent, vertical]], color=colours[joint], lw=1.2)
                if view == 0:
                    axis.axhline(0.0, color="grey", lw=0.8)
                    axis.set_xlim(-0.8, 0.8)
                    axis.set_ylim(-0.05, 1.85)
                else:
                    axis.set_xlim(-0.5, 0.5)
                    axis.set_ylim(-0.6, 0.6)
                axis.set_aspect("equal")
                axis.set_xticks([])
                axis.set_yticks([])
                if column == 0:
                    axis.set_ylabel(f"{subject}\n{'side' if view == 0 else 'top'}", fontsize="small")
                if row == 0 and view == 0:
                    axis.set_title(f"t = {time:.2f} s", fontsize="small")
    figure.suptitle(f"{first.drive.name} (character's own frame: side view faces right, top view faces up)")
    figure.subplots_adjust(left=0.04, right=0.99, bottom=0.01, top=0.93, wspace=0.05, hspace=0.05)
    files.write_figure(path, figure)
    return path
