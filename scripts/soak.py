"""Soak: the real viewer, headless (EGL), driven for a long stretch of simulated time with random input,
style switches, model swaps (every shipped kind), BVH takes, screenshots, steps back and tiny training
runs started and stopped. It reports, per simulated minute, the process's memory (RSS) and the frame
time percentiles, and over the run every guard fault or clamp the runtime reported, every NaN in the
shown pose, every exception and every error a panel section showed.

    python scripts/soak.py --minutes 30 --out soak.json        # the issue's 30 simulated minutes
    python scripts/soak.py --minutes 0.34 --event-every 0.5    # a 20 s smoke run (tests/test_soak.py)
    python scripts/soak.py --minutes 15 --models pfnn,matching --swap-every 20   # swaps only, RSS per swap

`--models` names the shipped models the swaps choose from (`pfnn`, `matching`, `mvae`; all three by
default). `--swap-every S` runs swaps only: every S simulated seconds the next of `--models` in turn
(the keys held are drawn again with each swap, so the character walks, runs and stands), no other
event; the report then lists the RSS just before each swap and just after it (`swaps`), so memory kept
per load of a model shows as a rise from one stay on a model to its next.

Simulated time runs faster than real time: each frame is fed `--ticks-per-frame` ticks of real time
(the viewer's fixed-timestep accumulator takes up to 4 a frame). Frame times are the wall time of one
`Viewer.frame`; "steady" percentiles leave out frames in which an event ran (a model load, a screenshot,
a take saved) and frames while a training run shares the CPU. Everything the run writes goes to a
temporary work folder. Exit status 1 when a target is missed: a NaN, an exception, or RSS growth after the
first minute of `--rss-limit-mb` or more. The models' own footprints differ by hundreds of MB (the
matching database), so growth is measured per model shown at a minute's end (its last reading minus its
first); the raw rise over the first minute is reported too. Frame times depend on the machine's other
load: the main thread's CPU time per frame (`steady_cpu_p50_ms`) is the drift measure less affected by it.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as pfnn-viewer does: one BLAS thread, before numpy loads
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MODEL_FILES = {"pfnn": "default.safetensors", "matching": "matching.safetensors", "mvae": "mvae.safetensors"}
TRAINING_CLIP = ROOT / "assets" / "bvh" / "bandai-namco-ds2" / "dataset-2_walk_normal_001.bvh.gz"
MOVE_KEYS = ("W", "A", "S", "D", "UP", "LEFT")
EVENTS = ("keys", "style", "model", "record", "screenshot", "rewind", "training", "pause")
WEIGHTS = (40, 14, 8, 10, 6, 8, 6, 8)
SIM_DT = 1.0 / 60.0


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="simulated minutes to run")
    parser.add_argument("--ticks-per-frame", type=int, default=4, help="simulated ticks fed per frame (1-4)")
    parser.add_argument("--event-every", type=float, default=5.0, help="simulated seconds between random events")
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--width", type=int, default=480)
    parser.add_argument("--height", type=int, default=270)
    parser.add_argument("--rss-limit-mb", type=float, default=50.0)
    parser.add_argument("--models", type=model_list, default=list(MODEL_FILES),
                        help="comma-separated shipped models the swaps choose from: " + ", ".join(MODEL_FILES))
    parser.add_argument("--swap-every", type=float, default=None,
                        help="swaps only: the next of --models every this many simulated seconds, no other event")
    parser.add_argument("--out", help="write the report here as JSON")
    return parser.parse_args(argv)


def model_list(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in MODEL_FILES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"--models {text!r}: expected names among {', '.join(MODEL_FILES)}")
    return names


def rss_mb() -> float:
    with open("/proc/self/statm") as stream:
        return int(stream.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class Soak:
    """One run: the viewer, the random events, and what was measured."""

    def __init__(self, args, work: Path):
        from app.viewer import Viewer

        self.args, self.work, self.rng = args, work, random.Random(args.seed)
        self.models = [ROOT / "assets" / "models" / MODEL_FILES[name] for name in args.models]
        self.viewer = Viewer(args.width, args.height, model_path=self.models[0], visible=False, vsync=False)
        self.viewer.state.record.path = "recordings/"
        self.held: set = set()
        self.counts = {name: 0 for name in EVENTS}
        self.faults, self.nans, self.exceptions, self.panel_errors = [], [], [], []
        self.minutes: list[dict] = []
        self.swaps: list[dict] = []  # swap-only runs: the RSS just before and after each swap
        self._frames: list[tuple[float, float, bool]] = []  # (wall ms, main-thread CPU ms, steady) this minute
        self._training_form()

    def _training_form(self) -> None:
        data = self.work / "training-data"
        data.mkdir(parents=True, exist_ok=True)
        shutil.copy(TRAINING_CLIP, data / TRAINING_CLIP.name)
        train = self.viewer.state.train
        train.bvh_dir, train.out, train.epochs, train.hidden = str(data), "models/soak.safetensors", 1, 16

    # ---- events ---------------------------------------------------------------------------------
    def event(self, index: int) -> str:
        """The `index`th event: every kind once in order first, then drawn at random; with `--swap-every`,
        a swap to the next model in turn."""
        if self.args.swap_every is not None:
            self._swap(index)
            return "model"
        kind = EVENTS[index] if index < len(EVENTS) else self.rng.choices(EVENTS, WEIGHTS)[0]
        getattr(self, f"_{kind}")()
        self.counts[kind] += 1
        return kind

    def _keys(self) -> None:
        from pyglet.window import key

        window = self.viewer.window
        for name in list(self.held):
            window.dispatch_event("on_key_release", getattr(key, name), 0)
        self.held = set(self.rng.sample(MOVE_KEYS, self.rng.randint(0, 2)))
        if self.rng.random() < 0.3:
            self.held.add("LSHIFT")
        for name in self.held:
            window.dispatch_event("on_key_press", getattr(key, name), 0)

    def _style(self) -> None:
        names = self.viewer.state.style.names
        if not names:
            return
        if self.rng.random() < 0.5:
            self.viewer.run_action("next_style")
            return
        weights = np.zeros(len(names))
        first, second = self.rng.randrange(len(names)), self.rng.randrange(len(names))
        blend = self.rng.random()
        weights[first] += 1 - blend
        weights[second] += blend
        self.viewer.state.request("set_style", weights)

    def _model(self) -> None:
        self.viewer.state.request("load_model", str(self.rng.choice(self.models)))

    def _swap(self, index: int) -> None:
        """Swap-only runs: the next model in turn, loaded now (not at the next frame's requests) so the RSS
        read after it is the new model's."""
        self._keys()
        viewer, target = self.viewer, self.models[(index + 1) % len(self.models)]
        before, shown = rss_mb(), Path(viewer.state.model.path).name
        loaded = viewer.load_model(str(target))
        self.swaps.append({"t_s": round(viewer.sim_time, 1), "from": shown, "to": target.name, "loaded": loaded,
                           "rss_before_mb": round(before, 1), "rss_after_mb": round(rss_mb(), 1)})
        self.counts["model"] += 1

    def _record(self) -> None:
        record = self.viewer.state.record
        self.viewer.state.request("record_stop" if record.recording else "record_start")

    def _screenshot(self) -> None:
        self.viewer.state.request("save_screenshot")

    def _rewind(self) -> None:
        self.viewer.step_ticks(-self.rng.randint(1, 90))
        self.viewer.state.transport.paused = False

    def _training(self) -> None:
        running = self.viewer.training.running
        self.viewer.state.request("stop_training" if running else "start_training", None if running else {})

    def _pause(self) -> None:
        transport = self.viewer.state.transport
        transport.paused = not transport.paused

    # ---- frames and measures --------------------------------------------------------------------
    def frame(self, event_ran: bool) -> None:
        viewer = self.viewer
        training = viewer.training.running
        start, cpu_start = time.perf_counter(), time.thread_time()
        viewer.window.dispatch_events()
        viewer.frame(self.args.ticks_per_frame * SIM_DT)
        viewer.window.flip()
        self._frames.append((1000 * (time.perf_counter() - start), 1000 * (time.thread_time() - cpu_start),
                             not (event_ran or training)))
        self._check(viewer)

    def _check(self, viewer) -> None:
        pose = viewer.cur_frames[0].joint_pos
        if not np.all(np.isfinite(pose)):
            self.nans.append(f"t={viewer.sim_time:.2f} s: non-finite pose ({viewer.state.model.path})")
        for message in viewer.state.messages:
            if any(word in message.lower() for word in ("fault", "guard", "clamp", "nan", "reset")):
                self.faults.append(f"t={viewer.sim_time:.2f} s: {message}")
        viewer.state.messages.clear()
        for section in ("model", "record", "capture", "train", "playback", "recovery"):
            error = getattr(viewer.state, section).error
            if error and (not self.panel_errors or self.panel_errors[-1][1] != error):
                self.panel_errors.append((section, error))

    def close_minute(self, minute: int) -> None:
        times = np.array([ms for ms, _, _ in self._frames])
        steady = np.array([ms for ms, _, is_steady in self._frames if is_steady])
        steady_cpu = np.array([cpu for _, cpu, is_steady in self._frames if is_steady])
        row = {"minute": minute, "rss_mb": round(rss_mb(), 1), "frames": len(times),
               "p50_ms": _percentile(times, 50), "p95_ms": _percentile(times, 95), "p99_ms": _percentile(times, 99),
               "max_ms": round(float(times.max()), 1) if len(times) else None,
               "steady_frames": len(steady), "steady_p50_ms": _percentile(steady, 50),
               "steady_p95_ms": _percentile(steady, 95), "steady_cpu_p50_ms": _percentile(steady_cpu, 50),
               "model": Path(self.viewer.state.model.path).name}
        self.minutes.append(row)
        self._frames = []
        print(json.dumps(row), flush=True)

    def run(self) -> None:
        args = self.args
        frames_per_minute = round(60.0 / (args.ticks_per_frame * SIM_DT))
        every = args.event_every if args.swap_every is None else args.swap_every
        frames_per_event = max(1, round(every / (args.ticks_per_frame * SIM_DT)))
        total = max(1, round(args.minutes * frames_per_minute))
        events = 0
        for index in range(total):
            ran = index % frames_per_event == frames_per_event - 1
            try:
                if ran:
                    self.event(events)
                    events += 1
                self.frame(ran)
            except Exception:  # recorded, and the run goes on: a soak counts them
                self.exceptions.append(traceback.format_exc(limit=6))
            if (index + 1) % frames_per_minute == 0 or index == total - 1:
                self.close_minute(len(self.minutes) + 1)
        self.viewer.close()


def _percentile(values: np.ndarray, q: float):
    return round(float(np.percentile(values, q)), 1) if len(values) else None


def summary(soak: Soak, args, wall_s: float) -> dict:
    minutes = soak.minutes
    baseline = minutes[0]["rss_mb"] if minutes else 0.0
    growth = round(max(row["rss_mb"] for row in minutes) - baseline, 1) if minutes else 0.0
    by_model = _growth_by_model(minutes[1:])
    steady = [row["steady_p50_ms"] for row in minutes if row["steady_p50_ms"] is not None]
    drift = _drift(steady)
    report = {"simulated_minutes": round(sum(row["frames"] for row in minutes) * args.ticks_per_frame * SIM_DT / 60, 2),
              "wall_s": round(wall_s, 1), "ticks_per_frame": args.ticks_per_frame, "events": soak.counts,
              "rss_first_minute_mb": baseline, "rss_growth_after_first_minute_mb": growth,
              "rss_growth_by_model_mb": by_model, "steady_p50_drift_ms_per_minute": drift,
              "steady_cpu_p50_drift_ms_per_minute": _drift([row["steady_cpu_p50_ms"] for row in minutes
                                                            if row["steady_cpu_p50_ms"] is not None]),
              "faults": soak.faults[:50], "fault_count": len(soak.faults),
              "nans": soak.nans[:20], "nan_count": len(soak.nans), "exceptions": soak.exceptions[:10],
              "exception_count": len(soak.exceptions), "panel_errors": soak.panel_errors[:30], "minutes": minutes}
    if soak.swaps:
        report["swaps"] = soak.swaps
        report["rss_before_swap_by_model_mb"] = _before_swap_by_model(soak.swaps)
    leak = max(by_model.values(), default=0.0)
    report["targets_met"] = leak < args.rss_limit_mb and not soak.nans and not soak.exceptions
    return report


def _growth_by_model(minutes: list) -> dict:
    """Per model shown at a minute's end: RSS at its last such minute minus at its first (after minute 1).
    Models differ by hundreds of MB (the matching database), so a leak shows as growth with one model."""
    seen: dict = {}
    for row in minutes:
        seen.setdefault(row["model"], []).append(row["rss_mb"])
    return {model: round(values[-1] - values[0], 1) for model, values in seen.items()}


def _before_swap_by_model(swaps: list) -> dict:
    """Per model: the RSS at the end of each of its stays (just before the swap away from it), the first
    stay left out (it loads what every later stay shares: the kernels, the renderer's buffers)."""
    seen: dict = {}
    for swap in swaps:
        seen.setdefault(swap["from"], []).append(swap["rss_before_mb"])
    return {model: {"first_mb": values[1], "last_mb": values[-1], "growth_mb": round(values[-1] - values[1], 1),
                    "stays": len(values) - 1} for model, values in seen.items() if len(values) > 1}


def _drift(values: list) -> float | None:
    """The slope (ms per minute) of a least-squares line through the per-minute steady medians."""
    if len(values) < 3:
        return None
    return round(float(np.polyfit(np.arange(len(values)), np.asarray(values), 1)[0]), 3)


def main(argv=None) -> int:
    args = parse_args(argv)
    os.environ["PYGLET_HEADLESS"] = "true"
    os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
    work = Path(tempfile.mkdtemp(prefix="pfnn-soak-"))
    os.environ["PFNN_VIEWER_HOME"], os.environ["PFNN_VIEWER_CONFIG"] = str(work), str(work / "config")
    os.environ.setdefault("PFNN_DATASET_CACHE", str(work / "dataset-cache"))
    started = time.perf_counter()
    try:
        from pfnn_core.threads import set_thread_counts

        set_thread_counts(1)
        soak = Soak(args, work)
        soak.run()
        report = summary(soak, args, time.perf_counter() - started)
        report["takes_written"] = len(list((work / "recordings").glob("*.bvh")))
        report["screenshots_written"] = len(list((work / "captures").glob("*.png")))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(report, indent=1, default=str)
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    return 0 if report["targets_met"] else 1


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
