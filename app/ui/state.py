"""All UI state in one `ViewerState`: the settings the runtime reads, what is shown, one panel object per
section, and the requests the panel queues for the viewer.

Actions that need the application (load a checkpoint, open a BVH, start training, record) are queued as
`state.requests` (name, payload) tuples; the viewer runs each through its action table (`app.actions`)
after the frame's UI pass, so a failure there is written back into the state (e.g. `state.model.error`)
and shown on the next frame.
"""

import dataclasses
import time
from dataclasses import dataclass, field

from app import paths
from app.transport import TransportPanel
from app.ui.file_browser import BrowserState, RecentFolders
from app.ui.panel_layout import PanelLayout
from app.ui.readouts import MatchingPanel, MVAEPanel, PhysicsPanel
from app.ui.recovery import RecoveryPanel
from app.ui.sections.editor import EditorPanel
from app.ui.sections.style import StylePanel
from pfnn_core.runtime.settings import RuntimeSettings


@dataclass
class ModelPanel:
    path: str = ""  # checkpoint now running ("" = none)
    kind: str = ""  # its model kind ('pfnn', 'matching', 'mvae'; "" = none): which kind's section shows
    summary: list = field(default_factory=list)  # lines describing data / settings of the model
    load_path: str = ""
    error: str = ""


@dataclass
class TrainPanel:
    kind: str = "pfnn"  # the model kind the form trains: one of `app.jobs.training.TRAINED_KINDS`
    bvh_dir: str = str(paths.BUNDLED_BVH)
    out: str = "models/viewer_model.safetensors"  # relative paths: in the work folder
    resume_path: str = ""  # resumable checkpoint ("" = the one saved next to `out`)
    phase_function: str = "rbf"
    kernels: int = 8
    beta: float = 8.0
    hidden: int = 256
    epochs: int = 20  # a motion VAE's: its VAE stage's
    policy_epochs: int = 10  # a motion VAE's control policy stage
    learning_rate: float = 1e-3
    auto_swap: bool = False  # a toy run must not replace a good model unasked
    notice: str = ""  # what the run does differently from the form (a new 'Save to' name)
    running: bool = False
    status: str = ""
    error: str = ""
    progress: float = 0.0
    eta_s: float | None = None
    epochs_x: list = field(default_factory=list)
    train_loss: list = field(default_factory=list)
    val_loss: list = field(default_factory=list)
    term_loss: dict = field(default_factory=dict)  # a motion VAE's held-out loss per stage and term: {stage: {term: [per epoch]}}
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
    path: str = "recordings/"  # a folder: each take is named by date and time; a taken file name gets '-2'
    last_path: str = ""  # the file the last take was saved to
    recording: bool = False
    frames: int = 0
    journal_problem: str = ""  # why the take is no longer journaled to disk (it goes on in memory)
    message: str = ""
    error: str = ""


# the Capture section's video sizes: auto is half for a window drawn by a software rasteriser, else full
VIDEO_SIZES = {"auto": "Auto", "full": "Window size", "half": "Half size"}


@dataclass
class CapturePanel:
    folder: str = "captures"  # screenshots and videos named by date and time go here
    video_recording: bool = False
    video_frames: int = 0
    video_dropped: int = 0  # rendered frames left out of the video (the encoder was behind)
    video_size: str = "auto"  # one of VIDEO_SIZES: the window's size, half of it, or auto (see capture_control)
    auto_is_half: bool = False  # what auto means in this window: half size (drawn by a software rasteriser)
    message: str = ""
    error: str = ""


@dataclass
class ViewerState:
    settings: RuntimeSettings = field(default_factory=RuntimeSettings)
    overlays: dict = field(default_factory=lambda: {"trajectory": True, "contacts": True, "phase": True,
                                                    "joint_axes": False, "forces": True, "ghost": True})
    show_panel: bool = True
    show_help: bool = False  # the F1 overlay listing every control
    on_screen: bool = True  # a person watches the window (headless: no recording sign in the saved frames)
    view_mode: str = "mesh"  # how bodies are drawn: one of `app.render.renderer.VIEW_MODES`
    camera_mode: str = "follow"  # mirrors the camera (the panel asks for changes with a request)
    strafe_default: bool = False  # shooter style: the character faces where the camera looks (View section)
    open_sections: tuple = ("Model", "Style", "View", "Stats")  # panel sections open now (clicks on headers edit it)
    panel_width: float = 0.0  # pixels, as dragged at its left edge (0 = fitted to the window)
    panel_collapsed: bool = False  # the panel folded to its title bar
    layout: PanelLayout = field(default_factory=lambda: PanelLayout.load(paths.config_dir() / "panel.json"))
    source_label: str = ""
    model: ModelPanel = field(default_factory=ModelPanel)
    style: StylePanel = field(default_factory=StylePanel)  # the model's styles, the one or the blend asked for
    # what "Reset to defaults" restores: the loaded model's values (`RuntimeSettings.for_model`)
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
    matching: MatchingPanel = field(default_factory=MatchingPanel)  # what a motion-matching model plays
    mvae: MVAEPanel = field(default_factory=MVAEPanel)  # a motion VAE's latent path and active dimensions
    physics: PhysicsPanel = field(default_factory=PhysicsPanel)  # off / on / both, its settings and figures
    recovery: RecoveryPanel = field(default_factory=RecoveryPanel)  # unsaved work an earlier run left
    stats: dict = field(default_factory=dict)  # fps, frame_ms, sim_ms, ui_ms, render_ms, tick_ms, infer_ms, device
    hud: dict = field(default_factory=dict)  # phase, speed, gait, style of the followed character
    messages: list = field(default_factory=list)  # recent notices (gamepads, saves)
    toast_text: str = ""  # a short notice on the HUD (a capture saved, "press R again"), until toast_until
    toast_until: float = 0.0  # time.monotonic() when the toast goes
    stop_armed_until: float = 0.0  # R pressed once during a take: a second R before this stops it
    requests: list = field(default_factory=list)  # (name, payload) for the app

    def __post_init__(self):
        self.layout.restore(self)  # the panel as the last run left it

    def request(self, name: str, payload=None) -> None:
        self.requests.append((name, payload))

    def toast(self, text: str, seconds: float = 3.0) -> None:
        """Show `text` on the HUD for a few seconds, whichever panel sections are open."""
        self.toast_text, self.toast_until = text, time.monotonic() + seconds

    def take_requests(self) -> list:
        taken, self.requests = self.requests, []
        return taken

    def resolve(self, text: str):
        """A path typed in the panel as an absolute path (relative ones start in the work folder)."""
        return paths.resolve(text, self.work_dir)

    def resolve_existing(self, text: str):
        """A path typed in the panel to open: as `resolve`, the shipped files found by their repository names."""
        return paths.resolve_existing(text, self.work_dir)


def reset_settings(settings: RuntimeSettings, defaults: RuntimeSettings) -> None:
    """Every field of `settings` back to `defaults`, in place (the runtime holds this object)."""
    for field_ in dataclasses.fields(settings):
        setattr(settings, field_.name, getattr(defaults, field_.name))
