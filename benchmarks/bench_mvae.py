"""Benchmark of the motion VAE against the PFNN on the CPU at batch 1, side by side in one run.

1. The model step: the motion VAE's `predict_batch` (policy + mixture-of-experts decoder, numpy) next to
   the PFNN's forward (`FoldedPFNN`, exact mode), the same tick inputs.
2. The runtime tick (`Character.tick`: trajectory, model, pose, feet, root motion, guards) of each
   model, next to its own model step: the tick's overhead over the model.

Usage: python benchmarks/bench_mvae.py [--mvae assets/models/mvae.safetensors]
       [--pfnn assets/models/default.safetensors] [--threads 1] [--repeats 2000]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from pfnn_core.threads import set_thread_counts


def _median_ms(function, repeats: int) -> float:
    for _ in range(50):  # warm-up (compiled kernels, caches)
        function()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times)


def measure(path: str, repeats: int) -> dict:
    """Median ms of one model step and one runtime tick of a checkpoint, batch 1, walking."""
    from pfnn_core.models.registry import load_checkpoint
    from pfnn_core.runtime.character import Character
    from pfnn_core.runtime.command import Command

    character = Character(load_checkpoint(path))
    command = Command(np.array([0.0, 1.2]), gait="walk")
    for _ in range(120):
        character.tick(command, 1.0 / 60.0)
    captured = {}
    model = character.model
    original = model.step

    def capture(inputs):
        captured["inputs"] = inputs
        return original(inputs)

    model.step = capture
    character.tick(command, 1.0 / 60.0)
    model.step = original
    inputs = captured["inputs"]
    step_ms = _median_ms(lambda: model.step(inputs), repeats)
    tick_ms = _median_ms(lambda: character.tick(command, 1.0 / 60.0), repeats)
    return {"kind": model.kind, "step_ms": step_ms, "tick_ms": tick_ms}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mvae", default="assets/models/mvae.safetensors")
    parser.add_argument("--pfnn", default="assets/models/default.safetensors")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=2000)
    args = parser.parse_args(argv)
    set_thread_counts(args.threads)
    rows = [measure(args.pfnn, args.repeats), measure(args.mvae, args.repeats)]
    print(f"batch 1, {args.threads} thread(s), median of {args.repeats}")
    print(f"{'model':<8} {'model step (ms)':>16} {'tick (ms)':>10} {'tick / step':>12}")
    for row in rows:
        print(f"{row['kind']:<8} {row['step_ms']:>16.3f} {row['tick_ms']:>10.3f} {row['tick_ms'] / row['step_ms']:>12.2f}")
    print(f"mvae step / pfnn step: {rows[1]['step_ms'] / rows[0]['step_ms']:.2f}")


if __name__ == "__main__":
    main()
