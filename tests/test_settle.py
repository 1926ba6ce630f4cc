"""Settling steps after a stop: targets from the stance, arcs, and the order of the steps."""
import numpy as np

from pfnn_core.runtime import settle

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


def test_a_foot_left_in_the_air_steps_first_and_a_waiting_one_comes_down():
    targets = settle.stance_targets(np.zeros((1, 2)), np.zeros(1), STANCE)
    floor = STANCE[:, 1]
    pins = targets.copy()
    pins[0, 2:, 2] -= 0.30             # the right foot planted 30 cm behind: the farther one...
    pins[0, :2, 1] += 0.06             # ...but the left one hangs 6 cm up, 5 cm ahead
    pins[0, :2, 2] += 0.05
    state, goals, stepping = settle.advance(settle.idle_state(1), np.array([True]), pins, targets, DT, floor=floor)
    assert stepping[0].tolist() == [True, True, False, False]  # the foot in the air lands first
    np.testing.assert_allclose(goals[0, :2], pins[0, :2])      # a step starts where the foot is (no jump)
    # both feet in the air: the farther steps, the other comes straight down meanwhile
    pins = targets.copy()
    pins[0, :, 1] += 0.05
    pins[0, 2:, 2] -= 0.3
    state = settle.idle_state(1)
    heights = []
    for _ in range(int(settle.STEP_DURATION_S / DT) - 1):
        state, goals, stepping = settle.advance(state, np.array([True]), pins, targets, DT, floor=floor)
        pins = np.where(stepping[..., None], pins, goals)
        heights.append(goals[0, :2, 1] - floor[:2])
    assert stepping[0].tolist() == [False, False, True, True]
    heights = np.array(heights)
    np.testing.assert_allclose(heights[0], 0.05 - settle.LANDING_SPEED * DT)
    assert np.all(np.diff(heights, axis=0) <= 0) and np.all(heights[-1] == 0.0)
    np.testing.assert_allclose(goals[0, :2, [0, 2]], targets[0, :2, [0, 2]])  # straight down, not across


def test_a_step_lands_where_its_targets_are_when_it_ends():
    """The targets move with the hips (a body still slowing down): the stepping foot follows them and
    lands on where they are at the end of the step."""
    pins = settle.stance_targets(np.zeros((1, 2)), np.zeros(1), STANCE)
    pins[0, 2:, 2] -= 0.3
    state = settle.idle_state(1)
    hips_z = 0.0
    for _ in range(int(settle.STEP_DURATION_S / DT) + 1):
        hips_z += 0.2 * DT  # the hips still move on at 0.2 m/s
        targets = settle.stance_targets(np.array([[0.0, hips_z]]), np.zeros(1), STANCE)
        state, goals, stepping = settle.advance(state, np.array([True]), pins, targets, DT)
        pins = np.where(stepping[..., None], pins, goals)
        if state.steps[0] == 1 and not stepping[0, 2]:
            break
    np.testing.assert_allclose(goals[0, 2:], targets[0, 2:], atol=1e-12)


def test_a_stepping_foot_turns_as_a_rigid_body_about_its_ankle():
    """A foot that stops mid-stride pitched (toe 45 degrees down and back, as in a running stride) steps
    onto a flat stance: the toe keeps its distance from the ankle and turns evenly toward its place
    (135 degrees over the step, half of it at the middle), instead of sweeping through the ankle."""
    length = 0.15
    targets = settle.stance_targets(np.zeros((1, 2)), np.zeros(1), STANCE)
    targets[0, 2:, 1] = [0.10, 0.10]                 # a flat foot: toe straight ahead of the ankle
    targets[0, 3] = targets[0, 2] + [0.0, 0.0, length]
    pins = targets.copy()
    pins[0, 2] = targets[0, 2] + [0.0, 0.25, -0.35]  # the right foot left behind in the air...
    pins[0, 3] = pins[0, 2] + length * np.array([0.0, -1.0, -1.0]) / np.sqrt(2)  # ...pitched toe-down
    state, ticks = settle.idle_state(1), int(round(settle.STEP_DURATION_S / DT))
    toes, ankles = [], []
    for tick in range(ticks):
        state, goals, stepping = settle.advance(state, np.array([True]), pins, targets, DT)
        assert state.foot[0] == 1 and stepping[0].tolist() == [False, False, True, True]
        ankles.append(goals[0, 2].copy())
        toes.append(goals[0, 3].copy())
    foot = np.array(toes) - np.array(ankles)
    np.testing.assert_allclose(np.linalg.norm(foot, axis=-1), length, atol=1e-9)
    start_dir = np.array([0.0, -1.0, -1.0]) / np.sqrt(2)
    turned = np.degrees(np.arccos(np.clip(foot @ start_dir / length, -1, 1)))
    assert np.all(np.diff(turned) >= -1e-9) and turned[-1] < 135.0 + 1e-6
    middle = settle.toe_arc_point((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), tuple(length * start_dir), (0.0, 0.0, 0.0),
                                  (0.0, 0.0, length), 0.5)
    halfway = np.radians(-45.0 - 67.5)  # from pointing down-back, 67.5 degrees toward straight ahead
    np.testing.assert_allclose(middle, [0.0, length * np.sin(halfway), -length * np.cos(halfway)], atol=1e-12)
    # even: no tick turns the toe by more than the eased path's steepest share (1.5 x the average)
    assert np.diff(turned).max() <= 1.5 * 135.0 / ticks + 1e-6
