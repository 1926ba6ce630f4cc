"""Issue 26: the faults a newcomer found in the real window, each replayed through a headless pyglet
window with the key symbols pyglet really sends (X11 reports Shift+',' as '<'), real mouse events and
real imgui frames."""

import re
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import click_widget, make_random_checkpoint
from pyglet.window import key, mouse

from app.input import keys

WIDTH, HEIGHT = 1024, 600
VIEW_POINT = (250, 200)  # pyglet coordinates (y up) of a point over the 3D view

# What X11 (XLookupString, US layout) sends for a key pressed with Shift, written out here by hand.
X11_SHIFTED = {key.COMMA: key.LESS, key.PERIOD: key.GREATER, key.BRACKETLEFT: key.BRACELEFT,
               key.BRACKETRIGHT: key.BRACERIGHT, key.BACKSLASH: key.BAR, key._1: key.EXCLAMATION,
               key._2: key.AT, key._3: key.HASH, key._4: key.DOLLAR, key.SLASH: key.QUESTION}


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return {"work": tmp_path_factory.mktemp("work"), "config": tmp_path_factory.mktemp("config")}


@pytest.fixture(scope="module")
def viewer(walk_motion, folders, tmp_path_factory):
    from app.viewer import Viewer

    model = make_random_checkpoint(walk_motion, tmp_path_factory.mktemp("ckpt") / "newcomer.safetensors")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PFNN_VIEWER_HOME", str(folders["work"]))
        patch.setenv("PFNN_VIEWER_CONFIG", str(folders["config"]))
        app = Viewer(WIDTH, HEIGHT, model_path=model, visible=False, vsync=False)
        yield app
        if app.training.job is not None:
            app.training.job.stop()
            app.training.job.join(60)
        app.close()


@pytest.fixture
def ui(viewer):
    """The viewer live, panel shown with no section open, the mouse over the 3D view."""
    state = viewer.state
    state.take_requests()
    viewer.input.on_deactivate()
    state.show_panel, state.show_help, state.browser.open, state.open_sections = True, False, False, ()
    state.transport.paused, state.transport.speed = False, 1.0
    state.overlays.update(trajectory=False, contacts=False, phase=False, joint_axes=False)
    state.stop_armed_until = 0.0
    _mouse_to(viewer, *VIEW_POINT)  # left of the panel, below the HUD: the 3D view
    viewer.run_frames(2)
    assert not viewer.imgui.io().want_capture_mouse
    return viewer


def _mouse_to(viewer, x, y):
    viewer.window.dispatch_event("on_mouse_motion", x, y, 0, 0)
    viewer.window.dispatch_events()  # a window queues the events it is sent until then
    for _ in range(30):  # imgui takes in its queued key and mouse events a few a frame
        viewer.run_frames(1)
        if tuple(viewer.imgui.io().mouse_pos) == (x, viewer.window.height - y):
            return


def _press(viewer, symbol, modifiers=0, frames=2):
    """A key as an X11 keyboard sends it: Shift down, the (shifted) symbol down and up, Shift up."""
    if modifiers & key.MOD_SHIFT:
        viewer.window.dispatch_event("on_key_press", key.LSHIFT, 0)
        symbol = X11_SHIFTED.get(symbol, symbol)
    viewer.window.dispatch_event("on_key_press", symbol, modifiers)
    viewer.window.dispatch_event("on_key_release", symbol, modifiers)
    if modifiers & key.MOD_SHIFT:
        viewer.window.dispatch_event("on_key_release", key.LSHIFT, key.MOD_SHIFT)
    viewer.window.dispatch_events()
    viewer.run_frames(frames)


# ---- fault 1: shifted bindings with the symbols X11 sends ---------------------------------------

def test_every_shifted_binding_works_with_the_symbol_x11_sends(viewer):
    shifted = [(c.action, symbol) for c in keys.CONTROLS if not c.held for symbol, mods in c.keys
               if mods == keys.SHIFT]
    assert ("rewind_second", key.COMMA) in shifted
    for action, symbol in shifted:
        assert keys.action_for_key(X11_SHIFTED.get(symbol, symbol), key.MOD_SHIFT) == action
        assert keys.action_for_key(symbol, key.MOD_SHIFT) == action  # Windows and macOS send the key itself
    assert keys.action_for_key(key.LESS, 0) is None  # '<' on a key of its own is no binding


def test_shift_comma_goes_one_second_back_in_the_window(ui):
    ui.run_frames(90)
    ticks = ui.sim_time
    _press(ui, key.COMMA, key.MOD_SHIFT, frames=1)
    assert ui.state.transport.paused
    assert ui.sim_time == pytest.approx(ticks - 1.0, abs=2 / 60)


# ---- faults 2 and 3: takes never overwrite each other; R stops a take only when pressed twice -----

def test_takes_are_named_by_time_and_one_stray_r_does_not_stop_a_take(ui, folders):
    recordings = folders["work"] / "recordings"
    saved = []
    for _ in range(2):
        _press(ui, key.R)
        ui.run_frames(10)
        _press(ui, key.R)  # one R during a take: it goes on, and the HUD says how to stop it
        assert ui.state.record.recording and "press R again" in ui.state.toast_text
        ui.run_frames(5)
        _press(ui, key.R)
        assert not ui.state.record.recording and ui.state.record.error == ""
        saved.append(Path(ui.state.record.last_path))
        time.sleep(0.002)
    files = sorted(recordings.glob("*.bvh"))
    assert len(files) == 2 and files == sorted(saved)
    assert all(re.fullmatch(r"pfnn-\d{8}-\d{6}-\d{3}(-\d+)?\.bvh", f.name) for f in files)
    assert saved[0].name in ui.state.toast_text or saved[1].name in ui.state.toast_text


def test_a_take_is_named_by_when_it_started_as_a_recovered_one_is(ui):
    import datetime

    _press(ui, key.R)
    started = ui.captures.recorder.started
    assert abs((datetime.datetime.now() - started).total_seconds()) < 5
    ui.captures.recorder.started = started - datetime.timedelta(minutes=3)  # a three-minute take
    ui.run_frames(3)
    _press(ui, key.R)
    _press(ui, key.R)
    assert not ui.state.record.recording
    assert Path(ui.state.record.last_path).name.startswith(f"pfnn-{started - datetime.timedelta(minutes=3):%Y%m%d-%H%M%S}")


def test_a_take_saved_to_a_name_already_taken_gets_a_new_name(ui, tmp_path):
    earlier = tmp_path / "take.bvh"
    earlier.write_text("an earlier take")
    ui.state.record.path = str(earlier)
    try:
        for symbol in (key.R, key.R, key.R):
            _press(ui, symbol, frames=4)
    finally:
        ui.state.record.path = "recordings/"
    assert earlier.read_text() == "an earlier take"
    assert Path(ui.state.record.last_path) == tmp_path / "take-2.bvh" and (tmp_path / "take-2.bvh").stat().st_size > 0


def test_keys_typed_while_the_mouse_is_over_the_panel_do_not_steer(ui):
    ui.state.open_sections = ("Model",)
    ui.run_frames(2)
    x0, y0, x1, y1 = ui.state.field_rects["model"]
    _mouse_to(ui, (x0 + x1) / 2, HEIGHT - y1 - 30)  # over the panel, below the field: a label, not a field
    click = ((x0 + x1) / 2, HEIGHT - y1 - 30)
    ui.window.dispatch_event("on_mouse_press", *click, mouse.LEFT, 0)
    ui.window.dispatch_event("on_mouse_release", *click, mouse.LEFT, 0)
    ui.window.dispatch_events()
    ui.run_frames(2)
    assert ui.imgui.io().want_capture_mouse and not ui.imgui.io().want_text_input
    before = (dict(ui.state.overlays), ui.state.view_mode, ui.state.transport.paused, ui.state.style.selected)
    for symbol in (key.R, key.K, key.T, key.C, key.P, key.N, key.M, key.W):
        _press(ui, symbol, frames=1)
    assert not ui.state.record.recording and ui.state.take_requests() == []
    assert (dict(ui.state.overlays), ui.state.view_mode, ui.state.transport.paused, ui.state.style.selected) == before
    assert key.W not in ui.devices.held
    _mouse_to(ui, *VIEW_POINT)  # back over the 3D view: the keys steer again
    _press(ui, key.T, frames=1)
    assert ui.state.overlays["trajectory"]


def test_a_key_pressed_right_after_the_mouse_leaves_the_panel_steers_and_one_right_after_it_arrives_does_not(ui):
    """X delivers a pointer move and a key in one batch, before the next frame; imgui's capture flags are
    its last frame's until then. A newcomer's W, pressed as the mouse left the panel, was thrown away
    (and a held key is sent once, so it never walked); W pressed as the mouse arrived on it steered."""
    x0, y0, x1, y1 = ui.state.field_rects["panel"]
    over_panel = ((x0 + x1) / 2, HEIGHT - (y0 + y1) / 2)
    _mouse_to(ui, *over_panel)
    assert ui.imgui.io().want_capture_mouse
    ui.window.dispatch_event("on_mouse_motion", *VIEW_POINT, 0, 0)  # off the panel, W down in the same batch
    ui.window.dispatch_event("on_key_press", key.W, 0)
    ui.window.dispatch_events()
    ui.run_frames(2)
    assert key.W in ui.devices.held
    ui.run_frames(40)
    speed = np.hypot(*ui.live_source.character.state.root_vel[0])
    ui.window.dispatch_event("on_key_release", key.W, 0)
    ui.window.dispatch_events()
    ui.run_frames(2)
    assert key.W not in ui.devices.held and speed > 0.3
    ui.window.dispatch_event("on_mouse_motion", *over_panel, 0, 0)  # onto the panel, T and W in the same batch
    ui.window.dispatch_event("on_key_press", key.T, 0)
    ui.window.dispatch_event("on_key_release", key.T, 0)
    ui.window.dispatch_event("on_key_press", key.W, 0)
    ui.window.dispatch_events()
    ui.run_frames(3)
    assert key.W not in ui.devices.held and not ui.state.overlays["trajectory"]
    ui.window.dispatch_event("on_key_release", key.W, 0)
    _mouse_to(ui, *VIEW_POINT)
    _press(ui, key.T, frames=1)  # a tap over the view, pressed and released in one batch, still acts
    assert ui.state.overlays["trajectory"]


def test_a_setting_typed_past_its_range_says_so_on_the_hud_and_in_full_in_the_panel_until_cleared(ui):
    ui.state.messages.clear()
    ui.state.settings.lean_per_acceleration = 10.0  # what Ctrl+click and typing 10 into its slider does
    ui.run_frames(3)
    assert ui.state.settings.lean_per_acceleration == 5.0  # the setting's own range
    assert "clamped to 5" in ui.state.toast_text
    assert ui.state.messages and ui.state.messages[-1].endswith("clamped to 5")  # the whole reason, not cut
    x0, y0, x1, y1 = ui.state.field_rects["clear_messages"]
    assert x1 <= ui.state.field_rects["panel"][2]
    click_widget(ui, "clear_messages")
    assert ui.state.messages == []
    ui.state.settings.lean_per_acceleration = 2.0


# ---- fault 4: a training run never replaces an earlier model ------------------------------------

def test_training_start_keeps_the_earlier_model_under_save_to(ui, tmp_path, bvh_dir):
    earlier = tmp_path / "mine.safetensors"
    earlier.write_bytes(b"a better model")
    train = ui.state.train
    train.out, train.bvh_dir, train.epochs = str(earlier), str(bvh_dir), 1
    assert train.auto_swap is False  # a finished toy run does not replace the running model unasked
    ui.state.request("start_training", {"resume": False})
    ui.run_frames(1)
    job = ui.training.job
    job.stop()
    job.join(60)
    ui.run_frames(2)
    assert earlier.read_bytes() == b"a better model"
    assert Path(train.out).expanduser() == tmp_path / "mine-2.safetensors"
    assert "mine-2.safetensors" in train.notice and train.error == ""


def test_switching_the_forms_kind_takes_that_kinds_learning_rate_unless_one_was_typed():
    from app.jobs.training import DEFAULT_LEARNING_RATES
    from app.ui.sections.train import switch_kind
    from app.ui.state import TrainPanel
    from pfnn_core.models.mvae.train import MVAETrainConfig
    from pfnn_core.training.config import TrainConfig

    assert DEFAULT_LEARNING_RATES == {"pfnn": TrainConfig().lr, "mvae": MVAETrainConfig().lr}
    form = TrainPanel()
    assert form.learning_rate == TrainConfig().lr
    switch_kind(form, "mvae")
    assert (form.kind, form.learning_rate) == ("mvae", MVAETrainConfig().lr)
    form.learning_rate = 2e-3  # typed: kept across switches
    switch_kind(form, "pfnn")
    assert (form.kind, form.learning_rate) == ("pfnn", 2e-3)


def test_the_train_section_trains_a_motion_vae_and_plots_its_held_out_loss_per_term_live(ui, tmp_path, bvh_dir):
    import shutil

    folder = tmp_path / "clips"
    folder.mkdir()
    for name in ("walk", "run", "walk-turn-left"):  # a real run, on three clips
        shutil.copy(bvh_dir / f"dataset-2_{name}_normal_001.bvh.gz", folder)
    state, train = ui.state, ui.state.train
    state.open_sections = ("Train",)
    train.kind, train.bvh_dir, train.out = "mvae", str(folder), str(tmp_path / "vae.safetensors")
    train.hidden, train.epochs, train.policy_epochs = 32, 1, 1
    state.field_rects.clear()
    ui.run_frames(2)
    assert "policy_epochs" in state.field_rects and "phase_function" not in state.field_rects
    state.request("start_training", {"resume": False})
    ui.run_frames(1)
    assert ui.training.running and train.error == ""
    deadline = time.monotonic() + 240
    while "vae" not in train.term_loss and time.monotonic() < deadline and ui.training.running:
        ui.run_frames(5)
        time.sleep(0.2)
    panel = state.field_rects["panel"]
    for _ in range(30):  # the curves are below the fold: the wheel over the panel
        if "train_terms_vae" in state.field_rects:
            break
        ui.window.dispatch_event("on_mouse_motion", (panel[0] + panel[2]) / 2, 100, 0, 0)
        ui.window.dispatch_event("on_mouse_scroll", (panel[0] + panel[2]) / 2, 100, 0, -1)
        ui.run_frames(2)
    job = ui.training.job
    job.stop()
    job.join(120)
    ui.run_frames(2)
    terms = train.term_loss["vae"]  # the first epoch's held-out losses, one per term of the VAE stage
    assert set(terms) == {"total", "reconstruction", "kl", "foot", "acceleration"}
    assert all(len(values) == 1 and np.isfinite(values[0]) and values[0] >= 0 for values in terms.values())
    assert terms["total"][0] >= terms["reconstruction"][0]  # the total holds the reconstruction and more
    assert train.epochs_x == [1.0] and train.val_loss == [pytest.approx(terms["total"][0])]
    assert "train_terms_vae" in state.field_rects and train.error == ""
    from app.jobs.training import training_config

    train.hidden, train.epochs = 64, 5  # Resume takes the stopped run's own settings, not the form's
    resumed = training_config(train, True, tmp_path)
    assert (resumed.hidden, resumed.vae_epochs, resumed.policy_epochs, resumed.threads) == (32, 1, 1, 1)
    assert resumed.resume.endswith("vae.resume.safetensors")
    train.kind = "pfnn"  # the same file resumed as a PFNN: refused at once, the file and its kind named
    with pytest.raises(ValueError, match=r"vae\.resume\.safetensors: a Motion VAE run's checkpoint"):
        training_config(train, True, tmp_path)
    train.kind, state.open_sections = "pfnn", ()


# ---- fault 5 and the HUD: paths shown can be typed back; the model's kind ------------------------

def test_the_running_models_path_as_shown_loads_when_typed_back(ui):
    from app.paths import display_path

    shown = display_path(ui.state.model.path)
    assert Path(shown).expanduser().is_absolute()
    assert ui.state.resolve(shown) == Path(ui.state.model.path).resolve()
    kind = ui.live_source.character.model.kind
    names = {"pfnn": "PFNN: ", "matching": "Motion matching: ", "mvae": "Motion VAE: "}
    assert ui.state.source_label.startswith(names[kind])


def test_a_shipped_file_typed_by_its_repository_name_opens(ui, folders):
    """The README names the shipped files from the repository ('assets/models/matching.safetensors');
    typed into a field that opens a file, such a name opens it when the work folder has no such file."""
    from conftest import click_widget

    from app.paths import REPOSITORY, resolve_existing

    name = "assets/bvh/bandai-namco-ds2-styles/dataset-2_walk_feminine_002.bvh.gz"
    ui.state.open_sections = ("Playback",)
    ui.run_frames(2)
    click_widget(ui, "playback")
    for char in name:
        ui.window.dispatch_event("on_key_press", ord(char.lower()) if char.isalnum() else key.MINUS, 0)
        ui.window.dispatch_event("on_text", char)
        ui.window.dispatch_event("on_key_release", ord(char.lower()) if char.isalnum() else key.MINUS, 0)
    ui.run_frames(len(name) + 1)
    _press(ui, key.RETURN, frames=3)
    try:
        assert ui.state.playback.error == "" and ui.state.playback.active
        assert Path(ui.state.playback.path) == REPOSITORY / name
        ui.state.playback.path = name  # as typed (the field shows the path it opened once it has)
        ui.run_frames(1)
        click_widget(ui, "playback_browse")  # its "..." opens where the field's file is, the file selected
        ui.run_frames(2)
        browser = ui.state.browser
        assert browser.open and Path(browser.folder) == (REPOSITORY / name).parent
        assert browser.name == Path(name).name and browser.error == ""
    finally:
        ui.state.browser.open = False
        ui.state.request("live")
        ui.run_frames(1)
    mine = folders["work"] / "assets" / "bvh"
    mine.mkdir(parents=True, exist_ok=True)
    assert resolve_existing("assets/bvh", folders["work"]) == mine  # the work folder's own file comes first
    assert resolve_existing("assets/none.bvh", folders["work"]) == folders["work"] / "assets" / "none.bvh"


def test_the_hud_keeps_the_physics_mode_on_screen_and_g_says_when_no_body_can_be_made(ui):
    from types import SimpleNamespace

    from app.ui.hud import physics_label

    assert ui.state.physics.mode == "off" and physics_label(ui.state) == ""
    _press(ui, key.G, frames=3)  # this test model's feet are never flat on its floor: no body
    assert ui.state.physics.mode == "off" and ui.state.physics.error
    assert ui.state.toast_text.startswith("Physics off: Could not build the physics body")
    shown = SimpleNamespace(physics=SimpleNamespace(mode="on", pushes=0, error=""))
    assert physics_label(shown) == "physics on"
    shown.physics.mode, shown.physics.pushes = "both", 2
    assert physics_label(shown) == "physics both, 2 pushes"


# ---- fault 12: F12 confirms on screen ------------------------------------------------------------

def test_f12_shows_a_toast_naming_the_screenshot(ui, folders):
    _press(ui, key.F12, frames=1)
    shots = sorted((folders["work"] / "captures").glob("pfnn-*.png"))
    assert shots and shots[-1].name in ui.state.toast_text and ui.state.toast_until > time.monotonic()


# ---- fault 7: one formatter for errors ----------------------------------------------------------

def test_errors_name_the_path_once_and_no_python_class():
    from app.jobs.training import TrainingJob
    from app.ui.messages import failure_message, user_error

    assert user_error(ValueError("/x/notes.bvh: /x/notes.bvh: line 1: bad token")) == "/x/notes.bvh: line 1: bad token"
    assert user_error("ValueError: 3 problems stop training:") == "3 problems stop training:"
    assert failure_message("open", "/x/a.bvh", ValueError("/x/a.bvh: /x/a.bvh: line 2: no HIERARCHY")) == \
        "Could not open /x/a.bvh: line 2: no HIERARCHY"

    def fail(progress, stop):
        raise ValueError("3 problems stop training:\n- a\n- b\n- c")

    job = TrainingJob(fail)
    job.start()
    job.join(120)  # the thread imports torch first
    assert job.error.startswith("3 problems stop training:") and "ValueError" not in job.error


# ---- fault 6: the Editor checks cut times and drops stale results -------------------------------

def test_impossible_cut_times_are_refused_and_the_old_report_goes(ui, bvh_dir):
    from app.ui.sections.editor import PieceRow, piece_problem

    clip = str(sorted(Path(bvh_dir).glob("*.bvh*"))[0])
    panel = ui.state.editor
    panel.pieces = [PieceRow(clip, start=9.0, end=6.47, duration=6.47)]
    panel.report = ["0->1: cut 5.00 / 1.00 s (an earlier build)"]
    assert "start 9.00 s is outside the clip" in piece_problem(panel.pieces[0])
    assert piece_problem(PieceRow(clip, start=1.0, end=7.0, duration=6.47)).startswith("end 7.00 s is past")
    assert piece_problem(PieceRow(clip, start=1.0, end=6.0, duration=6.47)) is None
    ui.state.open_sections = ("Editor",)
    ui.state.request("editor", "preview")
    ui.run_frames(2)
    assert "piece 0" in panel.error and "start 9.00 s is outside the clip" in panel.error
    assert panel.report == [] and not ui.state.playback.active
    panel.pieces, panel.error = [], ""


# ---- fault 9: one epoch count, named, and why the run ended -------------------------------------

def test_the_run_summary_names_the_last_and_the_best_epoch_and_why_it_ended():
    from types import SimpleNamespace

    from app.jobs.training_runner import run_summary

    result = SimpleNamespace(stopped=False, early_stopped=True, epochs_completed=92, best_epoch=82,
                             best_val_loss=0.1234, out_path="/m/x.safetensors")
    text = run_summary(result, 300)
    assert "Ran 92 of 300 epochs" in text and "stopped early" in text and "epoch 82" in text
    assert "all epochs run" in run_summary(SimpleNamespace(**{**vars(result), "early_stopped": False}), 92)
    assert "stopped by you" in run_summary(SimpleNamespace(**{**vars(result), "stopped": True}), 300)


# ---- fault 11: the browser of an empty field opens in the work folder (the takes for playback) --

def test_the_browser_of_an_empty_field_opens_in_the_work_folder_or_the_takes(ui, folders):
    from conftest import click_widget

    state = ui.state
    (folders["work"] / "recordings").mkdir(exist_ok=True)
    for section, field_id, attribute, expected in (("Model", "model", "load_path", folders["work"]),
                                                   ("Playback", "playback", "path", folders["work"] / "recordings")):
        panel = getattr(state, {"model": "model", "playback": "playback"}[field_id])
        setattr(panel, attribute, "")
        state.open_sections = (section,)
        ui.run_frames(2)
        click_widget(ui, f"{field_id}_browse")
        assert state.browser.open and Path(state.browser.folder) == expected
        state.browser.open = False
        ui.run_frames(1)


# ---- what users of Unity and Blender expect: F frames the character ------------------------------

def test_f_frames_the_whole_character_from_where_the_camera_looks(ui):
    camera = ui.camera
    camera.distance, camera.yaw = 20.0, 2.0  # far away, from the side
    _press(ui, key.F, frames=1)
    framed = camera.framing_distance(camera.frame_margin)
    assert camera.distance == pytest.approx(framed, rel=0.05) and framed < 10 and camera.yaw == pytest.approx(2.0)
    camera.set_mode("free")
    _press(ui, key.F, frames=1)
    assert camera.mode == "follow" and camera.distance == pytest.approx(framed, rel=0.05)
    camera.reset()  # the image test of the framing: tests/test_viewer_expectations.py
