"""The release time of a foot pin per character (`feet.release_times`): `lock_release_time`, going over to
`lock_release_time_side` with the sideways share of a strafe."""
import math
from pathlib import Path

import numpy as np
import pytest

from pfnn_core.math.quat import quat_to_6d
from pfnn_core.motion.kinematics import forward_kinematics
from pfnn_core.runtime.feet import place_feet, release_times
from pfnn_core.runtime.ik import FootLocks
from pfnn_core.runtime.pose import pose_from_prediction, skeleton_plan
from pfnn_core.runtime.settings import RuntimeSettings

HIPS = 1


def test_the_release_time_follows_the_sideways_share_of_a_strafe():
    settings = RuntimeSettings(lock_release_time=0.2, lock_release_time_side=0.4)
    facing = np.array([[0.0, 1.0]] * 6)
    facing[5] = 0.0  # not strafing: no facing kept
    velocity = np.array([[1.2, 0.0],    # a side-step: straight across the facing
                         [0.0, -1.0],   # a backward walk: along it
                         [0.8, 0.8],    # a diagonal: sin 45 degrees across
                         [0.0, 1.0],    # forward, facing kept
                         [0.05, 0.0],   # too slow to have a direction
                         [1.0, 0.0]])   # sideways but not strafing
    expected = [0.4, 0.2, 0.2 + 0.2 * math.sqrt(0.5), 0.2, 0.2, 0.2]
    np.testing.assert_allclose(release_times(settings, facing, velocity), expected, atol=1e-12)


def _network_pose(walk_motion, plan, batch, dt):
    """Mocap frame 40 as the network's output for `batch` characters at the origin facing +z."""
    global_rot, global_pos = forward_kinematics(walk_motion.rotations[40], walk_motion.positions[40], walk_motion.parents)
    rot6 = np.repeat(quat_to_6d(global_rot)[None], batch, axis=0)
    local_pos = np.repeat(global_pos[None], batch, axis=0)
    previous = (local_pos, np.zeros_like(local_pos), np.zeros((batch, 3)), np.zeros(batch), np.ones(batch))
    return pose_from_prediction(np.zeros((batch, 3)), np.zeros(batch), rot6, local_pos, previous, 0.0, dt, True, plan)


def test_each_character_releases_its_pins_over_its_own_time(walk_motion):
    """Two characters with their feet pinned where the network has them let go at once: the pins of the
    one given 0.1 s are gone 6 ticks later, the other's (0.3 s) 18, each weight falling by dt / its
    time per tick."""
    plan, dt = skeleton_plan(walk_motion.names, walk_motion.parents, walk_motion.positions[0], HIPS), 1 / 60
    feet = _network_pose(walk_motion, plan, 2, dt).positions[:, plan.contact_joints]
    locks = FootLocks(feet.copy(), np.ones((2, 4)), np.ones((2, 4), bool), np.zeros((2, 4, 3)))
    released = np.full((2, 4), 0.1)  # every contact output under the threshold
    weights = []
    for _ in range(20):
        placed = place_feet(_network_pose(walk_motion, plan, 2, dt), np.zeros((2, 3)), np.zeros(2), released, locks,
                            RuntimeSettings(), None, dt, plan, release_time=np.array([0.1, 0.3]))
        locks = placed.locks
        weights.append(locks.weight.copy())
    weights = np.array(weights)  # [tick, character, joint]
    # the first tick lets go (the weight still 1), then each tick takes dt / the character's time off it
    np.testing.assert_allclose(weights[:6, 0], (1.0 - dt / 0.1 * np.arange(6))[:, None].repeat(4, 1), atol=1e-9)
    np.testing.assert_allclose(weights[:18, 1], (1.0 - dt / 0.3 * np.arange(18))[:, None].repeat(4, 1), atol=1e-9)
    assert np.all(weights[6:, 0] < 1e-9) and np.all(weights[18:, 1] < 1e-9)


SHIPPED = Path(__file__).resolve().parents[1] / "assets/models/default.safetensors"
DRIVES = Path(__file__).resolve().parents[1] / "scripts/drives"


@pytest.mark.skipif(not SHIPPED.is_file(), reason="needs the shipped model")
def test_the_side_step_release_changes_side_steps_and_nothing_else():
    """The shipped model driven with the side-step release at 0.2 s (the walk's) and 0.4 s: a forward
    walk is bit-identical, the strafe drive's walk forward too until its side-steps, which differ."""
    from pfnn_core.drive.cli import run_drive, settings_from_arguments
    from pfnn_core.models.registry import load_checkpoint

    checkpoint = load_checkpoint(SHIPPED)
    motions = {}
    for drive in ("walk_forward", "strafe"):
        for side in ("0.2", "0.4"):
            settings, _ = settings_from_arguments(["lock_release_time=0.2", f"lock_release_time_side={side}"], checkpoint)
            motions[drive, side] = run_drive(DRIVES / f"{drive}.json", checkpoint, settings=settings).joint_positions
    np.testing.assert_array_equal(motions["walk_forward", "0.2"], motions["walk_forward", "0.4"])
    strafe_start = 120  # the strafe drive side-steps from 2 s (60 Hz ticks)
    np.testing.assert_array_equal(motions["strafe", "0.2"][:strafe_start], motions["strafe", "0.4"][:strafe_start])
    assert np.abs(motions["strafe", "0.2"][strafe_start:] - motions["strafe", "0.4"][strafe_start:]).max() > 0.01
