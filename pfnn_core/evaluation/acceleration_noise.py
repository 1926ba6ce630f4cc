"""Acceleration noise: the high-frequency energy of the joints' accelerations (docs/EVALUATION.md).

Owns `acceleration_power` (the acceleration's power spectrum of one motion, per joint), `band_power`
and `acceleration_noise` (its power in a band, mean over joints: (m/s^2)^2, the energy per second of
the band-passed acceleration), and `pooled_noise` (several motions, weighted by their duration).

The acceleration is the second difference of the world joint positions. A second difference is a
filter of known gain, (2 sin(pi f / fs) fs)^2 against the true (2 pi f)^2: at 15 Hz it keeps 41% of a
30 fps capture's acceleration amplitude and 81% of a 60 Hz drive's. That gain is divided out of the
spectrum, so motions at different rates are measured alike within the band both can show.
"""
from __future__ import annotations

import math

import numpy as np
from scipy.signal import welch

NOISE_LOW_HZ = 6.0       # voluntary human motion lies below this (gait: strides at 1-1.5 Hz, steps at 2-3 Hz)
SEGMENT_S = 1.0          # Welch segments: 1 Hz resolution
MIN_FRAMES = 8           # fewer accelerations than this give no spectrum


def second_difference_gain(frequency, dt: float) -> np.ndarray:
    """|H(f)| of the second difference over dt^2 divided by the true second derivative's (2 pi f)^2:
    1 at 0 Hz, falling to (2 / pi)^2 = 0.41 at the Nyquist frequency."""
    return np.sinc(np.asarray(frequency, float) * dt) ** 2  # sinc(x) = sin(pi x) / (pi x)


def acceleration_power(positions, dt: float) -> tuple[np.ndarray, np.ndarray] | None:
    """(frequencies [F] Hz, power spectral density [F, J] in (m/s^2)^2 / Hz summed over x, y, z) of the
    joints' accelerations: second differences of positions [T, J, 3] (m), Welch's method with Hann
    windows of SEGMENT_S (shorter motions: one window over all), each segment's mean removed, the
    second difference's gain divided out. None for fewer than MIN_FRAMES accelerations."""
    positions = np.asarray(positions, float)
    if len(positions) < MIN_FRAMES + 2:
        return None
    acceleration = np.diff(positions, n=2, axis=0) / dt ** 2
    segment = min(len(acceleration), max(MIN_FRAMES, int(round(SEGMENT_S / dt))))
    frequency, density = welch(acceleration, fs=1.0 / dt, window="hann", nperseg=segment, noverlap=segment // 2,
                               detrend="constant", scaling="density", axis=0)
    density = density.sum(axis=-1)  # [F, J]: x + y + z
    return frequency, density / second_difference_gain(frequency, dt)[:, None] ** 2


def band_power(frequency, density, low: float, high: float) -> np.ndarray:
    """Power [J] in low <= f <= high: the density's sum over those bins times the bin width."""
    frequency = np.asarray(frequency, float)
    width = frequency[1] - frequency[0] if len(frequency) > 1 else 0.0
    slack = 0.01 * width  # a band edge at a bin (15 Hz of a 30.00003 fps clip) takes that bin
    inside = (frequency >= low - slack) & (frequency <= high + slack)
    return np.asarray(density, float)[inside].sum(axis=0) * width


def acceleration_noise(positions, dt: float, low: float = NOISE_LOW_HZ, high: float | None = None) -> float:
    """Mean over joints of the acceleration's power in [low, high] Hz ((m/s^2)^2); `high` defaults to
    the Nyquist frequency 1 / (2 dt). NaN for a motion too short to measure."""
    spectrum = acceleration_power(positions, dt)
    if spectrum is None:
        return math.nan
    high = 0.5 / dt if high is None else high
    return float(band_power(*spectrum, low, high).mean())


def pooled_noise(parts) -> float:
    """(noise, seconds) pairs -> their duration-weighted mean (NaN parts skipped)."""
    parts = [(float(noise), float(seconds)) for noise, seconds in parts if np.isfinite(noise) and seconds > 0]
    total = sum(seconds for _, seconds in parts)
    return sum(noise * seconds for noise, seconds in parts) / total if total else math.nan
