import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

from pfnn_core import features
from pfnn_core.checkpoint import load_checkpoint
from pfnn_core.controller import command_from_world_move, stand_command
from pfnn_core.kinematics import forward_kinematics
from pfnn_core.quat import quat_from_6d, quat_from_yaw, quat_to_yaw
from pfnn_core.quat import quat_from_angle_axis, quat_from_matrix, quat_to_matrix
from pfnn_core.runtime import (HALFLIFE_TO_RATE, Character, advance_phase_by_network, advance_phase_by_speed,
                               chain_matrix, correct_drift, drift_mean, fit_rotations_to_positions, matrices_between,
                               matrices_from_6d, yaw_matrices,
                               forward_kinematics_global, local_pose, push_drift_error, rotation_fit,
                               speed_warp, spring_angle_update, spring_velocity_update, stand_amount,
                               trajectory_blend_weights)
from pfnn_core.settings import RuntimeSettings

DT = 1.0 / 60.0
DEFAULT_MODEL = Path(__file__).resolve().parents[1] / "assets" / "models" / "default.safetensors"


# --- springs ------------------------------------------------------------------------------------


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


# --- drift correction ----------------------------------------------------------------------------


def run_drift(commanded, predicted, window, ticks):
    history, count = np.zeros((1, 600, 3)), 0
    corrected = []
    for _ in range(ticks):
        history, count = push_drift_error(history, count, predicted - commanded)
        corrected.append(correct_drift(predicted, drift_mean(history, count, window)))
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


def test_drift_mean_uses_only_the_last_window_entries_of_the_ring():
    history, count = np.zeros((1, 4, 1)), 0
    for value in range(10):
        history, count = push_drift_error(history, count, np.array([[float(value)]]))
    assert drift_mean(history, count, 2)[0, 0] == pytest.approx(8.5)
    assert drift_mean(history, count, 100)[0, 0] == pytest.approx(7.5)  # capped by the ring length


# --- phase and stand ------------------------------------------------------------------------------


def test_speed_based_phase_stops_at_zero_speed_and_follows_the_stride():
    stride = {"speed": [1.0, 3.0], "stride_length": [1.2, 2.4]}
    phase = np.array([0.3, 0.3, 0.95])
    advanced = advance_phase_by_speed(phase, np.array([0.0, 1.0, 3.0]), stride, DT)
    assert advanced[0] == 0.3
    assert advanced[1] == pytest.approx(0.3 + 1.0 / 1.2 * DT)
    assert advanced[2] == pytest.approx((0.95 + 3.0 / 2.4 * DT) % 1.0)
    # One stride length walked = one full cycle.
    p = np.zeros(1)
    for _ in range(72):
        p = advance_phase_by_speed(p, np.array([1.0]), stride, DT)
    assert p[0] == pytest.approx(0.0, abs=1e-9) or p[0] == pytest.approx(1.0, abs=1e-9)


def test_speed_based_phase_can_step_with_the_stride_of_another_speed():
    stride = {"speed": [1.0, 3.0], "stride_length": [1.2, 2.4]}
    # 0.5 m/s walked with the 1.0 m/s stride (1.2 m per cycle); below the table the stride is its first.
    assert advance_phase_by_speed(np.zeros(1), np.array([0.5]), stride, DT, np.array([2.0]))[0] == pytest.approx(0.5 / 1.8 * DT)
    assert advance_phase_by_speed(np.zeros(1), np.array([0.5]), stride, DT)[0] == pytest.approx(0.5 / 1.2 * DT)


def test_speed_warp_shows_slow_walks_as_the_slowest_walk_within_its_limit():
    np.testing.assert_allclose(speed_warp([0.0, 0.2, 0.45, 0.9, 2.0], 0.9, 3.0), [3.0, 3.0, 2.0, 1.0, 1.0])
    np.testing.assert_allclose(speed_warp([0.0, 0.45], 0.0, 3.0), [1.0, 1.0])  # off
    np.testing.assert_allclose(speed_warp([0.45], 0.9, 0.5), [1.0])  # a limit below 1 never slows the view


def test_network_phase_scales_with_dt_and_move_amount():
    assert advance_phase_by_network(np.array([0.1]), np.array([0.02]), 1.0, DT, 60)[0] == pytest.approx(0.12)
    assert advance_phase_by_network(np.array([0.1]), np.array([0.02]), 0.1, 2 * DT, 60)[0] == pytest.approx(0.104)


def test_stand_amount():
    np.testing.assert_allclose(stand_amount([0.0, 0.1, 0.2, 1.0], 0.2), [1.0, 0.5, 0.0, 0.0])
    np.testing.assert_allclose(stand_amount([0.0, 0.1], 0.0), [0.0, 0.0])  # 0 = no stand scaling


# --- skeleton -------------------------------------------------------------------------------------


def test_forward_kinematics_from_global_rotations_matches_the_motion(walk_motion):
    global_rot, global_pos = forward_kinematics(walk_motion.rotations[:20], walk_motion.positions[:20],
                                                walk_motion.parents)
    hips = 1
    positions, _ = forward_kinematics_global(global_rot, global_pos[:, hips], walk_motion.offsets,
                                             walk_motion.parents, hips)
    np.testing.assert_allclose(positions[:, 1:], global_pos[:, 1:], atol=1e-5)  # channels vs OFFSET rounding


def test_rotations_fitted_to_positions_reproduce_the_positions(walk_motion):
    """Start from wrong rotations; after the fit, forward kinematics lands every joint on the mocap's."""
    _, global_pos = forward_kinematics(walk_motion.rotations[:5], walk_motion.positions[:5], walk_motion.parents)
    offsets = walk_motion.positions[0]  # the clip's constant channel values: its exact bone vectors
    rng = np.random.default_rng(1)
    wrong = quat_from_angle_axis(rng.uniform(-3, 3, (5, 22)), rng.normal(size=(5, 22, 3)))
    hips = 1
    fitted = fit_rotations_to_positions(quat_to_matrix(wrong), global_pos, offsets,
                                        rotation_fit(walk_motion.parents, hips))
    positions, _ = forward_kinematics_global(quat_from_matrix(fitted), global_pos[:, hips], offsets, walk_motion.parents, hips,
                                             chain=chain_matrix(walk_motion.parents, hips))
    np.testing.assert_allclose(positions[:, 1:], global_pos[:, 1:], atol=1e-6)


def test_matrix_helpers_agree_with_the_quaternion_module():
    rng = np.random.default_rng(2)
    r6 = rng.normal(size=(5, 6))
    np.testing.assert_allclose(matrices_from_6d(r6), quat_to_matrix(quat_from_6d(r6)), atol=1e-9)
    yaw = rng.uniform(-3, 3, 5)
    np.testing.assert_allclose(yaw_matrices(yaw), quat_to_matrix(quat_from_yaw(yaw)), atol=1e-12)
    u, v = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))
    u[0] = -v[0]  # the opposite case
    turned = np.einsum("nij,nj->ni", matrices_between(u, v), u)
    np.testing.assert_allclose(turned / np.linalg.norm(turned, axis=-1, keepdims=True),
                               v / np.linalg.norm(v, axis=-1, keepdims=True), atol=1e-9)
    np.testing.assert_allclose(np.linalg.det(matrices_between(u, v)), 1.0, atol=1e-9)


# --- the tick ---------------------------------------------------------------------------------------


def drive(character, commands, ticks):
    for index in range(ticks):
        command = commands(index) if callable(commands) else commands
        character.tick(command, DT)
    return character.state


def test_standing_still_with_zero_command_does_not_slide_and_phase_stops(random_checkpoint):
    character = Character(load_checkpoint(random_checkpoint))
    start_phase = character.state.phase.copy()
    state = drive(character, stand_command(), 120)
    np.testing.assert_allclose(state.root_pos, 0.0, atol=1e-12)
    np.testing.assert_allclose(quat_to_yaw(state.root_rot), 0.0, atol=1e-12)
    np.testing.assert_allclose(state.phase, start_phase)
    assert np.isfinite(state.world_joint_pos).all()


def test_walking_moves_along_the_command_and_advances_phase(random_checkpoint):
    checkpoint = load_checkpoint(random_checkpoint)
    character = Character(checkpoint, RuntimeSettings(root_motion_from_command=1.0, walk_speed=1.2))
    command = command_from_world_move([1.0, 0.0], False, character.settings)  # +X
    state = drive(character, command, 240)
    assert state.root_pos[0, 0] > 2.5 and abs(state.root_pos[0, 2]) < 0.3
    np.testing.assert_allclose(state.root_vel[0], [1.2, 0.0], atol=0.01)
    assert quat_to_yaw(state.root_rot)[0] == pytest.approx(np.pi / 2, abs=0.05)
    assert state.timings["tick_ms"] > 0 and state.timings["infer_ms"] > 0
    assert state.world_joint_pos.shape == (1, 22, 3) and np.isfinite(state.world_joint_pos).all()
    np.testing.assert_allclose(np.linalg.norm(state.world_joint_rot, axis=-1), 1.0, atol=1e-9)


def test_scripted_runs_are_deterministic_and_batching_matches_single(random_checkpoint):
    def commands(settings):
        return lambda i: command_from_world_move([np.sin(i / 30), np.cos(i / 30)], i > 60, settings)

    runs = []
    for _ in range(2):
        character = Character(load_checkpoint(random_checkpoint))
        runs.append(drive(character, commands(character.settings), 90))
    for name in ("root_pos", "root_rot", "phase", "world_joint_pos", "world_joint_rot", "contacts"):
        np.testing.assert_array_equal(getattr(runs[0], name), getattr(runs[1], name))
    batched = Character(load_checkpoint(random_checkpoint), batch=3)
    make = commands(batched.settings)
    state = drive(batched, lambda i: [make(i)] * 3, 90)
    for b in range(3):
        np.testing.assert_allclose(state.world_joint_pos[b], runs[0].world_joint_pos[0], atol=1e-4)


def test_torch_and_numpy_paths_agree(random_checkpoint):
    states = []
    for path in ("numpy", "torch"):
        character = Character(load_checkpoint(random_checkpoint), device="cpu", path=path)
        states.append(drive(character, command_from_world_move([0.0, 1.0], False, character.settings), 30))
    np.testing.assert_allclose(states[0].world_joint_pos, states[1].world_joint_pos, atol=1e-3)
    np.testing.assert_allclose(states[0].root_pos, states[1].root_pos, atol=1e-4)


def test_beta_change_reaches_the_model_next_tick(random_checkpoint):
    character = Character(load_checkpoint(random_checkpoint), device="cpu", path="numpy")
    character.settings.beta = 3.5
    character.tick(stand_command(), DT)
    assert character.network.numpy_model.beta == 3.5 and character.network.model.beta == 3.5


def test_foot_locking_pins_a_planted_foot(random_checkpoint):
    settings = RuntimeSettings(lock_release_distance=1.0)
    character = Character(load_checkpoint(random_checkpoint), settings)
    joints = character.network.contact_joints
    state = drive(character, stand_command(), 30)
    pinned = state.lock_active[0]
    assert pinned.any()
    held = state.world_joint_pos[0, joints][pinned]
    state = drive(character, stand_command(), 30)
    still = state.lock_active[0] & pinned
    np.testing.assert_allclose(state.world_joint_pos[0, joints][still], held[still[pinned]], atol=2e-3)


def test_local_pose_rebuilds_the_displayed_pose(random_checkpoint):
    character = Character(load_checkpoint(random_checkpoint))
    state = drive(character, command_from_world_move([0.3, 0.8], False, character.settings), 20)
    local_rot, root_translation = local_pose(state, character.skeleton)
    skeleton = character.skeleton
    translations = np.broadcast_to(np.asarray(skeleton["offsets"]), local_rot.shape[:-1] + (3,)).copy()
    translations[:, 0] = root_translation
    _, positions = forward_kinematics(local_rot, translations, skeleton["parents"])
    np.testing.assert_allclose(positions, state.world_joint_pos, atol=1e-9)


def test_reset_and_swap_model_keep_the_character_in_place(random_checkpoint):
    character = Character(load_checkpoint(random_checkpoint))
    drive(character, command_from_world_move([0.0, 1.0], False, character.settings), 60)
    before = dataclasses.replace(character.state)
    character.swap_model(load_checkpoint(random_checkpoint))
    np.testing.assert_allclose(character.state.root_pos, before.root_pos)
    np.testing.assert_allclose(character.state.phase, before.phase)
    character.tick(command_from_world_move([0.0, 1.0], False, character.settings), DT)
    character.reset(positions=[[2.0, 3.0]], yaws=[np.pi / 2])
    np.testing.assert_allclose(character.state.root_pos, [[2.0, 0.0, 3.0]])
    np.testing.assert_allclose(character.state.root_rot, quat_from_yaw([np.pi / 2]), atol=1e-12)


def test_never_varying_input_features_are_held_at_their_training_value(random_checkpoint):
    checkpoint = load_checkpoint(random_checkpoint)
    network = Character(checkpoint, settle_ticks=0, device="cpu", path="numpy").network
    layout = network.x_layout
    # The current trajectory sample is always the root itself in the data: std at the floor.
    current = layout.slice("traj_pos").start + 2 * (len(features.TRAJ_OFFSETS) // 2)
    assert network.constant_inputs[current] and network.constant_inputs[current + 1]
    x = np.tile(network.norm_np["x_mean"].astype(float), (2, 1))
    x[1, network.constant_inputs] += 0.05  # 5 cm off: 50 standard deviations
    y = network.predict(x, np.array([0.3, 0.3]))
    np.testing.assert_allclose(y[0], y[1], atol=1e-6)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_and_cpu_give_the_same_motion(random_checkpoint):
    states = []
    for device, path in (("cpu", "numpy"), ("cuda", "torch")):
        character = Character(load_checkpoint(random_checkpoint, device=device), device=device, path=path)
        assert character.network.device.type == device
        states.append(drive(character, command_from_world_move([0.0, 1.0], False, character.settings), 60))
    np.testing.assert_allclose(states[0].world_joint_pos, states[1].world_joint_pos, atol=1e-3)


@pytest.mark.skipif(not DEFAULT_MODEL.exists(), reason="shipped model not present")
def test_half_stick_walk_on_the_shipped_model_plants_its_feet():
    """The data has no slow walks; a half-stick walk must still plant its feet (issue 4): mean foot
    speed over contact frames (the network's contact output > threshold) below the mocap's 6.5 cm/s."""
    checkpoint = load_checkpoint(DEFAULT_MODEL)
    settings = RuntimeSettings.from_checkpoint_meta(checkpoint.meta)
    character = Character(checkpoint, settings)
    command = command_from_world_move(np.array([0.0, 0.5]), False, settings)
    feet, contact = [], []
    for _ in range(240):
        state = character.tick(command, DT)
        feet.append(state.world_joint_pos[0, character.network.contact_joints])
        contact.append(state.contacts[0] > settings.contact_threshold)
    feet, contact = np.array(feet)[60:], np.array(contact)[60:]  # after the start-up second
    speed = np.linalg.norm(np.diff(feet[..., [0, 2]], axis=0), axis=-1) / DT
    both = contact[1:] & contact[:-1]
    assert 0.3 < both.mean() < 0.8  # the feet take turns (the network no longer holds all four down)
    assert speed[both].mean() < 0.065
    root_speed = np.linalg.norm(np.diff(state.traj_past_pos[0, -31:, [0, 2]].T, axis=0), axis=-1).mean() / DT
    assert root_speed == pytest.approx(0.5 * settings.walk_speed, rel=0.1)
