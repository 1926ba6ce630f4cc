"""Every live tunable of the character runtime, in physical units, in one dataclass.

The viewer's Tune panel edits a `RuntimeSettings` object and the runtime reads it each tick; the
panel is built generically from each field's metadata (`label`, `help`, and `min`/`max` for numbers,
`choices` for strings; `step` is a suggested slider step).

Ranges: `min`/`max` are the physical range of a setting. Once fitted to a model (`fit_to_model`),
some ranges narrow to what suits that model (`limits`): `beta` to the range the model was trained
with (`training.config.beta_range` when stored, else a factor of `models.card.BETA_SPAN` around its trained beta;
a network trained at one beta breaks at another), the full-stick speeds to `SPEED_SPAN` times the
data's fastest gait. `clamp` brings every value back into its limits (the runtime calls it every tick).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Mapping

from pfnn_core.models.card import ModelCard, StyleStats
from pfnn_core.tunables import tunable, value_from_text

PHASE_MODES = ("speed", "network")
NETWORK_MODES = ("exact", "linear", "constant")
SPEED_SPAN = 1.5  # full-stick speeds up to 1.5x the data's fastest gait


@dataclass
class RuntimeSettings:
    # Bandwidth of the RBF phase function (kernel weights exp(-beta d^2)); pushed to the model next tick.
    beta: float = tunable(8.0, "Phase RBF beta", "Bandwidth of the RBF phase function (RBF models only).",
                           min=0.5, max=64.0, step=0.5)
    # Drift-correction window in ticks: moving average of (predicted - commanded) root velocity and yaw
    # rate that is removed from the root motion. 0 turns the correction off.
    drift_window: int = tunable(60, "Drift window (ticks)",
                                 "Ticks over which the mean velocity/yaw-rate error to the command is removed; 0 = off.",
                                 min=0, max=600, step=1)
    # Right after standing the root motion leans on the command by how much of the last second the
    # character stood (the data has no starts: the network alone takes about a second to reach a walk).
    start_from_command: bool = tunable(True, "Starts follow the stick",
                                        "After standing, move the root with the command until the network is walking.")
    # At a start the network sees a past that had already been moving at the commanded velocity, by
    # this much (fading over the first second; `control.primed_past`): shown a standing past it keeps
    # its feet down while the root leaves.
    start_priming: float = tunable(1.0, "Start priming", "How much a start shows the network a past already moving.",
                                    min=0.0, max=1.0, step=0.05)
    # Once the run is released, no past sample the network sees says more 'run' than now (`walked_past`);
    # off by default: no more hop after a run, but one more pop held out (assets/models/default.md).
    walk_past_after_run: bool = tunable(False, "Walks forget the run", "Once the run is released, the past stops running.")
    # While strafing, the share of the mean SPEED error (along the commanded direction) that drift
    # correction removes (the direction and yaw-rate errors are always removed). Side-steps and backward
    # walks come from seconds of mocap per style and the network steps them at its own speed: a root
    # pushed to another speed drags the planted feet, so by default their speed is left to the network
    # and the command blend (`root_motion_from_command`).
    strafe_speed_correction: float = tunable(0.0, "Strafe speed correction",
                                              "Share of the mean speed error removed while strafing; 0 = direction only.",
                                              min=0.0, max=1.0, step=0.05)
    # Halflife (s) of the critically damped spring that moves the commanded velocity toward the stick.
    traj_halflife_pos: float = tunable(0.2, "Trajectory halflife: position (s)",
                                        "Time for the commanded velocity to close half the gap to the stick.",
                                        min=0.02, max=2.0, step=0.01)
    # Halflife (s) of the spring that turns the commanded facing toward the desired facing.
    traj_halflife_dir: float = tunable(0.27, "Trajectory halflife: facing (s)",
                                        "Time for the commanded facing to close half the angle to the desired facing.",
                                        min=0.02, max=2.0, step=0.01)
    # Blend exponent of future positions, network -> command: w(t) = 1 - (1 - t)^bias [PFNN: 0.5].
    bias_pos: float = tunable(0.5, "Blend bias: position",
                               "Larger = future positions follow the command sooner (less of the network).",
                               min=0.05, max=5.0, step=0.05)
    # Same while strafing [PFNN: 1.0].
    bias_pos_strafe: float = tunable(1.0, "Blend bias: position (strafe)", "Position blend exponent while strafing.",
                                      min=0.05, max=5.0, step=0.05)
    # Blend exponent of future facings, network -> command [PFNN: 2.0].
    bias_dir: float = tunable(2.0, "Blend bias: facing",
                               "Larger = future facings follow the command sooner (less of the network).",
                               min=0.05, max=5.0, step=0.05)
    # Same while strafing [PFNN: 0.5].
    bias_dir_strafe: float = tunable(0.5, "Blend bias: facing (strafe)", "Facing blend exponent while strafing.",
                                      min=0.05, max=5.0, step=0.05)
    # Full-stick walking speed, m/s (default: the style's forward-walk speed in the checkpoint).
    walk_speed: float = tunable(1.1, "Walk speed (m/s)", "Commanded speed at full stick.", min=0.1, max=3.0, step=0.05)
    # Full-stick running speed, m/s (default: the style's running speed in the checkpoint).
    run_speed: float = tunable(3.4, "Run speed (m/s)", "Commanded speed at full stick while running.",
                                min=0.5, max=8.0, step=0.05)
    # Full-stick speed (m/s) of a strafe straight sideways (default: the style's side-steps); between
    # forward, sideways and backwards the speed is interpolated by the angle to the kept facing.
    side_step_speed: float = tunable(1.1, "Side-step speed (m/s)", "Commanded speed at full stick when strafing sideways.",
                                      min=0.1, max=3.0, step=0.05)
    # Full-stick speed (m/s) of walking backwards while strafing (default: the style's backward walks).
    walk_back_speed: float = tunable(1.1, "Backward walk speed (m/s)",
                                      "Commanded speed at full stick when strafing backwards.", min=0.1, max=3.0, step=0.05)
    # Stick lengths below this count as no input (gamepad sticks rest slightly off centre).
    stick_deadzone: float = tunable(0.1, "Stick dead zone", "Stick length treated as zero.", min=0.0, max=0.5, step=0.01)
    # 'speed': phase advances by speed / stride_length * dt (stops at zero speed); 'network': predicted dphase.
    phase_mode: str = tunable("speed", "Phase mode", "Speed-based phase (stops when still) or the network's dphase.",
                               choices=PHASE_MODES)
    # The speed-based phase divides by the mocap's stride length (per style and speed) times this. 0.9
    # looked better on the tuning drives (run skating 0.84 -> 0.68 m/s) but not on the evaluation suite
    # (pops 7.7 -> 10.9 per minute), so the default stays 1 (the mocap's strides).
    stride_scale: float = tunable(1.0, "Stride scale", "Phase advance uses the mocap's stride length times this "
                                   "(smaller: the legs cycle faster for the same speed).", min=0.5, max=1.5, step=0.01)
    # Weight of the previous pose extrapolated by its velocity in the fed-back pose (0 = network only) [PFNN: 0.5].
    pose_smoothing: float = tunable(0.5, "Pose smoothing", "Blend of the extrapolated previous pose into the prediction.",
                                     min=0.0, max=0.95, step=0.05)
    # Turn each joint so its bones point where the predicted joint POSITIONS put them (the rotation
    # outputs only supply the twist of one-child bones); off = show the predicted rotations as they are.
    fit_rotations: bool = tunable(True, "Fit rotations to positions",
                                   "Point every bone at the predicted joint positions (robust to poor rotation outputs).")
    # Root velocity toward keeping the contact feet still (`runtime.contact_root`; it gives way at starts).
    root_from_contacts: float = tunable(1.0, "Root from contact feet", "Move the root so planted feet stay put "
                                        "(0 = the model's own root velocity).", min=0.0, max=1.0, step=0.05)
    foot_locking: bool = tunable(True, "Foot locking", "Pin planted feet in place with leg IK.")  # while in contact
    contact_threshold: float = tunable(0.5, "Contact threshold", "Contact output above which a foot is pinned.",
                                        min=0.05, max=0.99, step=0.01)  # the contact output, 0..1
    # A pin starts only while its joint is within this height (m) of its floor (not left hanging in the air).
    lock_start_height: float = tunable(0.05, "Lock start height (m)", "A foot joint is pinned only when it is this "
                                        "close to its floor level.", min=0.005, max=0.5, step=0.005)
    # A pin that starts within this height (m) of its joint's floor level is brought onto it.
    floor_snap_height: float = tunable(0.03, "Floor snap (m)", "Pins starting this close to the floor are put on it.",
                                        min=0.0, max=0.1, step=0.005)
    # Time (s) a released pin's offset from the network's foot takes to fade (relative to the body); docs/EVALUATION.md.
    lock_release_time: float = tunable(0.2, "Lock release time (s)",
                                        "How long a released foot takes to rejoin the network's foot.",
                                        min=0.0, max=1.0, step=0.01)
    # The same while side-stepping, diagonals in between (`feet.release_times`); why: docs/EVALUATION.md.
    lock_release_time_side: float = tunable(0.225, "Lock release time: side-steps (s)", "The release time while "
                                             "side-stepping (diagonals in between).", min=0.0, max=1.0, step=0.01)
    # Leash of a pin (m): a pinned foot is dragged along when the network's foot gets further than this
    # from it, so it slides a little instead of letting go and gliding back while still in contact.
    lock_release_distance: float = tunable(0.3, "Lock leash (m)", "A pinned foot is dragged along once the network's "
                                            "foot is this far from it.", min=0.01, max=1.0, step=0.01)
    # A new pin keeps its joint's incoming velocity, a share exp(-dt / this) of it kept per tick, and
    # comes to rest on the floor over a few ticks (it slides at most `ik.LANDING_SLIDE`): stopped in one
    # tick, the foot's impact shook the knee and ankle (acceleration noise). 0 = stop at once. Off by
    # default: 0.03 s lowered the evaluation suite's noise (backward walks 52.8 -> 46.6, side-steps
    # 34.0 -> 31.9, runs 128 -> 116 (m/s^2)^2; pops 1.8 -> 0.9 per minute) but raised foot skating in 18
    # of its 20 rows (by 2-20%, runs 0.24 -> 0.27 m/s), the landing's slide.
    pin_landing_time: float = tunable(0.0, "Pin landing time (s)",
                                       "A new foot pin comes to rest over about this long instead of in one tick (0 = at once).",
                                       min=0.0, max=0.1, step=0.005)
    # A released pin's offset from the network's foot decays as a critically damped spring with this
    # time constant (s), started so the foot leaves its pin at rest (`ik.update_lock`), instead of the
    # smoothstep fade over `lock_release_time` that set it moving at the network foot's speed in one
    # tick. 0 = the fade. Off by default: 0.1 s lowered the evaluation suite's noise in backward walks
    # (52.8 -> 27.1) and walks (31.3 -> 15.2 (m/s^2)^2) but raised it in runs (128 -> 216) and
    # side-steps (34.0 -> 35.4), pops 1.8 -> 4.1 per minute and foot skating in every kind (walk
    # 0.13 -> 0.28 m/s): the released foot catches up while still near the floor.
    pin_release_time: float = tunable(0.0, "Pin release time (s)",
                                       "A released foot rejoins the network's foot as a spring of this time constant (0 = fade).",
                                       min=0.0, max=0.1, step=0.005)
    # A new pin's share of the shown foot grows to 1 over this long (s) instead of in one tick
    # (`feet._blend_pins`): a heel pinned after its toe jumped in one tick from where the toe pin carried
    # the foot onto its own pin (a pop). 0 = at once. Why 0.1 s: docs/EVALUATION.md.
    pin_blend_time: float = tunable(0.1, "Pin blend time (s)",
                                     "A foot joint newly pinned moves onto its pin over this long (0 = at once).",
                                     min=0.0, max=0.2, step=0.01)
    # After a stop the feet step, one at a time, to the mocap's standing stance under where the hips come
    # to rest (from the stick's release the root follows the command spring alone: the data has no stops).
    settle_steps: bool = tunable(True, "Settling steps", "After a stop, step the feet under the hips.")
    # A pinned foot left past the leash (or the leg's reach) by the body steps to catch up, lifted by the
    # settling step height, instead of being dragged along the floor (`ik.update_lock`).
    catch_up_steps: bool = tunable(True, "Catch-up steps",
                                    "A pinned foot the body has left behind steps after it instead of sliding.")
    # A catch-up step leaves its pin at rest and lands moving with the network's foot along a minimum-jerk
    # path, lifted by a sin^2 bump (`release.catch_up_path`), instead of moving with the network's foot
    # from its first tick and lifting by a sine (one-tick jumps in the foot's velocity at both ends). Off
    # by default: with `catch_up_time` 0.3 s on the tuning drives it lowered no noise the slower step
    # alone did not (backward walks 21.5 both; side-steps 41.9 against 30.5 (m/s^2)^2), and pops rose
    # 3.9 -> 4.8 per minute.
    smooth_catch_up: bool = tunable(False, "Smooth catch-up steps",
                                     "A catch-up step leaves its pin at rest and lifts and lands level (less jerk).")
    # The shortest catch-up step (s; longer for a far pin, `ik.release_duration`) while the other foot stands
    # with room on its leash (`feet._slow_step_room`; else at the release time's pace); 0 = `lock_release_time`.
    # A 0.15 s step carries 20-30 cm: 6-15 Hz energy in the knee, ankle and toe (docs/EVALUATION.md).
    catch_up_time: float = tunable(0.0, "Catch-up step time (s)",
                                    "Shortest duration of a catch-up step (0 = the lock release time).",
                                    min=0.0, max=0.6, step=0.01)
    # A walk has no flight phase: the runtime lifts a foot (a catch-up step, the swing lift) only while the
    # other foot stands on the floor (`feet._other_foot_down`), so its rules never hover the body.
    one_foot_down: bool = tunable(True, "One foot down",
                                   "Lift a foot (catch-up step, swing lift) only while the other foot is down.")
    # With `one_foot_down`: while one foot takes a catch-up step, the other's toe-off waits (its toe held
    # 1.5 cm up at most, `reach._hold_toe_off`): the network plants the foot the runtime still steps after
    # and lifts the other, so both feet were off the floor in starts. Held-out suite (2026-12-03): the
    # two-foot lift in a start's first second under 2 cm in 6 more rows (style starts 2.3-4.2 -> 1.5 cm),
    # runtime targets 112 -> 119 of 144; walk noise 31.3 -> 31.9 (m/s^2)^2 (assets/models/default.md).
    hold_toe_off: bool = tunable(True, "Hold the toe-off",
                                  "While one foot takes a catch-up step, the other foot's toe stays on the floor.")
    # Lift of a free foot the network swings along the floor (m): `reach.SWING_SPEEDS`.
    swing_clearance: float = tunable(0.03, "Swing clearance (m)",
                                      "Keep a fast-moving free foot this high above the floor (0 = off).",
                                      min=0.0, max=0.1, step=0.005)
    # Duration (s) of one settling step.
    settle_step_time: float = tunable(0.3, "Settle step time (s)", "Duration of one settling step.",
                                       min=0.05, max=1.0, step=0.01)
    # Lift (m) of the foot at the middle of a settling step.
    settle_step_height: float = tunable(0.04, "Settle step height (m)", "How high a settling step lifts the foot.",
                                         min=0.0, max=0.2, step=0.005)
    # Keep each foot joint at or above its height in the model's standing pose (legs solved by IK).
    floor_clamp: bool = tunable(True, "Keep feet above the floor", "Raise a foot that sinks below its standing height.")
    # Solve two-bone leg IK toward the pins (off: pins are computed but the pose is not changed).
    ik_enabled: bool = tunable(True, "Leg IK", "Apply two-bone IK to reach pinned feet.")
    # Commanded speed (m/s) below which the character counts as fully standing; root motion and phase
    # advance are scaled by (1 - stand_amount)^0.25 [PFNN]. 0 = no stand-amount scaling at all.
    stand_speed: float = tunable(0.15, "Stand speed (m/s)",
                                  "Commanded speed at and below which root motion and phase stop; 0 = no stand scaling.",
                                  min=0.0, max=1.0, step=0.01)
    # The upper body leans toward the command springs' acceleration (into a start, back against a stop,
    # into a turn) by this many degrees per m/s^2, at most `lean_max` (`lean.py`). 0 = off.
    lean_per_acceleration: float = tunable(2.0, "Lean (deg per m/s^2)",
                                            "Upper body tilted toward the commanded acceleration (starts, stops, turns).",
                                            min=0.0, max=5.0, step=0.1)
    lean_max: float = tunable(6.0, "Most lean (deg)", "The upper body's largest lean toward the acceleration.",
                              min=0.0, max=20.0, step=0.5)
    # 0 = root moves by the network's predicted velocity and yaw rate, 1 = by the commanded spring.
    root_motion_from_command: float = tunable(0.5, "Root motion from command",
                                               "Blend of root motion toward the commanded spring (the data has no starts/stops).",
                                               min=0.0, max=1.0, step=0.05)

    # Commanded speeds below this (m/s) are shown to the network as this walk and played slower (asked
    # for a walk slower than any in its data the network shuffles with its feet always in contact and
    # slides). Default: the style's slowest walk in the data (`slowest_walk`), so only slower commands
    # are warped; 0 = off.
    slow_walk_speed: float = tunable(0.9, "Slowest network walk (m/s)",
                                      "Slower commands play this walk slower (planted feet); 0 = off.",
                                      min=0.0, max=2.0, step=0.05)
    # Most the network's view of the motion is sped up by (speeds near standing stay a stand).
    max_speed_warp: float = tunable(3.0, "Slow-walk warp limit", "Largest speed-up of the network's view of a slow walk.",
                                     min=1.0, max=10.0, step=0.1)
    # How the network's weights follow the phase (CPU): every kernel per character ('exact'), or
    # precomputed at a few phases, interpolated ('linear') or the nearest one ('constant') [PFNN demo].
    network_mode: str = tunable("exact", "Network weights",
                                 "exact, or precomputed per phase bin: linear / constant (faster, approximate; CPU only).",
                                 choices=NETWORK_MODES)
    # Motion VAE: 0 = the policy's latent itself (deterministic); up to 1 = the latent drawn around it
    # with the posterior's typical spread (other kinds ignore it).
    variation: float = tunable(0.0, "Variation (motion VAE)",
                                "0 = the policy's latent (deterministic); up to 1 = sampled around it.",
                                min=0.0, max=1.0, step=0.05)
    # Motion matching (other kinds ignore these): seconds between searches for a better frame (a sharp
    # change of the asked-for trajectory, or a clip running out, searches at once) [MM: 0.1 s].
    matching_search_interval: float = tunable(0.1, "Search interval (s, matching)",
                                               "Motion matching: time between searches for a better frame.",
                                               min=0.0, max=1.0, step=0.01)
    # Half-life (s) of the inertialized transition: half of the jump between two frames is left after it.
    matching_halflife: float = tunable(0.1, "Transition half-life (s, matching)",
                                        "Motion matching: how fast a switch to another frame blends in.",
                                        min=0.01, max=1.0, step=0.01)
    # A walk searches only walking clips (and standing frames), a run only run clips, the gait read from the
    # asked path's speed at its end without the slow-walk warp: a start from standing then never plays a
    # run clip's start into its flight (both feet up).
    matching_gait_rule: bool = tunable(True, "Gait rule (matching)",
                                       "Motion matching: walks search walking clips only, runs run clips only.")
    # Weight of each feature group in the search (each group normalised by its spread in the database) [MM].
    matching_weight_foot_position: float = tunable(0.75, "Weight: foot positions (matching)",
                                                    "Motion matching: how much the feet's positions count.",
                                                    min=0.0, max=5.0, step=0.05)
    matching_weight_foot_velocity: float = tunable(1.0, "Weight: foot velocities (matching)",
                                                    "Motion matching: how much the feet's velocities count.",
                                                    min=0.0, max=5.0, step=0.05)
    matching_weight_hip_velocity: float = tunable(1.0, "Weight: hip velocity (matching)",
                                                   "Motion matching: how much the hips' velocity counts.",
                                                   min=0.0, max=5.0, step=0.05)
    matching_weight_trajectory_position: float = tunable(1.0, "Weight: trajectory positions (matching)",
                                                          "Motion matching: how much the future path counts.",
                                                          min=0.0, max=5.0, step=0.05)
    matching_weight_trajectory_facing: float = tunable(1.5, "Weight: trajectory facings (matching)",
                                                        "Motion matching: how much the future facings count.",
                                                        min=0.0, max=5.0, step=0.05)

    def __post_init__(self) -> None:
        self._model_limits: dict[str, tuple[float, float]] = {}
        self._model_defaults: dict[str, Any] = {}
        self._assigned: set[str] = set()  # set by name (`assign`, e.g. `--set`): a style change keeps them
        fields = dataclasses.fields(self)
        self._names = [f.name for f in fields]
        self._numeric = [(f.name, float(f.metadata["min"]), float(f.metadata["max"]), type(f.default))
                         for f in fields if "min" in f.metadata]

    def reset(self) -> None:
        """Restore every field to its default (the model's, once fitted), in place (the UI holds a
        reference to this object)."""
        for f in dataclasses.fields(self):
            setattr(self, f.name, self._model_defaults.get(f.name, f.default))

    @classmethod
    def defaults(cls) -> "RuntimeSettings":
        return cls()

    @classmethod
    def for_model(cls, card: ModelCard, style=None) -> "RuntimeSettings":
        """Defaults for a model (its `ModelCard`): the full-stick speeds and the slow-walk warp threshold
        of `style` (`style_speeds`; default the model's default style) and beta from the one the model
        was trained with."""
        settings = cls()
        for name, value in style_speeds(card, style).items():
            setattr(settings, name, value)
        if card.trained_beta is not None:
            settings.beta = card.trained_beta
        return settings

    def apply_style(self, card: ModelCard, style) -> None:
        """Follow a style change: the full-stick speeds and the slow-walk threshold become `style`'s
        (`style_speeds`), both as values and as what `reset` restores. In place (the UI holds this
        object). A bare-network preset (warp off) keeps its warp off; a value set by name (`assign`,
        `pfnn-drive --set`) stays as set."""
        speeds = style_speeds(card, style)
        if self.slow_walk_speed <= 0.0:
            speeds.pop("slow_walk_speed", None)
        for name, value in speeds.items():
            if name not in self._assigned:
                setattr(self, name, value)
            if self._model_defaults:
                self._model_defaults[name] = value
        self.clamp()

    @classmethod
    def bare_network(cls, card: ModelCard) -> "RuntimeSettings":
        """The network alone: root motion, turning and phase from its own outputs; no command blending, drift
        correction, stand scaling, slow-walk warp, start priming, a walk's past rid of the run, pose smoothing,
        lean, foot locks, catch-up steps, IK or floor clamp (what an honest evaluation of the network measures)."""
        return dataclasses.replace(cls.for_model(card), root_motion_from_command=0.0,
                                   drift_window=0, stand_speed=0.0, foot_locking=False, ik_enabled=False,
                                   floor_clamp=False, phase_mode="network", slow_walk_speed=0.0, pose_smoothing=0.0,
                                   settle_steps=False, start_from_command=False,
                                   start_priming=0.0, walk_past_after_run=False, catch_up_steps=False,
                                   swing_clearance=0.0, lean_per_acceleration=0.0, root_from_contacts=0.0)

    # ---- ranges --------------------------------------------------------------------------------
    def fit_to_model(self, card: ModelCard) -> list[tuple[str, float, float]]:
        """Narrow the ranges to what suits a model (its `ModelCard`) and clamp the values into them;
        returns the (name, old, new) values that were clamped."""
        limits = {}
        beta_range = model_beta_range(card)
        if beta_range is not None:
            limits["beta"] = beta_range
        speeds = [float(v) for v in card.gait_speeds.values()]
        speeds += [float(stats.get(kind) or 0.0) for stats in card.style_stats.values() for kind in ("walk", "run")]
        if speeds:
            for name in ("walk_speed", "run_speed", "side_step_speed", "walk_back_speed"):
                low, high = self._static_limits(name)
                limits[name] = (low, min(high, max(low, SPEED_SPAN * max(speeds))))
        self._model_limits = limits
        defaults = RuntimeSettings.for_model(card)
        self._model_defaults = {f.name: getattr(defaults, f.name) for f in dataclasses.fields(self)}
        return self.clamp()

    def _static_limits(self, name: str) -> tuple[float, float]:
        meta = self.__dataclass_fields__[name].metadata
        return float(meta["min"]), float(meta["max"])

    def limits(self, name: str) -> tuple[float, float]:
        """(low, high) of a numeric setting: the model's range once fitted, else its physical range."""
        return self._model_limits.get(name) or self._static_limits(name)

    def all_limits(self) -> dict[str, tuple[float, float]]:
        return {name: self.limits(name) for name, *_ in self._numeric}

    def clamp(self) -> list[tuple[str, float, float]]:
        """Bring every numeric value into its limits (NaN goes to the model's default); returns the
        (name, old, new) values changed."""
        changed = []
        model_limits = self._model_limits
        for name, low, high, kind in self._numeric:
            value = getattr(self, name)
            if name in model_limits:
                low, high = model_limits[name]
            if not low <= value <= high:
                new = self._model_defaults.get(name, self.__dataclass_fields__[name].default) if value != value \
                    else min(max(value, low), high)
                new = kind(new)
                setattr(self, name, new)
                changed.append((name, value, new))
        return changed

    def field_names(self) -> list[str]:
        return list(self._names)

    def values(self) -> tuple:
        return tuple([getattr(self, name) for name in self._names])

    def validate(self) -> None:
        """Raise ValueError naming the first field outside its range (the model's once fitted) or choices."""
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            meta = f.metadata
            if "choices" in meta and value not in meta["choices"]:
                raise ValueError(f"{f.name}: expected one of {meta['choices']}, got {value!r}")
            if "min" in meta:
                low, high = self.limits(f.name)
                if not value >= low:
                    raise ValueError(f"{f.name}: {value} is below the minimum {low:g}")
                if not value <= high:
                    raise ValueError(f"{f.name}: {value} is above the maximum {high:g}")

    # ---- text (command lines) ------------------------------------------------------------------
    def assign(self, name: str, text: str) -> str | None:
        """Set a setting from text (`--set NAME=VALUE`). Raises ValueError for an unknown name (listing
        the known ones), a value of the wrong kind or outside the setting's physical range (naming the
        range). A value outside this model's range is clamped into it; the returned note says so. A
        setting assigned this way keeps its value over later style changes (`apply_style`)."""
        note = self._assign(name, text)
        self._assigned.add(name)
        return note

    def _assign(self, name: str, text: str) -> str | None:
        fields = {f.name: f for f in dataclasses.fields(self)}
        if name not in fields:
            raise ValueError(f"unknown setting {name!r}; known settings: {', '.join(fields)}")
        f, text = fields[name], text.strip()
        value = value_from_text(f, text)
        if isinstance(value, (bool, str)):
            setattr(self, name, value)
            return None
        low, high = self._static_limits(name)
        if not (math.isfinite(value) and low <= value <= high):
            raise ValueError(f"{name}: {text} is outside its range {low:g}..{high:g}")
        setattr(self, name, value)
        if self.clamp():
            model_low, model_high = self.limits(name)
            return (f"{name}={text} is outside this model's range {model_low:g}..{model_high:g}; "
                    f"using {getattr(self, name):g}")
        return None


# Per-style statistics (`ModelCard.style_stats[name]`) behind each speed setting.
STYLE_SPEED_FIELDS = {"walk_speed": "walk", "run_speed": "run", "side_step_speed": "side_step",
                      "walk_back_speed": "walk_back", "slow_walk_speed": "slowest_walk"}


# The statistics measured on a few seconds per style, and the contents (clip labels) they come from.
SHRUNK_STATS = {"side_step": ("walk-left", "walk-right"), "walk_back": ("walk-back",)}
PRIOR_MINUTES = 0.1  # minutes of a style's own side-steps / backward walks that count as much as the pool


def _pooled(stats: Mapping[str, StyleStats], stat: str) -> float | None:
    """A statistic over every style that has it, weighted by each style's minutes of its content."""
    pairs = [(_content_minutes(s, stat), float(s.get(stat))) for s in stats.values()
             if isinstance(s.get(stat), (int, float)) and math.isfinite(s.get(stat))]
    total = sum(m for m, _ in pairs)
    return sum(m * v for m, v in pairs) / total if total > 0.0 else None


def _content_minutes(stats: StyleStats, stat: str) -> float:
    minutes = stats.content_minutes
    return float(sum(float(minutes.get(c) or 0.0) for c in SHRUNK_STATS.get(stat, ())))


def style_speeds(card: ModelCard, style=None) -> dict[str, float]:
    """The speed settings (`STYLE_SPEED_FIELDS`) for `style` (a name, an index or weights [S]; None = the
    default style): each the style blend's weighted mean of its styles' statistics, over the styles
    that have one. Side-step and backward-walk speeds come from a few seconds of mocap per style: each
    style's is shrunk toward the value pooled over all styles by its minutes of that content
    (m v + PRIOR_MINUTES v_pooled) / (m + PRIOR_MINUTES). A statistic no style of the blend has falls
    back to the model's `gait_speeds` (walk, run; side-steps and backward walks at the walk
    speed), then to the field's default; the slow-walk threshold never exceeds the walk speed."""
    stats = card.style_stats
    weights = card.style_weights(style) if stats else {}
    gait = card.gait_speeds
    speeds = {}
    for name, stat in STYLE_SPEED_FIELDS.items():
        pooled = _pooled(stats, stat) if stat in SHRUNK_STATS else None
        pairs = []
        for style_name, weight in weights.items():
            value = stats[style_name].get(stat) if style_name in stats else None
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                continue
            if pooled is not None:
                minutes = _content_minutes(stats[style_name], stat)
                value = (minutes * value + PRIOR_MINUTES * pooled) / (minutes + PRIOR_MINUTES)
            pairs.append((weight, float(value)))
        total = sum(w for w, _ in pairs)
        if total > 0.0:
            speeds[name] = sum(w * v for w, v in pairs) / total
    if "walk_speed" not in speeds and "walk" in gait:
        speeds["walk_speed"] = gait["walk"]
    if "run_speed" not in speeds and "run" in gait:
        speeds["run_speed"] = gait["run"]
    for name in ("side_step_speed", "walk_back_speed"):
        if name not in speeds and "walk_speed" in speeds:
            speeds[name] = speeds["walk_speed"]
    if "slow_walk_speed" in speeds and "walk_speed" in speeds:
        speeds["slow_walk_speed"] = min(speeds["slow_walk_speed"], speeds["walk_speed"])
    return speeds


def model_beta_range(card: ModelCard) -> tuple[float, float] | None:
    """The beta range a model suits (`ModelCard.beta_range`), within the setting's own limits; None when
    the model does not use beta."""
    if card.beta_range is None:
        return None
    limits = RuntimeSettings.__dataclass_fields__["beta"].metadata
    return max(float(limits["min"]), card.beta_range[0]), min(float(limits["max"]), card.beta_range[1])


def tunable_fields(settings: RuntimeSettings | type[RuntimeSettings] = RuntimeSettings) -> list[dataclasses.Field]:
    """The fields in declaration order, for a UI that builds one widget per field from its metadata."""
    return list(dataclasses.fields(settings))
