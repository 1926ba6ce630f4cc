"""The ImGui panel. All UI state lives in one `ViewerState`; `gui(state)` only reads and writes it.

Actions that need the application (load a checkpoint, open a BVH, start training, record) are queued
as `state.requests` (name, payload) tuples that the app handles after the frame's UI pass, so a
failure there is written back into the state (e.g. `state.model.error`) and shown on the next frame.
"""

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from imgui_bundle import imgui, implot

from app.overlays import phase_dial_outline
from pfnn_core.settings import RuntimeSettings, tunable_fields

ERROR_COLOUR = (1.0, 0.42, 0.38, 1.0)
OK_COLOUR = (0.45, 0.9, 0.55, 1.0)
DIM_COLOUR = (0.65, 0.68, 0.74, 1.0)
PANEL_WIDTH = 430
OVERLAY_KEYS = (("trajectory", "Trajectory", "T"), ("contacts", "Foot contacts", "C"),
                ("phase", "Phase dial", "P"), ("joint_axes", "Joint axes", "J"))
PHASE_FUNCTIONS = ("cubic", "rbf")
CONTROLS_HINT = ("WASD / arrows  move (camera-relative)", "Shift  run     Q / E  strafe",
                 "drag / scroll  orbit / zoom", "T C P J  overlays   Tab  panel",
                 "Space  reset   R  record   F1  help")


@dataclass
class ModelPanel:
    path: str = ""  # checkpoint now running ("" = none)
    summary: list = field(default_factory=list)  # lines describing data / settings of the model
    load_path: str = ""
    error: str = ""


@dataclass
class TrainPanel:
    bvh_dir: str = "assets/bvh"
    out: str = "out/viewer_model.safetensors"
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
    path: str = "out/recording.bvh"
    recording: bool = False
    frames: int = 0
    message: str = ""
    error: str = ""


@dataclass
class ViewerState:
    settings: RuntimeSettings = field(default_factory=RuntimeSettings)
    overlays: dict = field(default_factory=lambda: {"trajectory": True, "contacts": True, "phase": True,
                                                    "joint_axes": False})
    show_panel: bool = True
    show_help: bool = True
    view_mode: str = "mesh"  # how characters are drawn: "mesh", "capsules" or "skeleton" (app.renderer.VIEW_MODES)
    open_sections: tuple = ("Model", "Overlays", "Stats")  # panel sections open at start
    source_label: str = ""
    model: ModelPanel = field(default_factory=ModelPanel)
    train: TrainPanel = field(default_factory=TrainPanel)
    playback: PlaybackPanel = field(default_factory=PlaybackPanel)
    record: RecordPanel = field(default_factory=RecordPanel)
    stats: dict = field(default_factory=dict)  # fps, frame_ms, sim_ms, ui_ms, render_ms, tick_ms, infer_ms, device
    hud: dict = field(default_factory=dict)  # phase, speed, gait of the followed character
    messages: list = field(default_factory=list)  # recent notices (gamepads, saves)
    requests: list = field(default_factory=list)  # (name, payload) for the app

    def request(self, name: str, payload=None) -> None:
        self.requests.append((name, payload))

    def take_requests(self) -> list:
        taken, self.requests = self.requests, []
        return taken


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


def _path_row(widget_id: str, path: str, button: str) -> tuple[str, bool]:
    """A full-width path field with a button after it: (the edited path, whether the button was pressed)."""
    imgui.set_next_item_width(-80)
    _, path = imgui.input_text(f"##{widget_id}", path)
    imgui.same_line()
    return path, imgui.button(f"{button}##{widget_id}")


def _error(text: str) -> None:
    if text:
        imgui.push_text_wrap_pos(0.0)
        imgui.text_colored(imgui.ImVec4(*ERROR_COLOUR), text)
        imgui.pop_text_wrap_pos()


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
        changed, value = imgui.slider_int(label, value, int(meta.get("min", 0)), int(meta.get("max", 100)))
    else:
        low, high = float(meta.get("min", 0.0)), float(meta.get("max", 1.0))
        changed, value = imgui.slider_float(label, float(value), low, high, "%.3g")
    _tooltip(meta.get("help", ""))
    if changed:
        setattr(settings, field_.name, value)
    return changed


def tune_section(state: ViewerState) -> None:
    imgui.push_item_width(140)
    for field_ in tunable_fields(state.settings):
        setting_widget(state.settings, field_)
    imgui.pop_item_width()
    if imgui.button("Reset to defaults"):
        state.settings.reset()


def model_section(state: ViewerState) -> None:
    model = state.model
    imgui.text("Running:")
    imgui.same_line()
    imgui.text_colored(imgui.ImVec4(*OK_COLOUR) if model.path else imgui.ImVec4(*DIM_COLOUR),
                       display_path(model.path) or "none (stand-in character)")
    for line in model.summary:
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), line)
    model.load_path, load = _path_row("model_path", model.load_path, "Load")
    if load:
        state.request("load_model", model.load_path)
    _error(model.error)


def train_section(state: ViewerState) -> None:
    train = state.train
    imgui.push_item_width(170)
    imgui.begin_disabled(train.running)
    _, train.bvh_dir = imgui.input_text("BVH folder", train.bvh_dir)
    _, train.out = imgui.input_text("Save to", train.out)
    index = PHASE_FUNCTIONS.index(train.phase_function) if train.phase_function in PHASE_FUNCTIONS else 0
    _, index = imgui.combo("Phase function", index, list(PHASE_FUNCTIONS))
    train.phase_function = PHASE_FUNCTIONS[index]
    if train.phase_function == "rbf":
        _, train.kernels = imgui.slider_int("Kernels", train.kernels, 2, 16)
        _, train.beta = imgui.slider_float("Beta", train.beta, 0.5, 64.0, "%.1f")
    _, train.hidden = imgui.slider_int("Hidden size", train.hidden, 32, 1024)
    _, train.epochs = imgui.slider_int("Epochs", train.epochs, 1, 200)
    _, train.learning_rate = imgui.input_float("Learning rate", train.learning_rate, 0.0, 0.0, "%.1e")
    imgui.end_disabled()
    _, train.auto_swap = imgui.checkbox("Use the model when training finishes", train.auto_swap)
    imgui.pop_item_width()
    if train.running:
        if imgui.button("Stop"):
            state.request("stop_training")
    else:
        if imgui.button("Start"):
            state.request("start_training", {"resume": False})
        imgui.same_line()
        if imgui.button("Resume"):
            state.request("start_training", {"resume": True})
    if train.result_path:
        imgui.same_line()
        if imgui.button("Use this model"):
            state.request("load_model", train.result_path)
    if train.running or train.progress > 0:
        eta = "" if train.eta_s is None else f"  ETA {int(train.eta_s) // 60}:{int(train.eta_s) % 60:02d}"
        imgui.progress_bar(train.progress, imgui.ImVec2(-1, 0), f"{100 * train.progress:.0f}%{eta}")
    if train.status:
        imgui.push_text_wrap_pos(0.0)
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), train.status)
        imgui.pop_text_wrap_pos()
    _error(train.error)
    if train.train_loss and implot.begin_plot("Loss", imgui.ImVec2(-1, 170)):
        implot.setup_axes("epoch", "loss", 0, implot.AxisFlags_.auto_fit)
        implot.setup_axis_scale(implot.ImAxis_.y1, implot.Scale_.log10)
        implot.setup_axis_limits(implot.ImAxis_.x1, 0, max(train.epochs, 1), imgui.Cond_.always)
        implot.setup_legend(implot.Location_.north_east)
        xs = np.asarray(train.epochs_x, np.float64)
        implot.plot_line("train", xs, np.asarray(train.train_loss, np.float64))
        if len(train.val_loss) == len(xs):
            implot.plot_line("validation", xs, np.asarray(train.val_loss, np.float64))
        implot.end_plot()


def playback_section(state: ViewerState) -> None:
    playback = state.playback
    playback.path, open_clicked = _path_row("bvh_path", playback.path, "Open")
    if open_clicked:
        state.request("open_bvh", playback.path)
    _error(playback.error)
    if playback.active:
        imgui.text(playback.clip_name)
        _, playback.playing = imgui.checkbox("Play", playback.playing)
        imgui.same_line()
        imgui.set_next_item_width(120)
        _, playback.speed = imgui.slider_float("Speed", playback.speed, 0.1, 2.0, "%.2fx")
        imgui.set_next_item_width(-1)
        changed, playback.time = imgui.slider_float("##time", playback.time, 0.0, max(playback.duration, 1e-3),
                                                    "%.2f s")
        if changed:
            state.request("seek", playback.time)
        if imgui.button("Back to the live character"):
            state.request("live")


def record_section(state: ViewerState) -> None:
    record = state.record
    imgui.set_next_item_width(-90)
    _, record.path = imgui.input_text("##record_path", record.path)
    imgui.same_line()
    if record.recording:
        if imgui.button("Stop (R)"):
            state.request("record_stop")
        imgui.text_colored(imgui.ImVec4(*ERROR_COLOUR), f"REC  {record.frames} frames")
    elif imgui.button("Record (R)"):
        state.request("record_start")
    if record.message:
        imgui.text_colored(imgui.ImVec4(*OK_COLOUR), record.message)
    _error(record.error)


def stats_section(state: ViewerState) -> None:
    stats = state.stats
    imgui.text(f"{stats.get('fps', 0.0):6.1f} FPS   frame {stats.get('frame_ms', 0.0):5.2f} ms")
    imgui.text(f"sim {stats.get('sim_ms', 0.0):5.2f}  ui {stats.get('ui_ms', 0.0):5.2f}  "
               f"render {stats.get('render_ms', 0.0):5.2f} ms")
    imgui.text(f"tick {stats.get('tick_ms', 0.0):5.2f} ms   inference {stats.get('infer_ms', 0.0):5.2f} ms")
    imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), f"device: {stats.get('device', 'cpu')}   "
                                                  f"substeps {stats.get('substeps', 0)}")


def overlay_section(state: ViewerState) -> None:
    for name, label, hotkey in OVERLAY_KEYS:
        _, state.overlays[name] = imgui.checkbox(f"{label} ({hotkey})", state.overlays[name])


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
    """Top-left: what drives the character, its phase dial, speed and gait; the controls hint."""
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
    imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), f"{state.stats.get('fps', 0.0):.0f} FPS")
    imgui.end_group()
    if state.record.recording:
        imgui.text_colored(imgui.ImVec4(*ERROR_COLOUR), "REC")
    imgui.end()
    if state.show_help:
        imgui.set_next_window_pos(imgui.ImVec2(12, display_size[1] - 12), 0, imgui.ImVec2(0, 1))
        imgui.set_next_window_bg_alpha(0.6)
        imgui.begin("##controls", None, flags)
        for line in CONTROLS_HINT:
            imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), line)
        imgui.end()


def gui(state: ViewerState, display_size=(1280, 720)) -> None:
    """Build this frame's UI from `state` (widgets write straight back into it)."""
    hud_window(state, display_size)
    if not state.show_panel:
        return
    imgui.set_next_window_pos(imgui.ImVec2(display_size[0] - PANEL_WIDTH - 12, 12), imgui.Cond_.always)
    imgui.set_next_window_size(imgui.ImVec2(PANEL_WIDTH, display_size[1] - 24), imgui.Cond_.always)
    imgui.begin("PFNN viewer", None, imgui.WindowFlags_.no_move | imgui.WindowFlags_.no_resize |
                imgui.WindowFlags_.no_collapse)
    sections = (("Model", model_section), ("Overlays", overlay_section), ("Tune", tune_section),
                ("Train", train_section), ("Playback", playback_section), ("Record", record_section),
                ("Stats", stats_section))
    for title, section in sections:
        flags = imgui.TreeNodeFlags_.default_open if title in state.open_sections else 0
        if imgui.collapsing_header(title, flags):
            imgui.push_id(title)
            section(state)
            imgui.pop_id()
    for message in state.messages[-3:]:
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), message)
    imgui.end()
