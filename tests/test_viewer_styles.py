"""Style control in the viewer: the panel's Style section (the checkpoint's styles, a selector, a blend
between two), the key that cycles styles, the HUD line, the full-stick speeds that follow the style,
scripts' styles, and a model without styles. Through a real headless pyglet window with injected mouse
and key events and real imgui frames, on a small random-weight style checkpoint (a crowd of two)."""

import numpy as np
import pytest
from conftest import click_widget, make_random_checkpoint
from pyglet.window import key

from app.input import keys
from app.ui.sections.style import StyleRow, blend_weights, next_style, style_rows, weights_label
from pfnn_core.drive.cli import parse_script
from pfnn_core.models.checkpoint import save_checkpoint
from pfnn_core.models.pfnn.model import PFNN, ModelConfig
from pfnn_core.models.registry import load_checkpoint

WIDTH, HEIGHT = 1000, 700
NAMES = ["elderly", "normal", "sad"]  # the style input's order (as training writes it: sorted)
STATS = {"elderly": {"minutes": 13.1, "walk": 0.70, "run": 1.44, "side_step": 0.80},
         "normal": {"minutes": 13.7, "walk": 1.09, "run": 2.77},
         "sad": {"minutes": 1.1, "walk": 0.50, "run": 2.28}}  # under 2 minutes: little data
BY_DATA = ["normal", "elderly", "sad"]
LITTLE_DATA_RGB = np.array([250, 168, 76])  # the list's colour for styles with little data


def one_hot(name):
    return np.eye(len(NAMES))[NAMES.index(name)]


# ---- the rules, without a window ----------------------------------------------------------------

def test_styles_are_listed_most_data_first_and_little_data_is_marked():
    rows = style_rows(NAMES + ["unmeasured"], {**STATS, "unmeasured": {"walk": None}})
    assert [row.name for row in rows] == BY_DATA + ["unmeasured"]
    assert [row.little_data for row in rows] == [False, False, True, False]  # no figure: not claimed little
    assert rows[1] == StyleRow("elderly", 13.1, 0.70, 1.44) and rows[3].walk is None


def test_blend_weights_labels_and_the_cycle():
    np.testing.assert_allclose(blend_weights(NAMES, "normal", "sad", 0.25), [0.0, 0.75, 0.25])
    np.testing.assert_allclose(blend_weights(NAMES, "sad", "sad", 0.4), [0.0, 0.0, 1.0])
    assert weights_label(NAMES, [0.0, 0.75, 0.25]) == "normal 75% + sad 25%"
    assert weights_label(NAMES, [0.0, 1.0, 0.0]) == "normal"
    assert weights_label(["a", "b", "c", "d"], [0.4, 0.3, 0.2, 0.1]) == "a 40% + b 30% + c 20% + ..."
    assert weights_label([], np.zeros(0)) == ""
    rows = style_rows(NAMES, STATS)
    assert [next_style(rows, name) for name in BY_DATA] == ["elderly", "sad", "normal"]
    assert next_style(rows, "normal", -1) == "sad" and next_style(rows, "gone") == "normal"


# ---- the viewer -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def checkpoints(walk_motion, tmp_path_factory):
    """A random-weight model with three styles (and their statistics) and one without styles."""
    folder = tmp_path_factory.mktemp("styles")
    plain = make_random_checkpoint(walk_motion, folder / "plain.safetensors")
    base = load_checkpoint(plain)
    model = PFNN(ModelConfig(**{**base.config.to_dict(), "num_styles": len(NAMES)}))
    styled = save_checkpoint(folder / "styled.safetensors", model, base.layout, base.norm,
                             {**base.meta, "styles": {"names": NAMES, "stats": STATS}})
    return {"styled": str(styled), "plain": str(plain)}


@pytest.fixture(scope="module")
def viewer(checkpoints, tmp_path_factory):
    from app.viewer import Viewer

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PFNN_VIEWER_HOME", str(tmp_path_factory.mktemp("work")))
        patch.setenv("PFNN_VIEWER_CONFIG", str(tmp_path_factory.mktemp("config")))
        app = Viewer(WIDTH, HEIGHT, model_path=checkpoints["styled"], crowd=2, visible=False, vsync=False)
        app.state.view_mode = "skeleton"  # the cheapest body: these tests look at the panel
        yield app
        app.close()


@pytest.fixture
def ui(viewer, checkpoints):
    """The style model running in the normal style, the panel showing only the Style section."""
    state = viewer.state
    if state.model.path != checkpoints["styled"]:
        state.request("load_model", checkpoints["styled"])
    viewer.script = None
    viewer.input.on_deactivate()
    state.show_panel, state.show_help, state.open_sections = True, False, ("Style",)
    state.overlays.update(trajectory=False, contacts=False, phase=False, joint_axes=False)
    state.transport.paused = False
    viewer.run_frames(1)
    viewer.set_style(one_hot("normal"))
    state.style.blending, state.style.blend_a, state.style.blend_b, state.style.blend_t = False, "normal", "elderly", 0.5
    viewer.source.reset()
    viewer._reset_frames()
    # the mouse over the 3D view (left of the panel, below the HUD): keys typed over the panel never steer
    viewer.window.dispatch_event("on_mouse_motion", 250, 200, 0, 0)
    viewer.window.dispatch_events()
    viewer.run_frames(4)
    return viewer


def _character_styles(viewer):
    return viewer.live_source.character.state.style


def _press(viewer, symbol, modifiers=0):
    if modifiers & key.MOD_SHIFT:
        viewer.window.dispatch_event("on_key_press", key.LSHIFT, 0)
    viewer.window.dispatch_event("on_key_press", symbol, modifiers)
    viewer.window.dispatch_event("on_key_release", symbol, modifiers)
    if modifiers & key.MOD_SHIFT:
        viewer.window.dispatch_event("on_key_release", key.LSHIFT, key.MOD_SHIFT)
    viewer.window.dispatch_events()
    viewer.run_frames(1)


def _rect_pixels(viewer, name):
    x0, y0, x1, y1 = (int(round(v)) for v in viewer.state.field_rects[name])
    return viewer.read_pixels()[y0:y1, x0:x1].reshape(-1, 3).astype(int)


def _little_data_pixels(pixels):
    return int((np.abs(pixels - LITTLE_DATA_RGB).max(axis=-1) < 40).sum())


def test_the_section_lists_the_checkpoints_styles_most_data_first_with_little_data_marked(ui):
    panel = ui.state.style
    assert panel.names == tuple(NAMES) and [row.name for row in panel.rows] == BY_DATA
    tops = [ui.state.field_rects[f"style_row_{name}"][1] for name in BY_DATA]
    assert tops == sorted(tops) and len(set(tops)) == 3  # drawn top to bottom in that order
    assert _little_data_pixels(_rect_pixels(ui, "style_row_sad")) > 20  # orange text
    assert _little_data_pixels(_rect_pixels(ui, "style_row_normal")) == 0
    assert "style_select" in ui.state.field_rects and "style_blend" not in ui.state.field_rects
    # the model's default style runs, and the full-stick speeds are that style's
    np.testing.assert_array_equal(_character_styles(ui), [one_hot("normal")] * 2)
    assert (ui.state.settings.walk_speed, ui.state.settings.run_speed) == (pytest.approx(1.09), pytest.approx(2.77))
    assert ui.state.hud["style"] == "normal"


def test_a_click_on_a_style_sets_it_for_every_character_before_the_next_tick(ui):
    settings = ui.state.settings
    click_widget(ui, "style_row_elderly")
    character = ui.live_source.character
    np.testing.assert_array_equal(character.state.style, [one_hot("elderly")] * 2)
    ticks = character.state.ticks
    ui.run_frames(1)
    assert character.state.ticks > ticks  # it ticked, and in the style asked for
    np.testing.assert_array_equal(character.state.style, [one_hot("elderly")] * 2)
    assert (settings.walk_speed, settings.run_speed) == (pytest.approx(0.70), pytest.approx(1.44))
    assert settings.side_step_speed == pytest.approx(0.80)  # every per-style speed, not only walk and run
    assert ui.state.style.selected == "elderly" and ui.state.hud["style"] == "elderly"
    # "Reset to defaults" in Tune gives the style's speeds too
    settings.walk_speed = 2.0
    ui.state.open_sections = ("Tune",)
    ui.run_frames(2)
    click_widget(ui, "reset_settings")
    assert settings.walk_speed == pytest.approx(0.70)


def test_the_blend_slider_gives_weights_one_minus_t_and_t(ui):
    state = ui.state
    click_widget(ui, "style_blending")
    assert state.style.blending
    expected = np.array([0.5, 0.5, 0.0])  # normal -> elderly at the default t = 0.5 (NAMES' order)
    np.testing.assert_allclose(_character_styles(ui), [expected[[1, 0, 2]]] * 2)
    assert "style_blend" in state.field_rects
    click_widget(ui, "style_blend", 0.2)
    t = state.style.blend_t
    assert 0.1 < t < 0.3  # where it was clicked
    weights = np.zeros(3)
    weights[NAMES.index("normal")], weights[NAMES.index("elderly")] = 1 - t, t
    np.testing.assert_allclose(_character_styles(ui), [weights] * 2, atol=1e-12)
    assert state.hud["style"] == f"normal {100 * (1 - t):.0f}% + elderly {100 * t:.0f}%"
    assert state.settings.walk_speed == pytest.approx((1 - t) * 1.09 + t * 0.70)
    state.style.blend_b = "sad"  # what the "to" selector writes
    click_widget(ui, "style_blend", 0.9)
    t = state.style.blend_t
    assert t > 0.8 and _character_styles(ui)[1, NAMES.index("sad")] == pytest.approx(t)
    click_widget(ui, "style_blending")  # blending off: back to the one selected
    np.testing.assert_array_equal(_character_styles(ui), [one_hot("normal")] * 2)


def test_the_style_key_cycles_most_data_first_and_shift_goes_back(ui):
    seen = []
    for _ in range(3):
        _press(ui, key.N)
        seen.append(ui.live_source.character.style_name())
        np.testing.assert_array_equal(_character_styles(ui)[1], one_hot(seen[-1]))  # the whole crowd
    assert seen == ["elderly", "sad", "normal"]
    _press(ui, key.N, key.MOD_SHIFT)
    assert ui.live_source.character.style_name() == "sad" and ui.state.hud["style"] == "sad"
    assert ui.state.settings.walk_speed == pytest.approx(0.50)
    assert keys.action_for_key(key.N, 0) == "next_style" and keys.action_for_button("b") == "next_style"


def test_a_scripts_styles_are_applied_when_their_segment_starts(ui):
    from app.cli import script_style_error

    ui.script = parse_script({"segments": [{"duration": 0.05, "move": [0, 1], "style": "sad"},
                                           {"duration": 5.0, "move": [0, 1], "style": {"elderly": 0.5, "normal": 0.5}}]})
    ui.sim_time = 0.0
    ui.run_frames(1)
    np.testing.assert_array_equal(_character_styles(ui)[0], one_hot("sad"))
    ui.run_frames(4)
    np.testing.assert_allclose(_character_styles(ui)[0], [0.5, 0.5, 0.0])
    assert ui.state.hud["style"] == "elderly 50% + normal 50%"
    _press(ui, key.N)  # the key still works within a segment: after the dominant (first of a tie) elderly
    ui.run_frames(2)
    np.testing.assert_array_equal(_character_styles(ui)[0], one_hot("sad"))
    bad = parse_script({"segments": [{"duration": 1.0, "move": [0, 0], "style": "angry"}]})
    assert "unknown style 'angry'" in script_style_error(bad, ui) and "elderly, normal, sad" in script_style_error(bad, ui)
    assert script_style_error(ui.script, ui) == ""


def test_a_model_without_styles_shows_a_note_and_no_selector_and_the_key_does_nothing(ui, checkpoints):
    state = ui.state
    state.request("load_model", checkpoints["plain"])
    ui.run_frames(1)
    assert state.model.error == "" and state.style.names == () and state.style.running == ()
    state.field_rects.clear()
    ui.run_frames(2)
    assert not any(name.startswith("style_") for name in state.field_rects)
    before = ui.live_source.character.state
    _press(ui, key.N)
    assert ui.live_source.character.state.style.shape == (2, 0) and state.hud["style"] == ""
    assert ui.live_source.character.state is not before  # still ticking
    assert (state.settings.walk_speed, state.settings.run_speed) == (pytest.approx(1.2), pytest.approx(3.4))
    state.request("load_model", checkpoints["styled"])  # and back: the styles and their speeds return
    ui.run_frames(2)
    assert state.style.names == tuple(NAMES) and state.hud["style"] == "normal"
    assert state.settings.walk_speed == pytest.approx(1.09)


def test_a_blend_starts_from_the_style_shown_and_n_leaves_it_from_there(ui):
    from app.ui.sections.style import blend_label, next_style

    state = ui.state
    click_widget(ui, "style_row_elderly")
    assert state.style.selected == "elderly"
    click_widget(ui, "style_blending")
    after = next_style(state.style.rows, "elderly")
    assert state.style.blending and (state.style.blend_a, state.style.blend_b) == ("elderly", after)
    assert blend_label(state.style) == f"elderly 50% + {after} 50%"  # the HUD's order is the panel's
    ui.window.dispatch_event("on_mouse_motion", 250, 200, 0, 0)  # off the panel: the keys steer
    ui.window.dispatch_events()
    ui.run_frames(6)
    _press(ui, key.N)
    assert not state.style.blending and state.style.selected == after


def test_blend_two_stays_whole_in_the_narrowest_panel(ui):
    from app.ui.panel import MIN_PANEL_WIDTH

    state = ui.state
    try:
        for width in (0.0, MIN_PANEL_WIDTH):  # fitted to the window, and dragged as narrow as it goes
            state.panel_width = width
            ui.run_frames(3)
            box, panel = state.field_rects["style_blending"], state.field_rects["panel"]
            assert box[2] <= panel[2]  # its label is not cut off at the panel's edge
    finally:
        state.panel_width = 0.0
        ui.run_frames(1)
