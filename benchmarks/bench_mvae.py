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


def _median_ms(function, repeats: int) -> tuple[float, float]:
    """(wall ms, this process's CPU ms), medians per call: on a loaded machine the CPU time is what a
    quiet machine's clock would show."""
    for _ in range(50):  # warm-up (compiled kernels, caches)
        function()
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        function()
        wall.append((time.perf_counter() - start) * 1000.0)
        cpu.append((time.process_time() - start_cpu) * 1000.0)
    return statistics.median(wall), statistics.median(cpu)


def measure(path: str, repeats: int) -> dict:
    """Median ms (wall, CPU) of one model step and one runtime tick of a checkpoint, batch 1, walking."""
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
    print(f"batch 1, {args.threads} thread(s), median of {args.repeats}; wall ms [this process's CPU ms]")
    print(f"{'model':<8} {'model step':>18} {'tick':>18} {'tick / step':>12}")
    for row in rows:
        (step, step_cpu), (tick, tick_cpu) = row["step_ms"], row["tick_ms"]
        print(f"{row['kind']:<8} {step:>8.3f} [{step_cpu:>7.3f}] {tick:>8.3f} [{tick_cpu:>7.3f}] "
              f"{tick_cpu / max(step_cpu, 1e-9):>12.2f}")
    print(f"mvae step / pfnn step (CPU ms): {rows[1]['step_ms'][1] / max(rows[0]['step_ms'][1], 1e-9):.2f}")


if __name__ == "__main__":
    main()
