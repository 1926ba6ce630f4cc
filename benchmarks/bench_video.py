"""Frame rate while recording a video against without, in the real headless window (EGL; Mesa llvmpipe on
CPU-only machines) or, with `--display`, a visible window on the X display (what a user has; under Xvfb
here), with the panel shown, the character steered by a scripted drive (walks, turns, runs).

    python benchmarks/bench_video.py [--seconds 30] [--block 5] [--width 1280] [--height 720]
                                     [--conversion auto|gpu|encoder] [--sizes full half] [--display]

A headless window's buffer flip is free, so the software rasteriser's work for a frame overlaps the next
frame's CPU work until something reads the pixels; an X window's flip copies the image to the display
and waits for the rasteriser in every frame, recording or not.

One run interleaves the conditions in blocks of `--block` seconds of wall time: a block without
recording, then a block recording each of `--sizes` (the window's size, half of it) in turn, and so on
until each video holds `--seconds`, so a busy machine slows all alike and their ratios hold. Each size's
video is one file: between its blocks the recording is
paused (no frames go to it; the encoder is given the time to empty its queue first, untimed, so a
block without recording does not pay for the one before). The frame loop is the viewer's own
(`Viewer.frame` with the wall-clock dt, then a buffer flip), dropping frames the encoder cannot take,
as the viewer on screen does. `--conversion`: where RGB becomes the video's yuv420p, in a shader pass
before the read (`gpu`) or in the encoder (`encoder`); `auto` as the viewer chooses (the GPU unless the
GL is a software rasteriser). Prints the frame rates, their ratio, the dropped frames, the file's
length and the load average.
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

if "--display" not in sys.argv:  # headless EGL unless asked for the X display's window (before pyglet loads)
    os.environ["PYGLET_HEADLESS"] = "true"
    os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as the viewer does (see app/cli.py)
os.environ.setdefault("OMP_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.paths import DEFAULT_MODEL  # noqa: E402
from app.viewer import Viewer  # noqa: E402
from pfnn_core.drive.cli import parse_script  # noqa: E402

# a steering loop of 16 s: forward, a left and a right turn, a run, a turn round, a side-step
DRIVE = [{"duration": 3.0, "move": [0, 1]}, {"duration": 2.0, "move": [-0.7071, 0.7071]},
         {"duration": 2.0, "move": [0.7071, 0.7071]}, {"duration": 3.0, "move": [1, 0], "run": True},
         {"duration": 3.0, "move": [-1, 0]}, {"duration": 3.0, "move": [0, -1], "face": [1, 0]}]


def run_block(viewer: Viewer, seconds: float, clock: dict) -> tuple[int, float]:
    """Frames for `seconds` of wall time as the viewer's loop runs them: (frames, seconds taken)."""
    start = time.perf_counter()
    frames = 0
    while time.perf_counter() - start < seconds:
        now = time.perf_counter()
        real_dt, clock["last"] = now - clock["last"], now
        viewer.window.dispatch_events()
        viewer.frame(real_dt)
        viewer.window.flip()
        frames += 1
    return frames, time.perf_counter() - start


def pause_video(captures):
    """Take the recording aside (its last frame read into the file first) and wait for the encoder."""
    if captures.pixels is not None:
        captures.queue_frame(captures.pixels.finish())
    video, captures.video = captures.video, None
    while video.frames_written < video.frames_queued and video.error is None:
        time.sleep(0.01)
    return video


def measure(viewer: Viewer, video_seconds: float, block: float, sizes: list[str]) -> dict:
    """Blocks without recording and, in turn, recording each size's video, until each video holds
    `video_seconds` of frames rendered: the frame rate of each condition, and each video's counts."""
    captures, clock = viewer.captures, {"last": time.perf_counter()}
    totals = {condition: [0, 0.0] for condition in ["off", *sizes]}
    videos = dict.fromkeys(sizes)
    while min(totals[size][1] for size in sizes) < video_seconds:
        for condition in totals:
            seconds = block if condition == "off" else min(block, video_seconds - totals[condition][1])
            if seconds <= 0:
                continue
            if condition != "off":
                captures.video = videos[condition]  # resumed (started on its first block)
                if captures.video is None:
                    viewer.state.capture.video_size = condition
                    captures.start_video()
            clock["last"] = time.perf_counter()
            frames, taken = run_block(viewer, seconds, clock)
            totals[condition][0] += frames
            totals[condition][1] += taken
            if condition != "off":
                videos[condition] = pause_video(captures)
    results = {"off": totals["off"][0] / totals["off"][1]}
    for size, video in videos.items():
        captures.video = video
        captures.stop_video()
        results[size] = {"fps": totals[size][0] / totals[size][1], "rendered": totals[size][0],
                         "dropped": video.dropped, "video_frames": video.frames_written, "video_fps": video.fps,
                         "message": viewer.state.capture.message or viewer.state.capture.error}
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(DEFAULT_MODEL))
    parser.add_argument("--seconds", type=float, default=30.0, help="seconds of video to record")
    parser.add_argument("--block", type=float, default=5.0, help="seconds per block of each condition")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=720)
    parser.add_argument("--conversion", choices=("auto", "gpu", "encoder"), default="auto",
                        help="where the colours are converted to yuv420p")
    parser.add_argument("--sizes", nargs="+", choices=("full", "half"), default=["full", "half"],
                        help="video sizes to record, each in its own blocks (half: ffmpeg halves width and height)")
    parser.add_argument("--display", action="store_true",
                        help="a visible window on the X display ($DISPLAY, e.g. under Xvfb) instead of headless EGL")
    parser.add_argument("--out", help="folder for the video (default: a temporary folder, removed)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        viewer = Viewer(args.width, args.height, model_path=args.model, visible=args.display, vsync=False,
                        capture_dir=args.out or scratch)
        viewer.captures.drop_late_frames = True  # as on screen: the viewer never waits for the encoder
        viewer.captures.convert_on_gpu = {"auto": None, "gpu": True, "encoder": False}[args.conversion]
        viewer.script = parse_script({"segments": DRIVE * 20})
        viewer.run_frames(30)  # warm up: body built or read from the cache, shaders compiled
        load_before = os.getloadavg()[0]
        result = measure(viewer, args.seconds, args.block, args.sizes)
        renderer = viewer.ctx.info["GL_RENDERER"]
        viewer.close()
    print(f"{args.width}x{args.height}, {renderer}, conversion {args.conversion}, "
          f"load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}")
    print(f"  without recording:      {result['off']:6.1f} FPS")
    for size in args.sizes:
        video = result[size]
        print(f"  recording, {size:4s} size:  {video['fps']:6.1f} FPS   ratio {video['fps'] / result['off']:.2f}   "
              f"dropped {video['dropped']} of {video['rendered']} rendered frames; video {video['video_frames']} "
              f"frames at {video['video_fps']} fps ({video['video_frames'] / video['video_fps']:.1f} s)")
        print(f"    {video['message']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
