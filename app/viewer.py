"""The viewer: a pyglet window and its frame loop.

The simulation steps at 60 Hz through a fixed-timestep accumulator (`pfnn_core.runtime.timestep`: a long
stall drops time instead of spiralling); rendering interpolates between the last two simulation states.
Pause, single steps, slow motion and stepping back (`app/transport.py`) act through that accumulator.
Keys, mouse and gamepad buttons (`app/input/`) and the panel's requests (`app/ui/`) all dispatch through
the one action table (`app/actions.py`); the requests run after the frame's UI pass, their failures
written back into the panel state so the viewer keeps running. What moves is a source (`app/sources/`),
what is drawn the renderer's (`app/render/`), what runs beside the loop a job (`app/jobs/`).
"""

import time

import numpy as np

from app.actions import action_table
from app.input.devices import InputDevices, InputFrame
from app.input.window_events import WindowEvents
from app.jobs.capture_control import CaptureControl
from app.jobs.recovery import Recovery
from app.jobs.training_runner import TrainingRunner
from app.render.camera import Camera
from app.render.framing import body_joints
from app.render.overlays import PHASE_DIAL_RADIUS, build_overlays
from app.render.programs import is_software_renderer
from app.render.renderer import Renderer
from app.render.scene import lerp
from app.sources import styles
from app.sources.loading import load_live, open_playback
from app.sources.playback import PlaybackSource
from app.sources.readouts import apply_physics_mode, update_readouts
from app.transport import StateHistory, scaled_real_dt
from app.ui.hud import hud_values
from app.ui.imgui_layer import ImguiLayer
from app.ui.panel import covered_width
from app.ui.sections.style import weights_label
from app.ui.state import ViewerState
from pfnn_core.features.contract import SIM_FPS
from pfnn_core.runtime.command import command_from_stick
from pfnn_core.runtime.timestep import FixedTimestep

SIM_DT = 1.0 / SIM_FPS
MAX_SUBSTEPS = 4
STARTING_NOTICE = ("Starting: loading the model. The first start on a machine also compiles the runtime "
                   "(up to a minute); later starts take a few seconds.")


def create_window(width: int, height: int, visible: bool = True, vsync: bool = True):
    """A resizable GL 3.3 core window, 8-bit RGBA, 24-bit depth (MSAA is done offscreen by the
    renderer, where the GL is hardware)."""
    import pyglet

    base = dict(double_buffer=True, red_size=8, green_size=8, blue_size=8, alpha_size=8,
                major_version=3, minor_version=3, forward_compatible=True)
    for extra in (dict(depth_size=24), dict(depth_size=16)):
        try:
            config = pyglet.gl.Config(**base, **extra)
            return pyglet.window.Window(width, height, caption="PFNN viewer", resizable=True, vsync=vsync,
                                        config=config, visible=visible)
        except (pyglet.window.NoSuchConfigException, pyglet.gl.ContextException):
            continue
    return pyglet.window.Window(width, height, caption="PFNN viewer", resizable=True, vsync=vsync)


def attach_moderngl(window):
    """A new moderngl context on the window's current GL context (one per window, so several viewers
    can live in one process; `create_context()` would hand back the first one)."""
    import moderngl

    window.switch_to()
    moderngl.init_context()
    return moderngl.get_context()


class Viewer:
    """Window + renderer + camera + input + panel + the character source, and the frame loop."""

    def __init__(self, width=1280, height=720, model_path=None, bvh_path=None, crowd=1, visible=True,
                 vsync=True, show_panel=True, msaa=None, capture_dir=None):
        self.window = create_window(width, height, visible=visible, vsync=vsync)
        self.ctx = attach_moderngl(self.window)
        self.renderer = Renderer(self.ctx, samples=msaa)
        self.camera = Camera()
        self.state = ViewerState(show_panel=show_panel, on_screen=visible)
        if capture_dir:
            self.state.capture.folder = str(capture_dir)
        self.devices = InputDevices()
        self.timestep = FixedTimestep(SIM_DT, MAX_SUBSTEPS)
        self.history = StateHistory(SIM_DT)
        self.crowd = max(1, int(crowd))
        self.training, self.captures = TrainingRunner(), CaptureControl(self.state, is_software_renderer(self.ctx))
        self.recovery = Recovery(self.state)  # offers what an earlier run left unsaved; autosaves the Editor
        self.actions = action_table(self)
        self.imgui = ImguiLayer()
        self.input = WindowEvents(self.window, self.devices, self.camera, self.imgui, self.run_action)
        self.devices.attach_gamepads()
        self.imgui.attach(self.window)
        self.script, self.sim_time, self.frame_count = None, 0.0, 0
        self.strafe_facing = None
        self.styled_segment = None  # the script segment whose style was applied last
        self.live_source, self.source = None, None
        self.closed = False  # the user asked to quit (the loop ends)
        self._window_closed = False
        self._fps, self._last_frame_start = 0.0, None
        if model_path:  # the first start compiles the runtime's kernels: say so rather than show a black window
            self.show_notice(STARTING_NOTICE)
        self._load_initial(model_path, bvh_path)
        self.prev_frames = self.cur_frames = self.source.frames()
        self.camera.snap(self.cur_frames[0].root_pos, body_joints(self.cur_frames[0]))

    def show_notice(self, text: str) -> None:
        """Draw and show at once a frame that only says `text` (before the first real frame)."""
        self.draw_notice(text)
        self.window.flip()

    def draw_notice(self, text: str) -> None:
        """Draw a frame that only says `text`, centred on the sky's colour (not flipped)."""
        self.window.switch_to()
        self.window.dispatch_events()
        self.ctx.screen.use()
        width, height = self.window.get_framebuffer_size()
        self.ctx.viewport = (0, 0, width, height)
        self.ctx.clear(*self.renderer.palette.horizon, 1.0)
        self.imgui.draw_notice(text, self.window.get_size())

    # ---- sources -------------------------------------------------------------------------------
    def _load_initial(self, model_path, bvh_path) -> None:
        from app.paths import BUNDLED_BVH
        from app.sources.puppet import PuppetSource
        from pfnn_core.motion import bvh

        self.live_source = PuppetSource()
        if model_path:
            self.load_model(model_path)
        if self.source is None:
            self.source = self.live_source
            # no network: point the Playback section at a bundled clip instead
            bundled = [p for p in bvh.find_files(BUNDLED_BVH) if "walk" in p.name]
            if bundled and not self.state.playback.path:
                self.state.playback.path = str(bundled[0])
            self.state.open_sections = tuple(self.state.open_sections) + ("Playback",)
        if bvh_path:
            self.open_bvh(bvh_path)
        self.state.source_label = self.source.label

    def load_model(self, path) -> bool:
        """Run the checkpoint at `path`; on failure the running character stays and the panel shows why."""
        live = load_live(self.state, self.live_source, path, self.crowd)
        if live is None:
            return False
        self.live_source = live
        styles.sync_style(self.state, live)
        if not self.state.playback.active:
            self.source = live
        self._reset_frames()
        return True

    def open_bvh(self, path) -> bool:
        """Play a BVH file; on failure nothing changes but the error in the Playback section."""
        playback = open_playback(self.state, path)
        if playback is None:
            return False
        self.source = playback
        self._reset_frames()
        return True

    def back_to_live(self) -> None:
        self.state.playback.active = False
        self.source = self.live_source
        self._reset_frames()

    def reset_source(self) -> None:
        """The source back to its start; a live character faces the way the camera looks, so the first
        W walks straight on."""
        self.source.reset(yaw=self.camera.view_yaw())
        self._reset_frames()

    def seek(self, time_s: float) -> None:
        """Playback only: the play head to `time_s` seconds."""
        if self.state.playback.active:
            self.source.seek(time_s)
            self.prev_frames = self.cur_frames = self.source.frames()
            self.history.clear()

    def set_style(self, weights) -> None:
        styles.set_style(self.state, self.live_source, weights)

    def _reset_frames(self) -> None:
        self.prev_frames = self.cur_frames = self.source.frames()
        self.camera.snap(self.cur_frames[0].root_pos, body_joints(self.cur_frames[0]))
        self.history.clear()
        self.state.source_label = self.source.label

    # ---- dispatch ------------------------------------------------------------------------------
    def run_action(self, name: str, payload=None) -> None:
        """Run one handler of the action table (a control's action, or a panel request with its payload)."""
        handler = self.actions.get(name)
        if handler is None:
            self.state.messages.append(f"Nothing does '{name}'")
        elif payload is None:
            handler()
        else:
            handler(payload)

    def handle_requests(self) -> None:
        for name, payload in self.state.take_requests():
            self.run_action(name, payload)

    def poll_training(self) -> None:
        result_path = self.training.poll(self.state.train)
        if result_path:
            self.load_model(result_path)

    # ---- simulation ----------------------------------------------------------------------------
    def current_command(self):
        """This tick's command: the script's segment, else the input devices (camera-relative)."""
        settings = self.state.settings
        if self.script is not None:
            from pfnn_core.drive.cli import command_for

            segment = self.script.segment_at(self.sim_time)
            if segment.style is not None and segment is not self.styled_segment:
                self.styled_segment = segment  # once when the segment starts: keys and panel may change it after
                styles.script_style(self.state, self.live_source, segment)
            return command_for(segment, settings)
        frame = self.devices.frame(settings.stick_deadzone)
        if self.input.flying():
            frame = InputFrame(np.zeros(2), False, False, frame.camera)
        # strafing keeps the facing the character had when the strafe button went down; strafing by
        # default (shooter style) faces where the camera looks
        if not frame.strafe or self.state.strafe_default:
            self.strafe_facing = None
        elif self.strafe_facing is None:
            self.strafe_facing = self.cur_frames[0].root_dir[[0, 2]].copy()
        return command_from_stick(frame.move, frame.run, frame.strafe or self.state.strafe_default,
                                  self.camera.view_yaw(), settings, facing=self.strafe_facing)

    def tick(self) -> None:
        """One simulation step of the source, with its snapshot kept for stepping back."""
        command = self.current_command()
        self.source.step(command, SIM_DT)
        self.sim_time += SIM_DT
        self.prev_frames, self.cur_frames = self.cur_frames, self.source.frames()
        if self.source is self.live_source:
            self.captures.record_tick(self.live_source)
        self._remember_tick()

    def _remember_tick(self) -> None:
        self.history.push((self.source.snapshot(), self.sim_time, self.strafe_facing, self.captures.recorded_frames))

    def step_ticks(self, count: int) -> None:
        """Pause, then run `count` ticks forward or restore the state `-count` ticks back."""
        self.state.transport.paused = True
        if count > 0:
            for _ in range(count):
                self.tick()
            self.prev_frames = self.cur_frames  # show the new state itself, not a blend toward it
            return
        if not len(self.history):
            self._remember_tick()
        snapshot = self.history.step_back(-count)
        if snapshot is None:
            return
        source_snapshot, self.sim_time, self.strafe_facing, recorded = snapshot
        self.source.restore(source_snapshot)
        self.captures.rewind_recording(recorded)
        self.prev_frames = self.cur_frames = self.source.frames()

    def simulate(self, real_dt: float) -> int:
        """Advance the fixed-step simulation by a frame's real time (scaled by the transport: none while
        paused, less in slow motion); returns the steps taken."""
        playback = self.state.playback
        if isinstance(self.source, PlaybackSource):
            self.source.playing, self.source.speed = playback.playing, playback.speed
        if not len(self.history):
            self._remember_tick()  # the state before the first tick, so the first step back has a target
        steps = self.timestep.advance(scaled_real_dt(real_dt, self.state.transport))
        for _ in range(steps):
            self.tick()
        self.state.transport.history_s = self.history.seconds_back
        if isinstance(self.source, PlaybackSource):
            playback.time = self.source.time
        self.input.steer_camera(real_dt)
        return steps

    def interpolated_frames(self):
        if len(self.prev_frames) != len(self.cur_frames):
            return self.cur_frames
        return [lerp(a, b, self.timestep.alpha) for a, b in zip(self.prev_frames, self.cur_frames)]

    # ---- frame ---------------------------------------------------------------------------------
    def frame(self, real_dt: float) -> None:
        """One frame: simulate, follow with the camera, draw 3D and the panel, handle the panel's requests."""
        start = time.perf_counter()
        self.poll_training()
        for action in self.devices.take_actions():
            self.run_action(action)
        if apply_physics_mode(self.state, self.live_source) and self.source is self.live_source:
            self.prev_frames = self.cur_frames = self.source.frames()  # paused too: the mode shows at once
        steps = self.simulate(real_dt)
        update_readouts(self.state, self.live_source)
        sim_done = time.perf_counter()
        frames = self.interpolated_frames()
        self.camera.ground_reach = PHASE_DIAL_RADIUS if self.state.overlays.get("phase", False) else 0.0
        self.camera.follow(frames[0].root_pos, real_dt, body_joints(frames[0]))
        self.state.camera_mode = self.camera.mode
        self._update_hud(frames[0])
        self.render_scene(frames)
        render_done = time.perf_counter()
        self.imgui.draw(self.state, self.window.get_size(), real_dt)
        self.input.after_panel_frame()
        ui_done = time.perf_counter()
        if self.captures.video is not None:
            self.captures.add_video_frame(self.ctx, self.window.get_framebuffer_size(), real_dt)
        self.handle_requests()
        self.recovery.frame()
        styles.sync_style(self.state, self.live_source)
        self._update_stats(start, real_dt, steps, (sim_done, render_done, ui_done))
        self.frame_count += 1
        self.take_device_news()
        character = getattr(self.live_source, "character", None)  # runtime faults and clamped settings
        if character is not None:
            news = character.take_messages()
            self.state.messages += news
            if news:  # a clamped setting or a recovered fault is said where the eyes are too
                self.state.toast(news[-1], 5.0)

    def take_device_news(self) -> None:
        """Pads coming and going are passing news (a toast, the Stats section's input line); a pad
        that fails to open is a fault and stays in the panel's message lines."""
        devices = self.devices
        if devices.messages:
            self.state.messages += devices.messages
            devices.messages.clear()
        if devices.notices:
            self.state.toast("; ".join(devices.notices), 4.0)
            devices.notices.clear()
        self.state.stats["input"] = devices.describe()

    def _update_stats(self, start: float, real_dt: float, steps: int, laps) -> None:
        sim_done, render_done, ui_done = laps
        # frame rate from the wall clock between frames (headless runs feed a fixed dt, so not from real_dt)
        interval = start - self._last_frame_start if self._last_frame_start is not None else real_dt
        self._last_frame_start = start
        self._fps = 0.9 * self._fps + 0.1 / max(interval, 1e-4) if self._fps else 1.0 / max(interval, 1e-4)
        self.state.stats.update(fps=self._fps, frame_ms=1000 * (ui_done - start), sim_ms=1000 * (sim_done - start),
                                render_ms=1000 * (render_done - sim_done), ui_ms=1000 * (ui_done - render_done),
                                substeps=steps, **getattr(self.source, "timings", {}))

    def _update_hud(self, frame) -> None:
        style = self.state.style
        label = weights_label(style.names, style.running) if self.source is self.live_source else ""
        # the live character's gait is its body's (from its speed), not the stick's: 'stand' the moment W
        # was let go while it still walked read as a fault
        gait = None if self.source is self.live_source else self.source.gait
        self.state.hud.update(hud_values(frame, gait, label, SIM_DT))

    def render_scene(self, frames) -> None:
        self.window.switch_to()
        width = max(self.window.get_size()[0], 1)
        panel = covered_width(self.state, width)
        self.camera.lens_shift = -(panel + 12) / width if panel else 0.0
        self.camera.aspect = width / max(self.window.get_size()[1], 1)
        overlays = build_overlays(frames[0], self.state.overlays)
        self.renderer.ctx.screen.use()
        size = self.window.get_framebuffer_size()
        covered = None
        if panel:  # the background is not drawn under the panel (inset past its rounded corners)
            scale, margin = size[0] / width, 12 + 8
            covered = tuple(round(scale * value) for value in (
                width - panel - 12 + 8, margin, panel - 16, self.window.get_size()[1] - 2 * margin))
        self.renderer.render(frames, overlays, self.camera, size, covered=covered, view_mode=self.state.view_mode)

    def read_pixels(self) -> np.ndarray:
        """The window's colour buffer as an RGB image [H, W, 3], top row first."""
        self.window.switch_to()
        width, height = self.window.get_framebuffer_size()
        data = self.ctx.screen.read(viewport=(0, 0, width, height), components=3)
        # headless EGL surfaces reject the read-buffer selection yet return the right pixels; clear the
        # stale error so PyOpenGL (the panel's renderer) does not report it later
        _ = self.ctx.error
        return np.frombuffer(data, np.uint8).reshape(height, width, 3)[::-1].copy()

    # ---- the loop ------------------------------------------------------------------------------
    def run_frames(self, count: int, real_dt: float = SIM_DT) -> None:
        """Deterministic frames at a fixed real dt (headless mode and tests). The last frame is left
        un-flipped so `read_pixels` sees it."""
        for index in range(count):
            self.window.dispatch_events()
            self.frame(real_dt)
            if index < count - 1:
                self.window.flip()

    def run(self) -> None:
        """Interactive loop: pyglet's clock calls `frame` as fast as vsync allows."""
        import pyglet

        def tick(dt):
            if self.closed:
                return
            self.window.switch_to()
            self.frame(dt)
            self.window.flip()

        pyglet.clock.schedule(tick)
        try:
            pyglet.app.run(None)
        finally:
            pyglet.clock.unschedule(tick)

    def request_close(self) -> None:
        import pyglet

        self.closed = True
        pyglet.app.exit()

    def close(self) -> None:
        if self.training.job is not None:
            self.training.job.stop()
        if self.captures.video is not None:
            self.captures.stop_video()
        if self.captures.recorder is not None:
            self.captures.stop_recording()  # a take still running is saved (its journal kept if it cannot be)
        self.recovery.close()
        try:
            self.window.switch_to()
            self.imgui.close()
        except Exception:  # closing is best effort; the process may be exiting
            pass
        if not self._window_closed:
            self.window.close()
            self._window_closed = True
        self.closed = True
