"""The foot stage of a tick: pins, settling steps, swing lift, reach, floor and leg IK.

`place_feet` takes the pose before the feet (`pose.Pose`) and gives what is shown (`PlacedFeet`): a
planted foot joint pinned (`ik.update_lock`; released relative to the body, or in a catch-up step when
the body has left it behind: at least `catch_up_time` long while the other foot stands with room on its
leash, `_slow_step_room`), after a stop the settling steps (`settle.py`), a free foot swinging fast
held up off the floor, a foot out of the leg's reach pulled in (its heel turned up about a held toe in a
walk), contact joints kept on or above their floor levels, and the legs turned to reach their goals
(two-bone IK, the foot turned toward its toe's goal), then forward kinematics of the solved pose.

It runs as one compiled kernel over the batch (numba), in rotation matrices, whose inputs and outputs
are named tuples: `FootRules` (the live settings as plain numbers), `FeetPlan` (the skeleton's index
arrays and the floor), `FeetInput` (the batch's arrays), `FeetOutput` (arrays written in place). Each
stage of one character is a compiled function of its own.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from pfnn_core.math import mat3
from pfnn_core.math.mat3 import njit
from pfnn_core.runtime import ik, settle
from pfnn_core.runtime.pose import Pose, SkeletonPlan, _forward_kinematics
from pfnn_core.runtime.reach import _hold_toe_off, _lift_swinging_feet, _within_reach
from pfnn_core.runtime.release import catch_up_path, release_rate

FLOOR_SNAP_HALFLIFE = 0.03  # s: a new pin near the floor closes half its gap to the floor level per this
LEG_REACH = 0.995  # a pinned ankle is kept within this share of the leg's length from its hip
RELEASE_LIFT = 0.02  # m: a spring release's horizontal part runs at full rate once the shown joint is this high
AIRBORNE_HEIGHT = 0.02  # m: a foot with a joint this close to its floor level stands on the floor
SIDE_SHARE_MIN_SPEED = 0.1  # m/s: slower commands count as no direction (`release_times`)
CATCH_UP_ROOM = 0.5  # share of the leash a standing foot's pin may be from the network's foot for a slow catch-up step
_NO_FLOOR, _NO_STANCE = np.zeros(4), np.zeros((4, 3))


class FootRules(NamedTuple):
    """The settings the foot stage reads, as the kernel's plain numbers."""

    locking: bool  # foot pins on
    threshold: float  # contact output above which a joint is planted
    release_distance: float  # m: the leash of a pin to the network's joint
    start_height: float  # m: a pin starts only this close to the floor level
    snap_height: float  # m: a new pin this close to the floor level is brought onto it
    snap_keep: float  # share of that gap kept per tick
    catch_up_height: float  # m: lift of a catch-up step; < 0: no catch-up steps (a pin is dragged instead)
    catch_up_time: float  # s: the shortest catch-up step (0: `release_time`, as a release fade)
    smooth_catch_up: bool  # a catch-up step leaves its pin at rest on a minimum-jerk path (`release.catch_up_path`)
    swing_clearance: float  # m: a free fast foot's toe is held this high above its floor level
    one_foot_down: bool  # a foot is lifted (catch-up step, swing lift) only while the other foot holds a pin
    hold_toe_off: bool  # with one_foot_down: a toe-off waits while the other foot takes a catch-up step
    floor_on: bool  # contact joints kept at or above their floor levels
    has_floor: bool  # the floor levels are known
    ik_on: bool  # leg IK (and the reach rules) on
    reach: float  # share of a leg's length an ankle may be from its hip
    step_time: float  # s, a settling step
    step_height: float  # m, a settling step's lift
    land_keep: float  # share of a new pin's landing velocity kept per tick (0: a pin stops its joint at once)
    release_rate: float  # 1/s: a released pin's offset decays as a spring at this rate (0: smoothstep fade)
    release_lift: float  # m: the spring's horizontal part at full rate once the joint is this high (0: always)
    pull_rise: float  # per tick: how much a pin's share of the shown foot may grow (>= 1: at once)
    dt: float  # s


class FeetPlan(NamedTuple):
    """The skeleton's index arrays the kernel walks (`pose.SkeletonPlan`) and the floor."""

    parents: np.ndarray
    offsets: np.ndarray
    up_path: np.ndarray
    down_order: np.ndarray
    contact_joints: np.ndarray  # [4] Foot_L, Toes_L, Foot_R, Toes_R
    legs: np.ndarray  # [2, 4] (hip, knee, ankle, toe)
    body: np.ndarray  # [J] bool
    anchor: int
    floor_heights: np.ndarray  # [4] m (zeros when unknown: `FootRules.has_floor`)
    stance: np.ndarray  # [4, 3] the mocap's standing stance (body frame)


class FeetInput(NamedTuple):
    """The batch's arrays: the pose before the feet, the network's contacts, last tick's pins and steps."""

    pos: np.ndarray  # [B, J, 3] world, solved in place
    rot: np.ndarray  # [B, J, 3, 3] world rotation matrices, solved in place
    root_pos: np.ndarray  # [B, 3]
    root_yaw: np.ndarray  # [B]
    contacts: np.ndarray  # [B, 4] network contact outputs
    locks: ik.FootLocks  # [B, 4] last tick's pins (stepping never None here)
    swing_lift: np.ndarray  # [B, 2] m, last tick's swing lift per foot
    toe_hold: np.ndarray  # [B, 2] m, how far last tick held each foot's toe down (`reach._hold_toe_off`)
    pull: np.ndarray  # [B, 4] each contact joint's goal's share of the shown foot last tick (`_blend_pins`)
    heel_off: np.ndarray  # [B] bool: a held toe may lift its heel (walking, not strafing)
    release_time: np.ndarray  # [B] s: how long a released pin's offset takes to fade (`release_times`)
    settling: np.ndarray  # [B] bool: settling steps instead of pins
    settle: settle.SettleState  # [B] last tick's settling steps (`start` is updated in place)
    shown_before: np.ndarray  # [B, J, 3] the pose shown last tick
    rest_shift: np.ndarray  # [B, 2] where the root comes to rest, from here


class FeetOutput(NamedTuple):
    """Arrays the kernel writes: the next tick's pins and steps, the shown rotations and the extent."""

    locks: ik.FootLocks  # [B, 4]
    settle_foot: np.ndarray  # [B] int
    settle_progress: np.ndarray  # [B]
    settle_steps: np.ndarray  # [B] int
    rotations: np.ndarray  # [B, J, 4] quaternions
    extent: np.ndarray  # [B] m, farthest body joint from the root (inf when not finite)
    swing_lift: np.ndarray  # [B, 2]
    toe_hold: np.ndarray  # [B, 2]
    pull: np.ndarray  # [B, 4]


class Settling(NamedTuple):
    """What the settling steps need (`tick.settling_stage`): who settles [B] bool, the steps so far, the
    root's remaining travel [B, 2] (where the hips come to rest) and the mocap's stance [4, 3]."""

    characters: np.ndarray
    state: settle.SettleState
    rest_shift: np.ndarray
    stance: np.ndarray | None


@dataclass
class PlacedFeet:
    """The shown pose after foot pins, settling steps, floor and IK, and the pins for the next tick."""

    positions: np.ndarray  # [B, J, 3]
    rotations: np.ndarray  # [B, J, 4] quaternions
    locks: ik.FootLocks  # [B, 4] pins of the contact joints
    settle: settle.SettleState  # [B] the settling steps
    extent: np.ndarray  # [B] m, farthest body joint from the root (inf when a position is not finite)
    swing_lift: np.ndarray  # [B, 2] m: each foot's swing lift (`settings.swing_clearance`)
    toe_hold: np.ndarray  # [B, 2] m: how far each foot's toe is held down (`settings.hold_toe_off`)
    pull: np.ndarray  # [B, 4] each contact joint's goal's share of the shown foot (`settings.pin_blend_time`)


# ---------------------------------------------------------------------------------------------
# One character's stages (compiled)


@njit
def _body_yaw(pos, legs):
    """Yaw of the body frame (`motion.root.body_frames`): x along the hip line from the right hip to the left."""
    left, right = legs[0, 0], legs[1, 0]
    return math.atan2(-(pos[left, 2] - pos[right, 2]), pos[left, 0] - pos[right, 0])


@njit
def _settle_goals(b, rules, plan, inputs, out, foot_pos, pins, targets, stepping, goals):
    """The feet of a settling character: pins and the step under way (`settle.settle_character`); the
    pins are written as held locks, a stepping foot's joints as released ones (so moving the stick
    mid-step lets the foot go relative to the body)."""
    slots = pins.shape[0]
    floor, pos, state = plan.floor_heights, inputs.pos[b], inputs.settle
    foot, progress, steps = state.foot[b], state.progress[b], state.steps[b]
    if not state.active[b]:  # the first tick: pin the feet where they are shown (a pin above the
        # floor comes down at `settle.LANDING_SPEED`; snapped at once, a foot dropped up to 3 cm in a frame)
        foot, progress, steps = -1, 0.0, 0
        for s in range(slots):
            point = mat3.load3(inputs.shown_before[b], plan.contact_joints[s])
            if rules.has_floor and point[1] < floor[s]:
                point = (point[0], floor[s], point[2])
            mat3.store3(pins, s, point)
    else:
        for s in range(slots):
            mat3.store3(pins, s, mat3.load3(inputs.locks.target[b], s))
    yaw = _body_yaw(pos, plan.legs)
    hips_x, hips_z = pos[plan.anchor, 0] + inputs.rest_shift[b, 0], pos[plan.anchor, 2] + inputs.rest_shift[b, 1]
    for s in range(slots):
        point = settle.stance_point(hips_x, hips_z, yaw, plan.stance, s)
        mat3.store3(targets, s, (point[0], floor[s] if rules.has_floor else point[1], point[2]))
    foot, progress, steps = settle.settle_character(foot, progress, steps, state.start[b], pins, targets, floor,
                                                    rules.dt, rules.step_time, rules.step_height, settle.STEP_TOLERANCE,
                                                    settle.MAX_STEPS, goals, stepping)
    locks = out.locks
    for s in range(slots):
        goal = mat3.load3(goals, s)
        mat3.store3(locks.target[b], s, goal)
        locks.weight[b, s], locks.active[b, s] = 1.0, not stepping[s]
        mat3.store3(locks.offset[b], s, mat3.sub(goal, mat3.load3(foot_pos, s)))
        mat3.store3(locks.velocity[b], s, (0.0, 0.0, 0.0))
    out.settle_foot[b], out.settle_progress[b], out.settle_steps[b] = foot, progress, steps


@njit
def _pin_feet(b, rules, plan, inputs, out, foot_pos, goals, pull):
    """The pins of a character that does not settle: each contact joint's lock advanced one tick."""
    out.settle_foot[b], out.settle_progress[b], out.settle_steps[b] = -1, 0.0, 0
    before, locks = inputs.locks, out.locks
    no_floor = np.nan
    for s in range(foot_pos.shape[0]):
        foot = mat3.load3(foot_pos, s)
        if rules.locking:
            step_height = rules.catch_up_height
            if rules.one_foot_down and not before.stepping[b, s] and not _other_foot_down(b, s, rules, plan, inputs, locks):
                step_height = -1.0  # the other foot is up: this one is dragged on its leash, it does not step
            pin = ik.update_lock(mat3.load3(before.target[b], s), before.weight[b, s], before.active[b, s],
                                 mat3.load3(before.offset[b], s), foot, inputs.contacts[b, s] > rules.threshold,
                                 rules.catch_up_time if before.stepping[b, s] and rules.catch_up_time > 0.0
                                 and _slow_step_room(b, s, rules, plan, inputs, locks, foot_pos)
                                 else inputs.release_time[b], rules.dt, rules.release_distance,
                                 plan.floor_heights[s] if rules.has_floor else no_floor,
                                 rules.start_height, rules.snap_height, rules.snap_keep, before.stepping[b, s],
                                 step_height, mat3.load3(before.velocity[b], s),
                                 mat3.load3(inputs.shown_before[b], plan.contact_joints[s]), rules.land_keep,
                                 rules.release_rate, rules.release_lift)
            mat3.store3(locks.target[b], s, pin.target)
            locks.weight[b, s], locks.active[b, s], locks.stepping[b, s] = pin.weight, pin.active, pin.stepping
            mat3.store3(locks.offset[b], s, pin.offset)
            mat3.store3(locks.velocity[b], s, pin.velocity)
            shown = pin.shown
            if rules.smooth_catch_up and pin.stepping:  # from the pin (`target` while stepping), at rest
                landing = mat3.add(foot, mat3.scale(pin.offset, -ik.CATCH_UP_LEAD))
                shown = catch_up_path(pin.target, landing, pin.weight, max(rules.catch_up_height, 0.0))
            mat3.store3(goals, s, shown)
            pull[s] = 1.0 if pin.active or pin.stepping else mat3.smoothstep(pin.weight)
        else:
            mat3.store3(locks.target[b], s, foot)
            locks.weight[b, s], locks.active[b, s], locks.stepping[b, s] = 0.0, False, False
            mat3.store3(locks.offset[b], s, (0.0, 0.0, 0.0))
            mat3.store3(locks.velocity[b], s, (0.0, 0.0, 0.0))
            mat3.store3(goals, s, foot)
            pull[s] = 0.0
    if rules.locking and rules.catch_up_height >= 0.0:
        _step_whole_feet(foot_pos, goals, pull, locks.target[b], locks.weight[b], locks.active[b], locks.offset[b],
                         locks.stepping[b])


@njit
def _blend_pins(pull, before, rise):
    """A pin's share of the shown foot grows by at most `rise` per tick from last tick's (`before`):
    a joint pinned while the other joint of its foot already stands (a heel coming down after its toe,
    a toe after its heel) had been shown where the other pin carried the rigid foot, off its own pin,
    and taken onto it in one tick the heel slapped down or the toe snapped over (a pop). Falling
    shares (a release's fade) are not limited."""
    for s in range(pull.shape[0]):
        pull[s] = min(pull[s], before[s] + rise)


@njit
def _other_foot_down(b, s, rules, plan, inputs, locks):
    """Whether the other foot (of contact slot `s`) stands on the floor: not in a catch-up step, and
    holding a pin or shown last tick with a joint within AIRBORNE_HEIGHT of its floor level. Its state
    this tick when its slots come first (already updated), else last tick's, so two feet never start a
    step at once."""
    first = 2 if s < 2 else 0
    state = locks if first < s else inputs.locks
    if state.stepping[b, first] or state.stepping[b, first + 1]:
        return False
    if state.active[b, first] or state.active[b, first + 1]:
        return True
    if not rules.has_floor:
        return True
    lowest = np.inf
    for other in (first, first + 1):
        lowest = min(lowest, inputs.shown_before[b, plan.contact_joints[other], 1] - plan.floor_heights[other])
    return lowest < AIRBORNE_HEIGHT


@njit
def _slow_step_room(b, s, rules, plan, inputs, locks, foot_pos):
    """Whether a catch-up step of slot `s` may take `catch_up_time` this tick: the other foot stands on the
    floor (`_other_foot_down`) with its pins within CATCH_UP_ROOM of their leash from the network's
    joints. Else it goes on at the release time's pace: a foot that the network lifts, or whose pin
    the body is leaving behind, would leave the floor while this one is still up (both feet up), or be
    dragged on its leash (it may not step until this one lands)."""
    if not _other_foot_down(b, s, rules, plan, inputs, locks):
        return False
    first = 2 if s < 2 else 0
    for other in (first, first + 1):
        if inputs.locks.active[b, other]:
            gap = math.hypot(inputs.locks.target[b, other, 0] - foot_pos[other, 0],
                             inputs.locks.target[b, other, 2] - foot_pos[other, 2])
            if gap > CATCH_UP_ROOM * rules.release_distance:
                return False
    return True


@njit
def _step_whole_feet(foot_pos, goals, pull, target, weight, active, offset, stepping):
    """A foot steps as a whole: when one of its joints (ankle, toe) starts a catch-up step, the other,
    if pinned, starts one with it."""
    for slot in range(0, stepping.shape[0] - 1, 2):
        for s, other in ((slot, slot + 1), (slot + 1, slot)):
            if stepping[s] and weight[s] >= 1.0 and active[other]:
                pin = mat3.load3(target, other)
                active[other], weight[other], stepping[other] = False, 1.0, True
                mat3.store3(offset, other, mat3.sub(pin, mat3.load3(foot_pos, other)))
                mat3.store3(goals, other, pin)
                pull[other] = 1.0


@njit
def _solve_legs(b, rules, plan, inputs, goals, pull):
    """Both legs turned toward their feet's goals (two-bone IK with the knee toward the facing), the foot
    turned toward its toe's goal, then forward kinematics of the solved pose."""
    pos, rot, offsets, floor = inputs.pos[b], inputs.rot[b], plan.offsets, plan.floor_heights
    forward = (np.sin(inputs.root_yaw[b]), 0.0, np.cos(inputs.root_yaw[b]))
    for leg in range(plan.legs.shape[0]):
        hip, knee, ankle, toe = plan.legs[leg, 0], plan.legs[leg, 1], plan.legs[leg, 2], plan.legs[leg, 3]
        foot_slot, toe_slot = 2 * leg, 2 * leg + 1
        ankle_pos, toe_pos = mat3.load3(pos, ankle), mat3.load3(pos, toe)
        ankle_target, toe_aim = ik.foot_target(
            ankle_pos, toe_pos, mat3.load3(goals, foot_slot), mat3.load3(goals, toe_slot), pull[foot_slot],
            pull[toe_slot])
        if toe != ankle:  # a held toe keeps the ankle at the foot's length: the foot turns about it
            ankle_target = ik.pivot_on_toe(ankle_target, toe_aim, mat3.length(mat3.load3(offsets, toe)),
                                           pull[toe_slot])
        if rules.floor_on:  # a foot dragged by its toe pin never takes its ankle (or toe) through the floor
            ankle_target = (ankle_target[0], max(ankle_target[1], floor[foot_slot]), ankle_target[2])
            toe_aim = (toe_aim[0], max(toe_aim[1], floor[toe_slot]), toe_aim[2])
        solved = ik.solve_leg(mat3.load3(pos, hip), mat3.load3(pos, knee), ankle_pos,
                              mat3.load33(rot, hip), mat3.load33(rot, knee), ankle_target, forward)
        mat3.store33(rot, hip, solved[0])
        mat3.store33(rot, knee, solved[1])
        if toe != ankle:
            ankle_rot = mat3.load33(rot, ankle)
            new_ankle = solved[3]
            foot_length = mat3.length(mat3.load3(offsets, toe))
            toe_now = mat3.add(new_ankle, mat3.mat_vec(ankle_rot, mat3.load3(offsets, toe)))
            toe_aim = ik.aim_within_reach(new_ankle, toe_aim, foot_length)
            mat3.store33(rot, ankle, ik.foot_rotation(ankle_rot, new_ankle, toe_now, toe_aim, 1.0))
    _forward_kinematics(rot, mat3.load3(pos, plan.up_path[0]), offsets, plan.parents, plan.up_path, plan.down_order,
                        pos)


@njit
def _shown_rotations(b, plan, inputs, out):
    """The shown rotations as quaternions, and the farthest body joint from the root (NaN: infinitely far)."""
    pos, rot = inputs.pos[b], inputs.rot[b]
    extent = 0.0
    root = mat3.load3(inputs.root_pos, b)
    for j in range(plan.parents.shape[0]):
        q = mat3.quat_from_matrix(mat3.load33(rot, j))
        out.rotations[b, j, 0], out.rotations[b, j, 1], out.rotations[b, j, 2], out.rotations[b, j, 3] = \
            q[0], q[1], q[2], q[3]
        if plan.body[j]:
            distance = mat3.length(mat3.sub(mat3.load3(pos, j), root))
            extent = max(extent, distance) if distance == distance else np.inf
    out.extent[b] = extent


@njit
def _feet_kernel(rules, plan, inputs, out):
    slots = plan.contact_joints.shape[0]
    goals = np.empty((slots, 3))
    pins, targets, foot_pos = np.empty((slots, 3)), np.empty((slots, 3)), np.empty((slots, 3))
    stepping = np.zeros(slots, dtype=np.bool_)
    pull = np.empty(slots)  # how much each joint's goal counts in the foot's placement (`ik.foot_target`)
    speed = np.empty(slots)  # m/s: the network's joint from where it was shown last tick, horizontally
    locks = out.locks
    for b in range(inputs.pos.shape[0]):
        pos = inputs.pos[b]
        for s in range(slots):
            joint = plan.contact_joints[s]
            mat3.store3(foot_pos, s, mat3.load3(pos, joint))
            speed[s] = math.hypot(pos[joint, 0] - inputs.shown_before[b, joint, 0],
                                  pos[joint, 2] - inputs.shown_before[b, joint, 2]) / rules.dt
        if inputs.settling[b]:
            _settle_goals(b, rules, plan, inputs, out, foot_pos, pins, targets, stepping, goals)
            for s in range(slots):
                pull[s] = 1.0
                locks.stepping[b, s] = False
        else:
            _pin_feet(b, rules, plan, inputs, out, foot_pos, goals, pull)
            if rules.pull_rise < 1.0:
                _blend_pins(pull, inputs.pull[b], rules.pull_rise)
        if rules.has_floor:
            _lift_swinging_feet(goals, pull, speed, inputs.contacts[b], rules.threshold, plan.floor_heights,
                                0.0 if inputs.settling[b] else rules.swing_clearance, inputs.swing_lift[b],
                                out.swing_lift[b], rules.dt, locks.stepping[b], rules.one_foot_down)
            if rules.one_foot_down and rules.hold_toe_off:
                _hold_toe_off(goals, pull, foot_pos, locks.stepping[b], plan.floor_heights, inputs.toe_hold[b],
                              out.toe_hold[b], rules.dt)
        else:
            out.swing_lift[b, :] = 0.0
        if rules.ik_on:
            _within_reach(pos, plan.legs, plan.offsets, rules.reach, goals, pull, locks.target[b], locks.active[b],
                          inputs.settling[b], plan.contact_joints, locks.weight[b], locks.offset[b], locks.stepping[b],
                          rules.catch_up_height >= 0.0, inputs.heel_off[b], rules.one_foot_down)
        any_constrained = False
        for s in range(slots):
            if rules.floor_on and goals[s, 1] < plan.floor_heights[s]:
                goals[s, 1] = plan.floor_heights[s]
                pull[s] = 1.0
            any_constrained = any_constrained or pull[s] > 0.0
        if rules.ik_on and any_constrained:
            _solve_legs(b, rules, plan, inputs, goals, pull)
        for s in range(slots):
            out.pull[b, s] = pull[s]
        _shown_rotations(b, plan, inputs, out)


# ---------------------------------------------------------------------------------------------
# The stage


def foot_rules(settings, dt: float) -> FootRules:
    return FootRules(
        locking=bool(settings.foot_locking), threshold=float(settings.contact_threshold),
        release_distance=float(settings.lock_release_distance),
        start_height=float(settings.lock_start_height), snap_height=float(settings.floor_snap_height),
        snap_keep=float(ik.fade_keep(FLOOR_SNAP_HALFLIFE, float(dt))),
        catch_up_height=float(settings.settle_step_height) if settings.catch_up_steps else -1.0,
        catch_up_time=float(settings.catch_up_time), smooth_catch_up=bool(settings.smooth_catch_up),
        swing_clearance=float(settings.swing_clearance) if settings.ik_enabled else 0.0,
        one_foot_down=bool(settings.one_foot_down), hold_toe_off=bool(settings.hold_toe_off),
        floor_on=False, has_floor=False, ik_on=bool(settings.ik_enabled), reach=LEG_REACH,
        step_time=float(settings.settle_step_time), step_height=float(settings.settle_step_height),
        land_keep=float(ik.landing_keep(float(settings.pin_landing_time), float(dt))),
        release_rate=float(release_rate(float(settings.pin_release_time))), release_lift=RELEASE_LIFT,
        pull_rise=float(dt) / float(settings.pin_blend_time) if settings.pin_blend_time > 0.0 else 1.0, dt=float(dt))


def release_times(settings, facing, velocity) -> np.ndarray:
    """[B] s: how long each character's released pins take to fade: `lock_release_time`, going over to
    `lock_release_time_side` with the share of the commanded `velocity` [B, 2] (world x, z) that goes
    across the `facing` [B, 2] kept while strafing (zero where not strafing): |sin| of the angle between
    them, 1 for a side-step, 0 for a backward walk."""
    velocity = np.asarray(velocity, float)
    facing = np.asarray(facing, float)
    speed = np.linalg.norm(velocity, axis=-1)
    across = np.abs(facing[:, 0] * velocity[:, 1] - facing[:, 1] * velocity[:, 0])
    side = np.where(speed > SIDE_SHARE_MIN_SPEED, across / np.maximum(speed, SIDE_SHARE_MIN_SPEED), 0.0)
    side = np.clip(side, 0.0, 1.0)
    base, sideways = float(settings.lock_release_time), float(settings.lock_release_time_side)
    return base + (sideways - base) * side


def place_feet(pose: Pose, root_pos, root_yaw, contacts, locks: ik.FootLocks, settings, floor_heights, dt: float,
               plan: SkeletonPlan, settling: Settling | None = None, shown_before=None, swing_lift=None,
               heel_off=None, toe_hold=None, pull=None, release_time=None) -> PlacedFeet:
    """Pin planted feet (`ik.update_lock`), or, for the characters `settling.characters`, play the
    settling steps (`settle.settle_character`: the stance placed under the hips moved by the root's
    remaining travel); keep contact joints at or above their floor heights [4] (when
    `settings.floor_clamp`), and turn the legs to reach (`ik.solve_leg`, no ankle farther from its hip
    than LEG_REACH of the leg) when `settings.ik_enabled`; lift free swinging feet (fast from where
    `shown_before` [B, J, 3], the pose shown last tick, has them) `settings.swing_clearance` above the
    floor (`swing_lift` [B, 2]: each foot's lift last tick); `release_time` [B] s: each character's pin
    release (`release_times`; default `settings.lock_release_time`); `pose` is solved in place."""
    batch, slots, joints = root_pos.shape[0], len(plan.contact_joints), plan.num_joints
    has_floor = floor_heights is not None
    rules = foot_rules(settings, dt)._replace(floor_on=bool(settings.floor_clamp) and has_floor, has_floor=has_floor)
    if settling is None or settling.stance is None:
        state = settle.idle_state(batch) if settling is None else settling.state
        settling = Settling(np.zeros(batch, dtype=bool), state, np.zeros((batch, 2)), _NO_STANCE)
    start = settling.state.start.copy()
    feet_plan = FeetPlan(plan.parents, plan.offsets, plan.up_path, plan.down_order, plan.contact_joints, plan.legs,
                         plan.body, int(plan.anchor), _NO_FLOOR if floor_heights is None else floor_heights,
                         settling.stance)
    inputs = FeetInput(
        pose.positions, pose.rotations, root_pos, root_yaw, np.ascontiguousarray(contacts),
        locks._replace(stepping=np.zeros((batch, slots), dtype=bool) if locks.stepping is None else locks.stepping,
                       velocity=np.zeros((batch, slots, 3)) if locks.velocity is None else locks.velocity),
        np.zeros((batch, slots // 2)) if swing_lift is None else np.ascontiguousarray(swing_lift, np.float64),
        np.zeros((batch, slots // 2)) if toe_hold is None else np.ascontiguousarray(toe_hold, np.float64),
        np.ones((batch, slots)) if pull is None else np.ascontiguousarray(pull, np.float64),
        np.ones(batch, bool) if heel_off is None else np.ascontiguousarray(heel_off, np.bool_),
        np.full(batch, float(settings.lock_release_time)) if release_time is None
        else np.ascontiguousarray(release_time, np.float64),
        settling.characters, settling.state._replace(start=start),
        pose.positions if shown_before is None else shown_before,
        np.zeros((batch, 2)) if settling.rest_shift is None else settling.rest_shift)
    out = FeetOutput(
        ik.FootLocks(np.empty((batch, slots, 3)), np.empty((batch, slots)), np.empty((batch, slots), dtype=bool),
                     np.empty((batch, slots, 3)), np.empty((batch, slots), dtype=bool), np.empty((batch, slots, 3))),
        np.empty(batch, dtype=np.int64), np.empty(batch), np.empty(batch, dtype=np.int64),
        np.empty((batch, joints, 4)), np.empty(batch), np.empty((batch, slots // 2)),
        np.zeros((batch, slots // 2)),  # toe_hold: 0 unless `_hold_toe_off` holds a toe
        np.empty((batch, slots)))
    _feet_kernel(rules, feet_plan, inputs, out)
    return PlacedFeet(pose.positions, out.rotations, out.locks,
                      settle.SettleState(settling.characters, out.settle_foot, out.settle_progress, start,
                                         out.settle_steps), out.extent, out.swing_lift, out.toe_hold, out.pull)
