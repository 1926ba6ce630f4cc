"""What the foot stage does with a foot out of the leg's reach and with a free foot swinging low (compiled
rules of one character, called by `feet._feet_kernel`): pull an overstretched foot in, or turn its heel
up about a held toe (the walk's toe-off); hold a fast free foot's toe up off the floor (the swing lift).
"""
from __future__ import annotations

import math

import numpy as np

from pfnn_core.math import mat3
from pfnn_core.math.mat3 import njit

SWING_SPEEDS = (0.4, 1.0)  # m/s: a free foot the network moves this fast gets none ... all of the swing clearance
HEEL_OFF_MAX_TURN = math.radians(35.0)  # the most a held toe's heel is turned up to keep its leg in reach
SWING_LIFT_RATE = 0.3  # m/s: the swing lift rises and falls no faster than this (3 cm in 0.1 s)
TOE_HOLD = 0.015  # m: while the other foot takes a catch-up step, a leaving toe is held this high at most
TOE_HOLD_REACH = 0.06  # m: ... when it is no higher than this above its floor level (a toe-off, not a swing)
TOE_RELEASE_RATE = 0.3  # m/s: a held toe let go comes up to where it would be shown no faster than this


@njit
def _turned_about_toe(toe, back, length, pitch):
    """The ankle at `length` from the toe, toward the horizontal unit `back`, pitched up by `pitch` (rad)."""
    across = length * math.cos(pitch)
    return mat3.add(toe, (back[0] * across, length * math.sin(pitch), back[2] * across))


@njit
def _heel_up_about_toe(ankle, toe, hip, longest):
    """The ankle turned up about the toe (in the vertical plane through both) by the least angle that
    brings it within `longest` of the hip: (ankle, found). Not found when that takes more than
    HEEL_OFF_MAX_TURN or even an upright foot is out of reach."""
    arm = mat3.sub(ankle, toe)
    flat = math.hypot(arm[0], arm[2])
    length = mat3.length(arm)
    if flat < 1e-9 or length < 1e-9:
        return ankle, False
    back = (arm[0] / flat, 0.0, arm[2] / flat)  # horizontal, from the toe toward the heel
    start = math.atan2(arm[1], flat)  # the foot's pitch now
    if mat3.length(mat3.sub(_turned_about_toe(toe, back, length, 0.5 * math.pi), hip)) > longest:
        return ankle, False
    low, high = start, 0.5 * math.pi
    for _ in range(20):  # bisection on the pitch: the ankle's distance to the hip falls as it rises
        mid = 0.5 * (low + high)
        if mat3.length(mat3.sub(_turned_about_toe(toe, back, length, mid), hip)) > longest:
            low = mid
        else:
            high = mid
    if high - start > HEEL_OFF_MAX_TURN:
        return ankle, False
    return _turned_about_toe(toe, back, length, high), True


@njit
def _within_reach(pos, legs, offsets, reach, goals, pull, target, active, settling, contact_joints, weight, offset,
                  stepping, catch_up, heel_off, one_foot_down):
    """Pull a foot whose ankle goal is farther from its hip than `reach` x the leg's length toward the
    hip (horizontally, the goal's height kept), ankle and toe together, and let its held pins go (into
    a catch-up step when `catch_up`): a straight leg has no knee direction, and a foot left far behind
    is a stretched, popping leg. With `heel_off` (walking, not strafing) a foot whose toe is held turns
    its heel up about the toe instead (`_heel_up_about_toe`), the ankle's pin let go relative to the
    body: the walk's toe-off (else the trailing foot of a steady walk would leave the floor early, in a
    catch-up step, at the end of nearly every stance). With `one_foot_down` a foot let go while the other
    foot holds no pin is released without a catch-up step (no lift: the body would hover)."""
    for leg in range(legs.shape[0]):
        hip, knee, ankle = legs[leg, 0], legs[leg, 1], legs[leg, 2]
        slot = 2 * leg
        if pull[slot] <= 0.0 and pull[slot + 1] <= 0.0:
            continue
        longest = reach * (mat3.length(mat3.load3(offsets, knee)) + mat3.length(mat3.load3(offsets, ankle)))
        dx, dy, dz = goals[slot, 0] - pos[hip, 0], goals[slot, 1] - pos[hip, 1], goals[slot, 2] - pos[hip, 2]
        flat = math.sqrt(dx * dx + dz * dz)
        if dx * dx + dy * dy + dz * dz <= longest * longest or flat < 1e-9:
            continue
        toe = slot + 1
        if not settling and active[toe] and not stepping[toe] and heel_off:
            lifted = _heel_up_about_toe(mat3.load3(goals, slot), mat3.load3(goals, toe), mat3.load3(pos, hip), longest)
            if lifted[1]:  # the heel rises about the held toe: the ankle lets go (relative to the body), no step
                mat3.store3(goals, slot, lifted[0])
                pull[slot] = 1.0
                if active[slot]:
                    active[slot], weight[slot], stepping[slot] = False, 1.0, False
                    mat3.store3(target, slot, lifted[0])
                    mat3.store3(offset, slot, mat3.sub(lifted[0], mat3.load3(pos, contact_joints[slot])))
                continue
        shrink = math.sqrt(max(longest * longest - dy * dy, 0.0)) / flat
        shift = (dx * (shrink - 1.0), 0.0, dz * (shrink - 1.0))
        other = 2 - slot
        other_holds = (active[other] and not stepping[other]) or (active[other + 1] and not stepping[other + 1])
        steps = catch_up and (other_holds or not one_foot_down)
        for s in range(slot, slot + 2):
            moved = mat3.add(mat3.load3(goals, s), shift)
            mat3.store3(goals, s, moved)
            if settling:
                mat3.store3(target, s, moved)
            elif active[s]:  # let go: the foot rejoins the network's relative to the body (a catch-up step)
                active[s], weight[s] = False, 1.0
                stepping[s] = steps
                mat3.store3(target, s, moved)
                mat3.store3(offset, s, mat3.sub(moved, mat3.load3(pos, contact_joints[s])))


@njit
def _lift_swinging_feet(goals, pull, speed, contacts, threshold, floor_heights, clearance, lift_before, out_lift,
                        dt, stepping, one_foot_down):
    """Hold a swinging foot up. A free foot (no pin holding or fading on either joint, the network's
    contact outputs low) whose toe moves fast aims its lift at `clearance` x smoothstep over SWING_SPEEDS
    of the toe's speed (m/s); any other foot at 0. The lift (`lift_before` [2] -> `out_lift` [2], m)
    moves toward its aim at SWING_LIFT_RATE at most, and the toe is kept at least that high above its
    floor level, the whole foot raised with it (a foot landing on a new pin comes down onto it over
    0.1 s; one whose pin or fade is still showing waits). The network's side-steps and backward walks
    (seconds of mocap per style) drag the swinging foot along the floor with its contact output off: a
    skating foot the pins never see. The mocap's own toes, moving 0.7-1.5 m/s in a walk, are at least
    1.6-1.9 cm up 95% of the time; its ankles are often at their floor level while fast (the heel strikes
    and the foot rolls over it), so only the toe is held up. With `one_foot_down` never both feet: a foot
    aims at no lift while the other is in a catch-up step (`stepping` [4]), and when both would rise only
    the faster one does (lifting both hovered the body: a walk has no flight phase)."""
    low, high = SWING_SPEEDS
    step = SWING_LIFT_RATE * dt
    aims = np.zeros(2)
    for slot in range(0, goals.shape[0] - 1, 2):
        toe, foot = slot + 1, slot // 2
        if pull[slot] <= 0.0 and pull[toe] <= 0.0:  # free: no pin holding or fading on either joint
            swinging = 1.0 - mat3.smoothstep(2.0 * max(contacts[slot], contacts[toe]) / threshold - 1.0)
            aims[foot] = swinging * clearance * mat3.smoothstep((speed[toe] - low) / (high - low))
    if one_foot_down:
        for foot in range(2):
            other = 1 - foot
            if stepping[2 * other] or stepping[2 * other + 1]:
                aims[foot] = 0.0  # the other foot is in a catch-up step, off the floor
            elif aims[foot] > 0.0 and aims[other] > 0.0 and speed[2 * foot + 1] < speed[2 * other + 1]:
                aims[foot] = 0.0  # both would rise: the faster (swinging) one does, this one stands
    for slot in range(0, goals.shape[0] - 1, 2):
        toe, foot = slot + 1, slot // 2
        lift = lift_before[foot] + min(max(aims[foot] - lift_before[foot], -step), step)
        out_lift[foot] = lift
        fading = (pull[slot] > 0.0 and pull[slot] < 1.0) or (pull[toe] > 0.0 and pull[toe] < 1.0)
        raise_by = floor_heights[toe] + lift - goals[toe, 1]
        if lift > 0.0 and raise_by > 0.0 and not fading:  # the whole foot rises, its pitch kept
            for s in (slot, toe):
                goals[s, 1] += raise_by
                pull[s] = 1.0


@njit
def _hold_toe_off(goals, pull, foot_pos, stepping, floor_heights, hold_before, out_hold, dt):
    """While one foot takes a catch-up step (lifted by the runtime, `stepping` [4]), the other foot's toe
    leaving the floor (where it would be shown: the network's toe `foot_pos` moved by its pull toward
    its goal; no higher than TOE_HOLD_REACH above its floor level) is held TOE_HOLD above it, the heel
    turning about it: its toe-off waits for the stepping foot to land. The network plants the foot whose
    pin the runtime is still stepping after (left behind on its leash) and lifts the other, whose pin
    fades out: both feet were off the floor at once in starts. Let go, the toe rises to where it would
    be shown at TOE_RELEASE_RATE (`hold_before` [2] -> `out_hold` [2]: how far each toe is held down, m)
    instead of in one tick."""
    for foot in range(2):
        other = 1 - foot
        toe = 2 * foot + 1
        shown = mat3.lerp(mat3.load3(foot_pos, toe), mat3.load3(goals, toe), pull[toe])
        height = shown[1] - floor_heights[toe]
        held = 0.0
        if (stepping[2 * other] or stepping[2 * other + 1]) and TOE_HOLD < height <= TOE_HOLD_REACH:
            held = height - TOE_HOLD
        elif hold_before[foot] > 0.0:  # let go: coming up to its height over a few ticks
            held = min(max(hold_before[foot] - TOE_RELEASE_RATE * dt, 0.0), max(height, 0.0))
        out_hold[foot] = held
        if held > 0.0:
            mat3.store3(goals, toe, (shown[0], shown[1] - held, shown[2]))
            pull[toe] = 1.0
