"""Issue 26, fault 10: a video is encoded off the frame loop (pixel buffer reads, a bounded queue, an
encoder thread), through the real headless window and its keys: the file holds the frames the window
showed, frames the encoder cannot take are dropped and counted on the HUD, a stopped recording is a
whole file, and a folder that cannot be written is said in the panel while the viewer runs on."""

import threading
import time

import numpy as np
import pytest
from conftest import make_random_checkpoint
from disk_faults import read_only_folder  # noqa: F401  (fixture)
from pyglet.window import key

from app.jobs.capture import QUEUE_FRAMES
from app.jobs.video_file import VideoError, VideoFile
from app.ui.hud import recording_label

WIDTH, HEIGHT = 320, 240


@pytest.fixture(scope="module")
def viewer(walk_motion, tmp_path_factory):
    from app.viewer import Viewer

    work, config = tmp_path_factory.mktemp("work"), tmp_path_factory.mktemp("config")
    model = make_random_checkpoint(walk_motion, tmp_path_factory.mktemp("ckpt") / "capture.safetensors")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PFNN_VIEWER_HOME", str(work))
        patch.setenv("PFNN_VIEWER_CONFIG", str(config))
        app = Viewer(WIDTH, HEIGHT, model_path=model, visible=False, vsync=False)
        yield app
        app.close()


@pytest.fixture
def capture(viewer, tmp_path):
    """The viewer walking forward, videos going to a fresh folder, the encoder the real one."""
    from pfnn_core.drive.cli import parse_script

    viewer.state.capture.folder, viewer.state.capture.error, viewer.state.capture.message = str(tmp_path), "", ""
    viewer.state.capture.video_size = "auto"
    viewer.captures.drop_late_frames, viewer.captures.open_video_file = False, None
    viewer.script = parse_script({"segments": [{"duration": 1e6, "move": [0.6, 0.8]}]})
    viewer.state.transport.paused = False
    viewer.run_frames(2)
    yield viewer
    if viewer.captures.video is not None:
        viewer.captures.stop_video()
    viewer.script = None


def _toggle_video(viewer, frames=1):
    """Shift+F12 as X11 sends it."""
    viewer.window.dispatch_event("on_key_press", key.LSHIFT, 0)
    viewer.window.dispatch_event("on_key_press", key.F12, key.MOD_SHIFT)
    viewer.window.dispatch_event("on_key_release", key.F12, key.MOD_SHIFT)
    viewer.window.dispatch_event("on_key_release", key.LSHIFT, key.MOD_SHIFT)
    viewer.window.dispatch_events()
    viewer.run_frames(frames)


def _videos(folder):
    return sorted(folder.glob("pfnn-*.mp4"))


def test_the_video_holds_the_frames_the_window_showed(capture, tmp_path):
    import imageio.v3 as iio

    _toggle_video(capture)  # the key's frame queues the start; frames are filmed from the next one
    assert capture.state.capture.video_recording
    capture.run_frames(19)
    capture.state.show_panel = False  # frame 20 alone shows no panel
    capture.run_frames(1)
    shown = capture.read_pixels().astype(int)  # frame 20 of the video, as the window has it
    capture.state.show_panel = True
    capture.run_frames(10)
    _toggle_video(capture)  # stopped at the end of this frame, which is filmed too
    assert not capture.state.capture.video_recording and capture.state.capture.error == ""
    frames = iio.imread(_videos(tmp_path)[-1]).astype(int)
    assert frames.shape == (31, HEIGHT, WIDTH, 3)  # headless: one video frame per 60 Hz frame, none lost
    error = [np.abs(frame - shown).mean() for frame in frames]
    assert error[19] < 3.0  # H.264 keeps the picture within a few levels
    assert error[19] < min(error[18], error[20]) / 4  # and it is that frame, not the one before or after


def test_a_half_size_video_holds_the_window_averaged_over_2x2_pixels(capture, tmp_path):
    import imageio.v3 as iio

    capture.state.capture.video_size = "half"  # the Capture section's choice, drawn in every frame below
    capture.state.open_sections = ("Capture",)
    _toggle_video(capture)
    assert "at half the window's size" in capture.state.capture.message
    capture.run_frames(9)
    capture.state.show_panel = False  # frame 10 alone shows no panel
    capture.run_frames(1)
    shown = capture.read_pixels().astype(float)
    capture.state.show_panel = True
    capture.run_frames(5)
    _toggle_video(capture)
    frames = iio.imread(_videos(tmp_path)[-1]).astype(float)
    assert frames.shape == (16, HEIGHT // 2, WIDTH // 2, 3)
    halved = shown.reshape(HEIGHT // 2, 2, WIDTH // 2, 2, 3).mean(axis=(1, 3))
    error = [np.abs(frame - halved).mean() for frame in frames]
    # each video pixel the mean of its 2x2 window pixels, within a few levels (H.264 at 160x120: 3.1;
    # sampled instead of averaged, by swscale's fast_bilinear, the same frame is 5.5 off)
    assert error[9] < 4.5
    assert error[9] < min(error[8], error[10]) / 4
    capture.state.open_sections = ()


@pytest.mark.parametrize("choice, on_screen, software, shrink", [
    ("auto", True, True, 2), ("auto", True, False, 1), ("auto", False, True, 1),
    ("full", True, True, 1), ("half", False, False, 2)])
def test_auto_halves_only_a_window_on_screen_drawn_on_the_cpu(choice, on_screen, software, shrink):
    from app.jobs.capture_control import video_shrink

    assert video_shrink(choice, on_screen, software) == shrink


class StalledFile(VideoFile):
    """An encoder that stops taking frames until `go` is set (a machine too busy to encode)."""
    go = threading.Event()

    def write(self, frame, count=1):
        self.go.wait(30)
        super().write(frame, count)


def test_frames_the_encoder_cannot_take_are_dropped_counted_and_shown(capture, tmp_path):
    import imageio.v3 as iio

    StalledFile.go.clear()
    capture.captures.drop_late_frames, capture.captures.open_video_file = True, StalledFile
    _toggle_video(capture)
    filmed = 50  # frames whose pixels go to the video (one frame's read is mapped at the next)
    capture.run_frames(filmed + 1)
    video = capture.captures.video
    queued_frames = video.rendered_queued
    assert capture.state.capture.video_dropped == video.dropped > 0
    assert f"{video.dropped} frames dropped" in recording_label(capture.state)
    # the encoder holds one frame and the queue is full: every frame after those is dropped (counted in
    # rendered frames: a slow frame fills two video frames)
    assert queued_frames <= QUEUE_FRAMES + 1
    StalledFile.go.set()
    _toggle_video(capture)
    message = capture.state.capture.message
    assert "frames dropped" in message and capture.state.capture.error == ""
    # dropped frames leave their time to the next one in: the video lasts as long as the frames shown
    frames = iio.imread(_videos(tmp_path)[-1])
    assert len(frames) == pytest.approx((filmed + 2) / 60 * video.fps, abs=1)
    assert recording_label(capture.state) == ""


def _key(viewer, symbol, frames=2):
    viewer.window.dispatch_event("on_key_press", symbol, 0)
    viewer.window.dispatch_event("on_key_release", symbol, 0)
    viewer.window.dispatch_events()
    viewer.run_frames(frames)


def test_the_hud_says_which_recordings_are_running(capture, tmp_path):
    """A BVH take (R) and a video (Shift+F12) at once: the sign names both (it said 'REC video', as for
    the video alone, and the take running under it was not shown)."""
    capture.state.on_screen = True  # the sign is kept out of headless captures' own frames
    capture.state.record.path = str(tmp_path / "take.bvh")
    try:
        _key(capture, key.R)
        assert capture.state.record.recording and recording_label(capture.state) == "REC"
        _toggle_video(capture)
        assert recording_label(capture.state) == "REC BVH + video"
        _key(capture, key.R)
        _key(capture, key.R)  # a take stops on the second R in a row
        assert not capture.state.record.recording and recording_label(capture.state) == "REC video"
        _toggle_video(capture)
        assert recording_label(capture.state) == ""
        assert (tmp_path / "take.bvh").stat().st_size > 0 and len(_videos(tmp_path)) == 1
    finally:
        capture.state.on_screen = False
        capture.state.record.path = "recordings/"


def test_a_recording_is_a_whole_file_only_once_stopped(capture, tmp_path):
    import imageio.v3 as iio

    _toggle_video(capture, frames=30)  # 29 frames filmed after the key's own
    assert _videos(tmp_path) == []  # while recording the frames go to a hidden temporary file
    _toggle_video(capture)
    saved = _videos(tmp_path)
    assert len(saved) == 1 and len(iio.imread(saved[0])) == 30
    assert [path.name for path in tmp_path.iterdir()] == [saved[0].name]  # no temporary file left


def test_a_read_only_folder_is_said_at_once_and_the_viewer_runs_on(capture, read_only_folder):  # noqa: F811
    folder, make_read_only = read_only_folder
    make_read_only()
    capture.state.capture.folder = str(folder)
    _toggle_video(capture)
    error = capture.state.capture.error
    assert not capture.state.capture.video_recording and capture.captures.video is None
    assert error.startswith(f"Could not record {folder}/pfnn-") and error.count(str(folder)) == 1
    assert "read-only" in error and "Error" not in error and error in capture.state.toast_text
    ticks = capture.sim_time
    capture.run_frames(5)
    assert capture.sim_time > ticks


class FailingFile(VideoFile):
    """An encoder whose disk fills up after a few frames."""

    def write(self, frame, count=1):
        if getattr(self, "written", 0) >= 5:
            self.abort()
            raise VideoError(f"{self.path}: the video encoder stopped (No space left on device)")
        self.written = getattr(self, "written", 0) + 1
        super().write(frame, count)


def test_an_encoder_that_fails_while_recording_is_said_and_the_viewer_runs_on(capture, tmp_path):
    capture.captures.open_video_file = FailingFile
    _toggle_video(capture)
    for _ in range(100):  # the UI reads the encoder's failure at the next frame after it happened
        capture.run_frames(1)
        if not capture.state.capture.video_recording:
            break
        time.sleep(0.01)
    error = capture.state.capture.error
    assert not capture.state.capture.video_recording and capture.captures.video is None
    assert error.startswith(f"Could not record {tmp_path}/pfnn-") and "No space left on device" in error
    assert error.count(str(tmp_path)) == 1 and list(tmp_path.iterdir()) == []  # the unfinished file removed
    ticks = capture.sim_time
    capture.run_frames(5)
    assert capture.sim_time > ticks
