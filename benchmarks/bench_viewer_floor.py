"""The frame-rate floor of the viewer on this machine: the same live viewer (1280x720, headless EGL
window, the shipped model walking, capsule view) timed with its full frame, with the 3D scene replaced
by a bare clear (simulation, clear, panel), and with the panel hidden too (simulation, clear, HUD).
Measured alternately, twice, in one process; prints FPS and ms per frame. What a frame costs before
any 3D is drawn bounds what the full frame can reach.

    python benchmarks/bench_viewer_floor.py
"""
import os
import sys
import time

os.environ["PYGLET_HEADLESS"] = "true"
os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from app.paths import DEFAULT_MODEL
from app.viewer import SIM_DT, Viewer
from pfnn_core.drive.cli import parse_script

v = Viewer(1280, 720, model_path=str(DEFAULT_MODEL), visible=False, vsync=False)
v.state.view_mode = "capsules"
v.script = parse_script({"segments": [{"duration": 1e6, "move": [0.28, 0.96]}]})
v.run_frames(60)
full_render = v.render_scene
def clear_only(frames):
    v.renderer.ctx.screen.use(); v.renderer.ctx.clear(0.6, 0.65, 0.7, 1.0)
def measure(label, n=150):
    t = time.perf_counter()
    for _ in range(n):
        v.window.dispatch_events(); v.frame(SIM_DT); v.ctx.finish(); v.window.flip()
    dt = (time.perf_counter() - t) / n
    print(f"{label:55s} {1/dt:6.1f} FPS  {1000*dt:5.2f} ms")
for rep in range(2):
    v.render_scene = full_render; v.state.show_panel = True; measure("full frame (capsules, panel, overlays)")
    v.render_scene = clear_only; v.state.show_panel = True; measure("simulation + clear + panel (no 3D scene)")
    v.render_scene = clear_only; v.state.show_panel = False; measure("simulation + clear + HUD only (no 3D, no panel)")
v.close()
