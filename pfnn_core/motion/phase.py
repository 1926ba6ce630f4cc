"""Gait phase labels: 0 at each right-foot touchdown, 0.5 at each left-foot touchdown, linear between.

Also: the root-height-valley fallback and stride statistics for the runtime's speed-based phase advance.

How labels are made from touchdown events (frame, target phase 0 or 0.5):
- the phase is unwrapped between events; consecutive same-foot events advance a full cycle, so a
  missed touchdown does not break the labels;
- each gap between events is measured as a cycle length; gaps shorter than the typical cycle by more
  than `outlier_std` standard deviations (robust: median and scaled MAD) are fake steps (transitions,
  shuffles): the event whose removal
  brings the merged gap closest to the mean is dropped, repeatedly; over long gaps the phase advances
  by the whole number of half cycles closest to the mean rate (interpolating across with the mean rate);
- frames marked standing advance at `standing_rate` of the normal rate (time is re-weighted), so
  the phase nearly holds while standing and never jumps;
- before the first and after the last event the neighbouring gap's rate is extrapolated. The
  touchdown at frame 0 (clips start mid-motion, so contact is "rising" there) is never an event.
"""

from __future__ import annotations

import numpy as np

DEFAULT_OUTLIER_STD = 2.0


MIN_OUTLIER_FRACTION = 0.1  # gaps within 10% of the mean cycle are never outliers (tiny std on clean data)


DEFAULT_STANDING_RATE = 0.05


def phase_distance(a, b) -> np.ndarray:
    """Cyclic distance between phases in [0, 1): min(|a - b|, 1 - |a - b|), in [0, 0.5]."""
    d = np.abs(np.asarray(a, float) - np.asarray(b, float)) % 1.0
    return np.minimum(d, 1.0 - d)


def touchdowns(contact: np.ndarray) -> np.ndarray:
    """Frames where contact rises (False -> True), [F] bool -> [E] int. Frame 0 never counts."""
    contact = np.asarray(contact, bool)
    return np.flatnonzero(contact[1:] & ~contact[:-1]) + 1


def standing_frames(right_contact, left_contact, root_speed, speed_threshold: float = 0.2) -> np.ndarray:
    """Both feet planted and the root slower than speed_threshold (m/s): [F] bool."""
    return np.asarray(right_contact, bool) & np.asarray(left_contact, bool) & (np.asarray(root_speed) < speed_threshold)


def _congruent_step(target_from: float, target_to: float) -> float:
    """Smallest positive phase advance from one target phase to the next (0.5 or 1.0)."""
    step = (target_to - target_from) % 1.0
    return step if step > 1e-9 else 1.0


def _drop_fake_events(targets: np.ndarray, weighted_frames: np.ndarray, outlier_std: float):
    """Remove events that make too-short cycles; returns kept event indices and the mean cycle length."""
    keep = list(range(len(targets)))
    while True:
        if len(keep) < 2:
            return keep, None
        positions = weighted_frames[keep]
        steps = np.array([_congruent_step(targets[a], targets[b]) for a, b in zip(keep[:-1], keep[1:])])
        lengths = np.diff(positions) / steps
        if len(lengths) < 3:
            return keep, float(np.mean(lengths))
        # Robust centre and spread (median, scaled MAD): the fake cycles would inflate a plain std.
        mean = float(np.median(lengths))
        std = 1.4826 * float(np.median(np.abs(lengths - mean)))
        tolerance = max(outlier_std * std, MIN_OUTLIER_FRACTION * mean)
        short = np.flatnonzero(lengths < mean - tolerance)
        if len(short) == 0:
            good = np.abs(lengths - mean) <= tolerance
            return keep, float(np.mean(lengths[good])) if good.any() else mean
        k = int(short[np.argmin(lengths[short])])
        # Drop event k or k+1: whichever leaves a merged gap closest to the mean cycle.
        best, best_error = None, np.inf
        for drop in (k, k + 1):
            left, right = drop - 1, drop + 1
            if left < 0 or right >= len(keep):
                error = 0.0 if drop in (0, len(keep) - 1) else np.inf  # dropping an end event
            else:
                step = _congruent_step(targets[keep[left]], targets[keep[right]])
                error = abs((positions[right] - positions[left]) / step - mean)
            if error < best_error:
                best, best_error = drop, error
        del keep[best]


def _unwrapped_steps(positions: np.ndarray, targets: np.ndarray, mean_cycle: float | None) -> np.ndarray:
    """Phase advance per gap: the advance congruent to the targets that is closest to the mean rate."""
    steps = []
    for k in range(len(targets) - 1):
        base = _congruent_step(targets[k], targets[k + 1])
        if mean_cycle:
            expected = (positions[k + 1] - positions[k]) / mean_cycle
            base += max(0.0, np.round(expected - base))
        steps.append(base)
    return np.asarray(steps)


def _elapsed(weights: np.ndarray) -> np.ndarray:
    """Weighted time from frame 0 to each frame: elapsed[f] = sum(weights[1:f+1])."""
    return np.concatenate([[0.0], np.cumsum(weights[1:])]) if len(weights) else np.zeros(0)


def phase_from_events(
    num_frames: int,
    event_frames,
    event_phases,
    standing=None,
    standing_rate: float = DEFAULT_STANDING_RATE,
    outlier_std: float = DEFAULT_OUTLIER_STD,
    default_cycle_frames: float | None = None,
) -> np.ndarray:
    """Phase [F] in [0, 1) from events (frame, phase target); see the module docstring."""
    event_frames = np.asarray(event_frames, int)
    event_phases = np.asarray(event_phases, float) % 1.0
    order = np.argsort(event_frames, kind="stable")
    event_frames, event_phases = event_frames[order], event_phases[order]

    if len(event_frames) == 0:
        return np.zeros(num_frames)
    standing = np.zeros(num_frames, bool) if standing is None else np.asarray(standing, bool)
    # Cycle statistics count moving frames only; the phase itself advances at standing_rate while standing.
    moving_time = _elapsed(np.where(standing, 0.0, 1.0))
    weighted_time = _elapsed(np.where(standing, standing_rate, 1.0))
    keep, mean_cycle = _drop_fake_events(event_phases, moving_time[event_frames], outlier_std)
    frames, targets = event_frames[keep], event_phases[keep]
    positions = weighted_time[frames]

    if len(frames) == 1:
        rate = 1.0 / default_cycle_frames if default_cycle_frames else 0.0
        return (targets[0] + rate * (weighted_time - positions[0])) % 1.0

    steps = _unwrapped_steps(moving_time[frames], targets, mean_cycle)
    unwrapped = targets[0] + np.concatenate([[0.0], np.cumsum(steps)])
    phase = np.interp(weighted_time, positions, unwrapped)
    first_rate = steps[0] / max(positions[1] - positions[0], 1e-9)
    last_rate = steps[-1] / max(positions[-1] - positions[-2], 1e-9)
    before, after = weighted_time < positions[0], weighted_time > positions[-1]
    phase[before] = unwrapped[0] - first_rate * (positions[0] - weighted_time[before])
    phase[after] = unwrapped[-1] + last_rate * (weighted_time[after] - positions[-1])
    return phase % 1.0


def phase_from_contacts(
    right_contact,
    left_contact,
    standing=None,
    standing_rate: float = DEFAULT_STANDING_RATE,
    outlier_std: float = DEFAULT_OUTLIER_STD,
    default_cycle_frames: float | None = None,
) -> np.ndarray:
    """Phase [F] in [0, 1): 0 at right touchdowns, 0.5 at left touchdowns (contact rising edges).

    right_contact / left_contact [F] bool: the foot is down (ankle OR toe joint in contact).
    standing [F] bool (optional): frames where the phase should nearly hold.
    """
    right_contact = np.asarray(right_contact, bool)
    right_events, left_events = touchdowns(right_contact), touchdowns(left_contact)
    frames = np.concatenate([right_events, left_events])
    targets = np.concatenate([np.zeros(len(right_events)), np.full(len(left_events), 0.5)])
    return phase_from_events(len(right_contact), frames, targets, standing, standing_rate, outlier_std, default_cycle_frames)


def root_height_valleys(height, dt: float, min_cycle_s: float = 0.8) -> np.ndarray:
    """Frames of the root-height valleys (one per step): scipy find_peaks on -height.

    min_cycle_s is the shortest gait CYCLE expected (two steps): valleys are at least half of it
    apart (0.8 s -> 0.4 s for walking; use ~0.5 s -> 0.25 s for running).
    """
    from scipy.signal import find_peaks

    height = np.asarray(height, float)
    distance = max(1, int(round(0.5 * min_cycle_s / dt)))
    prominence = 0.1 * float(np.std(height)) if len(height) else 0.0
    valleys, _ = find_peaks(-height, distance=distance, prominence=prominence)
    return valleys


def phase_from_root_height(height, dt: float, min_cycle_s: float = 0.8, outlier_std: float = DEFAULT_OUTLIER_STD) -> np.ndarray:
    """Fallback phase [F] when contacts are unusable: root-height valleys alternate 0 and 0.5.

    Which foot is down at a valley is unknown here, so the first valley is called 0.
    """
    valleys = root_height_valleys(height, dt, min_cycle_s)
    targets = 0.5 * (np.arange(len(valleys)) % 2)
    return phase_from_events(len(height), valleys, targets, outlier_std=outlier_std)


def unwrap_phase(phase) -> np.ndarray:
    """Cumulative phase [F] (cycles) from phase in [0, 1), assuming less than half a cycle per frame."""
    phase = np.asarray(phase, float)
    if len(phase) == 0:
        return phase.copy()
    step = (np.diff(phase) + 0.5) % 1.0 - 0.5
    return phase[0] + np.concatenate([[0.0], np.cumsum(step)])


def cycle_lengths(phase) -> np.ndarray:
    """Length in frames of every complete cycle (between phase-0 crossings), [C]."""
    cycles = np.floor(unwrap_phase(phase))
    starts = np.flatnonzero(np.diff(cycles) > 0) + 1
    return np.diff(starts).astype(float)


def cycle_strides(phase, root_positions, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """Per complete cycle: (mean speed m/s [C], stride length m [C]) of the root on the ground.

    A stride is one full phase cycle (two steps); its length is the root's horizontal path length.
    """
    cycles = np.floor(unwrap_phase(phase))
    starts = np.flatnonzero(np.diff(cycles) > 0) + 1
    horizontal = np.asarray(root_positions, float)[:, [0, 2]]
    path = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(horizontal, axis=0), axis=-1))])
    lengths = path[starts[1:]] - path[starts[:-1]]
    durations = np.diff(starts) * dt
    return lengths / np.maximum(durations, 1e-9), lengths


def stride_statistics(speeds, stride_lengths, bin_width: float = 0.25, min_cycles: int = 3) -> dict:
    """Stride length as a function of speed for the runtime: dphase = speed / stride_length * dt.

    Cycles are binned by speed (bin_width m/s); each bin with >= min_cycles cycles gives a knot
    (median speed, median stride length); `stride_length_at` interpolates between knots and holds
    the end values outside. Also a least-squares line for reference. JSON-serialisable.
    """
    speeds, stride_lengths = np.asarray(speeds, float), np.asarray(stride_lengths, float)
    if len(speeds) == 0:
        raise ValueError("no complete gait cycles to measure stride lengths from")
    bins = np.floor(speeds / bin_width).astype(int)
    knot_speed, knot_length = [], []
    for b in np.unique(bins):
        members = bins == b
        if members.sum() >= min(min_cycles, len(speeds)):
            knot_speed.append(float(np.median(speeds[members])))
            knot_length.append(float(np.median(stride_lengths[members])))
    if not knot_speed:
        knot_speed, knot_length = [float(np.median(speeds))], [float(np.median(stride_lengths))]
    if len(speeds) >= 2 and np.ptp(speeds) > 1e-6:
        slope, intercept = np.polyfit(speeds, stride_lengths, 1)
    else:
        slope, intercept = 0.0, float(np.mean(stride_lengths))
    return {
        "speed": knot_speed,
        "stride_length": knot_length,
        "linear": [float(intercept), float(slope)],
        "num_cycles": int(len(speeds)),
        "speed_range": [float(speeds.min()), float(speeds.max())],
    }


def stride_length_at(stride: dict, speed) -> np.ndarray:
    """Stride length (m per cycle) at the given speed(s) from a `stride_statistics` dict."""
    return np.interp(np.asarray(speed, float), stride["speed"], stride["stride_length"])
