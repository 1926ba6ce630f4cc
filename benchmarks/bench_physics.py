"""Physics layer benchmark, side by side in one run (medians of timed ticks after a warm-up; ms):

  added   one character walking on the default model, one process: blocks of ticks with the physics
          off (the runtime's tick alone) and on (the runtime's tick, then the tracker's step), in the
          order off, on, on, off, ... so a load that drifts over the run falls on both alike; ms per tick
          of each, the physics' added ms (aim: at most 1 ms at the default 8 substeps) and the load
          average before and after.
          With `--baseline REV` the tracker of git revision REV (its tracker.py and landing.py, loaded
          beside this checkout's) is a third kind of block, in the order off, REV, this, off, this,
          REV, ...: CPU ms of the tracker's step and added, both codes in one run.
  tick    one character: the runtime's tick alone, the physics tick alone (its time per 60 Hz tick at
          4 / 8 / 16 substeps), and MuJoCo's own steps inside it (`mj_step` x substeps), so the Python
          around them shows; wall-clock ms with this thread's CPU ms in brackets (on a shared machine the
          CPU time is what a quiet machine's clock would show). Aim: the physics adds at most 1 ms to a
          tick at the default 8 substeps.
  crowd   the physics tick for 1 / 8 / 32 characters (one model, a data each), per character.
  quality the tracking error, the deepest foot below the floor and the foot skating (simulated against
          kinematic) on a mocap walk and on the shipped model's walk, at 4 / 8 / 16 substeps.

    python benchmarks/bench_physics.py [--ticks 300] [--sections added,tick,crowd,quality] [--blocks 12]
                                       [--baseline REV]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from pfnn_core.drive.cli import run_drive  # noqa: E402
from pfnn_core.evaluation.measures import foot_skating  # noqa: E402
from pfnn_core.models.registry import load_checkpoint  # noqa: E402
from pfnn_core.motion import bvh  # noqa: E402
from pfnn_core.motion.kinematics import resample  # noqa: E402
from pfnn_core.physics.layer import physics_for, physics_for_character  # noqa: E402
from pfnn_core.physics.measures import depth_below_floor  # noqa: E402
from pfnn_core.physics.replay import track_motion  # noqa: E402
from pfnn_core.physics.settings import PhysicsSettings  # noqa: E402
from pfnn_core.runtime.character import Character  # noqa: E402
from pfnn_core.runtime.command import command_from_world_move  # noqa: E402
from pfnn_core.threads import set_thread_counts  # noqa: E402

DT = 1.0 / 60.0
SHIPPED = ROOT / "assets" / "models" / "default.safetensors"
CLIP = ROOT / "assets" / "bvh" / "bandai-namco-ds2" / "dataset-2_walk_normal_001.bvh.gz"
WALK = {"name": "bench_walk", "segments": [{"duration": 1.0, "move": [0, 0]}, {"duration": 6.0, "move": [0, 1]},
                                           {"duration": 3.0, "move": [1, 0]}]}


def median_ms(samples) -> float:
    return statistics.median(samples) * 1000.0


def runtime_poses(checkpoint, ticks: int, batch: int = 1):
    """((runtime tick wall times, CPU times) [s], world positions [T, B, J, 3], rotations [T, B, J, 4]) of a walk."""
    character = Character(checkpoint, batch=batch, device="cpu", positions=np.stack([np.arange(batch) * 1.6,
                                                                                   np.zeros(batch)], axis=-1))
    command = command_from_world_move((0.0, 1.0), False, character.settings)
    times, cpu, positions, rotations = [], [], [], []
    for _ in range(ticks):
        started, started_cpu = time.perf_counter(), time.thread_time()
        state = character.tick(command, DT)
        times.append(time.perf_counter() - started)
        cpu.append(time.thread_time() - started_cpu)
        positions.append(state.world_joint_pos.copy())
        rotations.append(state.world_joint_rot.copy())
    return (times, cpu), np.array(positions), np.array(rotations)


def physics_times(card, positions, rotations, substeps: int, warm: int = 30):
    """(physics tick wall times, mj_step time per tick, CPU times) [s] tracking the given poses."""
    tracker = physics_for(card.skeleton, card.floor_heights, positions.shape[1], PhysicsSettings(substeps=substeps),
                          trained_on=card.trained_on)
    times, stepping, cpu = [], [], []
    for frame in range(len(positions)):
        before = [data.timer[0].duration for data in tracker.datas]
        started, started_cpu = time.perf_counter(), time.thread_time()
        tracker.step(positions[frame], rotations[frame], DT)
        elapsed, elapsed_cpu = time.perf_counter() - started, time.thread_time() - started_cpu
        if frame >= warm:
            times.append(elapsed)
            cpu.append(elapsed_cpu)
            stepping.append(sum(data.timer[0].duration - b for data, b in zip(tracker.datas, before)))
    return times, stepping, cpu


def block_order(blocks: int) -> list[bool]:
    """Physics on (True) or off per block, `blocks` of each: off, on, on, off, off, on, on, off, ..."""
    return [(i % 4) in (1, 2) for i in range(2 * blocks)]


def interleaved_times(checkpoint, blocks: int, block: int, settle: int = 3):
    """{False: [(wall, CPU, the runtime's part of the CPU) s per tick], True: [...]}: one walking character,
    physics off and on in blocks.
    An on block starts its body again on the kinematic pose (as the viewer does when it is switched on);
    its first `settle` ticks, and an off block's, are not timed."""
    set_thread_counts(1)
    character = Character(checkpoint, batch=1, device="cpu")
    tracker = physics_for_character(character, PhysicsSettings())
    command = command_from_world_move((0.0, 1.0), False, character.settings)
    for _ in range(60):  # warm both up: the walk under way, MuJoCo's first steps
        state = character.tick(command, DT)
        tracker.step(state.world_joint_pos, state.world_joint_rot, DT)
    times = {False: [], True: []}
    for on in block_order(blocks):
        if on:
            tracker.reset()
        for tick in range(block):
            started, started_cpu = time.perf_counter(), time.thread_time()
            state = character.tick(command, DT)
            runtime_cpu = time.thread_time() - started_cpu
            if on:
                tracker.step(state.world_joint_pos, state.world_joint_rot, DT)
            if tick >= settle:
                times[on].append((time.perf_counter() - started, time.thread_time() - started_cpu, runtime_cpu))
    return times


def baseline_tracker_class(revision: str):
    """`PhysicsTracker` as git revision `revision` had it: its tracker.py and landing.py, loaded as modules
    of their own beside this checkout's (the rest of the package is this checkout's)."""
    folder = Path(tempfile.mkdtemp(prefix="bench-physics-"))
    modules = {}
    for name in ("landing", "tracker"):
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"{revision}:pfnn_core/physics/{name}.py"], check=True,
                              capture_output=True, text=True).stdout
        text = text.replace("from pfnn_core.physics.landing import", "from baseline_landing import")
        path = folder / f"baseline_{name}.py"
        path.write_text(text, encoding="utf-8")
        spec = importlib.util.spec_from_file_location(f"baseline_{name}", path)
        modules[name] = importlib.util.module_from_spec(spec)
        sys.modules[f"baseline_{name}"] = modules[name]
        spec.loader.exec_module(modules[name])
    return modules["tracker"].PhysicsTracker


def baseline_times(checkpoint, blocks: int, revision: str, block: int = 60, settle: int = 3):
    """{"off" / revision / "this": [(CPU, the runtime's part, the tracker's step) s per tick]}: one walking
    character, physics off, on with `revision`'s tracker and on with this checkout's, in blocks."""
    set_thread_counts(1)
    character = Character(checkpoint, batch=1, device="cpu")
    trackers = {"this": physics_for_character(character, PhysicsSettings())}
    trackers[revision] = baseline_tracker_class(revision)(physics_for_character(character, PhysicsSettings()).body,
                                                          PhysicsSettings(), 1)
    command = command_from_world_move((0.0, 1.0), False, character.settings)
    for _ in range(60):
        state = character.tick(command, DT)
        for tracker in trackers.values():
            tracker.step(state.world_joint_pos, state.world_joint_rot, DT)
    pattern = ["off", revision, "this", "off", "this", revision]
    times = {name: [] for name in ("off", revision, "this")}
    for index in range(blocks * len(pattern)):
        name = pattern[index % len(pattern)]
        if name != "off":
            trackers[name].reset()
        for tick in range(block):
            started = time.thread_time()
            state = character.tick(command, DT)
            runtime = time.thread_time()
            if name != "off":
                trackers[name].step(state.world_joint_pos, state.world_joint_rot, DT)
            if tick >= settle:
                done = time.thread_time()
                times[name].append((done - started, runtime - started, done - runtime))
    return times


def baseline_section(checkpoint, blocks: int, revision: str) -> None:
    load_before = os.getloadavg()
    times = baseline_times(checkpoint, blocks, revision)
    load_after = os.getloadavg()
    medians = {name: np.median(np.array(rows) * 1000.0, axis=0) for name, rows in times.items()}
    print(f"\nadded, {revision} against this checkout (one character, 8 substeps, {blocks} rounds of off, {revision}, this, "
          f"off, this, {revision}: 60 ticks each; CPU ms per tick, medians)")
    print(f"  load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} (1, 5, 15 min); {os.cpu_count()} cores")
    off = medians["off"][0]
    for name in ("off", revision, "this"):
        tick, runtime, step = medians[name]
        print(f"  {name:12s} tick {tick:6.3f}   runtime's part {runtime:6.3f}   tracker's step {step:6.3f}   "
              f"added {tick - off:6.3f}")
    print(f"  this / {revision}: tracker's step {medians['this'][2] / medians[revision][2]:.3f}, "
          f"added {(medians['this'][0] - off) / (medians[revision][0] - off):.3f}")


def added_section(checkpoint, blocks: int, block: int = 60) -> None:
    load_before = os.getloadavg()
    times = interleaved_times(checkpoint, blocks, block)
    load_after = os.getloadavg()
    off, on = np.array(times[False]) * 1000.0, np.array(times[True]) * 1000.0
    print(f"\nadded (one character, 8 substeps, {blocks} blocks of {block} ticks each off and on, interleaved; "
          f"ms per tick, wall [CPU])")
    print(f"  load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
          f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f} (1, 5, 15 min); {os.cpu_count()} cores")
    for label, column in (("median", np.median), ("mean", np.mean)):
        print(f"  {label:6s} physics off {column(off[:, 0]):6.3f} [{column(off[:, 1]):6.3f}]   on "
              f"{column(on[:, 0]):6.3f} [{column(on[:, 1]):6.3f}]   added {column(on[:, 0]) - column(off[:, 0]):6.3f} "
              f"[{column(on[:, 1]) - column(off[:, 1]):6.3f}]")
    print(f"  p90    physics off {np.percentile(off[:, 0], 90):6.3f}   on {np.percentile(on[:, 0], 90):6.3f}")
    print(f"  CPU medians inside the ticks: runtime's part off {np.median(off[:, 2]):6.3f}, on {np.median(on[:, 2]):6.3f}; "
          f"the tracker's step on {np.median(on[:, 1] - on[:, 2]):6.3f}")


def tick_section(checkpoint, ticks: int) -> None:
    (runtime, runtime_cpu), positions, rotations = runtime_poses(checkpoint, ticks + 30)
    base, base_cpu = statistics.median(runtime[30:]), statistics.median(runtime_cpu[30:])
    print(f"\ntick (ms, medians over {ticks} ticks, one character; [CPU ms])")
    print(f"  runtime tick alone                 {1000 * base:7.3f} [{1000 * base_cpu:6.3f}]")
    for substeps in (4, 8, 16):
        times, stepping, cpu = physics_times(checkpoint.card, positions, rotations, substeps)
        print(f"  physics, {substeps:2d} substeps                {median_ms(times):7.3f} [{median_ms(cpu):6.3f}]   of which "
              f"mj_step {median_ms(stepping):6.3f} ({median_ms(stepping) / substeps * 1000:5.1f} us each); "
              f"runtime + physics / runtime = {1 + statistics.median(cpu) / base_cpu:.2f}x (CPU)")


def crowd_section(checkpoint, ticks: int) -> None:
    print(f"\ncrowd (ms per physics tick, {ticks} ticks, 8 substeps)")
    for batch in (1, 8, 32):
        _, positions, rotations = runtime_poses(checkpoint, ticks + 30, batch)
        times, _, cpu = physics_times(checkpoint.card, positions, rotations, 8)
        print(f"  {batch:3d} characters   {median_ms(times):8.2f} [{median_ms(cpu):8.2f}]   per character "
              f"{median_ms(times) / batch:6.3f} [{median_ms(cpu) / batch:6.3f}]")


def quality_row(label, card, positions, rotations, substeps: int) -> None:
    tracker = physics_for(card.skeleton, card.floor_heights, 1, PhysicsSettings(substeps=substeps),
                          trained_on=card.trained_on)
    tracked = track_motion(tracker, positions, rotations, DT)
    contact, floor = list(card.skeleton["contact_joints"]), card.floor_heights
    error = 100 * tracked.tracking_error
    kin = foot_skating(positions[:, contact], floor, DT).mean()
    sim = foot_skating(tracked.positions[:, contact], floor, DT).mean()
    depth = 100 * depth_below_floor(tracked.positions[:, contact], floor).max()
    print(f"  {label:24s} {substeps:2d} substeps  error median {np.median(error):5.2f} cm, p95 {np.percentile(error, 95):5.2f} cm"
          f"  deepest {depth:4.2f} cm  skating kinematic {kin:.3f} -> physics {sim:.3f} m/s ({sim / kin:.2f}x)")


def quality_section(checkpoint) -> None:
    print("\nquality")
    mocap = resample(bvh.load(CLIP), 60)
    drive = run_drive(WALK, checkpoint, device="cpu")
    motions = [("mocap walk", mocap.global_positions(), mocap.global_rotations()),
               ("shipped model walk", drive.joint_positions, drive.motion.global_rotations())]
    for substeps in (4, 8, 16):
        for label, positions, rotations in motions:
            quality_row(label, checkpoint.card, positions, rotations, substeps)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ticks", type=int, default=300)
    parser.add_argument("--sections", default="added,tick,crowd,quality")
    parser.add_argument("--blocks", type=int, default=12, help="blocks of 60 ticks each with the physics off and on")
    parser.add_argument("--baseline", help="with `added`: also time the tracker of this git revision, interleaved")
    args = parser.parse_args(argv)
    set_thread_counts(1)
    checkpoint = load_checkpoint(SHIPPED)
    sections = args.sections.split(",")
    if "added" in sections:
        if args.baseline:
            baseline_section(checkpoint, args.blocks, args.baseline)
        else:
            added_section(checkpoint, args.blocks)
    if "tick" in sections:
        tick_section(checkpoint, args.ticks)
    if "crowd" in sections:
        crowd_section(checkpoint, args.ticks // 3)
    if "quality" in sections:
        quality_section(checkpoint)
    return 0


if __name__ == "__main__":
    sys.exit(main())
