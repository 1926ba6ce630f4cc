"""Render drive scripts with one model into short videos for the blind A/B page.

    python -m app.ab JOB.json

JOB.json: {"model": PATH, "width": 640, "height": 360, "fps": 30, "view": "mesh",
"videos": [{"script": {pfnn-drive script}, "path": OUT.mp4}, ...]} (`pfnn_core.evaluation.ab_cli`
writes it). One offscreen viewer renders every drive, each from the same start: the character reset
to the origin in the model's default style, the follow camera in its default view (so two models'
videos of a drive are filmed alike), no panel, no HUD (it names the model) and no overlays. The simulation
ticks at 60 Hz; every `60 / fps`-th state is filmed (H.264, yuv420p). Exit 1 with a message when the
model cannot be used.
"""
import json
import math
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")


def reset_for_drive(viewer, script) -> None:
    """The character at the origin in the model's default style, time zero, the default follow view."""
    import numpy as np

    from app.sources import styles

    live = viewer.live_source
    if styles.styled(live) is not None:
        default = live.checkpoint.card.style_weights()
        live.set_style(np.array([default.get(name, 0.0) for name in live.style_names]))
        styles.sync_style(viewer.state, live)
    viewer.script, viewer.styled_segment, viewer.sim_time = script, None, 0.0
    viewer.timestep.reset()
    viewer.camera.reset()
    viewer.reset_source()  # also snaps the camera onto the character


def render_drive(viewer, script, path, fps: int) -> int:
    """Film one drive from its start to its end into `path`; returns the frames written."""
    from app.jobs.capture import VideoRecorder

    reset_for_drive(viewer, script)
    frame_dt = 1.0 / fps
    recorder = VideoRecorder(path, fps=fps)
    try:
        for _ in range(max(1, math.ceil(script.duration * fps - 1e-6))):
            viewer.simulate(frame_dt)
            frames = viewer.interpolated_frames()
            viewer.camera.follow(frames[0].root_pos, frame_dt, frames[0].joint_pos)  # as the viewer does
            viewer.render_scene(frames)
            recorder.add(viewer.read_pixels())
            viewer.window.flip()
    finally:
        recorder.close()
    return recorder.frames_written


def run_job(job: dict, log=print) -> int:
    from app.cli import use_headless_gl

    use_headless_gl()
    from app.viewer import Viewer  # after the GL choice: it imports pyglet
    from pfnn_core.drive.cli import parse_script

    scripts = [(parse_script(video["script"], video["path"]), video["path"]) for video in job["videos"]]
    fps = int(job.get("fps", 30))
    if 60 % fps:
        raise ValueError(f"fps must divide the 60 Hz simulation rate, got {fps}")
    viewer = Viewer(int(job.get("width", 640)), int(job.get("height", 360)), model_path=job["model"],
                    visible=False, vsync=False, show_panel=False, msaa=job.get("msaa"))
    try:
        if viewer.state.model.error:
            print(f"app.ab: {viewer.state.model.error}", file=sys.stderr)
            return 1
        viewer.state.view_mode = job.get("view", "mesh")
        viewer.state.overlays = dict.fromkeys(viewer.state.overlays, False)  # the body alone is judged
        for script, path in scripts:
            started = time.perf_counter()
            frames = render_drive(viewer, script, path, fps)
            log(f"{script.name}: {frames} frames in {time.perf_counter() - started:.1f} s")
    finally:
        viewer.close()
    return 0


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if len(argv) != 1:
        print("usage: python -m app.ab JOB.json", file=sys.stderr)
        return 2
    with open(argv[0], encoding="utf-8") as handle:
        job = json.load(handle)
    from pfnn_core.threads import set_thread_counts

    set_thread_counts(int(job.get("threads", 1)))
    return run_job(job, log=lambda message: print(f"app.ab: {message}", file=sys.stderr))
