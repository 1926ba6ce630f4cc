"""The viewer application: CLI, pyglet window, fixed-timestep main loop, headless mode.

The simulation steps at 60 Hz through `pfnn_core.timestep.FixedTimestep` (a long stall drops time
instead of spiralling); rendering interpolates between the last two simulation states. Pause, single
steps, slow motion and stepping back (`app/transport.py`) act through that accumulator. Keys, mouse and
gamepad buttons dispatch through the control table (`app/keys.py`) to the `Viewer.actions` methods.
The panel's requests (load a model, open a BVH, train, record, capture) are handled here, after the UI
pass, and their failures are written back into the panel state so the app keeps running.
"""

import argparse
import os
import sys
import time
from pathlib import Path

# One BLAS/OpenMP thread unless the user asks otherwise: batch-1 inference gains nothing from more, and
# their idle workers spin on a small CPU, starving a software rasteriser (measured on 2 cores: inference
# 13.8 -> 0.7 ms per tick, frame 66 -> 37 ms). Effective when this module is imported before numpy.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

DEFAULT_MODEL = Path(__file__).resolve().parent.parent / "assets" / "models" / "default.safetensors"
SIM_DT = 1.0 / 60.0
MAX_SUBSTEPS = 4
HUD_SPEED_TICKS = 30  # the HUD speed: distance over the last 0.5 s of the root path
ORBIT_RATE = 2.5  # rad/s at full right-stick tilt
MOUSE_ORBIT = 0.008  # rad per pixel dragged


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
    for name in ("bvh", "script", "screenshot", "video", "capture_dir"):
        if getattr(args, name):
            setattr(args, name, str(Path(getattr(args, name)).expanduser().resolve()))
    if args.model:
        args.model = str(Path(args.model).expanduser().resolve())
    return args


def use_headless_gl() -> None:
    """Select offscreen EGL; must run before pyglet or PyOpenGL is first imported."""
    os.environ["PYGLET_HEADLESS"] = "true"
    os.environ.setdefault("PYOPENGL_PLATFORM", "egl")


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
    """Window + renderer + camera + input + panel + the character source, and the main loop."""

    def __init__(self, width=1280, height=720, model_path=None, bvh_path=None, crowd=1, visible=True,
                 vsync=True, show_panel=True, msaa=None, capture_dir=None):
        from imgui_bundle import imgui, implot
        from imgui_bundle.python_backends import pyglet_backend

        from app.input.devices import InputDevices
        from app.render.camera import Camera
        from app.render.renderer import Renderer
        from app.transport import StateHistory
        from app.ui.state import ViewerState
        from app.ui.theme import apply_style
        from pfnn_core.runtime.timestep import FixedTimestep

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
        self.actions = self._action_table()
        self.mouse_buttons = 0  # mouse buttons held over the 3D view
        # our handlers go first so that imgui's (pushed on top by its renderer) see events before them
        self.window.push_handlers(self.on_key_press, self.on_key_release, self.on_mouse_press,
                                  self.on_mouse_release, self.on_mouse_drag, self.on_mouse_scroll,
                                  self.on_deactivate, self.on_draw, self.on_close)
        self.devices.attach_gamepads()
        self.imgui_context = imgui.create_context()
        imgui.set_current_context(self.imgui_context)  # create_context only sets it when none is current
        self.implot_context = implot.create_context()
        implot.set_current_context(self.implot_context)
        imgui.get_io().set_ini_filename("")
        apply_style()
        self.imgui_renderer = pyglet_backend.create_renderer(self.window)
        # on top of the backend's handlers: imgui's Ctrl/Shift/Alt state from every key event's modifiers
        self.window.push_handlers(on_key_press=self._sync_imgui_modifiers, on_key_release=self._sync_imgui_modifiers)
        self.script, self.sim_time, self.frame_count = None, 0.0, 0
        self.strafe_facing = None
        self.styled_segment = None  # the script segment whose style was applied last
        self.live_source, self.source = None, None
        self.training_job, self.recorder, self.video = None, None, None
        self.closed = False  # the user asked to quit (the loop ends)
        self._window_closed = False
        self._fps, self._last_frame_start = 0.0, None
        self._load_initial(model_path, bvh_path)
        self.prev_frames = self.cur_frames = self.source.frames()
        self.camera.snap(self.cur_frames[0].root_pos)

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
        self._sync_source_label()

    def _sync_source_label(self) -> None:
        self.state.source_label = self.source.label

    def load_model(self, path) -> bool:
        """Run the checkpoint at `path`; on failure the running character stays and the panel shows why."""
        from app.sources.live import LiveSource
        from app.ui.messages import failure_message
        from app.ui.sections.style import style_panel_for
        from pfnn_core.runtime.settings import RuntimeSettings

        text = str(path).strip()
        try:
            if not text:
                raise ValueError("no checkpoint path given")
            path = str(self.state.resolve(text))
            if isinstance(self.live_source, LiveSource):
                self.live_source.swap_model(path)
                live = self.live_source
            else:
                live = LiveSource.from_checkpoint(path, self.state.settings, self.crowd)
            summary = live.summary()
        except Exception as error:  # any bad file: keep running what runs
            self.state.model.error = failure_message("load", text and self.state.resolve(text), error)
            return False
        self.live_source = live
        self.state.model_defaults = RuntimeSettings.for_model(live.checkpoint.card)
        self.state.model.error = ""
        self.state.model.path = path
        self.state.model.summary = summary
        self.state.style = style_panel_for(live.style_names, live.checkpoint.meta)
        self._sync_style()
        if not self.state.playback.active:
            self.source = live
        self._reset_frames()
        return True

    def open_bvh(self, path) -> bool:
        """Play a BVH file; on failure nothing changes but the error in the Playback section."""
        from app.sources.playback import PlaybackSource, load_clip
        from app.ui.messages import failure_message

        text = str(path).strip()
        try:
            if not text:
                raise ValueError("no BVH path given")
            path = str(self.state.resolve(text))
            clip = load_clip(path)
        except Exception as error:  # parse errors, missing files, skeletons we cannot show
            self.state.playback.error = failure_message("open", text and self.state.resolve(text), error)
            return False
        playback = self.state.playback
        playback.error, playback.active, playback.clip_name = "", True, clip.name
        playback.path, playback.time, playback.duration, playback.playing = path, 0.0, clip.duration, True
        self.source = PlaybackSource(clip)
        self._reset_frames()
        return True

    def back_to_live(self) -> None:
        self.state.playback.active = False
        self.source = self.live_source
        self._reset_frames()

    def _reset_frames(self) -> None:
        self.prev_frames = self.cur_frames = self.source.frames()
        self.camera.snap(self.cur_frames[0].root_pos)
        self.history.clear()
        self._sync_source_label()

    # ---- the action table (every key, button and panel action ends here) ----------------------
    def _action_table(self) -> dict:
        from app.transport import next_speed

        state, transport, camera = self.state, self.state.transport, self.camera

        def toggle_overlay(name):
            return lambda: state.overlays.update({name: not state.overlays[name]})

        def camera_mode(mode):
            return lambda: camera.set_mode(mode)

        def set_speed(speed):
            transport.speed = speed

        def cycle_view_mode():
            from app.render.renderer import VIEW_MODES

            index = VIEW_MODES.index(state.view_mode) if state.view_mode in VIEW_MODES else -1
            state.view_mode = VIEW_MODES[(index + 1) % len(VIEW_MODES)]

        return {
            "reset_character": lambda: state.request("reset"),
            "next_style": lambda: self.cycle_style(+1),
            "previous_style": lambda: self.cycle_style(-1),
            "toggle_pause": lambda: setattr(transport, "paused", not transport.paused),
            "step_forward": lambda: self.step_ticks(1),
            "step_back": lambda: self.step_ticks(-1),
            "rewind_second": lambda: self.step_ticks(-round(1.0 / SIM_DT)),
            "slower": lambda: set_speed(next_speed(transport.speed, -1)),
            "faster": lambda: set_speed(next_speed(transport.speed, +1)),
            "normal_speed": lambda: set_speed(1.0),
            "camera_follow": camera_mode("follow"),
            "camera_orbit": camera_mode("orbit"),
            "camera_free": camera_mode("free"),
            "camera_fixed": camera_mode("fixed"),
            "camera_next": camera.next_mode,
            "camera_reset": camera.reset,
            "cycle_view_mode": cycle_view_mode,
            "toggle_trajectory": toggle_overlay("trajectory"),
            "toggle_contacts": toggle_overlay("contacts"),
            "toggle_phase": toggle_overlay("phase"),
            "toggle_joint_axes": toggle_overlay("joint_axes"),
            "screenshot": lambda: state.request("save_screenshot"),
            "toggle_video": lambda: state.request("video_stop" if state.capture.video_recording else "video_start"),
            "toggle_recording": lambda: state.request("record_stop" if state.record.recording else "record_start"),
            "toggle_panel": lambda: setattr(state, "show_panel", not state.show_panel),
            "toggle_help": lambda: setattr(state, "show_help", not state.show_help),
            "escape": self.escape,
            "quit": self.quit,
        }

    # ---- styles --------------------------------------------------------------------------------
    def _styled_live(self):
        """The live source when its model has a style input, else None."""
        return self.live_source if getattr(self.live_source, "style_names", None) else None

    def set_style(self, weights) -> None:
        """Every live character's style weights [S] from the next tick."""
        live = self._styled_live()
        if live is None:
            return
        try:
            live.set_style(weights)
        except ValueError as error:
            self.state.messages.append(f"Style not set: {error}")
        self._sync_style()

    def cycle_style(self, step: int) -> None:
        """The next (or previous) style of the list, most data first, after the one running."""
        from app.ui.sections.style import dominant_style, next_style, one_style

        panel, live = self.state.style, self._styled_live()
        if live is None:
            return
        panel.selected = next_style(panel.rows, dominant_style(panel.names, live.style_weights), step)
        panel.blending = False
        self.set_style(one_style(panel.names, panel.selected))

    def _sync_style(self) -> None:
        """Mirror the followed character's style into the panel; when it changed (the panel, a key, a
        script, stepping back, a new model) the full-stick speeds follow it."""
        from app.ui.sections.style import ONE_HOT, dominant_style

        panel, live = self.state.style, self._styled_live()
        if live is None:
            panel.running = ()
            return
        running = tuple(float(w) for w in live.style_weights)
        if running == panel.running:
            return
        panel.running = running
        for settings in (self.state.settings, self.state.model_defaults):
            settings.apply_style(live.checkpoint.card, np.asarray(running))
        if not panel.blending and max(running) >= ONE_HOT:
            panel.selected = dominant_style(panel.names, running)

    def _script_style(self, segment) -> None:
        """A script segment's style, once when the segment starts (the keys and panel may change it after)."""
        from pfnn_core.drive.cli import ScriptError, style_weights

        if segment.style is None or segment is self.styled_segment:
            return
        self.styled_segment = segment
        live = self._styled_live()
        try:
            weights = style_weights(segment.style, live.style_names if live else [], "script style")
        except ScriptError as error:
            self.state.messages.append(str(error))
            return
        self.set_style(weights)

    def run_action(self, name: str) -> None:
        self.actions[name]()

    def escape(self) -> None:
        """Close the topmost thing open; never quits (a stray Escape must not lose a training run)."""
        state = self.state
        if state.confirm_quit:
            state.confirm_quit = False
        elif state.browser.open:
            state.browser.open = False
        elif state.show_help:
            state.show_help = False

    def quit(self) -> None:
        """Quit, asking first while a training run is going."""
        if self.training_job is not None and self.training_job.running:
            self.state.confirm_quit = True
        else:
            self.request_close()

    def request_close(self) -> None:
        import pyglet

        self.closed = True
        pyglet.app.exit()

    # ---- input ---------------------------------------------------------------------------------
    def flying(self) -> bool:
        """Free-fly camera with the right mouse button held: the movement keys fly the camera."""
        from pyglet.window import mouse

        return self.camera.mode == "free" and bool(self.mouse_buttons & mouse.RIGHT)

    def current_command(self):
        from app.input.devices import InputFrame
        from pfnn_core.runtime.command import command_from_stick

        settings = self.state.settings
        if self.script is not None:
            from pfnn_core.drive.cli import command_for

            segment = self.script.segment_at(self.sim_time)
            self._script_style(segment)
            return command_for(segment, settings)
        frame = self.devices.frame(settings.stick_deadzone)
        if self.flying():
            frame = InputFrame(np.zeros(2), False, False, frame.camera)
        # strafing keeps the facing the character had when the strafe button went down
        if not frame.strafe:
            self.strafe_facing = None
        elif self.strafe_facing is None:
            self.strafe_facing = self.cur_frames[0].root_dir[[0, 2]].copy()
        return command_from_stick(frame.move, frame.run, frame.strafe, self.camera.view_yaw(), settings,
                                  facing=self.strafe_facing)

    def on_key_press(self, symbol, modifiers):
        from app.input.keys import action_for_key

        # Always handled here (True), so pyglet's default handler never closes the window on Escape.
        action = action_for_key(symbol, modifiers)
        if self._imgui_io().want_text_input:
            return True  # the text field has it (imgui's handler above ours): Escape leaves the field
        self.devices.on_key_press(symbol, modifiers)
        if action is not None:
            self.run_action(action)
        return True

    def _sync_imgui_modifiers(self, symbol, modifiers):
        """imgui's backend tracks Ctrl/Shift/Alt only from their own key events, so a modifier pressed
        before the window had focus was unknown to it (Ctrl+A typed an 'a' or nothing). Every key event
        carries the modifier state: hand it to imgui before the key itself."""
        from imgui_bundle import imgui
        from pyglet.window import key

        io = self._imgui_io()
        for mask, imgui_key in ((key.MOD_CTRL, imgui.Key.mod_ctrl), (key.MOD_SHIFT, imgui.Key.mod_shift),
                                (key.MOD_ALT, imgui.Key.mod_alt)):
            io.add_key_event(imgui_key, bool(modifiers & mask))

    def _imgui_io(self):
        from imgui_bundle import imgui

        imgui.set_current_context(self.imgui_context)
        return imgui.get_io()

    def on_key_release(self, symbol, modifiers):
        self.devices.on_key_release(symbol, modifiers)

    def on_mouse_press(self, x, y, button, modifiers):
        if not self._imgui_io().want_capture_mouse:
            self.mouse_buttons |= button

    def on_mouse_release(self, x, y, button, modifiers):
        self.mouse_buttons &= ~button

    def on_mouse_drag(self, x, y, dx, dy, buttons, modifiers):
        from app.input.keys import mouse_drag_action

        if not self._imgui_io().want_capture_mouse and mouse_drag_action(buttons) == "camera_turn":
            self.camera.orbit(-dx * MOUSE_ORBIT, -dy * MOUSE_ORBIT)

    def on_mouse_scroll(self, x, y, scroll_x, scroll_y):
        if not self._imgui_io().want_capture_mouse:
            self.camera.zoom(scroll_y)

    def on_deactivate(self):
        from imgui_bundle import imgui

        self.devices.release_all()
        self.mouse_buttons = 0
        self._imgui_io().add_focus_event(False)  # imgui releases its keys (and modifiers) too
        imgui.get_io().add_focus_event(True)

    def on_close(self):
        self.quit()
        return True  # the window closes through `request_close`, after the question if training

    # ---- panel requests ------------------------------------------------------------------------
    def handle_requests(self) -> None:
        for name, payload in self.state.take_requests():
            if name == "load_model":
                self.load_model(payload)
            elif name == "open_bvh":
                self.open_bvh(payload)
            elif name == "live":
                self.back_to_live()
            elif name == "seek" and self.state.playback.active:
                self.source.seek(payload)
                self.prev_frames = self.cur_frames = self.source.frames()
                self.history.clear()
            elif name == "reset":
                self.source.reset()
                self._reset_frames()
            elif name == "action":
                self.run_action(payload)
            elif name == "set_style":
                self.set_style(payload)
            elif name == "camera_mode":
                self.camera.set_mode(payload)
            elif name == "start_training":
                self.start_training(bool(payload and payload.get("resume")))
            elif name == "stop_training":
                self.stop_training()
            elif name == "record_start":
                self.start_recording()
            elif name == "record_stop":
                self.stop_recording()
            elif name == "save_screenshot":
                self.take_screenshot()
            elif name == "video_start":
                self.start_video()
            elif name == "video_stop":
                self.stop_video()
            elif name == "quit_now":
                self.stop_training()
                if self.training_job is not None:
                    self.training_job.join(10.0)  # it saves its resumable state at the next batch
                self.request_close()
            elif name == "editor":
                from app.ui.sections.editor import handle_request

                handle_request(self.state, payload)
            elif name in self.actions:
                self.run_action(name)

    # ---- training ------------------------------------------------------------------------------
    def start_training(self, resume: bool) -> None:
        from app.training_job import TrainingJob, run_training, training_config

        train = self.state.train
        if self.training_job is not None and self.training_job.running:
            return
        try:
            config = training_config(train, resume, self.state.work_dir)
        except Exception as error:  # a form that cannot run: said at once, nothing starts
            train.error, train.status, train.progress, train.eta_s = str(error), "", 0.0, None
            return
        train.error, train.status, train.progress, train.eta_s, train.running = "", "Starting...", 0.0, None, True
        if not resume:
            train.epochs_x, train.train_loss, train.val_loss = [], [], []
        train.plot_epochs = int(config.epochs)
        self.training_job = TrainingJob(lambda progress, stop: run_training(config, progress, stop))
        self.training_job.start()

    def stop_training(self) -> None:
        if self.training_job is not None and self.training_job.running:
            self.training_job.stop()
            self.state.train.status = "Stopping..."

    def poll_training(self) -> None:
        job, train = self.training_job, self.state.train
        if job is None:
            return
        stopped_early = None
        for update in job.drain():
            event = update.get("event")
            if "error" in update:
                train.error = update["error"]
            if event == "stopped_early":
                stopped_early = update.get("stage", "")
            elif job.stop_event.is_set():
                pass  # keep saying "Stopping..."
            elif event == "checking":
                train.status = "Checking the resume file..."
            elif event == "loading":
                total = update.get("files")
                train.status = (f"Loading data: {update['files_done']}/{total} files" if total else "Loading data...")
            if event == "epoch":
                train.epochs_x.append(float(update["epoch"]))
                train.train_loss.append(float(update["train_loss"]))
                if update.get("val_loss") is not None:
                    train.val_loss.append(float(update["val_loss"]))
            if update.get("total_steps"):
                train.progress = min(1.0, update.get("step", 0) / update["total_steps"])
                train.eta_s = update.get("eta_s")
                if not job.stop_event.is_set():
                    train.status = (f"epoch {update.get('epoch')}/{update.get('epochs')}   "
                                    f"loss {update.get('train_loss', 0.0):.4f}")
        if job.finished and not job.running:
            self.training_job = None
            train.running, train.progress, train.eta_s = False, 0.0, None  # no stale bar or ETA
            result = job.result
            if job.error:
                train.status = ""
            elif stopped_early is not None:
                train.status = f"Stopped while {stopped_early}; nothing was trained or saved."
            elif result is not None:
                ending = "Stopped" if getattr(result, "stopped", False) else "Done"
                if getattr(result, "out_path", None):
                    train.result_path = str(result.out_path)
                    train.status = (f"{ending}: {result.epochs_completed} epochs, best validation loss "
                                    f"{result.best_val_loss:.4f} -> {result.out_path}")
                else:
                    train.status = f"{ending} before the first epoch ended; resumable state: {result.resume_path}"
                if train.auto_swap and ending == "Done" and train.result_path:
                    self.load_model(train.result_path)

    # ---- recording and capture -----------------------------------------------------------------
    def start_recording(self) -> None:
        from app.recorder import Recorder

        record = self.state.record
        try:
            self.recorder = Recorder.for_source(self.live_source)
        except Exception as error:
            record.error = str(error)
            return
        record.recording, record.frames, record.error, record.message = True, 0, "", ""

    def stop_recording(self) -> None:
        from app.ui.messages import failure_message

        record = self.state.record
        record.recording = False
        if self.recorder is None:
            return
        path = self.state.resolve(record.path or "recordings/recording.bvh")
        try:
            path = self.recorder.save(path)
            record.message = f"Saved {self.recorder.frame_count} frames to {path}"
        except Exception as error:
            record.error = failure_message("save", path, error)
        self.recorder = None

    def capture_path(self, kind: str):
        from app.capture import capture_name

        return self.state.resolve(self.state.capture.folder or "captures") / capture_name(kind)

    def take_screenshot(self, path=None):
        """Save what the window shows now (this frame's scene and panel) as a PNG."""
        from app.capture import save_png
        from app.ui.messages import failure_message

        capture = self.state.capture
        path = path or self.capture_path("png")
        try:
            save_png(self.read_pixels(), path)
        except Exception as error:
            capture.error = failure_message("save", path, error)
            return None
        capture.message, capture.error = f"Saved {path}", ""
        return path

    def start_video(self, path=None) -> None:
        from app.capture import VideoRecorder
        from app.ui.messages import failure_message

        capture = self.state.capture
        if self.video is not None:
            return
        path = path or self.capture_path("mp4")
        try:
            self.video = VideoRecorder(path)
        except Exception as error:
            capture.error = failure_message("record", path, error)
            return
        capture.video_recording, capture.video_frames, capture.error = True, 0, ""
        capture.message = f"Recording {path}"

    def stop_video(self) -> None:
        from app.ui.messages import failure_message

        capture = self.state.capture
        video, self.video = self.video, None
        capture.video_recording = False
        if video is None:
            return
        try:
            path = video.close()
            capture.message = f"Saved {video.frames_written} frames ({video.frames_written / video.fps:.1f} s) to {path}"
        except Exception as error:
            capture.error = failure_message("save", video.path, error)

    # ---- frame -------------------------------------------------------------------------------
    def tick(self) -> None:
        """One simulation step of the source, with its snapshot kept for stepping back."""
        command = self.current_command()
        self.source.step(command, SIM_DT)
        self.sim_time += SIM_DT
        self.prev_frames, self.cur_frames = self.cur_frames, self.source.frames()
        if self.recorder is not None and self.source is self.live_source:
            self.recorder.capture(self.live_source)
            self.state.record.frames = self.recorder.frame_count
        self._remember_tick()

    def _remember_tick(self) -> None:
        recorded = self.recorder.frame_count if self.recorder is not None else None
        self.history.push((self.source.snapshot(), self.sim_time, self.strafe_facing, recorded))

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
        if self.recorder is not None and recorded is not None:
            self.recorder.truncate(recorded)
            self.state.record.frames = self.recorder.frame_count
        self.prev_frames = self.cur_frames = self.source.frames()

    def simulate(self, real_dt: float) -> int:
        """Advance the fixed-step simulation by a frame's real time (scaled by the transport: none while
        paused, less in slow motion); returns the steps taken."""
        from app.sources.playback import PlaybackSource
        from app.transport import scaled_real_dt

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
        frame = self.devices.frame()
        self.camera.orbit(-frame.camera[0] * ORBIT_RATE * real_dt, -frame.camera[1] * ORBIT_RATE * real_dt)
        if self.camera.mode == "free":
            self.fly_camera(real_dt)
        return steps

    def fly_camera(self, real_dt: float) -> None:
        """Free fly: the held movement keys while the right button is down; the gamepad's left stick
        flies whenever the camera is free (the character then stands)."""
        from pyglet.window import key

        from app.input.devices import keyboard_frame

        move, up = np.zeros(2), 0.0
        if self.flying():
            move = keyboard_frame(self.devices.held).move
            up = float(key.E in self.devices.held) - float(key.Q in self.devices.held)
        self.camera.fly(move, up, real_dt)

    def interpolated_frames(self):
        from app.render.scene import lerp

        if len(self.prev_frames) != len(self.cur_frames):
            return self.cur_frames
        return [lerp(a, b, self.timestep.alpha) for a, b in zip(self.prev_frames, self.cur_frames)]

    def frame(self, real_dt: float) -> None:
        """One frame: simulate, follow with the camera, draw 3D and the panel, handle the panel's requests."""
        start = time.perf_counter()
        self.poll_training()
        for action in self.devices.take_actions():
            self.run_action(action)
        steps = self.simulate(real_dt)
        sim_done = time.perf_counter()
        frames = self.interpolated_frames()
        self.camera.follow(frames[0].root_pos, real_dt)
        self.state.camera_mode = self.camera.mode
        self._update_hud(frames[0])
        self.render_scene(frames)
        render_done = time.perf_counter()
        self.render_ui(real_dt)
        ui_done = time.perf_counter()
        if self.video is not None:
            self.state.capture.video_frames += self.video.add(self.read_pixels(), real_dt)
        self.handle_requests()
        self._sync_style()
        stats = self.state.stats
        # frame rate from the wall clock between frames (headless runs feed a fixed dt, so not from real_dt)
        interval = start - self._last_frame_start if self._last_frame_start is not None else real_dt
        self._last_frame_start = start
        self._fps = 0.9 * self._fps + 0.1 / max(interval, 1e-4) if self._fps else 1.0 / max(interval, 1e-4)
        stats.update(fps=self._fps, frame_ms=1000 * (ui_done - start), sim_ms=1000 * (sim_done - start),
                     render_ms=1000 * (render_done - sim_done), ui_ms=1000 * (ui_done - render_done),
                     substeps=steps, **getattr(self.source, "timings", {}))
        self.frame_count += 1
        messages = self.devices.messages
        if messages:
            self.state.messages += messages
            messages.clear()
        character = getattr(self.live_source, "character", None)  # runtime faults and clamped settings
        if character is not None:
            self.state.messages += character.take_messages()

    def _update_hud(self, frame) -> None:
        from app.sources.playback import PlaybackSource

        past = frame.traj_past_pos
        speed = 0.0
        if past is not None and len(past) > HUD_SPEED_TICKS:  # mean over about one step, not the wobble within it
            speed = float(np.linalg.norm((past[-1] - past[-1 - HUD_SPEED_TICKS])[[0, 2]]) / (HUD_SPEED_TICKS * SIM_DT))
        from app.ui.sections.style import weights_label

        gait = "playback" if isinstance(self.source, PlaybackSource) else getattr(self.source, "gait", None)
        style = self.state.style
        self.state.hud.update(phase=float(frame.phase), speed=speed,
                              gait=gait or ("stand" if speed < 0.2 else "walk" if speed < 2.0 else "run"),
                              style=weights_label(style.names, style.running) if self.source is self.live_source else "")

    def render_scene(self, frames) -> None:
        from app.render.overlays import build_overlays
        from app.ui.theme import PANEL_WIDTH

        self.window.switch_to()
        width = max(self.window.get_size()[0], 1)
        self.camera.lens_shift = -(PANEL_WIDTH + 12) / width if self.state.show_panel else 0.0
        overlays = build_overlays(frames[0], self.state.overlays)
        self.renderer.ctx.screen.use()
        size = self.window.get_framebuffer_size()
        covered = None
        if self.state.show_panel:  # the background is not drawn under the panel (inset past its rounded corners)
            scale, margin = size[0] / width, 12 + 8
            covered = tuple(round(scale * value) for value in (
                width - PANEL_WIDTH - 12 + 8, margin, PANEL_WIDTH - 16, self.window.get_size()[1] - 2 * margin))
        self.renderer.render(frames, overlays, self.camera, size, covered=covered, view_mode=self.state.view_mode)

    def render_ui(self, real_dt: float) -> None:
        from imgui_bundle import imgui, implot

        # several viewers may live in one process (tests): make this one's contexts current
        imgui.set_current_context(self.imgui_context)
        implot.set_current_context(self.implot_context)
        io = imgui.get_io()
        io.delta_time = max(real_dt, 1e-4)
        imgui.new_frame()
        from app.ui.panel import gui

        gui(self.state, self.window.get_size())
        imgui.render()
        self.imgui_renderer.render(imgui.get_draw_data())

    def on_draw(self):
        pass  # drawing happens in `frame`, scheduled on the clock

    def read_pixels(self) -> np.ndarray:
        """The window's colour buffer as an RGB image [H, W, 3], top row first."""
        self.window.switch_to()
        width, height = self.window.get_framebuffer_size()
        data = self.ctx.screen.read(viewport=(0, 0, width, height), components=3)
        # headless EGL surfaces reject the read-buffer selection yet return the right pixels; clear the
        # stale error so PyOpenGL (the panel's renderer) does not report it later
        _ = self.ctx.error
        return np.frombuffer(data, np.uint8).reshape(height, width, 3)[::-1].copy()

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

    def close(self) -> None:
        from imgui_bundle import imgui, implot

        if self.training_job is not None:
            self.training_job.stop()
        if self.video is not None:
            self.stop_video()
        try:
            self.window.switch_to()
            imgui.set_current_context(self.imgui_context)
            self.imgui_renderer.shutdown()
            implot.destroy_context(self.implot_context)
            imgui.destroy_context(self.imgui_context)
        except Exception:  # closing is best effort; the process may be exiting
            pass
        if not self._window_closed:
            self.window.close()
            self._window_closed = True
        self.closed = True


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
    if args.headless:
        return run_headless(viewer, args)
    if args.video:
        viewer.start_video(args.video)
    viewer.run()
    viewer.close()
    return 0


def script_style_error(script, viewer: Viewer) -> str:
    """Why a script's segment styles do not suit the running model ('' when they do)."""
    from pfnn_core.drive.cli import ScriptError, style_weights

    live = viewer._styled_live()
    for index, segment in enumerate(script.segments):
        if segment.style is not None:
            try:
                style_weights(segment.style, live.style_names if live else [], f"segments[{index}].style")
            except ScriptError as error:
                return str(error)
    return ""


def run_headless(viewer: Viewer, args) -> int:
    """Render `--frames` frames offscreen; any file that could not be used fails the run (exit 1) with
    its message, before any frame is rendered, instead of quietly showing something else."""
    from app.capture import save_png

    failures = [message for message in (viewer.state.model.error, viewer.state.playback.error) if message]
    if failures:
        for message in failures:
            print(f"pfnn-viewer: {message}", file=sys.stderr)
        viewer.close()
        return 1
    if args.video:
        viewer.start_video(args.video)
        if viewer.state.capture.error:
            print(f"pfnn-viewer: {viewer.state.capture.error}", file=sys.stderr)
            viewer.close()
            return 1
    viewer.run_frames(max(1, args.frames))
    if args.screenshot:
        save_png(viewer.read_pixels(), args.screenshot)
        print(f"saved {args.screenshot}")
    if args.video:
        viewer.stop_video()
        print(viewer.state.capture.error or viewer.state.capture.message)
    viewer.close()
    return 1 if viewer.state.capture.error else 0


if __name__ == "__main__":
    sys.exit(main())
