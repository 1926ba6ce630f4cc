"""Two-bone leg IK and foot locking.

Each rule is written once, for one leg or one foot joint, as a compiled function over 3-vectors and
3x3 rotation matrices (`mat3`); the runtime's pose kernel (`pose.py`) calls those directly, and the
public functions here run them over arrays with leading batch dimensions (quaternions in and out,
as `quat.py`).

Rotations are GLOBAL (world) joint rotations. A solved leg keeps the ankle's global rotation, so the
foot keeps its orientation and the toe follows the ankle.

Foot locking [PFNN, MM]: when a foot joint's contact output rises above a threshold near the floor its
world position is pinned (on the floor level when it starts within a few cm of it); a pinned foot is
dragged along on a leash when the network's foot moves too far from it (the body has moved on); when
the contact ends the pin is released relative to the body (its offset from the network's foot fades).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from pfnn_core.math import mat3
from pfnn_core.math.mat3 import njit
from pfnn_core.math.quat import quat_from_matrix, quat_mul_vec, quat_to_matrix
from pfnn_core.runtime import release
from pfnn_core.skeleton import foot_joints

RELEASE_ACCELERATION = 50.0  # m/s^2: the most a release fade accelerates a joint (3 cm off its trend at 30 Hz)
CATCH_UP_LEAD = 0.25  # a catch-up step lands this share of its pin's offset AHEAD of the network's foot
LANDING_SLIDE = 0.015  # m: the most a new pin's landing carries it along the floor (`update_lock`)
SOFT_REACH = 0.03  # share of a leg's length over which its reach eases to full extension (`soft_reach`)
_REACH_MARGIN = 1e-4  # keep the leg from locking fully straight (the knee axis would be undefined)
# Below this knee bend the leg counts as straight and the pole hint takes over the bend plane,
# blending in continuously as the bend shrinks (a nearly straight leg's own plane is noise).
STRAIGHT_KNEE_ANGLE = math.radians(2.0)


def leg_chains(names, parents) -> list[tuple[int, int, int, int]]:
    """(hip, knee, ankle, toe) joint indices of the left and the right leg (toe = ankle on a
    skeleton without toe joints)."""
    feet = foot_joints(list(names), parents)
    chains = []
    for side in ("left", "right"):
        ankle, toe = feet[f"{side}_foot"], feet[f"{side}_toe"]
        knee = int(parents[ankle])
        hip = int(parents[knee])
        chains.append((hip, knee, ankle, toe))
    return chains


class LegSolution(NamedTuple):
    hip_rot: np.ndarray  # [..., 4] new global rotation of the hip (upper leg) joint
    knee_rot: np.ndarray  # [..., 4] new global rotation of the knee (lower leg) joint
    knee_pos: np.ndarray  # [..., 3] new knee position
    ankle_pos: np.ndarray  # [..., 3] new ankle position (= target when within reach)


@njit
def soft_reach(distance, leg_length):
    """The hip-ankle distance a leg takes for a target `distance` away: the same up to (1 - SOFT_REACH)
    of the leg's length, then easing exponentially toward the full length [soft IK]: near full
    extension a small move of the target swings the knee a long way, and a leg snapping straight
    pops; the ankle falls short of a far target by at most SOFT_REACH x the leg's length."""
    soft = SOFT_REACH * leg_length
    start = leg_length - soft
    if soft <= 0.0 or distance <= start:
        return distance
    return start + soft * (1.0 - math.exp(-(distance - start) / soft))


@njit
def solve_leg(hip, knee, ankle, hip_rot, knee_rot, target, pole, plain=False):
    """Turn hip and knee (global rotation matrices) so the ankle reaches `target`; returns
    (hip_rot, knee_rot, knee_pos, ankle_pos).

    Bone lengths are kept; a target out of reach is clamped to the nearest reachable point along the
    hip->target line. The knee bends in the leg's current plane, turned so the knee points to the
    side of `pole` (the character's forward): a knee bent backwards, even by millimetres, is
    mirrored forwards, and a nearly straight leg bends toward the pole. `plain`: no soft reach, no pole
    (the knee bends in its own plane; a leg straighter than a bend's sine of 1e-6 keeps its knee as it is).
    """
    thigh = mat3.sub(knee, hip)
    shin = mat3.sub(ankle, knee)
    thigh_length, shin_length = mat3.length(thigh), mat3.length(shin)
    reach_max = (thigh_length + shin_length) * (1.0 - _REACH_MARGIN)
    reach_min = abs(thigh_length - shin_length) * (1.0 + _REACH_MARGIN) + 1e-6
    distance = mat3.length(mat3.sub(target, hip))
    reach = min(max(distance if plain else soft_reach(distance, thigh_length + shin_length), reach_min), reach_max)

    # 1. The knee angle that puts the ankle at the reach distance (law of cosines), in a plane whose
    #    normal bends the knee toward the pole.
    cos_goal = (thigh_length ** 2 + shin_length ** 2 - reach ** 2) / max(2.0 * thigh_length * shin_length, 1e-12)
    knee_goal = math.acos(min(max(cos_goal, -1.0), 1.0))
    bend_normal = mat3.cross(thigh, shin)
    if not plain:
        pole_normal = mat3.normalize(mat3.cross(pole, thigh))
        toward_pole = mat3.dot(bend_normal, pole_normal)
        if toward_pole < 0.0:  # bent backwards: mirror the bend to the pole's side
            bend_normal = mat3.sub(bend_normal, mat3.scale(pole_normal, 2.0 * toward_pole))
        straight = thigh_length * shin_length * math.sin(STRAIGHT_KNEE_ANGLE)
        bend_normal = mat3.add(bend_normal, mat3.scale(pole_normal, max(straight - mat3.length(bend_normal), 0.0)))
    axis = mat3.normalize(bend_normal)
    shin_goal = mat3.scale(mat3.mat_vec(mat3.axis_angle(axis, math.pi - knee_goal), thigh),
                           shin_length / max(thigh_length, 1e-12))
    knee_turn = mat3.between(shin, shin_goal)
    if plain and mat3.length(bend_normal) <= 1e-6 * max(thigh_length * shin_length, 1e-12):
        knee_turn = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)  # no bend plane: the knee as it is
    bent_ankle = mat3.add(knee, mat3.mat_vec(knee_turn, shin))

    # 2. Swing the whole leg about the hip so the hip->ankle line points at the target.
    swing = mat3.between(mat3.sub(bent_ankle, hip), mat3.sub(target, hip))
    new_hip_rot = mat3.mat_mul(swing, hip_rot)
    new_knee_rot = mat3.mat_mul(swing, mat3.mat_mul(knee_turn, knee_rot))
    new_knee = mat3.add(hip, mat3.mat_vec(swing, thigh))
    new_ankle = mat3.add(hip, mat3.mat_vec(swing, mat3.sub(bent_ankle, hip)))
    return new_hip_rot, new_knee_rot, new_knee, new_ankle


@njit
def _solve_legs(hip, knee, ankle, hip_rot, knee_rot, target, pole, out_hip_rot, out_knee_rot, out_knee, out_ankle):
    for i in range(hip.shape[0]):
        solved = solve_leg(mat3.load3(hip, i), mat3.load3(knee, i), mat3.load3(ankle, i), mat3.load33(hip_rot, i),
                           mat3.load33(knee_rot, i), mat3.load3(target, i), mat3.load3(pole, i))
        mat3.store33(out_hip_rot, i, solved[0])
        mat3.store33(out_knee_rot, i, solved[1])
        mat3.store3(out_knee, i, solved[2])
        mat3.store3(out_ankle, i, solved[3])


def _flat(values, shape, width) -> np.ndarray:
    """[..., width] values broadcast to `shape` and flattened to [N, width]."""
    return np.ascontiguousarray(np.broadcast_to(np.asarray(values, dtype=float), shape + (width,)).reshape(-1, width))


def _flat1(values, shape, dtype=float) -> np.ndarray:
    """Per-element values broadcast to `shape` and flattened to [N]."""
    return np.ascontiguousarray(np.broadcast_to(np.asarray(values, dtype=dtype), shape).reshape(-1))


def two_bone_ik(hip_pos, knee_pos, ankle_pos, hip_rot, knee_rot, target, pole_hint) -> LegSolution:
    """`solve_leg` over leading batch dimensions; rotations are quaternions [..., 4]."""
    shape = np.broadcast_shapes(*(np.shape(v)[:-1] for v in (hip_pos, knee_pos, ankle_pos, hip_rot, knee_rot,
                                                              target, pole_hint)))
    points = [_flat(v, shape, 3) for v in (hip_pos, knee_pos, ankle_pos, target, pole_hint)]
    rotations = [np.ascontiguousarray(quat_to_matrix(_flat(q, shape, 4))) for q in (hip_rot, knee_rot)]
    count = points[0].shape[0]
    out_hip, out_knee = np.empty((count, 3, 3)), np.empty((count, 3, 3))
    out_knee_pos, out_ankle_pos = np.empty((count, 3)), np.empty((count, 3))
    _solve_legs(points[0], points[1], points[2], rotations[0], rotations[1], points[3], points[4],
                out_hip, out_knee, out_knee_pos, out_ankle_pos)
    return LegSolution(quat_from_matrix(out_hip).reshape(shape + (4,)), quat_from_matrix(out_knee).reshape(shape + (4,)),
                       out_knee_pos.reshape(shape + (3,)), out_ankle_pos.reshape(shape + (3,)))


# ---------------------------------------------------------------------------------------------
# Foot locking


class FootLocks(NamedTuple):
    target: np.ndarray  # [..., F, 3] world pin while held; the shown position while released
    weight: np.ndarray  # [..., F] 1 while held; while released, what is left of the release fade (1 -> 0)
    active: np.ndarray  # [..., F] bool: pin held vs released
    offset: np.ndarray  # [..., F, 3] world offset of the shown joint from the network's at the release
    stepping: np.ndarray | None = None  # [..., F] bool: released into a catch-up step (None: none are)
    velocity: np.ndarray | None = None  # [..., F, 3] m/s: a new pin's own while it lands, a spring release's offset's


@njit
def fade_keep(halflife, dt):
    """Share of a gap kept after dt when half of it closes per halflife."""
    return 0.5 ** (dt / max(halflife, 1e-6))


def landing_keep(landing_time: float, dt: float) -> float:
    """Share of a landing pin's velocity kept per tick: exp(-dt / landing_time); 0 when the time is 0 (off)."""
    return math.exp(-dt / landing_time) if landing_time > 0.0 else 0.0


def fade_weight(weight, goal, halflife: float, dt: float) -> np.ndarray:
    """Move `weight` toward `goal` (exponential decay of the gap; half of it closed per halflife)."""
    return goal + (np.asarray(weight, dtype=float) - goal) * fade_keep(halflife, dt)


@njit
def release_duration(offset, release_time):
    """How long the fade of a released pin's `offset` lasts: `release_time`, or longer for a large
    offset, so the fade never accelerates the shown joint by more than RELEASE_ACCELERATION (a
    smoothstep over T moving d peaks at 6 d / T^2)."""
    return max(release_time, math.sqrt(6.0 * mat3.length(offset) / RELEASE_ACCELERATION))


@njit
def step_shown(foot, offset, weight, height):
    """Where a foot joint in a catch-up step is shown: it starts at the pin (`foot` + `offset`, weight
    1) and lands `CATCH_UP_LEAD` x the offset AHEAD of the network's foot (weight 0), easing in and
    out, lifted by height * sin(pi * progress)."""
    ease = mat3.smoothstep(weight) * (1.0 + CATCH_UP_LEAD) - CATCH_UP_LEAD
    lift = height * math.sin(math.pi * (1.0 - min(max(weight, 0.0), 1.0)))
    shown = mat3.add(foot, mat3.scale(offset, ease))
    return (shown[0], shown[1] + lift, shown[2])


class Pin(NamedTuple):
    """One foot joint's pin after a tick (`update_lock`)."""

    target: tuple  # (x, y, z) world: the pin while held; the shown position while released
    weight: float  # 1 while held; while released, what is left of the release fade (1 -> 0)
    active: bool  # held vs released
    offset: tuple  # world offset of the shown joint from the network's joint (fades out once released)
    shown: tuple  # where the joint is shown this tick
    stepping: bool  # released into a catch-up step
    velocity: tuple  # m/s: the pin's own while it lands (0 at rest), the offset's in a spring release (else 0)


@njit
def landing_velocity(shown, shown_before, dt, land_keep):
    """The velocity a new pin lands with: the joint's from where it was shown last tick to where it is
    shown now, its rise dropped and its horizontal part capped so the landing carries it at most
    LANDING_SLIDE (a share `land_keep` of it kept per tick: the slide is v dt keep / (1 - keep))."""
    if land_keep <= 0.0 or shown_before[0] != shown_before[0]:
        return 0.0, 0.0, 0.0
    vx, vy, vz = (shown[0] - shown_before[0]) / dt, (shown[1] - shown_before[1]) / dt, (shown[2] - shown_before[2]) / dt
    limit = LANDING_SLIDE * (1.0 - land_keep) / (land_keep * dt)
    flat = math.sqrt(vx * vx + vz * vz)
    if flat > limit:
        vx, vz = vx * limit / flat, vz * limit / flat
    return vx, min(vy, 0.0), vz


@njit
def update_lock(target, weight, active, offset, foot, in_contact, release_time, dt, release_distance, floor_level,
                start_height, snap_height, snap_keep, stepping, step_height, velocity, shown_before, land_keep,
                release_rate=0.0, release_lift=0.0):
    """Advance one foot joint's pin by one tick (a `Pin`).

    A pin starts when the contact output rises above its threshold while the joint is shown within
    `start_height` of its floor level, at the joint's shown position (so it does not jump); a pin that
    starts within `snap_height` of the floor level is brought onto it (the gap shrinks by `snap_keep`
    per tick, then closes exactly); one held above the floor follows the network's joint down (its gap
    to the joint shrinking by `snap_keep` per tick), never up and never below the floor level. While the
    contact stays high the pin holds; it is never more than `release_distance` (horizontally) from the
    network's foot. Past that distance the body has moved
    on and the network's foot is still planted under it (the data has no starts: at a start the network
    keeps its feet down while the root leaves): with `step_height` >= 0 the foot takes a CATCH-UP STEP
    (released relative to the body and lifted by `step_height`, `step_shown`, landing ahead of the
    network's foot, never re-pinned mid-step); with `step_height` < 0 it is dragged along on the leash
    (it slides by the excess). When the contact ends the pin is released RELATIVE TO THE BODY: the shown
    joint keeps its offset from the network's joint, and the offset fades out (smoothstep over
    `release_duration`), so the joint lifts off with the network's step instead of gliding across the
    floor to catch up. `floor_level` NaN: no floor known (no height condition, no snapping).

    LANDING: with `land_keep` > 0 a new pin does not stop the joint in one tick (an impulse that shook
    the knee and ankle): it keeps the joint's incoming velocity (from `shown_before`, where it was
    shown last tick; `landing_velocity`), a share `land_keep` of it kept per tick, never below the
    floor level (a downward velocity ends there), so the foot comes to rest over a few ticks and
    slides at most LANDING_SLIDE. SPRING RELEASE: with `release_rate` > 0 (1 / `pin_release_time`) a released
    offset decays as a spring from the joint at rest on its pin instead (`release.spring_release`)."""
    rest, spring, released_velocity = (0.0, 0.0, 0.0), release_rate > 0.0, velocity
    if stepping:
        weight = max(weight - dt / max(release_duration(mat3.scale(offset, 1.0 + CATCH_UP_LEAD), release_time), 1e-6),
                     0.0)
        shown = step_shown(foot, offset, weight, step_height)
        if weight > 0.0:
            return Pin(target, weight, False, offset, shown, True, rest)
        landed = mat3.sub(shown, foot)  # = -CATCH_UP_LEAD x offset: it fades out if the contact has ended
        return Pin(shown, 1.0, in_contact, landed, shown, False, rest)
    shown = mat3.add(foot, mat3.scale(offset, 1.0 if spring and weight > 0.0 else mat3.smoothstep(weight)))
    has_floor = floor_level == floor_level
    if active and in_contact and land_keep > 0.0:  # a landing pin moves on, slowing
        velocity = mat3.scale(velocity, land_keep)
        target = mat3.add(target, mat3.scale(velocity, dt))
        if has_floor and target[1] < floor_level and velocity[1] < 0.0:
            target, velocity = (target[0], floor_level, target[2]), (velocity[0], 0.0, velocity[2])
        if mat3.length(velocity) < 1e-3:
            velocity = rest
    else:
        velocity = rest
    if in_contact and not active and (not has_floor or shown[1] - floor_level < start_height):
        target, weight, active = shown, 1.0, True
        velocity = landing_velocity(shown, shown_before, dt, land_keep)
    if active and in_contact:
        if has_floor and foot[1] < target[1] and target[1] > floor_level:
            # a pin that started above the floor (a toe pinned while the heel strikes) comes down with the
            # network's joint, never below the floor level: else it held the toe up through the stance
            lowered = max(foot[1] + (target[1] - foot[1]) * snap_keep, floor_level)
            target = (target[0], lowered, target[2])
        if has_floor:
            gap = target[1] - floor_level
            if abs(gap) < snap_height:
                gap = gap * snap_keep if abs(gap) > 1e-3 else 0.0
                target = (target[0], floor_level + gap, target[2])
        dx, dz = target[0] - foot[0], target[2] - foot[2]
        distance = math.sqrt(dx * dx + dz * dz)
        if distance > release_distance:
            if step_height >= 0.0:
                return Pin(target, 1.0, False, mat3.sub(target, foot), target, True, rest)
            shrink = release_distance / max(distance, 1e-12)
            target = (foot[0] + dx * shrink, target[1], foot[2] + dz * shrink)
        return Pin(target, 1.0, True, mat3.sub(target, foot), target, False, velocity)
    if spring:
        shown, weight, offset, velocity = release.spring_release(target, weight, active, offset, foot, released_velocity,
                                                                 dt, floor_level, release_rate, release_lift)
        return Pin(shown, weight, False, offset, shown, False, velocity)
    if active:  # the contact ended: release from where the pin holds the joint
        offset, weight = mat3.sub(target, foot), 1.0
    else:
        weight = max(weight - dt / max(release_duration(offset, release_time), 1e-6), 0.0)
    shown = mat3.add(foot, mat3.scale(offset, mat3.smoothstep(weight)))
    return Pin(shown, weight, False, offset, shown, False, rest)


@njit
def _update_locks(target, weight, active, offset, stepping, velocity, foot, shown_before, contacts, threshold,
                  release_time, dt, release_distance, floor, start_height, snap_height, snap_keep, step_height, land_keep,
                  release_rate, release_lift, out_target, out_weight, out_active, out_offset, out_stepping, out_velocity,
                  out_shown):
    for i in range(foot.shape[0]):
        pin = update_lock(mat3.load3(target, i), weight[i], active[i], mat3.load3(offset, i), mat3.load3(foot, i),
                          contacts[i] > threshold, release_time, dt, release_distance, floor[i], start_height,
                          snap_height, snap_keep, stepping[i], step_height, mat3.load3(velocity, i),
                          mat3.load3(shown_before, i), land_keep, release_rate, release_lift)
        mat3.store3(out_target, i, pin.target)
        out_weight[i], out_active[i], out_stepping[i] = pin.weight, pin.active, pin.stepping
        mat3.store3(out_offset, i, pin.offset)
        mat3.store3(out_velocity, i, pin.velocity)
        mat3.store3(out_shown, i, pin.shown)


def update_foot_locks(locks: FootLocks, foot_pos, contacts, threshold: float, release_time: float,
                      release_distance: float, dt: float, floor=None, start_height: float = np.inf,
                      snap_height: float = 0.0, snap_halflife: float = 0.03,
                      step_height: float | None = None, shown_before=None,
                      landing_time: float = 0.0, pin_release_time: float = 0.0,
                      release_lift: float = 0.0) -> tuple[FootLocks, np.ndarray]:
    """`update_lock` for every foot joint [..., F]; returns (locks, shown positions [..., F, 3]).
    `release_time` (s): how long a released pin's offset takes to fade out; `floor` [..., F] the
    joints' floor levels (None: no floor); `step_height` (m): lift of a catch-up step past the leash
    (None: dragged on the leash instead); `shown_before` [..., F, 3]: where the joints were shown last
    tick, and `landing_time` (s, `landing_keep`): how long a new pin keeps their velocity (0: none);
    `pin_release_time` (s): the time constant of the spring release (0: the smoothstep fade), and
    `release_lift` (m): its horizontal part at full rate only once the joint is this high (0: always)."""
    foot_pos = np.asarray(foot_pos, dtype=float)
    shape = foot_pos.shape[:-1]
    count = int(np.prod(shape))
    out_target, out_offset, out_shown, out_velocity = (np.empty((count, 3)) for _ in range(4))
    out_weight, out_active, out_stepping = np.empty(count), np.empty(count, dtype=bool), np.empty(count, dtype=bool)
    floor = np.full(shape, np.nan) if floor is None else floor
    stepping = np.zeros(shape, dtype=bool) if locks.stepping is None else locks.stepping
    velocity = np.zeros(shape + (3,)) if locks.velocity is None else locks.velocity
    before = np.full(shape + (3,), np.nan) if shown_before is None else shown_before
    _update_locks(_flat(locks.target, shape, 3), _flat1(locks.weight, shape), _flat1(locks.active, shape, bool),
                  _flat(locks.offset, shape, 3), _flat1(stepping, shape, bool), _flat(velocity, shape, 3),
                  _flat(foot_pos, shape, 3), _flat(before, shape, 3), _flat1(contacts, shape), float(threshold),
                  float(release_time), float(dt), float(release_distance), _flat1(floor, shape), float(start_height),
                  float(snap_height), fade_keep(snap_halflife, dt), -1.0 if step_height is None else float(step_height),
                  landing_keep(landing_time, dt), release.release_rate(pin_release_time), float(release_lift),
                  out_target, out_weight, out_active, out_offset, out_stepping,
                  out_velocity, out_shown)
    return (FootLocks(out_target.reshape(shape + (3,)), out_weight.reshape(shape), out_active.reshape(shape),
                      out_offset.reshape(shape + (3,)), out_stepping.reshape(shape), out_velocity.reshape(shape + (3,))),
            out_shown.reshape(shape + (3,)))


def empty_foot_locks(batch_shape: tuple[int, ...], feet: int) -> FootLocks:
    return FootLocks(np.zeros(batch_shape + (feet, 3)), np.zeros(batch_shape + (feet,)),
                     np.zeros(batch_shape + (feet,), dtype=bool), np.zeros(batch_shape + (feet, 3)),
                     np.zeros(batch_shape + (feet,), dtype=bool), np.zeros(batch_shape + (feet, 3)))


# ---------------------------------------------------------------------------------------------
# The foot as a rigid body between its ankle and toe pins


@njit
def foot_target(ankle, toe, ankle_pin, toe_pin, ankle_weight, toe_weight):
    """Where a rigid foot should go so that its pinned joints are honoured; returns (ankle target,
    toe aim). The ankle pin wins; a toe pinned alone (heel off the ground) drags the whole foot with
    it. The toe aim is reached by turning the foot about the ankle (`foot_rotation`); the runtime then
    keeps the ankle at the foot's length from a held toe (`pivot_on_toe`)."""
    shift = mat3.add(mat3.scale(mat3.sub(ankle_pin, ankle), ankle_weight),
                     mat3.scale(mat3.sub(toe_pin, toe), (1.0 - ankle_weight) * toe_weight))
    moved_toe = mat3.add(toe, shift)
    return mat3.add(ankle, shift), mat3.lerp(moved_toe, toe_pin, toe_weight)


@njit
def pivot_on_toe(ankle_target, toe_aim, foot_length, weight):
    """The ankle target moved by `weight` (the toe's pull) onto the sphere of `foot_length` around the
    toe's aim, so a held toe is reached exactly and the foot turns about it: a heel that lifts while
    its toe stays planted rotates the foot about the toe. Left off that sphere, an ankle rising above a
    pinned toe pulled the toe in under it (the toe keeps its distance from the ankle), faster the
    steeper the foot: at a running toe-off the pinned toe slid back, then swept under the ankle at
    2 m/s in one tick. With both joints held the ankle pin still sets the direction from the toe."""
    reach = mat3.sub(ankle_target, toe_aim)
    if mat3.length(reach) < 1e-9 or weight <= 0.0:
        return ankle_target
    around = mat3.add(toe_aim, mat3.scale(mat3.normalize(reach), foot_length))
    return mat3.lerp(ankle_target, around, min(weight, 1.0))


@njit
def aim_within_reach(center, aim, reach):
    """`aim` moved horizontally to lie `reach` from `center`, keeping its height when the height
    difference allows: a foot turned toward it puts the toe at exactly that height."""
    offset = mat3.sub(aim, center)
    rise = min(max(offset[1], -reach), reach)
    flat = mat3.normalize((offset[0], 0.0, offset[2]))
    horizontal = math.sqrt(max(reach * reach - rise * rise, 0.0))
    return (center[0] + flat[0] * horizontal, center[1] + rise, center[2] + flat[2] * horizontal)


@njit
def foot_rotation(ankle_rot, ankle, toe, toe_aim, weight):
    """The ankle's global rotation turned about the ankle so the toe points toward `toe_aim`, by
    `weight` (0 = unchanged); the toe-to-ankle distance is kept."""
    full = mat3.between(mat3.sub(toe, ankle), mat3.sub(toe_aim, ankle))
    if weight != 1.0:
        full = mat3.partial_rotation(full, weight)
    return mat3.mat_mul(full, ankle_rot)


@njit
def _foot_targets(ankle, toe, ankle_pin, toe_pin, ankle_weight, toe_weight, out_target, out_aim):
    for i in range(ankle.shape[0]):
        target, aim = foot_target(mat3.load3(ankle, i), mat3.load3(toe, i), mat3.load3(ankle_pin, i),
                                  mat3.load3(toe_pin, i), ankle_weight[i], toe_weight[i])
        mat3.store3(out_target, i, target)
        mat3.store3(out_aim, i, aim)


def foot_targets(ankle_pos, toe_pos, ankle_pin, toe_pin, ankle_weight, toe_weight):
    """`foot_target` over leading batch dimensions: (ankle target [..., 3], toe aim [..., 3])."""
    shape = np.broadcast_shapes(*(np.shape(v)[:-1] for v in (ankle_pos, toe_pos, ankle_pin, toe_pin)),
                                np.shape(ankle_weight), np.shape(toe_weight))
    out_target, out_aim = np.empty(shape + (3,)).reshape(-1, 3), np.empty(shape + (3,)).reshape(-1, 3)
    _foot_targets(_flat(ankle_pos, shape, 3), _flat(toe_pos, shape, 3), _flat(ankle_pin, shape, 3),
                  _flat(toe_pin, shape, 3), _flat1(ankle_weight, shape), _flat1(toe_weight, shape),
                  out_target, out_aim)
    return out_target.reshape(shape + (3,)), out_aim.reshape(shape + (3,))


@njit
def _aims(center, aim, reach, out):
    for i in range(center.shape[0]):
        mat3.store3(out, i, aim_within_reach(mat3.load3(center, i), mat3.load3(aim, i), reach[i]))


def aim_at_reach(center, aim, length) -> np.ndarray:
    """`aim_within_reach` over leading batch dimensions."""
    shape = np.broadcast_shapes(np.shape(center)[:-1], np.shape(aim)[:-1], np.shape(length))
    out = np.empty(shape + (3,)).reshape(-1, 3)
    _aims(_flat(center, shape, 3), _flat(aim, shape, 3), _flat1(length, shape), out)
    return out.reshape(shape + (3,))


@njit
def _foot_rotations(ankle_rot, ankle, toe, toe_aim, weight, out):
    for i in range(ankle.shape[0]):
        mat3.store33(out, i, foot_rotation(mat3.load33(ankle_rot, i), mat3.load3(ankle, i), mat3.load3(toe, i),
                                           mat3.load3(toe_aim, i), weight[i]))


def foot_rotation_toward(ankle_rot, ankle_pos, toe_pos, toe_aim, weight) -> np.ndarray:
    """`foot_rotation` over leading batch dimensions; rotations are quaternions [..., 4]."""
    shape = np.broadcast_shapes(np.shape(ankle_rot)[:-1], np.shape(ankle_pos)[:-1], np.shape(toe_pos)[:-1],
                                np.shape(toe_aim)[:-1], np.shape(weight))
    out = np.empty(shape + (3, 3)).reshape(-1, 3, 3)
    _foot_rotations(np.ascontiguousarray(quat_to_matrix(_flat(ankle_rot, shape, 4))), _flat(ankle_pos, shape, 3),
                    _flat(toe_pos, shape, 3), _flat(toe_aim, shape, 3), _flat1(weight, shape), out)
    return quat_from_matrix(out).reshape(shape + (4,))


def reach_foot_goals(positions, rotations, goals, constrained, leg_joints, toe_offsets, foot_lengths,
                     forward, toe_turn=1.0) -> np.ndarray:
    """Global rotations [..., J, 4] after two-bone IK of both legs toward the foot goals; the foot turns
    so a constrained toe reaches its goal.

    positions / rotations: the pose's global joint positions [..., J, 3] and rotations [..., J, 4];
    goals [..., 4, 3] and constrained [..., 4] per contact slot, (foot, toe) of the left then the right
    leg; leg_joints: (hips, knees, ankles, toes) index arrays [2] (`leg_chains`); toe_offsets [2, 3]
    (the toes' offsets from the ankles) and foot_lengths [2]; forward [..., 1, 3]: the knees' pole hint;
    toe_turn (scalar or [..., 2]): how much of the turn toward the toe's aim each foot makes (a partial
    turn along the shortest arc, where blending two aims could swing the toe through the ankle's vertical).
    Only the hip, knee and ankle rotations change; the caller places the joints (forward kinematics).
    """
    rotations = np.array(rotations, dtype=float, copy=True)
    hips, knees, ankles, toes = leg_joints
    weight = np.asarray(constrained, dtype=float)
    ankle_target, toe_aim = foot_targets(positions[..., ankles, :], positions[..., toes, :], goals[..., 0::2, :],
                                         goals[..., 1::2, :], weight[..., 0::2], weight[..., 1::2])
    legs = two_bone_ik(positions[..., hips, :], positions[..., knees, :], positions[..., ankles, :],
                       rotations[..., hips, :], rotations[..., knees, :], ankle_target, forward)
    rotations[..., hips, :], rotations[..., knees, :] = legs.hip_rot, legs.knee_rot
    toe_now = legs.ankle_pos + quat_mul_vec(rotations[..., ankles, :], toe_offsets)
    toe_aim = aim_at_reach(legs.ankle_pos, toe_aim, foot_lengths)
    rotations[..., ankles, :] = foot_rotation_toward(rotations[..., ankles, :], legs.ankle_pos, toe_now, toe_aim,
                                                     np.asarray(toe_turn, dtype=float))
    return rotations
