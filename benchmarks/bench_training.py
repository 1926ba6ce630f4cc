"""Benchmark of training at scale on the CPU, one run, printed as tables (figures in BENCHMARKS.md).

1. Dataset: the full set built cold (an empty cache folder) with one worker process and with one per CPU
   core, against reading it back from the cache; and the time from a cached start to the end of the first
   batch (the first start after a build also computes the normalisation and the data digest, which are
   then kept in the cache entry).
2. Training throughput at the same global batch: one process (1 thread, then as many threads as cores)
   against N processes under torchrun (gloo, 1 thread each), in samples (rollout frames) per second,
   timed over a fixed number of optimizer steps after a warm-up.
3. Memory per process after the tensors are ready: rows normalised on demand from the memory-mapped
   cache (what CPU training does) against a normalised copy of the whole set (anonymous memory from
   /proc/self/smaps_rollup, which leaves out the cache's file pages that processes share).

Every measurement runs in a fresh process. Usage:
    python benchmarks/bench_training.py [--data assets/bvh] [--processes 2] [--steps 20] [--only build|train|memory]
        [--cache-dir DIR (a dataset cache to reuse for the training and memory parts)]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pfnn_core.data.build import build_training_data

ROOT = Path(__file__).resolve().parents[1]


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _run_worker(arguments: list[str], launcher: list[str] | None = None, threads: int = 1) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        result = Path(folder) / "result.json"
        command = (launcher or [sys.executable]) + [str(Path(__file__).resolve()), "--worker", "--result",
                                                    str(result)] + arguments
        python_path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        env = {**os.environ, "PYTHONPATH": python_path, "OMP_NUM_THREADS": str(threads)}
        completed = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        if completed.returncode != 0 or not result.exists():
            raise RuntimeError(f"{' '.join(command)} failed:\n{completed.stderr[-3000:]}")
        return json.loads(result.read_text())


def _anonymous_mib() -> float:
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
        if line.startswith("Anonymous:"):
            return int(line.split()[1]) / 1024
    return float("nan")


# --- what each worker process measures ------------------------------------------------------------------

def worker_build(args) -> dict:

    started = time.perf_counter()
    data = build_training_data(args.data, cache_dir=args.cache_dir, workers=args.workers)
    return {"seconds": time.perf_counter() - started, "cache": data.summary.get("cache"),
            "clips": len(data.clip_names), "minutes": data.summary.get("minutes"), "samples": len(data.x)}


def _config(args):
    from pfnn_core.training.config import TrainConfig

    return TrainConfig(data=args.data, out=str(Path(args.out_dir) / "bench.safetensors"), epochs=1000,
                       patience=1000, batch_size=args.batch_size, hidden_size=args.hidden, device="cpu",
                       threads=args.threads, cache_dir=args.cache_dir, workers=args.workers)


def worker_first_batch(args) -> dict:
    """A cached start: dataset from the cache, split, normalisation, tensors, up to the first batch."""
    import threading

    from pfnn_core.training.loop import train

    started = time.perf_counter()
    first = {}
    stop = threading.Event()

    def on_progress(info):
        if info["event"] == "batch" and not first:
            first["seconds"] = time.perf_counter() - started
            stop.set()

    train(_config(args), progress=on_progress, stop=stop)
    return first


def worker_train(args) -> dict:
    """Samples per second over `steps` optimizer steps after `warmup` (rank 0 reports; all ranks stop)."""
    import threading

    from pfnn_core.training import distributed
    from pfnn_core.training.loop import train

    context = distributed.setup("cpu")
    config = _config(args)
    stop = threading.Event()
    marks = {}

    def on_progress(info):
        if info["event"] != "batch":
            return
        if info["step"] == args.warmup:
            marks["start"] = time.perf_counter()
        if info["step"] == args.warmup + args.steps:
            marks["end"] = time.perf_counter()
            stop.set()

    train(config, progress=on_progress, stop=stop)
    distributed.shutdown(context)
    if not context.is_main:
        return {}
    seconds = marks["end"] - marks["start"]
    return {"steps_per_s": args.steps / seconds,
            "samples_per_s": args.steps * config.batch_size * config.rollout_length / seconds,
            "world_size": context.world_size}


def worker_memory_tensors(args) -> dict:
    import torch

    from pfnn_core.training.dataset import load_training_data, split_and_normalise
    from pfnn_core.training.tensors import to_device

    config = _config(args)
    data = load_training_data(config)
    _, _, norm = split_and_normalise(data, config)
    before = _anonymous_mib()
    tensors = to_device(data, norm, torch.device("cpu"), on_demand=args.on_demand)
    sample = tensors.x[torch.arange(0, len(data.x), 997)]  # read rows, as training does
    return {"anonymous_mib": _anonymous_mib(), "anonymous_before_mib": before, "rows": len(data.x),
            "checked": float(sample.sum())}


WORKERS = {"build": worker_build, "first_batch": worker_first_batch, "train": worker_train,
           "memory": worker_memory_tensors}


# --- the tables -------------------------------------------------------------------------------------------

def bench_build(args) -> None:
    cores = _cores()
    print(f"\n## Dataset: {', '.join(args.data)} (cold = empty cache folder)")
    with tempfile.TemporaryDirectory() as cache:
        rows = []
        for workers in sorted({1, cores}):
            folder = Path(cache) / f"w{workers}"
            cold = _run_worker(["--task", "build", "--cache-dir", str(folder), "--workers", str(workers), *_data(args)],
                               threads=1)
            rows.append((f"built cold, {workers} worker process(es)", cold["seconds"]))
        hit = _run_worker(["--task", "build", "--cache-dir", str(folder), *_data(args)], threads=1)
        assert hit["cache"] == "hit", hit
        rows.append(("read from the cache", hit["seconds"]))
        for name in ("first start after the build, to the end of the first batch", "later starts, the same"):
            start = _run_worker(["--task", "first_batch", "--cache-dir", str(folder), "--out-dir", cache,
                                 "--threads", "1", *_data(args)], threads=1)
            rows.append((name, start["seconds"]))
    print(f"{cold['clips']} clips, {cold['minutes']:.1f} min of motion, {cold['samples']:,} samples (mirrored)")
    print("| dataset | seconds |\n|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.1f} |")
    print(f"cold (1 worker) / cached read: {rows[0][1] / hit['seconds']:.0f}x")


def bench_train(args) -> None:
    cores = _cores()
    print(f"\n## Training throughput, global batch {args.batch_size}, hidden {args.hidden}, "
          f"{args.steps} steps after {args.warmup} warm-up ({cores} cores)")
    with tempfile.TemporaryDirectory() as scratch:
        cache = args.cache_dir or str(Path(scratch) / "cache")
        _run_worker(["--task", "build", "--cache-dir", cache, *_data(args)])  # fill the cache
        common = ["--task", "train", "--cache-dir", cache, "--out-dir", scratch,
                  "--steps", str(args.steps), "--warmup", str(args.warmup), "--batch-size", str(args.batch_size),
                  "--hidden", str(args.hidden), *_data(args)]
        runs = [("1 process, 1 thread", _run_worker(common + ["--threads", "1"], threads=1)),
                (f"1 process, {cores} threads", _run_worker(common + ["--threads", str(cores)], threads=cores))]
        torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
                    str(args.processes)]
        runs.append((f"{args.processes} processes (torchrun, gloo), 1 thread each",
                     _run_worker(common + ["--threads", "1"], launcher=torchrun, threads=1)))
    base = runs[0][1]["samples_per_s"]
    print("| run | steps/s | samples/s | vs 1 process, 1 thread |\n|---|---|---|---|")
    for name, result in runs:
        print(f"| {name} | {result['steps_per_s']:.2f} | {result['samples_per_s']:.0f} | "
              f"{result['samples_per_s'] / base:.2f}x |")
    print(f"{args.processes} processes / 1 process with {cores} threads: "
          f"{runs[2][1]['samples_per_s'] / runs[1][1]['samples_per_s']:.2f}x")


def bench_memory(args) -> None:
    print("\n## Memory per process with the tensors ready (anonymous MiB; cache file pages are shared)")
    with tempfile.TemporaryDirectory() as scratch:
        cache = args.cache_dir or str(Path(scratch) / "cache")
        _run_worker(["--task", "build", "--cache-dir", cache, *_data(args)])
        common = ["--task", "memory", "--cache-dir", cache, "--out-dir", scratch, *_data(args)]
        on_demand = _run_worker(common + ["--on-demand", "1"])
        copied = _run_worker(common + ["--on-demand", "0"])
    print("| rows | anonymous MiB |\n|---|---|")
    print(f"| normalised on demand from the memory-mapped cache (CPU training) | {on_demand['anonymous_mib']:.0f} |")
    print(f"| normalised copy of the whole set | {copied['anonymous_mib']:.0f} |")


def _data(args) -> list[str]:
    return ["--data", *args.data]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", nargs="+", default=["assets/bvh"])
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--only", choices=["build", "train", "memory"])
    # the worker side
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--task", choices=sorted(WORKERS), help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--cache-dir", help="a dataset cache to reuse for the training and memory parts")
    parser.add_argument("--out-dir", help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=1, help=argparse.SUPPRESS)
    parser.add_argument("--on-demand", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        result = WORKERS[args.task](args)
        if result:
            Path(args.result).write_text(json.dumps(result))
        return
    for name, bench in (("build", bench_build), ("train", bench_train), ("memory", bench_memory)):
        if args.only in (None, name):
            bench(args)


if __name__ == "__main__":
    main()
