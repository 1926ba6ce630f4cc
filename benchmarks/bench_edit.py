"""Clip editor: time to edit and export a 60 s sequence of 20 pieces (aim < 2 s), side by side with the
file input/output alone (loading the 20 clips, writing the result), and the seam quality of random
walk->walk and walk->run joins of the bundled clips against the issue's targets.

Usage: python benchmarks/bench_edit.py [--runs 3] [--joins 20] [--seed 0]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pfnn_core import edit  # noqa: E402
from pfnn_core.data.statistics import floor_heights
from pfnn_core.evaluation import measures  # noqa: E402
from pfnn_core.motion import bvh

DATA = ROOT / "assets" / "bvh" / "bandai-namco-ds2"
FPS = 60.0


def sixty_seconds_of_twenty_pieces(kind: str) -> edit.EditList:
    """3 s from each of 20 walk clips (walk, turns), alternating mirrored."""
    clips = sorted(DATA.glob("dataset-2_walk_normal_*.bvh.gz"))[:20]
    pieces = [{"file": str(path), "start": 0.5, "end": 3.55, "mirror": bool(index % 2)} for index, path in enumerate(clips)]
    return edit.parse_edit_list({"name": "sixty", "fps": FPS, "pieces": pieces,
                                 "transition": {"kind": kind, "seconds": 0.3}, "match": "phase"})


def best_of(runs: int, fn) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def timing(runs: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "sixty.bvh"
        for kind in edit.KINDS:
            edits = sixty_seconds_of_twenty_pieces(kind)
            # a fresh cache each run: the files are read and labelled every time
            total = best_of(runs, lambda: edit.export(edits, out))
            result = edit.build(edits)

            def io_alone():
                for piece in edits.pieces:
                    bvh.load(piece.file)
                bvh.save(result.motion, out)

            io = best_of(runs, io_alone)
            print(f"{kind:12s} {result.motion.duration:5.1f} s, {len(edits.pieces)} pieces: edit + export "
                  f"{total:.2f} s (aim < 2 s)   load 20 clips + save: {io:.2f} s   ratio {total / io:.2f}")


def walking_figure() -> float:
    """The mocap's walking skating with the editor's (the evaluation's) measure and floor."""
    clips = [edit.prepare_clip(bvh.load(path), FPS) for path in sorted(DATA.glob("dataset-2_walk_normal_*.bvh.gz"))]
    feet = clips[0].labels.contact_joints
    floor = floor_heights([(c.labels.global_positions[:, feet, 1], c.labels.contacts) for c in clips])
    return measures.pool_skating([measures.foot_skating(c.labels.global_positions[:, feet], floor, 1.0 / FPS)
                                  for c in clips]).mean()


def quality(joins: int, seed: int) -> None:
    walks = sorted(DATA.glob("dataset-2_walk_normal_*.bvh.gz"))
    runs = sorted(DATA.glob("dataset-2_run_normal_*.bvh.gz"))
    figure = walking_figure()
    print(f"mocap walking figure (all {len(walks)} normal walks, {FPS:g} fps): {figure:.3f} m/s; "
          f"target: seam <= {1.5 * figure:.3f}")
    print("join        transition   seams  seam/walk median  max  over 1.5 (and over the source at the cut)  "
          "seam/source-at-cut median  root steps over the clips' largest  pops")
    rng = np.random.default_rng(seed)
    cache = {}
    for target, pool in (("walk->walk", walks), ("walk->run", runs)):
        for kind in edit.KINDS:
            ratios, against_source, over_steps, pops = [], [], 0, 0
            for _ in range(joins):
                pieces = [{"file": str(walks[rng.integers(len(walks))]), "start": 0.5, "end": float(rng.uniform(2.5, 5.0))},
                          {"file": str(pool[rng.integers(len(pool))]), "start": float(rng.uniform(0.2, 0.8)),
                           "mirror": bool(rng.integers(2))}]
                result = edit.build(edit.parse_edit_list({"pieces": pieces, "transition": {"kind": kind, "seconds": 0.3}}),
                                    cache)
                join = result.joins[0]
                ratios.append(join.seam_skating / figure)
                against_source.append(join.seam_skating / join.source_skating)
                over_steps += result.root_step_max > result.source_root_step_max + 1e-9
                pops += result.pops
            ratios, against_source = np.array(ratios), np.array(against_source)
            over = ratios > 1.5
            print(f"{target:11s} {kind:12s} {joins:5d}  {np.median(ratios):16.2f}  {ratios.max():.2f}  "
                  f"{int(over.sum()):8d} ({int((over & (against_source > 1.05)).sum())}){'':32s}"
                  f"{np.median(against_source):10.2f}  {over_steps:35d}  {pops:4d}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="timing runs (best of)")
    parser.add_argument("--joins", type=int, default=20, help="random joins per row of the quality table")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    timing(args.runs)
    quality(args.joins, args.seed)


if __name__ == "__main__":
    main()
