"""The viewer's one action table: `{name: handler}`, built for a viewer by `action_table(viewer)`.

Two kinds of names share it. The control table's press actions (`app.input.keys.CONTROLS`: keys, mouse,
gamepad buttons) run at once, with no argument. The panel's requests (`PANEL_REQUESTS`) are queued by the
UI as (name, payload) and run through the same table after the frame's UI pass (`Viewer.handle_requests`),
so a failure is written back into the panel state and shown on the next frame; the panel asks for a
control's action by its name too (Pause, the camera modes). A control whose work must wait for the frame
to be drawn (a screenshot, a video, a recording) or for the frame's end (a reset) queues the request that
does it.
"""

import time

from app.input.keys import control, keys_label
from app.render.renderer import VIEW_MODES
from app.sources.physics import MODES as PHYSICS_MODES
from app.sources.physics import push_impulse
from app.sources.styles import cycle_style
from app.transport import next_speed

# The panel's requests and their payloads (None where not said).
PANEL_REQUESTS = (
    "load_model",  # the checkpoint path to run
    "open_bvh",  # the BVH path to play
    "live",  # back to the live character
    "seek",  # playback time in seconds
    "reset",  # the source back to its start
    "set_style",  # style weights [S] for every live character
    "start_training",  # {"resume": bool}
    "stop_training",
    "record_start", "record_stop",  # the BVH recording of the live character
    "save_screenshot", "video_start", "video_stop",
    "quit_now",  # stop training (it saves its resumable state) and quit
    "editor",  # an Editor section action: 'add', 'preview', 'save', 'load', 'export', 'train'
    "recovery",  # (choice, path) of the recovery dialog (`app.jobs.recovery.Recovery.action`)
)


def action_table(viewer) -> dict:
    """Every handler of the viewer, by name: the control table's actions and the panel's requests."""
    return {**_control_actions(viewer), **_panel_requests(viewer)}


def _control_actions(viewer) -> dict:
    state, transport, camera = viewer.state, viewer.state.transport, viewer.camera

    def toggle_overlay(name):
        return lambda: state.overlays.update({name: not state.overlays[name]})

    def camera_mode(mode):
        return lambda: camera.set_mode(mode)

    def set_speed(speed):
        transport.speed = speed

    def cycle_view_mode():
        index = VIEW_MODES.index(state.view_mode) if state.view_mode in VIEW_MODES else -1
        state.view_mode = VIEW_MODES[(index + 1) % len(VIEW_MODES)]

    return {
        "reset_character": lambda: state.request("reset"),
        "next_style": lambda: cycle_style(state, viewer.live_source, +1),
        "previous_style": lambda: cycle_style(state, viewer.live_source, -1),
        "toggle_pause": lambda: setattr(transport, "paused", not transport.paused),
        "step_forward": lambda: viewer.step_ticks(1),
        "step_back": lambda: viewer.step_ticks(-1),
        "rewind_second": lambda: viewer.step_ticks(-round(1.0 / viewer.timestep.dt)),
        "slower": lambda: set_speed(next_speed(transport.speed, -1)),
        "faster": lambda: set_speed(next_speed(transport.speed, +1)),
        "normal_speed": lambda: set_speed(1.0),
        "camera_follow": camera_mode("follow"),
        "camera_orbit": camera_mode("orbit"),
        "camera_free": camera_mode("free"),
        "camera_fixed": camera_mode("fixed"),
        "camera_next": camera.next_mode,
        "camera_frame": camera.frame,
        "camera_reset": camera.reset,
        "cycle_view_mode": cycle_view_mode,
        "toggle_trajectory": toggle_overlay("trajectory"),
        "toggle_contacts": toggle_overlay("contacts"),
        "toggle_phase": toggle_overlay("phase"),
        "toggle_joint_axes": toggle_overlay("joint_axes"),
        "screenshot": lambda: state.request("save_screenshot"),
        "toggle_video": lambda: state.request("video_stop" if state.capture.video_recording else "video_start"),
        "toggle_recording": lambda: toggle_recording(state),
        "toggle_panel": lambda: setattr(state, "show_panel", not state.show_panel),
        "toggle_help": lambda: setattr(state, "show_help", not state.show_help),
        "escape": lambda: escape(state),
        "quit": lambda: quit_or_ask(viewer),
        "cycle_physics": lambda: cycle_physics(state),
        "push_character": lambda: push_character(viewer),
    }


def _panel_requests(viewer) -> dict:
    from app.jobs.edits import editor_action

    state, captures, training = viewer.state, viewer.captures, viewer.training
    return {
        "load_model": viewer.load_model,
        "open_bvh": viewer.open_bvh,
        "live": viewer.back_to_live,
        "seek": viewer.seek,
        "reset": viewer.reset_source,
        "set_style": viewer.set_style,
        "start_training": lambda form=None: training.start(state.train, bool(form and form.get("resume")), state.work_dir),
        "stop_training": lambda: training.stop(state.train),
        "record_start": lambda: captures.start_recording(viewer.live_source),
        "record_stop": captures.stop_recording,
        "save_screenshot": lambda: captures.take_screenshot(viewer.read_pixels),
        "video_start": captures.start_video,
        "video_stop": captures.stop_video,
        "quit_now": lambda: quit_now(viewer),
        "editor": lambda action: editor_action(state, action),
        "recovery": viewer.recovery.action,
    }


STOP_CONFIRM_S = 3.0  # a take stops on a second R within this time: one stray key never ends it


def toggle_recording(state) -> None:
    """R starts a take; during one, R asks for a second R (within STOP_CONFIRM_S) before it stops."""
    now = time.monotonic()
    if not state.record.recording:
        state.request("record_start")
    elif now < state.stop_armed_until:
        state.stop_armed_until = 0.0
        state.request("record_stop")
    else:
        state.stop_armed_until = now + STOP_CONFIRM_S
        state.toast("Recording: press R again to stop and save the take", STOP_CONFIRM_S)


def cycle_physics(state) -> None:
    """Physics off -> on -> both -> off (applied before the next tick)."""
    mode = state.physics.mode
    state.physics.mode = PHYSICS_MODES[(PHYSICS_MODES.index(mode) + 1) % len(PHYSICS_MODES)]
    state.toast(f"Physics {state.physics.mode}", 1.5)


def push_character(viewer) -> None:
    """A push at the followed character's chest toward the screen's right (with the physics on)."""
    physics = getattr(viewer.live_source, "physics", None)
    impulse = push_impulse(viewer.camera.view_yaw(), viewer.state.physics.push_strength)
    if viewer.source is viewer.live_source and physics is not None and physics.push(impulse):
        viewer.state.physics.pushes += 1
    else:
        viewer.state.toast(f"A push needs the physics on ({keys_label(control('cycle_physics'))})")


def escape(state) -> None:
    """Close the topmost thing open; never quits (a stray Escape must not lose a training run)."""
    if state.confirm_quit:
        state.confirm_quit = False
    elif state.browser.open:
        state.browser.escape()  # the "Recent folders" list alone when it is open
    elif state.show_help:
        state.show_help = False


def quit_or_ask(viewer) -> None:
    """Quit, asking first while a training run is going."""
    if viewer.training.running:
        viewer.state.confirm_quit = True
    else:
        viewer.request_close()


def quit_now(viewer) -> None:
    """"Stop training and quit": the run saves its resumable state at its next batch, then the viewer closes."""
    viewer.training.stop(viewer.state.train)
    if viewer.training.job is not None:
        viewer.training.job.join(10.0)
    viewer.request_close()
