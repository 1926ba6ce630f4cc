"""Runtime benchmark, in one run: the full tick (command to posed, foot-locked skeleton) against a bare
forward pass of the same network (normalise, PFNN, unnormalise), for each phase function and each
inference path (numpy / torch CPU / torch CUDA when present), and a batch of 64 characters against one.

    python benchmarks/bench_runtime.py [--model M.safetensors] [--hidden 512] [--ticks 200]

Without --model, randomly initialised PFNNs of the given size are built for both phase functions on
the real feature layout and skeleton (timing does not depend on the weights' values). Times are
medians over `--ticks` calls after a warm-up; the machine's other load shows up as spread.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pfnn_core import bvh, features  # noqa: E402
from pfnn_core.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from pfnn_core.controller import command_from_world_move  # noqa: E402
from pfnn_core.model import PFNN, ModelConfig  # noqa: E402
from pfnn_core.phase import stride_statistics  # noqa: E402
from pfnn_core.runtime import Character  # noqa: E402

DT = 1.0 / 60.0
CLIP = ROOT / "assets" / "bvh" / "bandai-namco-ds2" / "dataset-2_walk_normal_001.bvh.gz"


def random_checkpoint(folder: Path, phase_function: str, hidden: int) -> Path:
    motion = bvh.load(CLIP)
    layouts = features.make_layouts(motion.num_joints)
    clip = features.clip_features(motion, layouts)
    norm = (clip.x.mean(0), np.maximum(clip.x.std(0), 1e-3), clip.y.mean(0), np.maximum(clip.y.std(0), 1e-3))
    torch.manual_seed(0)
    model = PFNN(ModelConfig(clip.x.shape[1], clip.y.shape[1], hidden_size=hidden, phase_function=phase_function))
    meta = {"skeleton": features.skeleton_dict(motion),
            "stride": stride_statistics(clip.cycle_speeds, clip.stride_lengths),
            "gait_speeds": {"walk": 1.2, "run": 3.4}}
    return save_checkpoint(folder / f"random_{phase_function}_{hidden}.safetensors", model, layouts, norm, meta)


def median_ms(function, calls: int) -> float:
    for _ in range(max(3, calls // 10)):
        function()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        function()
        times.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(times)


def measure(checkpoint_path: Path, device: str, path: str, ticks: int) -> dict:
    checkpoint = load_checkpoint(checkpoint_path, device=device)
    result = {}
    for batch in (1, 64):
        character = Character(checkpoint, batch=batch, device=device, path=path,
                              positions=np.stack([np.arange(batch) * 2.0, np.zeros(batch)], axis=-1))
        command = command_from_world_move([0.0, 1.0], False, character.settings)
        for _ in range(30):  # walk into a steady state (contacts, locks, IK all active)
            character.tick(command, DT)
        network = character.network
        x = np.random.default_rng(0).normal(size=(batch, network.x_layout.size))
        phase = np.linspace(0.0, 1.0, batch, endpoint=False)
        result[f"forward_{batch}"] = median_ms(lambda: network.predict(x, phase), ticks)
        result[f"tick_{batch}"] = median_ms(lambda: character.tick(command, DT), ticks)
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a trained checkpoint to measure as well")
    parser.add_argument("--hidden", type=int, default=512, help="hidden size of the random models")
    parser.add_argument("--ticks", type=int, default=200, help="timed calls per measurement")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)

    paths = [("cpu", "numpy"), ("cpu", "torch")]
    if torch.cuda.is_available():
        paths.append(("cuda", "torch"))
    with tempfile.TemporaryDirectory() as folder:
        models = [(f"random {pf} h{args.hidden}", random_checkpoint(Path(folder), pf, args.hidden))
                  for pf in ("rbf", "cubic")]
        if args.model:
            models.append((Path(args.model).name, Path(args.model)))
        print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s); medians of {args.ticks} calls (ms)\n")
        print("| model | device/path | forward B=1 | tick B=1 | tick/forward (aim <= 3) "
              "| forward B=64 | tick B=64 | tick B=64 / B=1 (aim <= 8) |")
        print("|---|---|---|---|---|---|---|---|")
        for label, checkpoint_path in models:
            for device, path in paths:
                r = measure(checkpoint_path, device, path, args.ticks)
                print(f"| {label} | {device}/{path} | {r['forward_1']:.3f} | {r['tick_1']:.3f} | "
                      f"{r['tick_1'] / r['forward_1']:.2f} | {r['forward_64']:.3f} | {r['tick_64']:.3f} | "
                      f"{r['tick_64'] / r['tick_1']:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
