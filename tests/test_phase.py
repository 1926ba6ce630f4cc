"""Phase labels from contacts and from the root height; stride statistics."""

import numpy as np

from pfnn_core.data.phase_report import contact_phase_summary, save_contact_phase_plots
from pfnn_core.motion.phase import (
    cycle_lengths,
    cycle_strides,
    phase_from_contacts,
    phase_from_root_height,
    stride_length_at,
    stride_statistics,
    touchdowns,
)


def stepping(num_frames, right_downs, left_downs, stance=35, start_with_left_down=True):
    right, left = np.zeros(num_frames, bool), np.zeros(num_frames, bool)
    for frame in right_downs:
        right[frame:frame + stance] = True
    for frame in left_downs:
        left[frame:frame + stance] = True
    if start_with_left_down:
        left[:right_downs[0]] = True  # clip starts mid-stance: contact at frame 0 is no touchdown
    return right, left


def cyclic_difference(a, b):
    return np.abs((np.asarray(a) - np.asarray(b) + 0.5) % 1.0 - 0.5)


def test_known_touchdowns_give_linear_phase():
    right, left = stepping(160, [10, 70, 130], [40, 100])
    phase = phase_from_contacts(right, left)
    frames = np.arange(160)
    expected = ((frames - 10) / 60.0) % 1.0  # one cycle = 60 frames, 0 at frame 10
    assert np.all(cyclic_difference(phase, expected) < 1e-9)
    assert np.allclose(phase[[10, 70, 130]], 0.0) and np.allclose(phase[[40, 100]], 0.5)
    assert np.all((phase >= 0) & (phase < 1))


def test_frame_zero_contact_is_not_a_touchdown():
    right, left = stepping(160, [10, 70, 130], [40, 100])
    assert left[0] and 0 not in touchdowns(left)


def test_extrapolation_uses_neighbouring_rate():
    right, left = stepping(100, [30, 90], [60])
    phase = phase_from_contacts(right, left)
    assert abs(phase[0] - 0.5) < 1e-9  # 30 frames before a right touchdown, rate 1/60
    assert abs(phase[99] - 9 / 60) < 1e-9


def test_fake_short_cycle_is_dropped():
    right, left = stepping(220, [10, 70, 130, 190], [40, 100, 160])
    clean = phase_from_contacts(right, left)
    right[85:88] = False  # a shuffle: the right foot lifts and lands again mid-stance
    assert 88 in touchdowns(right)
    phase = phase_from_contacts(right, left)
    assert np.all(cyclic_difference(phase, clean) < 1e-9)


def test_standing_holds_phase_without_jumps():
    right, left = stepping(400, [10, 70, 250, 310], [40, 100, 280], stance=35)
    left[100:250] = True
    right[70:240] = True  # the right foot lifts at 240 and steps at 250
    standing = np.zeros(400, bool)
    standing[135:235] = True  # both feet planted and still
    phase = phase_from_contacts(right, left, standing=standing)
    step = (np.diff(phase) + 0.5) % 1.0 - 0.5
    assert np.all(step >= 0) and step.max() < 1.5 / 60  # never jumps, never runs backwards
    assert np.all(step[136:234] < 0.1 / 60)  # nearly holds while standing
    assert np.allclose(phase[[10, 70, 250, 310]], 0.0) and np.allclose(phase[[40, 100, 280]], 0.5)


def test_no_touchdowns_holds_still():
    still = np.ones(50, bool)
    assert np.all(phase_from_contacts(still, still) == 0.0)


def test_root_height_fallback_on_sine_bob():
    dt, step_s = 1 / 60, 0.55
    t = np.arange(600) * dt
    height = 0.9 + 0.02 * np.cos(2 * np.pi * t / step_s)  # valleys every step (half a cycle)
    phase = phase_from_root_height(height, dt, min_cycle_s=0.8)
    lengths = cycle_lengths(phase)
    assert np.allclose(lengths, 2 * step_s / dt, atol=1.0)
    valleys = np.round((np.arange(1, 18) - 0.5) * step_s / dt).astype(int)
    assert np.all(cyclic_difference(phase[valleys] * 2, 0.0) < 0.05)  # valleys land on 0 or 0.5


def test_stride_statistics_from_straight_walk():
    dt = 1 / 60
    frames = np.arange(600)
    phase = ((frames + 0.5) / 66.0) % 1.0
    root = np.zeros((600, 3))
    root[:, 2] = frames * dt * 1.2  # 1.2 m/s
    speeds, strides = cycle_strides(phase, root, dt)
    assert np.allclose(speeds, 1.2) and np.allclose(strides, 1.2 * 66 * dt)
    stats = stride_statistics(np.r_[speeds, [3.0] * 5], np.r_[strides, [2.6] * 5])
    assert np.isclose(stride_length_at(stats, 1.2), 1.2 * 66 * dt)
    assert np.isclose(stride_length_at(stats, 3.0), 2.6)
    assert np.isclose(stride_length_at(stats, 10.0), 2.6)  # held outside the measured range


def test_contact_phase_summary_and_plots_on_real_clips(tmp_path):
    from pathlib import Path

    from pfnn_core.motion import bvh

    folder = Path(__file__).resolve().parents[1] / "assets" / "bvh" / "bandai-namco-ds2"
    walk = bvh.load(str(folder / "dataset-2_walk_normal_002.bvh.gz"))
    summary = contact_phase_summary(walk)
    assert summary["phase_method"] == "contacts" and summary["cycles"] >= 5
    assert 62 <= summary["cycle_frames_median"] <= 70 and 0.45 < summary["toe_contact_share"] < 0.65
    stand = contact_phase_summary(bvh.load(str(folder / "dataset-2_raise-up-left-hand_normal_001.bvh.gz")))
    assert stand["toe_contact_share"] > 0.95 and stand["cycles"] == 0
    paths = save_contact_phase_plots(walk, str(tmp_path / "walk"))
    assert Path(paths[0]).stat().st_size > 1000 and paths[0].endswith(".png")
