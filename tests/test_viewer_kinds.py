"""The viewer with each model kind's own readouts and with the physics layer: the Matching section and
overlay (the clip and frame playing, the last search) and its live settings, the Motion VAE section
(latent path, active dimensions, the variation slider), and physics off / on / both with the ghost, the
push key and the force arrows. Through a real headless pyglet window with injected key and mouse
events and real imgui frames, on the shipped models."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from conftest import click_widget
from pyglet.window import key

from app.render.camera import Camera, project_points
from app.render.overlays import FORCE_SCALE, GROUND_LIFT, foot_force_geometry, ghost_geometry
from app.render.scene import SceneFrame, drawn_bones, lerp
from app.sources.physics import PUSH_IMPULSE, push_impulse
from app.ui.sections.matching import MIN_OVERLAY_WIDTH, OVERLAY_MARGIN, overlay_place, playing_lines
from app.ui.sections.mvae import MIN_PATH_SPAN, curves_of, path_limits
from pfnn_core.drive.cli import parse_script

ROOT = Path(__file__).resolve().parents[1]
MODELS = {kind: str(ROOT / "assets" / "models" / f"{name}.safetensors")
          for kind, name in (("pfnn", "default"), ("matching", "matching"), ("mvae", "mvae"))}
WIDTH, HEIGHT = 720, 460
SLIDER_WIDTH = 140  # the sections' item width where the label fits beside the slider
WALK = {"segments": [{"duration": 60.0, "move": [0.0, 0.9]}]}


# ---- geometry, without a window -----------------------------------------------------------------

def _frame(joints=3):
    parents = np.array([-1, 0, 1])[:joints]
    positions = np.array([[0.0, 1.0, 0.0], [0.0, 0.5, 0.1], [0.0, 0.08, 0.2]])[:joints]
    return SceneFrame(positions, parents, np.zeros(3), np.array([0.0, 0.0, 1.0]), contact_joints=np.array([2, 1]))


def test_force_arrows_start_on_the_floor_under_the_joint_and_follow_the_force():
    frame = dataclasses.replace(_frame(), foot_forces=np.array([[0.0, 600.0, 0.0], [1.0, 2.0, 0.0]]))
    lines = foot_force_geometry(frame).lines[0]
    assert len(lines.starts) == 3 and lines.through  # one arrow (shaft, two barbs), seen through the foot; 2.2 N left out
    np.testing.assert_allclose(lines.starts[0], [0.0, GROUND_LIFT, 0.2], atol=1e-6)
    np.testing.assert_allclose(lines.ends[0], [0.0, GROUND_LIFT + 600.0 * FORCE_SCALE, 0.2], atol=1e-6)
    assert (lines.ends[1:, 1] < lines.ends[0, 1]).all()  # the barbs point back down the shaft
    assert foot_force_geometry(_frame()).lines == []  # no physics: no arrows


def test_the_ghost_is_the_kinematic_pose_drawn_through_the_body_and_interpolates():
    ghost_pos = np.array([[0.0, 1.0, 0.5], [0.0, 0.5, 0.6], [0.0, 0.1, 0.7]])
    frame = dataclasses.replace(_frame(), ghost_pos=ghost_pos)
    lines = ghost_geometry(frame).lines[0]
    bones = drawn_bones(frame.parents)
    assert lines.through and len(lines.starts) == len(bones)
    np.testing.assert_allclose(lines.ends, ghost_pos[bones[:, 0]])
    np.testing.assert_allclose(lines.starts, ghost_pos[bones[:, 1]])
    later = dataclasses.replace(frame, ghost_pos=ghost_pos + 0.1)
    np.testing.assert_allclose(lerp(frame, later, 0.25).ghost_pos, ghost_pos + 0.025)
    assert ghost_geometry(_frame()).lines == []


def test_a_push_goes_across_the_view_toward_the_screens_right():
    np.testing.assert_allclose(push_impulse(0.0), [-PUSH_IMPULSE, 0.0, 0.0], atol=1e-9)  # looking along +Z: -X
    np.testing.assert_allclose(push_impulse(np.pi / 2), [0.0, 0.0, PUSH_IMPULSE], atol=1e-9)  # along +X: +Z
    for yaw in (0.0, 1.0, 2.5, 4.0):  # on screen: straight to the right, whatever the camera's angle
        camera = Camera()
        camera.yaw = yaw
        camera.snap(np.zeros(3))
        step = push_impulse(camera.view_yaw()) / PUSH_IMPULSE
        chest = np.array([[0.0, 1.3, 0.0], [step[0], 1.3, step[2]]])
        pixels = project_points(chest, camera.projection(16 / 9) @ camera.view(), 1600, 900)
        assert pixels[1, 0] - pixels[0, 0] > 100 and abs(pixels[1, 1] - pixels[0, 1]) < 1e-3


# ---- the viewer ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def viewer(tmp_path_factory):
    from app.viewer import Viewer

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PFNN_VIEWER_HOME", str(tmp_path_factory.mktemp("work")))
        patch.setenv("PFNN_VIEWER_CONFIG", str(tmp_path_factory.mktemp("config")))
        app = Viewer(WIDTH, HEIGHT, model_path=MODELS["pfnn"], visible=False, vsync=False)
        app.state.view_mode = "skeleton"  # the cheapest body
        yield app
        app.close()


def _use(viewer, kind, sections=(), panel=True):
    """`kind`'s shipped model walking forward from the origin, the physics off, the overlays off."""
    state = viewer.state
    if state.model.path != MODELS[kind]:
        assert viewer.load_model(MODELS[kind]), state.model.error
    state.physics.mode = "off"
    state.show_panel, state.show_help, state.open_sections = panel, False, tuple(sections)
    state.overlays.update(trajectory=False, contacts=False, phase=False, joint_axes=False, forces=False)
    state.transport.paused = False
    viewer.script = parse_script(WALK)
    viewer.sim_time = 0.0
    viewer.run_frames(1)
    viewer.reset_source()
    viewer.window.dispatch_event("on_mouse_motion", 150, 150, 0, 0)  # over the 3D view: keys steer
    viewer.window.dispatch_events()
    viewer.run_frames(1)
    return viewer


def _slider_click(viewer, name, share):
    """Click a section's slider `share` of the way along its frame: in this window's narrow panel every
    labelled slider has its label on the line above and the panel's whole width (nothing cut off)."""
    for _ in range(20):  # out of the window: scroll the panel as a user does, with the wheel over it
        x0, y0, x1, y1 = viewer.state.field_rects[name]
        if y0 > 40 and y1 < viewer.window.height - 4:
            break
        viewer.window.dispatch_event("on_mouse_motion", (x0 + x1) / 2, 20, 0, 0)
        viewer.window.dispatch_event("on_mouse_scroll", (x0 + x1) / 2, 20, 0, -1 if y0 > 40 else 1)
        viewer.run_frames(2)
    assert x1 - x0 > SLIDER_WIDTH  # the whole line, not the 140 px of a slider with its label beside it
    click_widget(viewer, name, x_fraction=min(max(share, 0.01), 0.99))


def _press(viewer, symbol):
    viewer.window.dispatch_event("on_key_press", symbol, 0)
    viewer.window.dispatch_event("on_key_release", symbol, 0)
    viewer.window.dispatch_events()


def test_matching_shows_the_clip_and_frame_it_plays_and_its_settings_are_live(viewer):
    _use(viewer, "matching", ("Matching",))
    model = viewer.live_source.character.model
    readouts = []
    for _ in range(6):
        viewer.run_frames(5)
        readouts.append(dict(viewer.state.matching.playing))
    assert {r["clip"] for r in readouts} <= set(model.config.clips)
    assert len({(r["clip"], r["frame"]) for r in readouts}) == len(readouts)  # it plays on: every readout new
    assert all(r["cost"] >= 0.0 and r["distance"] >= 0.0 and np.isfinite(r["cost"]) for r in readouts)
    shown = viewer.state.matching.shown_frames
    viewer.run_frames(1)
    assert viewer.state.matching.shown_frames == shown + 1 and "matching_readout" in viewer.state.field_rects
    assert playing_lines(readouts[-1])[0].startswith(f"clip  {readouts[-1]['clip']}")
    settings = viewer.state.settings
    assert settings.matching_search_interval == pytest.approx(0.1)
    _slider_click(viewer, "matching_search_interval", 0.9)  # range 0..1 s
    assert settings.matching_search_interval == pytest.approx(0.9, abs=0.08)
    _slider_click(viewer, "matching_weight_trajectory_facing", 0.0)
    assert settings.matching_weight_trajectory_facing < 0.3
    settings.matching_search_interval, settings.matching_weight_trajectory_facing = 0.1, 1.5


def test_a_long_clip_name_wraps_in_the_panel_and_the_readout_over_the_view_is_drawn_only_beside_the_hud(viewer):
    _use(viewer, "matching", ("Matching",))
    model = viewer.live_source.character.model
    long_name = {"clip": "dataset-2_raise-up-right-hand_normal_001.bvh.gz", "frame": 12, "mirrored": True,
                 "standing": True, "switches": 3, "cost": 0.0, "distance": 0.0}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(model, "now_playing", lambda state: long_name)
        x0, y0, x1, y1 = viewer.state.field_rects["panel"]
        viewer.window.dispatch_event("on_mouse_motion", (x0 + x1) / 2, viewer.window.height - (y0 + y1) / 2, 0, 0)
        viewer.run_frames(4)
        rects = viewer.state.field_rects
        clip = rects["matching_clip"]
        assert clip[2] <= x1 - 12 + 1 and clip[3] - clip[1] > 25  # within the panel's padding, on two lines
        # this window's view (720 px less the panel) has no room beside the HUD: the readout over the view
        # is not drawn (the panel's lines above show it), rather than over the character
        assert overlay_place(rects["hud"], x0) is None and "matching_overlay" not in rects
    viewer.window.dispatch_event("on_mouse_motion", 100, 100, 0, 0)
    viewer.run_frames(2)


def test_the_matching_readout_sits_beside_the_hud_above_the_character_or_not_at_all():
    # the newcomer's 800 x 500 window: HUD 12..262 x 12..172, the panel from x = 516; the character
    # stands at the view's centre (x ~ 258) with its head at y ~ 135, its feet at y ~ 345
    right, top, width = overlay_place((12.0, 12.0, 262.0, 172.0), 516.0)
    assert right == 516.0 - OVERLAY_MARGIN and top == 12.0 and width == 516.0 - 2 * OVERLAY_MARGIN - 262.0
    assert right - width >= 262.0 + OVERLAY_MARGIN  # clear of the HUD, on the HUD's top row
    assert overlay_place((12.0, 12.0, 262.0, 172.0), 1280.0 - 442.0)[2] == 1280.0 - 442.0 - 24.0 - 262.0  # 1280 x 720
    room = 262.0 + 2 * OVERLAY_MARGIN + MIN_OVERLAY_WIDTH  # the narrowest view it is drawn in
    assert overlay_place((12.0, 12.0, 262.0, 172.0), room) is not None
    assert overlay_place((12.0, 12.0, 262.0, 172.0), room - 1.0) is None


def test_the_motion_vae_section_draws_its_latent_path_and_the_variation_slider_sets_the_setting(viewer):
    _use(viewer, "mvae", ("Motion VAE",))
    assert "Matching" not in viewer.state.open_sections or viewer.state.model.kind == "mvae"
    viewer.run_frames(20)
    panel, model = viewer.state.mvae, viewer.live_source.character.model
    trail = viewer.live_source.trail.latents()
    assert panel.path.shape == (len(trail), 2) and len(trail) >= 19
    centred = trail - trail.mean(0)  # the path keeps the spread of the latents' two main directions
    top_two = np.sort(np.linalg.svd(centred, compute_uv=False))[::-1][:2]
    np.testing.assert_allclose(np.linalg.svd(panel.path - panel.path.mean(0), compute_uv=False), top_two, rtol=1e-6)
    assert panel.active_dimensions == model.active_dimensions and panel.latent_size == model.config.latent_size
    assert {"variation", "latent_path"} <= set(viewer.state.field_rects)
    stored = model.card.extra["loss_history"]  # the shipped model's curves as its file holds them
    assert curves_of(panel.loss_history, "policy") == stored["val"]["policy"] and len(stored["val"]["policy"]) >= 4
    panel_rect = viewer.state.field_rects["panel"]
    for _ in range(30):  # below the window's bottom: the wheel scrolls the panel, over the curves too
        if "loss_terms_policy" in viewer.state.field_rects:
            break
        viewer.window.dispatch_event("on_mouse_motion", (panel_rect[0] + panel_rect[2]) / 2, 60, 0, 0)
        viewer.window.dispatch_event("on_mouse_scroll", (panel_rect[0] + panel_rect[2]) / 2, 60, 0, -1)
        viewer.run_frames(2)
    plots = [viewer.state.field_rects.get(f"loss_terms_{stage}") for stage in ("vae", "policy")]
    assert all(plot is not None and plot[3] - plot[1] >= 100 for plot in plots)  # both plots drawn, full height
    assert viewer.state.settings.variation == 0.0
    _slider_click(viewer, "variation", 0.75)
    assert viewer.state.settings.variation == pytest.approx(0.75, abs=0.08)
    viewer.state.settings.variation = 0.0


def test_the_wheel_over_a_plot_of_the_panel_scrolls_the_panel(viewer):
    _use(viewer, "mvae", ("Motion VAE",))
    viewer.run_frames(4)
    rects, height = viewer.state.field_rects, viewer.window.height
    for plot in ("latent_path", "loss_terms_vae", "loss_terms_policy"):
        for _ in range(30):  # the wheel anywhere over the panel (over the plot when it is in view) until it is
            x0, y0, x1, y1 = rects.get(plot, (rects["panel"][0], height, rects["panel"][2], height))
            if y0 > 40 and y1 < height - 40:
                break
            viewer.window.dispatch_event("on_mouse_motion", (x0 + x1) / 2, 30, 0, 0)
            viewer.window.dispatch_event("on_mouse_scroll", (x0 + x1) / 2, 30, 0, -1 if y1 >= height - 40 else 1)
            viewer.run_frames(2)
        x0, y0, x1, y1 = rects[plot]
        viewer.window.dispatch_event("on_mouse_motion", (x0 + x1) / 2, height - (y0 + y1) / 2, 0, 0)  # pyglet's y is up
        viewer.run_frames(1)
        before = rects[plot][1]
        viewer.window.dispatch_event("on_mouse_scroll", (x0 + x1) / 2, height - (y0 + y1) / 2, 0, -1)
        viewer.run_frames(2)
        assert rects[plot][1] < before - 10, plot  # the panel moved up under the mouse, the plot did not zoom


def test_the_latent_path_view_holds_the_whole_path_and_shows_a_still_character_as_a_dot():
    still = np.array([[1.0, -2.0], [1.0 + 6e-4, -2.0 + 1e-6], [1.0 - 2e-4, -2.0]])  # standing: float noise
    x0, x1, y0, y1 = path_limits(still)
    assert (x1 - x0, y1 - y0) == (pytest.approx(MIN_PATH_SPAN), pytest.approx(MIN_PATH_SPAN))
    assert x0 < 1.0 < x1 and y0 < -2.0 < y1
    walk = np.array([[-6.0, -4.0], [7.0, 5.0], [0.0, 9.0]])
    x0, x1, y0, y1 = path_limits(walk)
    assert (x0, x1, y0, y1) == pytest.approx((-6.65, 7.65, -4.65, 9.65))  # 5% of each span on each side


def test_the_training_curves_are_the_held_out_ones_per_term_and_leave_out_what_a_log_axis_cannot_show():
    history = {"vae": {"total": [3.0, 2.0], "kl": [0.0, 0.0]},
               "val": {"vae": {"total": [2.5, 1.5], "kl": [0.0, 0.0], "foot": [0.1, float("nan")]}},
               "policy": {"total": [1.0, 0.5]}}
    assert curves_of(history, "vae") == {"total": [2.5, 1.5], "foot": [0.1, pytest.approx(np.nan, nan_ok=True)]}
    assert curves_of(history, "policy") == {"total": [1.0, 0.5]}  # no held-out curve: the training one
    assert curves_of({}, "vae") == {}


def _kinematic_run(viewer, ticks, mode):
    """Walk `ticks` ticks from the origin with the physics `mode`: (the kinematic state, the frame drawn)."""
    viewer.state.physics.mode = mode
    viewer.run_frames(3)  # a first body is made after two frames that say so
    viewer.reset_source()
    viewer.sim_time = 0.0
    viewer.step_ticks(ticks)
    viewer.run_frames(1)
    return viewer.live_source.character.state, viewer.interpolated_frames()[0]


def test_physics_on_draws_the_simulated_body_and_off_leaves_the_kinematic_motion_unchanged(viewer):
    _use(viewer, "pfnn", panel=False)
    off_state, off_frame = _kinematic_run(viewer, 90, "off")
    np.testing.assert_array_equal(off_frame.joint_pos, off_state.world_joint_pos[0])  # off: the runtime's pose
    assert off_frame.ghost_pos is None and off_frame.foot_forces is None
    on_state, on_frame = _kinematic_run(viewer, 90, "on")
    # the physics never feeds back: the runtime walked the same path, bit for bit
    np.testing.assert_array_equal(on_state.world_joint_pos, off_state.world_joint_pos)
    np.testing.assert_array_equal(on_state.traj_past_pos, off_state.traj_past_pos)
    pose = viewer.live_source.physics.pose
    np.testing.assert_allclose(on_frame.joint_pos, pose.positions[0])  # what is drawn is the simulation
    gap = np.linalg.norm(on_frame.joint_pos - on_state.world_joint_pos[0], axis=-1)
    assert 0.001 < gap.mean() < 0.05 and on_frame.ghost_pos is None
    figures = viewer.state.physics.figures
    assert figures["tracking_error"] == pytest.approx(float(pose.tracking_error[0]))
    assert 0.0 < figures["root_force"] < 3000.0 and np.isfinite(figures["foot_forces"]).all()
    assert viewer.live_source.physics.tracker.settings is viewer.state.physics.settings  # one settings object


def test_both_draws_the_kinematic_ghost_over_the_simulated_body(viewer):
    _use(viewer, "pfnn", panel=False)
    _kinematic_run(viewer, 60, "both")
    frame = viewer.interpolated_frames()[0]
    np.testing.assert_array_equal(frame.ghost_pos, viewer.live_source.character.state.world_joint_pos[0])
    viewer.run_action("camera_free")  # a camera that stays put: only the drawing changes between the images
    viewer.run_frames(20)
    images = {}
    for mode in ("on", "both", "on"):  # paused: the mode shows at once
        viewer.state.physics.mode = mode
        viewer.run_frames(1)
        images.setdefault(mode, []).append(viewer.read_pixels()[170:-60].astype(int))  # below the HUD
    viewer.run_action("camera_follow")
    on, both = images["on"][0], images["both"][0]
    assert (np.abs(images["on"][1] - on).sum(axis=-1) > 24).sum() < 20  # the same image again
    changed = np.abs(both - on).sum(axis=-1) > 24
    assert 150 < changed.sum() < 0.05 * changed.size  # the ghost's sticks
    assert (both[changed][:, 2] > on[changed][:, 2]).mean() > 0.8  # light blue over the scene


def test_the_push_key_throws_the_body_off_and_tracking_recovers(viewer):
    _use(viewer, "pfnn", panel=False)
    _kinematic_run(viewer, 60, "on")
    before, pushes = np.array(viewer.state.physics.error_trace), viewer.state.physics.pushes
    direction = push_impulse(viewer.camera.view_yaw()) / PUSH_IMPULSE
    _press(viewer, key.B)
    assert viewer.state.physics.pushes == pushes + 1
    viewer.step_ticks(20)
    viewer.run_frames(1)
    physics = viewer.live_source.physics
    hips = physics.tracker.body.plan.root
    offset = physics.pose.positions[0, hips] - viewer.live_source.character.state.world_joint_pos[0, hips]
    assert offset @ direction > 0.02  # carried off along the camera's view
    viewer.step_ticks(160)
    viewer.run_frames(1)
    after = np.array(viewer.state.physics.error_trace)[-180:]
    assert after.max() > max(3.0 * np.median(before), 0.03)  # the push shows in the tracking error
    assert after[-30:].max() < 0.05 and after[-30:].max() < 0.5 * after.max()  # and it recovers


def test_the_push_strength_set_in_the_panel_is_what_b_gives(viewer):
    _use(viewer, "pfnn", panel=False)
    _kinematic_run(viewer, 30, "on")
    physics = viewer.live_source.physics
    hips = physics.tracker.body.plan.root
    carried = {}
    for strength in (30.0, 100.0):
        viewer.state.physics.push_strength = strength
        viewer.step_ticks(200)  # back on track
        viewer.run_frames(1)
        direction = push_impulse(viewer.camera.view_yaw()) / PUSH_IMPULSE
        start = physics.pose.positions[0, hips] - viewer.live_source.character.state.world_joint_pos[0, hips]
        _press(viewer, key.B)
        offsets = []
        for _ in range(30):
            viewer.step_ticks(1)
            offset = physics.pose.positions[0, hips] - viewer.live_source.character.state.world_joint_pos[0, hips]
            offsets.append((offset - start) @ direction)
        carried[strength] = max(offsets)
    viewer.step_ticks(200)
    viewer.run_frames(1)
    assert np.array(viewer.state.physics.error_trace)[-30:].max() < 0.05  # even the shove is taken back
    assert not any("put back" in message for message in viewer.state.messages)  # by the servos, not a reset
    viewer.state.physics.push_strength = 30.0
    viewer.state.physics.mode = "off"
    # a harder push carries the body further along the view (not 1:1: the hold and the legs resist)
    assert carried[30.0] > 0.02 and carried[100.0] > 2.0 * carried[30.0]


def test_a_push_with_the_physics_off_says_how_to_turn_it_on(viewer):
    _use(viewer, "pfnn", panel=False)
    pushes = viewer.state.physics.pushes
    _press(viewer, key.B)
    assert viewer.state.physics.pushes == pushes and "physics" in viewer.state.toast_text.lower()
    viewer.live_source.physics = None  # as after a start: no body made yet
    _press(viewer, key.G)
    viewer.run_frames(2)  # the frames after G say the body is being made, and are drawn before it is
    assert viewer.state.toast_text.startswith("Physics: making the body")
    assert not viewer.live_source.physics.active and viewer.state.physics.preparing
    viewer.run_frames(1)
    assert viewer.state.physics.mode == "on" and viewer.live_source.physics.active
    assert viewer.state.toast_text == "Physics on" and not viewer.state.physics.preparing
    viewer.state.physics.mode = "off"


def test_a_model_swap_with_the_physics_on_builds_the_new_models_body(viewer):
    _use(viewer, "pfnn", panel=False)
    viewer.state.physics.mode = "on"
    viewer.run_frames(4)
    first = viewer.live_source.physics.tracker
    assert viewer.load_model(MODELS["matching"])
    viewer.run_frames(4)
    physics = viewer.live_source.physics
    assert viewer.state.physics.mode == "on" and physics.active and physics.tracker is not first
    assert 0.0 < viewer.state.physics.figures["tracking_error"] < 0.1
    viewer.state.physics.mode = "off"


@pytest.mark.parametrize("kind", ["matching", "mvae"])
def test_the_physics_tracks_every_model_kind(viewer, kind):
    _use(viewer, kind, ("Physics",))
    viewer.state.physics.mode = "on"
    viewer.run_frames(30)
    figures = viewer.state.physics.figures
    assert 0.0 < figures["tracking_error"] < 0.1
    frame = viewer.interpolated_frames()[0]
    assert not np.array_equal(frame.joint_pos, viewer.live_source.character.state.world_joint_pos[0])
    assert "physics_servo_frequency" in viewer.state.field_rects  # the settings are in the panel
    viewer.state.physics.mode = "off"
