"""The data inspector, ``pfnn-data inspect PATH [PATH...]``, and ``pfnn-data recover JOURNAL --out OUT.bvh``
(a recording rebuilt from the journal a crashed viewer left). The inspector makes one table row per BVH
file and warnings about files that would poison a training set (implausible speeds, mixed skeletons), with the same data
checks `pfnn-train` runs before training (``data_checks``: reference-pose first frames, clips too short to
window, missing or fragmented foot contacts, duplicate files, joints in another order, mixed frame rates).

``inspect_file(path) -> dict`` makes one row; ``format_table(rows) -> str`` prints any rows, including
columns other modules add to the dicts. Run it before training.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from pfnn_core import files
from pfnn_core.data import checks as data_checks
from pfnn_core.data.phase_report import contact_phase_summary, save_contact_phase_plots
from pfnn_core.features.contract import SIM_FPS
from pfnn_core.features.samples import MIN_CLIP_S
from pfnn_core.motion import bvh, journal
from pfnn_core.motion.bvh import BVHError, load
from pfnn_core.motion.gait_labels import gait_labels_at_sim_rate
from pfnn_core.skeleton import skeleton_difference, skeleton_only

UNIT_NAMES = {1.0: "m", 0.01: "cm", 0.0254: "in", 0.001: "mm"}
# Plausible mean ground speeds (m/s) by a word in the clip's file name.
SPEED_RANGES = {"run": (1.8, 6.0), "jog": (1.5, 5.0), "walk": (0.5, 2.5)}
MAX_HUMAN_SPEED = 8.0
MIN_STYLE_MINUTES = 2.0  # a style with less data than this gets a warning
BASE_COLUMNS = ("file", "frames", "frame_time", "duration_s", "joints", "channels", "units", "speed_mps")
_INTERNAL_KEYS = ("path", "warnings", "error", "skeleton", "findings", "digest", "fps", "style", "content")


def mean_ground_speed(motion) -> float:
    """Mean horizontal speed (m/s for a motion loaded in metres) of the hips projected on the ground."""
    if motion.num_frames < 2:
        return 0.0
    from pfnn_core.skeleton import hips_joint

    positions = motion.global_positions()
    hips = positions[:, hips_joint(motion.names, motion.parents, positions)]
    step = np.linalg.norm(np.diff(hips[:, [0, 2]], axis=0), axis=-1)
    return float(step.mean() / motion.frame_time)


def channels_summary(channels: list[list[str]]) -> str:
    counts: dict[int, int] = {}
    for chans in channels:
        counts[len(chans)] = counts.get(len(chans), 0) + 1
    return ", ".join(f"{n}ch x{count}" for n, count in sorted(counts.items(), reverse=True))


def speed_warning(name: str, speed: float) -> str | None:
    if speed > MAX_HUMAN_SPEED:
        return f"mean speed {speed:.2f} m/s is faster than any human: wrong Frame Time or units?"
    lowered = name.lower()
    for word, (low, high) in SPEED_RANGES.items():
        if word in lowered:
            if not low <= speed <= high:
                return (f"mean speed {speed:.2f} m/s is implausible for a '{word}' clip (expected {low}-{high}): "
                        f"wrong Frame Time or units?")
            return None
    return None


def inspect_file(path, extra_columns=()) -> dict:
    """One table row for a BVH file; a file that fails to load gives a row with 'error' set.

    ``extra_columns`` are functions ``motion -> dict`` whose items are added to the row (contact and
    phase summaries, for instance); ``format_table`` shows them after the base columns.
    """

    path = Path(path)
    row: dict = {"path": str(path), "file": path.name, "warnings": [], "findings": []}
    try:
        motion = load(path)
        row["digest"] = data_checks.content_digest(bvh.read_bytes(path))
    except (BVHError, OSError) as exc:
        row["error"] = str(exc)
        return row
    speed = mean_ground_speed(motion)
    row.update({
        "frames": motion.num_frames,
        "frame_time": motion.frame_time,
        "duration_s": round(motion.duration, 3),
        "joints": motion.num_joints,
        "channels": channels_summary(motion.channels),
        "units": UNIT_NAMES.get(motion.scale, f"x{motion.scale:g}"),
        "speed_mps": round(speed, 3),
        "skeleton": skeleton_only(motion),
        "fps": motion.fps,
        "findings": clip_findings(path, motion),
    })
    warning = speed_warning(path.stem, speed)
    if warning:
        row["warnings"].append(warning)
    for columns in extra_columns:
        row.update(columns(motion))
    return row


def clip_findings(path, motion) -> list:
    """The data checks `pfnn-train` runs on one clip (`data_checks`), on the clip as loaded."""

    findings = []
    reference_pose = data_checks.reference_pose_finding(path, motion.global_positions())
    too_short = data_checks.too_short_finding(path, motion.duration, MIN_CLIP_S)
    findings += [finding for finding in (reference_pose, too_short) if finding is not None]
    if too_short is None:
        try:
            labels = gait_labels_at_sim_rate(motion)
        except ValueError as error:
            return findings + [data_checks.Finding(str(path), "warning", f"cannot label foot contacts ({error})")]
        joint_names = [motion.names[j] for j in labels.contact_joints]
        findings += data_checks.contact_findings(path, labels.contacts, SIM_FPS, joint_names)
    return findings


def folder_warnings(rows: list[dict]) -> list[str]:
    """Mixed skeletons among the loaded rows of one folder, by training's rule (`skeleton_difference`,
    after joints in another order are reordered, as training does, and only noted)."""

    loaded = [r for r in rows if "error" not in r]
    if len(loaded) < 2:
        return []
    messages = []
    reference = loaded[0]
    different, reordered = [], []
    for r in loaded[1:]:
        skeleton = data_checks.reorder_joints(r["skeleton"], reference["skeleton"].names)
        if skeleton_difference(reference["skeleton"], skeleton):
            different.append(r["file"])
        elif skeleton is not r["skeleton"]:
            reordered.append(r["file"])
    if different:
        shown = ", ".join(different[:5]) + (" ..." if len(different) > 5 else "")
        messages.append(f"mixed skeletons: {len(different)} file(s) differ from {reference['file']} "
                        f"in joint names or bone offsets: {shown}")
    for name in reordered:
        messages.append(f"{name}: same joints as {reference['file']} in another order; reordered for training")
    return messages


def set_findings(rows: list[dict]) -> list:
    """The checks over every inspected file together: duplicate files and mixed frame rates."""
    loaded = [r for r in rows if "error" not in r]
    return (data_checks.duplicate_findings({r["path"]: r["digest"] for r in loaded})
            + data_checks.frame_rate_findings({r["path"]: r["fps"] for r in loaded}, where="inspected files"))


def format_table(rows: list[dict]) -> str:
    """A plain-text table: the base columns, then any extra keys found in the rows, in order of appearance."""
    columns = list(BASE_COLUMNS)
    for row in rows:
        for key in row:
            if key not in columns and key not in _INTERNAL_KEYS:
                columns.append(key)

    def cell(row, key):
        if key not in row:
            return "-"
        value = row[key]
        if isinstance(value, float):
            return f"{value:.4g}"
        return str(value)

    table = [columns] + [[cell(r, c) if "error" not in r or c == "file" else ("FAILED" if c == "frames" else "")
                          for c in columns] for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
    lines = ["  ".join(text.ljust(width) for text, width in zip(line, widths)).rstrip() for line in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def collect_files(paths: list[str]) -> list[Path]:
    files = []
    for p in map(Path, paths):
        if p.is_dir():
            files.extend(bvh.find_files(p))
        else:
            files.append(p)
    return files


def style_summary(rows: list[dict], rule=None) -> tuple[str, list[str]]:
    """(table of minutes per style and content, warnings about styles with little data) of the loaded
    rows, labelled by `rule` (`pfnn_core.labels`)."""
    from pfnn_core.data.labels import label_clips

    loaded = [r for r in rows if "error" not in r]
    if not loaded:
        return "", []
    labels = label_clips([r["path"] for r in loaded], rule)
    minutes: dict = {}
    for row, label in zip(loaded, labels):
        row["style"], row["content"] = label.style, label.content
        per_style = minutes.setdefault(label.style, {})
        per_style[label.content] = per_style.get(label.content, 0.0) + row["duration_s"] / 60.0
    contents = sorted({c for per_style in minutes.values() for c in per_style})
    table = [{"style": style, **{c: f"{per_style.get(c, 0.0):.1f}" for c in contents},
              "total_min": f"{sum(per_style.values()):.1f}"} for style, per_style in sorted(minutes.items())]
    header = ["style", *contents, "total_min"]
    widths = [max(len(h), *(len(str(row[h])) for row in table)) for h in header]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(str(row[h]).ljust(w) for h, w in zip(header, widths)) for row in table]
    warnings = []
    if len(minutes) > 1:  # one style is no style input: nothing to be short of
        warnings = [f"style '{style}' has only {sum(per_style.values()):.1f} min of data "
                    f"(< {MIN_STYLE_MINUTES:g}): a model will know it poorly"
                    for style, per_style in sorted(minutes.items()) if sum(per_style.values()) < MIN_STYLE_MINUTES]
        for content in contents:
            missing = [style for style, per_style in sorted(minutes.items()) if content not in per_style]
            if missing and len(missing) < len(minutes):
                warnings.append(f"content '{content}' is missing in style(s) {', '.join(missing)}")
    return "\n".join(lines), warnings


def run_inspect(paths: list[str], out=None, extra_columns=(), label_rule=None) -> int:
    """Print the tables and warnings; 1 when any file failed to load or has an error finding (or none was
    found), else 0."""
    out = sys.stdout if out is None else out
    files = collect_files(paths)
    if not files:
        print("no .bvh files found", file=out)
        return 1
    by_folder: dict[Path, list[dict]] = {}
    for f in files:
        by_folder.setdefault(f.parent, []).append(inspect_file(f, extra_columns))
    failed = 0
    for folder, rows in by_folder.items():
        print(f"\n{folder}", file=out)
        print(format_table(rows), file=out)
        notes = [f"WARNING {r['file']}: {w}" for r in rows for w in r["warnings"]]
        notes += [f"WARNING {folder}: {w}" for w in folder_warnings(rows)]
        notes += [str(finding) for r in rows for finding in r["findings"]]
        errors = [f"ERROR {r['error']}" for r in rows if "error" in r]
        failed += len(errors) + sum(f.severity == "error" for r in rows for f in r["findings"])
        for line in notes + errors:
            print(line, file=out)
    everything = [row for rows in by_folder.values() for row in rows]
    for finding in set_findings(everything):
        print(str(finding), file=out)
    table, warnings = style_summary(everything, label_rule)
    if table:
        print("\nminutes per style and content", file=out)
        print(table, file=out)
        for line in warnings:
            print(f"WARNING {line}", file=out)
    print(f"\n{len(everything)} file(s), {failed} failed to load or cannot be trained on", file=out)
    return 1 if failed else 0


def contact_phase_columns(plots_dir=None):
    """An extra-column function: contact and phase summary per clip (and its plot when `plots_dir`)."""

    def columns(motion) -> dict:
        summary = contact_phase_summary(motion)
        if plots_dir is not None:
            Path(plots_dir).mkdir(parents=True, exist_ok=True)
            save_contact_phase_plots(motion, str(Path(plots_dir) / Path(motion.source).stem))
        median = summary["cycle_frames_median"]
        return {
            "phase_from": summary["phase_method"],
            "cycles": summary["cycles"],
            "cycle_frames": "-" if median is None else f"{median:.0f}",
            "toe_contact": f"{summary['toe_contact_share']:.0%}",
            "standing": f"{summary['standing_share']:.0%}",
        }

    return columns


def run_recover(journal_path, out, keep: bool = False) -> int:
    """`pfnn-data recover`: the journal's frames to `out` as BVH; 2 for an unreadable journal or a bad
    output name, 1 when the BVH cannot be written (the journal is then kept)."""
    if not bvh.is_bvh_path(out):
        print(f"pfnn-data: {out}: the output must be a .bvh or .bvh.gz file", file=sys.stderr)
        return 2
    try:
        contents = journal.recover(journal_path, out)
    except journal.JournalError as error:
        print(f"pfnn-data: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"pfnn-data: {files.explain(error)}; the journal {journal_path} is kept", file=sys.stderr)
        return 1
    motion = contents.motion
    torn = f"; {contents.ignored_bytes} bytes of a torn last record ignored" if contents.ignored_bytes else ""
    print(f"recovered {motion.num_frames} frames ({motion.num_frames * motion.frame_time:.1f} s, recording started "
          f"{contents.started or 'at an unknown time'}) to {out}{torn}")
    if not keep:
        journal.discard(journal_path)
        print(f"removed the journal {journal_path}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="pfnn-data", description="Check BVH motion data before training.")
    commands = parser.add_subparsers(dest="command", required=True)
    inspect_cmd = commands.add_parser("inspect", help="table of BVH files with warnings about suspicious ones")
    inspect_cmd.add_argument("paths", nargs="+", help="BVH files or folders")
    inspect_cmd.add_argument("--contacts", action="store_true",
                             help="add foot-contact and phase columns (cycle length at 60 Hz, contact shares)")
    inspect_cmd.add_argument("--plots", metavar="DIR",
                             help="save foot heights with contact bands, phase and phase histogram per file as PNG")
    inspect_cmd.add_argument("--labels", help="labelling rule: 'filename' (default: {set}_{content}_{style}_{id}), "
                             "'folder' (one folder per style) or a JSON/CSV table of file -> style, content")
    recover_cmd = commands.add_parser("recover", help="rebuild the BVH of a recording from the journal a crashed "
                                      "viewer left (see pfnn_core.motion.journal)")
    recover_cmd.add_argument("journal", help="the recording journal (.pfnn-journal)")
    recover_cmd.add_argument("--out", required=True, help="the BVH file to write (.bvh or .bvh.gz)")
    recover_cmd.add_argument("--keep", action="store_true", help="keep the journal after the BVH is written "
                             "(by default it is removed then)")
    args = parser.parse_args(argv)
    if args.command == "recover":
        return run_recover(args.journal, args.out, keep=args.keep)
    from pfnn_core.data.labels import LabelError, LabelRule

    extra = (contact_phase_columns(args.plots),) if (args.contacts or args.plots) else ()
    try:
        return run_inspect(args.paths, extra_columns=extra, label_rule=LabelRule.parse(args.labels))
    except LabelError as error:
        print(f"pfnn-data: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
