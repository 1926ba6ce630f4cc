"""The physics layer's body, its fit to the mocap, its settings and its measures, against a real MuJoCo
model of the bundled skeleton (no mocks). Tracking is tested in test_physics_tracking.py, the drive
and the evaluation in test_physics_drive.py."""
from __future__ import annotations

import functools
import math

import mujoco
import numpy as np
import pytest
from conftest import BVH_DIR, ROOT

from pfnn_core.motion import bvh
from pfnn_core.physics import measures
from pfnn_core.physics.body import PhysicsBody
from pfnn_core.physics.events import MAX_IMPULSE, parse_events
from pfnn_core.physics.fit import fit_from_folder, fit_from_motions, rotation_angle
from pfnn_core.physics.geometry import body_plan
from pfnn_core.physics.mjcf import mjcf_text, plan_digest
from pfnn_core.physics.settings import PhysicsSettings
from pfnn_core.physics.tracker import PhysicsTracker
from pfnn_core.skeleton import skeleton_dict

# The shipped model's floor levels (its checkpoint's floor_heights): Foot_L, Toes_L, Foot_R, Toes_R.
FLOOR = np.array([0.11778258, 0.04379449, 0.12094561, 0.04510665])
WALK = BVH_DIR / "dataset-2_walk_normal_001.bvh.gz"


@functools.lru_cache(maxsize=1)
def bundled_body() -> tuple[dict, object, PhysicsBody]:
    """(skeleton, fit, body) of the bundled rig, fitted to the bundled clips (built once per session)."""
    skeleton = skeleton_dict(bvh.load(WALK))
    fit = fit_from_folder(ROOT / "assets" / "bvh", skeleton["names"], FLOOR)
    return skeleton, fit, PhysicsBody.build(skeleton, fit, FLOOR)


@pytest.fixture
def skeleton() -> dict:
    return bundled_body()[0]


@pytest.fixture
def fit():
    return bundled_body()[1]


@pytest.fixture
def body() -> PhysicsBody:
    return bundled_body()[2]


def test_the_mjcf_loads_and_its_bones_are_the_skeletons(body, skeleton, tmp_path):
    offsets = np.asarray(skeleton["offsets"], float)
    lengths = body.bone_lengths()
    assert set(lengths) == set(body.joints[1:].tolist()) and len(lengths) == 20  # every joint below the hips
    for joint, length in lengths.items():
        assert length == pytest.approx(float(np.linalg.norm(offsets[joint])), abs=1e-6)
    saved = body.save(tmp_path / "body.xml")
    reloaded = mujoco.MjModel.from_xml_path(str(saved))
    assert reloaded.nbody == body.model.nbody and reloaded.ngeom == body.model.ngeom
    assert 45.0 < body.mass < 75.0  # capsules of a 1.65 m adult at the densities of flesh


def test_the_body_is_cached_by_its_plans_hash_and_the_hash_follows_the_skeleton(body, skeleton, fit):
    again = PhysicsBody.build(skeleton, fit, FLOOR)
    assert again.xml == body.xml
    longer = dict(skeleton, offsets=(np.asarray(skeleton["offsets"]) * [1.0] * 3).tolist())
    longer["offsets"][15] = [0.45, 0.0, 0.0]  # a longer shin
    assert plan_digest(body_plan(longer, fit, FLOOR)) != plan_digest(body.plan)
    assert "pfnn-body-" + plan_digest(body.plan) in mjcf_text(body.plan)


def test_overlapping_rest_pairs_and_the_two_lower_legs_never_collide(body):
    names = body.plan.names
    excluded = {(names[a], names[b]) for a, b in body.plan.excluded}
    assert ("Chest", "Head") in excluded  # the head sphere sits on the chest's capsule in the reference pose
    assert ("Foot_L", "Foot_R") in excluded and ("LowerLeg_L", "Toes_R") in excluded
    assert ("Hand_L", "UpperLeg_L") not in excluded  # a hand swinging into a thigh does collide
    for a, b in body.plan.excluded:  # MuJoCo sees them as excluded pairs
        pair = (body.model.body(names[a]).id, body.model.body(names[b]).id)
        signatures = {(int(s >> 16), int(s & 0xFFFF)) for s in body.model.exclude_signature}
        assert pair in signatures or pair[::-1] in signatures


def test_the_soles_lie_on_the_floor_under_a_planted_mocap_foot(body, fit):
    """Put the body on mocap frames where a foot is flat on the floor: its sole box bottoms are at the
    floor (within 1.5 cm, the planted band of the fit), neither above nor through it."""
    motion = bvh.load(WALK)
    rotations, positions = motion.global_rotations(), motion.global_positions()
    contact = body.plan.contact_joints
    flat = np.flatnonzero((np.abs(positions[:, contact[2:4], 1] - FLOOR[2:4]) < 0.01).all(axis=1))
    assert len(flat) > 5
    corners = measures.sole_corners(body, positions[flat], rotations[flat])
    right = corners[:, 16:32, 1]  # the right ankle's and toe's boxes (the left's come first)
    assert np.all(np.abs(right.min(axis=1)) < 0.015)


def test_the_fit_centres_each_joint_and_bounds_its_swing(fit, skeleton):
    """The mocap's local rotations stay inside the fitted cones (they are fitted to hold 99.9% of the
    frames, plus a margin), and the reference is near the middle: the typical swing is well inside."""
    motion = bvh.load(WALK)
    local = motion.rotations
    from pfnn_core.math.quat import quat_inv_mul

    swing = rotation_angle(quat_inv_mul(fit.reference[None, 2:], local[:, 2:]))  # below the hips
    assert np.mean(swing <= fit.limits[None, 2:]) > 0.995
    assert np.all(np.median(swing, axis=0) < 0.6 * fit.limits[2:])
    knee = skeleton["names"].index("LowerLeg_L")
    assert math.radians(40) < fit.limits[knee] < math.radians(170)


def test_a_fit_without_a_flat_foot_is_refused_with_the_joint_named():
    motion = bvh.load(WALK)
    motion.positions[:, 1, 1] += 0.5  # the whole body half a metre up: no foot ever on the floor
    with pytest.raises(ValueError, match="Foot_L"):
        fit_from_motions([motion], FLOOR)


@pytest.mark.parametrize("name, value, expected", [
    ("body_mass", 0.0, 20.0), ("servo_frequency", 1e9, 20.0), ("substeps", 0, 1), ("root_help", -1.0, 0.0),
    ("friction", float("nan"), 1.0), ("substeps", 7.6, 8),
    ("root_frequency", 30.0, 16.0),  # above 16 Hz the body ran away (docs/PHYSICS.md)
])
def test_bad_settings_are_clamped_with_a_message_and_the_body_still_steps(body, name, value, expected):
    settings = PhysicsSettings()
    setattr(settings, name, value)
    tracker = PhysicsTracker(body, settings)
    motion = bvh.load(WALK)
    rotations, positions = motion.global_rotations()[:3], motion.global_positions()[:3]
    for frame in range(3):
        pose = tracker.step(positions[frame:frame + 1], rotations[frame:frame + 1], 1 / 60)
    assert getattr(settings, name) == pytest.approx(expected)
    assert any(name in message for message in tracker.take_messages())
    assert np.isfinite(pose.positions).all()


def test_settings_from_text_refuse_unknown_names_and_wrong_kinds():
    settings = PhysicsSettings()
    with pytest.raises(ValueError, match="unknown physics setting 'gain'"):
        settings.assign("gain", "3")
    with pytest.raises(ValueError, match="substeps: expected an integer"):
        settings.assign("substeps", "many")
    assert "using 20" in settings.assign("servo_frequency", "400")
    assert settings.assign("self_collision", "off") is None and settings.self_collision is False


def test_pushes_larger_than_the_limit_are_scaled_and_bad_ones_refused(body):
    tracker = PhysicsTracker(body)
    with pytest.raises(ValueError, match="3 finite numbers"):
        tracker.push([1.0, float("inf"), 0.0])
    tracker.push([0.0, 0.0, 1000.0])
    assert "scaled down" in tracker.take_messages()[0]
    assert np.linalg.norm(tracker._pending[0]) == pytest.approx(MAX_IMPULSE)


@pytest.mark.parametrize("events, message", [
    ({"at": 1}, "expected a list"), ([{"at": -1, "push": [1, 0, 0]}], r"events\[0\].at"),
    ([{"at": 1, "push": [1, 0]}], r"events\[0\].push: expected 3 numbers"),
    ([{"at": 1, "push": [1, 0, 0], "force": 2}], r"events\[0\].force: unknown field"),
    ([{"at": 1, "push": [300, 0, 0]}], "more than the largest push"),
])
def test_push_events_are_validated_naming_the_field(events, message):
    with pytest.raises(ValueError, match=message):
        parse_events(events)


def test_push_events_come_back_sorted_by_time():
    events = parse_events([{"at": 3, "push": [0, 0, 10]}, {"at": 1.5, "push": [30, 0, 0]}])
    assert [e.at for e in events] == [1.5, 3.0] and events[0].push == (30.0, 0.0, 0.0)


def test_recovery_time_counts_until_the_error_stays_low():
    error = np.full(600, 0.01)
    error[100:130] = 0.08  # 0.5 s above 5 cm after the push at frame 100
    error[140:142] = 0.06  # and once more, briefly
    times = measures.recovery_time(error, np.array([100, 400]), 1 / 60)
    assert times[0] == pytest.approx(42 / 60) and times[1] == 0.0
    error[400:] = 0.2  # never back
    assert measures.recovery_time(error, np.array([400]), 1 / 60)[0] == measures.RECOVERY_WINDOW_S


def test_depth_below_the_floor_is_the_deepest_contact_joint():
    feet = np.zeros((3, 4, 3))
    feet[..., 1] = FLOOR + 0.05
    feet[1, 2, 1] = FLOOR[2] - 0.03
    np.testing.assert_allclose(measures.depth_below_floor(feet, FLOOR), [0.0, 0.03, 0.0], atol=1e-12)


def test_the_centre_of_mass_is_over_the_feet_of_a_standing_mocap_frame_and_not_when_shifted(body):
    standing = bvh.load(BVH_DIR / "dataset-2_raise-up-both-hands_normal_001.bvh.gz")
    rotations, positions = standing.global_rotations()[:1], standing.global_positions()[:1]
    centre = measures.kinematic_centre_of_mass(body, positions, rotations)
    hips = body.plan.root
    assert np.linalg.norm(centre[0, [0, 2]] - positions[0, hips, [0, 2]]) < 0.1
    inside = measures.support(body, positions, rotations, centre, np.array([True]))
    assert inside.inside_share == 1.0 and inside.worst_outside == 0.0
    shifted = measures.support(body, positions, rotations, centre + [0.5, 0.0, 0.0], np.array([True]))
    assert shifted.inside_share == 0.0 and 0.3 < shifted.worst_outside < 0.5
