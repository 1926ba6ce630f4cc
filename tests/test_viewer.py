"""Viewer tests: pure pieces (camera, scene interpolation, overlay geometry, input mapping, playback
clips, training job) and the real window rendered headless through EGL (pixels, key events, panel
actions, broken files). One module-scoped viewer is shared to keep the file fast."""

import sys
import threading

import numpy as np
import pytest

from app.input.devices import InputDevices, InputFrame, combine, gamepad_frame, keyboard_frame, radial_deadzone
from app.jobs.training import TrainingJob, eta_seconds
from app.render.camera import OrbitCamera, look_at, perspective, project_points
from app.render.geometry import horizon_ndc_y, spheres_in_view, uncovered_rects
from app.render.overlays import (
    COMMAND_COLOUR,
    PREDICTED_COLOUR,
    OverlayGeometry,
    contacts_geometry,
    phase_geometry,
    trajectory_geometry,
)
from app.render.scene import SceneFrame, drawn_bones, lerp, lerp_phase
from app.sources.playback import load_clip
from pfnn_core.motion import bvh
from pfnn_core.runtime.command import command_from_stick
from pfnn_core.runtime.settings import RuntimeSettings

WIDTH, HEIGHT = 640, 360
WALK = "dataset-2_walk_normal_001.bvh.gz"


# ---- pure pieces ------------------------------------------------------------------------------

def test_look_at_puts_the_target_straight_ahead_and_projects_it_to_the_centre():
    camera = OrbitCamera(yaw=0.7, pitch=0.3, distance=5.0)
    view = look_at(camera.eye(), camera.target)
    target_in_view = view @ np.append(camera.target, 1.0)
    np.testing.assert_allclose(target_in_view[:3], [0, 0, -5.0], atol=1e-5)
    pixel = project_points(camera.target[None], camera.projection(16 / 9) @ view, 1600, 900)[0]
    np.testing.assert_allclose(pixel, [800, 450], atol=1e-3)


@pytest.mark.parametrize("yaw", [0.0, 0.9, 2.5, 4.0])
def test_stick_forward_moves_the_way_the_camera_looks(yaw):
    camera = OrbitCamera(yaw=yaw)
    looking = (camera.target - camera.eye())[[0, 2]]
    looking /= np.linalg.norm(looking)
    settings = RuntimeSettings()
    forward = command_from_stick([0, 1], False, False, camera.view_yaw(), settings).desired_velocity
    right = command_from_stick([1, 0], False, False, camera.view_yaw(), settings).desired_velocity
    np.testing.assert_allclose(forward / np.linalg.norm(forward), looking, atol=1e-9)
    # screen right = looking direction turned clockwise seen from above (x, z) -> (-z, x)
    np.testing.assert_allclose(right / np.linalg.norm(right), [-looking[1], looking[0]], atol=1e-9)


def test_horizon_height_matches_the_camera_pitch():
    """A camera pitched down by a looks at the horizon tan(a)/tan(fov/2) above the screen centre."""
    pitch, fov = np.radians(20.0), np.radians(50.0)
    view = look_at(np.array([0.0, 3.0, 0.0]), np.array([0.0, 3.0 - np.tan(pitch), 1.0]))
    proj = perspective(fov, 16 / 9, 0.1, 100.0)
    assert horizon_ndc_y(proj, view) == pytest.approx(np.tan(pitch) / np.tan(fov / 2), abs=1e-6)


def test_uncovered_rects_tile_the_framebuffer_around_the_panel():
    size, panel = (1280, 720), (830, 12, 438, 696)
    rects = uncovered_rects(size, panel)
    covered = np.zeros(size[::-1], bool)
    for x, y, w, h in rects:
        assert not covered[y:y + h, x:x + w].any()  # no overlap
        covered[y:y + h, x:x + w] = True
    x, y, w, h = panel
    expected = np.ones(size[::-1], bool)
    expected[y:y + h, x:x + w] = False
    assert (covered == expected).all()
    assert uncovered_rects(size, None) == [(0, 0, 1280, 720)]


def test_spheres_behind_or_beside_the_camera_are_culled():
    view = look_at(np.array([0.0, 1.0, 0.0]), np.array([0.0, 1.0, 1.0]))
    view_proj = perspective(np.radians(50.0), 16 / 9, 0.1, 100.0) @ view
    # The right edge of the view at 5 m ahead is x = 5 tan(25 deg) 16/9 = 4.14 m (x is to the left).
    centres = np.array([[0.0, 1.0, 5.0], [0.0, 1.0, -5.0], [50.0, 1.0, 5.0], [-4.75, 1.0, 5.0], [-4.75, 1.0, 5.0]])
    inside = spheres_in_view(centres, np.array([0.5, 0.5, 0.5, 1.0, 0.2]), view_proj)
    # ahead: in; behind: out; far aside: out; centre 0.47 m beyond the edge plane: in with radius 1, out with 0.2
    assert inside.tolist() == [True, False, False, True, False]


def test_camera_follow_is_a_halflife_damper():
    camera = OrbitCamera(follow_halflife=0.5)
    camera.snap(np.zeros(3))
    camera.follow(np.array([2.0, 0.0, 0.0]), 0.5)
    assert camera.target[0] == pytest.approx(1.0)
    for _ in range(10):  # the same half-life in ten small steps lands in the same place
        camera.follow(np.array([2.0, 0.0, 0.0]), 0.05)
    assert camera.target[0] == pytest.approx(1.5)


def _frame(offset=0.0, phase=0.0, **extra) -> SceneFrame:
    parents = np.array([-1, 0, 1, 2])
    joints = np.array([[0, 0, 0], [0, 0.9, 0], [0, 1.3, 0], [0, 1.6, 0]], float) + [offset, 0, 0]
    return SceneFrame(joint_pos=joints, parents=parents, root_pos=np.array([offset, 0, 0.0]),
                      root_dir=np.array([0, 0, 1.0]), phase=phase, **extra)


def test_lerp_interpolates_positions_and_wraps_the_phase_the_short_way():
    middle = lerp(_frame(0.0, phase=0.9), _frame(1.0, phase=0.1), 0.5)
    np.testing.assert_allclose(middle.root_pos, [0.5, 0, 0])
    np.testing.assert_allclose(middle.joint_pos[:, 0], 0.5)
    assert min(middle.phase, 1 - middle.phase) == pytest.approx(0.0, abs=1e-9)
    assert lerp_phase(0.2, 0.4, 0.25) == pytest.approx(0.25)


def test_a_placement_root_with_one_child_is_not_drawn_as_a_bone():
    np.testing.assert_array_equal(drawn_bones(np.array([-1, 0, 1, 2])), [[2, 1], [3, 2]])
    np.testing.assert_array_equal(drawn_bones(np.array([-1, 0, 0])), [[1, 0], [2, 0]])


def test_trajectory_overlay_draws_the_command_apart_from_the_prediction():
    future = np.stack([np.zeros(6), np.zeros(6), np.linspace(0.2, 1.2, 6)], -1)
    command = future + [0.5, 0, 0]
    directions = np.tile([0, 0, 1.0], (6, 1))
    frame = _frame(traj_past_pos=np.zeros((61, 3)), traj_past_dir=np.tile([0, 0, 1.0], (61, 1)),
                   traj_future_pos=future, traj_future_dir=directions,
                   traj_command_pos=command, traj_command_dir=directions)
    points = trajectory_geometry(frame).points

    def drawn_in(colour):
        return next(p.positions for p in points if np.allclose(p.colours[0], colour, atol=1e-6))

    np.testing.assert_allclose(drawn_in(PREDICTED_COLOUR)[:, [0, 2]], future[:, [0, 2]], atol=1e-6)
    np.testing.assert_allclose(drawn_in(COMMAND_COLOUR)[:, [0, 2]], command[:, [0, 2]], atol=1e-6)


def test_contact_markers_are_coloured_by_strength_and_locks_drawn_by_weight():
    frame = _frame(contact_joints=np.array([1, 2]), contacts=np.array([0.0, 1.0]),
                   lock_target=np.array([[0.1, 0, 0], [0.3, 0, 0]]), lock_weight=np.array([0.0, 0.8]))
    geometry = contacts_geometry(frame)
    markers = geometry.points[0]
    assert markers.colours[1, 1] > markers.colours[0, 1]  # planted is greener
    assert markers.sizes_px[1] > markers.sizes_px[0]
    crosses = geometry.lines[0]
    assert len(crosses.starts) == 2  # one cross (two strokes) for the one held pin
    np.testing.assert_allclose((crosses.starts + crosses.ends)[:, [0, 2]] / 2, [[0.3, 0], [0.3, 0]], atol=1e-6)


def test_phase_needle_turns_clockwise_from_the_facing():
    # facing +Z: a quarter cycle points to the character's right, which is -X in a right-handed Y-up frame
    tip = phase_geometry(_frame(phase=0.25), radius=1.0).points[0].positions[0]
    np.testing.assert_allclose(tip[[0, 2]], [-1.0, 0.0], atol=1e-6)


def test_joint_axes_follow_the_joint_rotation():
    from scipy.spatial.transform import Rotation

    from app.render.overlays import joint_axes_geometry

    rotation = Rotation.from_euler("y", 90, degrees=True)
    x, y, z, w = rotation.as_quat()
    frame = _frame(joint_rot=np.tile([w, x, y, z], (4, 1)))
    lines = joint_axes_geometry(frame, length=1.0).lines[0]
    axes = (lines.ends - lines.starts).reshape(3, 4, 3)[:, 0]  # local X, Y, Z of the first joint
    np.testing.assert_allclose(axes, rotation.as_matrix().T, atol=1e-6)  # rows = the rotated unit axes


def test_keys_make_a_unit_stick_and_flags():
    from pyglet.window import key

    np.testing.assert_allclose(keyboard_frame({key.W}).move, [0, 1])
    np.testing.assert_allclose(keyboard_frame({key.LEFT}).move, [-1, 0])
    diagonal = keyboard_frame({key.W, key.D, key.LSHIFT, key.LALT})
    np.testing.assert_allclose(diagonal.move, [np.sqrt(0.5), np.sqrt(0.5)])
    assert diagonal.run and diagonal.strafe
    side_step = keyboard_frame({key.Q})  # Q / E side-step: a move left / right that keeps the facing
    np.testing.assert_allclose(side_step.move, [-1, 0])
    assert side_step.strafe and not side_step.run
    np.testing.assert_allclose(keyboard_frame({key.W, key.E}).move, [np.sqrt(0.5), np.sqrt(0.5)])
    np.testing.assert_allclose(keyboard_frame({key.W, key.S}).move, [0, 0])


class FakePad:
    def __init__(self, leftx=0.0, lefty=0.0, rightx=0.0, righty=0.0, lefttrigger=0.0, righttrigger=0.0):
        self.leftx, self.lefty, self.rightx, self.righty = leftx, lefty, rightx, righty
        self.lefttrigger, self.righttrigger, self.name = lefttrigger, righttrigger, "fake pad"
        self.opened = False
        self.handlers = {}

    def push_handlers(self, **handlers):
        self.handlers.update(handlers)

    def press(self, button):
        self.handlers["on_button_press"](self, button)

    def open(self):
        self.opened = True

    def close(self):
        self.opened = False


def test_gamepad_axes_map_to_move_camera_run_and_strafe():
    frame = gamepad_frame(FakePad(lefty=-1.0, rightx=1.0, righttrigger=1.0), deadzone=0.1)
    np.testing.assert_allclose(frame.move, [0, 1])  # pyglet's y points down: pushing up is -1
    np.testing.assert_allclose(frame.camera, [1, 0])
    assert frame.run and not frame.strafe
    np.testing.assert_allclose(radial_deadzone([0.05, 0.0], 0.1), [0, 0])
    np.testing.assert_allclose(radial_deadzone([0.55, 0.0], 0.1), [0.5, 0])
    both = combine([InputFrame(np.array([1.0, 0]), False, False, np.zeros(2)),
                    InputFrame(np.array([0, 1.0]), True, False, np.zeros(2))])
    assert np.linalg.norm(both.move) == pytest.approx(1.0) and both.run


def test_missing_input_devices_give_keyboard_only_and_pads_come_and_go(monkeypatch):
    import sys
    import types

    import pyglet

    def no_devices(*args, **kwargs):
        raise FileNotFoundError("[Errno 2] No such file or directory: '/dev/input'")

    # pyglet.input may not even import headless; a stand-in whose device queries fail like a missing /dev/input
    fake_input = types.ModuleType("pyglet.input")
    fake_input.ControllerManager, fake_input.get_controllers = no_devices, no_devices
    monkeypatch.setitem(sys.modules, "pyglet.input", fake_input)
    monkeypatch.setattr(pyglet, "input", fake_input, raising=False)
    devices = InputDevices()
    devices.attach_gamepads()
    assert devices.manager is None and devices.controllers == []
    # passing news, not a fault: a toast, never a line that stays at the panel's bottom
    assert devices.messages == [] and "keyboard and mouse only" in devices.notices[-1]
    assert devices.describe() == "keyboard and mouse"
    np.testing.assert_allclose(devices.frame().move, [0, 0])
    pad = FakePad(leftx=1.0)
    devices.on_connect(pad)
    assert pad.opened and devices.frame().move[0] == pytest.approx(1.0)
    assert devices.notices[-1].startswith("Gamepad connected") and devices.describe().startswith("keyboard and mouse, ")
    pad.press("start")
    pad.press("guide")  # bound to nothing
    assert devices.take_actions() == ["toggle_pause"] and devices.take_actions() == []
    devices.on_disconnect(pad)
    assert devices.controllers == [] and not pad.opened
    np.testing.assert_allclose(devices.frame().move, [0, 0])


def test_the_real_device_query_never_crashes():
    devices = InputDevices()
    devices.attach_gamepads()  # whatever this machine offers (often: nothing at all)
    assert devices.frame().move.shape == (2,)


def test_playback_clip_of_a_real_walk_has_contacts_phase_and_a_forward_facing(bvh_dir):
    clip = load_clip(bvh_dir / WALK)
    assert clip.contacts is not None and clip.contacts.shape == (len(clip.joint_pos), 4)
    assert 0.2 < clip.contacts.mean() < 0.9
    assert np.all((clip.phase >= 0) & (clip.phase < 1))
    velocity = np.diff(clip.root_pos[:, [0, 2]], axis=0)
    heading = velocity / np.linalg.norm(velocity, axis=-1, keepdims=True)
    agreement = np.sum(heading * clip.root_dir[1:, [0, 2]], axis=-1)
    assert np.median(agreement) > 0.95  # a straight walk faces where it goes


def test_broken_bvh_raises_a_value_error(tmp_path, bvh_dir):
    broken = tmp_path / "broken.bvh"
    broken.write_text(bvh.read_bytes(bvh_dir / WALK).decode()[:3000])
    with pytest.raises(ValueError):
        load_clip(broken)


def test_training_job_reports_progress_and_stops_on_request():
    def work(progress, stop):
        for epoch in range(1, 1000):
            progress({"event": "epoch", "epoch": epoch})
            if stop.wait(0.01):
                return "stopped"
        return "ran out"

    job = TrainingJob(work)
    job.start()
    while not job.updates.qsize():
        threading.Event().wait(0.01)
    job.stop()
    job.join(5)
    updates = job.drain()
    assert job.result == "stopped" and job.finished and updates[-1] == {"finished": True}
    assert updates[0] == {"event": "epoch", "epoch": 1}
    assert eta_seconds(10.0, 0.25) == pytest.approx(30.0) and eta_seconds(1.0, 0.0) is None


def test_a_failing_training_job_keeps_its_error():
    job = TrainingJob(lambda progress, stop: 1 / 0)
    job.start()
    job.join(60)
    assert job.error == "division by zero"  # said in words, without the Python class name



def test_the_hud_names_the_gait_by_the_feature_contracts_speeds():
    from app.ui.hud import hud_values

    def frame_at(speed):
        past = np.zeros((61, 3))
        past[:, 2] = np.arange(61) * speed / 60.0  # walking along +Z at `speed` m/s for a second
        return SceneFrame(joint_pos=np.zeros((2, 3)), parents=np.array([-1, 0]), root_pos=past[-1],
                          root_dir=np.array([0.0, 0.0, 1.0]), traj_past_pos=past)

    # the contract's soft labels: 'stand' fades out over 0.1-0.35 m/s (half at 0.225), 'run' in over 1.6-2.2 (half at 1.9)
    expected = {0.15: "stand", 0.21: "stand", 0.25: "walk", 1.85: "walk", 1.95: "run", 3.0: "run"}
    for speed, gait in expected.items():
        values = hud_values(frame_at(speed), None, "", 1 / 60)
        assert values["speed"] == pytest.approx(speed) and values["gait"] == gait, speed
    assert hud_values(frame_at(3.0), "playback", "", 1 / 60)["gait"] == "playback"  # a source's own gait wins

# ---- the real window, headless ------------------------------------------------------------------

@pytest.fixture(scope="module")
def checkpoint_path(random_checkpoint):
    return random_checkpoint


@pytest.fixture(scope="module")
def viewer(checkpoint_path, tmp_path_factory):
    from app.viewer import Viewer

    with pytest.MonkeyPatch.context() as patch:  # the work and settings folders: never the user's
        patch.setenv("PFNN_VIEWER_HOME", str(tmp_path_factory.mktemp("work")))
        patch.setenv("PFNN_VIEWER_CONFIG", str(tmp_path_factory.mktemp("config")))
        app = Viewer(WIDTH, HEIGHT, model_path=checkpoint_path, visible=False, vsync=False)
        yield app
        app.close()


@pytest.fixture
def live(viewer):
    """The viewer back on the live character, standing at the origin, panel hidden, fixed camera."""
    viewer.state.take_requests()
    if viewer.state.playback.active:
        viewer.back_to_live()
    viewer.devices.release_all()
    viewer.script = None
    viewer.state.show_panel, viewer.state.show_help = False, False
    viewer.state.overlays.update(trajectory=False, contacts=False, phase=False, joint_axes=False)
    viewer.state.settings.reset()
    viewer.source.reset()
    viewer._reset_frames()
    viewer.camera.mode, viewer.camera.transition = "follow", 1.0
    viewer.camera.yaw, viewer.camera.pitch, viewer.camera.distance = 0.6, 0.3, 4.5
    viewer.state.transport.paused, viewer.state.transport.speed = False, 1.0
    viewer.state.browser.open = viewer.state.confirm_quit = False
    return viewer


def _joint_pixels(viewer, frame):
    view_proj = viewer.camera.projection(WIDTH / HEIGHT) @ viewer.camera.view()
    return project_points(frame.joint_pos, view_proj, WIDTH, HEIGHT)


def _render(viewer, frames, overlays=None):
    viewer.render_scene(frames) if overlays is None else None
    if overlays is not None:
        viewer.window.switch_to()
        viewer.renderer.render(frames, overlays, viewer.camera, (WIDTH, HEIGHT))
    return viewer.read_pixels().astype(int)


def test_the_window_shows_the_ground_and_the_character_where_its_joints_project(live):
    live.run_frames(5)
    frame = live.interpolated_frames()[0]
    with_character = _render(live, [frame], OverlayGeometry())
    ground_only = _render(live, [], OverlayGeometry())
    # the ground: a checkerboard below the horizon, i.e. two distinct tones near the bottom of the image
    bottom = ground_only[int(HEIGHT * 0.75):, :, :].reshape(-1, 3)
    assert np.ptp(bottom.mean(axis=1)) > 10
    changed = np.abs(with_character - ground_only).sum(axis=-1) > 24
    assert changed.sum() > 500
    pixels = _joint_pixels(live, frame)
    inside = (pixels[:, 0] >= 0) & (pixels[:, 0] < WIDTH) & (pixels[:, 1] >= 0) & (pixels[:, 1] < HEIGHT)
    assert inside.all()
    for x, y in pixels[1:]:  # every drawn joint has character pixels within a few pixels of it
        x, y = int(x), int(y)
        assert changed[max(y - 4, 0):y + 5, max(x - 4, 0):x + 5].any()
    # and nothing is drawn far from the skeleton and its shadow (the joints cast along the sun onto the ground)
    light = live.renderer.light_direction
    shadow = frame.joint_pos - light * (frame.joint_pos[:, 1:2] / light[1])
    view_proj = live.camera.projection(WIDTH / HEIGHT) @ live.camera.view()
    pixels = np.concatenate([pixels, project_points(shadow, view_proj, WIDTH, HEIGHT)])
    low, high = pixels.min(axis=0) - 30, pixels.max(axis=0) + 30
    ys, xs = np.nonzero(changed)
    near = (xs >= low[0]) & (xs <= high[0]) & (ys >= low[1]) & (ys <= high[1])
    assert near.mean() > 0.97


def test_toggling_the_trajectory_overlay_changes_the_image_around_the_trajectory(live):
    live.script = _script([{"duration": 10.0, "move": [0.0, 1.0]}])
    live.run_frames(45)
    frame = live.interpolated_frames()[0]
    from app.render.overlays import build_overlays

    without = _render(live, [frame], build_overlays(frame, {"trajectory": False}))
    with_overlay = _render(live, [frame], build_overlays(frame, {"trajectory": True}))
    changed = np.abs(with_overlay - without).sum(axis=-1) > 30
    assert changed.sum() > 100
    path = np.concatenate([frame.traj_past_pos, frame.traj_future_pos, frame.traj_command_pos])
    pixels = project_points(path, live.camera.projection(WIDTH / HEIGHT) @ live.camera.view(), WIDTH, HEIGHT)
    low, high = pixels.min(axis=0) - 25, pixels.max(axis=0) + 25
    ys, xs = np.nonzero(changed)
    assert np.mean((xs >= low[0]) & (xs <= high[0]) & (ys >= low[1]) & (ys <= high[1])) > 0.97


def _script(segments):
    from pfnn_core.drive.cli import parse_script

    return parse_script({"segments": segments})


@pytest.mark.parametrize("symbol_name, expected", [("W", "forward"), ("D", "right"), ("LEFT", "left")])
def test_injected_keys_move_the_character_relative_to_the_camera(live, symbol_name, expected):
    from pyglet.window import key

    live.state.settings.root_motion_from_command = 1.0  # root follows the command (random test network)
    live.camera.yaw = 2.2
    looking = (live.camera.target - live.camera.eye())[[0, 2]]
    looking /= np.linalg.norm(looking)
    direction = {"forward": looking, "right": np.array([-looking[1], looking[0]]),
                 "left": np.array([looking[1], -looking[0]])}[expected]
    start = live.cur_frames[0].root_pos[[0, 2]].copy()
    symbol = getattr(key, symbol_name)
    live.window.dispatch_event("on_key_press", symbol, 0)
    live.run_frames(60)
    live.window.dispatch_event("on_key_release", symbol, 0)
    moved = live.cur_frames[0].root_pos[[0, 2]] - start
    assert np.linalg.norm(moved) > 0.3
    assert np.dot(moved / np.linalg.norm(moved), direction) > 0.9


def test_strafing_keeps_the_facing_held_when_the_key_went_down(live):
    from pyglet.window import key

    facing = live.cur_frames[0].root_dir[[0, 2]].copy()
    live.input.on_key_press(key.E, 0)
    live.input.on_key_press(key.D, 0)
    command = live.current_command()
    live.input.on_key_release(key.D, 0)
    live.input.on_key_release(key.E, 0)
    assert command.strafe and np.allclose(command.facing, facing / np.linalg.norm(facing))
    assert command.speed > 0
    assert not live.current_command().strafe and live.strafe_facing is None


def test_tune_values_set_in_the_panel_state_reach_the_runtime(live):
    live.state.settings.beta = 5.0  # inside the model's range (trained at 8: 4..16)
    live.state.settings.drift_window = 12
    live.run_frames(2)
    character = live.live_source.character
    assert character.settings is live.state.settings
    assert character.settings.drift_window == 12
    assert float(character.model.model.beta) == pytest.approx(5.0)


def _error_pixels(image):
    """Pixels of the panel's error colour (reddish text)."""
    red, green, blue = image[..., 0], image[..., 1], image[..., 2]
    return int(np.sum((red > 200) & (green < 140) & (blue < 140)))


def test_the_window_says_it_is_starting_instead_of_staying_black(live):
    # a newcomer's first start showed a black window for ~30 s while the runtime's kernels compiled
    from app.viewer import STARTING_NOTICE

    live.draw_notice(STARTING_NOTICE)
    image = live.read_pixels().astype(int)
    horizon = np.round(np.array(live.renderer.palette.horizon) * 255)
    height, width = image.shape[:2]
    corner = image[: height // 8, : width // 8].reshape(-1, 3)
    assert np.abs(corner - horizon).max() <= 2  # the sky's colour, not black
    middle = image[height // 3: 2 * height // 3, width // 8: 7 * width // 8]
    text = (middle.min(axis=-1) > 225).sum()  # the notice's light letters on its dark box
    box = (np.abs(middle - horizon).max(axis=-1) > 40).sum()
    assert text > 200 and box > 5 * text, (text, box)  # letters inside a box
    live.run_frames(1)


def test_a_broken_checkpoint_from_the_panel_shows_an_error_and_the_model_keeps_running(live, tmp_path):
    live.state.show_panel = True
    running = live.source
    live.run_frames(2)
    before = _error_pixels(live.read_pixels())
    broken = tmp_path / "broken.safetensors"
    broken.write_bytes(b"this is not a checkpoint")
    live.state.request("load_model", str(broken))
    live.run_frames(3)
    assert "broken.safetensors" in live.state.model.error
    assert live.source is running and live.state.model.path != str(broken)
    assert _error_pixels(live.read_pixels()) > before + 20  # the message is drawn in red


def test_loading_another_checkpoint_hot_swaps_the_running_character(live, checkpoint_path, tmp_path):
    import shutil

    other = tmp_path / "other.safetensors"
    shutil.copy(checkpoint_path, other)
    live.state.settings.root_motion_from_command = 1.0
    live.script = _script([{"duration": 10.0, "move": [1.0, 0.0]}])
    live.run_frames(30)
    character, position = live.live_source.character, live.cur_frames[0].root_pos.copy()
    live.state.request("load_model", str(other))
    live.run_frames(1)
    assert live.state.model.path == str(other) and live.state.model.error == ""
    assert live.live_source.character is character  # swapped in place: same character, new network
    assert np.linalg.norm(live.cur_frames[0].root_pos - position) < 0.1  # it keeps its place


def test_a_broken_bvh_from_the_panel_shows_an_error_and_nothing_else_changes(live, tmp_path, bvh_dir):
    running = live.source
    broken = tmp_path / "broken.bvh"
    broken.write_text(bvh.read_bytes(bvh_dir / WALK).decode().replace("Frame Time:", "Frame Tme:"))
    live.state.request("open_bvh", str(broken))
    live.run_frames(2)
    assert "broken.bvh" in live.state.playback.error
    assert live.source is running and not live.state.playback.active


def test_playback_from_the_panel_plays_a_real_bvh_with_its_contacts(live, bvh_dir):
    live.state.request("open_bvh", str(bvh_dir / WALK))
    live.run_frames(2)
    assert live.state.playback.active and live.state.playback.error == ""
    frame = live.cur_frames[0]
    assert frame.contacts is not None and len(frame.joint_pos) == 22
    time_before = live.source.time
    live.run_frames(30)
    assert live.source.time == pytest.approx(time_before + 30 / 60.0, abs=1e-6)
    live.state.request("seek", 1.0)
    live.run_frames(1)  # requests are handled after the frame's UI pass
    assert live.source.time == pytest.approx(1.0)
    live.state.request("live")
    live.run_frames(1)
    assert live.source is live.live_source


def test_recording_writes_a_bvh_that_loads_back(live, tmp_path):
    live.state.record.path = str(tmp_path / "take.bvh")
    live.state.request("record_start")
    live.run_frames(20)
    live.state.request("record_stop")
    live.run_frames(1)
    assert live.state.record.error == ""
    motion = bvh.load(tmp_path / "take.bvh")
    assert motion.num_frames >= 19 and motion.names == list(live.live_source.character.model.names)


def test_the_interactive_loop_steps_the_simulation_on_the_clock(live):
    import pyglet

    frames, ticks = live.frame_count, live.sim_time
    pyglet.clock.schedule_once(lambda dt: pyglet.app.exit(), 0.5)
    try:
        live.run()
    finally:
        # pyglet's event loop switches this class flag off for good, and a headless window created
        # afterwards (the CLI test) would then dispatch its first resize before it is ready
        pyglet.window.Window._enable_event_queue = True
    assert live.frame_count > frames and live.sim_time > ticks
    assert live.sim_time - ticks <= (live.frame_count - frames) * 4 / 60.0 + 1e-9  # never more than 4 steps a frame


def test_crowd_positions_start_at_the_origin_on_a_grid():
    from app.sources.live import crowd_positions

    grid = crowd_positions(64)
    np.testing.assert_allclose(grid[0], [0, 0])
    assert len(np.unique(np.round(grid, 6), axis=0)) == 64
    distances = np.linalg.norm(grid[:, None] - grid[None], axis=-1) + np.eye(64) * 99
    assert distances.min() == pytest.approx(1.6)


def test_headless_cli_writes_a_screenshot(tmp_path, viewer):
    from PIL import Image

    from app.cli import main

    script = tmp_path / "walk.json"
    script.write_text('{"segments": [{"duration": 1.0, "move": [0, 1]}]}')
    out = tmp_path / "shot.png"
    assert main(["--headless", "--model", "", "--script", str(script),
                 "--frames", "20", "--width", "320", "--height", "200", "--screenshot", str(out)]) == 0
    image = np.asarray(Image.open(out))
    assert image.shape == (200, 320, 3) and image.std() > 5


def test_no_display_gives_a_clear_message_instead_of_a_traceback(monkeypatch, capsys):
    from app.cli import main
    if not sys.platform.startswith("linux"):
        pytest.skip("display detection is for X11/Wayland")
    for name in ("PYGLET_HEADLESS", "DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    assert main([]) == 2
    message = capsys.readouterr().err
    assert "no display" in message and "--headless" in message
