import numpy as np
import pytest

from pfnn_core.math.quat import quat_from_angle_axis, quat_mul_vec, quat_normalize
from pfnn_core.runtime.ik import (
    CATCH_UP_LEAD,
    RELEASE_ACCELERATION,
    SOFT_REACH,
    aim_at_reach,
    empty_foot_locks,
    fade_weight,
    foot_rotation_toward,
    foot_targets,
    pivot_on_toe,
    release_duration,
    soft_reach,
    two_bone_ik,
    update_foot_locks,
)

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


def _locks(locks, foot, contacts, **kwargs):
    options = dict(threshold=0.5, release_time=0.15, release_distance=0.2, dt=1 / 60)
    options.update(kwargs)
    return update_foot_locks(locks, foot, contacts, **options)


def test_foot_lock_pins_on_contact_and_drags_on_its_leash():
    locks = empty_foot_locks((1,), 2)
    foot = np.array([[[0.0, 0.1, 0.0], [0.3, 0.1, 0.0]]])
    contacts = np.array([[0.9, 0.1]])
    locks, shown = _locks(locks, foot, contacts)
    assert locks.active.tolist() == [[True, False]]
    np.testing.assert_allclose(locks.target[0, 0], foot[0, 0])
    # The network's foot slides 5 cm; the shown foot stays on the pin.
    for _ in range(30):
        locks, shown = _locks(locks, foot + [0.05, 0, 0], contacts)
    np.testing.assert_allclose(shown[0, 0], foot[0, 0], atol=1e-12)
    assert locks.weight[0, 1] == 0.0
    np.testing.assert_allclose(shown[0, 1], foot[0, 1] + [0.05, 0, 0])  # a free joint is the network's
    # The network's foot moving 0.5 m away while still in contact drags the pin on a 0.2 m leash: it
    # stays pinned, 0.2 m behind the network's foot, at its own height.
    dragged, shown = _locks(locks, foot + [0.5, 0, 0], contacts)
    assert dragged.active[0, 0] and dragged.weight[0, 0] == 1.0
    np.testing.assert_allclose(dragged.target[0, 0], foot[0, 0] + [0.3, 0, 0], atol=1e-12)


def test_a_released_pin_fades_relative_to_the_body():
    """When the contact ends the shown foot keeps its offset from the network's foot, and the offset fades
    out (smoothstep) over the release time: a body walking on carries the released foot along instead of
    leaving it behind in the world (no drag, no glide back)."""
    dt, release = 1 / 60, 0.15
    foot = np.array([[[0.0, 0.1, 0.0]]])
    locks, _ = _locks(empty_foot_locks((1,), 1), foot, np.array([[0.9]]), release_time=release)
    offset = np.array([-0.1, 0.0, 0.0])  # the body walked on: the network's foot is 10 cm ahead of the pin
    shown_path = []
    for tick in range(int(round(release / dt)) + 3):
        # the body (and the network's lifting foot) keeps moving at 1.2 m/s
        network_foot = foot - offset + [0.02 * tick, 0.01 * tick, 0.0]
        locks, shown = _locks(locks, network_foot, np.array([[0.1]]), release_time=release)
        shown_path.append(shown[0, 0] - network_foot[0, 0])
        assert not locks.active[0, 0]
    kept = np.array(shown_path)[:, 0] / offset[0]
    weights = 1.0 - dt / release * np.arange(len(kept))
    expected = np.clip(weights, 0, 1) ** 2 * (3 - 2 * np.clip(weights, 0, 1))
    np.testing.assert_allclose(kept, expected, atol=1e-9)  # the offset follows the smoothstep fade
    assert kept[0] == pytest.approx(1.0) and kept[-1] == 0.0  # continuous at the release, gone after it


def test_a_large_release_offset_fades_over_a_longer_time():
    offset = np.array([0.4, 0.0, 0.0])
    assert release_duration(offset, 0.15) == pytest.approx(np.sqrt(6 * 0.4 / RELEASE_ACCELERATION))
    assert release_duration(offset * 0.01, 0.15) == 0.15


def test_a_pin_near_the_floor_is_brought_onto_it_and_one_in_the_air_does_not_start():
    floor = np.array([[0.04, 0.12]])
    foot = np.array([[[0.0, 0.06, 0.0], [0.0, 0.30, 0.0]]])  # toe 2 cm above its floor, ankle 18 cm up
    contacts = np.array([[0.9, 0.9]])
    locks = empty_foot_locks((1,), 2)
    heights = []
    for _ in range(30):
        locks, shown = _locks(locks, foot, contacts, floor=floor, start_height=0.05, snap_height=0.03)
        heights.append(shown[0, 0, 1])
    assert locks.active.tolist() == [[True, False]]  # the raised ankle is not pinned in the air
    assert heights[0] == pytest.approx(0.04 + 0.02 * 0.5 ** (1 / 60 / 0.03))  # the gap closes smoothly...
    assert np.all(np.diff(heights) <= 0) and heights[-1] == 0.04  # ...and then exactly
    np.testing.assert_allclose(shown[0, 1], foot[0, 1])


def test_a_pin_started_above_the_floor_comes_down_with_the_network_joint_but_never_up():
    """A toe pinned while the heel strikes (4 cm up: within the start height, above the snap height)
    follows the network's toe down onto the floor as the foot flattens, without moving horizontally;
    it was held 4 cm up for the whole stance (the feminine walk's planted toes floated 3.7 cm)."""
    floor = np.array([[0.04]])
    contacts = np.array([[0.9]])
    locks, _ = _locks(empty_foot_locks((1,), 1), np.array([[[0.1, 0.08, 0.2]]]), contacts, floor=floor,
                      start_height=0.05, snap_height=0.03)
    assert locks.active[0, 0] and locks.target[0, 0, 1] == pytest.approx(0.08)
    heights = []
    for tick in range(40):  # the network's toe comes down to 0.5 cm above its floor, sliding 1 cm forward
        toe = np.array([[[0.11, max(0.08 - 0.004 * tick, 0.045), 0.2]]])
        locks, shown = _locks(locks, toe, contacts, floor=floor, start_height=0.05, snap_height=0.03)
        heights.append(shown[0, 0, 1])
    assert np.all(np.diff(heights) <= 1e-12) and heights[-1] == pytest.approx(0.04)
    np.testing.assert_allclose(shown[0, 0, [0, 2]], [0.1, 0.2])  # held in place
    # the network's toe rising again under contact does not lift the pin
    locks, shown = _locks(locks, np.array([[[0.11, 0.09, 0.2]]]), contacts, floor=floor, start_height=0.05,
                          snap_height=0.03)
    assert shown[0, 0, 1] == pytest.approx(0.04)


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


def test_soft_reach_eases_the_last_share_of_the_leg_to_full_length():
    """[soft IK] Up to (1 - SOFT_REACH) of the leg the ankle goes where it is asked; beyond, the reach
    follows start + s (1 - exp(-(d - start) / s)), s = SOFT_REACH x length: continuous, with slope 1
    at the start, always short of the full length."""
    length = 0.9
    soft = SOFT_REACH * length
    start = length - soft
    assert soft_reach(0.5, length) == 0.5
    assert soft_reach(start, length) == pytest.approx(start)
    assert soft_reach(length, length) == pytest.approx(start + soft * (1 - np.exp(-1.0)))  # ~ 1.3 cm short
    assert soft_reach(start + 1e-6, length) == pytest.approx(start + 1e-6, abs=1e-9)
    far = [soft_reach(d, length) for d in np.linspace(start, 2 * length, 50)]
    assert np.all(np.diff(far) >= 0) and np.diff(far)[0] > 0 and max(far) <= length
    assert far[-1] == pytest.approx(length, abs=1e-6)


def test_a_leg_asked_to_its_full_length_stops_short_by_the_soft_reach():
    hip = np.array([0.0, 1.0, 0.0])
    knee_rot = quat_from_angle_axis(-0.3, [1.0, 0.0, 0.0])
    identity = np.array([1.0, 0.0, 0.0, 0.0])
    knee, ankle = leg_fk(hip, identity, knee_rot)
    length = np.linalg.norm(THIGH) + np.linalg.norm(SHIN)
    direction = np.array([0.3, -1.0, 0.2]) / np.linalg.norm([0.3, -1.0, 0.2])
    solved = two_bone_ik(hip, knee, ankle, identity, knee_rot, hip + direction * length, [0.0, 0.0, 1.0])
    _, ankle_fk = leg_fk(hip, solved.hip_rot, solved.knee_rot)
    np.testing.assert_allclose(ankle_fk, hip + direction * soft_reach(length, length), atol=1e-6)
    assert np.linalg.norm(ankle_fk - hip) < length * (1 - SOFT_REACH / 3)  # the knee keeps a bend


def test_a_pin_left_past_its_leash_steps_after_the_body_instead_of_sliding():
    """With a step height the body walking away from a pinned foot (the network's foot still in contact
    under it) makes the foot STEP: released relative to the body, lifted by the step height at mid-step,
    landing CATCH_UP_LEAD x its offset ahead of the network's foot, pinned again there; it never moves
    along the floor. Without a step height it is dragged on the leash (above)."""
    dt, leash, height, speed = 1 / 60, 0.2, 0.04, 1.0
    contacts = np.array([[0.9]])
    foot = np.array([[[0.0, 0.0, 0.0]]])
    locks, _ = _locks(empty_foot_locks((1,), 1), foot, contacts, step_height=height)
    path, network_path, states = [], [], []
    for tick in range(1, 60):
        network_foot = foot + [speed * tick * dt, 0.0, 0.0]  # glued under the moving body
        locks, shown = _locks(locks, network_foot, contacts, step_height=height)
        path.append(shown[0, 0].copy())
        network_path.append(network_foot[0, 0])
        states.append((bool(locks.active[0, 0]), bool(locks.stepping[0, 0])))
    path, network_path = np.array(path), np.array(network_path)
    first = next(i for i, (_, stepping) in enumerate(states) if stepping)
    # pinned until the network's foot is a leash away
    np.testing.assert_allclose(path[:first, 0], 0.0, atol=1e-12)
    assert network_path[first, 0] == pytest.approx(leash, abs=speed * dt)
    landing = next(i for i in range(first, len(states)) if not states[i][1])
    steps = path[first:landing + 1]
    duration = release_duration(np.array([(1 + CATCH_UP_LEAD) * network_path[first, 0], 0, 0]), 0.15)
    assert (landing - first) * dt == pytest.approx(duration, abs=2 * dt)
    assert steps[:, 1].max() == pytest.approx(height, abs=0.003)  # lifted at mid-step
    moving = np.linalg.norm(np.diff(path[:, [0, 2]], axis=0), axis=-1) / dt > 0.05
    lifted = (path[1:, 1] > 1e-4) | (path[:-1, 1] > 1e-4)
    assert moving.any() and np.all(lifted[moving])  # every move leaves or ends off the floor: none along it
    # lands ahead of the network's foot by the lead, on the floor, and is pinned there
    offset_at_release = -network_path[first - 1, 0]
    assert path[landing, 0] - network_path[landing, 0] == pytest.approx(-CATCH_UP_LEAD * offset_at_release, abs=0.01)
    assert path[landing, 1] == pytest.approx(0.0, abs=1e-9) and states[landing][0]


def test_a_partial_foot_turn_goes_the_short_way_round():
    """Turning the foot by a share of the way toward its aim turns it by that share of the (shortest)
    angle, for every pair of directions, including those whose rotation comes out of the matrix with a
    negative scalar part (half of the pairs below)."""
    rng = np.random.default_rng(4)
    ankle = np.zeros(3)
    for _ in range(200):
        toe, aim = rng.normal(size=3), rng.normal(size=3)
        total = np.arccos(np.clip(toe @ aim / np.linalg.norm(toe) / np.linalg.norm(aim), -1, 1))
        rot = foot_rotation_toward(np.array([1.0, 0, 0, 0]), ankle, toe, aim, 0.25)
        turned = quat_mul_vec(rot, toe)
        moved = np.arccos(np.clip(turned @ toe / np.linalg.norm(toe) ** 2, -1, 1))
        assert moved == pytest.approx(0.25 * total, abs=1e-7)
        left = np.arccos(np.clip(turned @ aim / np.linalg.norm(toe) / np.linalg.norm(aim), -1, 1))
        assert left == pytest.approx(0.75 * total, abs=1e-7)  # on the way to the aim, not away from it


def test_a_held_toe_keeps_the_ankle_at_the_foot_length_from_it():
    toe, ankle, length = (0.1, 0.04, 0.0), (0.0, 0.2, 0.0), 0.12
    direction = np.array([-0.1, 0.16, 0.0]) / np.hypot(0.1, 0.16)
    np.testing.assert_allclose(pivot_on_toe(ankle, toe, length, 1.0), np.add(toe, length * direction), atol=1e-12)
    np.testing.assert_allclose(pivot_on_toe(ankle, toe, length, 0.5),
                               0.5 * np.add(ankle, np.add(toe, length * direction)), atol=1e-12)
    assert pivot_on_toe(ankle, toe, length, 0.0) == ankle
