import numpy as np
import pytest

from pfnn_core.ik import (aim_at_reach, empty_foot_locks, fade_weight, foot_rotation_toward, foot_targets,
                          locked_positions, two_bone_ik, update_foot_locks)
from pfnn_core.quat import quat_from_angle_axis, quat_mul_vec, quat_normalize

THIGH = np.array([0.0, -0.45, 0.03])
SHIN = np.array([0.0, -0.43, -0.04])


def leg_fk(hip_pos, hip_rot, knee_rot):
    """Bones hang along THIGH/SHIN in the identity pose; rotations are global."""
    knee = hip_pos + quat_mul_vec(hip_rot, THIGH)
    return knee, knee + quat_mul_vec(knee_rot, SHIN)


def random_rotations(rng, n, max_angle):
    return quat_from_angle_axis(rng.uniform(-max_angle, max_angle, n), rng.normal(size=(n, 3)))


def test_locked_foot_stays_within_1mm_while_hips_move_within_reach():
    rng = np.random.default_rng(0)
    steps = 200
    t = np.linspace(0.0, 2.0 * np.pi, steps)
    # Hips sway and bob around a planted foot; the animated leg pose wobbles too.
    hips = np.stack([0.12 * np.sin(t), 0.86 + 0.03 * np.sin(2 * t), 0.15 * np.cos(t)], axis=-1)
    hip_rot = random_rotations(rng, steps, 0.3)
    knee_rot = quat_normalize(hip_rot + 0.1 * random_rotations(rng, steps, 0.3))
    target = np.array([0.02, 0.08, 0.05])
    knee, ankle = leg_fk(hips, hip_rot, knee_rot)
    pole = np.broadcast_to([0.0, 0.0, 1.0], hips.shape)
    solved = two_bone_ik(hips, knee, ankle, hip_rot, knee_rot, target, pole)
    # The returned rotations, run through forward kinematics, put the ankle on the target.
    knee_fk, ankle_fk = leg_fk(hips, solved.hip_rot, solved.knee_rot)
    assert np.max(np.linalg.norm(ankle_fk - target, axis=-1)) < 1e-3
    np.testing.assert_allclose(knee_fk, solved.knee_pos, atol=1e-9)
    np.testing.assert_allclose(ankle_fk, solved.ankle_pos, atol=1e-9)


def test_unreachable_target_is_clamped_along_the_hip_target_line():
    hip = np.array([0.0, 1.0, 0.0])
    hip_rot = quat_from_angle_axis(0.2, [1.0, 0.0, 0.0])
    knee_rot = quat_from_angle_axis(-0.3, [1.0, 0.0, 0.0])
    knee, ankle = leg_fk(hip, hip_rot, knee_rot)
    target = np.array([0.5, -1.0, 0.3])
    solved = two_bone_ik(hip, knee, ankle, hip_rot, knee_rot, target, [0.0, 0.0, 1.0])
    _, ankle_fk = leg_fk(hip, solved.hip_rot, solved.knee_rot)
    leg_length = np.linalg.norm(THIGH) + np.linalg.norm(SHIN)
    direction = (target - hip) / np.linalg.norm(target - hip)
    np.testing.assert_allclose(ankle_fk, hip + direction * leg_length, atol=leg_length * 2e-4)


def test_straight_leg_bends_toward_the_pole():
    hip = np.array([0.0, 1.0, 0.0])
    thigh_straight = np.array([0.0, -0.45, 0.0])
    knee = hip + thigh_straight
    ankle = knee + np.array([0.0, -0.45, 0.0])
    identity = np.array([1.0, 0.0, 0.0, 0.0])
    solved = two_bone_ik(hip, knee, ankle, identity, identity, [0.0, 0.3, 0.0], [0.0, 0.0, 1.0])
    assert solved.knee_pos[2] > 0.1  # knee forward (+Z), not backward
    np.testing.assert_allclose(solved.ankle_pos, [0.0, 0.3, 0.0], atol=1e-6)


@pytest.mark.parametrize("behind_mm, side_mm", [(2.0, 0.0), (0.5, 0.0), (2.0, 1.5), (30.0, 0.0), (0.0, 0.0)])
def test_a_leg_bent_slightly_backwards_bends_forward_toward_the_pole(behind_mm, side_mm):
    """The knee a few millimetres behind the hip-ankle line (hyperextended) must come out in front when
    the leg bends; a knee sideways of the line keeps its side."""
    hip = np.array([0.0, 1.0, 0.0])
    ankle = np.array([0.0, 0.1, 0.0])
    knee = np.array([side_mm / 1000.0, 0.55, -behind_mm / 1000.0])  # -Z is behind (the pole is +Z)
    identity = np.array([1.0, 0.0, 0.0, 0.0])
    target = np.array([0.0, 0.3, 0.05])
    solved = two_bone_ik(hip, knee, ankle, identity, identity, target, [0.0, 0.0, 1.0])
    np.testing.assert_allclose(solved.ankle_pos, target, atol=1e-6)
    line = (solved.ankle_pos - hip) / np.linalg.norm(solved.ankle_pos - hip)
    offset = (solved.knee_pos - hip) - np.dot(solved.knee_pos - hip, line) * line
    assert offset[2] > 0.1  # well in front of the hip-ankle line
    assert np.linalg.norm(solved.knee_pos - hip) == pytest.approx(np.linalg.norm(knee - hip), abs=1e-9)
    if side_mm:
        assert offset[0] > 0.0


def test_a_forward_bent_leg_keeps_its_plane():
    """A normally bent knee (forward, and 10 degrees out to the side) bends further in its own plane."""
    hip, ankle = np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.15, 0.0])
    knee = np.array([0.02, 0.58, 0.12])
    identity = np.array([1.0, 0.0, 0.0, 0.0])
    target = np.array([0.0, 0.4, 0.0])
    solved = two_bone_ik(hip, knee, ankle, identity, identity, target, [0.0, 0.0, 1.0])
    before = np.cross(knee - hip, ankle - hip)
    after = np.cross(solved.knee_pos - hip, solved.ankle_pos - hip)
    np.testing.assert_allclose(after / np.linalg.norm(after), before / np.linalg.norm(before), atol=1e-9)


def test_fade_weight_halves_the_gap_per_halflife():
    assert fade_weight(0.0, 1.0, halflife=0.1, dt=0.1) == pytest.approx(0.5)
    assert fade_weight(1.0, 0.0, halflife=0.1, dt=0.2) == pytest.approx(0.25)


def test_foot_lock_pins_on_contact_and_releases():
    locks = empty_foot_locks((1,), 2)
    dt = 1 / 60
    foot = np.array([[[0.0, 0.1, 0.0], [0.3, 0.1, 0.0]]])
    contacts = np.array([[0.9, 0.1]])
    locks = update_foot_locks(locks, foot, contacts, np.zeros((1, 2)), 0.5, 0.02, 0.2, dt)
    assert locks.active.tolist() == [[True, False]]
    np.testing.assert_allclose(locks.target[0, 0], foot[0, 0])
    # The network's foot slides 5 cm; after the fade-in the displayed foot stays on the pin.
    for _ in range(30):
        locks = update_foot_locks(locks, foot + [0.05, 0, 0], contacts, contacts, 0.5, 0.02, 0.2, dt)
    np.testing.assert_allclose(locked_positions(foot + [0.05, 0, 0], locks)[0, 0], foot[0, 0], atol=1e-3)
    assert locks.weight[0, 1] == 0.0
    # The network's foot moving 0.5 m away while still in contact drags the pin on a 0.2 m leash: it
    # stays pinned, 0.2 m behind the network's foot, at its own height.
    dragged = update_foot_locks(locks, foot + [0.5, 0, 0], contacts, contacts, 0.5, 0.02, 0.2, dt)
    assert dragged.active[0, 0] and dragged.weight[0, 0] == pytest.approx(1.0, abs=1e-3)
    np.testing.assert_allclose(dragged.target[0, 0], foot[0, 0] + [0.3, 0, 0], atol=1e-12)
    # Contact ending fades the pin out.
    ended = update_foot_locks(locks, foot, np.zeros((1, 2)), contacts, 0.5, 0.02, 0.2, dt)
    assert not ended.active[0, 0]


def test_foot_targets_and_rotation():
    ankle, toe = np.array([0.0, 0.1, 0.0]), np.array([0.0, 0.04, 0.15])
    pin_ankle, pin_toe = ankle + [0.1, 0, 0], toe + [0.0, 0, 0.05]
    target, aim = foot_targets(ankle, toe, pin_ankle, pin_toe, 1.0, 0.0)
    np.testing.assert_allclose(target, pin_ankle)
    np.testing.assert_allclose(aim, toe + [0.1, 0, 0])
    target, aim = foot_targets(ankle, toe, pin_ankle, pin_toe, 0.0, 1.0)
    np.testing.assert_allclose(target, ankle + [0, 0, 0.05])
    np.testing.assert_allclose(aim, pin_toe)
    rot = foot_rotation_toward(np.array([1.0, 0, 0, 0]), ankle, toe, ankle + [0.0, 0.0, 0.2], 1.0)
    toe_dir = quat_mul_vec(rot, toe - ankle)
    np.testing.assert_allclose(toe_dir / np.linalg.norm(toe_dir), [0, 0, 1], atol=1e-9)


def test_aim_at_reach_keeps_the_height_at_the_given_distance():
    center = np.array([0.0, 0.12, 0.0])
    aim = aim_at_reach(center, np.array([0.05, 0.03, 0.05]), 0.15)
    assert aim[1] == pytest.approx(0.03)
    assert np.linalg.norm(aim - center) == pytest.approx(0.15)
    np.testing.assert_allclose(aim[0], aim[2])  # horizontal direction kept
