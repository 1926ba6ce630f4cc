"""Motion-matching benchmark, side by side in one run (medians of timed calls after a warm-up; wall-clock
ms with this process's CPU ms in brackets: on a shared machine the CPU figure is what a quiet one shows):

  build   `pfnn-train assets/bvh --kind matching`: wall time and the peak memory of its largest process
          (aims: under 60 s, under 600 MB)
  search  one search at batch 1 in the character's style (its KD-tree) against brute force over the same
          rows (the matrix-vector form, norms precomputed) and a KD-tree over 30k of them (aim: < 0.3 ms)
  tick    the full tick at batch 1 with the matching database against the PFNN's, on a walk that keeps
          turning (searches and switches happen); median, mean and 95th percentile (aim: <= the PFNN's)
  crowd   256 characters walking and searching every 0.1 s, matching against the PFNN (aim: <= the PFNN's)

    python benchmarks/bench_matching.py [--database M.safetensors] [--model PFNN.safetensors]
                                        [--sections build,search,tick,crowd] [--ticks 600] [--threads 1]

Without --database the shipped assets/models/matching.safetensors is used (the build section makes one
in a temporary folder either way).
"""
from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from scipy.spatial import cKDTree  # noqa: E402

from pfnn_core.models.registry import load_checkpoint  # noqa: E402
from pfnn_core.runtime.character import Character  # noqa: E402
from pfnn_core.runtime.command import command_from_world_move  # noqa: E402
from pfnn_core.threads import set_thread_counts  # noqa: E402

DT = 1.0 / 60.0
DATABASE = ROOT / "assets" / "models" / "matching.safetensors"
PFNN = ROOT / "assets" / "models" / "default.safetensors"


def timed(function, calls: int) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds of each of `calls` calls, after a warm-up."""
    for _ in range(max(3, calls // 10)):
        function()
    wall, cpu = [], []
    for _ in range(calls):
        start, start_cpu = time.perf_counter(), time.process_time()
        function()
        cpu.append((time.process_time() - start_cpu) * 1000.0)
        wall.append((time.perf_counter() - start) * 1000.0)
    return wall, cpu


def median(values) -> float:
    return statistics.median(values)


def section_build(threads: int) -> None:
    print("\n### Building the database of all bundled data (`pfnn-train assets/bvh --kind matching`)\n")
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "mm.safetensors"
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        start = time.perf_counter()
        result = subprocess.run([sys.executable, "-m", "pfnn_core.training.cli", str(ROOT / "assets" / "bvh"), "--kind",
                                 "matching", "--out", str(out), "--threads", str(threads)], cwd=ROOT, capture_output=True,
                                text=True)
        wall = time.perf_counter() - start
        peak = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before) / 1024.0
        if result.returncode != 0:
            raise RuntimeError(f"pfnn-train failed: {result.stderr[-800:]}")
        size = out.stat().st_size / 1e6
    line = next((text for text in result.stderr.splitlines() if "matching database" in text), "")
    print("| wall time | peak memory of its largest process | file | aims |")
    print("|---|---|---|---|")
    print(f"| {wall:.1f} s | {peak:.0f} MB | {size:.1f} MB | < 60 s: {'met' if wall < 60 else 'not met'}; "
          f"< 600 MB: {'met' if peak < 600 else 'not met'} |")
    print(f"\n{line}")


def section_search(database: Path, calls: int) -> None:
    checkpoint = load_checkpoint(database)
    character = Character(checkpoint, settle_ticks=1)
    model = character.model
    index = model.index
    style = np.zeros((1, model.num_styles))
    style[0, model.style_names.index(model.card.default_style)] = 1.0
    rows = index.style_rows(int(np.argmax(style[0])))
    points = index.normalised(model.database.features[rows])
    norms = np.einsum("nd,nd->n", points, points)
    rng = np.random.default_rng(0)
    queries = model.database.features[rng.choice(rows, calls)] + rng.normal(0, 0.05, (calls, points.shape[1]))
    normalised = index.normalised(queries)
    counter = iter(range(10 ** 9))

    def search():
        k = next(counter) % calls
        index.search(queries[k:k + 1], style)

    def brute():
        q = normalised[next(counter) % calls]
        np.argmin(norms - 2.0 * (points @ q))

    small = cKDTree(points[rng.choice(len(points), min(30000, len(points)), replace=False)])
    print(f"\n### One search at batch 1 ({len(rows):,} rows of the default style '{model.card.default_style}', "
          f"27 features; ms)\n")
    print("| search | wall | CPU | / search |")
    print("|---|---|---|---|")
    results = [("`MatchingIndex.search` (KD-tree, with its Python)", search),
               ("brute force, matrix-vector form", brute),
               ("KD-tree query alone over 30k rows", lambda: small.query(normalised[next(counter) % calls], k=1))]
    base = None
    for label, function in results:
        wall, cpu = timed(function, calls)
        base = base or median(cpu)
        print(f"| {label} | {median(wall):.3f} | {median(cpu):.3f} | {median(cpu) / base:.2f} |", flush=True)
    print("\naim: one search under 0.3 ms")


def turning_command(character, tick: int):
    """Full stick, the direction turning a quarter circle every 2 s, run for a second in every eight."""
    angle = 0.25 * np.pi * tick * DT
    return command_from_world_move(np.array([np.sin(angle), np.cos(angle)]), tick % 480 < 60, character.settings)


def tick_stats(path: Path, batch: int, ticks: int) -> tuple[float, float, float, float]:
    """(median wall, median CPU, mean CPU, p95 CPU) ms of the batched tick."""
    character = Character(load_checkpoint(path), batch=batch,
                          positions=np.stack([np.arange(batch) * 2.0, np.zeros(batch)], axis=-1))
    counter = iter(range(10 ** 9))

    def tick():
        character.tick(turning_command(character, next(counter)), DT)

    wall, cpu = timed(tick, ticks)
    return median(wall), median(cpu), float(np.mean(cpu)), float(np.percentile(cpu, 95))


def section_ticks(database: Path, pfnn: Path, batch: int, ticks: int, title: str, aim: str) -> None:
    print(f"\n### {title} (ms; the median tick, its CPU ms, the mean and 95th percentile of the CPU ms)\n")
    print("| model | B | tick wall | tick CPU | mean CPU | p95 CPU | mean / PFNN's mean |")
    print("|---|---|---|---|---|---|---|")
    figures = {label: tick_stats(path, batch, ticks) for label, path in (("PFNN (default)", pfnn),
                                                                          ("motion matching", database))}
    pfnn_mean = figures["PFNN (default)"][2]
    for label, (wall, cpu, mean, p95) in figures.items():
        print(f"| {label} | {batch} | {wall:.3f} | {cpu:.3f} | {mean:.3f} | {p95:.3f} | {mean / pfnn_mean:.2f} |",
              flush=True)
    print(f"\naim: {aim}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", default=str(DATABASE))
    parser.add_argument("--model", default=str(PFNN), help="the PFNN the ticks are set beside")
    parser.add_argument("--sections", default="build,search,tick,crowd")
    parser.add_argument("--ticks", type=int, default=600)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    set_thread_counts(args.threads)
    sections = args.sections.split(",")
    database = Path(args.database)
    if "build" in sections:
        section_build(args.threads)
    if "search" in sections:
        section_search(database, 2000)
    if "tick" in sections:
        section_ticks(database, Path(args.model), 1, args.ticks, "The tick at batch 1", "matching <= the PFNN's tick")
    if "crowd" in sections:
        section_ticks(database, Path(args.model), 256, max(60, args.ticks // 5), "A crowd of 256",
                      "matching within the PFNN crowd's tick")
    return 0


if __name__ == "__main__":
    sys.exit(main())
