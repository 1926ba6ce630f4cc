"""The toe-off hold (`reach._hold_toe_off`, `settings.hold_toe_off`): while one foot takes a catch-up
step, the other foot's leaving toe stays on the floor, so a start never lifts both feet."""

from pathlib import Path

import numpy as np
import pytest

from pfnn_core.runtime.reach import TOE_HOLD, TOE_RELEASE_RATE, _hold_toe_off

FLOOR = np.array([0.08, 0.02, 0.08, 0.02])  # ankle, toe of the left foot, then the right's
SHIPPED = Path(__file__).resolve().parents[1] / "assets/models/default.safetensors"


def _hold(goals, pull, network, stepping, before=(0.0, 0.0)):
    held = np.empty(2)
    _hold_toe_off(goals, pull, network, stepping, FLOOR, np.array(before, dtype=float), held, 1 / 60)
    return held


def _feet(left_toe_height):
    network = np.array([[0.1, 0.12, 0.0], [0.1, 0.02 + left_toe_height, 0.15],
                        [-0.1, 0.08, 0.3], [-0.1, 0.02, 0.45]])
    return network.copy(), np.zeros(4), network  # goals, pull, the network's joints


def test_a_leaving_toe_is_held_while_the_other_foot_steps_and_only_then():
    stepping = np.array([False, False, True, True])  # the right foot in a catch-up step
    goals, pull, network = _feet(0.035)
    assert _hold(goals, pull, network, stepping) == pytest.approx([0.035 - TOE_HOLD, 0.0])
    assert goals[1] == pytest.approx([0.1, 0.02 + TOE_HOLD, 0.15]) and pull[1] == 1.0
    assert np.array_equal(goals[[0, 2, 3]], network[[0, 2, 3]]) and np.array_equal(pull[[0, 2, 3]], np.zeros(3))
    for height, steps in ((0.035, np.zeros(4, bool)), (0.10, stepping), (0.01, stepping)):  # no step; a swing; down
        goals, pull, network = _feet(height)
        assert not _hold(goals, pull, network, steps).any()
        assert np.array_equal(goals, network) and not pull.any()


def test_a_fading_toe_is_held_where_its_fade_would_show_it():
    goals, pull, network = _feet(0.04)
    goals[1] = [0.3, 0.02, 0.15]  # its old pin, half faded out: shown halfway, 2 cm up
    pull[1] = 0.5
    _hold(goals, pull, network, np.array([False, False, True, False]))
    assert goals[1] == pytest.approx([0.2, 0.02 + TOE_HOLD, 0.15]) and pull[1] == 1.0


def test_a_toe_let_go_comes_up_at_the_release_rate_not_in_one_tick():
    step = TOE_RELEASE_RATE / 60
    goals, pull, network = _feet(0.05)  # the other foot has landed: no step; held 3 cm down last tick
    held = _hold(goals, pull, network, np.zeros(4, bool), before=(0.03, 0.0))
    assert held == pytest.approx([0.03 - step, 0.0])
    assert goals[1, 1] == pytest.approx(0.02 + 0.05 - 0.03 + step) and pull[1] == 1.0
    before, ticks = held, 1
    while before[0] > 0.0:  # the hold runs out: the toe is where the network has it, at rest
        goals, pull, network = _feet(0.05)
        before, ticks = _hold(goals, pull, network, np.zeros(4, bool), before=before), ticks + 1
    assert ticks == int(np.ceil(0.03 / step)) and np.array_equal(goals, network)


@pytest.mark.skipif(not SHIPPED.is_file(), reason="needs the shipped model")
def test_starts_from_standing_keep_a_foot_on_the_floor_with_the_shipped_model():
    from pfnn_core.drive.cli import run_drive, settings_from_arguments
    from pfnn_core.models.registry import load_checkpoint, load_model

    checkpoint = load_checkpoint(SHIPPED)
    model = load_model(SHIPPED)
    script = Path(__file__).resolve().parents[1] / "scripts/drives/tuning/straight_starts.json"
    quick_release = ["lock_release_time=0.15", "lock_release_distance=0.2"]  # the defaults it was built under
    lowest = {}
    for name, arguments in (("false", ["hold_toe_off=false", *quick_release]),
                            ("true", ["hold_toe_off=true", *quick_release]), ("defaults", [])):
        settings, _ = settings_from_arguments(arguments, checkpoint)
        positions = run_drive(script, checkpoint, settings=settings).joint_positions
        heights = positions[:, model.plan.contact_joints, 1] - np.asarray(model.floor_heights)
        lowest[name] = heights.min(axis=1)  # the lowest foot joint each tick
    assert (lowest["false"] > 0.02).sum() >= 3  # without it, both feet were off the floor at a start
    assert (lowest["true"] > 0.02).sum() == 0
    assert (lowest["defaults"] > 0.02).sum() == 0
