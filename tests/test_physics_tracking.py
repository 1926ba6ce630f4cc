"""The simulated body tracking real mocap (the bundled clips, at the runtime's 60 Hz) in a real MuJoCo
simulation: a walk within the tracking targets and on the floor, a standing pose held, a push that
shows and is recovered from, no help from the hand of god and the body falls, other rigs stand, and a
crowd's bodies do not disturb each other."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import BVH_DIR
from test_other_skeleton import SKELETONS, retarget
from test_physics import FLOOR, WALK, bundled_body

from pfnn_core.motion import bvh
from pfnn_core.motion.kinematics import resample
from pfnn_core.physics.body import PhysicsBody
from pfnn_core.physics.events import PushEvent
from pfnn_core.physics.fit import fit_from_motions
from pfnn_core.physics.measures import depth_below_floor, recovery_time
from pfnn_core.physics.replay import track_motion
from pfnn_core.physics.settings import PhysicsSettings
from pfnn_core.physics.tracker import PhysicsTracker
from pfnn_core.skeleton import contact_joint_order, foot_joints, skeleton_dict

DT = 1 / 60
STANDING = BVH_DIR / "dataset-2_raise-up-both-hands_normal_001.bvh.gz"


@pytest.fixture
def body():
    return bundled_body()[2]


def clip(path, seconds=None):
    motion = resample(bvh.load(path), 60)
    frames = motion.num_frames if seconds is None else int(seconds * 60)
    return motion.global_positions()[:frames], motion.global_rotations()[:frames]


def standing_frames(path, seconds: float):
    """A still standing pose (the clip's first frame) held for `seconds`."""
    positions, rotations = clip(path, 0.1)
    frames = int(seconds * 60)
    return np.repeat(positions[:1], frames, axis=0), np.repeat(rotations[:1], frames, axis=0)


def test_a_mocap_walk_is_tracked_within_the_targets_and_on_the_floor(body):
    positions, rotations = clip(WALK)
    tracked = track_motion(PhysicsTracker(body), positions, rotations, DT)
    error = tracked.tracking_error
    assert np.isfinite(tracked.positions).all() and tracked.resets == 0
    assert np.median(error) < 0.03 and np.percentile(error, 95) < 0.08
    feet = tracked.positions[:, body.plan.contact_joints]
    assert depth_below_floor(feet, FLOOR).max() < 0.01
    # the feet carry the body: the floor pushes up on them about as much as the body weighs
    support = tracked.foot_forces[:, :, 1].sum(axis=1)
    assert 0.5 * 9.81 * body.mass < np.median(support) < 1.5 * 9.81 * body.mass


def test_a_standing_pose_is_held_for_ten_seconds_within_two_centimetres(body):
    positions, rotations = standing_frames(STANDING, 10.0)
    tracked = track_motion(PhysicsTracker(body), positions, rotations, DT)
    assert tracked.tracking_error.max() < 0.02
    hips = body.plan.root
    assert np.linalg.norm(tracked.positions[:, hips] - positions[:, hips], axis=-1).max() < 0.02
    # standing on its own feet: the hand of god holds little of the body's weight
    assert np.median(tracked.root_force) < 0.3 * 9.81 * body.mass


def test_a_push_at_the_chest_changes_the_motion_and_the_tracking_recovers(body):
    positions, rotations = clip(WALK)
    calm = track_motion(PhysicsTracker(body), positions, rotations, DT)
    push_at = 2.0
    pushed = track_motion(PhysicsTracker(body), positions, rotations, DT, [PushEvent(push_at, (30.0, 0.0, 0.0))])
    frame = int(push_at * 60)
    np.testing.assert_array_equal(calm.positions[:frame], pushed.positions[:frame])  # nothing before the push
    moved = np.linalg.norm(pushed.positions - calm.positions, axis=-1).max(axis=1)
    assert moved[frame:frame + 60].max() > 0.05  # the push shows: 5 cm and more
    hips = body.plan.root
    assert pushed.positions[frame + 20, hips, 0] - calm.positions[frame + 20, hips, 0] > 0.03  # along +x, the push
    assert recovery_time(pushed.tracking_error, pushed.push_frames, DT)[0] <= 2.0
    assert moved[frame + 180] < 0.03  # 3 s later it walks where it was steered


def test_without_the_hand_of_god_the_body_falls(body):
    positions, rotations = standing_frames(STANDING, 3.0)
    tracked = track_motion(PhysicsTracker(body, PhysicsSettings(root_help=0.0)), positions, rotations, DT)
    hips = body.plan.root
    assert positions[0, hips, 1] - tracked.positions[:, hips, 1].min() > 0.3
    assert np.all(tracked.root_force == 0.0)


@pytest.mark.parametrize("kind", sorted(SKELETONS))
def test_another_rig_builds_a_body_that_stands(kind):
    """The retargeted rigs of test_other_skeleton (Mixamo-like with world-aligned joint axes, Poser-like
    with bone-local axes and no toe joints): fitted to their own mocap, the body stands on its feet."""
    spec, changes, motions = SKELETONS[kind], None, []
    for name in ("dataset-2_walk_normal_001.bvh.gz", "dataset-2_raise-up-both-hands_normal_001.bvh.gz"):
        motion, changes, keep = retarget(bvh.load(BVH_DIR / name), spec["mapping"], changes, spec["axes"],
                                         spec["root_channels"], spec["joint_channels"], spec["unit_m"], 60.0)
        motions.append(motion)
    source = bvh.load(BVH_DIR / "dataset-2_walk_normal_001.bvh.gz")
    mine = contact_joint_order(foot_joints(motions[0].names, motions[0].parents))
    bundled = contact_joint_order(foot_joints(source.names, source.parents))
    # the same physical joints rest where the bundled ones do (a rig without toes: its ankles twice)
    floor = np.array([FLOOR[bundled.index(source.names.index(spec["mapping"][motions[0].names[j]]))] for j in mine])
    rig = skeleton_dict(motions[0])
    rig_body = PhysicsBody.build(rig, fit_from_motions(motions, floor), floor, use_cache=False)
    positions, rotations = motions[1].global_positions()[:1], motions[1].global_rotations()[:1]
    tracked = track_motion(PhysicsTracker(rig_body), np.repeat(positions, 180, 0), np.repeat(rotations, 180, 0), DT)
    assert tracked.tracking_error.max() < 0.02 and tracked.resets == 0
    assert depth_below_floor(tracked.positions[:, mine], floor).max() < 0.01


def test_a_crowds_bodies_do_not_disturb_each_other(body):
    """Two characters in one tracker (one model, a data each): the second walks exactly as it does alone,
    though the first stands still beside it."""
    walk_pos, walk_rot = clip(WALK, 2.0)
    stand_pos, stand_rot = standing_frames(STANDING, 2.0)
    alone = track_motion(PhysicsTracker(body), walk_pos, walk_rot, DT)
    crowd = PhysicsTracker(body, batch=2)
    for frame in range(len(walk_pos)):
        pose = crowd.step(np.stack([stand_pos[frame], walk_pos[frame]]), np.stack([stand_rot[frame], walk_rot[frame]]), DT)
        np.testing.assert_array_equal(pose.positions[1], alone.positions[frame])


def test_stepping_back_restores_the_body_and_the_ticks_after_it_run_the_same(body):
    """A snapshot after 1 s of a walk, 30 more ticks, the snapshot put back: the same 30 ticks give the
    same body, bit for bit (MuJoCo's state, the warm start and the tracker's own values all restored)."""
    positions, rotations = clip(WALK, 2.0)
    tracker = PhysicsTracker(body)
    for frame in range(60):
        tracker.step(positions[frame:frame + 1], rotations[frame:frame + 1], DT)
    kept = tracker.snapshot()
    tracker.push([0.0, 0.0, 20.0])  # pending when the snapshot is put back: it must go too
    first = [tracker.step(positions[f:f + 1], rotations[f:f + 1], DT) for f in range(60, 90)]
    tracker.restore(kept)
    again = [tracker.step(positions[f:f + 1], rotations[f:f + 1], DT) for f in range(60, 90)]
    assert np.linalg.norm(first[-1].positions - again[-1].positions, axis=-1).max() > 0.01  # the push showed
    tracker.restore(kept)
    tracker.push([0.0, 0.0, 20.0])
    replay = [tracker.step(positions[f:f + 1], rotations[f:f + 1], DT) for f in range(60, 90)]
    for a, b in zip(first, replay):
        np.testing.assert_array_equal(a.positions, b.positions)
        np.testing.assert_array_equal(a.foot_forces, b.foot_forces)
        assert a.root_force[0] == b.root_force[0]


def test_the_viewers_body_steps_back_with_the_transport(body):
    """`LivePhysics` (the viewer's body): stepping back to a tick shows the body as it was there and the
    next ticks replay it exactly; a snapshot from before the physics was on starts the body afresh."""
    from types import SimpleNamespace

    from app.sources.physics import LivePhysics

    positions, rotations = clip(WALK, 2.0)
    live = LivePhysics(PhysicsSettings(), make_tracker=lambda character, settings: PhysicsTracker(body, settings))
    assert live.snapshot() is None  # off
    live.set_mode("on", None)

    def tick(frame):
        live.step(SimpleNamespace(world_joint_pos=positions[frame:frame + 1], world_joint_rot=rotations[frame:frame + 1]), DT)
        return live.pose

    for frame in range(40):
        tick(frame)
    kept, shown = live.snapshot(), live.pose
    later = [tick(frame).positions.copy() for frame in range(40, 70)]
    live.restore(kept)
    assert live.pose is shown and len(live.errors) == 40
    for frame, before in zip(range(40, 70), later):
        np.testing.assert_array_equal(tick(frame).positions, before)
    live.restore(None)
    assert live.pose is None and not live.errors and not live.tracker._started.any()


def test_the_floor_carries_a_standing_body_on_every_tick_and_a_walking_one_whenever_it_stands(body):
    """The floor's force is the mean over each tick's substeps (a sole that leaves the floor for one
    substep does not read as no force). Standing still, from 0.5 s on (the body settles onto its soles),
    the floor carries the body's weight plus what the hold on the hips presses it down with (the
    kinematic soles lie a few millimetres into the floor; the hold gives at most a quarter of the
    weight), on every tick. Walking, a tick with no floor force while a simulated foot is within 1 cm
    of its floor level is a short hop of the whole body, under 3% of the ticks, and the soles' own
    mean forces (summed) agree with the floor's within 5% of the weight."""
    weight = 9.81 * body.mass
    positions, rotations = standing_frames(STANDING, 10.0)
    standing = track_motion(PhysicsTracker(body), positions, rotations, DT)
    settled = slice(30, None)
    assert standing.floor_force[settled].min() > 0.95 * weight
    assert standing.floor_force[settled].max() < 1.25 * weight
    assert standing.root_force[settled].max() < 0.25 * weight
    positions, rotations = clip(WALK)
    walking = track_motion(PhysicsTracker(body), positions, rotations, DT)
    near = ((walking.positions[:, body.plan.contact_joints, 1] - FLOOR) < 0.01).any(axis=1)
    assert np.mean((walking.floor_force < 1.0) & near) < 0.03
    # the soles' forces are means over the substeps too: together they are the floor's force
    soles = walking.foot_forces[:, :, 1].sum(axis=1)
    assert np.mean((soles < 1.0) & near) < 0.03
    assert np.median(np.abs(soles - walking.floor_force)) < 0.05 * weight
    assert 0.9 * weight < np.median(walking.floor_force) < 1.2 * weight


def test_a_sole_lifted_for_the_last_of_four_substeps_still_reads_its_mean_force(body, monkeypatch):
    """A standing body at the default 8 substeps a tick; on one tick the contacts of the joint
    carrying the most are switched off for the last quarter of the tick (its last 2 substeps: MuJoCo
    then finds no contact of those soles), so the contacts read after the last substep show that
    joint at 0 N. Its force is the mean over the tick's substeps: about three quarters of the tick
    before (6 of 8 substeps), not 0 N; and standing, the four joints' mean forces together are the
    floor's mean force on the body within 3%."""
    import mujoco

    tracker = PhysicsTracker(body, PhysicsSettings())
    substeps = tracker.settings.substeps
    assert substeps == 8
    positions, rotations = standing_frames(STANDING, 1.0)
    tracker.reset()
    for frame in range(len(positions) - 1):
        pose = tracker.step(positions[frame:frame + 1], rotations[frame:frame + 1], DT)
    before = pose.foot_forces[0, :, 1]
    assert abs(before.sum() - pose.floor_force[0]) < 0.03 * pose.floor_force[0]
    slot = int(np.argmax(before))
    assert before[slot] > 50.0
    lifted = body.sole_index[body.sole_owner == slot]
    contype, conaffinity = body.model.geom_contype.copy(), body.model.geom_conaffinity.copy()
    step, calls = mujoco.mj_step, []

    def step_lifting_the_last(model, data):
        calls.append(1)
        if len(calls) > substeps - 2:
            model.geom_contype[lifted], model.geom_conaffinity[lifted] = 0, 0
        step(model, data)
        model.geom_contype[:], model.geom_conaffinity[:] = contype, conaffinity

    monkeypatch.setattr(mujoco, "mj_step", step_lifting_the_last)
    pose = tracker.step(positions[-1:], rotations[-1:], DT)
    assert len(calls) == substeps
    assert tracker.sole_forces(tracker.datas[0])[slot, 1] == 0.0  # read after the last substep: 0 N
    assert 0.6 * before[slot] < pose.foot_forces[0, slot, 1] < 0.9 * before[slot]


def test_the_soles_sensors_read_what_the_contacts_give(body):
    """The tick sums the soles' contact sensors (MuJoCo fills them inside each step) instead of reading
    every contact in Python after each substep: after every tick of a mocap walk the sensors summed per
    contact joint equal the floor's force on that joint's soles computed contact by contact
    (`mj_contactForce` in the contact's frame, turned to world axes), also while a foot carries the body."""
    positions, rotations = clip(WALK, 3.0)
    tracker = PhysicsTracker(body)
    largest = 0.0
    for frame in range(len(positions)):
        tracker.step(positions[frame:frame + 1], rotations[frame:frame + 1], DT)
        data = tracker.datas[0]
        sensed = body.sole_sum @ data.sensordata[body.sole_sensors].reshape(-1, 3)
        contacts = tracker.sole_forces(data)
        np.testing.assert_allclose(sensed, contacts, atol=1e-6)
        largest = max(largest, float(contacts[:, 1].max()))
    assert largest > 9.81 * body.mass  # a heel strike carries more than the body's weight
