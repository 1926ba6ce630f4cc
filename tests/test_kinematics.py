"""Forward kinematics against hand-computed positions, mirroring and its pairing, resampling."""
from pathlib import Path

import numpy as np
import pytest

from pfnn_core.math.quat import quat_mul_vec, quat_to_yaw
from pfnn_core.motion import bvh
from pfnn_core.motion.kinematics import forward_kinematics, mirror, mirror_keep_skeleton, mirror_pairs, resample

TINY = Path(__file__).parent / "data" / "tiny.bvh"


def test_forward_kinematics_by_hand():
    m = bvh.load(TINY, scale=1.0)
    positions = m.global_positions()
    # Frame 0: no rotation, offsets add up.
    np.testing.assert_allclose(positions[0], [[1, 2, 3], [1, 12, 3], [1, 32, 3], [11, 2, 3]], atol=1e-12)
    # Frame 1: hips turned 90 deg about Z (y -> -x, x -> y); head turned 90 deg about X.
    np.testing.assert_allclose(positions[1], [[1, 2, 3], [-9, 2, 3], [-29, 2, 3], [1, 12, 3]], atol=1e-12)
    rotations = m.global_rotations()
    head_end = positions[1, 2] + quat_mul_vec(rotations[1, 2], m.end_sites[2])
    np.testing.assert_allclose(head_end, [-29, 2, 8], atol=1e-12)  # (0,5,0) -Rx90-> (0,0,5) -Rz90-> (0,0,5)
    # Frame 2: hips moved to x=4, leg turned 30 deg about Z: its end site swings toward +x.
    leg_end = positions[2, 3] + quat_mul_vec(rotations[2, 3], m.end_sites[3])
    np.testing.assert_allclose(leg_end, [14 + 90 * np.sin(np.pi / 6), 2 - 90 * np.cos(np.pi / 6), 3], atol=1e-12)


def test_forward_kinematics_batched_equals_unbatched(bundled_bvh_files):
    m = bvh.load(bundled_bvh_files[0])
    batch_rot, batch_pos = forward_kinematics(m.rotations[:5], m.positions[:5], m.parents)
    for f in range(5):
        rot, pos = forward_kinematics(m.rotations[f], m.positions[f], m.parents)
        np.testing.assert_allclose(pos, batch_pos[f])
        np.testing.assert_allclose(rot, batch_rot[f])


BUNDLED_NAMES = ["joint_Root", "Hips", "Spine", "Chest", "Neck", "Head", "Shoulder_L", "UpperArm_L", "LowerArm_L",
                 "Hand_L", "Shoulder_R", "UpperArm_R", "LowerArm_R", "Hand_R", "UpperLeg_L", "LowerLeg_L", "Foot_L",
                 "Toes_L", "UpperLeg_R", "LowerLeg_R", "Foot_R", "Toes_R"]


def test_mirror_pairs_bundled_names(bundled_bvh_files):
    assert bvh.load(bundled_bvh_files[0]).names == BUNDLED_NAMES
    pairs = mirror_pairs(BUNDLED_NAMES)
    named = {BUNDLED_NAMES[i]: BUNDLED_NAMES[j] for i, j in enumerate(pairs)}
    assert named["Foot_L"] == "Foot_R" and named["Hand_R"] == "Hand_L" and named["Toes_L"] == "Toes_R"
    assert named["Hips"] == "Hips" and named["Head"] == "Head" and named["joint_Root"] == "joint_Root"
    assert np.all(pairs[pairs] == np.arange(len(pairs)))


@pytest.mark.parametrize("left, right", [
    ("LeftFoot", "RightFoot"), ("mixamorig:LeftArm", "mixamorig:RightArm"), ("left_knee", "right_knee"),
    ("Foot_L", "Foot_R"), ("L_Hand", "R_Hand"), ("foot.l", "foot.r"), ("Bip01 L Thigh", "Bip01 R Thigh"),
    ("lFoot", "rFoot"), ("LShoulder", "RShoulder"), ("HandL", "HandR"), ("LEFTLEG", "RIGHTLEG"),
])
def test_mirror_pairs_conventions(left, right):
    names = ["Hips", "Spine", left, "LowerBack", right, "Head"]
    assert mirror_pairs(names).tolist() == [0, 1, 4, 3, 2, 5]


def test_mirror_pairs_ignores_unmatched_sides():
    assert mirror_pairs(["Hips", "LeftFoot", "Lamp", "Rope"]).tolist() == [0, 1, 2, 3]


def test_mirror_reflects_global_positions_and_twice_is_identity(bundled_bvh_files):
    m = bvh.load(next(p for p in bundled_bvh_files if "walk-turn-left" in p.name))
    mirrored = mirror(m)
    pairs = mirror_pairs(m.names)
    np.testing.assert_allclose(mirrored.global_positions(), m.global_positions()[:, pairs] * [-1, 1, 1], atol=1e-12)
    back = mirror(mirrored)
    np.testing.assert_allclose(back.rotations, m.rotations, atol=1e-15)
    np.testing.assert_allclose(back.positions, m.positions, atol=1e-15)
    np.testing.assert_allclose(back.offsets, m.offsets, atol=1e-15)
    assert m.rotations is not back.rotations and np.isfinite(mirror(m).rotations).all()


def _heading_change(motion):
    """Total turn (radians, positive = toward +X from +Z, i.e. about +Y) of the hip line's normal."""
    g = motion.global_positions()
    across = g[:, motion.joint_index("UpperLeg_L")] - g[:, motion.joint_index("UpperLeg_R")]
    facing = np.cross(across, np.array([0.0, 1.0, 0.0]))  # the hip line's horizontal normal
    yaw = np.unwrap(np.arctan2(facing[:, 0], facing[:, 2]))
    return yaw[-1] - yaw[0]


def test_mirrored_left_turn_turns_right(bundled_bvh_files):
    m = bvh.load(next(p for p in bundled_bvh_files if "walk-turn-left" in p.name))
    turn, mirrored_turn = _heading_change(m), _heading_change(mirror(m))
    assert abs(turn) > np.radians(45)
    assert mirrored_turn == pytest.approx(-turn, abs=1e-9)
    # The hips rotation's yaw flips sign as well.
    hips = m.joint_index("Hips")
    yaw = np.unwrap(quat_to_yaw(m.global_rotations()[:, hips]))
    mirrored_yaw = np.unwrap(quat_to_yaw(mirror(m).global_rotations()[:, hips]))
    assert (mirrored_yaw[-1] - mirrored_yaw[0]) == pytest.approx(-(yaw[-1] - yaw[0]), abs=1e-6)


def test_mirror_keep_skeleton_on_bundled_clips(bundled_bvh_files):
    straight = bvh.load(next(p for p in bundled_bvh_files if p.name.startswith("dataset-2_walk_normal")))
    turning = bvh.load(next(p for p in bundled_bvh_files if "walk-turn-left" in p.name))
    for m in (straight, turning):
        kept = mirror_keep_skeleton(m)
        np.testing.assert_array_equal(kept.offsets, m.offsets)
        # Same places as the exact mirror, up to the skeleton's own asymmetry (hips 0.73 cm off centre).
        gap = np.linalg.norm(kept.global_positions() - mirror(m).global_positions(), axis=-1)
        assert gap.max() < 0.02
        assert np.allclose(np.linalg.norm(kept.rotations, axis=-1), 1.0)
        back = mirror_keep_skeleton(kept)
        np.testing.assert_allclose(np.abs(np.sum(back.rotations * m.rotations, axis=-1)), 1.0, atol=1e-9)
        np.testing.assert_allclose(back.positions, m.positions, atol=1e-9)
    # On this skeleton the exact mirror reflects the spine's offset; this one keeps joint rotations
    # comparable: a mirrored straight walk's torso rotations stay close to the original's.
    def mean_angle_deg(a, b):
        return np.degrees(2 * np.arccos(np.clip(np.abs(np.sum(a * b, axis=-1)), 0, 1))).mean(axis=0)
    torso = [straight.joint_index(n) for n in ("Hips", "Spine", "Chest")]
    assert np.all(mean_angle_deg(mirror_keep_skeleton(straight).rotations, straight.rotations)[torso] < 20)
    assert np.all(mean_angle_deg(mirror(straight).rotations, straight.rotations)[torso[:1]] > 90)


def test_resample_keeps_duration_and_end_poses(bundled_bvh_files):
    m = bvh.load(bundled_bvh_files[0])
    for fps in (60.0, 24.0, 30.0):
        r = resample(m, fps)
        assert r.duration == pytest.approx(m.duration, abs=1e-12)
        assert r.fps == pytest.approx(fps, rel=0.02)
        np.testing.assert_allclose(r.rotations[[0, -1]], m.rotations[[0, -1]], atol=1e-12)
        np.testing.assert_allclose(r.positions[[0, -1]], m.positions[[0, -1]], atol=1e-12)
    doubled = resample(m, 2 * m.fps)
    assert doubled.num_frames == 2 * m.num_frames - 1
    np.testing.assert_allclose(doubled.rotations[::2], m.rotations, atol=1e-9)
    midpoint = (m.positions[:-1] + m.positions[1:]) / 2
    np.testing.assert_allclose(doubled.positions[1::2], midpoint, atol=1e-9)
    assert np.allclose(np.linalg.norm(doubled.rotations, axis=-1), 1.0)
    assert m.num_frames == bvh.load(bundled_bvh_files[0]).num_frames  # input untouched
