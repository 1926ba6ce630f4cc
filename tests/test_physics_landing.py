"""The landing hold (`physics/landing.py`): the leg IK that turns a stance leg's targets, the held
offsets' rules, and in a real MuJoCo simulation of the shipped model's runtime motion (foot locks on)
a simulated body whose planted soles skate less with it than without it."""
from __future__ import annotations

import numpy as np
import pytest
from conftest import DEFAULT_MODEL
from test_physics import WALK, bundled_body
from test_physics_tracking import DT, clip

from pfnn_core.evaluation import measures as body_measures
from pfnn_core.math.quat import quat_inv, quat_inv_mul_vec, quat_mul, quat_mul_vec
from pfnn_core.physics.landing import MAX_OFFSET, RELEASE_RATE, LandingHold, leg_ik
from pfnn_core.physics.replay import track_motion
from pfnn_core.physics.settings import PhysicsSettings
from pfnn_core.physics.tracker import PhysicsTracker
from pfnn_core.runtime.ik import leg_chains


def _walk_frame(frame=100):
    positions, rotations = clip(WALK, 3.0)
    return positions[frame], rotations[frame]


def test_the_leg_ik_puts_the_ankle_on_its_target_and_leaves_an_unmoved_leg_as_it_is():
    skeleton = bundled_body()[0]
    positions, rotations = _walk_frame()
    for hip, knee, ankle, _toe in leg_chains(skeleton["names"], np.asarray(skeleton["parents"])):
        same = leg_ik(positions[hip], positions[knee], positions[ankle], rotations[hip], rotations[knee], positions[ankle])
        np.testing.assert_allclose(same[0], rotations[hip], atol=1e-12)
        np.testing.assert_allclose(same[1], rotations[knee], atol=1e-12)
        for move in ([0.02, 0.0, -0.015], [-0.03, 0.0, 0.01]):
            target = positions[ankle] + move
            hip_rot, knee_rot = leg_ik(positions[hip], positions[knee], positions[ankle], rotations[hip], rotations[knee],
                                       target)
            # forward kinematics of the turned leg: the bones keep their lengths, the ankle is on the target
            thigh = quat_mul_vec(hip_rot, quat_inv_mul_vec(rotations[hip], positions[knee] - positions[hip]))
            shin = quat_mul_vec(knee_rot, quat_inv_mul_vec(rotations[knee], positions[ankle] - positions[knee]))
            np.testing.assert_allclose(positions[hip] + thigh + shin, target, atol=1e-9)


def test_warming_compiles_what_a_walks_first_landing_runs():
    """The held legs' IK is compiled when the body is made (`LandingHold.warm`), not at the first landing of
    a walk: there the viewer stood still for seconds the first time on a machine. Its result is untouched."""
    from pfnn_core.physics import landing

    skeleton, _, body = bundled_body()
    hold = LandingHold(skeleton["names"], np.asarray(skeleton["parents"]), body.plan.contact_joints, batch=1)
    positions, rotations = _walk_frame()
    world_pos, world_rot = positions[None].copy(), rotations[None].copy()
    hold.warm(world_pos, world_rot)
    compiled = list(landing._turn_held_legs.signatures)
    assert compiled and not hold.offset.any()  # warming holds nothing
    hold.offset[0, 1] = [0.01, 0.0, -0.01]  # a landing held
    turned = hold.rotations(world_pos, world_rot)
    assert list(landing._turn_held_legs.signatures) == compiled  # nothing new compiled at the landing
    assert not np.array_equal(turned, world_rot) and np.array_equal(world_rot, rotations[None])


def test_a_landing_offset_is_taken_when_the_foot_plants_kept_while_planted_and_released_after_it_lifts():
    skeleton, _, body = bundled_body()
    hold = LandingHold(skeleton["names"], np.asarray(skeleton["parents"]), body.plan.contact_joints, batch=1)
    kinematic = np.zeros((1, 4, 3))
    simulated = kinematic + np.array([0.02, 0.01, -0.01])  # 2 cm ahead and 1 cm up and aside of the pin
    up, down = np.array([[False, False]]), np.array([[True, False]])
    hold.update(up, simulated, kinematic, 0.5, DT)
    assert not hold.offset.any()  # a foot in the air holds nothing
    hold.update(down, simulated, kinematic, 0.5, DT)
    np.testing.assert_allclose(hold.offset[0, 0], [0.01, 0.0, -0.005])  # half of it, horizontal only
    assert not hold.offset[0, 1].any()
    hold.update(down, simulated + 0.05, kinematic, 0.5, DT)  # planted: kept as it was taken at the landing
    np.testing.assert_allclose(hold.offset[0, 0], [0.01, 0.0, -0.005])
    ticks = int(round(0.3 / DT))  # lifted: gone within 0.3 s (a critically damped spring at RELEASE_RATE)
    sizes = []
    for _ in range(ticks):
        hold.update(up, simulated, kinematic, 0.5, DT)
        sizes.append(np.linalg.norm(hold.offset[0, 0]))
    assert np.all(np.diff(sizes) <= 0) and sizes[-1] < 0.01 * sizes[0] and RELEASE_RATE * 0.3 > 5
    far = kinematic + np.array([0.3, 0.0, 0.0])  # a landing far off (a stumble) is held at most MAX_OFFSET
    hold.update(down, far, kinematic, 1.0, DT)
    assert np.linalg.norm(hold.offset[0, 0]) == pytest.approx(MAX_OFFSET)
    hold.reset([0])
    assert not hold.offset.any() and not hold.held.any()


def test_a_planted_legs_servos_are_scaled_for_its_tick_only():
    """`stance_stiffness` scales the servos of the legs whose kinematic foot is planted (hip, knee,
    ankle, toe) and nothing else, and the model's gains are the settings' own again after the tick."""
    body = bundled_body()[2]
    positions, rotations = clip(WALK, 1.0)
    tracker = PhysicsTracker(body, PhysicsSettings(stance_stiffness=0.5))
    for frame in range(30):
        tracker.step(positions[frame:frame + 1], rotations[frame:frame + 1], DT)
    np.testing.assert_array_equal(body.model.jnt_stiffness[body.joint_ids], body.kp)
    np.testing.assert_array_equal(body.model.dof_damping[body.dof_index], np.repeat(body.kv, 3))
    scale = tracker._stance_scale(np.array([[True, True, False, False]]))[0]
    names = [body.plan.names[j] for j in body.ball_joints]
    left = {names[n] for n in np.flatnonzero(scale == 0.5)}
    assert left == {"UpperLeg_L", "LowerLeg_L", "Foot_L", "Toes_L"}
    assert np.all(scale[[n for n, name in enumerate(names) if name not in left]] == 1.0)


def test_the_hold_is_kept_and_restored_with_a_snapshot():
    body = bundled_body()[2]
    positions, rotations = clip(WALK, 2.0)
    tracker = PhysicsTracker(body, PhysicsSettings(landing_hold=1.0))
    for frame in range(60):
        tracker.step(positions[frame:frame + 1], rotations[frame:frame + 1], DT)
    kept = tracker.snapshot()
    first = [tracker.step(positions[f:f + 1], rotations[f:f + 1], DT).positions for f in range(60, 90)]
    tracker.landing.offset[:] = 0.04  # spoiled: the snapshot must bring the held offsets back
    tracker.restore(kept)
    for frame, before in zip(range(60, 90), first):
        np.testing.assert_array_equal(tracker.step(positions[frame:frame + 1], rotations[frame:frame + 1], DT).positions,
                                      before)


@pytest.mark.slow
def test_with_the_hold_the_runtimes_feet_skate_less_on_a_curving_walk():
    """The shipped model's runtime (foot locks and IK on) walking a curve; its kinematic motion tracked
    by the body with the defaults and without the landing hold, at the soles' earlier contact time
    (5 ms) and with the stance legs as stiff as the swing's. Measured: skating 0.1226 m/s without,
    0.1047 with the defaults (kinematic 0.0868); tracking error median 0.36 -> 0.63 cm, p95 1.70 ->
    2.06 cm."""
    from pfnn_core.drive.cli import run_drive
    from pfnn_core.models.registry import load_checkpoint
    from pfnn_core.physics.layer import physics_for

    checkpoint = load_checkpoint(DEFAULT_MODEL)
    curve = {"name": "curve", "segments": [{"duration": 0.5, "move": [0, 0]}, {"duration": 2.5, "move": [0.3, 0.4]},
                                           {"duration": 2.0, "move": [0.5, -0.2]}]}
    result = run_drive(curve, checkpoint, None, device="cpu")
    positions, rotations = np.asarray(result.joint_positions), result.motion.global_rotations()
    card = checkpoint.card
    floor, contact = np.asarray(card.floor_heights), card.skeleton["contact_joints"]
    skating, errors = {}, {}
    defaults = PhysicsSettings()
    assert defaults.landing_hold > 0.0
    before = PhysicsSettings(landing_hold=0.0, sole_contact_time=0.005, stance_stiffness=1.0)
    for name, settings in (("off", before), ("on", defaults)):
        tracker = physics_for(card.skeleton, floor, 1, settings, trained_on=card.trained_on)
        tracked = track_motion(tracker, positions, rotations, result.dt)
        assert np.isfinite(tracked.positions).all() and tracked.resets == 0
        skating[name] = body_measures.foot_skating(tracked.positions[:, contact], floor, result.dt).mean()
        errors[name] = tracked.tracking_error
    assert skating["on"] < 0.92 * skating["off"]
    assert np.median(errors["on"]) < 0.03 and np.percentile(errors["on"], 95) < 0.08


def _random_legs(count: int, seed: int = 3):
    """Random bent legs (hip, knee, ankle points; thigh 0.3-0.5 m, shin 0.3-0.5 m, knee bent 10-120 degrees)
    with random global rotations of hip and knee."""
    rng = np.random.default_rng(seed)
    hips = rng.normal(size=(count, 3))
    thighs = rng.normal(size=(count, 3))
    thighs *= rng.uniform(0.3, 0.5, (count, 1)) / np.linalg.norm(thighs, axis=-1, keepdims=True)
    side = np.cross(thighs, rng.normal(size=(count, 3)))
    side /= np.linalg.norm(side, axis=-1, keepdims=True)
    bend = np.radians(rng.uniform(10.0, 120.0, count))
    along = thighs / np.linalg.norm(thighs, axis=-1, keepdims=True)
    shins = (np.cos(bend)[:, None] * along + np.sin(bend)[:, None] * np.cross(side, along))
    shins *= rng.uniform(0.3, 0.5, (count, 1))
    rotations = rng.normal(size=(count, 2, 4))
    rotations /= np.linalg.norm(rotations, axis=-1, keepdims=True)
    return hips, hips + thighs, hips + thighs + shins, rotations[:, 0], rotations[:, 1]


def test_the_plain_two_bone_ik_reaches_keeps_the_bones_and_leaves_an_unmoved_leg_as_it_is():
    """`leg_ik` (the runtime's compiled `ik.solve_leg`, plain): on 200 random bent legs, a reachable target
    moved up to 8 cm from the ankle is reached to 1e-6 m by forward kinematics of the new rotations,
    both bones keep their lengths, an unchanged target gives back the same rotations (the same sign
    too), and a target along the hip-ankle line keeps the knee in the leg's plane."""
    hip, knee, ankle, hip_rot, knee_rot = _random_legs(200)
    thigh, shin = knee - hip, ankle - knee
    same = leg_ik(hip, knee, ankle, hip_rot, knee_rot, ankle)
    np.testing.assert_allclose(same[0], hip_rot, atol=1e-12)
    np.testing.assert_allclose(same[1], knee_rot, atol=1e-12)
    rng = np.random.default_rng(4)
    move = rng.uniform(-0.08, 0.08, (200, 3))
    target = ankle + move
    reach = np.linalg.norm(thigh, axis=-1) + np.linalg.norm(shin, axis=-1)
    inside = np.linalg.norm(target - hip, axis=-1) < 0.99 * reach
    assert inside.sum() > 150
    new_hip, new_knee = leg_ik(hip, knee, ankle, hip_rot, knee_rot, target)
    new_thigh = quat_mul_vec(new_hip, quat_inv_mul_vec(hip_rot, thigh))
    new_shin = quat_mul_vec(new_knee, quat_inv_mul_vec(knee_rot, shin))
    np.testing.assert_allclose(np.linalg.norm(new_thigh, axis=-1), np.linalg.norm(thigh, axis=-1), atol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(new_shin, axis=-1), np.linalg.norm(shin, axis=-1), atol=1e-12)
    np.testing.assert_allclose((hip + new_thigh + new_shin)[inside], target[inside], atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(np.stack([new_hip, new_knee], 1), axis=-1), 1.0, atol=1e-12)
    # along the hip-ankle line (nearer the hip): the knee bends more, in the plane it bent in
    line = hip + 0.9 * (ankle - hip)
    new_hip, new_knee = leg_ik(hip, knee, ankle, hip_rot, knee_rot, line)
    new_knee_pos = hip + quat_mul_vec(new_hip, quat_inv_mul_vec(hip_rot, thigh))
    normal = np.cross(thigh, shin)
    normal /= np.linalg.norm(normal, axis=-1, keepdims=True)
    np.testing.assert_allclose(np.sum((new_knee_pos - hip) * normal, axis=-1), 0.0, atol=1e-9)
    new_ankle = new_knee_pos + quat_mul_vec(new_knee, quat_inv_mul_vec(knee_rot, shin))
    np.testing.assert_allclose(new_ankle, line, atol=1e-9)


def test_the_plain_solver_is_the_runtimes_where_soft_reach_and_pole_change_nothing():
    """Within 97% of the leg's reach (no soft reach) with the pole on the side the knee bends to, the
    plain solve and the runtime's `ik.two_bone_ik` give the same rotations; out of reach the plain one
    stretches the leg to (1 - 1e-4) of its length along the hip-target line; a straight leg keeps its knee."""
    from pfnn_core.math.quat import quat_abs
    from pfnn_core.runtime.ik import two_bone_ik

    hip, knee, ankle, hip_rot, knee_rot = _random_legs(100, seed=5)
    thigh, shin = knee - hip, ankle - knee
    reach = np.linalg.norm(thigh, axis=-1) + np.linalg.norm(shin, axis=-1)
    target = ankle + np.random.default_rng(6).uniform(-0.03, 0.03, (100, 3))
    inside = np.linalg.norm(target - hip, axis=-1) < 0.96 * reach
    assert inside.sum() > 50
    # the runtime's pole: a point whose cross with the thigh points along the knee's bend normal
    pole = np.cross(thigh, np.cross(thigh, shin))
    plain = leg_ik(hip, knee, ankle, hip_rot, knee_rot, target)
    runtime = two_bone_ik(hip, knee, ankle, hip_rot, knee_rot, target, pole)
    np.testing.assert_allclose(quat_abs(plain[0])[inside], quat_abs(runtime.hip_rot)[inside], atol=1e-9)
    np.testing.assert_allclose(quat_abs(plain[1])[inside], quat_abs(runtime.knee_rot)[inside], atol=1e-9)
    far = hip + 2.0 * (target - hip) / np.linalg.norm(target - hip, axis=-1, keepdims=True) * reach[:, None]
    new_hip, new_knee = leg_ik(hip, knee, ankle, hip_rot, knee_rot, far)
    end = hip + quat_mul_vec(new_hip, quat_inv_mul_vec(hip_rot, thigh)) + quat_mul_vec(new_knee, quat_inv_mul_vec(knee_rot, shin))
    np.testing.assert_allclose(np.linalg.norm(end - hip, axis=-1), reach * (1 - 1e-4), rtol=1e-9)
    direction = (far - hip) / np.linalg.norm(far - hip, axis=-1, keepdims=True)
    np.testing.assert_allclose((end - hip) / np.linalg.norm(end - hip, axis=-1, keepdims=True), direction, atol=1e-9)
    straight_ankle = knee + thigh / np.linalg.norm(thigh, axis=-1, keepdims=True) * 0.4
    up = straight_ankle + np.array([0.0, 0.05, 0.0])  # nearer along no bend plane: the knee is left straight
    new_hip, new_knee = leg_ik(hip, knee, straight_ankle, hip_rot, knee_rot, up)
    np.testing.assert_allclose(quat_abs(quat_mul(new_knee, quat_inv(knee_rot))), quat_abs(quat_mul(new_hip, quat_inv(hip_rot))),
                               atol=1e-9)


def test_a_crowds_bodies_each_step_with_their_own_stance_gains():
    """Two characters on the same walk half a second apart (their feet plant at different ticks) tracked
    in one tracker and each alone: the same simulated poses (each body's substeps ran with its own
    planted legs' gains)."""
    body = bundled_body()[2]
    positions, rotations = clip(WALK, 3.0)
    shift = 30
    pair_pos = np.stack([positions[shift:], positions[:-shift]], axis=1)
    pair_rot = np.stack([rotations[shift:], rotations[:-shift]], axis=1)
    both = PhysicsTracker(body, PhysicsSettings(stance_stiffness=0.5), batch=2)
    alone = [PhysicsTracker(body, PhysicsSettings(stance_stiffness=0.5)) for _ in range(2)]
    differ = 0
    for frame in range(len(pair_pos)):
        together = both.step(pair_pos[frame], pair_rot[frame], DT).positions
        planted = both.planted(pair_pos[frame][:, body.plan.contact_joints], DT, both._previous[3])
        differ += int((planted[0] != planted[1]).any())
        for b, tracker in enumerate(alone):
            np.testing.assert_allclose(together[b], tracker.step(pair_pos[frame, b:b + 1], pair_rot[frame, b:b + 1],
                                                                 DT).positions[0], atol=1e-9)
    assert differ > 20
