"""The ImGui panel, the help overlay, the file browser and the quit dialog. All UI state lives in one
`ViewerState`; `gui(state)` only reads and writes it.

Actions that need the application (load a checkpoint, open a BVH, start training, record) are queued
as `state.requests` (name, payload) tuples that the app handles after the frame's UI pass, so a
failure there is written back into the state (e.g. `state.model.error`) and shown on the next frame.
Errors are shown as one line (`app.messages`) with the details in a tooltip.
"""

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from imgui_bundle import imgui, implot

from app import messages, paths
from app.editor_panel import EditorPanel, editor_section
from app.file_browser import BrowserState, RecentFolders, browser_window
from app.input import keys
from app.path_fields import apply_choice, path_field, remember_rect
from app.render.camera import CAMERA_MODES
from app.render.overlays import phase_dial_outline
from app.render.renderer import VIEW_MODES
from app.style_panel import StylePanel, style_section
from app.transport import MAX_SPEED, MIN_SPEED, TransportPanel
from pfnn_core.runtime.settings import RuntimeSettings, tunable_fields

ERROR_COLOUR = (1.0, 0.42, 0.38, 1.0)
OK_COLOUR = (0.45, 0.9, 0.55, 1.0)
DIM_COLOUR = (0.65, 0.68, 0.74, 1.0)
TRAIN_COLOUR = (0.40, 0.70, 1.0, 1.0)
VALIDATION_COLOUR = (1.0, 0.60, 0.15, 1.0)
HELP_KEY_COLOUR, HELP_MOUSE_COLOUR, HELP_PAD_COLOUR = (0.98, 0.86, 0.3, 1.0), (0.6, 0.85, 1.0, 1.0), (0.7, 0.95, 0.7, 1.0)
PANEL_WIDTH = 430
OVERLAY_TOGGLES = (("trajectory", "Trajectory", "toggle_trajectory"), ("contacts", "Foot contacts", "toggle_contacts"),
                   ("phase", "Phase dial", "toggle_phase"), ("joint_axes", "Joint axes", "toggle_joint_axes"))
PHASE_FUNCTIONS = ("cubic", "rbf")


@dataclass
class ModelPanel:
    path: str = ""  # checkpoint now running ("" = none)
    summary: list = field(default_factory=list)  # lines describing data / settings of the model
    load_path: str = ""
    error: str = ""


@dataclass
class TrainPanel:
    bvh_dir: str = str(paths.BUNDLED_BVH)
    out: str = "models/viewer_model.safetensors"  # relative paths: in the work folder
    resume_path: str = ""  # resumable checkpoint ("" = the one saved next to `out`)
    phase_function: str = "rbf"
    kernels: int = 8
    beta: float = 8.0
    hidden: int = 256
    epochs: int = 20
    learning_rate: float = 1e-3
    auto_swap: bool = True
    running: bool = False
    status: str = ""
    error: str = ""
    progress: float = 0.0
    eta_s: float | None = None
    epochs_x: list = field(default_factory=list)
    train_loss: list = field(default_factory=list)
    val_loss: list = field(default_factory=list)
    plot_epochs: int = 0  # epochs of the run the loss plot shows (the form's value may change since)
    result_path: str = ""


@dataclass
class PlaybackPanel:
    path: str = ""
    error: str = ""
    active: bool = False  # a clip is playing instead of the live character
    clip_name: str = ""
    playing: bool = True
    speed: float = 1.0
    time: float = 0.0
    duration: float = 0.0


@dataclass
class RecordPanel:
    path: str = "recordings/recording.bvh"
    recording: bool = False
    frames: int = 0
    message: str = ""
    error: str = ""


@dataclass
class CapturePanel:
    folder: str = "captures"  # screenshots and videos named by date and time go here
    video_recording: bool = False
    video_frames: int = 0
    message: str = ""
    error: str = ""


@dataclass
class ViewerState:
    settings: RuntimeSettings = field(default_factory=RuntimeSettings)
    overlays: dict = field(default_factory=lambda: {"trajectory": True, "contacts": True, "phase": True,
                                                    "joint_axes": False})
    show_panel: bool = True
    show_help: bool = False  # the F1 overlay listing every control
    on_screen: bool = True  # a person watches the window (headless: no recording sign in the saved frames)
    view_mode: str = "mesh"  # how bodies are drawn: one of VIEW_MODES (read by the renderer)
    camera_mode: str = "follow"  # mirrors the camera (the panel asks for changes with a request)
    open_sections: tuple = ("Model", "Style", "View", "Stats")  # panel sections open now (clicks on headers edit it)
    source_label: str = ""
    model: ModelPanel = field(default_factory=ModelPanel)
    style: StylePanel = field(default_factory=StylePanel)  # the model's styles, the one or the blend asked for
    # what "Reset to defaults" restores: the loaded model's values (`RuntimeSettings.from_checkpoint_meta`)
    model_defaults: RuntimeSettings = field(default_factory=RuntimeSettings)
    train: TrainPanel = field(default_factory=TrainPanel)
    playback: PlaybackPanel = field(default_factory=PlaybackPanel)
    record: RecordPanel = field(default_factory=RecordPanel)
    capture: CapturePanel = field(default_factory=CapturePanel)
    transport: TransportPanel = field(default_factory=TransportPanel)
    browser: BrowserState = field(default_factory=BrowserState)
    recent: RecentFolders = field(default_factory=lambda: RecentFolders(paths.config_dir() / "recent.json"))
    work_dir: str = field(default_factory=lambda: str(paths.work_dir()))  # relative panel paths start here
    confirm_quit: bool = False  # the "training is running: quit anyway?" dialog is open
    field_rects: dict = field(default_factory=dict)  # screen rects (x0, y0, x1, y1) of named widgets, last frame
    editor: EditorPanel = field(default_factory=EditorPanel)
    stats: dict = field(default_factory=dict)  # fps, frame_ms, sim_ms, ui_ms, render_ms, tick_ms, infer_ms, device
    hud: dict = field(default_factory=dict)  # phase, speed, gait, style of the followed character
    messages: list = field(default_factory=list)  # recent notices (gamepads, saves)
    requests: list = field(default_factory=list)  # (name, payload) for the app

    def request(self, name: str, payload=None) -> None:
        self.requests.append((name, payload))

    def take_requests(self) -> list:
        taken, self.requests = self.requests, []
        return taken

    def resolve(self, text: str):
        """A path typed in the panel as an absolute path (relative ones start in the work folder)."""
        return paths.resolve(text, self.work_dir)


def reset_settings(settings: RuntimeSettings, defaults: RuntimeSettings) -> None:
    """Every field of `settings` back to `defaults`, in place (the runtime holds this object)."""
    for field_ in dataclasses.fields(settings):
        setattr(settings, field_.name, getattr(defaults, field_.name))


def load_font(size_px: float = 15.0) -> None:
    """Roboto from imgui-bundle's assets as the default font (ImGui's built-in bitmap font otherwise).
    Call before the first frame."""
    import imgui_bundle

    path = Path(imgui_bundle.__file__).parent / "assets" / "fonts" / "Roboto" / "Roboto-Regular.ttf"
    if path.is_file():
        imgui.get_io().fonts.add_font_from_file_ttf(str(path), size_px)


def apply_style() -> None:
    """A calm dark theme with rounded corners and a blue accent."""
    load_font()
    imgui.style_colors_dark()
    style = imgui.get_style()
    style.window_rounding, style.frame_rounding, style.grab_rounding = 8.0, 5.0, 5.0
    style.popup_rounding, style.child_rounding, style.scrollbar_rounding = 6.0, 6.0, 6.0
    style.window_padding, style.frame_padding = imgui.ImVec2(12, 10), imgui.ImVec2(8, 4)
    style.item_spacing, style.window_border_size = imgui.ImVec2(8, 6), 0.0
    colours = {
        imgui.Col_.window_bg: (0.09, 0.10, 0.13, 0.94), imgui.Col_.child_bg: (0.12, 0.13, 0.17, 0.6),
        imgui.Col_.header: (0.20, 0.33, 0.52, 0.55), imgui.Col_.header_hovered: (0.26, 0.42, 0.66, 0.8),
        imgui.Col_.header_active: (0.28, 0.47, 0.74, 1.0), imgui.Col_.frame_bg: (0.17, 0.19, 0.25, 1.0),
        imgui.Col_.frame_bg_hovered: (0.22, 0.25, 0.33, 1.0), imgui.Col_.button: (0.22, 0.36, 0.58, 0.85),
        imgui.Col_.button_hovered: (0.28, 0.45, 0.72, 1.0), imgui.Col_.slider_grab: (0.40, 0.62, 0.95, 1.0),
        imgui.Col_.check_mark: (0.45, 0.72, 1.0, 1.0), imgui.Col_.title_bg_active: (0.12, 0.18, 0.28, 1.0),
        imgui.Col_.plot_histogram: (0.40, 0.62, 0.95, 1.0),
    }
    for index, colour in colours.items():
        style.set_color_(index, imgui.ImVec4(*colour))


def display_path(path: str) -> str:
    """A path as short as it can be said: relative to the working directory when below it."""
    if not path:
        return path
    try:
        relative = Path(path).resolve().relative_to(Path.cwd().resolve())
        return str(relative)
    except (ValueError, OSError):
        return path


def _tooltip(text: str) -> None:
    if text and imgui.is_item_hovered():
        imgui.set_tooltip(text)


def _error(text: str) -> None:
    """An error as one line that fits the panel (the full message in a tooltip)."""
    if not text:
        return
    width = imgui.get_content_region_avail().x
    limit = 200
    line = messages.one_line(text, limit)
    while limit > 12 and imgui.calc_text_size(line).x > width:
        limit = int(limit * 0.85)
        line = messages.one_line(text, limit)
    imgui.text_colored(imgui.ImVec4(*ERROR_COLOUR), line)
    if imgui.is_item_hovered():
        imgui.begin_tooltip()
        imgui.push_text_wrap_pos(imgui.get_font_size() * 36)
        imgui.text_unformatted(messages.details(text))
        imgui.pop_text_wrap_pos()
        imgui.end_tooltip()


def _dim_line(text: str) -> None:
    if text:
        imgui.push_text_wrap_pos(0.0)
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), text)
        imgui.pop_text_wrap_pos()


def _labelled_slider(state: ViewerState, name: str, label: str, value: float, low: float, high: float,
                     text: str, width: float) -> tuple[bool, float]:
    """A slider with its value written beside it, where the grab can never cover it."""
    imgui.set_next_item_width(width)
    changed, value = imgui.slider_float(f"##{name}", value, low, high, "")
    remember_rect(state, name)
    imgui.same_line()
    imgui.text(text.format(value))
    remember_rect(state, f"{name}_value")
    if label:
        imgui.same_line()
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), label)
    return changed, value


def setting_widget(settings: RuntimeSettings, field_: dataclasses.Field) -> bool:
    """One widget for one settings field, chosen from its type and metadata; writes the value back."""
    meta = field_.metadata
    label = f"{meta.get('label', field_.name)}##{field_.name}"
    value = getattr(settings, field_.name)
    if isinstance(value, bool):
        changed, value = imgui.checkbox(label, value)
    elif "choices" in meta:
        choices = list(meta["choices"])
        changed, index = imgui.combo(label, choices.index(value) if value in choices else 0, choices)
        value = choices[index]
    elif isinstance(value, int):
        low, high = settings.limits(field_.name)
        changed, value = imgui.slider_int(label, value, int(low), int(high))
    else:
        low, high = settings.limits(field_.name)  # the loaded model's range (e.g. beta around its trained value)
        changed, value = imgui.slider_float(label, float(value), low, high, "%.3g")
        if field_.name == "beta":
            imgui.same_line()
            imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), f"{low:g}-{high:g}")
    _tooltip(meta.get("help", ""))
    if changed:
        setattr(settings, field_.name, value)
    return changed


def tune_section(state: ViewerState) -> None:
    if imgui.button("Reset to defaults"):
        reset_settings(state.settings, state.model_defaults)
    remember_rect(state, "reset_settings")
    _tooltip("The loaded model's values (its walk and run speeds, for the current style) and the runtime's "
             "defaults for the rest")
    imgui.push_item_width(140)
    for field_ in tunable_fields(state.settings):
        setting_widget(state.settings, field_)
    imgui.pop_item_width()


def model_section(state: ViewerState) -> None:
    model = state.model
    imgui.text("Running:")
    imgui.same_line()
    imgui.text_colored(imgui.ImVec4(*OK_COLOUR) if model.path else imgui.ImVec4(*DIM_COLOUR),
                       display_path(model.path) or "none (stand-in character)")
    _tooltip(model.path)
    for line in model.summary:
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), line)
    if path_field(state, "model", "Checkpoint", "Load"):
        state.request("load_model", model.load_path)
    _error(model.error)


def loss_plot_limits(epochs_x, train_loss, val_loss, run_epochs: int) -> tuple[float, float, float, float]:
    """(x min, x max, y min, y max) that hold every point of both curves, y on a log scale with a
    margin, x from 0 to the run's epochs (or further when a resumed run went past them)."""
    values = np.asarray([v for v in list(train_loss) + list(val_loss) if np.isfinite(v) and v > 0], np.float64)
    x_max = max([float(run_epochs), 1.0] + [float(x) for x in epochs_x])
    if len(values) == 0:
        return 0.0, x_max, 1e-3, 1.0
    low, high = np.log10(values.min()), np.log10(values.max())
    margin = max(0.08 * (high - low), 0.05)
    return 0.0, x_max, float(10 ** (low - margin)), float(10 ** (high + margin))


def loss_plot(state: ViewerState) -> None:
    train = state.train
    if not train.train_loss or not implot.begin_plot("Loss", imgui.ImVec2(-1, 170)):
        return
    x0, x1, y0, y1 = loss_plot_limits(train.epochs_x, train.train_loss, train.val_loss,
                                      train.plot_epochs or train.epochs)
    implot.setup_axes("epoch", "loss")
    implot.setup_axis_scale(implot.ImAxis_.y1, implot.Scale_.log10)
    implot.setup_axis_limits(implot.ImAxis_.x1, x0, x1, imgui.Cond_.always)
    implot.setup_axis_limits(implot.ImAxis_.y1, y0, y1, imgui.Cond_.always)
    implot.setup_legend(implot.Location_.north_east)
    xs = np.asarray(train.epochs_x, np.float64)
    # markers: a curve of one point (after the first epoch) is a dot, not nothing
    for name, values, colour in (("train", train.train_loss, TRAIN_COLOUR),
                                 ("validation", train.val_loss, VALIDATION_COLOUR)):
        if len(values) != len(xs):
            continue
        spec = implot.Spec()
        spec.line_color = spec.marker_fill_color = spec.marker_line_color = imgui.ImVec4(*colour)
        spec.marker, spec.marker_size, spec.line_weight = implot.Marker_.circle, 3.0, 2.0
        implot.plot_line(name, xs, np.asarray(values, np.float64), spec)
    implot.end_plot()
    remember_rect(state, "loss_plot")


def train_section(state: ViewerState) -> None:
    train = state.train
    imgui.begin_disabled(train.running)
    path_field(state, "bvh_dir", "BVH folder")
    path_field(state, "train_out", "Save to")
    path_field(state, "resume", "Resume from")
    if not train.resume_path.strip():
        _tooltip("Empty: the resumable checkpoint saved next to 'Save to'")
    imgui.push_item_width(170)
    index = PHASE_FUNCTIONS.index(train.phase_function) if train.phase_function in PHASE_FUNCTIONS else 0
    _, index = imgui.combo("Phase function", index, list(PHASE_FUNCTIONS))
    train.phase_function = PHASE_FUNCTIONS[index]
    if train.phase_function == "rbf":
        _, train.kernels = imgui.slider_int("Kernels", train.kernels, 2, 16)
        _, train.beta = imgui.slider_float("Beta", train.beta, 0.5, 64.0, "%.1f")
    _, train.hidden = imgui.slider_int("Hidden size", train.hidden, 32, 1024)
    _, train.epochs = imgui.slider_int("Epochs", train.epochs, 1, 200)
    _, train.learning_rate = imgui.input_float("Learning rate", train.learning_rate, 0.0, 0.0, "%.1e")
    imgui.pop_item_width()
    imgui.end_disabled()
    _, train.auto_swap = imgui.checkbox("Use the model when training finishes", train.auto_swap)
    if train.running:
        if imgui.button("Stop"):
            state.request("stop_training")
    else:
        if imgui.button("Start"):
            state.request("start_training", {"resume": False})
        imgui.same_line()
        if imgui.button("Resume"):
            state.request("start_training", {"resume": True})
    if train.result_path and not train.running:
        imgui.same_line()
        if imgui.button("Use this model"):
            state.request("load_model", train.result_path)
    if train.running:
        eta = "" if train.eta_s is None else f"  ETA {int(train.eta_s) // 60}:{int(train.eta_s) % 60:02d}"
        imgui.progress_bar(train.progress, imgui.ImVec2(-1, 0), f"{100 * train.progress:.0f}%{eta}")
    _dim_line(train.status)
    _error(train.error)
    loss_plot(state)


def playback_section(state: ViewerState) -> None:
    playback = state.playback
    if path_field(state, "playback", "BVH file", "Open"):
        state.request("open_bvh", playback.path)
    _error(playback.error)
    if playback.active:
        imgui.text(playback.clip_name)
        _, playback.playing = imgui.checkbox("Play", playback.playing)
        imgui.same_line()
        _, playback.speed = _labelled_slider(state, "playback_speed", "speed", playback.speed, 0.1, 2.0,
                                             "{:.2f}x", 150)
        imgui.set_next_item_width(-1)
        changed, playback.time = imgui.slider_float("##time", playback.time, 0.0, max(playback.duration, 1e-3),
                                                    "%.2f s")
        if changed:
            state.request("seek", playback.time)
        if imgui.button("Back to the live character"):
            state.request("live")


def _recording_button(state: ViewerState, what: str, control: str, request: str, recording: bool, frames: int) -> None:
    """"Record{what} (key)" or, while recording, "Stop{what} (key)" with the frames so far; the
    button asks for `{request}_start` / `{request}_stop`."""
    toggle = keys.keys_label(keys.control(control))
    if recording:
        if imgui.button(f"Stop{what} ({toggle})"):
            state.request(f"{request}_stop")
        imgui.same_line()
        imgui.text_colored(imgui.ImVec4(*ERROR_COLOUR), f"REC  {frames} frames")
    elif imgui.button(f"Record{what} ({toggle})"):
        state.request(f"{request}_start")


def record_section(state: ViewerState) -> None:
    record = state.record
    path_field(state, "record", "BVH file")
    _recording_button(state, "", "toggle_recording", "record", record.recording, record.frames)
    if record.message:
        imgui.text_colored(imgui.ImVec4(*OK_COLOUR), record.message)
        _tooltip(record.message)
    _error(record.error)


def capture_section(state: ViewerState) -> None:
    capture = state.capture
    path_field(state, "capture_dir", "Folder")
    if imgui.button(f"Screenshot ({keys.keys_label(keys.control('screenshot'))})"):
        state.request("screenshot")
    imgui.same_line()
    _recording_button(state, " video", "toggle_video", "video", capture.video_recording, capture.video_frames)
    if capture.message:
        imgui.text_colored(imgui.ImVec4(*OK_COLOUR), messages.one_line(capture.message, 60))
        _tooltip(capture.message)
    _error(capture.error)


def time_section(state: ViewerState) -> None:
    transport = state.transport
    label = keys.keys_label(keys.control("toggle_pause"))
    if imgui.button(("Resume" if transport.paused else "Pause") + f" ({label})"):
        state.request("action", "toggle_pause")
    for action, text in (("rewind_second", "-1 s"), ("step_back", "< tick"), ("step_forward", "tick >")):
        imgui.same_line()
        if imgui.button(text):
            state.request("action", action)
        _tooltip(f"{keys.control(action).description} ({keys.keys_label(keys.control(action))})")
    changed, speed = _labelled_slider(state, "sim_speed", "speed", transport.speed, MIN_SPEED, MAX_SPEED,
                                      "{:.2f}x", 200)
    if changed:
        transport.speed = float(speed)
    _dim_line(f"{'PAUSED   ' if transport.paused else ''}can step back {transport.history_s:.1f} s")


def view_section(state: ViewerState) -> None:
    imgui.push_item_width(150)
    index = VIEW_MODES.index(state.view_mode) if state.view_mode in VIEW_MODES else 0
    changed, index = imgui.combo(f"Body ({keys.keys_label(keys.control('cycle_view_mode'))})", index, list(VIEW_MODES))
    if changed:
        state.view_mode = VIEW_MODES[index]
    index = CAMERA_MODES.index(state.camera_mode) if state.camera_mode in CAMERA_MODES else 0
    changed, index = imgui.combo("Camera (1-4)", index, list(CAMERA_MODES))
    if changed:
        state.request("camera_mode", CAMERA_MODES[index])
    imgui.pop_item_width()
    imgui.same_line()
    if imgui.button(f"Reset ({keys.keys_label(keys.control('camera_reset'))})"):
        state.request("action", "camera_reset")
    for name, label, action in OVERLAY_TOGGLES:
        _, state.overlays[name] = imgui.checkbox(f"{label} ({keys.keys_label(keys.control(action))})",
                                                 state.overlays[name])


def stats_section(state: ViewerState) -> None:
    stats = state.stats
    imgui.text(f"{stats.get('fps', 0.0):6.1f} FPS   frame {stats.get('frame_ms', 0.0):5.2f} ms")
    imgui.text(f"sim {stats.get('sim_ms', 0.0):5.2f}  ui {stats.get('ui_ms', 0.0):5.2f}  "
               f"render {stats.get('render_ms', 0.0):5.2f} ms")
    imgui.text(f"tick {stats.get('tick_ms', 0.0):5.2f} ms   inference {stats.get('infer_ms', 0.0):5.2f} ms")
    imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), f"device: {stats.get('device', 'cpu')}   "
                                                  f"substeps {stats.get('substeps', 0)}")


def phase_dial(phase: float, radius: float = 26.0) -> None:
    """The phase as a dial: ring, ticks at the touchdowns (0 right, 0.5 left) and a needle."""
    draw = imgui.get_window_draw_list()
    origin = imgui.get_cursor_screen_pos()
    centre = imgui.ImVec2(origin.x + radius + 4, origin.y + radius + 4)
    circle, needle = phase_dial_outline(phase)
    ring = imgui.color_convert_float4_to_u32(imgui.ImVec4(0.6, 0.65, 0.75, 0.8))
    accent = imgui.color_convert_float4_to_u32(imgui.ImVec4(0.98, 0.86, 0.3, 1.0))
    draw.add_circle(centre, radius, ring, 48, 2.0)
    for touchdown in (0.0, 0.5):
        _, tick = phase_dial_outline(touchdown)
        draw.add_line(imgui.ImVec2(centre.x + tick[0] * radius * 0.8, centre.y - tick[1] * radius * 0.8),
                      imgui.ImVec2(centre.x + tick[0] * radius, centre.y - tick[1] * radius), ring, 2.0)
    tip = imgui.ImVec2(centre.x + needle[0] * radius * 0.9, centre.y - needle[1] * radius * 0.9)
    draw.add_line(centre, tip, accent, 3.0)
    draw.add_circle_filled(tip, 4.0, accent)
    imgui.dummy(imgui.ImVec2(2 * radius + 8, 2 * radius + 8))


def hud_window(state: ViewerState, display_size) -> None:
    """Top-left: what drives the character, its phase dial, speed and gait, the transport; bottom-left
    the help hint."""
    flags = (imgui.WindowFlags_.no_decoration | imgui.WindowFlags_.always_auto_resize |
             imgui.WindowFlags_.no_focus_on_appearing | imgui.WindowFlags_.no_nav | imgui.WindowFlags_.no_move)
    imgui.set_next_window_pos(imgui.ImVec2(12, 12))
    imgui.set_next_window_bg_alpha(0.72)
    imgui.begin("##hud", None, flags)
    imgui.text(state.source_label)
    if state.overlays.get("phase", False):
        phase_dial(state.hud.get("phase", 0.0))
        imgui.same_line()
    imgui.begin_group()
    imgui.text(f"phase {state.hud.get('phase', 0.0):.2f}")
    imgui.text(f"speed {state.hud.get('speed', 0.0):.2f} m/s")
    imgui.text(f"gait  {state.hud.get('gait', '-')}")
    if state.hud.get("style"):
        imgui.text(f"style {state.hud['style']}")
    imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), f"{state.stats.get('fps', 0.0):.0f} FPS")
    imgui.end_group()
    transport = state.transport
    if transport.paused or abs(transport.speed - 1.0) > 1e-6:
        imgui.text_colored(imgui.ImVec4(0.98, 0.86, 0.3, 1.0),
                           ("PAUSED" if transport.paused else "") + (f"  {transport.speed:.2f}x"
                                                                     if abs(transport.speed - 1.0) > 1e-6 else ""))
    if state.on_screen and (state.record.recording or state.capture.video_recording):
        imgui.text_colored(imgui.ImVec4(*ERROR_COLOUR), "REC" + (" video" if state.capture.video_recording else ""))
    imgui.end()
    if not state.show_help:
        imgui.set_next_window_pos(imgui.ImVec2(12, display_size[1] - 12), 0, imgui.ImVec2(0, 1))
        imgui.set_next_window_bg_alpha(0.6)
        imgui.begin("##controls", None, flags)
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR),
                           f"{keys.keys_label(keys.control('toggle_help'))}  all controls")
        imgui.end()


def help_window(state: ViewerState, display_size) -> None:
    """The F1 overlay: every key, mouse and gamepad control, in sections, from `app.input.keys.CONTROLS`."""
    if not state.show_help:
        return
    width, height = min(1000, display_size[0] - 40), display_size[1] - 40
    imgui.set_next_window_pos(imgui.ImVec2(display_size[0] / 2, display_size[1] / 2), imgui.Cond_.always,
                              imgui.ImVec2(0.5, 0.5))
    imgui.set_next_window_size(imgui.ImVec2(width, height), imgui.Cond_.always)
    imgui.set_next_window_bg_alpha(0.93)
    close = keys.keys_label(keys.control("toggle_help"))
    _, still_open = imgui.begin(f"Controls ({close} or Escape to close)###help", True,
                                imgui.WindowFlags_.no_collapse | imgui.WindowFlags_.no_move |
                                imgui.WindowFlags_.no_resize)
    sections = keys.help_sections()
    half = (sum(len(rows) + 2 for _, rows in sections) + 1) // 2
    if imgui.begin_table("##help_columns", 2, imgui.TableFlags_.sizing_stretch_same):
        imgui.table_next_row()
        imgui.table_set_column_index(0)
        lines = 0
        for section, rows in sections:
            if lines >= half:
                imgui.table_set_column_index(1)
                lines = -10 ** 6  # the rest go in the second column
            help_section(section, rows)
            lines += len(rows) + 2
        imgui.end_table()
    imgui.text_colored(imgui.ImVec4(*HELP_KEY_COLOUR), "keys")
    imgui.same_line()
    imgui.text_colored(imgui.ImVec4(*HELP_MOUSE_COLOUR), "mouse")
    imgui.same_line()
    imgui.text_colored(imgui.ImVec4(*HELP_PAD_COLOUR), "gamepad")
    _dim_line(f"Relative paths typed in the panel start in the work folder: {state.work_dir}")
    imgui.end()
    if not still_open:
        state.show_help = False


def help_section(section: str, rows) -> None:
    imgui.separator_text(section)
    flags = imgui.TableFlags_.row_bg | imgui.TableFlags_.sizing_fixed_fit
    if not imgui.begin_table(f"##help_{section}", 2, flags):
        return
    imgui.table_setup_column("input", imgui.TableColumnFlags_.width_fixed, 170)
    imgui.table_setup_column("action", imgui.TableColumnFlags_.width_stretch)
    for keys_text, mouse_text, pad_text, description in rows:
        imgui.table_next_row()
        imgui.table_set_column_index(0)
        first = True
        for text, colour in ((keys_text, HELP_KEY_COLOUR), (mouse_text, HELP_MOUSE_COLOUR),
                             (pad_text, HELP_PAD_COLOUR)):
            if text:
                if not first:
                    imgui.same_line()
                imgui.text_colored(imgui.ImVec4(*colour), text)
                first = False
        imgui.table_set_column_index(1)
        imgui.push_text_wrap_pos(0.0)
        imgui.text_unformatted(description)
        imgui.pop_text_wrap_pos()
    imgui.end_table()


def quit_dialog(state: ViewerState, display_size) -> None:
    """Asks before quitting while a training run is going (its progress since the last epoch is lost)."""
    if not state.confirm_quit:
        return
    imgui.set_next_window_pos(imgui.ImVec2(display_size[0] / 2, display_size[1] / 2), imgui.Cond_.always,
                              imgui.ImVec2(0.5, 0.5))
    imgui.set_next_window_focus()
    imgui.begin("Quit?###quit", None, imgui.WindowFlags_.always_auto_resize | imgui.WindowFlags_.no_collapse |
                imgui.WindowFlags_.no_move)
    imgui.text("A training run is in progress.")
    imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), "Quitting stops it; the last finished epoch is saved and can be resumed.")
    if imgui.button("Stop training and quit"):
        state.request("quit_now")
    imgui.same_line()
    if imgui.button("Keep working"):
        state.confirm_quit = False
    imgui.end()


def gui(state: ViewerState, display_size=(1280, 720)) -> None:
    """Build this frame's UI from `state` (widgets write straight back into it)."""
    hud_window(state, display_size)
    if state.show_panel:
        panel(state, display_size)
    chosen = browser_window(state.browser, state.recent, paths.work_dir(), display_size, state.field_rects)
    if chosen is not None:
        apply_choice(state, state.browser.target, chosen)
    help_window(state, display_size)
    quit_dialog(state, display_size)


def panel(state: ViewerState, display_size) -> None:
    imgui.set_next_window_pos(imgui.ImVec2(display_size[0] - PANEL_WIDTH - 12, 12), imgui.Cond_.always)
    imgui.set_next_window_size(imgui.ImVec2(PANEL_WIDTH, display_size[1] - 24), imgui.Cond_.always)
    imgui.begin("PFNN viewer", None, imgui.WindowFlags_.no_move | imgui.WindowFlags_.no_resize |
                imgui.WindowFlags_.no_collapse)
    sections = (("Model", model_section), ("Style", style_section), ("Time", time_section), ("View", view_section), ("Tune", tune_section),
                ("Train", train_section), ("Playback", playback_section), ("Record", record_section),
                ("Editor", editor_section), ("Capture", capture_section), ("Stats", stats_section))
    for title, section in sections:
        was_open = title in state.open_sections
        imgui.set_next_item_open(was_open, imgui.Cond_.always)  # `open_sections` is the one truth
        is_open = imgui.collapsing_header(title)
        if is_open != was_open:
            others = tuple(t for t in state.open_sections if t != title)
            state.open_sections = others + (title,) if is_open else others
        if is_open:
            imgui.push_id(title)
            section(state)
            imgui.pop_id()
    for message in state.messages[-3:]:
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), messages.one_line(message, 60))
    imgui.end()
