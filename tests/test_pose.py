import numpy as np
import pytest

from pfnn_core import mat3
from pfnn_core.ik import FootLocks
from pfnn_core.kinematics import forward_kinematics
from pfnn_core.pose import (fit_rotations_to_positions, forward_kinematics_global, place_feet, pose_from_prediction,
                            skeleton_plan)
from pfnn_core.quat import (quat_between, quat_from_6d, quat_from_angle_axis, quat_from_matrix, quat_from_yaw,
                            quat_mul, quat_to_6d, quat_to_matrix)
from pfnn_core.settings import RuntimeSettings

HIPS = 1


def _plan(motion):
    return skeleton_plan(motion.names, motion.parents, motion.positions[0], HIPS)  # the clip's exact bone vectors


def test_compiled_rotation_helpers_agree_with_the_quaternion_module():
    rng = np.random.default_rng(2)
    for _ in range(20):
        r6 = rng.normal(size=(1, 6))
        np.testing.assert_allclose(np.reshape(mat3.from_6d(r6, 0), (3, 3)), quat_to_matrix(quat_from_6d(r6[0])), atol=1e-12)
        yaw = rng.uniform(-3, 3)
        np.testing.assert_allclose(np.reshape(mat3.yaw_matrix(yaw), (3, 3)), quat_to_matrix(quat_from_yaw(yaw)), atol=1e-12)
        u, v = tuple(rng.normal(size=3)), tuple(rng.normal(size=3))
        np.testing.assert_allclose(np.reshape(mat3.between(u, v), (3, 3)), quat_to_matrix(quat_between(u, v)), atol=1e-12)
        q = quat_from_angle_axis(rng.uniform(-3, 3), rng.normal(size=3))
        m = tuple(quat_to_matrix(q).ravel())
        np.testing.assert_allclose(mat3.quat_from_matrix(m), quat_from_matrix(quat_to_matrix(q)), atol=1e-12)
    opposite = np.reshape(mat3.between((1.0, 2.0, 3.0), (-1.0, -2.0, -3.0)), (3, 3))
    np.testing.assert_allclose(opposite @ [1.0, 2.0, 3.0], [-1.0, -2.0, -3.0], atol=1e-9)


def test_nearest_rotation_matches_kabsch_by_svd_on_nearly_planar_bones():
    rng = np.random.default_rng(0)
    worst = 0.0
    for trial in range(300):
        count = 2 + trial % 3
        rest = rng.normal(size=(count, 3))
        rest[:, 2] *= 0.01 if trial % 2 else 1.0  # hips and chest: their bones lie nearly in a plane
        turn = quat_to_matrix(quat_from_angle_axis(rng.uniform(-3, 3), rng.normal(size=3)))
        goal = rest @ turn.T + rng.normal(scale=0.05, size=rest.shape)
        u, _, vt = np.linalg.svd(goal.T @ rest)
        u[:, 2] *= np.sign(np.linalg.det(u @ vt))
        found = mat3.nearest_rotation(goal, rest, count, tuple(np.eye(3).ravel()), np.empty((3, 3, 3)))
        worst = max(worst, np.abs(np.reshape(found, (3, 3)) - u @ vt).max())
    assert worst < 1e-7


def test_forward_kinematics_from_global_rotations_matches_the_motion(walk_motion):
    global_rot, global_pos = forward_kinematics(walk_motion.rotations[:20], walk_motion.positions[:20],
                                                walk_motion.parents)
    positions, _ = forward_kinematics_global(global_rot, global_pos[:, HIPS], walk_motion.offsets,
                                             walk_motion.parents, HIPS)
    np.testing.assert_allclose(positions[:, 1:], global_pos[:, 1:], atol=1e-5)  # channels vs OFFSET rounding


def test_rotations_fitted_to_positions_reproduce_the_positions(walk_motion):
    """Start from wrong rotations; after the fit, forward kinematics lands every joint on the mocap's."""
    _, global_pos = forward_kinematics(walk_motion.rotations[:5], walk_motion.positions[:5], walk_motion.parents)
    plan = _plan(walk_motion)
    rng = np.random.default_rng(1)
    wrong = quat_from_angle_axis(rng.uniform(-3, 3, (5, 22)), rng.normal(size=(5, 22, 3)))
    fitted = fit_rotations_to_positions(quat_to_matrix(wrong), global_pos, plan)
    positions, _ = forward_kinematics_global(quat_from_matrix(fitted), global_pos[:, HIPS], plan.offsets,
                                             walk_motion.parents, HIPS)
    np.testing.assert_allclose(positions[:, 1:], global_pos[:, 1:], atol=1e-6)


def test_skeleton_plan_of_the_bundled_skeleton(walk_motion):
    plan = _plan(walk_motion)
    names = walk_motion.names
    assert names[plan.anchor] == "Hips" and [names[j] for j in plan.above_anchor] == ["joint_Root"]
    assert [names[j] for j in plan.contact_joints] == ["Foot_L", "Toes_L", "Foot_R", "Toes_R"]
    assert [names[j] for j in plan.legs[0]] == ["UpperLeg_L", "LowerLeg_L", "Foot_L", "Toes_L"]
    # Farthest joint along the bones from the hips: ~0.95 m on this skeleton (hips to toe or to a hand).
    assert 0.7 < plan.extent < 1.3


def _prediction_from_mocap(motion, frame, yaw, root):
    """The network's outputs that describe mocap frame `frame` seen from a root at `root` facing `yaw`."""
    global_rot, global_pos = forward_kinematics(motion.rotations[frame], motion.positions[frame], motion.parents)
    inverse = quat_from_yaw(-yaw)
    local_rot = quat_mul(inverse, global_rot)
    local_pos = (quat_to_matrix(inverse) @ (global_pos - root).T).T
    return quat_to_6d(local_rot)[None], local_pos[None], global_pos


def test_pose_from_the_mocaps_own_prediction_is_the_mocap_pose(walk_motion):
    plan = _plan(walk_motion)
    yaw, root = 0.7, np.array([0.3, 0.0, -1.2])
    rot6, local_pos, expected = _prediction_from_mocap(walk_motion, 40, yaw, root)
    previous = (local_pos, np.zeros_like(local_pos), root[None], np.array([yaw]), np.ones(1))
    for fit in (False, True):
        pose = pose_from_prediction(root[None], np.array([yaw]), rot6, local_pos, previous, 0.0, 1 / 60, fit, plan)
        np.testing.assert_allclose(pose.positions[0, 1:], expected[1:], atol=2e-5)
        np.testing.assert_allclose(pose.fed_back, local_pos)


def test_pose_smoothing_blends_in_the_previous_pose_extrapolated_into_the_new_root_frame(walk_motion):
    plan = _plan(walk_motion)
    rot6, local_pos, _ = _prediction_from_mocap(walk_motion, 10, 0.0, np.zeros(3))
    # Last tick: the same pose, its root 0.1 m behind along +Z (facing +Z), moving at 1 m/s forward.
    velocity = np.tile([0.0, 0.0, 1.0], local_pos.shape[:-1] + (1,))
    previous = (local_pos, velocity, np.array([[0.0, 0.0, -0.1]]), np.zeros(1), np.ones(1))
    pose = pose_from_prediction(np.zeros((1, 3)), np.zeros(1), rot6, local_pos, previous, 0.5, 0.1, False, plan)
    # Extrapolated: moved 0.1 m by its velocity, then 0.1 m back into the new root frame: unchanged.
    np.testing.assert_allclose(pose.fed_back, local_pos, atol=1e-12)
    previous = (local_pos, velocity, np.zeros((1, 3)), np.zeros(1), np.ones(1))
    pose = pose_from_prediction(np.zeros((1, 3)), np.zeros(1), rot6, local_pos, previous, 0.5, 0.1, False, plan)
    np.testing.assert_allclose(pose.fed_back - local_pos, np.broadcast_to([0.0, 0.0, 0.05], local_pos.shape), atol=1e-12)


def test_place_feet_pins_a_planted_foot_and_keeps_the_floor(walk_motion):
    plan = _plan(walk_motion)
    rot6, local_pos, _ = _prediction_from_mocap(walk_motion, 40, 0.0, np.zeros(3))
    previous = (local_pos, np.zeros_like(local_pos), np.zeros((1, 3)), np.zeros(1), np.ones(1))
    pose = pose_from_prediction(np.zeros((1, 3)), np.zeros(1), rot6, local_pos, previous, 0.0, 1 / 60, True, plan)
    feet = pose.positions[0, plan.contact_joints]
    pin = feet[0] + [0.05, 0.0, 0.03]  # the left ankle is pinned 6 cm away from where the network put it
    locks = FootLocks(np.array([[pin, feet[1], feet[2], feet[3]]]), np.array([[1.0, 0.0, 0.0, 0.0]]),
                      np.array([[True, False, False, False]]))
    contacts = np.array([[0.9, 0.1, 0.1, 0.1]])
    floor = feet[:, 1] + np.array([0.0, 0.0, 0.0, 0.05])  # the right toe's floor is 5 cm above it
    settings = RuntimeSettings()
    placed = place_feet(pose, np.zeros((1, 3)), np.zeros(1), contacts, contacts, locks, settings, floor, 1 / 60, plan)
    shown = placed.positions[0, plan.contact_joints]
    np.testing.assert_allclose(shown[0], pin, atol=1e-3)
    assert shown[3, 1] == pytest.approx(floor[3], abs=1e-3)
    # Bone lengths are kept by the leg IK (positions come from forward kinematics).
    parents = plan.parents
    bones = np.linalg.norm(placed.positions[0, 1:] - placed.positions[0, parents[1:]], axis=-1)
    np.testing.assert_allclose(bones, np.linalg.norm(plan.offsets[1:], axis=-1), atol=1e-9)
    np.testing.assert_allclose(np.linalg.norm(placed.rotations, axis=-1), 1.0, atol=1e-9)
    # Without IK and floor the pose is the network's.
    off = RuntimeSettings(ik_enabled=False, floor_clamp=False)
    pose = pose_from_prediction(np.zeros((1, 3)), np.zeros(1), rot6, local_pos, previous, 0.0, 1 / 60, True, plan)
    untouched = pose.positions.copy()
    placed = place_feet(pose, np.zeros((1, 3)), np.zeros(1), contacts, contacts, locks, off, floor, 1 / 60, plan)
    np.testing.assert_array_equal(placed.positions, untouched)
