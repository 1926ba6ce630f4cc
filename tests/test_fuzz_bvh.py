"""The BVH reader under a fuzzer (Hypothesis; a fixed seed and bounded example counts, so CI runs the
same cases each time in a few seconds): byte- and token-level mutations of real files (plain and
gzip) and generated hierarchies either load into a Motion that passes independent invariants and
survives a save/load round trip (a generated valid file: into exactly the values it was written
from), or raise BVHError naming the file and a line inside it; never another exception, a hang or
memory beyond a bound. The demands live in `fuzz_cases`; the long run is scripts/fuzz_readers.py.
The last tests show each demand failing on a reader that breaks it."""
import gzip
import time

import numpy as np
import pytest
from fuzz_cases import (
    GeneratedBVH,
    bvh_seeds,
    byte_mutation,
    check_bvh,
    generated_bvh,
    run_bounded,
    token_mutation,
    write_generated,
)
from hypothesis import HealthCheck, given, settings

from pfnn_core.motion import bvh

SEEDS = bvh_seeds()
FUZZ = settings(derandomize=True, database=None, deadline=None, print_blob=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large, HealthCheck.filter_too_much])


@settings(FUZZ, max_examples=200)
@given(data=byte_mutation(SEEDS))
def test_byte_mutations_of_real_files(data, tmp_path):
    check_bvh(data, tmp_path)


@settings(FUZZ, max_examples=200)
@given(data=token_mutation(SEEDS))
def test_token_mutations_of_real_files(data, tmp_path):
    check_bvh(data, tmp_path)


@settings(FUZZ, max_examples=60)
@given(data=byte_mutation([gzip.compress(seed, mtime=0) for seed in SEEDS]))
def test_byte_mutations_of_gzip_files(data, tmp_path):
    check_bvh(data, tmp_path, name="case.bvh.gz")


@settings(FUZZ, max_examples=80)
@given(case=generated_bvh())
def test_generated_hierarchies(case, tmp_path):
    outcome = check_bvh(case.text.encode("utf-8"), tmp_path, case)
    assert outcome == "loaded" or not case.valid


def test_the_generator_writes_files_the_reader_takes_back_exactly(tmp_path):
    """The generated-values demand on a hand-made case: two joints, partial channels, an End Site."""
    case = GeneratedBVH("", True, ["Hips", "Leg L"], [-1, 0], np.array([[0.0, 1.0, 2.0], [3.0, -4.0, 0.5]]),
                        [["Yposition", "Zrotation"], ["Xrotation", "Yrotation"]],
                        np.array([[1.5, 30.0, 91.0, -90.0], [0.0, -180.0, 45.0, 12.25]]), 1 / 30,
                        {1: np.array([0.0, -7.0, 0.0])})
    case.text = write_generated(case, "\n", lower_case=True)
    assert check_bvh(case.text.encode(), tmp_path, case) == "loaded"


# ---- the demands fail on readers that break them -------------------------------------------------

def test_the_demands_catch_another_exception_a_slow_reader_and_an_unnamed_file(tmp_path):
    path = tmp_path / "x.bvh"
    path.write_text("x")

    def wrong_error(p):
        raise KeyError("Hips")

    def slow(p):
        time.sleep(0.3)

    def unnamed(p):
        raise bvh.BVHError("line 1: expected HIERARCHY")

    def greedy(p):
        return np.ones(24_000_000)  # 192 MB for a one-byte file

    for reader, expected, time_bound_s in ((wrong_error, "KeyError instead of BVHError", 10.0), (slow, "took", 0.2),
                                           (unnamed, "does not name the file", 10.0), (greedy, "peaked at", 30.0)):
        with pytest.raises(AssertionError, match=expected):
            run_bounded(reader, path, bvh.BVHError, 1, time_bound_s=time_bound_s)


def test_the_demands_catch_a_motion_that_cannot_be_right(tmp_path, monkeypatch):
    real_load = bvh.load

    def duplicate_names(path, scale=None):
        motion = real_load(path, scale)
        motion.names = [motion.names[0]] * motion.num_joints
        return motion

    monkeypatch.setattr(bvh, "load", duplicate_names)
    with pytest.raises(AssertionError, match="unique"):
        check_bvh(SEEDS[0], tmp_path)


def test_the_demands_catch_a_round_trip_that_loses_a_rotation(tmp_path, monkeypatch):
    real_save = bvh.save

    def lossy_save(motion, path):
        motion = motion.copy()
        motion.rotations[..., 1:] *= -1.0  # every rotation inverted
        real_save(motion, path)

    monkeypatch.setattr(bvh, "save", lossy_save)
    with pytest.raises(AssertionError, match="round trip"):
        check_bvh(SEEDS[0], tmp_path)
