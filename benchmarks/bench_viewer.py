"""Viewer frame rate at 1280x720 (headless EGL window, Mesa llvmpipe on CPU-only machines) with the panel
and all overlays on, for each view (skinned mesh, capsules, skeleton), with one character and a crowd.

    python benchmarks/bench_viewer.py [--model PATH] [--frames 200] [--crowd 64] [--views mesh,capsules]
                                      [--split]

The views of one configuration are measured side by side: frames alternate between them, so a busy
machine slows them alike and their ratios hold. Prints one line per configuration and view; the numbers
go into BENCHMARKS.md. With --split a second run waits for the rasteriser after every render pass (the
renderer's `pass_times`) and after the panel, to attribute the frame to the 3D scene's passes (prepare:
culling and uploads; shadow pass; background: sky, ground and the shadowed ground under the characters;
characters; overlays) and to the panel (building it, rasterising it). The waits remove some overlap, so
the split adds up to a little more than the plain frame.

With --cpu-time the software rasteriser runs in the calling thread (LP_NUM_THREADS=0) and every time is
the process's CPU time: slower than the threaded viewer, but what other jobs on a shared machine do to
the wall clock hardly moves it, so its ratios between views and passes are the steadier ones.
"""

import argparse
import os
import sys
import time
from pathlib import Path

os.environ["PYGLET_HEADLESS"] = "true"
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the viewer does (see app/cli.py)
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from app.paths import DEFAULT_MODEL  # noqa: E402
from app.viewer import SIM_DT, Viewer  # noqa: E402
from pfnn_core.drive.cli import parse_script  # noqa: E402

PASSES = ("prepare", "shadow_pass", "background", "characters", "overlays")


CLOCK = {"now": time.perf_counter}  # process CPU time with --cpu-time


def one_frame(viewer: Viewer) -> None:
    viewer.window.dispatch_events()
    viewer.frame(SIM_DT)
    viewer.ctx.finish()
    viewer.window.flip()


def measure(viewer: Viewer, views: list[str], frames: int) -> dict:
    """Per view: mean wall time per frame (finishing the GL work every frame), split into simulation, UI
    (building the panel) and rendering (the rest: 3D passes, the panel's draw and the rasteriser)."""
    keys = ("sim_ms", "ui_ms", "tick_ms", "infer_ms")
    totals = {view: {"frame_ms": 0.0, **{key: 0.0 for key in keys}} for view in views}
    for _ in range(frames):
        for view in views:
            viewer.state.view_mode = view
            start = CLOCK["now"]()
            one_frame(viewer)
            totals[view]["frame_ms"] += 1000 * (CLOCK["now"]() - start) / frames
            for key in keys:
                totals[view][key] += viewer.state.stats.get(key, 0.0) / frames
    for result in totals.values():
        result["fps"] = 1000.0 / result["frame_ms"]
        result["render_ms"] = result["frame_ms"] - result["sim_ms"] - result["ui_ms"]
    return totals


def measure_split(viewer: Viewer, views: list[str], frames: int) -> dict:
    """Per view: median ms of each render pass, of building the panel and of rasterising it."""
    draw_panel = viewer.imgui.renderer.render
    times = {view: {} for view in views}

    def draw_panel_and_wait(draw_data):
        viewer.ctx.finish()  # the 3D passes are done (the renderer waited for each); this waits for nothing else
        start = CLOCK["now"]()
        draw_panel(draw_data)
        viewer.ctx.finish()
        times[viewer.state.view_mode].setdefault("panel_raster", []).append(1000 * (CLOCK["now"]() - start))

    viewer.imgui.renderer.render = draw_panel_and_wait
    try:
        for _ in range(frames):
            for view in views:
                viewer.state.view_mode = view
                viewer.renderer.pass_times = times[view]
                one_frame(viewer)
                times[view].setdefault("panel", []).append(viewer.state.stats["ui_ms"])
    finally:
        viewer.imgui.renderer.render = draw_panel
        viewer.renderer.pass_times = None
    result = {}
    for view, series in times.items():
        medians = {name: float(np.median(values)) for name, values in series.items()}
        medians["panel_build"] = max(medians.pop("panel") - medians["panel_raster"], 0.0)
        medians["scene"] = sum(medians[name] for name in PASSES if name != "shadow_pass")
        result[view] = medians
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(DEFAULT_MODEL))
    parser.add_argument("--frames", type=int, default=200, help="frames per view")
    parser.add_argument("--crowd", type=int, default=0, help="also measure a crowd of this size")
    parser.add_argument("--views", default="mesh,capsules,skeleton", help="comma-separated view modes")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=720)
    parser.add_argument("--split", action="store_true", help="also split the frame into render passes and panel")
    parser.add_argument("--cpu-time", action="store_true",
                        help="rasterise in the calling thread and report CPU time (steady on a busy machine)")
    args = parser.parse_args(argv)
    if args.cpu_time:
        os.environ["LP_NUM_THREADS"] = "0"  # read when the driver loads, at the first window
        CLOCK["now"] = time.process_time
    views = [view.strip() for view in args.views.split(",") if view.strip()]
    configurations = [("1 character", 1)] + ([(f"{args.crowd} characters", args.crowd)] if args.crowd else [])
    for name, crowd in configurations:
        viewer = Viewer(args.width, args.height, model_path=args.model, crowd=crowd, visible=False, vsync=False)
        viewer.state.overlays.update(trajectory=True, contacts=True, phase=True, joint_axes=True)
        viewer.renderer.pass_timer = CLOCK["now"]
        viewer.script = parse_script({"segments": [{"duration": 1e6, "move": [0.28, 0.96]}]})
        for view in views:  # warm up: bodies built or read from the cache, shaders compiled
            viewer.state.view_mode = view
            viewer.run_frames(15)
        results = measure(viewer, views, args.frames)
        renderer = viewer.ctx.info["GL_RENDERER"]
        clock = "CPU time, rasteriser in the calling thread" if args.cpu_time else "wall time"
        print(f"{name} ({args.width}x{args.height}, {renderer}, {clock}, source: {viewer.source.label})")
        for view, result in results.items():
            rate = "" if args.cpu_time else f"{result['fps']:6.1f} FPS  "
            print(f"  {view:>9}: {rate}frame {result['frame_ms']:6.2f} ms  "
                  f"(sim {result['sim_ms']:.2f}, ui {result['ui_ms']:.2f}, render {result['render_ms']:.2f}; "
                  f"tick {result['tick_ms']:.2f}, inference {result['infer_ms']:.2f})")
        if args.split:
            for view, split in measure_split(viewer, views, max(args.frames // 2, 20)).items():
                passes = ", ".join(f"{name} {split[name]:.2f}" for name in PASSES)
                print(f"  {view:>9}  split (median ms): 3D scene {split['scene']:.2f} + shadow pass "
                      f"{split['shadow_pass']:.2f} ({passes}); panel build {split['panel_build']:.2f}, "
                      f"panel rasteriser {split['panel_raster']:.2f}")
        viewer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
