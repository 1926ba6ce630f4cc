"""`pfnn-eval`: run the drive suite as both subjects, measure the body's motion, write the report.

    pfnn-eval [--model M [--model M2 ...]] --out DIR [--quick] [--data FOLDER] [--threads N]

`evaluate(checkpoint_path, out_dir, quick=False, bvh_dir=None) -> dict` does the same for code and tests.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from pfnn_core import files
from pfnn_core.data.labels import label_clips
from pfnn_core.data.statistics import motion_kind
from pfnn_core.evaluation import analysis, controller_rows, report, rollouts
from pfnn_core.evaluation.reference import (
    QUICK_CLIPS,
    clips_on_skeleton,
    held_out_clips,
    load_mocap,
    mocap_reference,
    reference_folder,
    spread,
)
from pfnn_core.evaluation.suite import SUBJECTS, ScriptedDrive, drive_suite, run_subject
from pfnn_core.jsonfile import read_json
from pfnn_core.motion import bvh
from pfnn_core.threads import add_threads_argument, set_thread_counts

DEFAULT_MODEL = Path(__file__).resolve().parents[2] / "assets" / "models" / "default.safetensors"
ROLLOUT_CLIPS = (2, 8)  # (quick, full) held-out clips the network is rolled out on
MOVING_KINDS = ("walk", "run", "back", "side")


def select_clips(paths, quick: bool) -> list[Path]:
    """All clips, or for --quick a few of every kind of motion (walk, run, back, side, stand, ...),
    spread over the styles."""
    if not quick or len(paths) <= QUICK_CLIPS:
        return list(paths)
    keys = [(motion_kind(label), label.style) for label in label_clips(paths)]
    kinds = sorted({kind for kind, _ in keys})
    chosen = []
    for kind in kinds:
        members = [i for i, key in enumerate(keys) if key[0] == kind]
        chosen += [members[i] for i in spread([keys[m] for m in members], max(2, QUICK_CLIPS // len(kinds)))]
    return [paths[i] for i in sorted(chosen)]


def model_styles(card, reference) -> list[str]:
    """The model's styles that the reference has mocap of, most minutes first."""
    names = [name for name in card.style_names if name in reference.database_styles]
    stats = card.style_stats
    return sorted(names, key=lambda name: -(stats[name].minutes if name in stats else 0.0))


def _suite(quick: bool, scripts, styles) -> list:
    """The built-in drives for these styles, or the drives of the given script files."""
    return drive_suite(quick, styles=styles) if not scripts else [drive_from_script(path) for path in scripts]


def _check_drive_names(drives, suite) -> None:
    unknown = sorted(set(drives or ()) - {d.name for d in suite})
    if unknown:
        raise ValueError(f"unknown drive {unknown[0]!r}; the suite has {', '.join(d.name for d in suite)}")


def evaluate(checkpoint_path, out_dir, quick: bool = False, bvh_dir=None, log=None, drives=None,
             scripts=None, physics=None) -> dict:
    """Run the suite on one checkpoint; write out_dir/report.md, results.json, plots/ and drives/.
    `drives`: names of the drives to run (default all); `scripts`: drive script files to run instead of
    the built-in suite (the body measures, and stance and settling after each stop, are taken on them);
    `physics` (PhysicsSettings or True): every drive also tracked by the simulated body (`physics.evaluation`).

    Returns {"rows": [Row], "summary": {subject: {passed, checked}}, "report", "results", "plots",
    "records": [DriveRecord], "reference": MocapReference, "table"}. ValueError when the reference
    folder has no clip of the model's skeleton."""
    from pfnn_core.models.registry import load_checkpoint

    say = log or (lambda message: None)
    started = time.perf_counter()
    checkpoint_path, out_dir = Path(checkpoint_path), Path(out_dir)
    (out_dir / "plots").mkdir(parents=True, exist_ok=True)
    checkpoint = load_checkpoint(checkpoint_path)
    card = checkpoint.card
    _check_drive_names(drives, _suite(quick, scripts, card.style_names))  # a typo is told before the mocap loads
    names, parents = card.names, np.asarray(card.skeleton["parents"], int)
    folder = reference_folder(card, bvh_dir)
    paths = clips_on_skeleton(bvh.find_files(folder), names) if folder.exists() else []
    if not paths:
        raise ValueError(f"{folder}: no BVH file on the model's skeleton ({len(names)} joints: "
                         f"{', '.join(names[:6])}, ...); pass --data FOLDER with clips of that skeleton")
    clips = load_mocap(select_clips(paths, quick))
    reference = mocap_reference(clips, names, parents, card)
    say(f"mocap reference: {len(clips)} clips from {folder} ({time.perf_counter() - started:.0f} s)")

    suite = _suite(quick, scripts, model_styles(card, reference))
    if drives:
        _check_drive_names(drives, suite)
        suite = [d for d in suite if d.name in drives]
    records = []
    for drive in suite:
        for subject in SUBJECTS:
            records.append(run_subject(drive, subject, checkpoint, out_dir / "drives" / drive.name))
    say(f"{len(suite)} drives x {len(SUBJECTS)} subjects ({time.perf_counter() - started:.0f} s)")

    held_out, note = held_out_clips(card, folder)
    held_out = clips_on_skeleton(held_out, names)
    count = ROLLOUT_CLIPS[0 if quick else 1]
    keys = [(label.style, motion_kind(label)) for label in label_clips(held_out)] if held_out else []
    candidates = [i for i, key in enumerate(keys) if key[1] in MOVING_KINDS + ("unknown",)]
    loaded = load_mocap([held_out[candidates[i]] for i in spread([keys[c] for c in candidates], 2 * count)])
    rolled = rollouts.held_out_rollouts(checkpoint, [c for c in loaded if c.kind in MOVING_KINDS], count)

    rows = []
    for subject in SUBJECTS:
        rows += analysis.suite_rows(records, reference, subject)
    for record in records:
        rows += analysis.drive_rows(record, reference)
    rows += rollouts.phase_rows(rolled, note)
    for subject in SUBJECTS:  # latency (counterfactual), determinism, acceleration noise, turning slip; timings
        rows += controller_rows.controller_rows(records, reference, checkpoint, subject) + analysis.timing_rows(records, subject)
    rows.sort(key=lambda row: SUBJECTS.index(row.subject))  # the network subject first

    plots = []
    for drive in suite:
        pair = {r.subject: r for r in records if r.drive is drive}
        plots.append(report.plot_drive(out_dir / "plots" / f"{drive.name}.png", pair, reference.contact_joints,
                                       reference.floor))
        plots.append(report.plot_filmstrip(out_dir / "plots" / f"{drive.name}_filmstrip.png", pair, names, parents,
                                           times=filmstrip_times(drive)))
    seconds = time.perf_counter() - started
    header = {"model": checkpoint_path, "suite": "quick" if quick else "full",
              "mocap reference": f"{len(clips)} clips from {folder}; floor levels {reference.floor_source}",
              "drives": ", ".join(f"{d.name} ({d.duration:.0f} s)" for d in suite),
              "held-out rollouts": f"{len(rolled)} clips ({note})", "wall time": f"{seconds:.0f} s"}
    report.write_report(out_dir / "report.md", rows, header, plots)
    report.write_results(out_dir / "results.json", rows, {"model": str(checkpoint_path), "quick": quick,
                                                          "wall_s": round(seconds, 1)})
    result = {"rows": rows, "summary": report.summary(rows), "report": out_dir / "report.md",
              "results": out_dir / "results.json", "plots": plots, "records": records, "reference": reference,
              "table": report.report_table(rows)}
    return result if not physics else {**result, **physics_evaluation(physics, records, reference, card, out_dir, say)}


def physics_evaluation(physics, records, reference, card, out_dir: Path, say) -> dict:
    """`evaluate`'s physics part (MuJoCo is only imported then): see `physics.evaluation.evaluate_physics`."""
    from pfnn_core.physics.evaluation import evaluate_physics

    return evaluate_physics(None if physics is True else physics, records, reference, card, out_dir, say)


def drive_from_script(path) -> ScriptedDrive:
    """A `pfnn-drive` script file as a drive of the evaluation (validated by the drive's own parser)."""
    from pfnn_core.drive import cli as drive_module

    script = drive_module.load_script(path)  # validated: errors name the file and the field
    return ScriptedDrive(script.name, tuple(read_json(path, "script")["segments"]), f"script {path}", from_script=True)


def filmstrip_times(drive) -> list[float]:
    """Moments worth looking at: just after each segment starts (changes, stops) and in steady parts."""
    starts = drive.segment_starts()
    times = []
    for start, end in zip(starts[:-1], starts[1:]):
        times += [start + 0.25 * (end - start), start + min(1.0, 0.6 * (end - start))]
    times.append(starts[-1] - 0.05)
    return sorted(set(round(t, 2) for t in times))[:12]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--ab" in argv or "--ab-results" in argv:  # the blind A/B page for people (pfnn_core/evaluation/ab_cli.py)
        from pfnn_core.evaluation import ab_cli

        return ab_cli.main(argv)
    parser = argparse.ArgumentParser(prog="pfnn-eval", description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", help="checkpoint (.safetensors; default the shipped model); "
                        "give it again for each model to compare: one report, a column per model and subject")
    parser.add_argument("--out", required=True, help="folder for report.md, results.json, plots/ and drives/")
    parser.add_argument("--quick", action="store_true", help="short drives and a small mocap reference")
    parser.add_argument("--data", default=None, help="BVH folder of the reference mocap (default: the folder the "
                        "model was trained on, else the bundled clips)")
    parser.add_argument("--drives", nargs="+", metavar="NAME", help="run only these drives of the suite")
    parser.add_argument("--scripts", nargs="+", metavar="JSON", help="run these pfnn-drive scripts instead of the "
                        "built-in suite (e.g. scripts/drives/tuning/*.json, the drives to tune settings on)")
    add_threads_argument(parser)  # a drive's ticks are small: a second thread only waits (BENCHMARKS.md)
    parser.add_argument("--physics", action="store_true", help="also track every drive with the simulated body "
                        "(MuJoCo) and report its measures beside the kinematic motion's (docs/PHYSICS.md)")
    args = parser.parse_args(argv)
    from pfnn_core.models.checkpoint import CheckpointError

    try:  # every pool: torch's, numpy's BLAS, OpenMP
        set_thread_counts(args.threads)
    except ValueError as error:
        print(f"pfnn-eval: {error}", file=sys.stderr)
        return 2
    models = args.model or [str(DEFAULT_MODEL)]
    options = dict(quick=args.quick, bvh_dir=Path(args.data) if args.data else None, drives=args.drives,
                   scripts=args.scripts, log=lambda message: print(f"pfnn-eval: {message}", file=sys.stderr),
                   physics=args.physics or None)
    try:
        if len(models) > 1:
            from pfnn_core.evaluation.compare import compare, summary_lines

            compared = compare(models, args.out, evaluate, **options)
            print("\n".join(summary_lines(compared["results"])) + "\n\n" + compared["table"])
            print(f"\nreport: {compared['report']}")
            return 0
        result = evaluate(models[0], args.out, **options)
    except (CheckpointError, FileNotFoundError, ValueError) as error:  # ScriptError is a ValueError
        print(f"pfnn-eval: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # a full disk, a read-only folder: each file is whole or as it was
        print(f"pfnn-eval: {files.explain(error)}", file=sys.stderr)
        return 1
    print(report.summary_text(result["rows"]))
    print()
    print(result["table"])
    print(f"\n{report.summary_text(result['rows'])}\nreport: {result['report']}")
    if "physics_table" in result:
        print(f"\n{result['physics_table']}\n{result['physics_summary']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
