"""Viewer usability: the faults a new user hit (each replayed through a real headless pyglet window with
injected key and mouse events and real imgui frames), the transport controls, camera modes, capture,
the control table behind the keys and the help, and the file browser."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import click_widget, make_random_checkpoint
from pyglet.window import key, mouse

from app.input import keys
from app.jobs.capture import VideoRecorder, capture_name
from app.render.camera import CAMERA_MODES, Camera, project_points
from app.transport import StateHistory, TransportPanel, next_speed, scaled_real_dt
from app.ui.file_browser import RecentFolders, list_folder
from app.ui.messages import details, failure_message, one_line, short_paths
from app.ui.sections.train import loss_plot_limits
from pfnn_core.motion import bvh
from pfnn_core.runtime.command import command_from_stick
from pfnn_core.runtime.settings import RuntimeSettings

WIDTH, HEIGHT = 1000, 700
ROOT = Path(__file__).resolve().parents[1]
SIM_DT = 1.0 / 60.0


# ---- the viewer, one per module ----------------------------------------------------------------

@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return {"work": tmp_path_factory.mktemp("work"), "config": tmp_path_factory.mktemp("config")}


@pytest.fixture(scope="module")
def model_with_gait_speeds(walk_motion, tmp_path_factory):
    """A checkpoint whose measured gait speeds differ from the settings' dataclass defaults."""
    return make_random_checkpoint(walk_motion, tmp_path_factory.mktemp("gait") / "gait.safetensors",
                                  extra_meta={"gait_speeds": {"walk": 1.09, "run": 2.8}})


@pytest.fixture(scope="module")
def viewer(model_with_gait_speeds, folders):
    from app.viewer import Viewer

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PFNN_VIEWER_HOME", str(folders["work"]))
        patch.setenv("PFNN_VIEWER_CONFIG", str(folders["config"]))
        app = Viewer(WIDTH, HEIGHT, model_path=model_with_gait_speeds, visible=False, vsync=False)
        yield app
        if app.training.job is not None:
            app.training.job.stop()
            app.training.job.join(60)
        app.close()


@pytest.fixture
def ui(viewer):
    """The viewer live, at the origin, panel shown with no section open, nothing else open."""
    viewer.state.take_requests()
    if viewer.state.playback.active:
        viewer.back_to_live()
    viewer.input.on_deactivate()  # no key or button left held down by an earlier test
    viewer.script = None
    state = viewer.state
    state.show_panel, state.show_help, state.confirm_quit, state.browser.open = True, False, False, False
    state.open_sections = ()
    state.transport.paused, state.transport.speed = False, 1.0
    state.overlays.update(trajectory=False, contacts=False, phase=False, joint_axes=False)
    state.playback.error = state.model.error = state.train.error = ""
    viewer.camera.mode, viewer.camera.transition = "follow", 1.0
    viewer.source.reset()
    viewer._reset_frames()
    state.show_panel = False  # a text field not drawn for a frame is left (imgui drops its focus)
    # the mouse over the 3D view (left of the panel, below the HUD): keys typed over the panel never steer
    viewer.window.dispatch_event("on_mouse_motion", 250, 200, 0, 0)
    viewer.window.dispatch_events()
    viewer.run_frames(3)
    state.show_panel = True
    viewer.run_frames(2)
    assert not viewer.imgui.io().want_text_input
    return viewer


def _leave_text_fields(viewer):
    for _ in range(3):
        if not viewer.imgui.io().want_text_input:
            return
        viewer.window.dispatch_event("on_key_press", key.ESCAPE, 0)
        viewer.window.dispatch_event("on_key_release", key.ESCAPE, 0)
        viewer.run_frames(1)


def _type(viewer, text):
    """Key presses as a keyboard makes them: the key (no modifiers), its text, its release."""
    for char in text:
        symbol = ord(char.lower())
        viewer.window.dispatch_event("on_key_press", symbol, 0)
        viewer.window.dispatch_event("on_text", char)
        viewer.window.dispatch_event("on_key_release", symbol, 0)
    viewer.run_frames(len(text) + 1)  # imgui takes in about one key per frame


def _press(viewer, symbol, modifiers=0, frames=2):
    """A key as a keyboard sends it: modifier keys down, the key down and up, modifier keys up."""
    held = [(mask, modifier_key) for mask, modifier_key in ((key.MOD_CTRL, key.LCTRL), (key.MOD_SHIFT, key.LSHIFT))
            if modifiers & mask]
    down = 0
    for mask, modifier_key in held:
        viewer.window.dispatch_event("on_key_press", modifier_key, down)
        down |= mask
    viewer.window.dispatch_event("on_key_press", symbol, modifiers)
    viewer.window.dispatch_event("on_key_release", symbol, modifiers)
    for mask, modifier_key in held:
        viewer.window.dispatch_event("on_key_release", modifier_key, down)
        down &= ~mask
    viewer.window.dispatch_events()  # a window queues the events it is sent until then
    viewer.run_frames(frames)


# ---- fault 1: Escape never quits; quitting while training asks first ---------------------------

def test_escape_in_a_text_field_leaves_the_field_and_the_window_stays_open(ui):
    ui.state.open_sections = ("Model",)
    ui.run_frames(2)
    click_widget(ui, "model")
    assert ui.imgui.io().want_text_input  # editing the path
    _press(ui, key.ESCAPE)
    assert not ui.closed and not ui.window.has_exit
    assert not ui.imgui.io().want_text_input  # Escape left the field
    _press(ui, key.ESCAPE)  # and with nothing to leave, it still does not quit
    assert not ui.closed and not ui.window.has_exit


def _running_job(viewer):
    from app.jobs.training import TrainingJob

    def work(progress, stop):
        stop.wait(30)
        return None

    viewer.training.job = TrainingJob(work)
    viewer.training.job.start()
    viewer.state.train.running = True
    return viewer.training.job


def test_closing_or_quitting_while_training_asks_first(ui):
    job = _running_job(ui)
    ui.window.dispatch_event("on_close")  # the window's close button
    ui.run_frames(1)
    assert ui.state.confirm_quit and not ui.closed and not ui.window.has_exit and job.running
    _press(ui, key.ESCAPE)  # Escape answers "keep working"
    assert not ui.state.confirm_quit and not ui.closed
    _press(ui, key.Q, key.MOD_CTRL)
    assert ui.state.confirm_quit and not ui.closed
    ui.state.request("quit_now")  # "Stop training and quit"
    ui.run_frames(1)
    assert ui.closed and not job.running and job.stop_event.is_set()
    ui.closed, ui.state.confirm_quit = False, False
    ui.poll_training()


# ---- fault 2: resume and output checked first, Stop at every stage, no stale lines -------------

def test_resume_without_a_checkpoint_fails_at_once(ui, tmp_path):
    train = ui.state.train
    train.out, train.resume_path = str(tmp_path / "model.safetensors"), ""
    ui.state.request("start_training", {"resume": True})
    ui.run_frames(1)
    assert ui.training.job is None and not train.running
    assert "nothing to resume" in train.error and "model.resume.safetensors" in train.error
    assert train.status == "" and train.progress == 0.0 and train.eta_s is None


def test_an_output_that_cannot_be_written_fails_at_once(ui, tmp_path):
    (tmp_path / "a_file").write_text("not a folder")
    train = ui.state.train
    train.out = str(tmp_path / "a_file" / "model.safetensors")
    ui.state.request("start_training", {"resume": False})
    ui.run_frames(1)
    assert ui.training.job is None and "Save to" in train.error and "is a file, not a folder" in train.error


def _finish_job(viewer, limit=200):
    for _ in range(limit):
        if viewer.training.job is None:
            return
        viewer.training.job.join(0.5)
        viewer.run_frames(1)
    raise AssertionError("the training job did not end")


def test_stop_works_while_the_data_loads_and_clears_the_progress_lines(ui, tmp_path, bvh_dir):
    train = ui.state.train
    train.bvh_dir, train.out = str(bvh_dir), str(tmp_path / "model.safetensors")
    ui.state.request("start_training", {"resume": False})
    ui.run_frames(1)
    job = ui.training.job
    assert job is not None and train.running
    for _ in range(400):  # until the first file has been read
        ui.run_frames(1)
        if re.search(r"Loading data: [1-9]\d*/\d+ files", train.status):
            break
        job.join(0.05)
    assert re.search(r"Loading data: [1-9]\d*/\d+ files", train.status)
    ui.state.request("stop_training")
    ui.run_frames(1)
    assert train.status == "Stopping..."
    _finish_job(ui)
    assert not train.running and train.progress == 0.0 and train.eta_s is None
    assert train.status.startswith("Stopped while loading data") and train.error == ""
    assert not (tmp_path / "model.safetensors").exists()


def test_a_failed_run_leaves_no_stale_status(ui, tmp_path, bvh_dir):
    data = tmp_path / "data"
    data.mkdir()
    (data / "a_walk.bvh").write_bytes(bvh.read_bytes(bvh_dir / "dataset-2_walk_normal_001.bvh.gz"))
    (data / "b_broken.bvh").write_text("HIERARCHY\nROOT Hips\n{\n")
    train = ui.state.train
    train.bvh_dir, train.out = str(data), str(tmp_path / "model.safetensors")
    ui.state.request("start_training", {"resume": False})
    ui.run_frames(1)
    _finish_job(ui)
    assert "b_broken.bvh" in train.error
    assert train.status == "" and train.progress == 0.0 and train.eta_s is None and not train.running


# ---- fault 3: Ctrl+A and typing in path fields --------------------------------------------------

def test_a_click_in_a_path_field_then_typing_replaces_the_path(ui):
    ui.state.open_sections = ("Model",)
    ui.state.model.load_path = "/a/long/path/to/some/model.safetensors"
    ui.run_frames(2)
    click_widget(ui, "model", x_fraction=0.3)  # a click in the middle of the text
    _type(ui, "new.safetensors")
    assert ui.state.model.load_path == "new.safetensors"
    _leave_text_fields(ui)


def test_ctrl_a_selects_all_even_when_ctrl_went_down_outside_the_window(ui):
    ui.state.open_sections = ("Model",)
    ui.state.model.load_path = ""
    ui.run_frames(2)
    click_widget(ui, "model")
    _type(ui, "first/typed/path")
    # Ctrl was pressed while another window had the focus: only the A arrives, with the Ctrl modifier
    ui.window.dispatch_event("on_key_press", key.A, key.MOD_CTRL)
    ui.run_frames(1)
    ui.window.dispatch_event("on_key_release", key.A, key.MOD_CTRL)
    ui.window.dispatch_event("on_key_release", key.LCTRL, key.MOD_CTRL)
    ui.run_frames(1)
    _type(ui, "x")
    assert ui.state.model.load_path == "x"
    _leave_text_fields(ui)


# ---- fault 4: Reset to defaults restores the loaded model's values ------------------------------

def test_reset_to_defaults_restores_the_loaded_models_gait_speeds(ui):
    settings = ui.state.settings
    assert (settings.walk_speed, settings.run_speed) == (pytest.approx(1.09), pytest.approx(2.8))
    settings.walk_speed, settings.run_speed, settings.drift_window = 2.0, 5.0, 7
    ui.state.open_sections = ("Tune",)
    ui.run_frames(2)
    click_widget(ui, "reset_settings")
    assert settings.walk_speed == pytest.approx(1.09) and settings.run_speed == pytest.approx(2.8)
    assert settings.drift_window == RuntimeSettings().drift_window
    assert ui.live_source.character.settings is settings  # reset in place: the runtime sees it


# ---- fault 5: a binary-garbage BVH gives one readable line -------------------------------------

def test_a_garbage_bvh_gives_one_line_naming_the_file_once_and_the_buttons_stay(ui, tmp_path):
    rng = np.random.default_rng(3)
    garbage = tmp_path / "garbage.bvh"
    garbage.write_bytes(bytes(rng.integers(33, 127, 20000, dtype=np.uint8)))
    ui.state.open_sections = ("Playback", "Record")
    ui.run_frames(2)
    record_field_before = ui.state.field_rects["record"]
    ui.state.request("open_bvh", str(garbage))
    ui.run_frames(2)
    error = ui.state.playback.error
    assert error.count(str(garbage)) == 1 and error.count("garbage.bvh") == 1
    assert "HIERARCHY" in error
    line = one_line(error, 200)
    assert "\n" not in line and max(len(word) for word in line.split() if str(garbage) not in word) <= 40
    assert max(len(word) for word in re.split(r"\s", details(error)) if str(garbage) not in word) <= 40
    record_field_after = ui.state.field_rects["record"]
    line_height = 30
    assert record_field_after[1] - record_field_before[1] <= line_height  # one line of error, no flood
    assert record_field_after[3] < HEIGHT


def test_a_line_too_narrow_for_a_path_names_the_file_and_keeps_the_reason():
    # the newcomer's Model section said "Could not load /tmp/newcomer/home/nope/missing.safetensors:..."
    # and the reason was only in the tooltip
    message = "Could not load /tmp/newcomer/home/nope/missing.safetensors: no such checkpoint file"
    assert short_paths(message) == "Could not load missing.safetensors: no such checkpoint file"
    assert short_paths("Could not open '/data/clips/walk.bvh': line 3: bad") == "Could not open 'walk.bvh': line 3: bad"
    assert short_paths("line 3: expected 6 channels, got 3") == "line 3: expected 6 channels, got 3"


def test_failure_messages_name_the_path_once():
    path = "/data/clips/walk.bvh"
    assert failure_message("open", path, bvh.BVHError(f"{path}: line 3: bad")) == f"Could not open {path}: line 3: bad"
    assert failure_message("open", path, FileNotFoundError(2, "No such file", path)).count(path) == 1
    assert one_line("x" * 300, 50).endswith("...") and len(one_line("x" * 300, 50)) <= 50


# ---- fault 6: the loss plot after one epoch; the curves inside the plot -------------------------

def _colour_pixels(image, colour, tolerance=40):
    target = np.array(colour[:3]) * 255
    return int(np.sum(np.abs(image.astype(int) - target).max(axis=-1) < tolerance))


def test_the_loss_plot_shows_the_first_epoch(ui):
    from app.ui.theme import VALIDATION_COLOUR

    train = ui.state.train
    train.epochs_x, train.train_loss, train.val_loss, train.plot_epochs = [1.0], [0.8], [0.9], 20
    ui.state.open_sections = ("Train",)
    ui.run_frames(3)
    x0, y0, x1, y1 = (int(v) for v in ui.state.field_rects["loss_plot"])
    plot = ui.read_pixels()[y0:y1, x0:x1]
    assert _colour_pixels(plot, VALIDATION_COLOUR) > 10
    train.epochs_x, train.train_loss, train.val_loss = [], [], []


def test_loss_plot_limits_hold_both_curves_whatever_the_form_says():
    xs, train_loss, val_loss = [1, 2, 3, 4], [1.0, 0.5, 0.3, 0.2], [2.0, 0.9, 0.05, 0.04]
    x0, x1, y0, y1 = loss_plot_limits(xs, train_loss, val_loss, run_epochs=2)  # the form says 2 now
    assert x0 <= min(xs) and x1 >= max(xs)
    assert y0 < min(val_loss) and y1 > max(val_loss)
    x0, x1, y0, y1 = loss_plot_limits([1], [0.7], [0.7], run_epochs=20)  # one point: a real range
    assert x1 == 20 and y0 < 0.7 < y1


# ---- fault 7: headless runs fail on bad files ---------------------------------------------------

@pytest.mark.parametrize("option, name", [("--bvh", "missing.bvh"), ("--model", "bad.safetensors")])
def test_headless_with_a_bad_file_fails_with_a_clear_message(tmp_path, capsys, viewer, option, name):
    from app.cli import main

    target = tmp_path / name
    if name.startswith("bad"):
        target.write_bytes(b"not a checkpoint at all")
    code = main(["--headless", option, str(target), "--frames", "2", "--width", "160", "--height", "120"])
    message = capsys.readouterr().err
    assert code == 1 and message.count(str(target)) == 1 and "Could not" in message


# ---- fault 8: field widths and the playback speed value ----------------------------------------

def test_save_to_is_wide_and_the_playback_speed_value_is_beside_its_slider(ui, bvh_dir):
    ui.state.open_sections = ("Train", "Playback")
    ui.state.request("open_bvh", str(bvh_dir / "dataset-2_walk_normal_001.bvh.gz"))
    ui.run_frames(3)
    rects = ui.state.field_rects
    save_to, panel = rects["train_out"], rects["panel"]
    assert save_to[2] - save_to[0] >= 0.5 * (panel[2] - panel[0])  # most of the panel, whatever its width
    slider, value = rects["playback_speed"], rects["playback_speed_value"]
    assert value[0] >= slider[2]  # the value is drawn after the slider, never under its grab
    ui.state.request("live")
    ui.run_frames(1)


# ---- transport ----------------------------------------------------------------------------------

def _walk_script():
    from pfnn_core.drive.cli import parse_script

    return parse_script({"segments": [{"duration": 30.0, "move": [0.6, 0.8]}]})


def test_slow_motion_and_pause_go_through_the_fixed_timestep(ui):
    ui.state.open_sections = ()
    ticks = round(ui.sim_time / SIM_DT)
    ui.state.transport.speed = 0.25
    ui.run_frames(40)
    assert round(ui.sim_time / SIM_DT) - ticks == 10  # 40 frames of 1/60 s at 0.25x: 10 ticks of 1/60 s
    _press(ui, key.K)
    paused_at = ui.sim_time
    ui.run_frames(30)
    assert ui.state.transport.paused and ui.sim_time == paused_at
    _press(ui, key.PERIOD)  # one tick forward
    assert ui.sim_time == pytest.approx(paused_at + SIM_DT)
    assert scaled_real_dt(0.1, TransportPanel(speed=5.0)) == pytest.approx(0.2)  # clamped to 2x
    assert [next_speed(1.0, +1), next_speed(1.0, -1), next_speed(2.0, +1), next_speed(0.1, -1)] == [1.5, 0.75, 2.0, 0.1]


def test_stepping_back_restores_the_state_and_replays_the_same_motion(ui):
    ui.state.settings.root_motion_from_command = 1.0
    ui.script = _walk_script()
    ui.sim_time = 0.0
    ui.source.reset()
    ui._reset_frames()
    ui.run_frames(20)
    at_20 = ui.cur_frames[0].joint_pos.copy()
    ui.run_frames(10)
    at_30 = ui.cur_frames[0].joint_pos.copy()
    assert np.linalg.norm(at_30[0] - at_20[0]) > 0.05  # it moved
    for _ in range(10):
        _press(ui, key.COMMA, frames=0)
    ui.run_frames(1)
    assert ui.state.transport.paused
    np.testing.assert_array_equal(ui.cur_frames[0].joint_pos, at_20)
    _press(ui, key.K, frames=0)  # resume: the same ten ticks again
    ui.run_frames(10)
    np.testing.assert_allclose(ui.cur_frames[0].joint_pos, at_30, atol=1e-9)
    _press(ui, key.COMMA, key.MOD_SHIFT)  # one second back: as far as the history goes (30 ticks)
    assert ui.sim_time == pytest.approx(0.0, abs=1e-9)
    ui.script = None


def test_the_history_is_bounded_by_seconds_and_bytes():
    history = StateHistory(SIM_DT, seconds=1.0, max_bytes=10 ** 9)
    for tick in range(100):
        history.push((np.zeros(4), tick))
    assert len(history) == 60 and history.snapshots[-1][1] == 99
    small = StateHistory(SIM_DT, seconds=5.0, max_bytes=8 * 1000 * 10)
    for tick in range(100):
        small.push((np.zeros(1000), tick))  # 8 kB each: ten fit
    assert len(small) == 10
    assert small.step_back(3)[1] == 96 and small.step_back(100)[1] == 90 and small.step_back(1) is None


# ---- camera ---------------------------------------------------------------------------------------

def test_mode_changes_are_smooth_and_end_in_the_new_mode():
    camera = Camera()
    camera.snap(np.zeros(3))
    for mode in ("fixed", "follow", "free", "orbit", "follow"):
        before = camera.eye().copy()
        camera.set_mode(mode)
        np.testing.assert_allclose(camera.eye(), before, atol=1e-9)  # no jump at the switch
        last, biggest = camera.eye().copy(), 0.0
        for _ in range(60):
            camera.follow(np.array([0.01, 0, 0.0]) * _, 1 / 60)
            biggest = max(biggest, float(np.linalg.norm(camera.eye() - last)))
            last = camera.eye().copy()
        assert camera.transition == 1.0 and camera.mode == mode and biggest < 0.3


def test_fixed_keeps_its_place_and_the_character_in_view_orbit_turns_by_itself():
    camera = Camera()
    camera.snap(np.zeros(3))
    camera.set_mode("fixed")
    eye = camera.eye().copy()
    for _ in range(120):
        camera.follow(np.array([3.0, 0.0, 1.0]), 1 / 60)
    np.testing.assert_allclose(camera.eye(), eye)
    centre = project_points(camera.target[None], camera.projection(1.0) @ camera.view(), 100, 100)[0]
    np.testing.assert_allclose(centre, [50, 50], atol=1e-3)
    camera.set_mode("orbit")
    camera.follow(camera.target, 1.0)
    camera.follow(camera.target, 1.0)
    yaw = camera.yaw
    camera.follow(camera.target, 0.5)
    assert camera.yaw == pytest.approx((yaw + 0.5 * camera.orbit_rate) % (2 * np.pi))


@pytest.mark.parametrize("mode", CAMERA_MODES)
def test_the_stick_moves_the_way_the_camera_looks_in_every_mode(mode):
    camera = Camera(yaw=1.1)
    camera.snap(np.array([2.0, 0, 1.0]))
    camera.set_mode(mode)
    camera.orbit(0.4, 0.1)
    for _ in range(60):
        camera.follow(np.array([2.0, 0, 1.0]), 1 / 60)
    looking = (camera.look_point() - camera.eye())[[0, 2]]
    looking /= np.linalg.norm(looking)
    forward = command_from_stick([0, 1], False, False, camera.view_yaw(), RuntimeSettings()).desired_velocity
    np.testing.assert_allclose(forward / np.linalg.norm(forward), looking, atol=1e-6)


def test_free_fly_moves_the_camera_with_the_right_button_held_and_the_character_stands(ui):
    _press(ui, key._3)
    assert ui.camera.mode == "free"
    ui.run_frames(40)  # the transition ends
    eye, root = ui.camera.eye().copy(), ui.cur_frames[0].root_pos.copy()
    looking = ui.camera.look_point() - eye
    ui.window.dispatch_event("on_mouse_motion", 100, 300, 0, 0)  # over the 3D view, not the panel
    ui.run_frames(1)
    ui.window.dispatch_event("on_mouse_press", 100, 300, mouse.RIGHT, 0)
    ui.window.dispatch_event("on_key_press", key.W, 0)
    ui.run_frames(30)
    ui.window.dispatch_event("on_key_release", key.W, 0)
    ui.window.dispatch_event("on_mouse_release", 100, 300, mouse.RIGHT, 0)
    moved = ui.camera.eye() - eye
    assert np.dot(moved, looking) / np.linalg.norm(looking) == pytest.approx(ui.camera.fly_speed * 0.5, rel=0.05)
    assert np.linalg.norm(ui.cur_frames[0].root_pos - root) < 0.02
    _press(ui, key.HOME)  # reset: back to the default follow view
    assert ui.camera.mode == "follow" and ui.camera.distance == 4.5


# ---- capture --------------------------------------------------------------------------------------

def test_the_screenshot_key_saves_a_png_named_by_time_in_the_capture_folder(ui, folders):
    from PIL import Image

    _press(ui, key.F12, frames=1)
    shots = sorted((folders["work"] / "captures").glob("pfnn-*.png"))
    assert len(shots) == 1 and re.fullmatch(r"pfnn-\d{8}-\d{6}-\d{3}\.png", shots[0].name)
    assert Image.open(shots[0]).size == (WIDTH, HEIGHT)
    assert capture_name("mp4") != capture_name("png")


def test_video_frames_follow_real_time(tmp_path):
    import imageio.v3 as iio

    video = VideoRecorder(tmp_path / "clip.mp4", fps=60)
    frame = np.full((61, 81, 3), 128, np.uint8)  # odd sizes are cropped to even ones
    written = [video.add(frame, 1 / 30), video.add(frame, 1 / 120), video.add(frame, 1 / 120), video.add(frame)]
    video.close()
    assert written == [2, 0, 1, 1]
    frames = iio.imread(tmp_path / "clip.mp4")
    assert frames.shape == (4, 60, 80, 3)


def test_headless_video_from_the_command_line(tmp_path, viewer):
    import imageio.v3 as iio

    from app.cli import main

    out = tmp_path / "run.mp4"
    assert main(["--headless", "--model", "", "--frames", "12", "--width", "160", "--height", "120",
                 "--video", str(out)]) == 0
    frames = iio.imread(out)
    assert frames.shape == (12, 120, 160, 3) and frames.std() > 3


# ---- the control table, the help and the README -----------------------------------------------

def _all_key_symbols():
    return sorted({value for name, value in vars(key).items()
                   if name.isupper() and isinstance(value, int) and not name.startswith(("MOD_", "MOTION_"))})


def test_every_key_does_what_the_table_says_and_nothing_else_does_anything(folders, monkeypatch):
    from app.viewer import Viewer

    monkeypatch.setenv("PFNN_VIEWER_HOME", str(folders["work"]))
    monkeypatch.setenv("PFNN_VIEWER_CONFIG", str(folders["config"]))
    viewer = Viewer(320, 240, model_path="", visible=False, vsync=False, show_panel=False)  # its own: every key
    called = []
    for name in viewer.actions:
        viewer.actions[name] = lambda name=name: called.append(name)
    pressable = {chord: c.action for c in keys.CONTROLS if not c.held and c.action not in keys.TEXT_FIELD_ACTIONS
                 for chord in c.keys}
    x11_shifted = {key.COMMA: key.LESS, key.PERIOD: key.GREATER}  # what X11 sends for Shift+, and Shift+.
    pressable.update({(x11_shifted[symbol], modifiers): action for (symbol, modifiers), action in list(pressable.items())
                      if modifiers == key.MOD_SHIFT and symbol in x11_shifted})
    try:
        viewer.run_frames(1)
        for symbol in _all_key_symbols():
            for modifiers in (0, key.MOD_SHIFT, key.MOD_CTRL):
                called.clear()
                _press(viewer, symbol, modifiers, frames=0)
                expected = [pressable[(symbol, modifiers)]] if (symbol, modifiers) in pressable else []
                assert called == expected, (key.symbol_string(symbol), modifiers)
    finally:
        viewer.close()


def test_every_control_in_the_help_has_a_handler_and_every_other_handler_is_a_panel_request(viewer):
    from app.actions import PANEL_REQUESTS

    pressed = {c.action for c in keys.CONTROLS if not c.held and c.action not in keys.TEXT_FIELD_ACTIONS}
    # one table for keys and panel: the press actions of the help and the declared panel requests, no name in both
    assert pressed | set(PANEL_REQUESTS) == set(viewer.actions) and not pressed & set(PANEL_REQUESTS)
    rows = [row for _, section_rows in keys.help_sections() for row in section_rows]
    assert len(rows) == len(keys.CONTROLS)
    for c, (keys_text, mouse_text, pad_text, description) in zip(keys.CONTROLS, rows):
        assert c.keys or c.mouse or c.gamepad, c.action  # nothing in the help without an input
        for symbol, modifiers in c.keys:
            assert keys.key_label(symbol, modifiers) in keys_text.split(" / ")
    held = {c.action for c in keys.CONTROLS if c.held}
    assert held == {"move_forward", "move_back", "move_left", "move_right", "move", "run", "strafe", "strafe_left",
                    "strafe_right", "camera_turn", "camera_pan", "camera_zoom", "camera_fly"}
    assert keys.mouse_drag_action(mouse.LEFT) == "camera_turn" and keys.action_for_button("start") == "toggle_pause"
    assert keys.mouse_drag_action(mouse.MIDDLE) == keys.mouse_drag_action(mouse.LEFT, key.MOD_SHIFT) == "camera_pan"



def test_the_panels_requests_run_through_the_action_table(ui):
    ui.state.request("toggle_pause")  # what the Time section's Pause button asks for
    ui.run_frames(1)
    assert ui.state.transport.paused
    ui.state.request("camera_orbit")  # the View section's camera selector
    ui.run_frames(1)
    assert ui.camera.mode == "orbit"
    ui.state.request("no_such_action")  # a name nothing handles is said, and the viewer runs on
    ui.run_frames(1)
    assert "no_such_action" in ui.state.messages[-1] and not ui.closed
    ui.state.transport.paused = False

def test_f1_shows_the_help_overlay_and_m_cycles_the_view_mode(ui):
    ui.state.show_panel = False
    ui.run_frames(1)
    without = ui.read_pixels().astype(int)
    _press(ui, key.F1, frames=2)
    assert ui.state.show_help
    with_help = ui.read_pixels().astype(int)
    assert (np.abs(with_help - without).sum(axis=-1) > 30).mean() > 0.3  # a large overlay
    _press(ui, key.ESCAPE)
    assert not ui.state.show_help
    assert ui.state.view_mode == "mesh"
    modes = []
    for _ in range(3):
        _press(ui, key.M, frames=0)
        modes.append(ui.state.view_mode)
    assert modes == ["capsules", "skeleton", "mesh"]


def test_the_readme_controls_table_is_the_control_table():
    readme = (ROOT / "README.md").read_text()
    assert keys.markdown_table() in readme


# ---- files ----------------------------------------------------------------------------------------

def test_the_listing_shows_folders_then_bvh_files(tmp_path):
    for name in ("b.bvh", "A.BVH.GZ", "notes.txt", ".hidden.bvh", "model.safetensors"):
        (tmp_path / name).write_text("x")
    (tmp_path / "sub").mkdir()
    assert [e.name for e in list_folder(tmp_path, "bvh")] == ["sub", "A.BVH.GZ", "b.bvh"]
    assert [e.name for e in list_folder(tmp_path, "checkpoint")] == ["sub", "model.safetensors"]


def test_recent_folders_survive_a_restart_and_a_broken_file(tmp_path):
    store = tmp_path / "config" / "recent.json"
    recent = RecentFolders(store)
    assert recent.remember("bvh", tmp_path / "clips") is None
    recent.remember("checkpoint", tmp_path)
    again = RecentFolders(store)
    assert again.last == {"bvh": str(tmp_path / "clips"), "checkpoint": str(tmp_path)}
    assert again.recent == [str(tmp_path), str(tmp_path / "clips")]
    store.write_text("{not json")
    assert RecentFolders(store).recent == []


def test_the_browser_opens_from_a_path_field_and_its_choice_plays(ui, tmp_path, bvh_dir, folders):
    clips = tmp_path / "clips"
    clips.mkdir()
    (clips / "walk.bvh.gz").write_bytes((bvh_dir / "dataset-2_walk_normal_001.bvh.gz").read_bytes())
    ui.state.playback.path = str(clips / "walk.bvh.gz")
    ui.state.open_sections = ("Playback",)
    ui.run_frames(2)
    click_widget(ui, "playback_browse")
    browser = ui.state.browser
    assert browser.open and browser.folder == str(clips) and browser.name == "walk.bvh.gz"
    ui.run_frames(1)
    assert [e.name for e in browser.entries] == ["walk.bvh.gz"]
    click_widget(ui, "browser_confirm")
    ui.run_frames(1)
    assert not browser.open and ui.state.playback.active and ui.state.playback.path == str(clips / "walk.bvh.gz")
    stored = json.loads((folders["config"] / "recent.json").read_text())
    assert stored["last"]["bvh"] == str(clips)
    ui.state.request("live")
    ui.run_frames(1)


def test_relative_panel_paths_start_in_the_work_folder_not_the_repository(ui, folders, bvh_dir):
    (folders["work"] / "mine").mkdir(exist_ok=True)
    target = folders["work"] / "mine" / "walk.bvh.gz"
    target.write_bytes((bvh_dir / "dataset-2_walk_normal_001.bvh.gz").read_bytes())
    ui.state.request("open_bvh", "mine/walk.bvh.gz")
    ui.run_frames(1)
    assert ui.state.playback.active and ui.state.playback.path == str(target)
    ui.state.record.path = "takes/take.bvh"
    ui.state.request("record_start")
    ui.state.request("live")
    ui.run_frames(5)
    ui.state.request("record_stop")
    ui.run_frames(1)
    assert (folders["work"] / "takes" / "take.bvh").is_file()
    assert not (ROOT / "takes").exists()




def test_enter_in_a_path_field_presses_its_button_and_leaves_the_field(ui, tmp_path):
    ui.state.open_sections = ("Model",)
    ui.run_frames(2)
    click_widget(ui, "model")
    _type(ui, str(tmp_path / "none.safetensors"))
    _press(ui, key.RETURN, frames=3)
    assert "none.safetensors" in ui.state.model.error  # Load was pressed
    assert not ui.imgui.io().want_text_input


def test_the_browser_is_opaque_over_the_panel(ui, tmp_path, bvh_dir):
    """The panel's text read through the open browser's listing (a newcomer's look): whatever lies behind
    it, the browser's pixels are the same."""
    clips = tmp_path / "clips"
    clips.mkdir()
    (clips / "walk.bvh.gz").write_bytes((bvh_dir / "dataset-2_walk_normal_001.bvh.gz").read_bytes())
    ui.state.playback.path = str(clips / "walk.bvh.gz")
    ui.state.open_sections = ("Playback",)
    ui.state.transport.paused = True
    ui.run_frames(2)
    click_widget(ui, "playback_browse")
    ui.run_frames(3)
    assert ui.state.browser.open
    scale = ui.window.get_framebuffer_size()[0] / ui.window.get_size()[0]
    x0, y0, x1, y1 = (round(scale * v) for v in ui.state.field_rects["browser_window"])
    with_panel = ui.read_pixels()
    ui.state.show_panel = False
    try:
        ui.run_frames(3)
        without_panel = ui.read_pixels()
    finally:
        ui.state.show_panel = True
        ui.state.browser.open = False
    inside = (slice(y0 + 4, y1 - 4), slice(x0 + 4, x1 - 4))
    assert x1 < with_panel.shape[1] - 20  # the panel reaches out beside the browser, where it shows ...
    assert (with_panel[:, x1 + 10:] != without_panel[:, x1 + 10:]).any()
    assert np.array_equal(with_panel[inside], without_panel[inside])  # ... and nothing of it through the browser
