"""Control measures as pure functions over arrays: idle drift, responsiveness (speed and heading),
turn overshoot, steady-state errors, path following, jerk, root paths and their correlation. The body's
measures (skating against the capture's floor, realism, pops, ...) are `measures.py`'s; every formula is
in docs/EVALUATION.md.

Units are SI throughout: metres, seconds, radians, Y up, ground plane X/Z. Headings and yaws share one
convention: heading 0 points along +Z and heading pi/2 along +X, i.e. `heading = atan2(x, z)`, which is
the direction of +Z rotated by the yaw about +Y. Arrays may carry leading batch dimensions; the time
axis is the one named in each signature. A "step" is a pair of consecutive frames (t, t + 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pfnn_core.math.quat import wrap_angle


def heading_of(vector_xz):
    """Heading (rad) of ground-plane vectors [..., 2] given as (x, z): atan2(x, z)."""
    vector_xz = np.asarray(vector_xz, dtype=np.float64)
    return np.arctan2(vector_xz[..., 0], vector_xz[..., 1])


def velocity_from_positions(positions, dt, axis=-2):
    """Velocity by central differences (one-sided at the ends) along the time axis, same length."""
    return np.gradient(np.asarray(positions, dtype=np.float64), dt, axis=axis)


def integrate_path(velocity_xz, dt, start_xz=None):
    """Path [..., T, 2] integrated from velocities [..., T, 2] (forward Euler).

    Sample 0 is `start_xz` (default the origin); sample t is start + dt * sum_{s < t} v_s, so the
    velocity logged at a tick moves the character between that tick and the next.
    """
    velocity_xz = np.asarray(velocity_xz, dtype=np.float64)
    steps = np.cumsum(velocity_xz[..., :-1, :] * dt, axis=-2)
    path = np.concatenate([np.zeros_like(velocity_xz[..., :1, :]), steps], axis=-2)
    if start_xz is not None:
        path = path + np.asarray(start_xz, dtype=np.float64)[..., None, :]
    return path


# ----------------------------------------------------------------------------------------------
# Feet


# ----------------------------------------------------------------------------------------------
# Root: drift, responsiveness, following


@dataclass(frozen=True)
class IdleDrift:
    """Root drift over a window with zero command.

    displacement: [...] distance (m) between the first and last root positions.
    excursion: [...] largest distance (m) of any root position from the first one.
    yaw_change: [...] |net yaw change| (rad), yaw unwrapped.
    yaw_excursion: [...] largest |yaw - first yaw| (rad), yaw unwrapped.
    """

    displacement: np.ndarray
    excursion: np.ndarray
    yaw_change: np.ndarray
    yaw_excursion: np.ndarray


def idle_drift(root_xz, root_yaw):
    """Drift of the root over the window given: root_xz [..., T, 2] (m), root_yaw [..., T] (rad)."""
    root_xz = np.asarray(root_xz, dtype=np.float64)
    yaw = np.unwrap(np.asarray(root_yaw, dtype=np.float64), axis=-1)
    offset = np.linalg.norm(root_xz - root_xz[..., :1, :], axis=-1)
    turned = np.abs(yaw - yaw[..., :1])
    return IdleDrift(displacement=offset[..., -1], excursion=offset.max(axis=-1),
                     yaw_change=turned[..., -1], yaw_excursion=turned.max(axis=-1))


def _value_at(t, values, time):
    return float(np.interp(time, t, values))


def _first_crossing(t, progress, t_change, level):
    """Seconds after t_change at which progress first reaches level (linear between samples), inf if never."""
    start = max(int(np.searchsorted(t, t_change, side="right")) - 1, 0)
    t_window, p_window = t[start:], progress[start:]
    reached = np.nonzero(p_window >= level)[0]
    if reached.size == 0:
        return np.inf
    i = int(reached[0])
    if i == 0:
        return 0.0
    t0, t1, p0, p1 = t_window[i - 1], t_window[i], p_window[i - 1], p_window[i]
    crossing = t0 + (level - p0) / (p1 - p0) * (t1 - t0)
    return max(float(crossing - t_change), 0.0)


def response_time(t, speed, target_speed, t_change, fraction=0.9, start_speed=None):
    """Seconds from a command change at t_change until the speed covers `fraction` of the change.

    t [T] (s, increasing), speed [T] (m/s). The change runs from `start_speed` (default the speed at
    t_change) to `target_speed`; from standing this is "time to 90% of the commanded speed", and a
    slow-down (run -> walk) counts when the speed has come down 90% of the way. Linear interpolation
    between samples; inf when never reached; 0 when there is nothing to change.
    """
    t = np.asarray(t, dtype=np.float64)
    speed = np.asarray(speed, dtype=np.float64)
    v0 = _value_at(t, speed, t_change) if start_speed is None else float(start_speed)
    change = float(target_speed) - v0
    if change == 0.0:
        return 0.0
    return _first_crossing(t, (speed - v0) / change, t_change, fraction)


def _heading_progress(t, heading, target_heading, t_change, start_heading=None):
    """Unwrapped heading relative to the start heading, and the (wrapped) commanded change."""
    unwrapped = np.unwrap(np.asarray(heading, dtype=np.float64))
    h_change = _value_at(t, unwrapped, t_change)
    # the start heading given may be wrapped differently from the unwrapped series: bring it next to it.
    h0 = h_change if start_heading is None else h_change + float(wrap_angle(float(start_heading) - h_change))
    change = float(wrap_angle(float(target_heading) - h0))
    return unwrapped - h0, change


def heading_response_time(t, heading, target_heading, t_change, fraction=0.9, start_heading=None):
    """Seconds from t_change until the heading has turned `fraction` of the way to target_heading.

    heading [T] (rad, e.g. `heading_of(root velocity)` or the root yaw); the commanded change is the
    shortest turn from `start_heading` (default the heading at t_change) to the target. Inf when
    never reached.
    """
    t = np.asarray(t, dtype=np.float64)
    turned, change = _heading_progress(t, heading, target_heading, t_change, start_heading)
    if change == 0.0:
        return 0.0
    return _first_crossing(t, turned / change, t_change, fraction)


def turn_overshoot(t, heading, target_heading, t_change, start_heading=None):
    """Largest turn (rad, >= 0) past the target heading after a commanded turn at t_change.

    0 for a turn that approaches the target from one side; a full extra loop shows as > pi.
    `start_heading` as in `heading_response_time`.
    """
    t = np.asarray(t, dtype=np.float64)
    turned, change = _heading_progress(t, heading, target_heading, t_change, start_heading)
    after = t >= t_change
    if change == 0.0 or not after.any():
        return 0.0
    beyond = np.sign(change) * (turned[after] - change)
    return max(float(beyond.max()), 0.0)


@dataclass(frozen=True)
class SteadyStateErrors:
    """speed_error: |mean speed / commanded speed - 1| (fraction); heading_error: rad, >= 0."""

    speed_error: np.ndarray
    heading_error: np.ndarray


def steady_state_errors(velocity_xz, command_xz):
    """Errors over the steady part of a segment (the caller passes only those frames).

    velocity_xz [..., T, 2]: root velocity (m/s); command_xz [..., T, 2] or [..., 2]: commanded
    velocity. Speed error compares the mean speed |v| with the mean commanded speed; heading error is
    the angle between the mean velocity vector (which averages out the sway of a gait cycle) and the
    mean command. Needs a nonzero command.
    """
    velocity_xz = np.asarray(velocity_xz, dtype=np.float64)
    command_xz = np.asarray(command_xz, dtype=np.float64)
    if command_xz.ndim < velocity_xz.ndim:
        command_xz = np.broadcast_to(command_xz[..., None, :], velocity_xz.shape)
    commanded_speed = np.linalg.norm(command_xz, axis=-1).mean(axis=-1)
    speed = np.linalg.norm(velocity_xz, axis=-1).mean(axis=-1)
    heading_error = np.abs(wrap_angle(heading_of(velocity_xz.mean(axis=-2))
                                      - heading_of(command_xz.mean(axis=-2))))
    return SteadyStateErrors(speed_error=np.abs(speed / commanded_speed - 1.0), heading_error=heading_error)


def circular_mean(angles, axis=-1):
    """Mean direction (rad) of angles along an axis."""
    angles = np.asarray(angles, dtype=np.float64)
    return np.arctan2(np.sin(angles).mean(axis=axis), np.cos(angles).mean(axis=axis))


def facing_error(root_yaw, facing_xz):
    """|circular mean of (yaw - facing heading)| (rad) over [..., T] yaws against a facing [..., 2]."""
    difference = np.asarray(root_yaw, dtype=np.float64) - heading_of(facing_xz)[..., None]
    return np.abs(circular_mean(difference, axis=-1))


def _distance_to_polyline(points, polyline):
    """Distance [P] from points [P, 2] to the polyline [S, 2] (nearest point on any segment)."""
    if len(polyline) == 1:
        return np.linalg.norm(points - polyline[0], axis=-1)
    a, b = polyline[:-1], polyline[1:]
    ab = b - a
    length2 = np.maximum((ab * ab).sum(axis=-1), 1e-18)
    best = np.empty(len(points))
    for lo in range(0, len(points), 256):
        p = points[lo:lo + 256, None, :]
        u = np.clip(((p - a) * ab).sum(axis=-1) / length2, 0.0, 1.0)
        nearest = a + u[..., None] * ab
        best[lo:lo + 256] = np.linalg.norm(p - nearest, axis=-1).min(axis=-1)
    return best


@dataclass(frozen=True)
class PathError:
    """mean / max distance (m) of the root path from the commanded path."""

    mean: float
    max: float


def path_following_error(command_path, root_path):
    """Distance of each root sample [T, 2] from the commanded path [S, 2] (nearest point on it).

    The commanded path is the one `integrate_path` gives from the commanded velocities, started at the
    root's start. Measured to the nearest point of the path rather than to the same instant, so a
    constant lag along a straight line costs nothing while drifting sideways and cutting corners do.
    """
    command_path = np.asarray(command_path, dtype=np.float64)
    root_path = np.asarray(root_path, dtype=np.float64)
    distance = _distance_to_polyline(root_path, command_path)
    return PathError(mean=float(distance.mean()), max=float(distance.max()))


# ----------------------------------------------------------------------------------------------
# Pose and phase


def mean_jerk(joint_positions, dt):
    """Mean |third time derivative| (m/s^3) of joint positions [..., T, J, 3] over steps and joints.

    Third finite differences divided by dt^3; the value grows as dt shrinks for noisy motion, so compare
    only motions sampled at the same rate. Needs T >= 4.
    """
    joint_positions = np.asarray(joint_positions, dtype=np.float64)
    jerk = np.diff(joint_positions, n=3, axis=-3) / dt ** 3
    return np.linalg.norm(jerk, axis=-1).mean(axis=(-2, -1))


def integrate_root_motion(local_velocity_xz, yaw_rate, dt, start_yaw=0.0):
    """World root path [..., T + 1, 2] and yaw [..., T + 1] from per-step root motion.

    local_velocity_xz [..., T, 2]: step t's root velocity (m/s) in the root frame at its start (as the
    network predicts it); yaw_rate [..., T] (rad/s). Step t moves by its velocity rotated by the yaw
    at its start, then turns: p_{t+1} = p_t + R(yaw_t) v_t dt, yaw_{t+1} = yaw_t + rate_t dt.
    Starts at the origin with `start_yaw`.
    """
    local_velocity_xz = np.asarray(local_velocity_xz, dtype=np.float64)
    yaw_rate = np.asarray(yaw_rate, dtype=np.float64)
    yaw = start_yaw + np.concatenate([np.zeros_like(yaw_rate[..., :1]), np.cumsum(yaw_rate * dt, axis=-1)], axis=-1)
    c, s = np.cos(yaw[..., :-1]), np.sin(yaw[..., :-1])
    x, z = local_velocity_xz[..., 0], local_velocity_xz[..., 1]
    world_steps = np.stack([c * x + s * z, -s * x + c * z], axis=-1) * dt
    path = np.concatenate([np.zeros_like(world_steps[..., :1, :]), np.cumsum(world_steps, axis=-2)], axis=-2)
    return path, yaw


def phase_consistency(predicted_root_xz, mocap_root_xz):
    """Correlation [...] of two root paths [..., T, 2]: 1 when one is an offset and scaled copy.

    Pearson correlation taken jointly over both ground axes: each path is centred on its own mean per
    axis, then r = sum(a . b) / sqrt(sum |a|^2 * sum |b|^2). The evaluation asks for > 0.9 between the root
    path integrated from a model's predicted velocities and the mocap's, on held-out clips (weak: a
    straight line scores 0.998).
    """
    a = np.asarray(predicted_root_xz, dtype=np.float64)
    b = np.asarray(mocap_root_xz, dtype=np.float64)
    a = a - a.mean(axis=-2, keepdims=True)
    b = b - b.mean(axis=-2, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (a * b).sum(axis=(-2, -1)) / np.sqrt((a * a).sum(axis=(-2, -1)) * (b * b).sum(axis=(-2, -1)))
