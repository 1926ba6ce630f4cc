import numpy as np
import pytest

from pfnn_core.models.card import ModelCard
from pfnn_core.runtime.root_motion import (
    PRIMING_RAMP,
    START_SHAPE,
    DriftErrors,
    advance_phase_by_network,
    advance_phase_by_speed,
    correct_drift,
    move_amount,
    primed_past,
    root_motion,
    speed_warp,
    stand_amount,
    walked_past,
)
from pfnn_core.runtime.settings import RuntimeSettings

DT = 1.0 / 60.0


def run_drift(commanded, predicted, window, ticks):
    drift = DriftErrors.empty(1)
    corrected = []
    for _ in range(ticks):
        drift = drift.push(predicted - commanded)
        corrected.append(correct_drift(predicted, drift.mean(window)))
    return np.array(corrected)


def test_drift_correction_leaves_a_constant_commanded_motion_intact():
    commanded = np.array([[1.1, 0.4, 0.2]])
    corrected = run_drift(commanded, commanded.copy(), window=60, ticks=200)
    np.testing.assert_allclose(corrected, np.broadcast_to(commanded, corrected.shape), atol=1e-12)


def test_drift_correction_removes_a_constant_injected_bias():
    commanded = np.array([[1.1, 0.4, 0.2]])
    bias = np.array([[0.05, -0.03, 0.01]])
    corrected = run_drift(commanded, commanded + bias, window=60, ticks=200)
    np.testing.assert_allclose(corrected[-1], commanded, atol=1e-12)
    # With the correction off the bias stays.
    off = run_drift(commanded, commanded + bias, window=0, ticks=5)
    np.testing.assert_allclose(off[-1], commanded + bias)


@pytest.mark.parametrize("window", [0, 20, 60])
def test_the_drift_window_sets_how_fast_a_new_bias_is_removed(window):
    """A bias appearing at tick 100: k ticks later the window holds k biased errors out of `window`,
    so the correction has removed k / window of it (all of it from k = window on; none when off)."""
    commanded = np.array([[1.1, 0.4, 0.2]])
    bias = np.array([[0.06, -0.03, 0.012]])
    predicted = [commanded] * 100 + [commanded + bias] * 80
    drift, corrected = DriftErrors.empty(1), []
    for value in predicted:
        drift = drift.push(value - commanded)
        corrected.append(correct_drift(value, drift.mean(window))[0])
    for k in (1, 10, 20, 60, 80):
        kept = 1.0 if window == 0 else max(0.0, 1.0 - k / window)
        np.testing.assert_allclose(corrected[99 + k], commanded[0] + kept * bias[0], atol=1e-12)


def test_drift_mean_uses_only_the_last_window_entries():
    drift = DriftErrors.empty(1)
    for value in range(10):
        drift = drift.push(np.array([[float(value), 0.0, 0.0]]))
    assert drift.mean(2)[0, 0] == pytest.approx(8.5)
    assert drift.mean(100)[0, 0] == pytest.approx(4.5)  # fewer pushed than the window: all of them
    for value in range(10, 700):  # more than the capacity: the window is capped at 600
        drift = drift.push(np.array([[float(value), 0.0, 0.0]]))
    assert drift.mean(10_000)[0, 0] == pytest.approx(np.mean(np.arange(100, 700)))


def test_speed_based_phase_stops_at_zero_speed_and_follows_the_stride():
    stride = {"speed": [1.0, 3.0], "stride_length": [1.2, 2.4]}
    phase = np.array([0.3, 0.3, 0.95])
    advanced = advance_phase_by_speed(phase, np.array([0.0, 1.0, 3.0]), stride, DT)
    assert advanced[0] == 0.3
    assert advanced[1] == pytest.approx(0.3 + 1.0 / 1.2 * DT)
    assert advanced[2] == pytest.approx((0.95 + 3.0 / 2.4 * DT) % 1.0)
    p = np.zeros(1)
    for _ in range(72):  # one stride length walked = one full cycle
        p = advance_phase_by_speed(p, np.array([1.0]), stride, DT)
    assert p[0] == pytest.approx(0.0, abs=1e-9) or p[0] == pytest.approx(1.0, abs=1e-9)


def test_speed_based_phase_can_step_with_the_stride_of_another_speed():
    stride = {"speed": [1.0, 3.0], "stride_length": [1.2, 2.4]}
    assert advance_phase_by_speed(np.zeros(1), np.array([0.5]), stride, DT, np.array([2.0]))[0] == pytest.approx(0.5 / 1.8 * DT)
    assert advance_phase_by_speed(np.zeros(1), np.array([0.5]), stride, DT)[0] == pytest.approx(0.5 / 1.2 * DT)


def test_speed_warp_shows_slow_walks_as_the_slowest_walk_within_its_limit():
    np.testing.assert_allclose(speed_warp([0.0, 0.2, 0.45, 0.9, 2.0], 0.9, 3.0), [3.0, 3.0, 2.0, 1.0, 1.0])
    np.testing.assert_allclose(speed_warp([0.0, 0.45], 0.0, 3.0), [1.0, 1.0])  # off
    np.testing.assert_allclose(speed_warp([0.45], 0.9, 0.5), [1.0])  # a limit below 1 never slows the view


def test_network_phase_scales_with_dt_and_move_amount():
    assert advance_phase_by_network(np.array([0.1]), np.array([0.02]), 1.0, DT, 60)[0] == pytest.approx(0.12)
    assert advance_phase_by_network(np.array([0.1]), np.array([0.02]), 0.1, 2 * DT, 60)[0] == pytest.approx(0.104)


def test_stand_amount_and_stand_speed_zero_meaning_no_scaling():
    np.testing.assert_allclose(stand_amount([0.0, 0.1, 0.2, 1.0], 0.2), [1.0, 0.5, 0.0, 0.0])
    np.testing.assert_allclose(stand_amount([0.0, 0.1], 0.0), [0.0, 0.0])  # off: never standing
    np.testing.assert_allclose(move_amount([0.0, 1.0, 1.0 - 0.5 ** 4]), [1.0, 0.0, 0.5])


def _motion(settings, predicted_local, predicted_yaw_rate, command_velocity, command_yaw, root_yaw=0.3, warp=1.0,
            drift=None, released=False, strafe=False, stood=None):
    return root_motion(np.array([[1.0, 0.0, 2.0]]), np.array([root_yaw]), np.array([predicted_local]),
                       np.array([predicted_yaw_rate]), np.array([command_velocity]), np.array([command_yaw]),
                       np.array([np.hypot(*command_velocity)]), np.array([warp]), drift or DriftErrors.empty(1),
                       settings, DT, 10 / 60.0, np.array([released]), np.array([strafe]),
                       None if stood is None else np.asarray(stood, float)[None])


def test_bare_root_motion_is_the_networks_prediction():
    skeleton = {"names": ["Hips"], "parents": [-1], "offsets": [[0.0, 1.0, 0.0]]}
    settings = RuntimeSettings.bare_network(ModelCard.from_meta({"skeleton": skeleton}))
    motion = _motion(settings, [0.2, 1.1], 0.4, [0.0, 0.0], 0.0)  # command zero: no standing scale either
    c, s = np.cos(0.3), np.sin(0.3)
    world = np.array([c * 0.2 + s * 1.1, -s * 0.2 + c * 1.1])  # root frame turned by the yaw (+Z toward +X)
    np.testing.assert_allclose(motion.velocity[0], world, atol=1e-12)
    assert motion.yaw_rate[0] == pytest.approx(0.4)
    np.testing.assert_allclose(motion.position[0], [1.0 + world[0] * DT, 0.0, 2.0 + world[1] * DT], atol=1e-12)
    assert motion.yaw[0] == pytest.approx(0.3 + 0.4 * DT)


def test_root_motion_blends_toward_the_command_and_stops_when_standing():
    settings = RuntimeSettings(root_motion_from_command=1.0, drift_window=0)
    motion = _motion(settings, [0.0, 0.5], 0.0, [1.2, 0.0], 0.3 + 0.5, root_yaw=0.3)
    np.testing.assert_allclose(motion.velocity[0], [1.2, 0.0], atol=1e-12)
    assert motion.yaw_rate[0] == pytest.approx(0.5 / (10 / 60.0))  # the commanded turn over the first sample
    standing = _motion(RuntimeSettings(root_motion_from_command=0.0), [0.0, 0.5], 0.2, [0.0, 0.0], 0.3)
    np.testing.assert_allclose(standing.velocity, 0.0, atol=1e-12)
    assert standing.stand[0] == 1.0 and standing.yaw_rate[0] == 0.0


def test_root_motion_divides_the_prediction_by_the_speed_warp_and_corrects_drift():
    settings = RuntimeSettings(root_motion_from_command=0.0, drift_window=60, stand_speed=0.0)
    motion = _motion(settings, [0.0, 2.0], 0.0, [0.0, 0.5], 0.0, root_yaw=0.0, warp=2.0, drift=None)
    # The first tick's error (1.0 - 0.5) is the whole mean: the corrected motion is the command.
    np.testing.assert_allclose(motion.velocity[0], [0.0, 0.5], atol=1e-12)
    np.testing.assert_allclose(motion.speed[0], [0.5, 1.0], atol=1e-12)


def test_a_strafe_keeps_the_networks_speed_and_corrects_only_its_direction():
    """Strafing with `strafe_speed_correction` 0, drift correction removes the error across the commanded
    direction (the network side-stepping off course) but leaves its speed: a network that side-steps at
    0.6 m/s where 1.0 is asked moves at 0.6 along the command, blended half-way to 1.0 by the command."""
    settings = RuntimeSettings(root_motion_from_command=0.5, drift_window=60, stand_speed=0.0)
    # root yaw 0: root frame = world; the command is +X at 1 m/s, the network goes 0.6 along +X and 0.3 forward
    args = (settings, [0.6, 0.3], 0.0, [1.0, 0.0], 0.0)
    strafing = _motion(*args, root_yaw=0.0, strafe=True)
    np.testing.assert_allclose(strafing.velocity[0], [0.5 * 0.6 + 0.5 * 1.0, 0.0], atol=1e-12)
    forward = _motion(*args, root_yaw=0.0, strafe=False)
    np.testing.assert_allclose(forward.velocity[0], [1.0, 0.0], atol=1e-12)  # walking: the speed is corrected too
    settings.strafe_speed_correction = 1.0
    np.testing.assert_allclose(_motion(*args, root_yaw=0.0, strafe=True).velocity[0], [1.0, 0.0], atol=1e-12)


def test_a_released_stick_moves_the_root_by_the_command_alone_and_a_start_leans_on_it():
    settings = RuntimeSettings(root_motion_from_command=0.5, drift_window=0, stand_speed=0.0)
    args = (settings, [0.0, 0.2], 0.0, [0.0, 0.8], 0.0)
    assert _motion(*args, root_yaw=0.0).velocity[0, 1] == pytest.approx(0.5)  # half network, half command
    # released and settling (the spring still carries the last command): the command alone, the network
    # ignored (which characters settle is the runtime's `settling_stage`)
    assert _motion(*args, root_yaw=0.0, released=True).velocity[0, 1] == pytest.approx(0.8)
    # starting: the share of the last second stood s leans the blend by s ** START_SHAPE toward the command
    stood = np.r_[np.ones(45), np.zeros(15)]  # stood 3/4 of the last second
    lean = 0.5 + 0.5 * 0.75 ** START_SHAPE
    assert _motion(*args, root_yaw=0.0, stood=stood).velocity[0, 1] == pytest.approx(lean * 0.8 + (1 - lean) * 0.2)
    assert _motion(*args, root_yaw=0.0, stood=np.zeros(60)).velocity[0, 1] == pytest.approx(0.5)
    assert _motion(*args, root_yaw=0.0, stood=stood, strafe=True).velocity[0, 1] == pytest.approx(0.5)
    settings.start_from_command = False
    assert _motion(*args, root_yaw=0.0, stood=stood).velocity[0, 1] == pytest.approx(0.5)


def test_a_start_shows_the_network_a_past_that_was_already_moving():
    """Two characters stood still at (1, 0, 2) until the stick was pushed 0.2 s ago (12 of the last 60
    history samples walk); the commanded velocity is 1 m/s along +X. Priming by 1: the blend weight is
    (share stood = 0.8) x smoothstep(0.2 / PRIMING_RAMP), the primed past lies on root - velocity x age.
    A character whose stick is released, or priming 0, sees the real past."""
    root = np.array([[1.0, 0.0, 2.0], [1.0, 0.0, 2.0]])
    ages = np.array([1.0, 0.5, 0.25])
    past = np.zeros((2, 3, 9))
    past[..., 0:3] = root[:, None]  # stood at the root
    past[..., 6] = 1.0  # stand label
    stood = np.concatenate([np.ones((2, 48)), np.zeros((2, 12))], axis=1)
    velocity = np.array([[1.0, 0.0], [1.0, 0.0]])
    walk = np.array([[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
    primed = primed_past(past, root, velocity, walk, np.array([True, False]), stood, ages, 1.0)
    t = 0.2 / PRIMING_RAMP
    weight = 0.8 * t * t * (3 - 2 * t)
    np.testing.assert_allclose(primed[0, :, 0], 1.0 - weight * ages)  # x: root - w x age x 1 m/s
    np.testing.assert_allclose(primed[0, :, 2], 2.0)
    np.testing.assert_allclose(primed[0, :, 6:9], [[1 - weight, weight, 0.0]] * 3)
    np.testing.assert_array_equal(primed[1], past[1])  # released: the real past
    np.testing.assert_array_equal(primed_past(past, root, velocity, walk, np.array([True, True]), stood, ages, 0.0),
                                  past)
    # just pushed (nothing moved yet) and a second after (nothing stood): no priming either
    for share in (1.0, 0.0):
        np.testing.assert_array_equal(primed_past(past, root, velocity, walk, np.array([True, True]),
                                                  np.full((2, 60), share), ages, 1.0), past)


def test_a_walk_sees_a_past_that_no_longer_runs():
    """Three past samples labelled (stand, walk, run): a run, half a run, a walk. A character slowing
    to a walk (run share now 0.2) sees no sample with more than 0.2 'run', the excess moved to 'walk'
    (positions, facings and the stand share kept); one still running (0.8) has only the full run of its
    past lowered to 0.8; one running flat out (1.0) sees its real past."""
    past = np.zeros((2, 3, 9))
    past[..., 0] = [1.0, 2.0, 3.0]
    past[..., 6:9] = [[0.0, 0.0, 1.0], [0.1, 0.4, 0.5], [0.0, 1.0, 0.0]]
    now = np.array([[0.0, 0.8, 0.2], [0.0, 0.2, 0.8]])
    walked = walked_past(past, now)
    np.testing.assert_allclose(walked[0, :, 6:9], [[0.0, 0.8, 0.2], [0.1, 0.7, 0.2], [0.0, 1.0, 0.0]])
    np.testing.assert_allclose(walked[1, :, 6:9], [[0.0, 0.2, 0.8], [0.1, 0.4, 0.5], [0.0, 1.0, 0.0]])
    np.testing.assert_array_equal(walked[..., :6], past[..., :6])
    np.testing.assert_allclose(walked[..., 6:9].sum(-1), 1.0)
    assert past[0, 0, 8] == 1.0  # the history itself is not changed
    flat_out = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]])
    assert walked_past(past, flat_out) is past
