"""Control of the root and the phase: drift correction, stand amount, slow-walk speed warp, phase advance,
and the tick's root-motion stage.

Drift correction removes the moving-average ERROR to the command (predicted - commanded root
velocity and yaw rate) over a window of ticks, never the motion itself (subtracting the mean motion
would cancel the intended motion). The errors are kept as running sums in a `history.History`, so the
mean over any window up to `DRIFT_CAPACITY` ticks is one subtraction.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from pfnn_core.math import mat3
from pfnn_core.math.easing import smoothstep
from pfnn_core.math.mat3 import njit, wrap_angle
from pfnn_core.motion.phase import stride_length_at
from pfnn_core.runtime.history import History

vectorize = numba.vectorize(["float64(float64, float64)"], cache=True)

DRIFT_CAPACITY = 600  # most drift-correction ticks remembered (the settings' maximum window)
MIN_STRIDE_LENGTH = 0.05  # m; guards the speed / stride division
START_SHAPE = 0.3  # a start leans on the command by (share of the last second stood) ** this
PRIMING_RAMP = 0.25  # s: a start's primed past fades in over this long after the stick is pushed


# ---------------------------------------------------------------------------------------------
# Drift correction


@dataclass
class DriftErrors:
    """Running sums of the (vx, vz, yaw rate) errors to the command [B, N + 1, 3] and how many were pushed."""

    sums: History
    count: int

    @classmethod
    def empty(cls, batch: int) -> "DriftErrors":
        return cls(History.filled(np.zeros((batch, 3)), DRIFT_CAPACITY + 1), 0)

    def push(self, error: np.ndarray) -> "DriftErrors":
        return DriftErrors(self.sums.append(self.sums.rows(0) + error), self.count + 1)

    def mean(self, window: int) -> np.ndarray:
        """Mean of the last `window` errors pushed (fewer at the start); zero when the window is 0."""
        n = min(int(window), self.count, DRIFT_CAPACITY)
        if n <= 0:
            return np.zeros(self.sums.buffer.shape[:1] + self.sums.buffer.shape[2:])
        return (self.sums.rows(0) - self.sums.rows(n)) / n


def correct_drift(predicted: np.ndarray, mean_error: np.ndarray) -> np.ndarray:
    """The predicted root motion minus the estimated systematic error (predicted - commanded)."""
    return predicted - mean_error


# ---------------------------------------------------------------------------------------------
# Stand amount, speed warp, phase


@vectorize
def stand_amount(command_speed, stand_speed):
    """1 when the commanded speed is zero, falling linearly to 0 at `stand_speed` (m/s); a stand
    speed of 0 turns the stand amount off (0 everywhere: root motion and phase are never scaled)."""
    if stand_speed <= 0.0:
        return 0.0
    return min(max(1.0 - command_speed / stand_speed, 0.0), 1.0)


@numba.vectorize(["float64(float64)"], cache=True)
def move_amount(stand):
    """PFNN's scale of root motion and phase advance: (1 - stand)^0.25."""
    return min(max(1.0 - stand, 0.0), 1.0) ** 0.25


@numba.vectorize(["float64(float64, float64, float64)"], cache=True)
def speed_warp(command_speed, slow_walk_speed, max_warp):
    """Factor k >= 1 by which the network's view of the ground motion is scaled up: a commanded
    speed below `slow_walk_speed` is shown to the network as that walk (trajectory offsets and gait
    times k, its root and trajectory outputs divided by k) and the phase runs at the real speed, so
    the feet plant with the network's own strides. The data has no slow walks: asked for one, the
    network blends a standing pose with a walk and shuffles with its feet always in contact, so a
    slow walk slides. k is at most `max_warp` (speeds near standing stay a stand); 1 when off."""
    if slow_walk_speed <= 0.0:
        return 1.0
    return min(max(slow_walk_speed / max(command_speed, 1e-9), 1.0), max(max_warp, 1.0))


def advance_phase_by_stride(phase, speed, stride_length, dt: float) -> np.ndarray:
    """dphase = speed / stride_length * dt (one cycle = two steps); stops at zero speed."""
    length = np.maximum(np.asarray(stride_length, dtype=float), MIN_STRIDE_LENGTH)
    return (np.asarray(phase) + np.asarray(speed, dtype=float) / length * dt) % 1.0


def advance_phase_by_speed(phase, speed, stride: dict, dt: float, stride_speed=None) -> np.ndarray:
    """`advance_phase_by_stride` with the stride of a `phase.stride_statistics` dict at `stride_speed`
    (default `speed`): the speed whose stride the network is stepping with (see `speed_warp`: a slow
    walk is the network's slowest walk played slower, strides unchanged)."""
    speed = np.asarray(speed, dtype=float)
    stride_speed = speed if stride_speed is None else np.asarray(stride_speed, dtype=float)
    return advance_phase_by_stride(phase, speed, stride_length_at(stride, stride_speed), dt)


def advance_phase_by_network(phase, dphase_per_frame, scale, dt: float, sim_fps: float) -> np.ndarray:
    """The network's own dphase (cycles per 1/sim_fps frame), rescaled to dt and by `scale`."""
    step = np.clip(np.asarray(dphase_per_frame, dtype=float), 0.0, 0.5) * dt * sim_fps
    return (np.asarray(phase) + step * scale) % 1.0


# ---------------------------------------------------------------------------------------------
# Starts


def primed_past(past, root_pos, velocity, gait_now, moving, stood, ages, amount: float) -> np.ndarray:
    """The past trajectory samples [B, P, 9] (world position, facing, gait) as the network sees them at a
    start: blended toward the past of a character that had already been moving at the commanded
    `velocity` [B, 2] (x, z; positions root_pos - velocity x age, `ages` [P] s before now) with today's
    gait `gait_now` [B, 3]. The data has no starts: shown a standing past the network keeps its feet
    down for about a second while the root leaves, and the pinned feet are dragged. The blend is
    `amount` x the share of the last second stood (`stood` [B, N], the stand label of the history)
    for characters `moving` [B] bool, faded in over PRIMING_RAMP after the stick is pushed (a jump in
    the input is a jump in the pose) and gone once the character has moved for a second."""
    stood_share = np.asarray(stood, dtype=float).mean(axis=1)
    ramp = smoothstep(0.0, PRIMING_RAMP, 1.0 - stood_share)
    weight = float(amount) * stood_share * ramp * np.asarray(moving, dtype=bool)
    if not np.any(weight > 0.0):
        return past
    primed = np.array(past, dtype=float, copy=True)
    ages = np.asarray(ages, dtype=float)[None, :, None]
    moved = np.stack([velocity[:, 0], np.zeros(len(velocity)), velocity[:, 1]], axis=-1)[:, None, :]
    w = weight[:, None, None]
    primed[..., 0:3] += w * (root_pos[:, None, :] - ages * moved - primed[..., 0:3])
    primed[..., 6:9] += w * (np.asarray(gait_now, dtype=float)[:, None, :] - primed[..., 6:9])
    return primed


def walked_past(past, gait_now) -> np.ndarray:
    """The past trajectory samples [B, P, 9] (world position, facing, gait) as the network sees them
    once a run is released: no past sample says more 'run' than today's gait `gait_now` [B, 3] (its run
    share falls with the command spring's speed, so the past follows it without a jump), the excess
    going to its walk share. With a second of running still in its past the network kept taking run
    strides, both feet off the floor, at walking speeds (tuning drive run_slowdowns: a 5.5 cm flight at
    1.3 m/s half a second after the switch; assets/models/default.md, "Both feet up after a run")."""
    gait_now = np.asarray(gait_now, dtype=float)
    excess = np.maximum(np.asarray(past, dtype=float)[..., 8] - gait_now[:, None, 2], 0.0)
    if not np.any(excess > 0.0):
        return past
    walked = np.array(past, dtype=float, copy=True)
    walked[..., 8] -= excess
    walked[..., 7] += excess
    return walked


# ---------------------------------------------------------------------------------------------
# The tick's root-motion and phase stage


@dataclass
class RootMotion:
    velocity: np.ndarray  # [B, 2] world root velocity applied this tick, m/s
    yaw_rate: np.ndarray  # [B] rad/s applied this tick
    position: np.ndarray  # [B, 3] the root for the next tick
    yaw: np.ndarray  # [B] rad, wrapped
    stand: np.ndarray  # [B] stand amount 0..1
    moving: np.ndarray  # [B] scale of root motion and phase advance
    speed: np.ndarray  # [B, 2] m/s, applied and predicted (the network's own, after the speed warp) root speeds
    drift: DriftErrors


@njit
def _motion_kernel(root_pos, root_yaw, predicted_vel_local, predicted_yaw_rate, command_velocity, command_yaw,
                   command_speed, warp, sums_now, sums_back, window, released, strafe, stood, base_from_command,
                   strafe_share, stand_speed, dt, first_future_time, out_sums, out_velocity,
                   out_yaw_rate, out_position, out_yaw, out_stand, out_moving, out_speed):
    mean, applied = np.empty(3), np.empty(3)  # scratch, reused for every character
    for b in range(root_pos.shape[0]):
        stood_share = 0.0
        for k in range(stood.shape[1]):
            stood_share += stood[b, k]
        stood_share = min(max(stood_share / max(stood.shape[1], 1), 0.0), 1.0)
        from_command = base_from_command
        speed_share = 1.0
        if strafe[b]:
            speed_share = strafe_share
        else:
            from_command += (1.0 - base_from_command) * stood_share ** START_SHAPE
        if released[b]:
            from_command = 1.0
        yaw = root_yaw[b]
        local = (predicted_vel_local[b, 0], 0.0, predicted_vel_local[b, 1])
        world = mat3.scale(mat3.mat_vec(mat3.yaw_matrix(yaw), local), 1.0 / warp[b])
        predicted = (world[0], world[2], predicted_yaw_rate[b])
        commanded = (command_velocity[b, 0], command_velocity[b, 1], wrap_angle(command_yaw[b] - yaw) / first_future_time)
        stand = stand_amount(command_speed[b], stand_speed)
        moving = move_amount(stand)
        for k in range(3):
            out_sums[b, k] = sums_now[b, k] + (predicted[k] - commanded[k])
            mean[k] = (out_sums[b, k] - sums_back[b, k]) / window if window > 0 else 0.0
        speed = math.sqrt(commanded[0] * commanded[0] + commanded[1] * commanded[1])
        if speed > 1e-6:  # of the error along the commanded direction (speed) only `speed_share` is removed
            along = (mean[0] * commanded[0] + mean[1] * commanded[1]) / speed
            kept = (1.0 - speed_share) * along / speed
            mean[0], mean[1] = mean[0] - kept * commanded[0], mean[1] - kept * commanded[1]
        for k in range(3):
            corrected = predicted[k] - mean[k]
            applied[k] = (corrected + from_command * (commanded[k] - corrected)) * moving
        out_velocity[b, 0], out_velocity[b, 1], out_yaw_rate[b] = applied[0], applied[1], applied[2]
        out_position[b, 0] = root_pos[b, 0] + applied[0] * dt
        out_position[b, 1] = root_pos[b, 1]
        out_position[b, 2] = root_pos[b, 2] + applied[1] * dt
        out_yaw[b] = wrap_angle(yaw + applied[2] * dt)
        out_stand[b], out_moving[b] = stand, moving
        out_speed[b, 0] = math.sqrt(applied[0] * applied[0] + applied[1] * applied[1])
        out_speed[b, 1] = math.sqrt(predicted[0] * predicted[0] + predicted[1] * predicted[1])


def start_lean(stood, strafe, settings, shape: float = START_SHAPE) -> np.ndarray:
    """[B] how far a start leans the root on the command, 0..1: (share of the last second stood, `stood`
    [B, N] stand labels) ** `shape`, for characters not strafing with `start_from_command` on (with
    START_SHAPE, the share `_motion_kernel` adds to `root_motion_from_command`)."""
    stood = np.asarray(stood, np.float64)
    if not settings.start_from_command or stood.shape[1] == 0:
        return np.zeros(len(stood))
    share = np.clip(stood.mean(axis=1), 0.0, 1.0) ** shape
    return np.where(np.asarray(strafe, bool), 0.0, share)


def root_motion(root_pos, root_yaw, predicted_vel_local, predicted_yaw_rate, command_velocity, command_yaw,
                command_speed, warp, drift: DriftErrors, settings, dt: float, first_future_time: float,
                released=None, strafe=None, stood=None) -> RootMotion:
    """The root's motion for the next tick: the network's predicted velocity (root frame [B, 2], divided
    by the speed warp) and yaw rate [B], minus the moving-average error to the command (drift
    correction; while strafing (`strafe` [B] bool) of the error along the commanded direction only
    `strafe_speed_correction`: side-steps and backward walks come from seconds of mocap per style, the
    network's legs step them at its own speed, and a root pushed faster or slower than its legs slides
    the planted feet), blended toward the command by `root_motion_from_command`, scaled by the stand
    amount. Starting (not strafing), the blend leans toward the command by how much of the last second
    the character stood (`stood` [B, N]: the stand label of its last N trajectory samples): the data
    has no starts, and the network alone takes about a second to reach a walk.
    Characters `released` [B] bool (the stick let go and settling steps taken: `runtime.settling_stage`)
    follow the command alone:
    the data has no stops, and the command spring's resting place is where the settling steps go."""
    batch = root_pos.shape[0]
    released = np.zeros(batch, dtype=bool) if released is None else released
    strafe = np.zeros(batch, dtype=bool) if strafe is None else strafe
    stood = np.zeros((batch, 0)) if stood is None or not settings.start_from_command else stood
    window = min(int(settings.drift_window), drift.count + 1, DRIFT_CAPACITY)
    out_sums, velocity, position, speed = np.empty((batch, 3)), np.empty((batch, 2)), np.empty((batch, 3)), np.empty((batch, 2))
    yaw_rate, yaw, stand, moving = np.empty(batch), np.empty(batch), np.empty(batch), np.empty(batch)
    _motion_kernel(root_pos, root_yaw, np.ascontiguousarray(predicted_vel_local), np.ascontiguousarray(predicted_yaw_rate),
                   command_velocity, command_yaw, command_speed, warp, drift.sums.rows(0),
                   drift.sums.rows(max(window - 1, 0)), window, released, strafe, stood,
                   float(settings.root_motion_from_command), float(settings.strafe_speed_correction),
                   float(settings.stand_speed), float(dt), float(first_future_time), out_sums, velocity, yaw_rate,
                   position, yaw, stand, moving, speed)
    return RootMotion(velocity, yaw_rate, position, yaw, stand, moving, speed,
                      DriftErrors(drift.sums.append(out_sums), drift.count + 1))


def advance_phase(phase, motion: RootMotion, network_dphase, warp, settings, dt: float, stride_length,
                  sim_fps: float) -> np.ndarray:
    """Speed-based phase (stops when still) or the network's own dphase, per `settings.phase_mode`.
    `stride_length(speed) -> [B]`: the characters' stride lengths at the speeds the network steps at
    (the warped speed: a slow walk keeps the strides of the walk it is shown)."""
    if settings.phase_mode == "network":
        return advance_phase_by_network(phase, network_dphase, 0.9 * motion.moving + 0.1, dt, sim_fps)
    root_speed = motion.speed[:, 0]
    return advance_phase_by_stride(phase, root_speed, stride_length(warp * root_speed), dt)
