"""Motion-quality measures against hand-computed values on synthetic arrays."""

import numpy as np
import pytest

from pfnn_core.evaluation import metrics

DT = 1.0 / 60.0


def feet_track(x, height):
    """Foot positions [T, K, 3] from horizontal x [T, K] and height [T, K] (z = 0)."""
    x = np.asarray(x, dtype=float)
    return np.stack([x, np.broadcast_to(height, x.shape), np.zeros_like(x)], axis=-1)


# ---------------------------------------------------------------------------------------- feet


# ---------------------------------------------------------------------------------------- root


def test_integrate_path_constant_velocity():
    velocity = np.tile([0.5, 1.0], (5, 1))
    path = metrics.integrate_path(velocity, 0.1, start_xz=[2.0, 3.0])
    np.testing.assert_allclose(path, [[2.0, 3.0], [2.05, 3.1], [2.1, 3.2], [2.15, 3.3], [2.2, 3.4]])


def test_idle_drift_displacement_excursion_and_yaw_across_the_seam():
    root = np.array([[0.0, 0.0], [0.03, 0.04], [0.0, 0.01]])
    yaw = np.array([3.1, -3.1, 3.12])  # crosses +-pi: 0.0832 rad of turning, then back to +0.02
    drift = metrics.idle_drift(root, yaw)
    assert drift.displacement == pytest.approx(0.01)
    assert drift.excursion == pytest.approx(0.05)
    assert drift.yaw_change == pytest.approx(0.02)
    assert drift.yaw_excursion == pytest.approx(2 * np.pi - 6.2)


def test_response_time_linear_ramp_is_exact():
    t = np.arange(0, 4, DT)
    speed = np.clip(t - 1.0, 0.0, 1.0)  # command at t = 1, ramps to 1 m/s in 1 s
    assert metrics.response_time(t, speed, 1.0, t_change=1.0) == pytest.approx(0.9)


def test_response_time_first_order_lag():
    tau = 0.3
    t = np.arange(0, 5, 1 / 1000)
    speed = np.where(t < 1, 0.0, 1.2 * (1 - np.exp(-(t - 1) / tau)))
    assert metrics.response_time(t, speed, 1.2, t_change=1.0) == pytest.approx(tau * np.log(10), abs=1e-4)


def test_response_time_slow_down_and_never():
    t = np.arange(0, 5, DT)
    speed = np.clip(3.0 - (t - 1.0), 1.0, 3.0)  # run 3 m/s -> walk 1 m/s at 1 m/s^2 from t = 1
    assert metrics.response_time(t, speed, 1.0, t_change=1.0) == pytest.approx(1.8)
    assert metrics.response_time(t, np.zeros_like(t), 1.0, t_change=1.0) == np.inf


def test_heading_response_time_and_overshoot_across_the_seam():
    t = np.arange(0, 4, DT)
    start = 3.0
    turned = np.clip(t - 1.0, 0.0, 1.0) * (np.pi / 2)  # 90 degrees in 1 s, from t = 1
    heading = metrics.wrap_angle(start + turned)
    target = metrics.wrap_angle(start + np.pi / 2)
    assert metrics.heading_response_time(t, heading, target, t_change=1.0) == pytest.approx(0.9)
    assert metrics.turn_overshoot(t, heading, target, t_change=1.0) == pytest.approx(0.0)
    # a start heading given wrapped differently (3.0 - 2 pi) means the same turn.
    late = metrics.wrap_angle(start + np.clip(t - 1.1, 0.0, 1.0) * (np.pi / 2))
    assert metrics.heading_response_time(t, late, target, 1.0, start_heading=start - 2 * np.pi) == pytest.approx(1.0)


def test_circular_mean_across_the_seam():
    assert abs(metrics.circular_mean([np.pi - 0.1, -np.pi + 0.1])) == pytest.approx(np.pi)
    np.testing.assert_allclose(metrics.circular_mean([[0.1, 0.3], [-0.2, -0.4]]), [0.2, -0.3])


def test_turn_overshoot_measures_the_swing_past_the_target():
    t = np.arange(0, 4, DT)
    # turn right (negative) by 90 deg, swinging 0.3 rad past the target, then settling back.
    turned = np.interp(t, [0.0, 1.0, 2.0, 2.5], [0.0, 0.0, -np.pi / 2 - 0.3, -np.pi / 2])
    overshoot = metrics.turn_overshoot(t, turned, -np.pi / 2, t_change=1.0)
    assert overshoot == pytest.approx(0.3, abs=1e-3)


def test_steady_state_errors_constant_velocity():
    command = np.array([0.0, 1.2])
    heading = 0.05
    velocity = np.tile(1.08 * np.array([np.sin(heading), np.cos(heading)]), (100, 1))
    errors = metrics.steady_state_errors(velocity, command)
    assert errors.speed_error == pytest.approx(0.1)
    assert errors.heading_error == pytest.approx(0.05)


def test_steady_state_heading_ignores_sway_over_whole_cycles():
    t = np.arange(0, 2, DT)  # two whole 1 s sway cycles
    velocity = np.stack([0.2 * np.sin(2 * np.pi * t), np.full_like(t, 1.0)], axis=-1)
    errors = metrics.steady_state_errors(velocity, np.tile([0.0, 1.0], (len(t), 1)))
    assert errors.heading_error == pytest.approx(0.0, abs=1e-12)
    assert errors.speed_error == pytest.approx(np.hypot(0.2 * np.sin(2 * np.pi * t), 1.0).mean() - 1.0)


def test_facing_error_across_the_seam():
    yaw = np.full(10, -np.pi + 0.05)
    assert metrics.facing_error(yaw, [0.0, -1.0]) == pytest.approx(0.05)
    assert metrics.facing_error(np.full(10, 0.1), [0.0, 1.0]) == pytest.approx(0.1)


def test_path_following_error_lateral_offset_and_lag():
    command = metrics.integrate_path(np.tile([0.0, 1.0], (300, 1)), DT)
    offset = command + np.array([0.1, 0.0])
    lagging = command * 0.5  # same line, half as far: lag costs nothing
    assert metrics.path_following_error(command, offset).mean == pytest.approx(0.1)
    assert metrics.path_following_error(command, offset).max == pytest.approx(0.1)
    assert metrics.path_following_error(command, lagging).max == pytest.approx(0.0, abs=1e-12)


def test_path_following_error_corner_cut():
    # commanded: 1 m along +z then 1 m along +x. root: straight diagonal from (0,0) to (1,1).
    corner = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    diagonal = np.stack([np.linspace(0, 1, 101)] * 2, axis=-1)
    error = metrics.path_following_error(corner, diagonal)
    # distance from (s, s) to the corner path is min(s, 1 - s): at most 0.5; over s = k / 100 its mean is 25 / 101.
    assert error.max == pytest.approx(0.5)
    assert error.mean == pytest.approx(25 / 101)


# ---------------------------------------------------------------------------------------- pose and phase


def test_mean_jerk_of_a_sinusoid():
    amplitude, omega, dt = 0.1, 2 * np.pi * 1.5, 1 / 600
    t = np.arange(0, 2, dt)  # three whole periods
    positions = np.zeros((len(t), 1, 3))
    positions[:, 0, 0] = amplitude * np.sin(omega * t)
    expected = amplitude * omega ** 3 * 2 / np.pi  # mean of |A w^3 cos(w t)|
    assert metrics.mean_jerk(positions, dt) == pytest.approx(expected, rel=2e-3)


def test_mean_jerk_of_a_cubic_is_exact():
    t = np.arange(0, 1, DT)
    positions = np.zeros((len(t), 2, 3))
    positions[:, 0, 1] = 2.0 * t ** 3  # jerk 12
    positions[:, 1, 2] = 5.0 * t  # constant velocity: jerk 0
    assert metrics.mean_jerk(positions, DT) == pytest.approx(6.0, rel=1e-6)


def test_integrate_root_motion_turns_after_each_step():
    dt = 0.5
    # step 0: forward 1 m/s at yaw 0 while turning +90 deg; step 1: forward again, now facing +X.
    path, yaw = metrics.integrate_root_motion([[0.0, 1.0], [0.0, 1.0]], [np.pi, 0.0], dt)
    np.testing.assert_allclose(path, [[0.0, 0.0], [0.0, 0.5], [0.5, 0.5]], atol=1e-12)
    np.testing.assert_allclose(yaw, [0.0, np.pi / 2, np.pi / 2])
    # a local sidestep to +X at start yaw pi/2 (facing +X) moves toward -Z.
    path, _ = metrics.integrate_root_motion([[1.0, 0.0]], [0.0], 1.0, start_yaw=np.pi / 2)
    np.testing.assert_allclose(path[-1], [0.0, -1.0], atol=1e-12)


def quat_about_y(angle):
    angle = np.asarray(angle, dtype=float)
    return np.stack([np.cos(angle / 2), np.zeros_like(angle), np.sin(angle / 2), np.zeros_like(angle)], axis=-1)


def test_phase_consistency_invariances_and_a_known_value():
    t = np.linspace(0, 3, 200)
    path = np.stack([np.sin(t), t], axis=-1)
    assert metrics.phase_consistency(path, path) == pytest.approx(1.0)
    assert metrics.phase_consistency(2.5 * path + [4.0, -1.0], path) == pytest.approx(1.0)
    assert metrics.phase_consistency(-path, path) == pytest.approx(-1.0)
    along_x = np.stack([t, np.zeros_like(t)], axis=-1)
    diagonal = np.stack([t, t], axis=-1)
    assert metrics.phase_consistency(along_x, diagonal) == pytest.approx(1 / np.sqrt(2))
    batched = metrics.phase_consistency(np.stack([path, along_x]), np.stack([path, diagonal]))
    np.testing.assert_allclose(batched, [1.0, 1 / np.sqrt(2)])
