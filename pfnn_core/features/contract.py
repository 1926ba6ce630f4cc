"""The feature contract: the simulation rate, the trajectory window's offsets, gait and contact names, and
`gait_from_speed` (soft stand / walk / run labels from ground speed), shared by training and runtime.

Frames at SIM_FPS (60 Hz). The trajectory window TRAJ_OFFSETS spans 1 s back to ~1 s ahead (12 samples);
the model predicts FUTURE_OFFSETS (+10..+60 frames)."""

from __future__ import annotations

import numpy as np

from pfnn_core.math.easing import smoothstep

SIM_FPS = 60


TRAJ_OFFSETS = tuple(range(-60, 60, 10))  # 12 samples, 1 s back to ~1 s ahead, frames at 60 Hz


FUTURE_OFFSETS = tuple(range(10, 70, 10))  # 6 samples the network predicts, +10..+60 frames


GAIT_NAMES = ("stand", "walk", "run")


CONTACT_NAMES = ("foot_left", "toe_left", "foot_right", "toe_right")


STAND_FADE = (0.1, 0.35)  # m/s: gait 'stand' fades out between these speeds


RUN_FADE = (1.6, 2.2)  # m/s: without content labels, 'run' fades in between these speeds


def gait_from_speed(speed, run=None) -> np.ndarray:
    """Soft (stand, walk, run) labels [..., 3] from ground speed (m/s) and how much the motion is a run;
    shared by training and runtime.

    stand is 1 below STAND_FADE[0] m/s and 0 above STAND_FADE[1] (the slowest walks in the data, sad and
    elderly styles, move at 0.45-0.65 m/s); the moving rest is split between walk and run by `run`
    [...] in [0, 1]: a clip's content (run/dash clips 1) in training, the run button at run time.
    Without `run` (data without content labels) the run share fades in from 1.6 to 2.2 m/s.
    """
    speed = np.asarray(speed, float)
    stand = 1.0 - smoothstep(*STAND_FADE, speed)
    run_share = smoothstep(*RUN_FADE, speed) if run is None else np.clip(np.broadcast_to(run, speed.shape), 0.0, 1.0)
    return np.stack([stand, (1.0 - stand) * (1.0 - run_share), (1.0 - stand) * run_share], axis=-1)


# What a training set without the statistic stands for (a set with no complete gait cycle, no forward
# walks or no runs; a checkpoint older than the statistic): the bundled walks' cycle of ~66 frames at
# ~1.1 m/s is a stride of ~1.2 m.
FALLBACK_STRIDE = {"speed": [1.0], "stride_length": [1.2], "linear": [1.2, 0.0], "num_cycles": 0}
FALLBACK_WALK_SPEED = 1.2  # m/s
RUN_TO_WALK_SPEED = 2.5  # a run's speed over the walk's, without run clips
