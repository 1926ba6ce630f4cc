"""Issue 26, what users of Unity, Unreal and Blender expect: a camera that pans and frames the body, Q / E
that side-step, a shooter-style strafe, a reset that faces the camera's way, a help that tells devices
apart, a panel that fits small windows, a file browser that shows sizes and dates. Each through a
headless pyglet window with the events pyglet really sends and real imgui frames."""

import numpy as np
import pytest
from conftest import make_random_checkpoint
from pyglet.window import key, mouse
from test_viewer_newcomer import _mouse_to, _press

from app.render.camera import project_points

WIDTH, HEIGHT = 1024, 600
VIEW_POINT = (250, 200)  # pyglet coordinates (y up) over the 3D view


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return {"work": tmp_path_factory.mktemp("work"), "config": tmp_path_factory.mktemp("config")}


@pytest.fixture(scope="module")
def viewer(walk_motion, folders, tmp_path_factory):
    from app.viewer import Viewer

    model = make_random_checkpoint(walk_motion, tmp_path_factory.mktemp("ckpt") / "expect.safetensors")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PFNN_VIEWER_HOME", str(folders["work"]))
        patch.setenv("PFNN_VIEWER_CONFIG", str(folders["config"]))
        app = Viewer(WIDTH, HEIGHT, model_path=model, visible=False, vsync=False)
        yield app
        app.close()


@pytest.fixture
def ui(viewer):
    """The live viewer, panel shown with no section open, the mouse over the 3D view, camera at rest."""
    state = viewer.state
    state.take_requests()
    viewer.input.on_deactivate()
    state.show_panel, state.show_help, state.browser.open, state.open_sections = True, False, False, ()
    state.transport.paused, state.transport.speed = False, 1.0
    state.strafe_default = False
    viewer.camera.reset()
    _mouse_to(viewer, *VIEW_POINT)
    viewer.run_frames(40)  # the camera's transition ends
    assert not viewer.imgui.io().want_capture_mouse
    return viewer


def _screen(viewer, points):
    """Window pixels (x right, y down) of world points as the last frame drew them."""
    width, height = viewer.window.get_size()
    camera = viewer.camera
    return project_points(np.asarray(points, float), camera.projection(width / height) @ camera.view(), width, height)


def _view_box(viewer):
    """(x0, y0, x1, y1) of the view the panel leaves uncovered."""
    width, height = viewer.window.get_size()
    covered = viewer.state.panel_width + 12 if viewer.state.show_panel else 0
    return 0.0, 0.0, width - covered, height


def _drag(viewer, buttons, dx, dy, modifiers=0, steps=4):
    x, y = VIEW_POINT
    viewer.window.dispatch_event("on_mouse_press", x, y, buttons, modifiers)
    for _ in range(steps):
        x, y = x + dx / steps, y + dy / steps
        viewer.window.dispatch_event("on_mouse_drag", x, y, dx / steps, dy / steps, buttons, modifiers)
    viewer.window.dispatch_event("on_mouse_release", x, y, buttons, modifiers)
    viewer.window.dispatch_events()
    viewer.run_frames(1)


# ---- camera: pan, frame, zoom toward the whole body -----------------------------------------------

@pytest.mark.parametrize("buttons, modifiers", [(mouse.MIDDLE, 0), (mouse.LEFT, key.MOD_SHIFT)])
def test_a_pan_drags_the_view_with_the_mouse(ui, buttons, modifiers):
    ui.state.transport.paused = True  # the character and so the followed point stand still
    ui.run_frames(30)
    look, yaw = ui.camera.look_point().copy(), ui.camera.yaw
    before = _screen(ui, [look])[0]
    _drag(ui, buttons, 60, 40, modifiers)
    after = _screen(ui, [look])[0]
    np.testing.assert_allclose(after - before, [60, -40], atol=0.5)  # pyglet's y is up, image rows go down
    assert ui.camera.yaw == yaw  # a pan does not turn
    _press(ui, key.F, frames=40)  # F centres the character again
    np.testing.assert_allclose(ui.camera.pan_offset, 0)


def test_a_plain_left_drag_still_turns_the_camera(ui):
    yaw = ui.camera.yaw
    _drag(ui, mouse.LEFT, 80, 0)
    assert ui.camera.yaw != pytest.approx(yaw) and np.allclose(ui.camera.pan_offset, 0)


def _body_on_screen(viewer):
    frame = viewer.cur_frames[0]
    joints = _screen(viewer, frame.joint_pos)
    feet = _screen(viewer, frame.joint_pos[frame.contact_joints] * [1, 0, 1])  # the soles on the floor
    return np.concatenate([joints, feet])


def test_f_frames_the_whole_body_inside_the_uncovered_view(ui):
    ui.state.transport.paused = True
    camera = ui.camera
    camera.distance, camera.pitch, camera.yaw = 25.0, 0.6, 2.0  # far away, from above and the side
    ui.run_frames(2)
    far = np.ptp(_body_on_screen(ui)[:, 1])
    _press(ui, key.F, frames=40)
    x0, y0, x1, y1 = _view_box(ui)
    points = _body_on_screen(ui)
    assert (points[:, 0] > x0).all() and (points[:, 0] < x1).all()
    assert (points[:, 1] > y0).all() and (points[:, 1] < y1).all()
    span = np.ptp(points[:, 1])
    assert span > 0.5 * (y1 - y0) and span > 3 * far  # the body fills the view, not a speck in it
    assert camera.yaw == pytest.approx(2.0) and camera.pitch == pytest.approx(0.6)  # from where it looked


def test_a_close_up_zooms_toward_the_whole_body_and_never_cuts_off_the_feet(ui):
    ui.state.transport.paused = True
    ui.state.overlays["phase"] = False  # the body alone decides (the ring's own test is below)
    try:
        _press(ui, key.F, frames=40)
        framed = ui.camera.distance
        for _ in range(40):
            ui.window.dispatch_event("on_mouse_scroll", *VIEW_POINT, 0, 1)
        ui.window.dispatch_events()
        ui.run_frames(2)
        assert ui.camera.distance < framed  # closer than F's framing
        x0, y0, x1, y1 = _view_box(ui)
        points = _body_on_screen(ui)
        assert (points[:, 1] > y0).all() and (points[:, 1] < y1).all()  # head and feet both in view
        assert (points[:, 0] > x0).all() and (points[:, 0] < x1).all()
        assert np.ptp(points[:, 1]) > 0.75 * (y1 - y0)
    finally:
        ui.state.overlays["phase"] = True


def _zoom_all_the_way_in(viewer, phase_shown: bool) -> float:
    viewer.state.overlays["phase"] = phase_shown
    for _ in range(60):
        viewer.window.dispatch_event("on_mouse_scroll", *VIEW_POINT, 0, 1)
    viewer.window.dispatch_events()
    viewer.run_frames(30)  # the body's smoothed extent settles
    return viewer.camera.distance


def _phase_ring(root, count=24):
    from app.render.overlays import PHASE_DIAL_RADIUS

    angles = np.linspace(0, 2 * np.pi, count, endpoint=False)
    return np.stack([root[0] + PHASE_DIAL_RADIUS * np.cos(angles), np.zeros(count),
                     root[2] + PHASE_DIAL_RADIUS * np.sin(angles)], -1)  # the dial on the floor


def test_the_closest_zoom_keeps_the_phase_ring_in_view_when_it_is_drawn(ui):
    ui.state.transport.paused = True
    shown = dict(ui.state.overlays)
    try:
        without = _zoom_all_the_way_in(ui, phase_shown=False)
        with_ring = _zoom_all_the_way_in(ui, phase_shown=True)
        x0, y0, x1, y1 = _view_box(ui)
        points = _screen(ui, _phase_ring(ui.cur_frames[0].root_pos))
        assert (points[:, 0] > x0).all() and (points[:, 0] < x1).all()
        assert (points[:, 1] > y0).all() and (points[:, 1] < y1).all()
        assert with_ring >= without - 1e-6  # the ring only ever keeps the camera further off
    finally:
        ui.state.overlays = shown


def test_the_framing_widens_at_the_floor_to_the_ground_reach_and_keeps_the_top_as_the_body():
    from app.render.camera import Camera

    results = {}
    for reach in (0.0, 0.55):
        camera = Camera(aspect=1024 / 600, body_top=1.75, body_radius=0.35, ground_reach=reach)
        camera.target = np.array([0.0, camera.body_top / 2, 0.0])
        camera.zoom(100)  # as close as it goes
        ring = project_points(_phase_ring(np.zeros(3)), camera.projection(camera.aspect) @ camera.view(), 1024, 600)
        results[reach] = camera.distance, ring[:, 1].max()
    assert results[0.0][1] > 600  # a body 0.35 m wide alone lets the near side of a 0.55 m ring off the bottom
    assert results[0.55][1] < 600 and results[0.55][0] > results[0.0][0]


def test_a_placement_root_metres_away_is_no_part_of_the_body_the_camera_frames():
    from app.render.camera import Camera
    from app.render.framing import body_joints
    from app.render.scene import SceneFrame

    body = np.array([[0, 0.93, 0], [0, 1.41, 0], [0.1, 0.1, 0], [-0.1, 0.1, 0]])  # hips, head, feet
    root = np.array([[0.0, 0.0, 4.5]])  # the shipped model's joint_Root where the network leaves it
    frame = SceneFrame(joint_pos=np.concatenate([root, body]), parents=np.array([-1, 0, 1, 1, 1]),
                       root_pos=np.zeros(3), root_dir=np.array([0, 0, 1.0]))
    np.testing.assert_allclose(body_joints(frame), body)
    cameras = []
    for joints in (body, body_joints(frame)):
        camera = Camera(aspect=1.7)
        camera.snap(np.zeros(3), joints)
        camera.frame()
        cameras.append(camera)
    assert cameras[1].distance == pytest.approx(cameras[0].distance) and cameras[1].distance < 5
    assert cameras[1].target[1] == pytest.approx((1.41 + 0.12) / 2)  # the look-at point: the body's middle

# ---- controls: Q / E side-step, a strafe modifier, strafing by default, a reset facing the camera's way

def _camera_axes(viewer):
    looking = (viewer.camera.look_point() - viewer.camera.eye())[[0, 2]]
    forward = looking / np.linalg.norm(looking)
    return forward, np.array([-forward[1], forward[0]])  # (forward, right) on the ground (x, z)


def _hold(viewer, symbols, frames):
    for symbol in symbols:
        viewer.window.dispatch_event("on_key_press", symbol, 0)
    viewer.window.dispatch_events()
    viewer.run_frames(frames)
    for symbol in symbols:
        viewer.window.dispatch_event("on_key_release", symbol, 0)
    viewer.window.dispatch_events()
    viewer.run_frames(1)


def _facing(viewer):
    facing = viewer.cur_frames[0].root_dir[[0, 2]]
    return facing / np.linalg.norm(facing)


def _degrees(a, b):
    return float(np.degrees(np.arccos(np.clip(np.dot(a, b), -1, 1))))


@pytest.fixture
def steering(ui):
    """The random network's root follows the command, as a trained model's does."""
    settings = ui.state.settings
    before, settings.root_motion_from_command = settings.root_motion_from_command, 1.0
    _press(ui, key.SPACE, frames=2)
    yield ui
    settings.root_motion_from_command = before


@pytest.mark.parametrize("symbol, side", [(key.Q, -1.0), (key.E, 1.0)])
def test_q_and_e_side_step_left_and_right_of_the_camera_keeping_the_facing(steering, symbol, side):
    forward, right = _camera_axes(steering)
    facing, start = _facing(steering), steering.cur_frames[0].root_pos[[0, 2]].copy()
    _hold(steering, [symbol], 60)
    moved = steering.cur_frames[0].root_pos[[0, 2]] - start
    assert np.linalg.norm(moved) > 0.2
    assert np.dot(moved / np.linalg.norm(moved), side * right) > 0.9
    assert _degrees(_facing(steering), facing) < 20  # a side-step, not a turn toward the motion


def test_space_then_w_starts_straight_ahead_without_a_turn(steering):
    steering.camera.yaw = 2.4  # wherever the camera looks
    steering.run_frames(30)
    _press(steering, key.SPACE, frames=2)
    forward, _ = _camera_axes(steering)
    assert _degrees(_facing(steering), forward) < 3
    start = steering.cur_frames[0].root_pos[[0, 2]].copy()
    _hold(steering, [key.W], 30)
    moved = steering.cur_frames[0].root_pos[[0, 2]] - start
    assert _degrees(_facing(steering), forward) < 10
    assert np.dot(moved / np.linalg.norm(moved), forward) > 0.95


def test_alt_held_strafes_so_s_walks_backward(steering):
    forward, _ = _camera_axes(steering)
    start = steering.cur_frames[0].root_pos[[0, 2]].copy()
    _hold(steering, [key.LALT, key.S], 60)
    moved = steering.cur_frames[0].root_pos[[0, 2]] - start
    assert np.dot(moved / np.linalg.norm(moved), -forward) > 0.9
    assert _degrees(_facing(steering), forward) < 20  # it still faces away from the camera: a backward walk


def test_strafe_by_default_from_the_view_section_faces_the_camera_direction(steering):
    from conftest import click_widget

    state = steering.state
    state.open_sections = ("View",)
    steering.run_frames(2)
    click_widget(steering, "strafe_default", 0.05)
    assert state.strafe_default
    _mouse_to(steering, *VIEW_POINT)
    steering.camera.yaw += 1.2  # the camera turns away from where the character faces
    steering.run_frames(2)
    forward, right = _camera_axes(steering)
    start = steering.cur_frames[0].root_pos[[0, 2]].copy()
    _hold(steering, [key.D], 60)  # D side-steps to the camera's right, the character turning to its forward
    moved = steering.cur_frames[0].root_pos[[0, 2]] - start
    assert np.dot(moved / np.linalg.norm(moved), right) > 0.9
    assert _degrees(_facing(steering), forward) < 20


# ---- fault 11: the file browser's places, its Recent list and Escape, sizes and dates ------------

def _open_model_browser(viewer):
    from conftest import click_widget

    viewer.state.model.load_path = ""
    viewer.state.open_sections = ("Model",)
    viewer.run_frames(2)
    click_widget(viewer, "model_browse")
    viewer.run_frames(2)
    assert viewer.state.browser.open


def test_escape_in_the_recent_folders_list_closes_only_that_list(ui, folders):
    from conftest import click_widget

    ui.state.recent.remember("checkpoint", folders["work"])
    _open_model_browser(ui)
    click_widget(ui, "browser_recent")
    assert ui.state.browser.recent_open
    _press(ui, key.ESCAPE, frames=2)
    assert ui.state.browser.open and not ui.state.browser.recent_open
    _press(ui, key.ESCAPE, frames=2)  # the next Escape closes the browser
    assert not ui.state.browser.open


def test_the_browser_offers_the_shipped_models(ui):
    from conftest import click_widget

    from app.paths import DEFAULT_MODEL

    _open_model_browser(ui)
    click_widget(ui, "browser_shipped")
    browser = ui.state.browser
    assert browser.folder == str(DEFAULT_MODEL.parent)
    ui.run_frames(1)
    assert DEFAULT_MODEL.name in [entry.name for entry in browser.entries]
    _press(ui, key.ESCAPE, frames=1)
    assert not browser.open


def test_the_listing_has_each_files_size_and_date(tmp_path):
    import os
    import time

    from app.ui.file_browser import date_text, list_folder, size_text

    (tmp_path / "clips").mkdir()
    take = tmp_path / "take.bvh"
    take.write_bytes(b"x" * 18432)
    os.utime(take, (1_700_000_000, 1_700_000_000))
    folder, entry = list_folder(tmp_path, "bvh")
    assert folder.is_dir and entry.name == "take.bvh"
    assert entry.size == 18432 and entry.modified == 1_700_000_000
    assert (size_text(812), size_text(18432), size_text(6867560)) == ("812 B", "18.4 kB", "6.9 MB")
    noon = time.mktime((2026, 3, 4, 12, 0, 0, 0, 0, -1))
    assert date_text(noon - 3600, noon) == "11:00" and date_text(noon - 3 * 86400, noon) == "2026-03-01"


# ---- the panel: fitted to small windows, resized, folded, remembered; it says it takes the keys ------

def _panel_share(viewer):
    x0, _, x1, _ = viewer.state.field_rects["panel"]
    return (x1 - x0 + 12) / viewer.window.get_size()[0]


def test_the_panel_leaves_most_of_a_small_window_to_the_view(ui, walk_motion, tmp_path, monkeypatch):
    from app.viewer import Viewer

    ui.state.open_sections = ("Model", "Style", "View")
    ui.run_frames(2)
    assert _panel_share(ui) < 0.4  # 1024 x 600
    x0, y0, x1, y1 = ui.state.field_rects["panel"]
    assert x1 <= WIDTH and y1 <= HEIGHT
    monkeypatch.setenv("PFNN_VIEWER_CONFIG", str(tmp_path / "config"))  # no layout remembered
    small = Viewer(800, 500, model_path=make_random_checkpoint(walk_motion, tmp_path / "small.safetensors"),
                   visible=False, vsync=False)
    try:
        small.run_frames(3)
        assert _panel_share(small) < 0.4  # it covered 55% of it at 430 px
        x0, _, x1, _ = small.state.field_rects["panel"]
        assert small.camera.lens_shift == pytest.approx(-(x1 - x0 + 12) / 800)  # the character beside it
    finally:
        small.close()


def test_dragging_the_panels_edge_resizes_it_and_the_layout_survives_a_restart(ui, folders):
    from app.ui.panel_layout import PanelLayout
    from app.ui.state import ViewerState

    ui.run_frames(2)
    before = ui.state.field_rects["panel"]
    x0, y0, x1, y1 = ui.state.field_rects["panel_grip"]
    x, y = (x0 + x1) / 2, HEIGHT - (y0 + y1) / 2
    _mouse_to(ui, x, y)
    ui.window.dispatch_event("on_mouse_press", x, y, mouse.LEFT, 0)
    ui.run_frames(1)
    for _ in range(6):
        x -= 10
        ui.window.dispatch_event("on_mouse_drag", x, y, -10, 0, mouse.LEFT, 0)
        ui.run_frames(1)
    ui.window.dispatch_event("on_mouse_release", x, y, mouse.LEFT, 0)
    ui.run_frames(2)
    after = ui.state.field_rects["panel"]
    assert after[2] == pytest.approx(before[2])  # the right edge stays by the window's
    assert (after[2] - after[0]) - (before[2] - before[0]) == pytest.approx(60, abs=1)
    ui.state.open_sections = ("Time", "Record")
    ui.run_frames(1)
    saved = PanelLayout.load(folders["config"] / "panel.json").saved
    assert saved["width"] == pytest.approx(after[2] - after[0], abs=1) and saved["open_sections"] == ["Time", "Record"]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PFNN_VIEWER_CONFIG", str(folders["config"]))
        restarted = ViewerState()
    assert restarted.panel_width == pytest.approx(after[2] - after[0], abs=1)
    assert restarted.open_sections == ("Time", "Record") and not restarted.panel_collapsed
    ui.state.panel_width = 0.0


def test_the_panel_folds_to_its_title_bar_and_the_view_takes_the_window(ui, folders):
    from app.ui.panel_layout import PanelLayout

    ui.run_frames(2)
    x0, y0, x1, _ = ui.state.field_rects["panel"]
    title = ((x0 + x1) / 2, HEIGHT - (y0 + 10))
    _mouse_to(ui, *title)
    for _ in range(2):  # a double click on the title bar folds it (so does its arrow)
        ui.window.dispatch_event("on_mouse_press", *title, mouse.LEFT, 0)
        ui.run_frames(1)
        ui.window.dispatch_event("on_mouse_release", *title, mouse.LEFT, 0)
        ui.run_frames(1)
    ui.run_frames(2)
    try:
        assert ui.state.panel_collapsed and ui.camera.lens_shift == 0.0
        _, y0, _, y1 = ui.state.field_rects["panel"]
        assert y1 - y0 < 40
        _mouse_to(ui, *VIEW_POINT)
        assert PanelLayout.load(folders["config"] / "panel.json").saved["collapsed"] is True
    finally:
        ui.state.panel_collapsed = False
        ui.run_frames(2)


def test_a_hint_beside_the_panel_says_keys_go_to_it_while_the_mouse_is_over_it(ui):
    assert "keys_hint" not in ui.state.field_rects  # the mouse is over the view
    x0, y0, x1, y1 = ui.state.field_rects["panel"]
    _mouse_to(ui, (x0 + x1) / 2, HEIGHT - (y0 + y1) / 2)
    ui.run_frames(1)
    hint = ui.state.field_rects["keys_hint"]
    assert hint[2] < x0 and hint[3] <= HEIGHT  # beside the panel, over the view, inside the window
    shown = ui.state.overlays["trajectory"]
    _press(ui, key.T, frames=1)  # and indeed: T does not toggle the trajectory there
    assert ui.state.overlays["trajectory"] == shown
    _mouse_to(ui, *VIEW_POINT)
    assert "keys_hint" not in ui.state.field_rects


# ---- the help and the View section explain the overlays in the colours they are drawn with ---------

def test_every_overlay_has_a_legend_in_colours_its_builder_draws():
    from app.render.overlays import OVERLAY_BUILDERS
    from app.render.scene import SceneFrame
    from app.ui.legend import LEGEND
    from app.ui.sections.view import OVERLAY_TOGGLES

    ahead = np.stack([np.zeros(6), np.zeros(6), np.linspace(0.2, 1.2, 6)], -1)
    frame = SceneFrame(
        joint_pos=np.array([[0, 0.9, 0], [0.1, 0.1, 0], [0.1, 0.0, 0.1], [-0.1, 0.1, 0], [-0.1, 0.0, 0.1]]),
        parents=np.array([-1, 0, 1, 0, 3]), root_pos=np.zeros(3), root_dir=np.array([0, 0, 1.0]), phase=0.3,
        joint_rot=np.tile([1.0, 0, 0, 0], (5, 1)), contact_joints=np.array([1, 2, 3, 4]),
        contacts=np.array([1.0, 1.0, 0.0, 0.0]), lock_target=np.zeros((4, 3)), lock_weight=np.array([1.0, 1, 0, 0]),
        traj_past_pos=np.zeros((61, 3)), traj_past_dir=np.tile([0, 0, 1.0], (61, 1)), traj_future_pos=ahead,
        traj_future_dir=np.tile([0, 0, 1.0], (6, 1)), traj_command_pos=ahead + [0.3, 0, 0],
        traj_command_dir=np.tile([0, 0, 1.0], (6, 1)))
    assert set(LEGEND) == {name for name, _, _ in OVERLAY_TOGGLES}  # a legend for every overlay the panel offers
    for name, rows in LEGEND.items():
        geometry = OVERLAY_BUILDERS[name](frame)
        drawn = np.concatenate([part.colours[:, :3] for part in geometry.lines + geometry.points])
        for colour, mark, _ in rows:
            assert np.abs(drawn - np.asarray(colour)[:3]).max(axis=1).min() < 1e-3, (name, mark)

