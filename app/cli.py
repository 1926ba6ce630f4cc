"""`pfnn-viewer` (and `run_viewer.py`): the command line, the display check, and the headless run.

Command-line paths are the shell's (resolved against the current folder); the panel's are the work
folder's (`app/paths.py`). Headless mode renders `--frames` frames offscreen (EGL) and fails (exit 1)
on any file it could not use, before rendering, instead of quietly showing something else.
"""

import argparse
import os
import sys
from pathlib import Path

# One BLAS/OpenMP thread unless the user asks otherwise: batch-1 inference gains nothing from more, and
# their idle workers spin on a small CPU, starving a software rasteriser (measured on 2 cores: inference
# 13.8 -> 0.7 ms per tick, frame 66 -> 37 ms). Effective when this module is imported before numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

from app.paths import DEFAULT_MODEL  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="pfnn-viewer", description="Real-time PFNN character viewer.")
    parser.add_argument("--model", default=str(DEFAULT_MODEL), help="checkpoint (.safetensors) to run")
    parser.add_argument("--bvh", help="start playing this BVH file")
    parser.add_argument("--headless", action="store_true", help="render offscreen (EGL), no window")
    parser.add_argument("--script", help='scripted input JSON: {"segments": [{"duration", "move": [x, z], '
                                         '"run", "face": [x, z], "style": "name" or {"name": weight}}]}')
    parser.add_argument("--frames", type=int, default=240, help="frames to run in headless mode")
    parser.add_argument("--screenshot", help="save the last frame to this PNG (headless mode)")
    parser.add_argument("--video", help="record every frame to this MP4 (headless: the --frames frames at "
                                        "60 fps; in a window: until the viewer closes)")
    parser.add_argument("--record", help="record the live character to BVH from the first frame until the viewer "
                                         "closes (a folder: a file named by date and time); journaled to disk "
                                         "meanwhile, so a crash leaves a take the next start offers back")
    parser.add_argument("--capture-dir", help="folder for screenshots and videos taken with the keys "
                                              "(default: captures/ in the work folder)")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=720)
    parser.add_argument("--crowd", type=int, default=1, help="number of characters (network model only)")
    parser.add_argument("--no-panel", action="store_true", help="start with the panel hidden")
    parser.add_argument("--view", choices=("mesh", "capsules", "skeleton"), default="mesh",
                        help="how characters are drawn: skinned body, capsules or thin skeleton")
    parser.add_argument("--msaa", type=int, default=None,
                        help="multisampling (default: 4 on a GPU, 0 on software renderers such as llvmpipe)")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads for BLAS and torch (default 1)")
    args = parser.parse_args(argv)
    # command-line paths are the shell's: resolved against the current folder now
    for name in ("bvh", "script", "screenshot", "video", "capture_dir", "record"):
        if getattr(args, name):
            setattr(args, name, str(Path(getattr(args, name)).expanduser().resolve()))
    if args.model:
        args.model = str(Path(args.model).expanduser().resolve())
    return args


def use_headless_gl() -> None:
    """Select offscreen EGL; must run before pyglet or PyOpenGL is first imported."""
    os.environ["PYGLET_HEADLESS"] = "true"
    os.environ.setdefault("PYOPENGL_PLATFORM", "egl")


def main(argv=None) -> int:
    args = parse_args(argv)
    from pfnn_core.threads import set_thread_counts

    try:
        set_thread_counts(args.threads)
    except ValueError as error:
        print(f"pfnn-viewer: {error}", file=sys.stderr)
        return 2
    if args.headless or os.environ.get("PYGLET_HEADLESS", "").lower() in ("1", "true", "yes"):
        use_headless_gl()
    elif sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        print("pfnn-viewer: no display (DISPLAY is not set). Run it in a desktop session, under a virtual "
              "screen (xvfb-run ./run.sh), or offscreen: ./run.sh --headless --frames 300 --screenshot out.png",
              file=sys.stderr)
        return 2
    script = None
    if args.script:
        from pfnn_core.drive.cli import ScriptError, load_script

        try:
            script = load_script(args.script)
        except ScriptError as error:
            print(f"pfnn-viewer: {error}", file=sys.stderr)
            return 2
    from app.viewer import Viewer  # after the GL choice: it imports pyglet

    viewer = Viewer(args.width, args.height, model_path=args.model, bvh_path=args.bvh, crowd=args.crowd,
                    visible=not args.headless, vsync=not args.headless, show_panel=not args.no_panel,
                    msaa=args.msaa, capture_dir=args.capture_dir)
    viewer.script = script
    viewer.state.view_mode = args.view
    problem = script_style_error(script, viewer) if script is not None and viewer.state.model.path else ""
    if problem:
        print(f"pfnn-viewer: {args.script}: {problem}", file=sys.stderr)
        viewer.close()
        return 2
    if args.record:
        start_recording(viewer, args.record)
    if args.headless:
        return run_headless(viewer, args)
    if args.video:
        viewer.captures.start_video(args.video)
    viewer.run()
    viewer.close()
    end_process(0)
    return 0


def end_process(code: int) -> None:
    """End the process as soon as the window has closed and everything is saved (the video finished,
    the take and the training run's state written, the exit handlers run): the interpreter's own
    teardown of torch, numba's compiler and the GL driver took 1-4 s more, with no window left."""
    import atexit

    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def script_style_error(script, viewer) -> str:
    """Why a script's segment styles do not suit the viewer's running model ('' when they do)."""
    from app.sources.styles import styled
    from pfnn_core.drive.cli import ScriptError, style_weights

    live = styled(viewer.live_source)
    for index, segment in enumerate(script.segments):
        if segment.style is not None:
            try:
                style_weights(segment.style, live.style_names if live else [], f"segments[{index}].style")
            except ScriptError as error:
                return str(error)
    return ""


def start_recording(viewer, path: str) -> None:
    """`--record`: a take from the first frame into `path` (a folder gets a file named by time)."""
    viewer.state.record.path = path + ("/" if Path(path).is_dir() or not path.lower().endswith(".bvh") else "")
    viewer.captures.start_recording(viewer.live_source)


def run_headless(viewer, args) -> int:
    """Render `--frames` frames offscreen; any file that could not be used fails the run (exit 1) with
    its message, before any frame is rendered, instead of quietly showing something else."""
    from app.jobs.capture import save_png

    failures = [message for message in (viewer.state.model.error, viewer.state.playback.error,
                                        viewer.state.record.error) if message]
    if failures:
        for message in failures:
            print(f"pfnn-viewer: {message}", file=sys.stderr)
        viewer.close()
        return 1
    if args.video:
        viewer.captures.start_video(args.video)
        if viewer.state.capture.error:
            print(f"pfnn-viewer: {viewer.state.capture.error}", file=sys.stderr)
            viewer.close()
            return 1
    viewer.run_frames(max(1, args.frames))
    if args.screenshot:
        save_png(viewer.read_pixels(), args.screenshot)
        print(f"saved {args.screenshot}")
    if args.video:
        viewer.captures.stop_video()
        print(viewer.state.capture.error or viewer.state.capture.message)
    if args.record:
        viewer.captures.stop_recording()
        print(viewer.state.record.error or viewer.state.record.message)
    viewer.close()
    return 1 if viewer.state.capture.error or viewer.state.record.error else 0


if __name__ == "__main__":
    sys.exit(main())
