"""Viewer frame rate at 1280x720 (headless EGL window, Mesa llvmpipe on CPU-only machines) with all
overlays on, and the frame-time split between simulation, UI and rendering.

    python benchmarks/bench_viewer.py [--model PATH] [--frames 300] [--crowd 64] [--split]

Prints one line per configuration; the numbers go into BENCHMARKS.md. With --split a second run per
configuration waits for the rasteriser after the 3D pass too, to attribute the software rasteriser's
time to the 3D scene and to the panel (the extra wait removes some overlap, so its total is a bit higher).
"""

import argparse
import os
import sys
import time
from pathlib import Path

os.environ["PYGLET_HEADLESS"] = "true"
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the viewer does (see app/main.py)
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.main import DEFAULT_MODEL, SIM_DT, Viewer  # noqa: E402
from pfnn_core.drive import parse_script  # noqa: E402


def measure_split(viewer: Viewer, frames: int) -> dict:
    """Per frame: the 3D scene (submission + rasteriser), building the panel, the panel's rasteriser."""
    render_scene = viewer.render_scene

    def render_scene_and_wait(scene_frames):
        render_scene(scene_frames)
        viewer.ctx.finish()

    viewer.render_scene = render_scene_and_wait
    totals = {"scene_ms": 0.0, "panel_build_ms": 0.0, "panel_raster_ms": 0.0}
    try:
        for _ in range(frames):
            viewer.window.dispatch_events()
            viewer.frame(SIM_DT)
            start = time.perf_counter()
            viewer.ctx.finish()
            totals["panel_raster_ms"] += 1000 * (time.perf_counter() - start) / frames
            viewer.window.flip()
            totals["scene_ms"] += viewer.state.stats["render_ms"] / frames
            totals["panel_build_ms"] += viewer.state.stats["ui_ms"] / frames
    finally:
        viewer.render_scene = render_scene
    return totals


def measure(viewer: Viewer, frames: int) -> dict:
    """Mean wall time per frame, finishing the GL work every frame, split into simulation, UI
    (building the panel) and rendering (the rest: 3D submission, the panel's draw and the rasteriser)."""
    viewer.script = parse_script({"segments": [{"duration": 1e6, "move": [0.28, 0.96]}]})
    viewer.run_frames(30)
    totals = {"sim_ms": 0.0, "ui_ms": 0.0, "tick_ms": 0.0, "infer_ms": 0.0}
    start = time.perf_counter()
    for _ in range(frames):
        viewer.window.dispatch_events()
        viewer.frame(SIM_DT)
        viewer.ctx.finish()
        viewer.window.flip()
        for key in totals:
            totals[key] += viewer.state.stats.get(key, 0.0) / frames
    frame_ms = 1000 * (time.perf_counter() - start) / frames
    return {"fps": 1000.0 / frame_ms, "frame_ms": frame_ms, **totals,
            "render_ms": frame_ms - totals["sim_ms"] - totals["ui_ms"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default=str(DEFAULT_MODEL))
    parser.add_argument("--frames", type=int, default=300)
    parser.add_argument("--crowd", type=int, default=0, help="also measure a crowd of this size")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=720)
    parser.add_argument("--split", action="store_true", help="also split the rasteriser's time: 3D scene / panel")
    args = parser.parse_args(argv)
    configurations = [("1 character", 1)] + ([(f"{args.crowd} characters", args.crowd)] if args.crowd else [])
    for name, crowd in configurations:
        viewer = Viewer(args.width, args.height, model_path=args.model, crowd=crowd, visible=False, vsync=False)
        viewer.state.overlays.update(trajectory=True, contacts=True, phase=True, joint_axes=True)
        result = measure(viewer, args.frames)
        renderer = viewer.ctx.info["GL_RENDERER"]
        print(f"{name:>14}: {result['fps']:6.1f} FPS  frame {result['frame_ms']:6.2f} ms  "
              f"(sim {result['sim_ms']:.2f}, ui {result['ui_ms']:.2f}, render {result['render_ms']:.2f}; "
              f"tick {result['tick_ms']:.2f}, inference {result['infer_ms']:.2f})  "
              f"{args.width}x{args.height} samples={viewer.window.config.samples} [{renderer}] "
              f"source={viewer.source.label}")
        if args.split:
            split = measure_split(viewer, args.frames)
            print(f"{'':>14}  split: 3D scene {split['scene_ms']:.2f} ms (submission + rasteriser), "
                  f"panel build {split['panel_build_ms']:.2f} ms, panel rasteriser {split['panel_raster_ms']:.2f} ms")
        viewer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
