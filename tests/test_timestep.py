import math

import pytest

from pfnn_core.runtime.timestep import FixedTimestep


def test_exact_step_counts_for_given_real_dts():
    ts = FixedTimestep(dt=1 / 60, max_substeps=4)
    assert ts.advance(1 / 60) == 1
    assert ts.advance(1 / 30) == 2
    assert ts.advance(0.0) == 0
    # Three frames of a third of a step make exactly one step, on the third frame.
    assert [ts.advance(1 / 180) for _ in range(3)] == [0, 0, 1]
    # 144 Hz display: 144 frames of real time make 60 steps.
    ts = FixedTimestep(dt=1 / 60)
    assert sum(ts.advance(1 / 144) for _ in range(144)) == 60


def test_substep_cap_drops_time_instead_of_spiralling():
    ts = FixedTimestep(dt=1 / 60, max_substeps=4)
    assert ts.advance(1.0) == 4  # a one-second hitch
    assert ts.alpha < 1.0
    assert ts.dropped_time == pytest.approx(1.0 - 4 / 60, abs=1 / 60)
    # The next ordinary frame runs an ordinary number of steps.
    assert ts.advance(1 / 60) in (1, 2)
    assert ts.advance(1 / 60) == 1


def test_alpha_is_the_fraction_of_a_step_left():
    ts = FixedTimestep(dt=0.01, max_substeps=4)
    ts.advance(0.025)
    assert ts.alpha == pytest.approx(0.5)
    for real_dt in (0.0, 0.003, 0.0099999, 0.01, 0.05, 1.0, 0.017):
        ts.advance(real_dt)
        assert 0.0 <= ts.alpha < 1.0


def test_rejects_bad_input():
    with pytest.raises(ValueError):
        FixedTimestep(dt=0.0)
    with pytest.raises(ValueError):
        FixedTimestep(max_substeps=0)
    with pytest.raises(ValueError):
        FixedTimestep().advance(-0.1)
    with pytest.raises(ValueError):
        FixedTimestep().advance(math.nan)
