"""Every live tunable of the physics layer, in physical units, in one dataclass: `PhysicsSettings`.

A panel can build one widget per field from its metadata (`label`, `help`, `min`, `max`, `step`), as
for `RuntimeSettings`. `clamp` brings every value back into its range (a NaN goes to the default) and
returns what it changed; the tracker calls it every tick and reports the changes, so a bad value (a
zero mass, huge gains, no substeps) is never simulated.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from pfnn_core.tunables import tunable, value_from_text


@dataclass
class PhysicsSettings:
    # Natural frequency of every joint's servo for the inertia it moves: kp = (2 pi f)^2 I, with I each
    # joint axis's inertia in the reference pose (the mass matrix's diagonal). Higher follows the
    # kinematic pose more tightly and reacts less to pushes.
    servo_frequency: float = tunable(10.0, "Servo frequency (Hz)", "How tightly every joint follows the kinematic pose.",
                                      min=0.5, max=20.0, step=0.1)
    # Damping of the servos as a ratio of critical damping (kv = 2 zeta (2 pi f) I, integrated
    # implicitly by the implicitfast integrator).
    damping_ratio: float = tunable(1.0, "Servo damping ratio", "1 = critically damped; lower rings, higher lags.",
                                    min=0.1, max=3.0, step=0.05)
    # The servos of the legs (hips, knees, ankles) are this many times stiffer: they carry the body.
    leg_stiffness: float = tunable(2.0, "Leg stiffness (x)", "Scale of the hip, knee and ankle servos.",
                                    min=0.1, max=20.0, step=0.1)
    # How hard the hips are held to the kinematic hips (the hand of god): the hold's stiffness times
    # this (its damping times the square root); 0 = off (the body is on its own and falls).
    root_help: float = tunable(1.0, "Root help", "Strength of the hold on the hips (the hand of god); 0 = off.",
                                min=0.0, max=1.0, step=0.05)
    # Natural frequency of the hold on the hips at full help (for the whole body's mass and its inertia
    # about the hips, critically damped). 14 Hz, not 10: the same help (median 177 N on the tuning drives),
    # closer tracking and less foot skating for all three model kinds (docs/PHYSICS.md). At most 16: at 17 Hz
    # the body ran away 4 times on the tuning drives (put back each time), at 18 Hz 81 times.
    root_frequency: float = tunable(14.0, "Root hold frequency (Hz)",
                                     "How tightly the hips are held across the floor and in rotation.",
                                     min=0.5, max=16.0, step=0.1)
    # ... and in height, softer: a kinematic pose whose soles would sink a centimetre into the floor
    # then costs ~200 N, not thousands (the body rests on its legs, the hold gives way).
    root_height_frequency: float = tunable(3.0, "Root height frequency (Hz)", "How tightly the hips' height is held.",
                                            min=0.5, max=30.0, step=0.1)
    # The hold gives way to a push: its target takes the push's velocity change (impulse / body mass)
    # and comes back like a critically damped spring of this frequency (peak displacement v / (2 pi f e)).
    push_return_frequency: float = tunable(0.35, "Push return frequency (Hz)",
                                            "How fast a pushed body is brought back to the kinematic pose.",
                                            min=0.05, max=5.0, step=0.05)
    # Physics steps per 60 Hz tick (time step = tick / substeps).
    substeps: int = tunable(8, "Substeps per tick", "Physics steps per tick: more is steadier and slower.",
                             min=1, max=32, step=1)
    # Sliding friction coefficient of every contact (soles on the floor, limbs on limbs).
    friction: float = tunable(1.0, "Friction", "Sliding friction coefficient of the soles on the floor.",
                               min=0.05, max=3.0, step=0.05)
    # A planted sole is held where it landed: when a kinematic foot becomes planted, this share of the
    # simulated foot's horizontal offset from it is kept through the stance (the leg's targets turned by
    # a two-bone IK), instead of the servos dragging the loaded sole to the kinematic pin (`landing.py`).
    landing_hold: float = tunable(0.6, "Landing hold", "Share of where the simulated foot landed kept while it is "
                                  "planted (1 = it stays where it came down; 0 = pulled to the kinematic foot).",
                                  min=0.0, max=1.0, step=0.05)
    # The servos of a leg whose kinematic foot is planted (hip, knee, ankle, toe; stiffness and damping)
    # are this many times as stiff: softer, the stance leg gives way to the sole's grip on the floor
    # instead of dragging it along.
    stance_stiffness: float = tunable(0.7, "Stance leg stiffness (x)", "Scale of a planted leg's servos (1 = as "
                                      "the swing's).", min=0.1, max=2.0, step=0.05)
    # The soles' contact with the floor: the time constant of MuJoCo's soft contact (solref; mixed with the
    # floor's, and never under two physics steps). Shorter is a stiffer, less springy contact: a loaded
    # sole sinks and creeps less.
    sole_contact_time: float = tunable(0.004, "Sole contact time (s)", "Time constant of the soles' contact with the "
                                       "floor: shorter is stiffer (MuJoCo keeps it at least two physics steps).",
                                       min=0.002, max=0.02, step=0.001)
    # Total mass of the body (the density of every part scaled to it).
    body_mass: float = tunable(60.0, "Body mass (kg)", "Mass of the whole simulated body.", min=20.0, max=200.0, step=1.0)
    # Limbs collide with each other (pairs that overlap in the reference pose never do).
    self_collision: bool = tunable(True, "Self collision", "Limbs collide with each other (not only with the floor).")

    def __post_init__(self) -> None:
        self._names = [f.name for f in dataclasses.fields(self)]
        self._numeric = [(f.name, float(f.metadata["min"]), float(f.metadata["max"]), type(f.default))
                         for f in dataclasses.fields(self) if "min" in f.metadata]

    def clamp(self) -> list[tuple[str, float, float]]:
        """Bring every numeric value into its range (a NaN or a non-number to the default); returns the
        (name, old, new) values changed."""
        changed = []
        for name, low, high, kind in self._numeric:
            value = getattr(self, name)
            try:
                number = float(value)
            except (TypeError, ValueError):
                number = math.nan
            if number != number:
                new = self.__dataclass_fields__[name].default
            elif not low <= number <= high or (kind is int and number != int(number)):
                new = kind(round(min(max(number, low), high)) if kind is int else min(max(number, low), high))
            else:
                continue
            setattr(self, name, new)
            changed.append((name, value, new))
        return changed

    def limits(self, name: str) -> tuple[float, float]:
        meta = self.__dataclass_fields__[name].metadata
        return float(meta["min"]), float(meta["max"])

    def values(self) -> tuple:
        return tuple(getattr(self, name) for name in self._names)

    def assign(self, name: str, text: str) -> str | None:
        """Set a setting from text (`--physics-set NAME=VALUE`); ValueError for an unknown name or a value
        of the wrong kind; a value out of range is clamped and the returned note says so."""
        fields = {f.name: f for f in dataclasses.fields(self)}
        if name not in fields:
            raise ValueError(f"unknown physics setting {name!r}; known: {', '.join(fields)}")
        text = text.strip()
        value = value_from_text(fields[name], text)
        if isinstance(value, bool):
            setattr(self, name, value)
            return None
        setattr(self, name, value)
        changed = self.clamp()
        if changed:
            low, high = self.limits(name)
            return f"physics {name}={text} is outside its range {low:g}..{high:g}; using {getattr(self, name):g}"
        return None


def tunable_fields() -> list[dataclasses.Field]:
    """The fields in declaration order, for a panel that builds one widget per field."""
    return list(dataclasses.fields(PhysicsSettings))
