"""The spring release of a foot pin (`ik.update_lock` with `pin_release_time` > 0): inertialization.

When a pin's contact ends, the shown joint's offset from the network's joint decays as a critically
damped spring started with the velocity that keeps the joint where its pin held it (at rest), so it
leaves the pin with no jump in its velocity; the smoothstep fade it replaces set the joint moving at
the network joint's speed in the release tick (an acceleration spike). Its horizontal part can be held
back while the shown joint is on the floor (`release_lift`), where moving it counts as a slide.

Also the smooth catch-up step (`catch_up_path`, `smooth_catch_up`): a pinned foot the body has left
behind steps from its pin, at rest, to its landing ahead of the network's foot along a minimum-jerk
path, lifted by a bump that starts and ends level.
"""
from __future__ import annotations

import math

from pfnn_core.math import mat3
from pfnn_core.math.mat3 import njit
from pfnn_core.math.springs import decay_offset

RELEASE_DONE = 2e-4  # m: a released pin's spring offset (and its motion per tick) below this has rejoined the network's joint
RELEASE_FLOOR_SHARE = 0.25  # share of the spring release's horizontal rate while the shown joint is on the floor


@njit
def minimum_jerk(t):
    """10 t^3 - 15 t^4 + 6 t^5 of t clipped to [0, 1]: 0 to 1 with no velocity or acceleration at either end."""
    t = min(max(t, 0.0), 1.0)
    return t * t * t * (10.0 + t * (-15.0 + 6.0 * t))


@njit
def catch_up_path(start, landing, weight, height):
    """Where a foot joint in a smooth catch-up step is shown: from `start` (its pin, in the world) toward
    `landing` (moving with the network's foot) by the minimum-jerk ease of the step's progress
    1 - `weight`, lifted by height * sin^2(pi * progress). The step `ik.step_shown` plays moves the pin
    with the network's foot from the first tick (the joint jumps from rest to that speed) and lifts it
    by height * sin(pi * progress) (it leaves and meets the floor at pi * height / duration, 0.4-0.8 m/s):
    two one-tick jumps in its velocity, each a burst of acceleration noise. Here the joint leaves its
    pin at rest, meets the landing at the network foot's own velocity, and rises and lands level; the
    ends are the same (the pin at progress 0, the landing at 1)."""
    progress = 1.0 - min(max(weight, 0.0), 1.0)
    ease = minimum_jerk(progress)
    lift = height * math.sin(math.pi * progress) ** 2
    shown = mat3.lerp(start, landing, ease)
    return (shown[0], shown[1] + lift, shown[2])


def release_rate(pin_release_time: float) -> float:
    """The spring release's rate (1/s): 1 / `pin_release_time`; 0 (the smoothstep fade) when the time is 0."""
    return 1.0 / pin_release_time if pin_release_time > 0.0 else 0.0


@njit
def release_spring(offset, velocity, flat_rate, up_rate, dt):
    """A released pin's offset from the network's joint (and its velocity) one tick on, each axis a
    critically damped spring (`springs.decay_offset`; the horizontal axes at `flat_rate`, the vertical at
    `up_rate`): inertialization. Started with the velocity that keeps the shown joint's own (a held
    pin's: at rest), the joint leaves its pin with no jump in its velocity."""
    x, vx = decay_offset(offset[0], velocity[0], flat_rate, dt)
    y, vy = decay_offset(offset[1], velocity[1], up_rate, dt)
    z, vz = decay_offset(offset[2], velocity[2], flat_rate, dt)
    return (x, y, z), (vx, vy, vz)


@njit
def spring_release(target, weight, active, offset, foot, velocity, dt, floor_level, release_rate, release_lift):
    """`ik.update_lock`'s released joint with the spring release: (shown, weight, offset, velocity). At
    the release the offset from the network's joint and its velocity (the pin's own, at rest, minus the
    network joint's, from last tick's offset: the joint was then `target` - `offset`); then one tick of
    `release_spring` a tick; done (weight 0, no offset) once the offset and its motion per tick are both
    under RELEASE_DONE."""
    rest = (0.0, 0.0, 0.0)
    if active:  # the contact ended: the shown joint stays on its pin this tick, at rest
        released = mat3.sub(target, foot)
        velocity = mat3.scale(mat3.sub(released, offset), 1.0 / dt)
        return target, 1.0, released, velocity
    if weight <= 0.0:
        return foot, 0.0, rest, rest
    flat_rate = release_rate
    if release_lift > 0.0 and floor_level == floor_level:
        lift = min(max((foot[1] + offset[1] - floor_level) / release_lift, 0.0), 1.0)  # the shown joint's height
        flat_rate = release_rate * (RELEASE_FLOOR_SHARE + (1.0 - RELEASE_FLOOR_SHARE) * lift)
    offset, velocity = release_spring(offset, velocity, flat_rate, release_rate, dt)
    if mat3.length(offset) < RELEASE_DONE and mat3.length(velocity) * dt < RELEASE_DONE:
        return foot, 0.0, rest, rest
    shown = mat3.add(foot, offset)
    return shown, 1.0, offset, velocity
