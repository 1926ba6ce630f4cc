"""The posed skeleton of a runtime tick: rotation fit, forward kinematics, foot locks and leg IK.

Owns `SkeletonPlan` (what the tick needs to know about a skeleton, worked out once per model), the
two pose stages of a tick, `pose_from_prediction` (the network's root-frame pose placed in the
world, rotations fitted to the predicted positions, one forward kinematics) and `place_feet` (foot
pins, the floor, two-bone leg IK, forward kinematics of the solved pose), and the batched helpers
`forward_kinematics_global`, `fit_rotations_to_positions`, `local_rotations`.

Both stages run as compiled kernels (numba) over the batch, in rotation matrices, calling the
per-leg and per-foot rules of `ik.py`; a tick at batch 1 would otherwise spend most of its time in
hundreds of tiny numpy calls. Rotations leave the stage as quaternions (w, x, y, z).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from pfnn_core.math import mat3
from pfnn_core.math.mat3 import njit
from pfnn_core.math.quat import quat_to_matrix
from pfnn_core.runtime import ik, settle
from pfnn_core.skeleton import contact_joint_order, foot_joints

FLOOR_SNAP_HALFLIFE = 0.03  # s: a new pin near the floor closes half its gap to the floor level per this
LEG_REACH = 0.995  # a pinned ankle is kept within this share of the leg's length from its hip
SWING_SPEEDS = (0.4, 1.0)  # m/s: a free foot the network moves this fast gets none ... all of the swing clearance
HEEL_OFF_MAX_TURN = math.radians(35.0)  # the most a held toe's heel is turned up to keep its leg in reach
SWING_LIFT_RATE = 0.3  # m/s: the swing lift rises and falls no faster than this (3 cm in 0.1 s)
_NO_FLOOR, _NO_STANCE = np.zeros(4), np.zeros((4, 3))


# ---------------------------------------------------------------------------------------------
# Skeleton


def anchor_joint(parents) -> int:
    """The joint the network's root-frame position places in the world (the hips): the first joint
    from the root down with more than one child. A 'joint_Root'-style dummy above it is carried."""
    parents = np.asarray(parents)
    joint = int(np.flatnonzero(parents < 0)[0])
    while True:
        children = np.flatnonzero(parents == joint)
        if len(children) != 1:
            return joint
        joint = int(children[0])


def joints_above(parents, joint: int) -> list[int]:
    """Ancestors of `joint`, nearest first."""
    above = []
    while parents[joint] >= 0:
        joint = int(parents[joint])
        above.append(joint)
    return above


@dataclass(frozen=True)
class SkeletonPlan:
    """Index arrays the pose kernels walk, worked out once per skeleton."""

    parents: np.ndarray  # [J] int
    offsets: np.ndarray  # [J, 3] m, bone vectors in the parent's frame
    anchor: int  # the joint the network places (hips)
    up_path: np.ndarray  # anchor, its parent, ..., its root: positions walk up from the anchor
    down_order: np.ndarray  # every other joint, parents first: positions walk down
    above_anchor: np.ndarray  # joints above the anchor (placement nodes): no rotation, they hang by their offsets
    fit_single: np.ndarray  # [S, 2] (joint, child): one-child joints swing toward their child
    fit_multi: np.ndarray  # [M] several-children joints: best rotation for all their bones
    fit_children: np.ndarray  # [M, C] their children, padded with -1
    contact_joints: np.ndarray  # [4] Foot_L, Toes_L, Foot_R, Toes_R
    legs: np.ndarray  # [2, 4] (hip, knee, ankle, toe) of the left and the right leg
    body: np.ndarray  # [J] bool: the anchor and the joints below it (not placement nodes above it)
    extent: float  # m, farthest a body joint can be from the anchor along its bones

    @property
    def num_joints(self) -> int:
        return len(self.parents)


def skeleton_plan(names: Sequence[str] | None, parents, offsets, anchor: int | None = None,
                  contact_joints: Sequence[int] | None = None) -> SkeletonPlan:
    """The per-skeleton constants of the pose stage. Without `names` (a rig known by its positions
    only) there are no contact joints and no legs: only the rotation fit and forward kinematics work."""
    parents = np.asarray(parents, dtype=np.int64)
    offsets = np.ascontiguousarray(offsets, dtype=np.float64)
    anchor = anchor_joint(parents) if anchor is None else int(anchor)
    up_path = [anchor] + joints_above(parents, anchor)
    down = [j for j in range(len(parents)) if j not in up_path]
    skip = set(up_path[1:])
    children = {j: [int(c) for c in np.flatnonzero(parents == j)] for j in range(len(parents)) if j not in skip}
    single = [(j, c[0]) for j, c in children.items() if len(c) == 1]
    multi = [(j, c) for j, c in children.items() if len(c) > 1]
    width = max([len(c) for _, c in multi], default=1)
    if contact_joints is None:
        contact_joints = ([] if names is None else
                          contact_joint_order(foot_joints(list(names), parents)))
    body = np.zeros(len(parents), dtype=bool)
    reach = np.zeros(len(parents))  # bone length summed from the anchor (parents come first)
    body[anchor] = True
    for j in range(len(parents)):
        if parents[j] >= 0 and body[parents[j]]:
            body[j], reach[j] = True, reach[parents[j]] + np.linalg.norm(offsets[j])
    return SkeletonPlan(
        parents=parents, offsets=offsets, anchor=anchor, up_path=np.array(up_path, dtype=np.int64),
        down_order=np.array(down, dtype=np.int64), above_anchor=np.array(up_path[1:], dtype=np.int64),
        fit_single=np.array(single, dtype=np.int64).reshape(-1, 2),
        fit_multi=np.array([j for j, _ in multi], dtype=np.int64),
        fit_children=np.array([c + [-1] * (width - len(c)) for _, c in multi], dtype=np.int64).reshape(-1, width),
        contact_joints=np.array(contact_joints, dtype=np.int64),
        legs=np.array(ik.leg_chains(names, parents) if names is not None else [], dtype=np.int64).reshape(-1, 4),
        body=body, extent=float(reach.max()))


# ---------------------------------------------------------------------------------------------
# Kernels: one character's joints in matrices


@njit
def _fit_rotations(rot, world, offsets, fit_single, fit_multi, fit_children, goal, rest, scratch):
    """Turn each joint so its bones point where the predicted positions `world` put its children: a
    one-child joint by the shortest swing (its twist stays the network's), a several-children joint
    by the best rotation for all of its bones."""
    for k in range(fit_single.shape[0]):
        joint, child = fit_single[k, 0], fit_single[k, 1]
        r = mat3.load33(rot, joint)
        bone_now = mat3.mat_vec(r, mat3.load3(offsets, child))
        bone_goal = mat3.sub(mat3.load3(world, child), mat3.load3(world, joint))
        mat3.store33(rot, joint, mat3.mat_mul(mat3.between(bone_now, bone_goal), r))
    for k in range(fit_multi.shape[0]):
        joint = fit_multi[k]
        count = 0
        for c in range(fit_children.shape[1]):
            child = fit_children[k, c]
            if child >= 0:
                mat3.store3(goal, count, mat3.sub(mat3.load3(world, child), mat3.load3(world, joint)))
                mat3.store3(rest, count, mat3.load3(offsets, child))
                count += 1
        mat3.store33(rot, joint, mat3.nearest_rotation(goal, rest, count, mat3.load33(rot, joint), scratch))


@njit
def _forward_kinematics(rot, anchor_pos, offsets, parents, up_path, down_order, pos):
    """Joint positions from global rotations: up from the anchor to the root, then down."""
    mat3.store3(pos, up_path[0], anchor_pos)
    for k in range(1, up_path.shape[0]):
        child, joint = up_path[k - 1], up_path[k]
        bone = mat3.mat_vec(mat3.load33(rot, joint), mat3.load3(offsets, child))
        mat3.store3(pos, joint, mat3.sub(mat3.load3(pos, child), bone))
    top = up_path[up_path.shape[0] - 1]
    for k in range(down_order.shape[0]):
        joint = down_order[k]
        parent = parents[joint]
        if parent < 0:
            mat3.store3(pos, joint, mat3.load3(pos, top))
        else:
            bone = mat3.mat_vec(mat3.load33(rot, parent), mat3.load3(offsets, joint))
            mat3.store3(pos, joint, mat3.add(mat3.load3(pos, parent), bone))


@njit
def _smoothed_pose(predicted, previous_pos, previous_vel, previous_root, previous_yaw, root, yaw, warp, smoothing, dt,
                   out):
    """The pose fed back next tick (root frame): the prediction blended by `smoothing` with the previous
    pose extrapolated by its velocity (over dt / warp) and carried into the current root frame [PFNN]."""
    turn = mat3.yaw_matrix(previous_yaw - yaw)
    shift = mat3.mat_vec(mat3.yaw_matrix(-yaw), mat3.sub(previous_root, root))
    for j in range(predicted.shape[0]):
        moved = mat3.add(mat3.load3(previous_pos, j), mat3.scale(mat3.load3(previous_vel, j), dt / warp))
        extrapolated = mat3.add(mat3.mat_vec(turn, moved), shift)
        mat3.store3(out, j, mat3.lerp(mat3.load3(predicted, j), extrapolated, smoothing))


@njit
def _pose_kernel(root_pos, root_yaw, rot6, predicted, previous_pos, previous_vel, previous_root, previous_yaw, warp,
                 smoothing, dt, fit, parents, offsets, up_path, down_order, above_anchor, fit_single, fit_multi,
                 fit_children, out_joint_pos, out_rot, out_pos):
    joints = parents.shape[0]
    world = np.empty((joints, 3))
    goal, rest = np.empty((max(fit_children.shape[1], 1), 3)), np.empty((max(fit_children.shape[1], 1), 3))
    scratch = np.empty((3, 3, 3))
    for b in range(root_pos.shape[0]):
        yaw = mat3.yaw_matrix(root_yaw[b])
        root = mat3.load3(root_pos, b)
        rot = out_rot[b]
        joint_pos = out_joint_pos[b]
        if smoothing > 0.0:
            _smoothed_pose(predicted[b], previous_pos[b], previous_vel[b], mat3.load3(previous_root, b),
                           previous_yaw[b], root, root_yaw[b], warp[b], smoothing, dt, joint_pos)
        else:
            joint_pos[:] = predicted[b]
        for j in range(joints):
            mat3.store33(rot, j, mat3.mat_mul(yaw, mat3.from_6d(rot6[b], j)))
            mat3.store3(world, j, mat3.add(mat3.mat_vec(yaw, mat3.load3(joint_pos, j)), root))
        if fit:
            _fit_rotations(rot, world, offsets, fit_single, fit_multi, fit_children, goal, rest, scratch)
        for k in range(above_anchor.shape[0]):
            # Unturned: a placement node hangs by its offset (the bundled Hips offset is a take's start, metres
            # to the side), so turning it with the root would swing it across the scene.
            mat3.store33(rot, above_anchor[k], (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0))
        _forward_kinematics(rot, mat3.load3(world, up_path[0]), offsets, parents, up_path, down_order, out_pos[b])


@njit
def _body_yaw(pos, legs):
    """Yaw of the body frame (`features.body_frames`): x along the hip line from the right hip to the left."""
    left, right = legs[0, 0], legs[1, 0]
    return math.atan2(-(pos[left, 2] - pos[right, 2]), pos[left, 0] - pos[right, 0])


@njit
def _settle_goals(b, pos, foot_pos, settle_was_active, shown_before, contact_joints, lock_target, settle_foot,
                  settle_progress, settle_start, settle_steps, rest_shift, stance, floor, has_floor, dt,
                  step_time, step_height, anchor, legs, pins, targets, stepping, goals, out_target, out_weight,
                  out_active, out_offset, out_foot, out_progress, out_steps):
    """The feet of a settling character: pins and the step under way (`settle.settle_character`); the
    pins are written as held locks, a stepping foot's joints as released ones (so moving the stick
    mid-step lets the foot go relative to the body)."""
    slots = pins.shape[0]
    foot, progress, steps = settle_foot[b], settle_progress[b], settle_steps[b]
    if not settle_was_active[b]:  # the first tick: pin the feet where they are shown (a pin above the
        # floor comes down at `settle.LANDING_SPEED`; snapped at once, a foot dropped up to 3 cm in a frame)
        foot, progress, steps = -1, 0.0, 0
        for s in range(slots):
            point = mat3.load3(shown_before[b], contact_joints[s])
            if has_floor and point[1] < floor[s]:
                point = (point[0], floor[s], point[2])
            mat3.store3(pins, s, point)
    else:
        for s in range(slots):
            mat3.store3(pins, s, mat3.load3(lock_target[b], s))
    yaw = _body_yaw(pos, legs)
    hips_x, hips_z = pos[anchor, 0] + rest_shift[b, 0], pos[anchor, 2] + rest_shift[b, 1]
    for s in range(slots):
        point = settle.stance_point(hips_x, hips_z, yaw, stance, s)
        mat3.store3(targets, s, (point[0], floor[s] if has_floor else point[1], point[2]))
    foot, progress, steps = settle.settle_character(foot, progress, steps, settle_start[b], pins, targets, floor, dt,
                                                    step_time, step_height, settle.STEP_TOLERANCE, settle.MAX_STEPS,
                                                    goals, stepping)
    for s in range(slots):
        goal = mat3.load3(goals, s)
        mat3.store3(out_target[b], s, goal)
        out_weight[b, s], out_active[b, s] = 1.0, not stepping[s]
        mat3.store3(out_offset[b], s, mat3.sub(goal, mat3.load3(foot_pos, s)))
    out_foot[b], out_progress[b], out_steps[b] = foot, progress, steps


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
                  stepping, catch_up, heel_off):
    """Pull a foot whose ankle goal is farther from its hip than `reach` x the leg's length toward the
    hip (horizontally, the goal's height kept), ankle and toe together, and let its held pins go (into
    a catch-up step when `catch_up`): a straight leg has no knee direction, and a foot left far behind
    is a stretched, popping leg. With `heel_off` (walking, not strafing) a foot whose toe is held turns
    its heel up about the toe instead (`_heel_up_about_toe`), the ankle's pin let go relative to the
    body: the walk's toe-off. Before, at the end of nearly every stance of a steady walk the trailing
    leg ran out of reach and the whole foot left the floor early in a catch-up step."""
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
        for s in range(slot, slot + 2):
            moved = mat3.add(mat3.load3(goals, s), shift)
            mat3.store3(goals, s, moved)
            if settling:
                mat3.store3(target, s, moved)
            elif active[s]:  # let go: the foot rejoins the network's relative to the body (a catch-up step)
                active[s], weight[s] = False, 1.0
                stepping[s] = catch_up
                mat3.store3(target, s, moved)
                mat3.store3(offset, s, mat3.sub(moved, mat3.load3(pos, contact_joints[s])))


@njit
def _lift_swinging_feet(goals, pull, speed, contacts, threshold, floor_heights, clearance, lift_before, out_lift,
                        dt):
    """Hold a swinging foot up. A free foot (no pin holding or fading on either joint, the network's
    contact outputs low) whose toe moves fast aims its lift at `clearance` x smoothstep over SWING_SPEEDS
    of the toe's speed (m/s); any other foot at 0. The lift (`lift_before` [2] -> `out_lift` [2], m)
    moves toward its aim at SWING_LIFT_RATE at most, and the toe is kept at least that high above its
    floor level, the whole foot raised with it (a foot landing on a new pin comes down onto it over
    0.1 s; one whose pin or fade is still showing waits). The network's side-steps and backward walks
    (seconds of mocap per style) drag the swinging foot along the floor with its contact output off: a
    skating foot the pins never see. The mocap's own toes, moving 0.7-1.5 m/s in a walk, are at least
    1.6-1.9 cm up 95% of the time; its ankles are often at their floor level while fast (the heel strikes
    and the foot rolls over it), so only the toe is held up."""
    low, high = SWING_SPEEDS
    step = SWING_LIFT_RATE * dt
    for slot in range(0, goals.shape[0] - 1, 2):
        toe, foot = slot + 1, slot // 2
        free = pull[slot] <= 0.0 and pull[toe] <= 0.0
        aim = 0.0
        if free:
            swinging = 1.0 - mat3.smoothstep(2.0 * max(contacts[slot], contacts[toe]) / threshold - 1.0)
            aim = swinging * clearance * mat3.smoothstep((speed[toe] - low) / (high - low))
        lift = lift_before[foot] + min(max(aim - lift_before[foot], -step), step)
        out_lift[foot] = lift
        fading = (pull[slot] > 0.0 and pull[slot] < 1.0) or (pull[toe] > 0.0 and pull[toe] < 1.0)
        raise_by = floor_heights[toe] + lift - goals[toe, 1]
        if lift > 0.0 and raise_by > 0.0 and not fading:  # the whole foot rises, its pitch kept
            for s in (slot, toe):
                goals[s, 1] += raise_by
                pull[s] = 1.0


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
def _feet_kernel(pos, rot, root_pos, root_yaw, contacts, lock_target, lock_weight, lock_active, lock_offset,
                 lock_stepping, locking, threshold, release_time, release_distance, start_height, snap_height, snap_keep,
                 catch_up_height, swing_clearance, swing_lift, out_lift, heel_off,
                 floor_on, has_floor, floor_heights, ik_on, reach, settling, settle_was_active, shown_before, settle_foot,
                 settle_progress, settle_start, settle_steps, rest_shift, stance, step_time, step_height, dt,
                 parents, offsets, up_path, down_order, contact_joints, legs, body, anchor, out_target, out_weight,
                 out_active, out_offset, out_stepping, out_foot, out_progress, out_steps, out_rot, out_extent):
    slots = contact_joints.shape[0]
    goals = np.empty((slots, 3))
    pins, targets, foot_pos = np.empty((slots, 3)), np.empty((slots, 3)), np.empty((slots, 3))
    stepping = np.zeros(slots, dtype=np.bool_)
    pull = np.empty(slots)  # how much each joint's goal counts in the foot's placement (`ik.foot_target`)
    speed = np.empty(slots)  # m/s: the network's joint from where it was shown last tick, horizontally
    no_floor = np.nan
    for b in range(pos.shape[0]):
        for s in range(slots):
            mat3.store3(foot_pos, s, mat3.load3(pos[b], contact_joints[s]))
            joint = contact_joints[s]
            speed[s] = math.hypot(pos[b, joint, 0] - shown_before[b, joint, 0],
                                  pos[b, joint, 2] - shown_before[b, joint, 2]) / dt
        if settling[b]:
            _settle_goals(b, pos[b], foot_pos, settle_was_active, shown_before, contact_joints, lock_target,
                          settle_foot, settle_progress, settle_start, settle_steps, rest_shift, stance, floor_heights,
                          has_floor, dt, step_time, step_height, anchor, legs, pins, targets, stepping,
                          goals, out_target, out_weight, out_active, out_offset, out_foot, out_progress, out_steps)
            for s in range(slots):
                pull[s] = 1.0
                out_stepping[b, s] = False
        else:
            out_foot[b], out_progress[b], out_steps[b] = -1, 0.0, 0
            for s in range(slots):
                foot = mat3.load3(foot_pos, s)
                if locking:
                    pin = ik.update_lock(mat3.load3(lock_target[b], s), lock_weight[b, s], lock_active[b, s],
                                         mat3.load3(lock_offset[b], s), foot, contacts[b, s] > threshold,
                                         release_time, dt, release_distance,
                                         floor_heights[s] if has_floor else no_floor,
                                         start_height, snap_height, snap_keep, lock_stepping[b, s], catch_up_height)
                    mat3.store3(out_target[b], s, pin[0])
                    out_weight[b, s], out_active[b, s], out_stepping[b, s] = pin[1], pin[2], pin[5]
                    mat3.store3(out_offset[b], s, pin[3])
                    mat3.store3(goals, s, pin[4])
                    pull[s] = 1.0 if pin[2] or pin[5] else mat3.smoothstep(pin[1])
                else:
                    mat3.store3(out_target[b], s, foot)
                    out_weight[b, s], out_active[b, s], out_stepping[b, s] = 0.0, False, False
                    mat3.store3(out_offset[b], s, (0.0, 0.0, 0.0))
                    mat3.store3(goals, s, foot)
                    pull[s] = 0.0
            if locking and catch_up_height >= 0.0:
                _step_whole_feet(foot_pos, goals, pull, out_target[b], out_weight[b], out_active[b], out_offset[b],
                                 out_stepping[b])
        if has_floor:
            _lift_swinging_feet(goals, pull, speed, contacts[b], threshold, floor_heights,
                                0.0 if settling[b] else swing_clearance, swing_lift[b], out_lift[b], dt)
        else:
            out_lift[b, :] = 0.0
        if ik_on:
            _within_reach(pos[b], legs, offsets, reach, goals, pull, out_target[b], out_active[b], settling[b],
                          contact_joints, out_weight[b], out_offset[b], out_stepping[b], catch_up_height >= 0.0,
                          heel_off[b])
        any_constrained = False
        for s in range(slots):
            if floor_on and goals[s, 1] < floor_heights[s]:
                goals[s, 1] = floor_heights[s]
                pull[s] = 1.0
            any_constrained = any_constrained or pull[s] > 0.0
        if ik_on and any_constrained:
            forward = (np.sin(root_yaw[b]), 0.0, np.cos(root_yaw[b]))
            for leg in range(legs.shape[0]):
                hip, knee, ankle, toe = legs[leg, 0], legs[leg, 1], legs[leg, 2], legs[leg, 3]
                foot_slot, toe_slot = 2 * leg, 2 * leg + 1
                ankle_pos, toe_pos = mat3.load3(pos[b], ankle), mat3.load3(pos[b], toe)
                ankle_target, toe_aim = ik.foot_target(
                    ankle_pos, toe_pos, mat3.load3(goals, foot_slot), mat3.load3(goals, toe_slot), pull[foot_slot],
                    pull[toe_slot])
                if toe != ankle:  # a held toe keeps the ankle at the foot's length: the foot turns about it
                    ankle_target = ik.pivot_on_toe(ankle_target, toe_aim, mat3.length(mat3.load3(offsets, toe)),
                                                   pull[toe_slot])
                if floor_on:  # a foot dragged by its toe pin never takes its ankle (or toe) through the floor
                    ankle_target = (ankle_target[0], max(ankle_target[1], floor_heights[foot_slot]), ankle_target[2])
                    toe_aim = (toe_aim[0], max(toe_aim[1], floor_heights[toe_slot]), toe_aim[2])
                solved = ik.solve_leg(mat3.load3(pos[b], hip), mat3.load3(pos[b], knee), ankle_pos,
                                      mat3.load33(rot[b], hip), mat3.load33(rot[b], knee), ankle_target, forward)
                mat3.store33(rot[b], hip, solved[0])
                mat3.store33(rot[b], knee, solved[1])
                if toe != ankle:
                    ankle_rot = mat3.load33(rot[b], ankle)
                    new_ankle = solved[3]
                    foot_length = mat3.length(mat3.load3(offsets, toe))
                    toe_now = mat3.add(new_ankle, mat3.mat_vec(ankle_rot, mat3.load3(offsets, toe)))
                    toe_aim = ik.aim_within_reach(new_ankle, toe_aim, foot_length)
                    mat3.store33(rot[b], ankle, ik.foot_rotation(ankle_rot, new_ankle, toe_now, toe_aim, 1.0))
            _forward_kinematics(rot[b], mat3.load3(pos[b], up_path[0]), offsets, parents, up_path, down_order, pos[b])
        extent = 0.0
        root = mat3.load3(root_pos, b)
        for j in range(parents.shape[0]):
            q = mat3.quat_from_matrix(mat3.load33(rot[b], j))
            out_rot[b, j, 0], out_rot[b, j, 1], out_rot[b, j, 2], out_rot[b, j, 3] = q[0], q[1], q[2], q[3]
            if body[j]:
                distance = mat3.length(mat3.sub(mat3.load3(pos[b], j), root))
                extent = max(extent, distance) if distance == distance else np.inf  # NaN counts as infinitely far
        out_extent[b] = extent


# ---------------------------------------------------------------------------------------------
# The two stages of a tick


@dataclass
class Pose:
    """The pose before the feet: world joint positions [B, J, 3] and rotation matrices [B, J, 3, 3],
    and the root-frame joint positions fed back to the network next tick [B, J, 3]."""

    positions: np.ndarray
    rotations: np.ndarray
    fed_back: np.ndarray


@dataclass
class PlacedFeet:
    """The shown pose after foot pins, settling steps, floor and IK, and the pins for the next tick."""

    positions: np.ndarray  # [B, J, 3]
    rotations: np.ndarray  # [B, J, 4] quaternions
    locks: ik.FootLocks  # [B, 4] pins of the contact joints
    settle: settle.SettleState  # [B] the settling steps
    extent: np.ndarray  # [B] m, farthest body joint from the root (inf when a position is not finite)
    swing_lift: np.ndarray  # [B, 2] m: each foot's swing lift (`settings.swing_clearance`)


def pose_from_prediction(root_pos, root_yaw, joint_rot6, joint_pos, previous, smoothing: float, dt: float,
                         fit_rotations: bool, plan: SkeletonPlan) -> Pose:
    """World pose from the network's root-frame rotations [B, J, 6] and positions [B, J, 3] (first
    blended by `smoothing` with the previous pose extrapolated; `previous` = (joint_pos, joint_vel,
    pose_root_pos, pose_root_yaw, warp) of the last tick): joints above the anchor are unturned, the
    anchor sits where the positions put it, the others hang from it by their bones (turned to the
    predicted positions when `fit_rotations`)."""
    batch, joints = root_pos.shape[0], plan.num_joints
    rotations, positions, fed_back = np.empty((batch, joints, 3, 3)), np.empty((batch, joints, 3)), np.empty((batch, joints, 3))
    previous_pos, previous_vel, previous_root, previous_yaw, warp = previous
    _pose_kernel(root_pos, root_yaw, np.ascontiguousarray(joint_rot6), np.ascontiguousarray(joint_pos), previous_pos,
                 previous_vel, previous_root, previous_yaw, warp, float(smoothing), float(dt), bool(fit_rotations),
                 plan.parents, plan.offsets, plan.up_path, plan.down_order, plan.above_anchor, plan.fit_single,
                 plan.fit_multi, plan.fit_children, fed_back, rotations, positions)
    return Pose(positions, rotations, fed_back)


def place_feet(pose: Pose, root_pos, root_yaw, contacts, locks: ik.FootLocks, settings, floor_heights, dt: float,
               plan: SkeletonPlan, settling=None, settle_state: settle.SettleState | None = None, shown_before=None,
               rest_shift=None, stance=None, swing_lift=None, heel_off=None) -> PlacedFeet:
    """Pin planted feet (`ik.update_lock`), or, for the characters `settling` [B] bool, play the
    settling steps (`settle.settle_character`: stance [4, 3] placed under the hips moved by
    `rest_shift` [B, 2], the remaining root travel; `shown_before` [B, J, 3]: the pose shown last
    tick); keep contact joints at or above their floor heights [4] (when `settings.floor_clamp`), and
    turn the legs to reach (`ik.solve_leg`, no ankle farther from its hip than LEG_REACH of the leg)
    when `settings.ik_enabled`; lift free swinging feet (fast from where `shown_before` has them)
    `settings.swing_clearance` above the floor (`swing_lift` [B, 2]: each foot's lift last tick); `pose`
    is solved in place."""
    batch = root_pos.shape[0]
    slots = len(plan.contact_joints)
    out_target, out_weight, out_offset = np.empty((batch, slots, 3)), np.empty((batch, slots)), np.empty((batch, slots, 3))
    out_active, out_rot, extent = np.empty((batch, slots), dtype=bool), np.empty((batch, plan.num_joints, 4)), np.empty(batch)
    out_stepping, out_lift = np.empty((batch, slots), dtype=bool), np.empty((batch, slots // 2))
    stepping = np.zeros((batch, slots), dtype=bool) if locks.stepping is None else locks.stepping
    out_foot, out_progress, out_steps = np.empty(batch, dtype=np.int64), np.empty(batch), np.empty(batch, dtype=np.int64)
    has_floor = floor_heights is not None
    floor = _NO_FLOOR if floor_heights is None else floor_heights
    settle_state = settle.idle_state(batch) if settle_state is None else settle_state
    if settling is None or stance is None:
        settling, stance = np.zeros(batch, dtype=bool), _NO_STANCE
    start = settle_state.start.copy()
    _feet_kernel(pose.positions, pose.rotations, root_pos, root_yaw, np.ascontiguousarray(contacts),
                 locks.target, locks.weight, locks.active, locks.offset, stepping,
                 bool(settings.foot_locking), float(settings.contact_threshold),
                 float(settings.lock_release_time), float(settings.lock_release_distance),
                 float(settings.lock_start_height), float(settings.floor_snap_height),
                 ik.fade_keep(FLOOR_SNAP_HALFLIFE, float(dt)),
                 float(settings.settle_step_height) if settings.catch_up_steps else -1.0,
                 float(settings.swing_clearance) if settings.ik_enabled else 0.0,
                 np.zeros((batch, slots // 2)) if swing_lift is None else np.ascontiguousarray(swing_lift, np.float64),
                 out_lift, np.ones(batch, bool) if heel_off is None else np.ascontiguousarray(heel_off, np.bool_),
                 bool(settings.floor_clamp) and has_floor, has_floor, floor,
                 bool(settings.ik_enabled), LEG_REACH, settling, settle_state.active,
                 pose.positions if shown_before is None else shown_before,
                 settle_state.foot, settle_state.progress, start, settle_state.steps,
                 np.zeros((batch, 2)) if rest_shift is None else rest_shift, stance,
                 float(settings.settle_step_time), float(settings.settle_step_height), float(dt),
                 plan.parents, plan.offsets, plan.up_path, plan.down_order, plan.contact_joints, plan.legs, plan.body,
                 plan.anchor, out_target, out_weight, out_active, out_offset, out_stepping, out_foot, out_progress,
                 out_steps, out_rot, extent)
    return PlacedFeet(pose.positions, out_rot, ik.FootLocks(out_target, out_weight, out_active, out_offset, out_stepping),
                      settle.SettleState(settling, out_foot, out_progress, start, out_steps), extent, out_lift)


# ---------------------------------------------------------------------------------------------
# Batched helpers over quaternions


def forward_kinematics_global(global_rot, anchor_pos, offsets, parents, anchor: int,
                              above_anchor_rot=None) -> tuple[np.ndarray, np.ndarray]:
    """World joint positions from GLOBAL rotations [..., J, 4] (quaternions) and the anchor's
    position [..., 3]. Joints above the anchor take `above_anchor_rot` [..., 4] (default: their given
    rotation) and hang by their offsets above it, so the pose is fully described by the root joint's
    translation plus local rotations (what a BVH writes). Returns (positions [..., J, 3], rotations)."""
    parents = np.asarray(parents, dtype=np.int64)
    rotations = np.array(global_rot, dtype=float, copy=True)
    up_path = np.array([anchor] + joints_above(parents, anchor), dtype=np.int64)
    if above_anchor_rot is not None:
        rotations[..., up_path[1:], :] = np.asarray(above_anchor_rot, dtype=float)[..., None, :]
    shape = rotations.shape[:-2]
    matrices = np.ascontiguousarray(quat_to_matrix(rotations).reshape((-1,) + rotations.shape[-2:-1] + (3, 3)))
    anchors = np.ascontiguousarray(np.broadcast_to(np.asarray(anchor_pos, dtype=float), shape + (3,)).reshape(-1, 3))
    positions = np.empty(matrices.shape[:2] + (3,))
    _batched_forward_kinematics(matrices, anchors, np.ascontiguousarray(offsets, dtype=np.float64), parents, up_path,
                                np.array([j for j in range(len(parents)) if j not in up_path], dtype=np.int64), positions)
    return positions.reshape(shape + positions.shape[-2:]), rotations


@njit
def _batched_forward_kinematics(rot, anchor_pos, offsets, parents, up_path, down_order, pos):
    for b in range(rot.shape[0]):
        _forward_kinematics(rot[b], mat3.load3(anchor_pos, b), offsets, parents, up_path, down_order, pos[b])


@njit
def _batched_fit(rot, world, offsets, fit_single, fit_multi, fit_children):
    goal, rest = np.empty((max(fit_children.shape[1], 1), 3)), np.empty((max(fit_children.shape[1], 1), 3))
    scratch = np.empty((3, 3, 3))
    for b in range(rot.shape[0]):
        _fit_rotations(rot[b], world[b], offsets, fit_single, fit_multi, fit_children, goal, rest, scratch)


def fit_rotations_to_positions(global_mat, positions, plan: SkeletonPlan) -> np.ndarray:
    """Global rotation matrices [..., J, 3, 3] turned so every bone points where the joint positions
    [..., J, 3] put its child (as the tick's pose stage does)."""
    global_mat = np.asarray(global_mat, dtype=float)
    shape = global_mat.shape[:-3]
    rot = np.array(global_mat.reshape((-1,) + global_mat.shape[-3:]), copy=True)
    world = np.ascontiguousarray(np.broadcast_to(positions, shape + global_mat.shape[-3:-2] + (3,)).reshape(rot.shape[:2] + (3,)),
                                 dtype=np.float64)
    _batched_fit(rot, world, plan.offsets, plan.fit_single, plan.fit_multi, plan.fit_children)
    return rot.reshape(global_mat.shape)


