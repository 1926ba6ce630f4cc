"""The spring release of a foot pin (`ik.update_lock` with `pin_release_time` > 0): inertialization.

When a pin's contact ends, the shown joint's offset from the network's joint decays as a critically
damped spring started with the velocity that keeps the joint where its pin held it (at rest), so it
leaves the pin with no jump in its velocity; the smoothstep fade it replaces set the joint moving at
the network joint's speed in the release tick (an acceleration spike). Its horizontal part can be held
back while the shown joint is on the floor (`release_lift`), where moving it counts as a slide.
"""
from __future__ import annotations

from pfnn_core.math import mat3
from pfnn_core.math.mat3 import njit
from pfnn_core.math.springs import decay_offset

RELEASE_DONE = 2e-4  # m: a released pin's spring offset (and its motion per tick) below this has rejoined the network's joint
RELEASE_FLOOR_SHARE = 0.25  # share of the spring release's horizontal rate while the shown joint is on the floor


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
