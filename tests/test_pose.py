import numpy as np
import pytest

from pfnn_core.math import mat3
from pfnn_core.math.quat import (
    quat_between,
    quat_from_6d,
    quat_from_angle_axis,
    quat_from_matrix,
    quat_from_yaw,
    quat_mul,
    quat_to_6d,
    quat_to_matrix,
)
from pfnn_core.motion.kinematics import forward_kinematics
from pfnn_core.motion.root import body_frames
from pfnn_core.runtime import settle
from pfnn_core.runtime.feet import Settling, place_feet
from pfnn_core.runtime.ik import SOFT_REACH, FootLocks, leg_chains
from pfnn_core.runtime.pose import fit_rotations_to_positions, forward_kinematics_global, pose_from_prediction, skeleton_plan
from pfnn_core.runtime.reach import SWING_LIFT_RATE
from pfnn_core.runtime.settings import RuntimeSettings

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


def test_a_partial_rotation_is_a_share_of_the_turn_the_short_way_round():
    rng = np.random.default_rng(5)
    for _ in range(50):
        u, v = tuple(rng.normal(size=3)), tuple(rng.normal(size=3))
        full = np.reshape(mat3.between(u, v), (3, 3))
        half = np.reshape(mat3.partial_rotation(mat3.between(u, v), 0.5), (3, 3))
        np.testing.assert_allclose(half @ half, full, atol=1e-9)  # two halves make the whole turn
        np.testing.assert_allclose(np.reshape(mat3.partial_rotation(tuple(full.ravel()), 1.0), (3, 3)), full, atol=1e-9)
        np.testing.assert_allclose(np.reshape(mat3.partial_rotation(tuple(full.ravel()), 0.0), (3, 3)), np.eye(3),
                                   atol=1e-12)
        angle = np.arccos(np.clip((np.trace(half) - 1) / 2, -1, 1))  # at most half a turn: the short way
        assert angle <= np.pi / 2 + 1e-9


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
                      np.array([[True, False, False, False]]), np.zeros((1, 4, 3)))
    contacts = np.array([[0.9, 0.1, 0.1, 0.1]])
    floor = feet[:, 1] + np.array([0.0, 0.0, 0.0, 0.05])  # the right toe's floor is 5 cm above it
    settings = RuntimeSettings()
    placed = place_feet(pose, np.zeros((1, 3)), np.zeros(1), contacts, locks, settings, floor, 1 / 60, plan)
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
    placed = place_feet(pose, np.zeros((1, 3)), np.zeros(1), contacts, locks, off, floor, 1 / 60, plan)
    np.testing.assert_array_equal(placed.positions, untouched)


def _standing_stance(floor, plan):
    """A standing stance (body frame: x along the hip line to the left, z forward) at the floor levels,
    each toe straight ahead of its ankle at the foot's length."""
    stance = np.array([[0.09, 0.0, -0.07], [0.09, 0.0, 0.0], [-0.09, 0.0, -0.07], [-0.09, 0.0, 0.0]])
    stance[:, 1] = floor
    for leg, (_, _, _, toe) in enumerate(plan.legs):
        drop = floor[2 * leg] - floor[2 * leg + 1]
        stance[2 * leg + 1, 2] = stance[2 * leg, 2] + np.sqrt(np.sum(plan.offsets[toe] ** 2) - drop ** 2)
    return stance


def _shortest_leg(motion) -> float:
    """Hip-to-ankle length (thigh + shin) of the shorter leg, from the skeleton's rest offsets."""
    return min(float(np.linalg.norm(motion.offsets[knee]) + np.linalg.norm(motion.offsets[ankle]))
               for _, knee, ankle, _ in leg_chains(motion.names, motion.parents))


def test_settling_steps_bring_the_feet_from_mid_stride_to_the_stance_under_the_hips(walk_motion):
    """A synthetic stop: the network holds a mid-stride pose, the feet are pinned where the stride left
    them. The feet step one at a time, the one farther from its place first, each in a lifted arc, the
    other held still; within two steps every contact joint sits on its place of the stance under the
    hips, on its floor level. Moving the stick again releases the pins relative to the body."""
    plan, dt = _plan(walk_motion), 1 / 60
    _, clip = forward_kinematics(walk_motion.rotations, walk_motion.positions, walk_motion.parents)
    floor = np.percentile(clip[:, plan.contact_joints, 1], 5, axis=0)  # the clip's planted heights
    stance = _standing_stance(floor, plan)
    rot6, local_pos, _ = _prediction_from_mocap(walk_motion, 40, 0.0, np.zeros(3))
    previous = (local_pos, np.zeros_like(local_pos), np.zeros((1, 3)), np.zeros(1), np.ones(1))

    def network_pose():
        return pose_from_prediction(np.zeros((1, 3)), np.zeros(1), rot6, local_pos, previous, 0.0, dt, True, plan)

    network = network_pose().positions
    origin, yaw = body_frames(network, walk_motion.names, walk_motion.parents)
    targets = settle.stance_targets(origin[:, [0, 2]], yaw, stance)[0]
    shown = network.copy()
    feet = shown[0, plan.contact_joints]
    locks = FootLocks(feet[None].copy(), np.ones((1, 4)), np.ones((1, 4), bool), np.zeros((1, 4, 3)))
    gaps = np.linalg.norm(feet - targets, axis=-1)
    far_foot = int(np.argmax([gaps[:2].max(), gaps[2:].max()]))
    state, settings = settle.idle_state(1), RuntimeSettings()
    contacts = np.full((1, 4), 0.9)
    track, stepping = [], []
    for _ in range(60):
        placed = place_feet(network_pose(), np.zeros((1, 3)), np.zeros(1), contacts, locks, settings, floor, dt, plan,
                            Settling(np.array([True]), state, np.zeros((1, 2)), stance), shown_before=shown)
        locks, state, shown = placed.locks, placed.settle, placed.positions
        track.append(shown[0, plan.contact_joints].copy())
        stepping.append(int(state.foot[0]))
    track, stepping = np.array(track), np.array(stepping)
    # Each contact joint lands on its place, up to what the soft reach leaves a stance leg short of a
    # target within its length: SOFT_REACH x leg length x exp(-1) at full extension (`ik.soft_reach`).
    shortfall = SOFT_REACH * _shortest_leg(walk_motion) * np.exp(-1.0)
    assert np.linalg.norm(track[-1] - targets, axis=-1).max() <= 2e-3 + shortfall
    assert np.all(np.abs(track[-1][:, 1] - targets[:, 1]) <= 2e-3 + shortfall)  # on its floor level, a heel at most that high
    assert stepping[stepping >= 0][0] == far_foot and 1 <= state.steps[0] <= 2
    finished = np.flatnonzero(np.abs(track - track[-1]).max(axis=(1, 2)) > 1e-6)[-1] + 1
    assert finished * dt <= 2 * settings.settle_step_time + 2 * dt
    for foot in (0, 1):  # while one foot steps the other stays where it is
        waiting = (stepping >= 0) & (stepping != foot)
        joints = [2 * foot, 2 * foot + 1]
        still = np.abs(np.diff(track[:, joints], axis=0)).max(axis=(1, 2))[waiting[1:] & waiting[:-1]]
        assert still.size == 0 or still.max() < 1e-9
    lift = track[stepping == far_foot][:, [2 * far_foot, 2 * far_foot + 1], 1] - floor[[2 * far_foot, 2 * far_foot + 1]]
    assert lift.max() > 0.5 * settings.settle_step_height
    # The stick moves: the pins let go relative to the body, without a jump, and fade into the network's feet.
    contacts = np.full((1, 4), 0.1)
    released = []
    for _ in range(int(round(settings.lock_release_time / dt)) + 2):
        placed = place_feet(network_pose(), np.zeros((1, 3)), np.zeros(1), contacts, locks, settings, floor, dt, plan,
                            Settling(np.array([False]), state, np.zeros((1, 2)), stance), shown_before=shown)
        locks, state, shown = placed.locks, placed.settle, placed.positions
        released.append(shown[0, plan.contact_joints].copy())
    np.testing.assert_allclose(released[0], track[-1], atol=1e-9)
    free = place_feet(network_pose(), np.zeros((1, 3)), np.zeros(1), contacts, locks,
                      RuntimeSettings(foot_locking=False), floor, dt, plan)  # the network's feet, on the floor
    np.testing.assert_allclose(released[-1], free.positions[0, plan.contact_joints], atol=1e-9)
    assert np.abs(np.diff(released, axis=0)).max() < 0.03  # no jump along the way


def test_a_held_toe_is_reached_and_the_foot_turns_about_it(walk_motion):
    """A heel lifting off a planted toe: the left toe is pinned a few cm from the network's toe, the
    left ankle's pin was let go and is fading, from a place 5 cm lower relative to the toe than the
    network's heel is now. The shown toe sits on its pin and the foot keeps its length, the ankle
    turning about the toe (before, the ankle went where the fade put it and the toe, kept at the
    foot's length from it, slid off its pin)."""
    plan, dt = _plan(walk_motion), 1 / 60
    rot6, local_pos, _ = _prediction_from_mocap(walk_motion, 40, 0.0, np.zeros(3))
    previous = (local_pos, np.zeros_like(local_pos), np.zeros((1, 3)), np.zeros(1), np.ones(1))
    network = pose_from_prediction(np.zeros((1, 3)), np.zeros(1), rot6, local_pos, previous, 0.0, dt, True, plan)
    feet = network.positions[0, plan.contact_joints].copy()
    pins, offsets = feet.copy(), np.zeros((4, 3))
    pins[1] += [0.02, -0.03, -0.05]  # the left toe held lower and behind the network's
    offsets[0] = [0.02, -0.08, -0.05]  # the left ankle's fading offset: lower still
    locks = FootLocks(pins[None], np.array([[0.8, 1.0, 0.0, 0.0]]), np.array([[False, True, False, False]]),
                      offsets[None])
    contacts = np.array([[0.1, 0.9, 0.1, 0.1]])
    placed = place_feet(network, np.zeros((1, 3)), np.zeros(1), contacts, locks, RuntimeSettings(), None, dt, plan)
    shown = placed.positions[0, plan.contact_joints]
    np.testing.assert_allclose(shown[1], pins[1], atol=1e-3)
    bone = np.linalg.norm(plan.offsets[plan.contact_joints[1]])
    assert np.linalg.norm(shown[1] - shown[0]) == pytest.approx(bone, abs=1e-6)


def _network_pose_maker(walk_motion, frame=40):
    """(plan, dt, a function giving a fresh network pose of the mocap's `frame` at the origin each call:
    `place_feet` solves the pose it is given in place)."""
    plan, dt = _plan(walk_motion), 1 / 60
    rot6, local_pos, _ = _prediction_from_mocap(walk_motion, frame, 0.0, np.zeros(3))
    previous = (local_pos, np.zeros_like(local_pos), np.zeros((1, 3)), np.zeros(1), np.ones(1))

    def network_pose():
        return pose_from_prediction(np.zeros((1, 3)), np.zeros(1), rot6, local_pos, previous, 0.0, dt, True, plan)

    return plan, dt, network_pose


def test_a_heel_pinned_after_its_toe_comes_down_onto_its_pin_over_the_blend_time(walk_motion):
    """The toe pinned 6 cm behind the network's toe carries the rigid foot; then the heel's contact rises
    and its pin starts at the network's ankle. Taken at once the shown ankle jumps there in one tick (a
    pop); with `pin_blend_time` its pin's share of the foot grows by dt / time per tick (`_blend_pins`):
    it comes there over that many ticks, a step at a time, the toe held on its pin throughout."""
    plan, dt, network = _network_pose_maker(walk_motion)
    feet = network().positions[0, plan.contact_joints].copy()
    pins = feet.copy()
    pins[1] += [0.0, 0.0, -0.06]
    contacts = np.array([[0.9, 0.9, 0.1, 0.1]])  # the left heel's contact has risen, its toe's is high

    def ticks(blend_time, count):
        settings = RuntimeSettings()
        settings.pin_blend_time = blend_time
        locks = FootLocks(pins[None].copy(), np.array([[0.0, 1.0, 0.0, 0.0]]), np.array([[False, True, False, False]]),
                          np.zeros((1, 4, 3)))
        pull, shown = np.array([[0.0, 1.0, 0.0, 0.0]]), []
        for _ in range(count):
            placed = place_feet(network(), np.zeros((1, 3)), np.zeros(1), contacts, locks, settings, None, dt, plan,
                                pull=pull)
            locks, pull = placed.locks, placed.pull
            shown.append(placed.positions[0, plan.contact_joints].copy())
        return np.array(shown)

    at_once, blended = ticks(0.0, 8), ticks(0.1, 8)
    before = feet[0] + (pins[1] - feet[1])  # the ankle carried by the toe pin: where it was shown
    jump = np.linalg.norm(at_once[0, 0] - before)
    assert jump > 0.04  # taken at once, the heel moves 4+ cm in one tick
    np.testing.assert_allclose(at_once[0, 0], at_once[-1, 0], atol=1e-9)
    steps = np.linalg.norm(np.diff(np.concatenate([before[None], blended[:, 0]]), axis=0), axis=-1)
    assert steps[0] < 0.3 * jump and steps.max() < 0.3 * jump  # a sixth of the way per tick (smoothed by IK)
    np.testing.assert_allclose(blended[6:, 0], at_once[6:, 0], atol=1e-6)  # there after 0.1 s, and staying
    np.testing.assert_allclose(blended[:, 1], pins[1][None].repeat(8, 0), atol=1e-3)  # the toe on its pin


def test_a_fast_free_foot_on_the_floor_is_lifted_to_the_swing_clearance(walk_motion):
    """The network drags a swinging foot along the floor (its contact outputs low; its speed is from where
    the foot was shown last tick): the runtime keeps its
    toe `swing_clearance` above the toe's floor level, the whole foot raised (its shape and horizontal
    place kept), the lift moving at SWING_LIFT_RATE at most. A slow foot, a foot the network calls
    planted and a clearance of 0 are let down at that rate."""
    plan, dt, network_pose = _network_pose_maker(walk_motion)
    feet = network_pose().positions[0, plan.contact_joints].copy()
    floor = feet[:, 1].copy()  # every contact joint at its floor level now
    empty = FootLocks(feet[None].copy(), np.zeros((1, 4)), np.zeros((1, 4), bool), np.zeros((1, 4, 3)))
    rate = SWING_LIFT_RATE * dt

    def shown(speed, contacts, lift_before=(0.0, 0.0), clearance=0.03):
        settings = RuntimeSettings()
        settings.swing_clearance = clearance
        pose = network_pose()
        before = pose.positions.copy()  # shown last tick: each contact joint `speed` m/s behind along x
        before[0, plan.contact_joints, 0] -= np.asarray(speed) * dt
        placed = place_feet(pose, np.zeros((1, 3)), np.zeros(1), np.array([contacts]), empty, settings,
                            floor, dt, plan, shown_before=before, swing_lift=np.array([lift_before]))
        return placed.positions[0, plan.contact_joints], placed.swing_lift[0]

    swinging = [0.0, 0.0, 1.2, 1.5], [0.1] * 4
    lifted, lift = shown(*swinging, lift_before=(0.0, 0.03))
    assert lift.tolist() == [0.0, 0.03]
    assert lifted[3, 1] - floor[3] == pytest.approx(0.03, abs=1e-3)  # the right toe, at full speed
    assert lifted[2, 1] - feet[2, 1] == pytest.approx(0.03, abs=1e-3)  # its ankle with it
    np.testing.assert_allclose(lifted[2:, [0, 2]], feet[2:, [0, 2]], atol=2e-3)
    np.testing.assert_allclose(lifted[:2], feet[:2], atol=1e-6)  # the still left foot
    # from the floor the lift rises at the rate limit, not at once
    rising, lift = shown(*swinging)
    assert lift[1] == pytest.approx(rate) and rising[3, 1] - floor[3] == pytest.approx(rate, abs=1e-3)
    # at 0.7 m/s, halfway through SWING_SPEEDS (0.4-1.0): smoothstep(0.5) = 0.5 of the clearance
    assert shown([0, 0, 0.7, 0.7], [0.1] * 4, (0.0, 0.015))[1][1] == pytest.approx(0.015)
    # slowing, planted by its pin, or with the rule off: let down at the rate limit
    for speed, contacts, clearance in (([0, 0, 0.3, 0.3], [0.1] * 4, 0.03),
                                       ([0, 0, 1.5, 1.5], [0.1, 0.1, 0.9, 0.9], 0.03),
                                       ([0, 0, 1.5, 1.5], [0.1] * 4, 0.0)):
        landing, lift = shown(speed, contacts, (0.0, 0.03), clearance)
        assert lift[1] == pytest.approx(0.03 - rate)
        assert landing[3, 1] - floor[3] == pytest.approx(0.03 - rate, abs=1e-3)
    _, lift = shown([0, 0, 0.3, 0.3], [0.1] * 4, (0.0, 0.002))
    assert lift[1] == 0.0


def test_a_trailing_foot_out_of_reach_turns_its_heel_up_about_the_held_toe():
    """Hip 0.85 m up, leg reach 0.87 m; toe pinned 0.40 m behind, the flat foot's ankle 0.15 m further
    back: out of reach (0.95 m). The heel turns up about the toe by the least angle that brings the ankle within
    reach (the foot's length kept); when that takes more than HEEL_OFF_MAX_TURN, no turn is offered."""
    from pfnn_core.runtime.reach import HEEL_OFF_MAX_TURN, _heel_up_about_toe

    hip, toe, ankle = np.array([0.0, 0.85, 0.0]), np.array([0.0, 0.04, -0.40]), np.array([0.0, 0.08, -0.55])
    foot = np.linalg.norm(ankle - toe)
    lifted, found = _heel_up_about_toe(tuple(ankle), tuple(toe), tuple(hip), 0.87)  # the kernel's 3-tuples
    lifted = np.array(lifted)
    assert found
    assert np.linalg.norm(lifted - toe) == pytest.approx(foot)
    assert np.linalg.norm(lifted - hip) == pytest.approx(0.87, abs=1e-5)  # just within reach
    assert lifted[0] == pytest.approx(0.0) and lifted[1] > ankle[1] and lifted[2] > ankle[2]
    turn = np.arctan2(lifted[1] - toe[1], toe[2] - lifted[2]) - np.arctan2(ankle[1] - toe[1], toe[2] - ankle[2])
    assert 0.0 < turn <= HEEL_OFF_MAX_TURN
    # a toe so far behind that even an upright foot is out of reach: no turn (the catch-up step takes over)
    assert not _heel_up_about_toe((0.0, 0.08, -1.0), (0.0, 0.04, -0.85), tuple(hip), 0.87)[1]
