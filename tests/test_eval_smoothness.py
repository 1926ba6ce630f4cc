"""Acceleration noise and turning slip against hand-computed values, the real mocap and bad motion."""
import math

import numpy as np
import pytest

from pfnn_core.evaluation import acceleration_noise, measures, turning_slip


def hand_welch_band_power(positions, dt, low, high):
    """The noise written out: second differences, 1 s Hann segments overlapping by half, each segment's
    mean removed, one-sided density, the second difference's gain sinc(f dt)^2 divided out, the bins
    in [low, high] summed times their width; x + y + z, mean over joints."""
    acceleration = np.diff(positions, n=2, axis=0) / dt ** 2
    length = min(len(acceleration), int(round(1.0 / dt)))
    hop = length - length // 2
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(length) / length)  # periodic Hann
    starts = range(0, len(acceleration) - length + 1, hop)
    frequency = np.fft.rfftfreq(length, dt)
    total = np.zeros(acceleration.shape[1:])
    for start in starts:
        piece = acceleration[start:start + length]
        spectrum = np.abs(np.fft.rfft(window[:, None, None] * (piece - piece.mean(axis=0)), axis=0)) ** 2
        density = spectrum / ((1.0 / dt) * np.sum(window ** 2))
        density[1:-1 if length % 2 == 0 else None] *= 2.0
        density /= (np.sinc(frequency * dt) ** 4)[:, None, None]
        inside = (frequency >= low - 1e-9) & (frequency <= high + 1e-9)
        total += density[inside].sum(axis=0) * (frequency[1] - frequency[0])
    return float((total / len(starts)).sum(axis=-1).mean())


@pytest.mark.parametrize("fps", [30, 60])
def test_a_tone_in_the_band_has_its_own_acceleration_power_and_one_below_has_none(fps):
    dt, amplitude = 1.0 / fps, 0.01
    t = np.arange(int(5 * fps)) * dt
    for frequency, expected in ((10.0, amplitude ** 2 * (2 * np.pi * 10.0) ** 4 / 2), (2.0, 0.0)):
        positions = np.zeros((len(t), 2, 3))
        positions[:, 0, 1] = amplitude * np.sin(2 * np.pi * frequency * t)  # joint 0 bobs, joint 1 is still
        noise = acceleration_noise.acceleration_noise(positions, dt, 6.0, 15.0)
        # mean over the two joints: half the bobbing joint's mean square acceleration A^2 (2 pi f)^4 / 2
        assert noise == pytest.approx(expected / 2, rel=0.02, abs=1e-9)
    still = np.zeros((len(t), 2, 3))
    assert acceleration_noise.acceleration_noise(still, dt) == 0.0
    assert math.isnan(acceleration_noise.acceleration_noise(still[:5], dt))


def test_the_mocaps_noise_is_the_reference_figure_and_jitter_raises_it(bvh_dir):
    from pfnn_core.evaluation import reference

    paths = sorted(bvh_dir.glob("dataset-2_walk_normal_*.bvh.gz"))[:2] + sorted(bvh_dir.glob("dataset-2_run_normal_*.bvh.gz"))[:1]
    clips = reference.load_mocap(paths)
    names, parents = clips[0].motion.names, clips[0].motion.parents
    ref = reference.mocap_reference(clips, names, parents, leave_one_out=2)
    body = measures.body_joints(names, parents)
    assert ref.noise_band == pytest.approx((6.0, 15.0), abs=1e-3)  # 30 fps clips: up to their Nyquist frequency
    for kind in ("walk", "run"):
        mine = [c for c in clips if c.kind == kind]
        seconds = [len(c.positions) * c.dt for c in mine]
        powers = [hand_welch_band_power(c.positions[:, body], c.dt, *ref.noise_band) for c in mine]
        assert ref.acceleration_noise[kind] == pytest.approx(np.dot(powers, seconds) / sum(seconds), rel=1e-9)
    assert ref.acceleration_noise["run"] > ref.acceleration_noise["walk"] > 1.0  # (m/s^2)^2: a walk's impacts
    walk = clips[0]
    rng = np.random.default_rng(1)
    jittery = walk.positions + rng.normal(0.0, 0.005, walk.positions.shape)  # 5 mm of noise per joint and frame
    clean = acceleration_noise.acceleration_noise(walk.positions[:, body], walk.dt, 6.0, 15.0)
    assert acceleration_noise.acceleration_noise(jittery[:, body], walk.dt, 6.0, 15.0) > 3 * clean


def circling_root(lateral, seconds=4.0, dt=1.0 / 60.0, speed=1.2, rate=math.radians(90.0)):
    """A root whose facing turns at `rate` while it moves `speed` forward and `lateral` to its right."""
    t = np.arange(int(seconds / dt)) * dt
    yaw = rate * t
    # the integral of speed (sin yaw, cos yaw) + lateral (-cos yaw, sin yaw) over t
    x = (-speed * np.cos(yaw) - lateral * np.sin(yaw)) / rate
    z = (speed * np.sin(yaw) - lateral * np.cos(yaw)) / rate
    return np.stack([x, z], axis=-1), yaw


def test_a_root_sliding_sideways_in_a_turn_slips_at_that_speed():
    for lateral in (0.0, 0.3, -0.5):
        root, yaw = circling_root(lateral)
        slip, frames = turning_slip.turning_slip(root, yaw, 1.0 / 60.0)
        assert frames > 200
        assert slip == pytest.approx(abs(lateral), abs=0.01)
    # a straight walk with a steady facing has no turn to judge
    t = np.arange(240) / 60.0
    straight = np.stack([np.zeros_like(t), 1.2 * t], axis=-1)
    assert math.isnan(turning_slip.turning_slip(straight, np.zeros_like(t), 1.0 / 60.0)[0])
    # a turn on the spot (slower than MIN_TURN_SPEED) neither
    assert turning_slip.turning_slip(np.zeros((240, 2)), np.radians(90.0) * t, 1.0 / 60.0)[1] == 0


def test_the_mocaps_turns_barely_slip_and_a_root_sliding_through_them_does(bvh_dir):
    from pfnn_core.evaluation import reference

    clips = reference.load_mocap(sorted(bvh_dir.glob("dataset-2_walk-turn-left_normal_*.bvh.gz"))[:2])
    names, parents = clips[0].motion.names, clips[0].motion.parents
    ref = reference.mocap_reference(clips, names, parents, leave_one_out=1)
    assert ref.turning_frames > 30
    assert 0.0 < ref.turning_slip < 0.3  # m/s
    clip = clips[0]
    root, yaw = turning_slip.body_root(clip.positions, names, parents, clip.dt)
    own, frames = turning_slip.turning_slip(root, yaw, clip.dt)
    assert frames > 0
    # the same turn with the whole body carried 0.5 m/s to its right on top: a root sliding in the turn
    right = np.stack([-np.cos(yaw), np.sin(yaw)], axis=-1)
    slide = np.cumsum(0.5 * right, axis=0) * clip.dt
    sliding = clip.positions.copy()
    sliding[..., [0, 2]] += slide[:, None]
    root, yaw = turning_slip.body_root(sliding, names, parents, clip.dt)
    assert turning_slip.turning_slip(root, yaw, clip.dt)[0] > own + 0.3
