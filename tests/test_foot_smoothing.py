"""A new foot pin lands (keeps the joint's incoming velocity, slowing) instead of stopping it in one tick, and a
released one leaves its pin as a spring (`pin_release_time`) instead of jumping to the network's speed."""
import math

import numpy as np
import pytest

from pfnn_core.runtime.feet import foot_rules
from pfnn_core.runtime.ik import (
    LANDING_SLIDE,
    empty_foot_locks,
    landing_keep,
    update_foot_locks,
)
from pfnn_core.runtime.release import RELEASE_FLOOR_SHARE
from pfnn_core.runtime.settings import RuntimeSettings

DT = 1 / 60


def _locks(locks, foot, contacts, **kwargs):
    options = dict(threshold=0.5, release_time=0.15, release_distance=0.2, dt=DT)
    options.update(kwargs)
    return update_foot_locks(locks, foot, contacts, **options)


def test_a_new_pin_lands_with_its_incoming_velocity_and_slides_a_bounded_distance():
    """A joint coming down onto the floor at 0.3 m/s while moving 0.45 m/s forward, pinned within
    the start height: with a landing time the pin keeps that velocity, a share exp(-dt / time) of it
    per tick, the forward part capped so it slides at most LANDING_SLIDE; the downward part ends on
    the floor level. Without one the pin holds where it started (the joint stopped in one tick)."""
    contacts, floor = np.array([[0.9]]), np.zeros((1, 1))
    velocity = np.array([0.45, -0.3, 0.0])
    start = np.array([0.0, 0.01, 0.0])
    for landing_time in (0.0, 0.02, 0.05):
        keep = landing_keep(landing_time, DT)
        locks = empty_foot_locks((1,), 1)
        before = (start - velocity * DT)[None, None]
        locks, shown = _locks(locks, start[None, None], contacts, floor=floor, start_height=0.05, snap_height=0.03,
                              shown_before=before, landing_time=landing_time)
        assert locks.active[0, 0]
        # the pin starts where the joint is shown (brought toward the floor level by the snap)
        np.testing.assert_allclose(shown[0, 0, [0, 2]], start[[0, 2]], atol=1e-12)
        assert 0.0 <= shown[0, 0, 1] < start[1]
        path = [shown[0, 0].copy()]
        for _ in range(40):  # the network's foot stays where it was pinned
            locks, shown = _locks(locks, start[None, None], contacts, floor=floor, start_height=0.05, snap_height=0.03,
                                  shown_before=shown, landing_time=landing_time)
            path.append(shown[0, 0].copy())
        path = np.array(path)
        slide = path[-1, 0] - path[0, 0]
        if landing_time == 0.0:
            assert keep == 0.0 and slide == 0.0
            continue
        assert keep == pytest.approx(math.exp(-DT / landing_time))
        flat_limit = LANDING_SLIDE * (1 - keep) / (keep * DT)
        flat = min(velocity[0], flat_limit)
        # sum over ticks of v dt keep^k, until the speed falls below 1 mm/s (then it rests)
        assert slide == pytest.approx(flat * DT * keep / (1 - keep), abs=2e-4)
        assert slide <= LANDING_SLIDE + 1e-9
        steps = np.diff(path[:, 0])
        moving = steps[steps > 1e-7]
        np.testing.assert_allclose(moving[1:] / moving[:-1], keep, rtol=1e-6)  # slowing by `keep` a tick
        assert path[:, 1].min() >= 0.0 and path[-1, 1] == pytest.approx(0.0, abs=1e-9)  # down onto the floor


def test_the_landing_time_is_a_live_setting_with_a_range():
    settings = RuntimeSettings()
    assert settings.limits("pin_landing_time") == (0.0, 0.1)
    settings.assign("pin_landing_time", "0.05")
    assert foot_rules(settings, DT).land_keep == pytest.approx(math.exp(-DT / 0.05))
    settings.assign("pin_landing_time", "0")
    assert foot_rules(settings, DT).land_keep == 0.0
    with pytest.raises(ValueError):
        settings.assign("pin_landing_time", "0.5")


# ---------------------------------------------------------------------------------------------
# The spring release (`pin_release_time`)


def _release_path(foot_path, release_tick, **kwargs):
    """A joint pinned on the floor at the origin while its contact is high, released at `release_tick`;
    the network's joint follows `foot_path` [T, 3]. Returns (shown [T, 3], locks after each tick)."""
    locks, floor = empty_foot_locks((1,), 1), np.zeros((1, 1))
    shown_path, states = [], []
    for tick, foot in enumerate(foot_path):
        contacts = np.array([[0.9 if tick < release_tick else 0.1]])
        locks, shown = _locks(locks, foot[None, None], contacts, floor=floor, start_height=0.05, snap_height=0.03,
                              **kwargs)
        shown_path.append(shown[0, 0].copy())
        states.append(locks)
    return np.array(shown_path), states


def _moving_foot(ticks, start_tick, velocity):
    """The network's joint at the origin until `start_tick`, then moving at `velocity` (m/s)."""
    t = np.maximum(np.arange(ticks) - start_tick, 0) * DT
    return t[:, None] * np.asarray(velocity)[None]


def test_a_spring_release_leaves_the_pin_at_rest_where_the_fade_jumped_to_the_network_speed():
    """The network's joint leaves the pin (at the origin) at 0.6 m/s, rising 0.3 m/s, one tick before
    the contact ends; in the release tick the joint is shown on its pin either way. In the next tick the
    fade (off) moves it by about the network's whole step (its velocity jumps from 0 to the network's);
    the spring starts from the offset x0 = -v dt with velocity -v (the shown joint at rest) and gives,
    one tick on, x1 = (x0 + (v0 + w x0) dt) exp(-w dt) (the closed form, w = 1 / T): a smaller first
    step, each next one larger (no jump in the joint's velocity)."""
    velocity = np.array([0.6, 0.3, 0.0])
    release = 10
    foot = _moving_foot(40, release - 1, velocity)
    network_step = np.linalg.norm(velocity) * DT
    faded, _ = _release_path(foot, release)
    assert np.linalg.norm(faded[release + 1] - faded[release]) == pytest.approx(network_step, rel=0.05)
    jump = np.linalg.norm(np.diff(faded, 2, axis=0), axis=1).max()
    assert jump >= network_step
    for time_constant in (0.03, 0.05, 0.1):
        shown, states = _release_path(foot, release, pin_release_time=time_constant)
        assert not states[release].active[0, 0] and states[release - 1].active[0, 0]
        np.testing.assert_allclose(shown[:release + 1], 0.0, atol=1e-12)  # held, then shown on the pin
        w = 1.0 / time_constant
        x0 = -velocity * DT
        x1 = (x0 + (-velocity + w * x0) * DT) * math.exp(-w * DT)
        np.testing.assert_allclose(shown[release + 1], foot[release + 1] + x1, atol=1e-12)
        steps = np.linalg.norm(np.diff(shown[release:], axis=0), axis=1)
        assert steps[0] < 0.6 * network_step and steps[1] > steps[0]  # it speeds up from rest
        # its largest change of velocity in a tick is below the fade's jump (the network's is 0 after it starts)
        assert np.linalg.norm(np.diff(shown, 2, axis=0), axis=1).max() < 0.6 * jump


def test_a_spring_release_reaches_the_network_joint_after_several_time_constants():
    """A pin 13 cm behind a network joint moving at 1 m/s when the contact ends: the offset stays inside
    the critically damped envelope (|x0| + (|v0| + w |x0|) t) exp(-w t), never overtakes the joint, and
    after ten time constants the shown joint is the network's exactly (weight 0, no offset left)."""
    time_constant, release = 0.05, 20
    foot = _moving_foot(release + 60, release - 8, [1.0, 0.0, 0.0])
    shown, states = _release_path(foot, release, pin_release_time=time_constant, release_distance=0.5)
    np.testing.assert_allclose(shown[:release + 1], 0.0, atol=1e-12)
    offset0 = abs(shown[release, 0] - foot[release, 0])
    assert offset0 == pytest.approx(8 * DT)
    w, v0 = 1.0 / time_constant, 1.0
    for k in range(release, len(foot)):
        t = (k - release) * DT
        gap = shown[k, 0] - foot[k, 0]
        assert abs(gap) <= (offset0 + (v0 + w * offset0) * t) * math.exp(-w * t) + 1e-9
        assert gap <= 0.0  # from behind, never overtaking
    done = release + int(round(10 * time_constant / DT))
    assert states[done].weight[0, 0] == 0.0
    np.testing.assert_array_equal(states[done].offset[0, 0], 0.0)
    np.testing.assert_array_equal(shown[done:], foot[done:])


def test_without_a_release_time_the_release_is_the_smoothstep_fade():
    """Off (0): the released offset fades as before, x0 smoothstep(1 - k dt / T) at the k-th tick with
    T = the lock release time (0.15 s; the offset is too small for the acceleration cap), hand-computed;
    passing 0 or leaving it out gives the same path to the bit."""
    release = 10
    foot = _moving_foot(40, release - 4, [0.3, 0.0, 0.0])
    shown, _ = _release_path(foot, release)
    explicit, _ = _release_path(foot, release, pin_release_time=0.0)
    np.testing.assert_array_equal(shown, explicit)
    offset0 = shown[release - 1] - foot[release]
    for k in range(release, 30):
        progress = max(1.0 - (k - release) * DT / 0.15, 0.0)
        smooth = progress * progress * (3.0 - 2.0 * progress)
        np.testing.assert_allclose(shown[k], foot[k] + offset0 * smooth, atol=1e-12)


def test_the_release_time_is_a_live_setting_with_a_range():
    settings = RuntimeSettings()
    assert settings.pin_release_time == 0.0 and foot_rules(settings, DT).release_rate == 0.0
    assert settings.limits("pin_release_time") == (0.0, 0.1)
    settings.assign("pin_release_time", "0.04")
    assert foot_rules(settings, DT).release_rate == pytest.approx(25.0)
    with pytest.raises(ValueError):
        settings.assign("pin_release_time", "0.2")


def test_a_spring_release_on_the_floor_slides_back_slower():
    """With `release_lift` the horizontal part of the offset decays at RELEASE_FLOOR_SHARE of the rate
    while the shown joint is on the floor (at full rate from `release_lift` up; the vertical part at
    full rate always): one tick of a joint released on the floor with the network's joint gliding along
    it matches the closed form at the reduced rate (and at the full rate without the lift)."""
    time_constant, release = 0.05, 10
    foot = _moving_foot(20, release - 1, [0.5, 0.0, 0.0])
    for lift, share in ((0.0, 1.0), (0.02, RELEASE_FLOOR_SHARE)):
        shown, _ = _release_path(foot, release, pin_release_time=time_constant, release_lift=lift)
        w = share / time_constant
        x0, v0 = -0.5 * DT, -0.5
        x1 = (x0 + (v0 + w * x0) * DT) * math.exp(-w * DT)
        assert shown[release + 1, 0] == pytest.approx(foot[release + 1, 0] + x1, abs=1e-12)
        assert shown[release + 1, 1] == pytest.approx(0.0, abs=1e-12)
