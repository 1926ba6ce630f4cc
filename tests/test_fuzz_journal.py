"""The recording journal's reader under a fuzzer (fixed seed, bounded examples): a real journal with
bytes flipped, inserted, deleted, duplicated or cut either gives back whole frames on a skeleton
that passes `bvh.check_motion` (never more frames than were written, each one written), or raises
JournalError naming the file; never another exception, a hang or memory beyond a bound."""
import json

import numpy as np
import pytest
from conftest import BVH_DIR
from fuzz_cases import byte_mutation, run_bounded
from hypothesis import HealthCheck, given, settings
from test_journal import frame

from pfnn_core.motion import bvh, journal
from pfnn_core.skeleton import skeleton_dict

FUZZ = settings(derandomize=True, database=None, deadline=None, max_examples=200,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])
WRITTEN = 12


@pytest.fixture(scope="module")
def seed(tmp_path_factory):
    skeleton = json.loads(json.dumps(skeleton_dict(bvh.load(BVH_DIR / "dataset-2_walk_normal_001.bvh.gz"))))
    recording = journal.RecordingJournal.start(tmp_path_factory.mktemp("journal"), skeleton, 1 / 60)
    for k in range(WRITTEN):
        recording.append(frame(k, len(skeleton["names"])))
    recording.close(keep=True)
    return recording.path.read_bytes()


def test_mutated_journals(seed, tmp_path):
    @FUZZ
    @given(data=byte_mutation([seed]))
    def mutated(data):
        path = tmp_path / "case.pfnn-journal"
        path.write_bytes(data)
        outcome, value = run_bounded(journal.read_journal, path, journal.JournalError, len(data))
        if outcome == "ok":
            motion = value.motion
            bvh.check_motion(motion)
            assert 1 <= motion.num_frames <= WRITTEN
            for k in range(motion.num_frames):  # every record carries a CRC-32: a frame back is the frame written
                np.testing.assert_array_equal(motion.rotations[k], frame(k, motion.num_joints).local_rotations)
    mutated()
