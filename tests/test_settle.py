"""Settling steps after a stop: targets from the stance, arcs, and the order of the steps."""
import numpy as np
from pfnn_core import settle

DT = 1.0 / 60.0
STANCE = np.array([[0.09, 0.12, -0.07], [0.10, 0.04, 0.03], [-0.09, 0.12, -0.07], [-0.10, 0.04, 0.03]])


def test_stance_targets_turn_and_move_with_the_hips():
    targets = settle.stance_targets(np.array([[1.0, 2.0]]), np.array([np.pi / 2]), STANCE)
    # facing +X: body x (left) is world -Z, body z (forward) is world +X
    np.testing.assert_allclose(targets[0, 0], [1.0 - 0.07, 0.12, 2.0 - 0.09], atol=1e-12)
    np.testing.assert_allclose(settle.stance_targets(np.zeros((1, 2)), np.zeros(1), STANCE)[0], STANCE)


def test_a_step_arc_lifts_and_lands_on_its_end():
    start, end = np.zeros((1, 2, 3)), np.ones((1, 2, 3)) * [0.3, 0.0, 0.1]
    np.testing.assert_allclose(settle.step_arc(start, end, np.array([0.0])), start)
    np.testing.assert_allclose(settle.step_arc(start, end, np.array([1.0])), end, atol=1e-12)
    middle = settle.step_arc(start, end, np.array([0.5]))
    np.testing.assert_allclose(middle[0, :, 1], settle.STEP_HEIGHT)
    np.testing.assert_allclose(middle[0, :, [0, 2]], 0.5 * end[0, :, [0, 2]])


def test_a_stop_mid_stride_steps_the_far_foot_then_the_other_onto_the_stance():
    targets = settle.stance_targets(np.zeros((1, 2)), np.zeros(1), STANCE)
    pins = targets.copy()
    pins[0, 2:, 2] -= 0.30   # the right foot planted 30 cm behind
    pins[0, :2, 2] += 0.08   # the left 8 cm ahead
    state = settle.idle_state(1)
    order, goals = [], None
    for _ in range(int(2.5 * settle.STEP_DURATION_S / DT) + 2):
        state, goals, stepping = settle.advance(state, np.array([True]), pins, targets, DT)
        if state.foot[0] >= 0 and (not order or order[-1] != state.foot[0]):
            order.append(int(state.foot[0]))
        # the caller pins every foot where its goal is once it is not stepping
        pins = np.where(stepping[..., None], pins, goals)
    assert order == [1, 0]  # the far (right) foot first
    np.testing.assert_allclose(goals, targets, atol=1e-9)
    assert state.steps[0] == 2 and state.foot[0] == -1


def test_feet_already_in_place_do_not_step_and_moving_again_cancels():
    targets = settle.stance_targets(np.zeros((2, 2)), np.zeros(2), STANCE)
    pins = targets + [0.01, 0.0, 0.01]
    state, goals, stepping = settle.advance(settle.idle_state(2), np.array([True, True]), pins, targets, DT)
    assert not stepping.any() and (state.foot < 0).all()
    pins[1, 2:, 2] -= 0.3
    state, goals, stepping = settle.advance(state, np.array([True, True]), pins, targets, DT)
    assert stepping[1, 2:].all() and not stepping[0].any()
    state, goals, stepping = settle.advance(state, np.array([True, False]), pins, targets, DT)
    assert not stepping[1].any() and state.steps[1] == 0
    np.testing.assert_allclose(goals[1], pins[1])


def test_steps_are_capped():
    targets = settle.stance_targets(np.zeros((1, 2)), np.zeros(1), STANCE)
    pins = targets.copy()
    pins[0, :, 2] -= 0.5
    state = settle.idle_state(1)
    for _ in range(int(10 * settle.STEP_DURATION_S / DT)):
        # a caller that never pins the step's end (e.g. the body keeps moving): the feet keep "needing" steps
        state, goals, stepping = settle.advance(state, np.array([True]), pins, targets, DT)
    assert state.steps[0] == settle.MAX_STEPS
