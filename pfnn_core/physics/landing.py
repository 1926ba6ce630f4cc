"""The landing hold: a planted simulated sole is held where IT landed, not pulled to the kinematic pin.

The runtime pins a planted kinematic foot to the floor (its foot locks); the simulated foot, tracking
it through the joint servos, lands a centimetre or so off that pin (behind it, lower, still moving),
and the servos then drag it across the floor to the pin while it takes the body's weight: on the
tuning drives three quarters of the physics' extra skating came from the first ticks of a stance.
With the hold, when a kinematic foot becomes planted the horizontal offset of the simulated foot from
it is kept (`LandingHold.update`), and every tick of that stance the leg's servo targets are turned
by a two-bone IK (`leg_ik`) so the kinematic ankle, moved by the offset, is where the targets put it:
the servos then hold the sole where it came down. When the foot lifts the offset goes to zero like a
critically damped spring (`RELEASE_RATE`), over the swing, so the next landing starts from the
kinematic pose again. `PhysicsSettings.landing_hold` is the share of the offset kept (0 = off).
"""
from __future__ import annotations

import numpy as np

from pfnn_core.math.quat import cross3, quat_between, quat_from_angle_axis, quat_mul, quat_mul_vec, vector_length
from pfnn_core.math.springs import decay_offset
from pfnn_core.runtime.ik import leg_chains

RELEASE_RATE = 25.0  # 1/s: a lifted foot's offset decays as a critically damped spring (95% gone in 0.19 s)
GONE = 1e-5  # m: a released offset this small (and slower than this per tick) is set to zero
MAX_OFFSET = 0.05  # m: a landing further off than this (a push, a stumble) is held only this far
_STRAIGHT = 1e-6  # a leg whose thigh and shin are this close to parallel (sine) is left as it is


def leg_ik(hip, knee, ankle, hip_rot, knee_rot, target):
    """(hip_rot, knee_rot): the legs' global rotations [..., 4] turned so the ankle reaches `target`
    [..., 3] (points [..., 3], world). The knee bends in the leg's own plane; bone lengths are kept; a
    target out of reach is taken along the hip->target line to the reach. No soft reach (the runtime's
    pose has had it): an unchanged target gives back the same rotations."""
    thigh, shin = knee - hip, ankle - knee
    thigh_length, shin_length = vector_length(thigh), vector_length(shin)
    normal = cross3(thigh, shin)
    sine = vector_length(normal) / np.maximum(thigh_length * shin_length, 1e-12)
    reach = np.clip(vector_length(target - hip), np.abs(thigh_length - shin_length) * (1 + 1e-4) + 1e-6,
                    (thigh_length + shin_length) * (1 - 1e-4))
    # the knee's turn in its plane: the angle between thigh and shin from the present one to the one of the reach
    now = np.arccos(np.clip(np.sum(thigh * shin, axis=-1) / np.maximum(thigh_length * shin_length, 1e-12), -1, 1))
    goal = np.pi - np.arccos(np.clip((thigh_length ** 2 + shin_length ** 2 - reach ** 2) /
                                     np.maximum(2 * thigh_length * shin_length, 1e-12), -1, 1))
    bendable = sine > _STRAIGHT
    knee_turn = quat_from_angle_axis(np.where(bendable, goal - now, 0.0),
                                     np.where(bendable[..., None], normal, np.array([1.0, 0.0, 0.0])))
    bent = knee + quat_mul_vec(knee_turn, shin)
    swing = quat_between(bent - hip, target - hip)
    return quat_mul(swing, hip_rot), quat_mul(swing, quat_mul(knee_turn, knee_rot))


class LandingHold:
    """Per character and foot: the held landing offset (world, horizontal), its release velocity and
    whether the foot was planted last tick. `slots` are each foot's contact-joint slots in
    `plan.contact_joints` (two per foot: ankle, toe), `legs` its (hip, knee, ankle) joints."""

    def __init__(self, names, parents, contact_joints, batch: int):
        contact = list(contact_joints)
        self.legs = [(hip, knee, ankle) for hip, knee, ankle, _toe in leg_chains(names, parents)]
        ankles = [leg[2] for leg in self.legs]
        # the contact slots of each foot (planted() treats contact slots 2f and 2f+1 as foot f)
        self.slots = np.array([[2 * f, 2 * f + 1] for f in range(len(contact) // 2)])
        if [contact[s[0]] for s in self.slots] != ankles:
            raise ValueError("the contact joints are not (ankle, toe) of the left and the right leg")
        self.hips, self.knees, self.ankles = (np.array([leg[i] for leg in self.legs]) for i in range(3))
        self.offset = np.zeros((batch, len(self.legs), 3))
        self.velocity = np.zeros((batch, len(self.legs), 3))
        self.held = np.zeros((batch, len(self.legs)), dtype=bool)

    def reset(self, index) -> None:
        self.offset[index] = 0.0
        self.velocity[index] = 0.0
        self.held[index] = False

    def state(self) -> tuple:
        return self.offset.copy(), self.velocity.copy(), self.held.copy()

    def set_state(self, state) -> None:
        self.offset[:], self.velocity[:], self.held[:] = state

    def update(self, planted, simulated_feet, kinematic_feet, share: float, dt: float) -> None:
        """One tick: planted [B, F] (the kinematic feet), the simulated and kinematic contact joints
        [B, 2F, 3] (world). A foot planted this tick and not the last takes the offset of its simulated
        joints from the kinematic ones (horizontal, mean of the two, times `share`); a planted foot keeps
        it; a lifted foot's offset decays."""
        landed = planted & ~self.held
        if landed.any():
            gap = (simulated_feet - kinematic_feet)[:, self.slots].mean(axis=2)  # [B, F, 3]
            gap[..., 1] = 0.0
            size = vector_length(gap, keepdims=True)
            gap *= share * np.minimum(1.0, MAX_OFFSET / np.maximum(size, 1e-12))
            self.offset[landed], self.velocity[landed] = gap[landed], 0.0
        lifted = ~planted
        if lifted.any() and (self.offset[lifted].any() or self.velocity[lifted].any()):
            x, v = decay_offset(self.offset[lifted], self.velocity[lifted], RELEASE_RATE, dt)
            gone = (vector_length(x) < GONE) & (vector_length(v) < GONE / dt)  # [n]: released, exactly zero
            x[gone], v[gone] = 0.0, 0.0
            self.offset[lifted], self.velocity[lifted] = x, v
        self.held[:] = planted

    def rotations(self, world_pos, world_rot) -> np.ndarray:
        """The kinematic global rotations [B, J, 4] with each leg turned so its ankle is moved by the
        foot's offset (a copy; the same array when no offset is held)."""
        moving = np.any(self.offset != 0.0, axis=-1)  # [B, F]
        if not moving.any():
            return world_rot
        b, f = np.nonzero(moving)
        hips, knees, ankles = self.hips[f], self.knees[f], self.ankles[f]
        hip_rot, knee_rot = leg_ik(world_pos[b, hips], world_pos[b, knees], world_pos[b, ankles], world_rot[b, hips],
                                   world_rot[b, knees], world_pos[b, ankles] + self.offset[b, f])
        out = world_rot.copy()
        out[b, hips], out[b, knees] = hip_rot, knee_rot
        return out
