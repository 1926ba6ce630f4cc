import dataclasses
import logging
from pathlib import Path

import numpy as np
import pytest
import torch

from pfnn_core.evaluation import measures
from pfnn_core.features.contract import TRAJ_OFFSETS
from pfnn_core.math.quat import quat_from_yaw, quat_to_yaw, wrap_angle
from pfnn_core.models.checkpoint import save_checkpoint
from pfnn_core.models.pfnn.model import PFNN, ModelConfig
from pfnn_core.models.registry import load_checkpoint
from pfnn_core.motion.kinematics import forward_kinematics
from pfnn_core.runtime import tick as tick_module
from pfnn_core.runtime.character import Character
from pfnn_core.runtime.command import CommandBatch, command_from_world_move, stand_command
from pfnn_core.runtime.settings import RuntimeSettings
from pfnn_core.runtime.state import local_pose, placed
from pfnn_core.runtime.tick import step

DT = 1.0 / 60.0
DEFAULT_MODEL = Path(__file__).resolve().parents[1] / "assets" / "models" / "default.safetensors"
shipped = pytest.mark.skipif(not DEFAULT_MODEL.exists(), reason="shipped model not present")


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


@shipped
def test_the_shipped_model_walks_where_it_is_told_with_planted_feet():
    """Default settings (root motion half the network's): 4 s of walking toward +X."""
    character = Character(load_checkpoint(DEFAULT_MODEL))
    command = command_from_world_move([1.0, 0.0], False, character.settings)  # +X
    positions, feet = [], []
    for _ in range(240):
        state = character.tick(command, DT)
        positions.append(state.root_pos[0, [0, 2]].copy())
        feet.append(state.world_joint_pos[0, character.model.contact_joints][:, [0, 2]].copy())
    positions, feet = np.array(positions[120:]), np.array(feet[120:])
    velocity = (positions[-1] - positions[0]) / (len(positions) - 1) / DT
    assert np.linalg.norm(velocity) == pytest.approx(character.settings.walk_speed, rel=0.1)
    assert abs(np.degrees(np.arctan2(velocity[1], velocity[0]))) < 5.0
    assert quat_to_yaw(state.root_rot)[0] == pytest.approx(np.pi / 2, abs=np.radians(8))
    speed = np.linalg.norm(np.diff(feet, axis=0), axis=-1) / DT  # [T, 4] contact joints
    assert np.all((speed < 0.1).mean(axis=0) > 0.25)  # every foot joint spends a quarter of the walk planted
    assert np.all(speed.max(axis=0) > 2.0)  # and swings


def test_a_walking_tick_has_the_state_the_viewer_reads(random_checkpoint):
    checkpoint = load_checkpoint(random_checkpoint)
    character = Character(checkpoint, RuntimeSettings(root_motion_from_command=1.0, walk_speed=1.2))
    command = command_from_world_move([1.0, 0.0], False, character.settings)  # +X
    state = drive(character, command, 240)
    assert state.timings["tick_ms"] > 0 and state.timings["infer_ms"] > 0
    assert state.world_joint_pos.shape == (1, 22, 3) and np.isfinite(state.world_joint_pos).all()
    np.testing.assert_allclose(np.linalg.norm(state.world_joint_rot, axis=-1), 1.0, atol=1e-9)
    # the trajectory history holds the last second of root positions, newest last
    np.testing.assert_allclose(state.traj_past_pos[0, -1], state.root_pos[0])
    assert state.traj_past_pos.shape == (1, 61, 3) and np.all(np.diff(state.traj_past_pos[0, :, 0]) > 0)


def test_scripted_runs_are_deterministic_and_batching_matches_single(random_checkpoint):
    def commands(settings):
        return lambda i: command_from_world_move([np.sin(i / 30), np.cos(i / 30)], i > 60, settings)

    runs = []
    for _ in range(2):
        character = Character(load_checkpoint(random_checkpoint))
        runs.append(drive(character, commands(character.settings), 90))
    for name in ("root_pos", "root_rot", "phase", "world_joint_pos", "world_joint_rot", "contacts"):
        np.testing.assert_array_equal(getattr(runs[0], name), getattr(runs[1], name))
    batched = Character(load_checkpoint(random_checkpoint), batch=3, positions=[[0, 0], [5, 0], [0, 5]])
    make = commands(batched.settings)
    state = drive(batched, lambda i: CommandBatch.of([make(i)] * 3, 3), 90)
    for b, offset in enumerate(([0, 0, 0], [5, 0, 0], [0, 0, 5])):
        np.testing.assert_allclose(state.world_joint_pos[b] - offset, runs[0].world_joint_pos[0], atol=1e-4)


def test_stepping_one_state_twice_gives_the_same_tick(random_checkpoint):
    character = Character(load_checkpoint(random_checkpoint))
    walk = command_from_world_move([0.0, 1.0], False, character.settings)
    state = drive(character, walk, 10)
    first = step(state, walk, character.settings, DT, character.model)
    other = step(state, stand_command(), character.settings, DT, character.model)  # a branch
    again = step(state, walk, character.settings, DT, character.model)
    for name in ("world_joint_pos", "traj_past_pos", "root_pos"):
        np.testing.assert_array_equal(getattr(first, name), getattr(again, name))
    assert not np.array_equal(first.traj_past_pos, other.traj_past_pos)


def test_torch_and_numpy_paths_agree(random_checkpoint):
    states = []
    for path in ("numpy", "torch"):
        character = Character(load_checkpoint(random_checkpoint), device="cpu", backend=path)
        states.append(drive(character, command_from_world_move([0.0, 1.0], False, character.settings), 30))
    np.testing.assert_allclose(states[0].world_joint_pos, states[1].world_joint_pos, atol=1e-3)
    np.testing.assert_allclose(states[0].root_pos, states[1].root_pos, atol=1e-4)


def test_beta_change_reaches_the_model_next_tick_within_the_models_range(random_checkpoint):
    character = Character(load_checkpoint(random_checkpoint), device="cpu", backend="numpy")
    assert character.setting_limits["beta"] == (4.0, 16.0)  # trained at 8
    character.settings.beta = 5.5
    character.tick(stand_command(), DT)
    assert character.model.folded.beta == 5.5 and character.model.model.beta == 5.5
    character.settings.beta = 64.0
    character.tick(stand_command(), DT)
    assert character.settings.beta == 16.0 and character.model.model.beta == 16.0
    assert any("beta" in message and "16" in message for message in character.take_messages())


def test_foot_locking_pins_a_planted_foot(random_checkpoint):
    settings = RuntimeSettings(lock_release_distance=1.0)
    character = Character(load_checkpoint(random_checkpoint), settings)
    joints = character.model.contact_joints
    state = drive(character, stand_command(), 30)
    pinned = state.locks.active[0]
    assert pinned.any()
    held = state.world_joint_pos[0, joints][pinned]
    state = drive(character, stand_command(), 30)
    still = state.locks.active[0] & pinned
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


# The bundled mocap's standing stance (contact joints relative to the hips, body frame) and floor levels,
# as training stores them in a checkpoint (`meta["stance"]`, `meta["floor_heights"]`).
STANCE = [[0.0882, 0.1174, -0.0669], [0.0964, 0.0425, 0.0232], [-0.0684, 0.1175, -0.0759], [-0.0744, 0.0426, 0.0144]]
FLOOR = [0.1178, 0.0438, 0.1209, 0.0451]


@pytest.fixture(scope="module")
def stance_checkpoint(walk_motion, tmp_path_factory):
    from tests.conftest import make_random_checkpoint

    return make_random_checkpoint(walk_motion, tmp_path_factory.mktemp("stance") / "stance.safetensors",
                                  extra_meta={"stance": {"positions": STANCE}, "floor_heights": FLOOR})


@pytest.mark.parametrize("settling", [False, True])
def test_a_settled_state_moved_elsewhere_equals_settling_there(random_checkpoint, stance_checkpoint, settling):
    checkpoint = load_checkpoint(stance_checkpoint if settling else random_checkpoint)
    here = Character(checkpoint)
    assert here.state.settle.active[0] == settling
    command = command_from_world_move([0.0, 1.0], False, here.settings)
    turned = command_from_world_move([np.sin(2.0), np.cos(2.0)], False, here.settings)
    if settling:  # stopped mid-step: the settling state (the step's start, pins, offsets) moves along too
        drive(here, command, 40)
        drive(here, stand_command(), 5)
        assert here.state.settle.foot[0] >= 0
        command = turned = stand_command()
    turn = np.array([[np.cos(2.0), 0, -np.sin(2.0)], [0, 1, 0], [np.sin(2.0), 0, np.cos(2.0)]])
    there = placed(here.state, [[3.0, -2.0]], [2.0])
    np.testing.assert_allclose(there.world_joint_pos, here.state.world_joint_pos @ turn + [3.0, 0.0, -2.0], atol=1e-12)
    np.testing.assert_allclose(there.locks.target, here.state.locks.target @ turn + [3.0, 0.0, -2.0], atol=1e-12)
    np.testing.assert_allclose(there.settle.start, here.state.settle.start @ turn + [3.0, 0.0, -2.0], atol=1e-12)
    np.testing.assert_allclose(there.locks.offset, here.state.locks.offset @ turn, atol=1e-12)
    np.testing.assert_allclose(quat_to_yaw(there.root_rot), wrap_angle(quat_to_yaw(here.state.root_rot) + 2.0))
    # Both then go on the same way relative to their own facing.
    state_a, state_b = here.state, there
    for _ in range(30):
        state_a = step(state_a, command, here.settings, DT, here.model)
        state_b = step(state_b, turned, here.settings, DT, here.model)
    # (the placement node above the hips hangs unturned by its offset: not part of the body)
    body = here.model.plan.body
    local_a = (state_a.world_joint_pos[:, body] - state_a.root_pos[:, None]) @ turn
    np.testing.assert_allclose(local_a, state_b.world_joint_pos[:, body] - state_b.root_pos[:, None], atol=1e-6)


@shipped
def test_a_stop_settles_both_feet_in_the_mocaps_stance_within_a_second(tmp_path):
    """Walk, then let go of the stick: within 1 s both feet are planted and still on their floor levels,
    in the mocap's standing stance under the hips, with no foot left hanging and no pose pop (judged by
    the evaluation's own measures)."""
    shipped_model = load_checkpoint(DEFAULT_MODEL)
    meta = {**shipped_model.meta, "stance": {"positions": STANCE}, "floor_heights": FLOOR}
    checkpoint = load_checkpoint(save_checkpoint(tmp_path / "stance.safetensors", shipped_model.model,
                                                 shipped_model.layout, shipped_model.norm, meta))
    character = Character(checkpoint)
    network = character.model
    drive(character, command_from_world_move([0.6, 0.8], False, character.settings), 100)  # stopped mid-stride
    poses = np.array([character.tick(stand_command(), DT).world_joint_pos[0].copy() for _ in range(90)])
    feet = poses[:, network.contact_joints]
    assert measures.settle_time(feet, FLOOR, DT, 0) <= 1.0
    one_second = slice(60, 61)
    stance = measures.stance_error(feet[one_second], poses[one_second], network.names, network.parents, STANCE)
    assert stance.max() <= 0.05
    assert not measures.floating_feet(feet, FLOOR, DT)[0].any()
    assert not measures.pose_pops(poses[::2]).any()  # at the mocap's 30 Hz
    steps = character.state.settle.steps[0]
    assert 1 <= steps <= 3


@pytest.mark.parametrize("foot_locking", [True, False])
def test_a_released_stick_hands_the_root_to_the_command_only_where_settling_steps_run(monkeypatch, foot_locking):
    """The root follows the command spring alone after a stop only for characters that take settling
    steps; with foot locking off (no steps) the network's own motion keeps its share."""

    seen = []
    original = tick_module.root_motion
    monkeypatch.setattr(tick_module, "root_motion", lambda *args, **kw: seen.append(np.array(args[12])) or original(*args, **kw))
    checkpoint = load_checkpoint(DEFAULT_MODEL)
    settings = RuntimeSettings.for_model(checkpoint.card)
    settings.foot_locking = foot_locking
    character = Character(checkpoint, settings)
    drive(character, command_from_world_move([0.0, 1.0], False, settings), 30)
    seen.clear()
    for _ in range(10):
        character.tick(stand_command(), DT)
    assert np.concatenate(seen).all() == foot_locking and np.concatenate(seen).any() == foot_locking


def test_the_stride_scale_sets_the_cadence_at_a_given_speed():
    """Speed-based phase: cycles per second = speed / (stride_scale x the mocap's stride); halving the
    scale doubles the cadence at the same root speed. The root's speed held steady (the contact root off:
    following the feet it varies within each step, and the stride length depends on the speed)."""
    checkpoint = load_checkpoint(DEFAULT_MODEL)
    cycles, speeds = [], []
    for scale in (1.0, 0.5):
        settings = RuntimeSettings.for_model(checkpoint.card)
        settings.stride_scale, settings.root_from_contacts = scale, 0.0
        character = Character(checkpoint, settings)
        command = command_from_world_move([0.0, 1.0], False, settings)
        drive(character, command, 90)
        start, turns, previous = character.state.root_pos[0].copy(), 0.0, character.state.phase[0]
        for _ in range(120):
            phase = character.tick(command, DT).phase[0]
            turns += (phase - previous) % 1.0
            previous = phase
        cycles.append(turns)
        speeds.append(np.linalg.norm((character.state.root_pos[0] - start)[[0, 2]]) / (120 * DT))
    assert speeds[1] == pytest.approx(speeds[0], rel=0.03)  # the root moves as commanded either way
    assert cycles[1] / cycles[0] == pytest.approx(2.0, rel=0.05)


def test_never_varying_input_features_are_held_at_their_training_value(random_checkpoint):
    checkpoint = load_checkpoint(random_checkpoint)
    network = Character(checkpoint, settle_ticks=0, device="cpu", backend="numpy").model
    layout = network.x_layout
    # The current trajectory sample is always the root itself in the data: std at the floor.
    current = layout.slice("traj_pos").start + 2 * (len(TRAJ_OFFSETS) // 2)
    assert network.constant_inputs[current] and network.constant_inputs[current + 1]
    x = np.tile(network.norm_np["x_mean"].astype(float), (2, 1))
    x[1, network.constant_inputs] += 0.05  # 5 cm off: 50 standard deviations
    y = network.predict(x, np.array([0.3, 0.3]))
    np.testing.assert_allclose(y[0], y[1], atol=1e-6)


def test_the_bare_network_preset_moves_the_root_by_the_networks_own_prediction(random_checkpoint):
    checkpoint = load_checkpoint(random_checkpoint)
    settings = RuntimeSettings.bare_network(checkpoint.card)
    character = Character(checkpoint, settings)
    command = command_from_world_move([0.4, 0.9], False, settings)
    state = drive(character, command, 20)
    yaw, root, phase = quat_to_yaw(state.root_rot)[0], state.root_pos[0].copy(), state.phase.copy()
    predict, outputs = character.model.predict, []

    def recorded(*args, **kwargs):
        outputs.append(predict(*args, **kwargs))
        return outputs[-1]

    character.model.predict = recorded
    new = character.tick(command, DT)
    y = character.model.y_layout.unpack(outputs[0])
    local = y["root_vel"][0]
    world = np.array([np.cos(yaw) * local[0] + np.sin(yaw) * local[1], -np.sin(yaw) * local[0] + np.cos(yaw) * local[1]])
    np.testing.assert_allclose(new.root_vel[0], world, atol=1e-12)
    np.testing.assert_allclose(new.root_pos[0], root + np.array([world[0], 0.0, world[1]]) * DT, atol=1e-12)
    assert new.root_yaw_rate[0] == pytest.approx(y["root_yaw_rate"][0, 0], abs=1e-12)
    assert quat_to_yaw(new.root_rot)[0] == pytest.approx(yaw + y["root_yaw_rate"][0, 0] * DT, abs=1e-9)
    expected_phase = (phase + np.clip(y["dphase"][:, 0], 0.0, 0.5) * DT * 60.0) % 1.0
    np.testing.assert_allclose(new.phase, expected_phase, atol=1e-12)
    # No locks, IK, floor or smoothing: the fed-back pose is the network's own.
    assert not new.locks.active.any() and np.all(new.locks.weight == 0.0)
    np.testing.assert_array_equal(new.joint_pos, y["joint_pos"])


def test_the_floor_comes_from_the_checkpoint_or_the_settled_pose_with_a_warning(walk_motion, tmp_path, caplog):
    from tests.conftest import make_random_checkpoint

    stored = make_random_checkpoint(walk_motion, tmp_path / "floor.safetensors",
                                    extra_meta={"floor_heights": [0.117, 0.043, 0.118, 0.044]})
    with caplog.at_level(logging.WARNING, logger="pfnn_core.runtime"):
        character = Character(load_checkpoint(stored))
    assert "floor_heights" not in caplog.text
    np.testing.assert_allclose(character.model.floor_heights, [0.117, 0.043, 0.118, 0.044])
    state = drive(character, command_from_world_move([0.0, 1.0], False, character.settings), 60)
    heights = state.world_joint_pos[0, character.model.contact_joints, 1]
    assert np.all(heights >= np.array([0.117, 0.043, 0.118, 0.044]) - 1e-3)

    caplog.clear()
    old = make_random_checkpoint(walk_motion, tmp_path / "old.safetensors")
    with caplog.at_level(logging.WARNING, logger="pfnn_core.runtime"):
        character = Character(load_checkpoint(old))
    assert "no floor_heights" in caplog.text
    settled = character.state.world_joint_pos[0, character.model.contact_joints, 1]
    np.testing.assert_allclose(character.model.floor_heights, settled, atol=1e-9)


def test_a_runaway_tick_resets_the_character_where_it_stood_and_is_reported(random_checkpoint):
    character = Character(load_checkpoint(random_checkpoint), RuntimeSettings(root_motion_from_command=1.0),
                          batch=2, positions=[[0.0, 0.0], [4.0, 0.0]])
    walk = command_from_world_move([0.0, 1.0], False, character.settings)
    drive(character, walk, 30)
    where = character.state.root_pos.copy()
    character.settings.traj_halflife_pos = 0.5
    predict = character.model.predict

    def broken(x, phase, style=None, mode="exact"):
        y = predict(x, phase, style, mode)
        y[1, :] = np.nan  # the second character's network output turns to NaN
        return y

    character.model.predict = broken
    state = character.tick(walk, DT)
    character.model.predict = predict
    assert np.isfinite(state.world_joint_pos).all() and np.isfinite(state.joint_pos).all()
    np.testing.assert_allclose(state.root_pos[1], where[1], atol=1e-12)  # back where it stood, standing
    assert state.root_pos[0, 2] > where[0, 2]  # the other one walked on
    fault = character.faults[-1]
    assert fault.characters == [1] and "not finite" in fault.what
    assert "traj_halflife_pos" in fault.message and "last changed" in fault.message
    assert character.take_messages() and not character.take_messages()
    state = drive(character, walk, 30)  # and it keeps running
    assert np.isfinite(state.world_joint_pos).all() and state.root_pos[1, 2] > where[1, 2] + 0.05


def test_a_runaway_root_speed_is_a_fault(random_checkpoint):
    # the contact root off: it would take the root from the random network's contact feet instead
    character = Character(load_checkpoint(random_checkpoint),
                          RuntimeSettings(root_motion_from_command=0.0, root_from_contacts=0.0))
    predict = character.model.predict
    slice_ = character.model.y_layout.slice("root_vel")

    def racing(x, phase, style=None, mode="exact"):
        y = predict(x, phase, style, mode)
        y[:, slice_] = 100.0
        return y

    character.model.predict = racing
    state = character.tick(command_from_world_move([0.0, 1.0], False, character.settings), DT)
    assert "root speed" in character.faults[-1].what and np.abs(state.root_pos).max() < 1e-6


def test_style_weights_are_carried_per_character(walk_motion, random_checkpoint, tmp_path):
    plain = Character(load_checkpoint(random_checkpoint), batch=2)
    assert plain.state.style.shape == (2, 0)
    with pytest.raises(ValueError, match="no style input"):
        plain.set_style([1.0])

    base = load_checkpoint(random_checkpoint)
    torch.manual_seed(3)
    model = PFNN(ModelConfig(**{**base.config.to_dict(), "num_styles": 2}))
    with torch.no_grad():
        for layer in model.layers:
            layer.weight.normal_(0.0, 0.2)
    path = save_checkpoint(tmp_path / "styles.safetensors", model, base.layout, base.norm,
                           {**base.meta, "styles": {"names": ["elderly", "normal"], "stats": {}}})
    character = Character(load_checkpoint(path), batch=2)
    np.testing.assert_array_equal(character.state.style, [[0.0, 1.0], [0.0, 1.0]])  # "normal" by default
    character.set_style("elderly")
    np.testing.assert_array_equal(character.state.style, [[1.0, 0.0], [1.0, 0.0]])
    assert character.style_name() == "elderly"
    character.set_style([[1.0, 0.0], [0.25, 0.75]])
    state = drive(character, stand_command(), 5)
    np.testing.assert_array_equal(state.style, [[1.0, 0.0], [0.25, 0.75]])
    assert np.abs(state.world_joint_pos[0] - state.world_joint_pos[1]).max() > 1e-3  # different styles, poses
    for bad, message in (([0.5, 0.6], "sum to 1"), ("angry", "unknown style"), ([[1.0, 0.0, 0.0]], "shape")):
        with pytest.raises(ValueError, match=message):
            character.set_style(bad)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_and_cpu_give_the_same_motion(random_checkpoint):
    states = []
    for device, path in (("cpu", "numpy"), ("cuda", "torch")):
        character = Character(load_checkpoint(random_checkpoint, device=device), device=device, backend=path)
        assert character.model.device.type == device
        states.append(drive(character, command_from_world_move([0.0, 1.0], False, character.settings), 60))
    np.testing.assert_allclose(states[0].world_joint_pos, states[1].world_joint_pos, atol=1e-3)


@shipped
def test_half_stick_walk_on_the_shipped_model_plants_its_feet():
    """The data has no slow walks; a half-stick walk must still plant its feet (issue 4): mean foot
    speed over contact frames (the network's contact output > threshold) below the mocap's 6.5 cm/s."""
    checkpoint = load_checkpoint(DEFAULT_MODEL)
    settings = RuntimeSettings.for_model(checkpoint.card)
    character = Character(checkpoint, settings)
    command = command_from_world_move(np.array([0.0, 0.5]), False, settings)
    feet, contact = [], []
    for _ in range(240):
        state = character.tick(command, DT)
        feet.append(state.world_joint_pos[0, character.model.contact_joints])
        contact.append(state.contacts[0] > settings.contact_threshold)
    feet, contact = np.array(feet)[60:], np.array(contact)[60:]  # after the start-up second
    speed = np.linalg.norm(np.diff(feet[..., [0, 2]], axis=0), axis=-1) / DT
    both = contact[1:] & contact[:-1]
    assert 0.3 < both.mean() < 0.8  # the feet take turns (the network no longer holds all four down)
    assert speed[both].mean() < 0.065
    root_speed = np.linalg.norm(np.diff(state.traj_past_pos[0, -31:, [0, 2]].T, axis=0), axis=-1).mean() / DT
    assert root_speed == pytest.approx(0.5 * settings.walk_speed, rel=0.1)


@shipped
@pytest.mark.parametrize("name, value", [("beta", "64"), ("drift_window", "0"), ("traj_halflife_pos", "2")])
def test_extreme_settings_on_the_shipped_model_stay_finite_with_feet_on_the_floor(name, value):
    checkpoint = load_checkpoint(DEFAULT_MODEL)
    settings = RuntimeSettings.for_model(checkpoint.card)
    character = Character(checkpoint, settings)
    settings.assign(name, value)
    floor = character.model.floor_heights
    script = [([0.0, 1.0], False)] * 90 + [([1.0, 0.0], True)] * 90 + [([0.0, 0.0], False)] * 60
    lowest = np.full(4, np.inf)
    for move, run in script:
        state = character.tick(command_from_world_move(move, run, settings), DT)
        assert np.isfinite(state.world_joint_pos).all()
        lowest = np.minimum(lowest, state.world_joint_pos[0, character.model.contact_joints, 1])
    assert np.all(lowest >= floor - 1e-3)
    # the body stays with the character (a placement node above the hips hangs by the take's offset,
    # 4.5 m to the side in dataset 1's files: not part of the body)
    body = measures.body_joints(checkpoint.meta["skeleton"]["names"], checkpoint.meta["skeleton"]["parents"])
    assert np.abs(state.world_joint_pos[0, body][:, [0, 2]] - state.root_pos[0, [0, 2]]).max() < 1.5
    assert not character.faults


@shipped
def test_a_walk_start_on_the_shipped_model_steps_instead_of_dragging_its_feet():
    """The data has no starts: shown a standing past the network keeps its feet down for about a second
    while the root leaves, and the pinned feet were dragged along the floor. With start priming and
    catch-up steps the first 2 s of a walk from standing skate (the evaluation's measure, against the
    capture's floor) no more than 1.3x the mocap's own walks (0.23 m/s, docs/EVALUATION.md); with both
    off, as before, they skate far more."""
    checkpoint = load_checkpoint(DEFAULT_MODEL)

    def start_skating(priming, catch_up):
        settings = RuntimeSettings.for_model(checkpoint.card)
        settings.start_priming, settings.catch_up_steps = priming, catch_up
        character, feet = Character(checkpoint, settings), []
        for tick in range(150):
            move = [0.0, 1.0] if tick >= 30 else [0.0, 0.0]
            state = character.tick(command_from_world_move(move, False, settings), DT)
            feet.append(state.world_joint_pos[0, character.model.contact_joints].copy())
        return measures.foot_skating(np.array(feet)[30::2], character.model.floor_heights, 2 * DT).mean()

    now, before = start_skating(1.0, True), start_skating(0.0, False)
    assert now < 1.3 * 0.23
    assert before > 1.3 * 0.23 and now < 0.7 * before


@shipped
def test_a_run_slowed_to_a_walk_on_the_shipped_model_stops_taking_run_strides():
    """With a second of running still in the past it sees, the network took run strides, both feet off
    the floor, at walking speeds after the run was released (the data's runs slow to walks within a
    stride). 3 s of a run at full stick, then a walk at 0.7 of it: over the walk's first 2 s, the
    frames with both feet more than 2 cm above their floor level (the evaluation's measure) while the
    root moves at walking speed (under 1.6 m/s, where the gait labels' run fades in). With `walk_past_after_run` the largest such
    lift is under 2 cm (none); without it a flight of more than 4 cm shows."""
    checkpoint = load_checkpoint(DEFAULT_MODEL)

    def walking_flight(on):
        settings = dataclasses.replace(RuntimeSettings.for_model(checkpoint.card), walk_past_after_run=on)
        character, lifts = Character(checkpoint, settings), []
        floor = character.model.floor_heights
        before = None
        for tick in range(300):
            move = [1.0 if tick < 180 else 0.7, 0.0]
            state = character.tick(command_from_world_move(move, tick < 180, settings), DT)
            root = state.root_pos[0, [0, 2]].copy()
            speed = np.inf if before is None else np.linalg.norm(root - before) / DT
            before = root
            lift = (state.world_joint_pos[0, character.model.contact_joints, 1] - floor).min()
            if tick >= 180 and speed < 1.6 and lift > measures.AIRBORNE_HEIGHT:
                lifts.append(lift)
        return max(lifts, default=0.0)

    assert walking_flight(False) > 0.04
    assert walking_flight(True) < 0.02


def _strafe(checkpoint, move, **settings_values):
    """4 s of the shipped model strafing `move` (facing +Z) after 0.5 s standing: the contact joints."""
    settings = dataclasses.replace(RuntimeSettings.for_model(checkpoint.card), **settings_values)
    character, feet = Character(checkpoint, settings), []
    for tick in range(270):
        command = command_from_world_move(move if tick >= 30 else [0.0, 0.0], False, settings, facing=[0.0, 1.0])
        feet.append(character.tick(command, DT).world_joint_pos[0, character.model.contact_joints].copy())
    return np.array(feet), character.model.floor_heights


@shipped
@pytest.mark.slow
@pytest.mark.parametrize("move", [(1.0, 0.0), (0.0, -1.0)], ids=["side-steps", "backwards"])
def test_side_steps_and_backward_walks_on_the_shipped_model_lift_their_swinging_feet(move):
    """The network's side-steps and backward walks (seconds of mocap per style) drag the swinging foot
    along the floor with its contact output off, where no pin can hold it: 4 s of either skated at
    ~0.37 m/s (the evaluation's measure against the capture's floor), over 1.3x the mocap's side-steps
    (0.15) and backward walks (0.20). Holding the swinging toe `swing_clearance` up, both feet at once if
    need be (`one_foot_down` off), brings both under it. (The root from the contact feet, off here, takes
    a backward walk under it on its own: 0.23 m/s without the clearance.)"""
    checkpoint = load_checkpoint(DEFAULT_MODEL)

    def skating(clearance):
        feet, floor = _strafe(checkpoint, move, swing_clearance=clearance, one_foot_down=False,
                              root_from_contacts=0.0)
        return measures.foot_skating(feet[90::2], floor, 2 * DT).mean()

    mocap = 0.15 if move[0] else 0.20
    assert skating(0.0) > 1.3 * mocap
    assert skating(0.03) < 1.3 * mocap


@shipped
@pytest.mark.slow
def test_the_shipped_models_side_steps_skate_less_with_the_root_from_the_contact_feet():
    """Side-steps are where a model's root and feet disagreed most (its root velocity carried the planted
    foot sideways): 4 s of side-steps on the shipped model, the evaluation's skating at the capture's
    floor, the runtime with and without the contact root (`runtime.contact_root`)."""
    checkpoint = load_checkpoint(DEFAULT_MODEL)

    def skating(amount):
        feet, floor = _strafe(checkpoint, (1.0, 0.0), root_from_contacts=amount)
        return measures.foot_skating(feet[90:], floor, DT).mean()

    without, with_root = skating(0.0), skating(1.0)
    assert with_root < 0.8 * without, (without, with_root)


@shipped
@pytest.mark.slow
def test_one_foot_down_keeps_side_steps_from_hovering():
    """Lifting swinging feet and taking catch-up steps whatever the other foot does took both feet off the
    floor (every contact joint more than 2 cm up) in a share of the side-steps' frames; the mocap's own
    side-steps: none. With `one_foot_down` a foot rises only while the other stands."""
    checkpoint = load_checkpoint(DEFAULT_MODEL)
    shares = {}
    for on in (False, True):
        feet, floor = _strafe(checkpoint, (1.0, 0.0), one_foot_down=on)
        shares[on] = measures.both_feet_up(feet[60:], floor).mean()
    assert shares[False] > 0.02 and shares[True] <= 0.01


@shipped
@pytest.mark.parametrize("style", ["normal", "feminine"])
def test_a_steady_walk_on_the_shipped_model_lifts_its_heels_instead_of_stepping_early(style):
    """At the end of a stance the pinned trailing foot runs out of the leg's reach: the whole foot used to
    leave the floor early in a catch-up step, at nearly every step (normal 3.5, feminine 7 joint releases
    into catch-up steps per second). Now the heel turns up about the held toe (a toe-off): no catch-up
    steps in a steady walk, and the feet are down longer. (`one_foot_down` off: it would hold back some of
    those catch-up steps itself, hiding what the toe-off does.)"""
    checkpoint = load_checkpoint(DEFAULT_MODEL)

    def walk(heel_off):
        settings = RuntimeSettings.for_model(checkpoint.card)
        settings.one_foot_down = False
        character = Character(checkpoint, settings)
        character.set_style(style)
        settings.apply_style(checkpoint.card, character.state.style[0])
        if not heel_off:
            original = tick_module.place_feet
            tick_module.place_feet = lambda *a, **k: original(*a, **{**k, "heel_off": np.zeros(1, bool)})
        try:
            steps, feet, before = 0, [], np.zeros(4, bool)
            for tick in range(420):
                state = character.tick(command_from_world_move([0.0, 1.0] if tick >= 60 else [0.0, 0.0], False,
                                                               settings), DT)
                if tick >= 180:
                    steps += int((state.locks.stepping[0] & ~before).sum())
                    feet.append(state.world_joint_pos[0, character.model.contact_joints].copy())
                before = state.locks.stepping[0].copy()
        finally:
            if not heel_off:
                tick_module.place_feet = original
        return steps, measures.foot_skating(np.array(feet)[::2], character.model.floor_heights, 2 * DT).ground_share()

    steps_now, down_now = walk(True)
    steps_before, down_before = walk(False)
    assert steps_before >= 8 and steps_now == 0
    assert down_now > down_before + 0.03


@shipped
def test_a_stop_lets_a_lifted_foot_down_without_a_one_frame_drop():
    """Stopping a side-step with a foot 2.4 cm above the floor: the settling steps pinned it where it was
    shown and snapped it onto the floor in one frame (found by a visual review). Now it comes down at the
    landing speed: no contact joint drops more than 1.5 cm in a frame over the stop's first 0.6 s."""
    checkpoint = load_checkpoint(DEFAULT_MODEL)
    settings = RuntimeSettings.for_model(checkpoint.card)
    character = Character(checkpoint, settings)
    heights = []
    for tick in range(456):
        t = tick * DT
        move = [0.0, 0.0] if t < 1.0 or t >= 7.0 else ([1.0, 0.0] if t < 4.0 else [-1.0, 0.0])
        state = character.tick(command_from_world_move(move, False, settings, facing=[0.0, 1.0]), DT)
        if t >= 6.9:
            heights.append(state.world_joint_pos[0, character.model.contact_joints, 1].copy())
    drops = -np.diff(np.array(heights), axis=0)
    assert drops.max() < 0.015
