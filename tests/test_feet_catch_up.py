"""Catch-up steps that are slow enough not to shake the leg (`catch_up_time`) and that leave their pin at
rest on a minimum-jerk path (`smooth_catch_up`, `release.catch_up_path`)."""
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from pfnn_core.evaluation import measures
from pfnn_core.evaluation.acceleration_noise import acceleration_noise
from pfnn_core.models.registry import load_checkpoint
from pfnn_core.runtime.character import Character
from pfnn_core.runtime.command import command_from_world_move
from pfnn_core.runtime.feet import foot_rules
from pfnn_core.runtime.release import catch_up_path, minimum_jerk
from pfnn_core.runtime.settings import RuntimeSettings

DT = 1.0 / 60.0
DEFAULT_MODEL = Path(__file__).resolve().parents[1] / "assets" / "models" / "default.safetensors"
shipped = pytest.mark.skipif(not DEFAULT_MODEL.exists(), reason="shipped model not present")


def test_minimum_jerk_starts_and_ends_at_rest():
    t = np.linspace(0.0, 1.0, 2001)
    ease = np.array([minimum_jerk(x) for x in t])
    h = t[1] - t[0]
    velocity, acceleration = np.gradient(ease, h), np.gradient(np.gradient(ease, h), h)
    assert ease[0] == 0.0 and ease[-1] == pytest.approx(1.0) and minimum_jerk(0.5) == pytest.approx(0.5)
    assert np.all(np.diff(ease) >= 0.0)
    assert abs(velocity[0]) < 1e-5 and abs(velocity[-1]) < 1e-5
    assert abs(acceleration[2]) < 0.1 and abs(acceleration[-3]) < 0.1  # 10 t^3: 60 t near 0
    assert minimum_jerk(-1.0) == 0.0 and minimum_jerk(2.0) == 1.0


def test_a_smooth_catch_up_step_leaves_its_pin_at_rest_and_lands_level():
    """From the pin (weight 1) to the landing (weight 0), the lift 0 at both ends and `height` halfway;
    the first and last ticks of a 20-tick step move the joint under 5% of its largest move in a tick."""
    start, landing, height = (0.0, 0.0, 0.0), (0.3, 0.0, 0.1), 0.04
    np.testing.assert_allclose(catch_up_path(start, landing, 1.0, height), start, atol=1e-12)
    np.testing.assert_allclose(catch_up_path(start, landing, 0.0, height), landing, atol=1e-12)
    middle = catch_up_path(start, landing, 0.5, height)
    np.testing.assert_allclose(middle, (0.15, height, 0.05), atol=1e-12)
    steps = 20
    path = np.array([catch_up_path(start, landing, 1.0 - k / steps, height) for k in range(steps + 1)])
    moves = np.linalg.norm(np.diff(path, axis=0), axis=1)
    assert moves[0] < 0.05 * moves.max() and moves[-1] < 0.05 * moves.max()  # leaves and lands at rest


def test_the_catch_up_settings_are_live_with_ranges():
    settings = RuntimeSettings()
    assert settings.limits("catch_up_time") == (0.0, 0.6)
    settings.assign("catch_up_time", "0.25")
    settings.assign("smooth_catch_up", "true")
    rules = foot_rules(settings, DT)
    assert rules.catch_up_time == pytest.approx(0.25) and rules.smooth_catch_up
    with pytest.raises(ValueError):
        settings.assign("catch_up_time", "1.0")


def _strafe(checkpoint, move, **values):
    """4 s of the shipped model strafing `move` (facing +Z) after 0.5 s standing: every joint shown."""
    settings = dataclasses.replace(RuntimeSettings.for_model(checkpoint.card), **values)
    character, shown = Character(checkpoint, settings), []
    for tick in range(270):
        command = command_from_world_move(move if tick >= 30 else [0.0, 0.0], False, settings, facing=[0.0, 1.0])
        shown.append(character.tick(command, DT).world_joint_pos[0].copy())
    return np.array(shown), character.model.contact_joints, character.model.floor_heights


@shipped
@pytest.mark.slow
def test_slower_catch_up_steps_shake_side_steps_less_without_hovering():
    """A catch-up step as quick as a release fade (0.15 s) moves the foot 20-30 cm at up to 2 m/s and back
    onto the floor: 6-15 Hz energy in the knee, ankle and toe. At 0.3 s (the settling step's time) the
    side-steps' acceleration noise falls (169 -> 145 (m/s^2)^2 here) and both feet are no more often
    off the floor. Both runs release pins as a forward walk does (0.2 s): the slower side-step release
    (`lock_release_time_side`) smooths the same steps too (151 -> 140 with it) and is tested on its own."""
    checkpoint = load_checkpoint(DEFAULT_MODEL)
    walk_release = {"lock_release_time_side": RuntimeSettings.for_model(checkpoint.card).lock_release_time}
    quick, quick_feet, floor = _strafe(checkpoint, (1.0, 0.0), catch_up_time=0.0, **walk_release)
    slow, slow_feet, _ = _strafe(checkpoint, (1.0, 0.0), catch_up_time=0.3, **walk_release)
    assert acceleration_noise(slow[60:], DT) < 0.9 * acceleration_noise(quick[60:], DT)
    assert measures.both_feet_up(slow[60:, slow_feet], floor).mean() <= \
        measures.both_feet_up(quick[60:, quick_feet], floor).mean() + 0.01
