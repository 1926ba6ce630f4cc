"""Issue 26, fault 12, through the real headless window: the style list scrolls to the style running
(chosen with N beyond the rows in view), and the loss plot's y axis has numbers even when the losses
cross no power of ten."""

import numpy as np
import pytest
from conftest import make_random_checkpoint
from pyglet.window import key

from app.ui.sections import train as train_section
from app.ui.sections.style import SHORT_VALUE_LABELS, VALUE_LABELS, VISIBLE_ROWS, _value_columns
from app.ui.sections.train import loss_ticks
from pfnn_core.models.checkpoint import save_checkpoint
from pfnn_core.models.pfnn.model import PFNN, ModelConfig
from pfnn_core.models.registry import load_checkpoint

WIDTH, HEIGHT = 1000, 700
NAMES = [f"style{index:02d}" for index in range(14)]  # more styles than the list shows at once
STATS = {name: {"minutes": 30.0 - index, "walk": 1.0, "run": 2.5} for index, name in enumerate(NAMES)}


@pytest.fixture(scope="module")
def viewer(walk_motion, tmp_path_factory):
    from app.viewer import Viewer

    folder = tmp_path_factory.mktemp("panels")
    base = load_checkpoint(make_random_checkpoint(walk_motion, folder / "plain.safetensors"))
    model = PFNN(ModelConfig(**{**base.config.to_dict(), "num_styles": len(NAMES)}))
    styled = save_checkpoint(folder / "styled.safetensors", model, base.layout, base.norm,
                             {**base.meta, "styles": {"names": NAMES, "stats": STATS}})
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PFNN_VIEWER_HOME", str(tmp_path_factory.mktemp("work")))
        patch.setenv("PFNN_VIEWER_CONFIG", str(tmp_path_factory.mktemp("config")))
        app = Viewer(WIDTH, HEIGHT, model_path=styled, visible=False, vsync=False)
        app.state.view_mode = "skeleton"  # the cheapest body: these tests look at the panel
        app.state.overlays.update(trajectory=False, contacts=False, phase=False, joint_axes=False)
        yield app
        app.close()


def _inside(rect, outer):
    """The row's middle inside the list's rectangle (in view, not scrolled away)."""
    return outer[1] <= (rect[1] + rect[3]) / 2 <= outer[3]


def test_the_style_list_scrolls_to_the_style_n_chose(viewer):
    state = viewer.state
    state.show_panel, state.open_sections = True, ("Style",)
    viewer.window.dispatch_event("on_mouse_motion", 250, 200, 0, 0)  # over the 3D view: keys steer
    viewer.run_frames(3)
    first = state.style.rows[0].name
    assert _inside(state.field_rects[f"style_row_{first}"], state.field_rects["style_table"])
    for _ in range(len(NAMES) - 1):  # most data first: N walks down the list to its last row
        viewer.window.dispatch_event("on_key_press", key.N, 0)
        viewer.window.dispatch_event("on_key_release", key.N, 0)
        viewer.window.dispatch_events()
        viewer.run_frames(2)
    last = state.style.rows[-1].name
    assert state.hud.get("style") == last and len(NAMES) > VISIBLE_ROWS
    viewer.run_frames(2)
    rects = state.field_rects
    assert _inside(rects[f"style_row_{last}"], rects["style_table"])
    assert not _inside(rects[f"style_row_{first}"], rects["style_table"])  # scrolled, not all in view


def test_a_narrow_panel_shortens_the_style_headers_and_cuts_no_number(viewer):
    state = viewer.state
    state.show_panel, state.open_sections = True, ("Style",)
    for width in (430, 260):  # the panel's widest default and its narrowest
        state.panel_width = width
        viewer.run_frames(3)
        rects = state.field_rects
        table, values = rects["style_table"], [rects[f"style_value_{column}"] for column in (1, 2, 3)]
        # each number whole: left to right, no overlap, the last inside the table (its scroll bar aside)
        assert all(left[2] <= right[0] for left, right in zip(values, values[1:]))
        assert values[-1][2] <= table[2] and values[0][0] > rects[f"style_row_{state.style.rows[0].name}"][0] + 40
    state.panel_width = 0
    viewer.run_frames(1)


@pytest.mark.parametrize("width", [260, 430])  # the panel's narrowest and its widest default
def test_no_widget_of_any_section_runs_past_the_panels_edge(viewer, width):
    from app.ui.panel import SECTIONS, SHOWN_WHEN

    state = viewer.state
    state.show_panel, state.panel_width = True, width
    past = {}
    for title, _ in SECTIONS:
        if not SHOWN_WHEN.get(title, lambda _: True)(state):
            continue
        state.open_sections = (title,)
        state.field_rects.clear()
        viewer.run_frames(2)
        right = state.field_rects["panel"][2] - 12 + 1  # the panel's inner edge (its padding), a pixel's rounding
        past.update({f"{title}: {name}": rect[2] - right for name, rect in state.field_rects.items()
                     if name not in ("panel", "keys_hint") and rect[2] > right})
    state.panel_width, state.open_sections = 0, ()
    assert past == {}  # labels, buttons and fields: each whole (on its own line where the line is too short)


def test_the_style_headers_shorten_only_when_the_names_would_lose_their_room():
    cells = [("30.0", "1.00", "2.50")]
    def width(text):
        return 7.0 * len(text)  # a fixed-width font of 7 px
    labels, widths = _value_columns(400, cells, width)
    assert labels == VALUE_LABELS and widths == [56.0, 56.0, 49.0]  # "data min", "walk m/s", "run m/s"
    labels, widths = _value_columns(230, cells, width)  # 230 - 161 - 64 < 80 px for the names
    assert labels == SHORT_VALUE_LABELS and widths == [28.0, 28.0, 28.0]  # the values, wider than "min"/"run"


def _text_pixels(viewer) -> int:
    """Light (text) pixels in the strip left of the loss plot's frame, where the y axis numbers go."""
    x0, y0, x1, y1 = (int(v) for v in viewer.state.field_rects["loss_plot"])
    strip = viewer.read_pixels()[y0 + 10:y1 - 30, x0 + 18:x0 + 60].astype(int)
    return int(np.sum(strip.min(axis=-1) > 170))


def test_the_loss_plot_has_numbers_on_its_y_axis(viewer, monkeypatch):
    state = viewer.state
    train = state.train
    train.epochs_x, train.train_loss, train.val_loss, train.plot_epochs = [1.0, 2.0, 3.0], [0.4, 0.25, 0.13], \
        [0.45, 0.3, 0.16], 10
    state.show_panel, state.open_sections = True, ("Train",)
    viewer.run_frames(3)
    with_numbers = _text_pixels(viewer)
    monkeypatch.setattr(train_section, "loss_ticks", lambda low, high: [])
    viewer.run_frames(3)
    assert with_numbers > _text_pixels(viewer) + 30
    train.epochs_x, train.train_loss, train.val_loss = [], [], []


def test_loss_ticks_are_round_numbers_inside_the_range():
    assert loss_ticks(0.1, 0.5) == [0.1, 0.2, 0.5]  # no power of ten inside but the first
    assert loss_ticks(0.12, 0.45) == [0.12, 0.45]  # one round number inside: its two ends instead
    assert loss_ticks(1e-4, 10.0) == [1e-4, 1e-3, 1e-2, 0.1, 1.0, 10.0]  # thinned to at most six
    ticks = loss_ticks(0.21, 0.23)  # too narrow for two round numbers: its two ends
    assert len(ticks) == 2 and 0.21 <= ticks[0] < ticks[1] <= 0.23
