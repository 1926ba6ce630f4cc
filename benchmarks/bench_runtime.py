"""Runtime benchmark, side by side in one run (medians of timed calls after a warm-up; ms):

  tick    the full tick (command -> posed, foot-locked skeleton) against the bare forward pass of the
          same network at batch 1, for the shipped model and random hidden-512 PFNNs (rbf, cubic), per
          inference path (numpy / torch CPU / torch CUDA when present). Aim: tick <= max(3 x forward, 0.5 ms).
  batch   the tick at batch 64 / 256 / 1,024 against batch 1, per network mode (exact, and PFNN's
          precomputed phase bins: linear, constant), the characters' phases spread over the cycle.
          Aims: 256 within 8 ms, 1,024 within 25 ms.
  modes   the binned modes' error against the exact network, on the inputs of a real drive.
  load    `pfnn-drive`'s median tick, quiet and while another process keeps both cores busy, with
          --threads 1 (what every command sets) and 2. Aim: loaded / quiet <= 1.5.

    python benchmarks/bench_runtime.py [--model M.safetensors] [--sections tick,batch,modes,load]
                                       [--ticks 300] [--threads 1]

Without --model the shipped default model is used (skipped when absent). Random models are built on
the real feature layout and skeleton (timing does not depend on the weights' values).
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from pfnn_core.features.layout import make_layouts
from pfnn_core.features.samples import clip_features
from pfnn_core.models.checkpoint import save_checkpoint
from pfnn_core.models.pfnn.model import PFNN, ModelConfig  # noqa: E402
from pfnn_core.models.registry import load_checkpoint  # noqa: E402
from pfnn_core.motion import bvh  # noqa: E402
from pfnn_core.motion.phase import stride_statistics  # noqa: E402
from pfnn_core.runtime.character import Character  # noqa: E402
from pfnn_core.runtime.command import command_from_world_move  # noqa: E402
from pfnn_core.skeleton import skeleton_dict
from pfnn_core.threads import set_thread_counts  # noqa: E402

DT = 1.0 / 60.0
CLIP = ROOT / "assets" / "bvh" / "bandai-namco-ds2" / "dataset-2_walk_normal_001.bvh.gz"
SHIPPED = ROOT / "assets" / "models" / "default.safetensors"
SCRIPT = ROOT / "scripts" / "drives" / "circle.json"
LOAD_SCRIPT = r"""
import numpy as np, threadpoolctl, time
threadpoolctl.threadpool_limits(2)
a = np.random.rand(1500, 1500).astype(np.float32)
end = time.time() + {seconds}
while time.time() < end:
    a @ a
"""


def random_checkpoint(folder: Path, phase_function: str, hidden: int) -> Path:
    motion = bvh.load(CLIP)
    layouts = make_layouts(motion.num_joints)
    clip = clip_features(motion, layouts)
    norm = (clip.x.mean(0), np.maximum(clip.x.std(0), 1e-3), clip.y.mean(0), np.maximum(clip.y.std(0), 1e-3))
    torch.manual_seed(0)
    model = PFNN(ModelConfig(clip.x.shape[1], clip.y.shape[1], hidden_size=hidden, phase_function=phase_function))
    meta = {"skeleton": skeleton_dict(motion),
            "stride": stride_statistics(clip.cycle_speeds, clip.stride_lengths),
            "gait_speeds": {"walk": 1.2, "run": 3.4}}
    return save_checkpoint(folder / f"random_{phase_function}_{hidden}.safetensors", model, layouts, norm, meta)


def timed(function, calls: int) -> tuple[float, float]:
    """(wall, CPU) median milliseconds per call. On a shared machine the CPU time (this process's) is
    close to what a quiet machine's wall clock shows; the wall time includes waiting for the cores."""
    for _ in range(max(3, calls // 10)):
        function()
    wall, cpu = [], []
    for _ in range(calls):
        start, start_cpu = time.perf_counter(), time.process_time()
        function()
        cpu.append((time.process_time() - start_cpu) * 1000.0)
        wall.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(wall), statistics.median(cpu)


def walking(checkpoint, batch: int, device="cpu", path="auto", mode="exact"):
    """A character (or crowd) walking steadily (contacts, locks and IK all active)."""
    character = Character(
        checkpoint, batch=batch, device=device, path=path,
        positions=np.stack([np.arange(batch) * 2.0, np.zeros(batch)], axis=-1))
    character.settings.network_mode = mode
    if batch > 1:  # out of step with each other: every phase bin in use (the binned modes' worst case)
        character.state = dataclasses.replace(character.state, phase=np.linspace(0.0, 1.0, batch, endpoint=False))
    command = command_from_world_move([0.3, 1.0], False, character.settings)
    for _ in range(30):
        character.tick(command, DT)
    return character, command


def forward_call(network, batch: int, mode: str = "exact"):
    rng = np.random.default_rng(0)
    x = network.norm_np["x_mean"] + rng.normal(size=(batch, network.x_layout.size)) * network.norm_np["x_std"]
    phase = np.linspace(0.0, 1.0, batch, endpoint=False)
    if mode == "exact":
        return lambda: network.predict(x, phase)
    return lambda: network.predict(x, phase, mode=mode)


def section_tick(models, ticks):
    paths = [("cpu", "numpy"), ("cpu", "torch")] + ([("cuda", "torch")] if torch.cuda.is_available() else [])
    print("\n### Tick vs forward pass, batch 1 (wall-clock ms; CPU ms in brackets)\n")
    print("| model | device/path | forward | tick | tick / forward | aim: tick <= max(3 x forward, 0.5 ms) |")
    print("|---|---|---|---|---|---|")
    for label, path in models:
        checkpoint = load_checkpoint(path)
        for device, runner in paths:
            character, command = walking(checkpoint, 1, device, runner)
            forward, forward_cpu = timed(forward_call(character.model, 1), ticks)
            tick, tick_cpu = timed(lambda: character.tick(command, DT), ticks)
            met = "met" if tick <= max(3 * forward, 0.5) else "not met"
            print(f"| {label} | {device}/{runner} | {forward:.3f} ({forward_cpu:.3f}) | {tick:.3f} ({tick_cpu:.3f}) | "
                  f"{tick / forward:.2f} | {met} |", flush=True)


def section_batch(label, path, ticks):
    checkpoint = load_checkpoint(path)
    print(f"\n### Crowds: {label}, {torch.get_num_threads()} thread(s) (wall-clock ms; CPU ms in brackets)\n")
    print("| network mode | B | forward | tick | tick / tick(B=1) | aim (on CPU ms) |")
    print("|---|---|---|---|---|---|")
    aims = {256: 8.0, 1024: 25.0}
    for mode in ("exact", "linear", "constant"):
        single = None
        for batch in (1, 64, 256, 1024):
            character, command = walking(checkpoint, batch, mode=mode)
            calls = max(10, ticks // max(1, batch // 16))
            forward, forward_cpu = timed(forward_call(character.model, batch, mode), calls)
            tick, tick_cpu = timed(lambda: character.tick(command, DT), calls)
            single = tick_cpu if batch == 1 else single
            aim = f"<= {aims[batch]:g} ms: {'met' if tick_cpu <= aims[batch] else 'not met'}" if batch in aims else ""
            print(f"| {mode} | {batch} | {forward:.3f} ({forward_cpu:.3f}) | {tick:.3f} ({tick_cpu:.3f}) | "
                  f"{tick_cpu / single:.1f} | {aim} |", flush=True)


def section_modes(label, path):
    """Error of the binned modes on the inputs an exact drive produced (circle script)."""
    checkpoint = load_checkpoint(path)
    character, _ = walking(checkpoint, 1)
    network = character.model
    inputs, phases = [], []
    predict = network.predict

    def recorded(x, phase, style=None, mode="exact"):
        inputs.append(x.copy())
        phases.append(np.array(phase, copy=True))
        return predict(x, phase, style, mode)

    network.predict = recorded
    from pfnn_core.drive.cli import command_for, load_script

    script = load_script(SCRIPT)
    for tick in range(int(script.duration / DT)):
        character.tick(command_for(script.segment_at(tick * DT), character.settings), DT)
    network.predict = predict
    x, phase = np.concatenate(inputs), np.concatenate(phases)
    exact = predict(x, phase)
    joints = network.y_layout.slice("joint_pos")
    y_std = network.norm_np["y_std"].astype(float)
    print(f"\n### Phase-binned network modes against the exact network: {label} ({len(x)} ticks of {script.name})\n")
    print("| mode | bins | mean abs error / output std | max | joint positions: mean / max error (mm) |")
    print("|---|---|---|---|---|")
    from pfnn_core.models.pfnn.network import CONSTANT_BINS, LINEAR_BINS

    for mode, bins in (("linear", LINEAR_BINS), ("constant", CONSTANT_BINS)):
        error = np.abs(predict(x, phase, mode=mode) - exact)
        relative = error / y_std
        print(f"| {mode} | {bins} | {relative.mean():.4f} | {relative.max():.3f} | "
              f"{1000 * error[:, joints].mean():.2f} / {1000 * error[:, joints].max():.1f} |")


def drive_tick_ms(model: Path, threads: int) -> float:
    with tempfile.TemporaryDirectory() as out:
        result = subprocess.run([sys.executable, "-m", "pfnn_core.drive", "--script", str(SCRIPT), "--out", out,
                                 "--model", str(model), "--threads", str(threads), "--device", "cpu"],
                                cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    match = re.search(r"tick ([0-9.]+) ms", result.stdout)
    if not match:
        raise RuntimeError(f"pfnn-drive failed: {result.stderr[-500:]}")
    return float(match.group(1))


def section_load(model: Path, repeats: int = 2):
    print(f"\n### A drive under load: `pfnn-drive --script {SCRIPT.name}`, median tick (ms), best of {repeats} runs\n")
    print("| --threads | quiet | while another process keeps both cores busy | loaded / quiet (aim <= 1.5) |")
    print("|---|---|---|---|")
    for threads in (1, 2):
        quiet = min(drive_tick_ms(model, threads) for _ in range(repeats))
        busy = subprocess.Popen([sys.executable, "-c", LOAD_SCRIPT.format(seconds=60 * repeats)])
        try:
            time.sleep(1.0)
            loaded = min(drive_tick_ms(model, threads) for _ in range(repeats))
        finally:
            busy.kill()
            busy.wait()
        print(f"| {threads} | {quiet:.3f} | {loaded:.3f} | {loaded / quiet:.2f} |", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(SHIPPED), help="trained checkpoint (default: the shipped one)")
    parser.add_argument("--sections", default="tick,batch,modes,load")
    parser.add_argument("--ticks", type=int, default=300, help="timed calls per measurement at batch 1")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads (BLAS and torch)")
    args = parser.parse_args(argv)
    set_thread_counts(args.threads)
    sections = set(args.sections.split(","))
    model = Path(args.model)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as folder:
        models = ([(f"{model.stem} (trained)", model)] if model.is_file() else []) + \
                 [(f"random {pf} h512", random_checkpoint(Path(folder), pf, 512)) for pf in ("rbf", "cubic")]
        label, path = models[0]
        if "tick" in sections:
            section_tick(models, args.ticks)
        if "batch" in sections:
            section_batch(label, path, args.ticks)
        if "modes" in sections:
            section_modes(label, path)
        if "load" in sections and model.is_file():
            section_load(model)
    return 0


if __name__ == "__main__":
    sys.exit(main())
