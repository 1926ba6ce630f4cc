"""`pfnn-eval --ab A B --out DIR` (a blind A/B page of the same drives with two models) and
`pfnn-eval --ab-results answers.json` (un-blind the answers into a table).

    pfnn-eval --ab A.safetensors B.safetensors --out DIR [--quick] [--drives NAME...|--scripts S.json...]
              [--seed N] [--size 640x360] [--fps 30] [--view mesh] [--jobs 2]
    pfnn-eval --ab-results answers.json [more.json ...] [--key DIR/key.json]

The page's drives are the evaluation suite's (`suite.drive_suite`: a steady walk per style both
models know), run as the shipped runtime (default settings). The videos are rendered by the viewer
offscreen, one process per model (`python -m app.ab`, as this package never imports the viewer), the
two at once on two or more cores. DIR gets `index.html` (the page), `videos/`, and `key.json` (which
model is on which side: keep it from the raters).
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pfnn_core import files
from pfnn_core.evaluation.ab_key import MODELS, make_key, read_key, write_key
from pfnn_core.evaluation.ab_page import write_page
from pfnn_core.evaluation.ab_results import read_answers, results_table, unblind
from pfnn_core.evaluation.suite import drive_suite

REPOSITORY = Path(__file__).resolve().parents[2]  # where `python -m app.ab` finds the viewer
RENDER_MODULE = "app.ab"


def shared_styles(card_a, card_b) -> list[str]:
    """The styles both models know, most minutes of model A's data first."""
    stats = card_a.style_stats
    names = [name for name in card_a.style_names if name in card_b.style_names]
    return sorted(names, key=lambda name: -(stats[name].minutes if name in stats else 0.0))


def script_drives(paths) -> list[dict]:
    """`pfnn-drive` script files as the page's drives (validated by the drive's parser; names made unique)."""
    from pfnn_core.drive.cli import load_script
    from pfnn_core.jsonfile import read_json

    drives, names = [], set()
    for path in paths:
        script = load_script(path)  # ScriptError (a ValueError) naming the file and the field
        name, count = script.name, 2
        while name in names:
            name, count = f"{script.name}_{count}", count + 1
        names.add(name)
        drives.append({"name": name, "segments": read_json(path, "script")["segments"], "description": f"script {path}"})
    return drives


def page_drives(cards, quick: bool = False, drives=None, scripts=None) -> list[dict]:
    """[{"name", "segments", "description"}]: the suite's drives (or the scripts), `drives` picking some."""
    if scripts:
        chosen = script_drives(scripts)
    else:
        chosen = [{"name": d.name, "segments": [dict(s) for s in d.segments], "description": d.description}
                  for d in drive_suite(quick, styles=shared_styles(*cards))]
    if drives:
        unknown = sorted(set(drives) - {d["name"] for d in chosen})
        if unknown:
            raise ValueError(f"unknown drive {unknown[0]!r}; the page's drives are {', '.join(d['name'] for d in chosen)}")
        chosen = [d for d in chosen if d["name"] in drives]
    return chosen


def render_jobs(key, drives, out_dir: Path, options: dict) -> dict:
    """{model: the `app.ab` job rendering every drive with it into the side the key gave it}."""
    scripts = {d["name"]: {"name": d["name"], "segments": d["segments"]} for d in drives}
    return {model: {**options, "model": str(Path(key.models[model]).resolve()),
                    "videos": [{"script": scripts[pair.drive], "path": str(out_dir / pair.video(pair.side_of(model)))}
                               for pair in key.pairs]}
            for model in MODELS}


def run_renders(jobs: dict, at_once: int, say) -> None:
    """Run the render processes, `at_once` at a time, saying how many videos are done; RuntimeError with a
    process's last lines when one fails. The job files (they hold the key's mapping) live in a temporary
    folder removed afterwards."""
    total = sum(len(job["videos"]) for job in jobs.values())
    with tempfile.TemporaryDirectory(prefix="pfnn-ab-") as folder:
        waiting, running, logs, reported = list(jobs.items()), [], [], 0
        try:
            while waiting or running:
                while waiting and len(running) < max(1, at_once):
                    model, job = waiting.pop(0)
                    job_path, log_path = Path(folder) / f"{model}.json", Path(folder) / f"{model}.log"
                    job_path.write_text(json.dumps(job), encoding="utf-8")
                    logs.append(log_path)
                    with open(log_path, "w", encoding="utf-8") as log:
                        running.append((subprocess.Popen([sys.executable, "-m", RENDER_MODULE, str(job_path)],
                                                         cwd=REPOSITORY, stdout=log, stderr=subprocess.STDOUT), log_path))
                time.sleep(0.5)
                for process, log_path in [entry for entry in running if entry[0].poll() is not None]:
                    running.remove((process, log_path))
                    if process.returncode != 0:
                        lines = log_path.read_text(encoding="utf-8", errors="replace").splitlines()
                        raise RuntimeError("rendering failed:\n" + "\n".join(lines[-15:]))
                done = sum(log.read_text(encoding="utf-8", errors="replace").count(" frames in ") for log in logs)
                if done != reported:
                    reported = done
                    say(f"rendered {done} of {total} videos")
        finally:
            for process, _ in running:
                process.kill()
                process.wait()


def make_page(models, out_dir, quick: bool = False, drives=None, scripts=None, seed=None, size=(640, 360),
              fps: int = 30, view: str = "mesh", at_once: int = 2, log=None) -> dict:
    """Render the page's drives with both models and write out_dir/index.html, videos/ and key.json.
    Returns {"page", "key", "videos": [paths], "drives", "seconds"}."""
    from pfnn_core.models.registry import load_checkpoint

    say = log or (lambda message: None)
    started = time.perf_counter()
    out_dir = Path(out_dir)
    models = {name: Path(path).resolve() for name, path in zip(MODELS, models)}
    cards = [load_checkpoint(models[name]).card for name in MODELS]  # CheckpointError when unusable
    chosen = page_drives(cards, quick, drives, scripts)
    seed = secrets.randbits(32) if seed is None else int(seed)
    key = make_key([d["name"] for d in chosen], models, seed)
    (out_dir / "videos").mkdir(parents=True, exist_ok=True)
    options = {"width": int(size[0]), "height": int(size[1]), "fps": int(fps), "view": view, "threads": 1}
    say(f"{len(chosen)} drives x 2 models at {size[0]}x{size[1]}, {fps} fps")
    run_renders(render_jobs(key, chosen, out_dir, options), at_once, say)
    key_path = write_key(out_dir / "key.json", key)
    page = write_page(out_dir / "index.html", key, {d["name"]: d["description"] for d in chosen})
    videos = [out_dir / pair.video(side) for pair in key.pairs for side in ("left", "right")]
    return {"page": page, "key": key_path, "videos": videos, "drives": chosen,
            "seconds": time.perf_counter() - started}


def parse_size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT, e.g. 640x360, got {text!r}") from None
    if width < 16 or height < 16:
        raise argparse.ArgumentTypeError(f"a video of {text} is too small to judge")
    return width, height


def parse_args(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pfnn-eval", description="The blind A/B page of two models, and its answers.")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--ab", nargs=2, metavar=("A", "B"), help="the two checkpoints to film the same drives with")
    action.add_argument("--ab-results", nargs="+", metavar="ANSWERS", help="answers files the page saved, to un-blind")
    parser.add_argument("--out", help="folder for index.html, videos/ and key.json (--ab)")
    parser.add_argument("--key", help="the page's key.json (--ab-results; default: the page folder the answers name)")
    parser.add_argument("--quick", action="store_true", help="the suite's short drives")
    parser.add_argument("--drives", nargs="+", metavar="NAME", help="only these drives of the suite")
    parser.add_argument("--scripts", nargs="+", metavar="JSON", help="these pfnn-drive scripts instead of the suite")
    parser.add_argument("--seed", type=int, help="seed of the sides drawn per drive (default: a fresh one, kept in the key)")
    parser.add_argument("--size", type=parse_size, default=(640, 360), help="video size WIDTHxHEIGHT (default 640x360)")
    parser.add_argument("--fps", type=int, choices=(15, 20, 30, 60), default=30, help="video frame rate (default 30)")
    parser.add_argument("--view", choices=("mesh", "capsules", "skeleton"), default="mesh", help="how the body is drawn")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="render processes at once (1 or 2)")
    args = parser.parse_args(argv)
    if args.ab and not args.out:
        parser.error("--ab needs --out DIR")
    return args


def show_results(answer_paths, key_path=None) -> str:
    """The un-blinded table of one or more answers files (a column per file)."""
    raters, key = {}, None
    for path in answer_paths:
        answers = read_answers(path)
        if key is None:
            key = read_key(key_path or default_key_path(answers, path))
        name, count = Path(path).stem, 2
        while name in raters:
            name, count = f"{Path(path).stem}_{count}", count + 1
        raters[name] = unblind(answers, key, str(path))
    models = ", ".join(f"{model} = {key.models[model]}" for model in MODELS)
    return f"{models}\n\n{results_table(raters, key)}"


def default_key_path(answers: dict, answers_path) -> Path:
    """key.json of the page folder the answers name, else beside the answers file."""
    folder = answers.get("folder")
    candidates = ([Path(folder) / "key.json"] if isinstance(folder, str) else []) + [Path(answers_path).parent / "key.json"]
    found = next((path for path in candidates if path.is_file()), None)
    if found is None:
        raise ValueError(f"{answers_path}: no key.json beside it; pass --key DIR/key.json (the page's folder)")
    return found


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    from pfnn_core.models.checkpoint import CheckpointError

    say = lambda message: print(f"pfnn-eval: {message}", file=sys.stderr)
    try:
        if args.ab_results:
            print(show_results(args.ab_results, args.key))
            return 0
        made = make_page(args.ab, args.out, quick=args.quick, drives=args.drives, scripts=args.scripts, seed=args.seed,
                         size=args.size, fps=args.fps, view=args.view, at_once=args.jobs, log=say)
    except (CheckpointError, FileNotFoundError, ValueError, RuntimeError) as error:
        print(f"pfnn-eval: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"pfnn-eval: {files.explain(error)}", file=sys.stderr)
        return 1
    print(f"page: {made['page']} ({len(made['drives'])} drives, {made['seconds']:.0f} s)\n"
          f"key: {made['key']} (which model is on which side: keep it from the raters; "
          f"pfnn-eval --ab-results answers.json --key {made['key']} un-blinds their answers)")
    return 0
