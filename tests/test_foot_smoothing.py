"""A new foot pin lands (keeps the joint's incoming velocity, slowing) instead of stopping it in one tick."""
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
