import numpy as np
import pytest

from pfnn_core.runtime.command import command_from_stick, command_from_world_move, full_stick_speed, stick_from_keys
from pfnn_core.runtime.settings import RuntimeSettings


def test_stick_from_keys():
    np.testing.assert_allclose(stick_from_keys(True, False, False, False), [0, 1])
    np.testing.assert_allclose(stick_from_keys(False, False, True, False), [-1, 0])
    np.testing.assert_allclose(stick_from_keys(True, True, False, False), [0, 0])
    diagonal = stick_from_keys(True, False, False, True)
    np.testing.assert_allclose(diagonal, [np.sqrt(0.5), np.sqrt(0.5)])


def test_forward_stick_at_yaw_zero_moves_along_plus_z_at_walk_speed():
    settings = RuntimeSettings(walk_speed=1.2, run_speed=3.0)
    command = command_from_stick([0, 1], run=False, strafe=False, camera_yaw=0.0, settings=settings)
    np.testing.assert_allclose(command.desired_velocity, [0, 1.2], atol=1e-12)
    assert command.gait == "walk" and command.facing is None
    run = command_from_stick([0, 0.5], run=True, strafe=False, camera_yaw=0.0, settings=settings)
    np.testing.assert_allclose(run.desired_velocity, [0, 1.5], atol=1e-12)
    assert run.gait == "run"


def test_command_is_camera_relative():
    settings = RuntimeSettings(walk_speed=1.0)
    for stick in ([0, 1], [1, 0], [0.3, -0.6]):
        at_zero = command_from_stick(stick, False, False, 0.0, settings).desired_velocity
        at_90 = command_from_stick(stick, False, False, np.pi / 2, settings).desired_velocity
        # A yaw of +90 deg about +Y maps world (x, z) -> (z, -x).
        np.testing.assert_allclose(at_90, [at_zero[1], -at_zero[0]], atol=1e-12)
    # Looking along +X, the camera's right is +Z (right-handed, Y up).
    right = command_from_stick([1, 0], False, False, np.pi / 2, settings).desired_velocity
    np.testing.assert_allclose(right, [0, 1], atol=1e-12)


def test_dead_zone_and_length_clamp():
    settings = RuntimeSettings(walk_speed=1.0, stick_deadzone=0.1)
    idle = command_from_stick([0.05, 0.0], False, False, 0.0, settings)
    assert idle.gait == "stand" and idle.speed == 0.0
    long = command_from_stick([3.0, 4.0], False, False, 0.0, settings)
    assert long.speed == pytest.approx(1.0)


def test_strafe_keeps_given_facing_or_the_camera_direction():
    settings = RuntimeSettings()
    camera = command_from_stick([1, 0], False, True, np.pi / 2, settings)
    np.testing.assert_allclose(camera.facing, [1, 0], atol=1e-12)
    assert camera.strafe
    given = command_from_stick([1, 0], False, True, 0.0, settings, facing=[0, -2])
    np.testing.assert_allclose(given.facing, [0, -1])
    world = command_from_world_move([1, 0], True, settings, facing=[0, 1])
    np.testing.assert_allclose(world.desired_velocity, [settings.run_speed, 0])
    assert world.strafe and world.gait == "run"


def test_strafing_moves_at_the_side_step_and_backward_walk_speeds_by_the_angle_to_the_facing():
    settings = RuntimeSettings(walk_speed=1.2, side_step_speed=0.9, walk_back_speed=0.6, run_speed=3.0)
    facing = np.array([0.0, 1.0])
    speeds = {angle: np.linalg.norm(command_from_world_move([np.sin(np.radians(angle)), np.cos(np.radians(angle))],
                                                            False, settings, facing=facing).desired_velocity)
              for angle in (0, 45, 90, 135, 180, -90)}
    assert speeds[0] == pytest.approx(1.2) and speeds[90] == pytest.approx(0.9) and speeds[180] == pytest.approx(0.6)
    assert speeds[45] == pytest.approx(1.05) and speeds[135] == pytest.approx(0.75) and speeds[-90] == pytest.approx(0.9)
    half = command_from_world_move([0.5, 0.0], False, settings, facing=facing)
    assert np.linalg.norm(half.desired_velocity) == pytest.approx(0.45)  # half a stick sideways
    assert full_stick_speed(np.array([1.0, 0.0]), None, False, settings) == 1.2  # not strafing: the walk
    assert full_stick_speed(np.array([0.0, -1.0]), facing, True, settings) == 3.0  # running: the run
