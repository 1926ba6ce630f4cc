"""The landing hold: a planted simulated sole is held where IT landed, not pulled to the kinematic pin.

The runtime pins a planted kinematic foot to the floor (its foot locks); the simulated foot, tracking
it through the joint servos, lands a centimetre or so off that pin (behind it, lower, still moving),
and the servos then drag it across the floor to the pin while it takes the body's weight: on the
tuning drives three quarters of the physics' extra skating came from the first ticks of a stance.
With the hold, when a kinematic foot becomes planted the horizontal offset of the simulated foot from
it is kept (`LandingHold.update`), and every tick of that stance the leg's servo targets are turned
by a two-bone IK (`turn_leg`: the runtime's compiled `ik.solve_leg`, plain: no soft reach, no pole) so
the kinematic ankle, moved by the offset, is where the targets put it: the servos then hold the sole
where it came down. When the foot lifts the offset goes to zero like a critically damped spring
(`RELEASE_RATE`), over the swing, so the next landing starts from the
kinematic pose again. `PhysicsSettings.landing_hold` is the share of the offset kept (0 = off).
"""
from __future__ import annotations

import math

import numpy as np

from pfnn_core.math import mat3
from pfnn_core.math.mat3 import njit
from pfnn_core.math.springs import decay_offset
from pfnn_core.runtime import ik
from pfnn_core.runtime.ik import leg_chains

RELEASE_RATE = 25.0  # 1/s: a lifted foot's offset decays as a critically damped spring (95% gone in 0.19 s)
GONE = 1e-5  # m: a released offset this small (and slower than this per tick) is set to zero
MAX_OFFSET = 0.05  # m: a landing further off than this (a push, a stumble) is held only this far
_NO_POLE = (0.0, 0.0, 0.0)  # `ik.solve_leg(plain=True)` takes no pole (a leg closer to straight than a
# bend's sine of 1e-6 keeps its knee as it is)


@njit
def _same_side(q, before):
    """The quaternion `q` (a tuple) or its negation, whichever lies in `before`'s hemisphere (as a turn
    composed onto `before` does: the same rotation either way)."""
    if q[0] * before[0] + q[1] * before[1] + q[2] * before[2] + q[3] * before[3] < 0.0:
        return (-q[0], -q[1], -q[2], -q[3])
    return q


@njit
def turn_leg(hip, knee, ankle, hip_q, knee_q, target):
    """One leg: (hip, knee) global rotations (w, x, y, z) turned so the ankle reaches `target` (points
    3-tuples): `ik.solve_leg` without soft reach and pole."""
    solved = ik.solve_leg(hip, knee, ankle, mat3.matrix_from_quat(hip_q[0], hip_q[1], hip_q[2], hip_q[3]),
                          mat3.matrix_from_quat(knee_q[0], knee_q[1], knee_q[2], knee_q[3]), target, _NO_POLE, True)
    return (_same_side(mat3.quat_from_matrix(solved[0]), hip_q), _same_side(mat3.quat_from_matrix(solved[1]), knee_q))


@njit
def _load4(array, index):
    return (array[index, 0], array[index, 1], array[index, 2], array[index, 3])


@njit
def _store4(array, index, q):
    array[index, 0], array[index, 1], array[index, 2], array[index, 3] = q[0], q[1], q[2], q[3]


@njit
def _leg_ik(hip, knee, ankle, hip_rot, knee_rot, target, out_hip, out_knee):
    for i in range(hip.shape[0]):
        turned = turn_leg(mat3.load3(hip, i), mat3.load3(knee, i), mat3.load3(ankle, i), _load4(hip_rot, i),
                          _load4(knee_rot, i), mat3.load3(target, i))
        _store4(out_hip, i, turned[0])
        _store4(out_knee, i, turned[1])


@njit
def _turn_held_legs(world_pos, world_rot, hips, knees, ankles, offset, out) -> None:
    """`out` [B, J, 4] (a copy of `world_rot`): each leg whose offset [B, F, 3] is not zero turned so its
    ankle reaches the kinematic ankle moved by the offset."""
    for b in range(offset.shape[0]):
        pos, rot, moved = world_pos[b], world_rot[b], out[b]
        for f in range(offset.shape[1]):
            shift = mat3.load3(offset[b], f)
            if shift[0] == 0.0 and shift[1] == 0.0 and shift[2] == 0.0:
                continue
            ankle = mat3.load3(pos, ankles[f])
            turned = turn_leg(mat3.load3(pos, hips[f]), mat3.load3(pos, knees[f]), ankle, _load4(rot, hips[f]),
                              _load4(rot, knees[f]), mat3.add(ankle, shift))
            _store4(moved, hips[f], turned[0])
            _store4(moved, knees[f], turned[1])


@njit
def _length(x, y, z):
    """`vector_length` of one 3-vector (the same sum, in the same order)."""
    return math.sqrt(x * x + y * y + z * z)


@njit
def _update_hold(planted, simulated, kinematic, slots, share, dt, offset, velocity, held) -> None:
    """`LandingHold.update` in place, foot by foot."""
    for b in range(planted.shape[0]):
        for f in range(planted.shape[1]):
            if planted[b, f] and not held[b, f]:  # landed: the mean horizontal gap of its two joints
                first, second = slots[f, 0], slots[f, 1]
                gap_x = ((simulated[b, first, 0] - kinematic[b, first, 0]) +
                         (simulated[b, second, 0] - kinematic[b, second, 0])) / 2.0
                gap_z = ((simulated[b, first, 2] - kinematic[b, first, 2]) +
                         (simulated[b, second, 2] - kinematic[b, second, 2])) / 2.0
                keep = share * min(1.0, MAX_OFFSET / max(_length(gap_x, 0.0, gap_z), 1e-12))
                offset[b, f, 0], offset[b, f, 1], offset[b, f, 2] = gap_x * keep, 0.0, gap_z * keep
                velocity[b, f, 0], velocity[b, f, 1], velocity[b, f, 2] = 0.0, 0.0, 0.0
            elif not planted[b, f]:  # lifted: the offset decays
                x, v = offset[b, f], velocity[b, f]
                for i in range(3):
                    x[i], v[i] = decay_offset(x[i], v[i], RELEASE_RATE, dt)
                if _length(x[0], x[1], x[2]) < GONE and _length(v[0], v[1], v[2]) < GONE / dt:  # released: exactly zero
                    x[:], v[:] = 0.0, 0.0
            held[b, f] = planted[b, f]


def _rows(values, shape, width) -> np.ndarray:
    """[..., width] values broadcast to `shape` as a contiguous [N, width] array."""
    return np.ascontiguousarray(np.broadcast_to(np.asarray(values, dtype=float), shape + (width,)).reshape(-1, width))


def leg_ik(hip, knee, ankle, hip_rot, knee_rot, target):
    """(hip_rot, knee_rot): the legs' global rotations [..., 4] turned so the ankle reaches `target`
    [..., 3] (points [..., 3], world), by `turn_leg`: the knee bends in the leg's own plane; bone lengths
    are kept; a target out of reach is taken along the hip->target line to the reach. No soft reach (the
    runtime's pose has had it): an unchanged target gives back the same rotations."""
    shape = np.broadcast_shapes(*(np.shape(v)[:-1] for v in (hip, knee, ankle, hip_rot, knee_rot, target)))
    points = [_rows(v, shape, 3) for v in (hip, knee, ankle, target)]
    rotations = [_rows(q, shape, 4) for q in (hip_rot, knee_rot)]
    out_hip, out_knee = np.empty_like(rotations[0]), np.empty_like(rotations[1])
    _leg_ik(points[0], points[1], points[2], rotations[0], rotations[1], points[3], out_hip, out_knee)
    return out_hip.reshape(shape + (4,)), out_knee.reshape(shape + (4,))


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
        _update_hold(np.asarray(planted, dtype=np.bool_), simulated_feet, kinematic_feet, self.slots, float(share),
                     float(dt), self.offset, self.velocity, self.held)

    def warm(self, world_pos, world_rot) -> None:
        """Compile the held legs' IK now, on a pose like the ticks' ([B, J, 3], [B, J, 4]): numba compiles a
        kernel at its first call (seconds the first time on a machine), which fell on a walk's first
        landing and stood the viewer still there."""
        offset = np.zeros_like(self.offset[:1])
        offset[0, 0, 0] = 1e-3
        _turn_held_legs(world_pos[:1], world_rot[:1], self.hips, self.knees, self.ankles, offset, world_rot[:1].copy())

    def rotations(self, world_pos, world_rot) -> np.ndarray:
        """The kinematic global rotations [B, J, 4] with each leg turned so its ankle is moved by the
        foot's offset (a copy; the same array when no offset is held)."""
        if not self.offset.any():
            return world_rot
        out = world_rot.copy()
        _turn_held_legs(world_pos, world_rot, self.hips, self.knees, self.ankles, self.offset, out)
        return out
