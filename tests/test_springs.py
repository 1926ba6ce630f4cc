import numpy as np
import pytest

from pfnn_core.runtime.history import History
from pfnn_core.runtime.settings import RuntimeSettings
from pfnn_core.runtime.trajectory import (
    HALFLIFE_TO_RATE,
    SpringState,
    plan_trajectory,
    remaining_travel,
    spring_angle_update,
    spring_velocity_update,
    trajectory_blend_weights,
)

DT = 1.0 / 60.0


def test_halflife_constant_solves_half_gap():
    u = HALFLIFE_TO_RATE
    assert np.exp(-u) * (1 + u) == pytest.approx(0.5, abs=1e-12)


@pytest.mark.parametrize("halflife", [0.1, 0.27, 0.8])
def test_velocity_spring_closes_half_the_gap_after_one_halflife(halflife):
    goal = np.array([1.5, -0.5])
    _, velocity, _ = spring_velocity_update(np.zeros(2), np.zeros(2), np.zeros(2), goal, halflife, halflife)
    np.testing.assert_allclose(velocity, 0.5 * goal, atol=1e-12)
    # Ticking at 60 Hz gives the same answer as one exact jump (the update is exact, not Euler).
    position, velocity, acceleration = np.zeros(2), np.zeros(2), np.zeros(2)
    for _ in range(60):
        position, velocity, acceleration = spring_velocity_update(position, velocity, acceleration, goal, halflife, DT)
    exact = spring_velocity_update(np.zeros(2), np.zeros(2), np.zeros(2), goal, halflife, 1.0)
    np.testing.assert_allclose(position, exact[0], atol=1e-9)
    np.testing.assert_allclose(velocity, exact[1], atol=1e-9)
    # Converges to the goal; the position integrates the velocity (compare with a fine Riemann sum).
    far = spring_velocity_update(np.zeros(2), np.zeros(2), np.zeros(2), goal, halflife, 30 * halflife)
    np.testing.assert_allclose(far[1], goal, atol=1e-9)
    times = np.linspace(0.0, 1.0, 20001)
    _, v, _ = spring_velocity_update(np.zeros(2), np.zeros(2), np.zeros(2), goal, halflife, times[:, None])
    np.testing.assert_allclose(exact[0], np.trapezoid(v, times, axis=0), atol=1e-6)


def test_angle_spring_turns_the_short_way_and_halves_the_gap():
    start, goal = np.radians(170.0), np.radians(-170.0)  # 20 degrees apart across the seam
    angle, _ = spring_angle_update(start, 0.0, goal, 0.3, 0.3)
    assert np.degrees(angle) == pytest.approx(180.0, abs=1e-9)
    angle, velocity = spring_angle_update(start, 0.0, goal, 0.3, 10.0)
    assert np.cos(angle - goal) == pytest.approx(1.0) and abs(velocity) < 1e-9


def test_trajectory_blend_weights():
    np.testing.assert_allclose(trajectory_blend_weights(4, 1.0), [0.25, 0.5, 0.75, 1.0])
    weights = trajectory_blend_weights(6, np.array([0.5, 2.0]))
    assert weights.shape == (2, 6)
    np.testing.assert_allclose(weights[:, -1], 1.0)
    np.testing.assert_allclose(weights[1, 2], 1 - 0.5 ** 2)
    assert np.all(weights[0] <= weights[1])  # bias 2 follows the command sooner than bias 0.5


def _plan(desired, strafe=False, facing=(0.0, 0.0), net_pos=None, net_dir=None, settings=None, springs=None):
    times = np.arange(1, 7) * 10 / 60.0
    settings = settings or RuntimeSettings(slow_walk_speed=0.0)
    springs = springs or SpringState(np.zeros((1, 2)), np.zeros((1, 2)), np.zeros(1), np.zeros(1))
    net_pos = np.zeros((1, 6, 3)) if net_pos is None else net_pos
    net_dir = np.tile([0.0, 0.0, 1.0], (1, 6, 1)) if net_dir is None else net_dir
    return plan_trajectory(springs, np.array([desired], float), np.array([facing], float), np.array([strafe]),
                           np.array([[1.0, 0.0, 2.0]]), net_pos, net_dir, settings, DT, times,
                           lambda bias, bias_strafe: trajectory_blend_weights(6, np.array([bias, bias_strafe])))


def test_the_planned_trajectory_is_the_springs_prediction_blended_with_the_networks():
    plan = _plan([1.2, 0.0])
    times = DT + np.arange(1, 7) * 10 / 60.0
    # The commanded positions: the velocity spring integrated from this tick on, from the root.
    p_now, v_now, _ = spring_velocity_update(0.0, 0.0, 0.0, 1.2, 0.2, DT)
    p_future, v_future, _ = spring_velocity_update(0.0, 0.0, 0.0, 1.2, 0.2, times)
    np.testing.assert_allclose(plan.command_pos[0, :, 0], 1.0 + p_future - p_now, atol=1e-12)
    np.testing.assert_allclose(plan.springs.velocity[0], [v_now, 0.0], atol=1e-12)
    # Facing +X is yaw pi/2; the facing spring from yaw 0 heads there.
    assert 0.0 < plan.command_yaw[0, 0] < plan.command_yaw[0, -1] < np.pi / 2
    # Blend with the network's (zero) prediction: w(t) = 1 - (1 - t)^0.5 of the command.
    weights = trajectory_blend_weights(6, 0.5)
    np.testing.assert_allclose(plan.future_pos[0, :, 0], weights * plan.command_pos[0, :, 0], atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(plan.future_dir, axis=-1), 1.0)
    np.testing.assert_allclose(plan.command_speed, [v_now])


def test_strafing_keeps_the_given_facing_and_uses_the_strafe_blend():
    plan = _plan([1.0, 0.0], strafe=True, facing=(0.0, 1.0))
    np.testing.assert_allclose(plan.command_yaw, 0.0, atol=1e-12)  # facing +Z while moving +X
    weights = trajectory_blend_weights(6, RuntimeSettings().bias_pos_strafe)
    np.testing.assert_allclose(plan.future_pos[0, :, 0], weights * plan.command_pos[0, :, 0], atol=1e-12)


def test_slow_walks_are_warped_to_the_slowest_network_walk():
    settings = RuntimeSettings(slow_walk_speed=0.9, max_speed_warp=3.0)
    springs = SpringState(np.array([[0.45, 0.0]]), np.zeros((1, 2)), np.zeros(1), np.zeros(1))
    plan = _plan([0.45, 0.0], settings=settings, springs=springs)
    assert plan.warp[0] == pytest.approx(2.0)


def test_history_appends_without_touching_earlier_windows():
    first = History.filled(np.array([[1.0, 2.0]]), 3, spare=2)
    second = first.append(np.array([[3.0, 4.0]]))
    third = second.append(np.array([[5.0, 6.0]]))
    np.testing.assert_array_equal(first.window[0], [[1, 2], [1, 2], [1, 2]])
    np.testing.assert_array_equal(second.window[0], [[1, 2], [1, 2], [3, 4]])
    np.testing.assert_array_equal(third.window[0], [[1, 2], [3, 4], [5, 6]])
    np.testing.assert_array_equal(third.rows([0, 2])[0], [[5, 6], [1, 2]])
    # The buffer is full: the next append moves to a new buffer; the old windows stay.
    fourth = third.append(np.array([[7.0, 8.0]]))
    assert fourth.buffer is not third.buffer
    np.testing.assert_array_equal(fourth.window[0], [[3, 4], [5, 6], [7, 8]])
    np.testing.assert_array_equal(third.window[0], [[1, 2], [3, 4], [5, 6]])
    # Stepping an older History again (a branch) copies instead of overwriting the newer one's row.
    branch = first.append(np.array([[9.0, 9.0]]))
    np.testing.assert_array_equal(branch.window[0], [[1, 2], [1, 2], [9, 9]])
    np.testing.assert_array_equal(second.window[0], [[1, 2], [1, 2], [3, 4]])


def test_history_replace_takes_other_characters_windows():
    history = History.filled(np.array([[1.0], [2.0], [3.0]]), 2)
    other = History.filled(np.array([[7.0]]), 2)
    mixed = history.replace(np.array([1]), other)
    np.testing.assert_array_equal(mixed.window[:, :, 0], [[1, 1], [7, 7], [3, 3]])
    np.testing.assert_array_equal(history.window[:, :, 0], [[1, 1], [2, 2], [3, 3]])


def test_remaining_travel_is_where_a_spring_coming_to_rest_stops():
    """A stop: the spring moving at 1.1 m/s and braking comes to rest `remaining_travel` further on."""
    velocity, acceleration = np.array([1.1, -0.3]), np.array([-2.0, 0.5])
    far, _, _ = spring_velocity_update(np.zeros(2), velocity, acceleration, np.zeros(2), 0.2, 10.0)
    np.testing.assert_allclose(remaining_travel(velocity, acceleration, 0.2), far, atol=1e-9)
    # a spring at constant speed: 2 v / rate
    assert remaining_travel(1.0, 0.0, 0.2) == pytest.approx(2.0 * 0.2 / HALFLIFE_TO_RATE)
