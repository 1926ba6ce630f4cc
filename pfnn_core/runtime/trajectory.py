"""Springs and trajectory: the command's critically damped springs, the future trajectory blended with
the network's own prediction, and the history of past root samples.

Owns the spring updates [MM] (halflife in seconds, dt explicit; written once per component as compiled
functions, `spring_*_update` run them over broadcast arrays), `trajectory_blend_weights` [PFNN], and
the tick's first stage, `plan_trajectory`: command -> springs -> the trajectory the network is
conditioned on (a compiled kernel over the batch).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pfnn_core.features.contract import gait_from_speed
from pfnn_core.math import mat3
from pfnn_core.math.mat3 import njit, wrap_angle
from pfnn_core.math.quat import stack_last
from pfnn_core.runtime.root_motion import speed_warp

# u solving exp(-u) (1 + u) = 1/2: with decay rate u / halflife a critically damped spring starting
# at rest closes exactly half of a step's gap after one halflife.
HALFLIFE_TO_RATE = 1.6783469900166612
FACING_MIN_SPEED = 1e-3  # m/s; below this a command has no direction to face


@njit
def spring_rate(halflife):
    return HALFLIFE_TO_RATE / max(halflife, 1e-6)


@njit
def spring_velocity_step(position, velocity, acceleration, goal_velocity, halflife, dt):
    """Holden's `spring_character_update` for one component: the velocity approaches `goal_velocity`
    critically damped; returns (position, velocity, acceleration) after `dt`."""
    rate = spring_rate(halflife)
    j0 = velocity - goal_velocity
    j1 = acceleration + j0 * rate
    decay = math.exp(-rate * dt)
    position = (decay * ((-j1) / (rate * rate) + (-j0 - j1 * dt) / rate)
                + j1 / (rate * rate) + j0 / rate + goal_velocity * dt + position)
    return position, decay * (j0 + j1 * dt) + goal_velocity, decay * (acceleration - j1 * rate * dt)


@njit
def spring_angle_step(angle, angular_velocity, goal_angle, halflife, dt):
    """A yaw angle approaching `goal_angle` (the short way round), critically damped, goal velocity 0;
    returns (angle, angular_velocity) after `dt`. The angle is not wrapped (predictions stay smooth)."""
    rate = spring_rate(halflife)
    j0 = wrap_angle(angle - goal_angle)
    j1 = angular_velocity + j0 * rate
    decay = math.exp(-rate * dt)
    return angle - j0 + decay * (j0 + j1 * dt), decay * (angular_velocity - j1 * rate * dt)


@njit
def _velocity_springs(position, velocity, acceleration, goal, halflife, dt, out):
    for i in range(position.shape[0]):
        out[0, i], out[1, i], out[2, i] = spring_velocity_step(position[i], velocity[i], acceleration[i], goal[i],
                                                               halflife[i], dt[i])


@njit
def _angle_springs(angle, angular_velocity, goal, halflife, dt, out):
    for i in range(angle.shape[0]):
        out[0, i], out[1, i] = spring_angle_step(angle[i], angular_velocity[i], goal[i], halflife[i], dt[i])


def _broadcast_flat(*values):
    arrays = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in values))
    return arrays[0].shape, [np.ascontiguousarray(a).reshape(-1) for a in arrays]


def spring_velocity_update(position, velocity, acceleration, goal_velocity, halflife, dt):
    """`spring_velocity_step` over broadcast arrays; returns (position, velocity, acceleration)."""
    shape, flat = _broadcast_flat(position, velocity, acceleration, goal_velocity, halflife, dt)
    out = np.empty((3, flat[0].size))
    _velocity_springs(*flat, out)
    return tuple(part.reshape(shape) for part in out)


def spring_angle_update(angle, angular_velocity, goal_angle, halflife, dt):
    """`spring_angle_step` over broadcast arrays; returns (angle, angular_velocity)."""
    shape, flat = _broadcast_flat(angle, angular_velocity, goal_angle, halflife, dt)
    out = np.empty((2, flat[0].size))
    _angle_springs(*flat, out)
    return tuple(part.reshape(shape) for part in out)


def remaining_travel(velocity, acceleration, halflife) -> np.ndarray:
    """How far [..., 2] a velocity spring (`spring_velocity_step`) still moves while it comes to rest
    (goal velocity 0): acceleration / rate^2 + 2 velocity / rate, the limit of its position."""
    rate = spring_rate(float(halflife))
    return np.asarray(acceleration, dtype=float) / (rate * rate) + 2.0 * np.asarray(velocity, dtype=float) / rate


def trajectory_blend_weights(count: int, bias) -> np.ndarray:
    """w(t) = 1 - (1 - t)^bias at t = k / count, k = 1..count: the weight of the COMMAND against the
    network's own predicted trajectory [PFNN]. `bias` [...] -> weights [..., count]."""
    t = np.arange(1, count + 1) / count
    return 1.0 - (1.0 - t) ** np.asarray(bias, dtype=float)[..., None]


def facing_from_yaw(yaw) -> np.ndarray:
    yaw = np.asarray(yaw, dtype=float)
    return stack_last(np.sin(yaw), 0.0, np.cos(yaw))


# ---------------------------------------------------------------------------------------------
# The tick's first stage: command -> springs -> trajectory


@dataclass
class SpringState:
    velocity: np.ndarray  # [B, 2] commanded velocity (x, z) after the spring, m/s
    acceleration: np.ndarray  # [B, 2]
    yaw: np.ndarray  # [B] commanded facing after the spring, rad (wrapped)
    yaw_velocity: np.ndarray  # [B] rad/s


@dataclass
class TrajectoryPlan:
    springs: SpringState  # the springs after this tick
    command_pos: np.ndarray  # [B, F, 3] world, the springs' prediction of the command
    command_dir: np.ndarray  # [B, F, 3]
    command_yaw: np.ndarray  # [B, F] rad, facing of the prediction
    future_pos: np.ndarray  # [B, F, 3] world, blended with the network's previous prediction
    future_dir: np.ndarray  # [B, F, 3]
    gait: np.ndarray  # [B, 1 + F, 3] stand/walk/run now and at the future samples (as the network sees them)
    warp: np.ndarray  # [B] speed warp of the network's view (`control.speed_warp`)
    command_speed: np.ndarray  # [B] m/s, speed of the commanded velocity after the spring


@njit
def _plan_kernel(desired, facing, strafe, spring_vel, spring_acc, spring_yaw, spring_yaw_vel, root_pos,
                 net_future_pos, net_future_dir, halflife_pos, halflife_dir, dt, future_times, w_pos, w_dir,
                 slow_walk_speed, max_warp, out_springs, out_command_pos, out_command_dir, out_command_yaw,
                 out_future_pos, out_future_dir, out_speeds, out_warp):
    for b in range(desired.shape[0]):
        dx, dz = desired[b, 0], desired[b, 1]
        if strafe[b]:
            goal_yaw = math.atan2(facing[b, 0], facing[b, 1])
        elif math.sqrt(dx * dx + dz * dz) > FACING_MIN_SPEED:
            goal_yaw = math.atan2(dx, dz)
        else:
            goal_yaw = spring_yaw[b]
        # this tick, then the future samples after it, all from the springs of the last tick
        px0, vx, ax = spring_velocity_step(0.0, spring_vel[b, 0], spring_acc[b, 0], dx, halflife_pos, dt)
        pz0, vz, az = spring_velocity_step(0.0, spring_vel[b, 1], spring_acc[b, 1], dz, halflife_pos, dt)
        yaw, yaw_velocity = spring_angle_step(spring_yaw[b], spring_yaw_vel[b], goal_yaw, halflife_dir, dt)
        out_springs[b, 0], out_springs[b, 1], out_springs[b, 2], out_springs[b, 3] = vx, vz, ax, az
        out_springs[b, 4], out_springs[b, 5] = wrap_angle(yaw), yaw_velocity
        out_speeds[b, 0] = math.sqrt(vx * vx + vz * vz)
        weights = 1 if strafe[b] else 0
        for f in range(future_times.shape[0]):
            t = dt + future_times[f]
            px, vx, _ = spring_velocity_step(0.0, spring_vel[b, 0], spring_acc[b, 0], dx, halflife_pos, t)
            pz, vz, _ = spring_velocity_step(0.0, spring_vel[b, 1], spring_acc[b, 1], dz, halflife_pos, t)
            yaw, _ = spring_angle_step(spring_yaw[b], spring_yaw_vel[b], goal_yaw, halflife_dir, t)
            command = (root_pos[b, 0] + px - px0, root_pos[b, 1], root_pos[b, 2] + pz - pz0)
            direction = (math.sin(yaw), 0.0, math.cos(yaw))
            mat3.store3(out_command_pos[b], f, command)
            mat3.store3(out_command_dir[b], f, direction)
            out_command_yaw[b, f] = yaw
            future = mat3.lerp(mat3.load3(net_future_pos[b], f), command, w_pos[weights, f])
            mat3.store3(out_future_pos[b], f, (future[0], 0.0, future[2]))
            blended = mat3.lerp(mat3.load3(net_future_dir[b], f), direction, w_dir[weights, f])
            norm = mat3.length(blended)
            mat3.store3(out_future_dir[b], f, mat3.scale(blended, 1.0 / norm) if norm > 1e-6 else direction)
            out_speeds[b, 1 + f] = math.sqrt(vx * vx + vz * vz)
        out_warp[b] = speed_warp(out_speeds[b, 0], slow_walk_speed, max_warp)


def plan_trajectory(springs: SpringState, desired, strafe_facing, strafe, root_pos, net_future_pos, net_future_dir,
                    settings, dt: float, future_times: np.ndarray, blend_weights) -> TrajectoryPlan:
    """Advance the command springs by dt, predict them over `future_times` [F] (s), and blend that
    prediction with the network's own previous one [PFNN]. `blend_weights(bias, bias_strafe)` gives
    the cached [2, F] weights (normal, strafing)."""
    batch, count = desired.shape[0], len(future_times)
    out_springs, out_speeds, out_warp = np.empty((batch, 6)), np.empty((batch, 1 + count)), np.empty(batch)
    command_pos, command_dir, future_pos, future_dir = (np.empty((batch, count, 3)) for _ in range(4))
    command_yaw = np.empty((batch, count))
    _plan_kernel(desired, strafe_facing, strafe, springs.velocity, springs.acceleration, springs.yaw,
                 springs.yaw_velocity, root_pos, net_future_pos, net_future_dir, float(settings.traj_halflife_pos),
                 float(settings.traj_halflife_dir), float(dt), future_times,
                 blend_weights(settings.bias_pos, settings.bias_pos_strafe),
                 blend_weights(settings.bias_dir, settings.bias_dir_strafe), float(settings.slow_walk_speed),
                 float(settings.max_speed_warp), out_springs, command_pos, command_dir, command_yaw, future_pos,
                 future_dir, out_speeds, out_warp)
    gait = gait_from_speed(out_warp[:, None] * out_speeds)
    return TrajectoryPlan(SpringState(out_springs[:, 0:2], out_springs[:, 2:4], out_springs[:, 4], out_springs[:, 5]),
                          command_pos, command_dir, command_yaw, future_pos, future_dir, gait, out_warp,
                          out_speeds[:, 0])


@njit
def _network_trajectory_kernel(future_pos, future_dir, root_pos, root_yaw, warp, fallback, out_pos, out_dir):
    for b in range(future_pos.shape[0]):
        yaw = mat3.yaw_matrix(root_yaw[b])
        for f in range(future_pos.shape[1]):
            point = mat3.mat_vec(yaw, (future_pos[b, f, 0] / warp[b], 0.0, future_pos[b, f, 1] / warp[b]))
            mat3.store3(out_pos[b], f, (point[0] + root_pos[b, 0], root_pos[b, 1], point[2] + root_pos[b, 2]))
            direction = mat3.mat_vec(yaw, (future_dir[b, f, 0], 0.0, future_dir[b, f, 1]))
            norm = mat3.length(direction)
            mat3.store3(out_dir[b], f, mat3.scale(direction, 1.0 / norm) if norm > 1e-6 else mat3.load3(fallback[b], f))


def network_trajectory(future_pos, future_dir, root_pos, root_yaw, warp, fallback_dir):
    """The network's predicted future (root frame (x, z) [B, F, 2], seen through the speed warp) as world
    positions and unit facings [B, F, 3] (the commanded facing where a predicted one vanishes)."""
    out_pos, out_dir = np.empty(fallback_dir.shape), np.empty(fallback_dir.shape)
    _network_trajectory_kernel(np.ascontiguousarray(future_pos), np.ascontiguousarray(future_dir), root_pos, root_yaw,
                               warp, fallback_dir, out_pos, out_dir)
    return out_pos, out_dir


@njit
def _features_kernel(past, root_pos, root_yaw, future_pos, future_dir, gait, warp, future_rows, pos_start, dir_start,
                     gait_start, x):
    samples = past.shape[1] + 1 + future_rows.shape[0]
    for b in range(root_pos.shape[0]):
        yaw = mat3.yaw_matrix(root_yaw[b])
        root = mat3.load3(root_pos, b)
        for k in range(samples):
            if k < past.shape[1]:
                point, direction = (past[b, k, 0], past[b, k, 1], past[b, k, 2]), (past[b, k, 3], past[b, k, 4], past[b, k, 5])
                g = (past[b, k, 6], past[b, k, 7], past[b, k, 8])
            else:
                g = (gait[b, 0, 0], gait[b, 0, 1], gait[b, 0, 2])
                if k == past.shape[1]:
                    point, direction = root, (yaw[2], 0.0, yaw[8])  # the root, facing its yaw
                else:
                    row = future_rows[k - past.shape[1] - 1]
                    point, direction = mat3.load3(future_pos[b], row), mat3.load3(future_dir[b], row)
                    g = (gait[b, 1 + row, 0], gait[b, 1 + row, 1], gait[b, 1 + row, 2])
            local = mat3.mat_t_vec(yaw, mat3.sub(point, root))
            facing = mat3.mat_t_vec(yaw, direction)
            x[b, pos_start + 2 * k], x[b, pos_start + 2 * k + 1] = warp[b] * local[0], warp[b] * local[2]
            x[b, dir_start + 2 * k], x[b, dir_start + 2 * k + 1] = facing[0], facing[2]
            x[b, gait_start + 3 * k], x[b, gait_start + 3 * k + 1], x[b, gait_start + 3 * k + 2] = g[0], g[1], g[2]


def trajectory_features(past, root_pos, root_yaw, plan: TrajectoryPlan, future_rows, layout, x) -> None:
    """Write the trajectory part of the network input into x [B, nx]: the past samples `past`
    [B, P, 9] (world position, facing, gait), the root now, and the planned future at `future_rows`,
    positions and facings in the current root frame (x, z), positions seen through the speed warp."""
    _features_kernel(np.ascontiguousarray(past), root_pos, root_yaw, plan.future_pos, plan.future_dir,
                     np.ascontiguousarray(plan.gait), plan.warp, future_rows, layout.slice("traj_pos").start,
                     layout.slice("traj_dir").start, layout.slice("traj_gait").start, x)
