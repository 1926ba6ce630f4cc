"""The recording journal: frames appended while recording come back exactly, from a clean journal, a
torn one and one whose writer was killed with SIGKILL mid-recording; fsync at least every second;
`recoverable` offers what a dead run left and never a live journal; disk trouble stops the journal
without an exception; `pfnn-data recover` writes the BVH headless."""
import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import BVH_DIR, ROOT
from disk_faults import fill, full_disk, read_only_folder  # noqa: F401  (fixtures)

from pfnn_core.data import inspector
from pfnn_core.math.quat import quat_from_angle_axis
from pfnn_core.motion import bvh, journal
from pfnn_core.skeleton import skeleton_dict

CLIP = BVH_DIR / "dataset-2_walk_normal_001.bvh.gz"


@pytest.fixture(scope="module")
def skeleton():
    return json.loads(json.dumps(skeleton_dict(bvh.load(CLIP))))  # as a checkpoint stores it


def frame(k: int, joints: int) -> journal.PoseFrame:
    """A pose that is a function of its index alone, so any frame can be checked on its own."""
    axes = np.stack([np.ones(joints), np.arange(joints) % 3, np.full(joints, k % 5 + 1.0)], axis=-1)
    return journal.PoseFrame(quat_from_angle_axis(np.full(joints, 0.01 * k), axes), np.array([0.01 * k, 0.9, -0.02 * k]))


class Clock:
    """Simulated time: each tick advances it by 1/60 s."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_frames_come_back_exactly_and_truncation_forgets_the_stepped_back_ones(tmp_path, skeleton):
    joints = len(skeleton["names"])
    recording = journal.RecordingJournal.start(tmp_path, skeleton, 1 / 60)
    for k in range(100):
        recording.append(frame(k, joints))
    recording.truncate(70)  # the simulation stepped back 30 ticks
    for k in range(70, 90):
        recording.append(frame(1000 + k, joints))
    recording.close(keep=True)
    contents = journal.read_journal(recording.path)
    shown = [frame(k, joints) for k in range(70)] + [frame(1000 + k, joints) for k in range(70, 90)]
    expected = bvh.motion_from_poses(skeleton, np.stack([f.local_rotations for f in shown]),
                                     np.stack([f.root_translation for f in shown]), 1 / 60)
    motion = contents.motion
    assert motion.num_frames == recording.frame_count == 90 and contents.ignored_bytes == 0
    np.testing.assert_array_equal(motion.rotations, expected.rotations)
    np.testing.assert_array_equal(motion.positions, expected.positions)
    assert motion.names == expected.names and motion.frame_time == 1 / 60


def test_a_torn_tail_costs_only_the_torn_record(tmp_path, skeleton):
    joints = len(skeleton["names"])
    recording = journal.RecordingJournal.start(tmp_path, skeleton, 1 / 60)
    for k in range(5):
        recording.append(frame(k, joints))
    recording.close(keep=True)
    data = recording.path.read_bytes()
    record = 1 + 8 * (4 * joints + 3) + 4
    for cut in range(1, record + 1, 37):
        recording.path.write_bytes(data[:-cut])
        contents = journal.read_journal(recording.path)
        assert contents.motion.num_frames == 4 and contents.ignored_bytes == record - cut
    damaged = bytearray(data)
    damaged[-record - 10] ^= 0xFF  # a flipped byte in frame 4 of 5: frames 0-3 stay
    recording.path.write_bytes(bytes(damaged))
    assert journal.read_journal(recording.path).motion.num_frames == 3


def test_appends_are_fsynced_at_least_every_second(tmp_path, skeleton, monkeypatch):
    joints = len(skeleton["names"])
    synced = []
    monkeypatch.setattr(journal.os, "fsync", lambda descriptor: synced.append(clock.now))
    clock = Clock()
    recording = journal.RecordingJournal.start(tmp_path, skeleton, 1 / 60, clock=clock)
    for k in range(600):  # ten seconds at 60 Hz
        clock.now = (k + 1) / 60
        recording.append(frame(k, joints))
    # the header and its folder at once, then once a second of recording
    assert synced == pytest.approx([0.0, 0.0] + [float(s) for s in range(1, 11)])
    recording.close()
    assert not recording.path.exists()


def test_a_recording_killed_with_sigkill_is_recovered_to_the_last_frame_shown(tmp_path, skeleton):
    """A real process records at 60 Hz (simulated time: as fast as it can) and is killed mid-recording;
    every frame it reported as captured comes back, equal to what it captured."""
    folder = tmp_path / "journals"
    (tmp_path / "skeleton.json").write_text(json.dumps(skeleton))
    child = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(ROOT / 'tests')!r})
        from test_journal import frame
        from pfnn_core.motion import journal
        skeleton = json.load(open({str(tmp_path / 'skeleton.json')!r}))
        recording = journal.RecordingJournal.start({str(folder)!r}, skeleton, 1 / 60)
        k = 0
        while True:
            recording.append(frame(k, len(skeleton["names"])))
            k += 1
            if k % 60 == 0:
                print(k, flush=True)
    """)
    process = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        for line in process.stdout:
            shown = int(line)
            if shown >= 3600:  # a minute of recording
                break
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == -signal.SIGKILL
    [left] = journal.recoverable(folder)
    assert left.problem is None and left.frames >= shown and left.duration_s == pytest.approx(left.frames / 60)
    motion = journal.read_journal(left.path).motion
    joints = len(skeleton["names"])
    for k in (0, 1, shown // 2, shown - 1, left.frames - 1):
        np.testing.assert_array_equal(motion.rotations[k], frame(k, joints).local_rotations)
        np.testing.assert_array_equal(motion.positions[k, 0], frame(k, joints).root_translation)
    out = tmp_path / "recovered.bvh"
    assert inspector.main(["recover", str(left.path), "--out", str(out)]) == 0
    again = bvh.load(out, scale=motion.scale)
    np.testing.assert_allclose(again.positions[:, 0], motion.positions[:, 0], atol=1e-6)
    dots = np.abs(np.sum(again.rotations * motion.rotations, axis=-1))
    assert np.degrees(2 * np.arccos(np.clip(dots, -1, 1))).max() < 1e-4
    assert not left.path.exists() and journal.recoverable(folder) == []


def test_recoverable_skips_live_and_empty_journals_and_names_broken_ones(tmp_path, skeleton):
    joints = len(skeleton["names"])
    live = journal.RecordingJournal.start(tmp_path, skeleton, 1 / 60)
    live.append(frame(0, joints))
    empty = journal.RecordingJournal.start(tmp_path, skeleton, 1 / 60)
    empty.close(keep=True)
    (tmp_path / "broken.pfnn-journal").write_bytes(b"PFNN-RECORDING-JOURNAL 1\n{not json\n" + b"\0" * 100)
    assert journal.in_use(live.path) and not journal.in_use(empty.path)
    [broken] = journal.recoverable(tmp_path)
    assert broken.path.name == "broken.pfnn-journal" and "header line is damaged" in broken.problem
    live.close(keep=True)  # the process that wrote it is gone: now it is offered
    assert [s.path for s in journal.recoverable(tmp_path)] == [live.path, broken.path]  # oldest first
    journal.discard(broken.path)
    assert [s.frames for s in journal.recoverable(tmp_path)] == [1]


def test_pfnn_data_recover_messages(tmp_path, skeleton, capsys):
    joints = len(skeleton["names"])
    recording = journal.RecordingJournal.start(tmp_path, skeleton, 1 / 60)
    for k in range(30):
        recording.append(frame(k, joints))
    recording.close(keep=True)
    out = tmp_path / "out.bvh"
    assert inspector.main(["recover", str(recording.path), "--out", str(out), "--keep"]) == 0
    assert "recovered 30 frames (0.5 s" in capsys.readouterr().out and recording.path.exists()
    assert bvh.load(out).num_frames == 30
    assert inspector.main(["recover", str(recording.path), "--out", str(tmp_path / "out.txt")]) == 2
    assert "must be a .bvh or .bvh.gz" in capsys.readouterr().err
    not_a_journal = tmp_path / "x.pfnn-journal"
    not_a_journal.write_bytes(b"HIERARCHY\n")
    assert inspector.main(["recover", str(not_a_journal), "--out", str(out)]) == 2
    assert f"pfnn-data: {not_a_journal}: not a recording journal" in capsys.readouterr().err


def test_recover_onto_a_full_disk_keeps_the_journal(full_disk, tmp_path, skeleton, capsys):  # noqa: F811
    joints = len(skeleton["names"])
    recording = journal.RecordingJournal.start(tmp_path, skeleton, 1 / 60)
    for k in range(30):
        recording.append(frame(k, joints))
    recording.close(keep=True)
    fill(full_disk)
    out = full_disk / "out.bvh"
    assert inspector.main(["recover", str(recording.path), "--out", str(out)]) == 1
    assert capsys.readouterr().err.strip() == (f"pfnn-data: {out}: cannot write the file (no space left on the device); "
                                               f"the journal {recording.path} is kept")
    assert recording.path.exists() and not out.exists()


def test_a_full_disk_stops_the_journal_without_an_exception(full_disk, skeleton):  # noqa: F811
    joints = len(skeleton["names"])
    fill(full_disk, keep=5 * 4096)
    recording = journal.RecordingJournal.start(full_disk, skeleton, 1 / 60)
    assert recording.active
    for k in range(200):  # 200 frames of 22 joints need 150 kB: the disk fills on the way
        recording.append(frame(k, joints))
    assert not recording.active and "no space left on the device" in recording.failure
    on_disk = recording.frame_count
    assert 0 < on_disk < 200
    recording.close(keep=True)
    contents = journal.read_journal(recording.path)
    assert contents.motion.num_frames == on_disk
    np.testing.assert_array_equal(contents.motion.rotations[-1], frame(on_disk - 1, joints).local_rotations)


def test_a_read_only_folder_stops_the_journal_at_its_start(read_only_folder, skeleton):  # noqa: F811
    folder, make_read_only = read_only_folder
    make_read_only()
    recording = journal.RecordingJournal.start(folder, skeleton, 1 / 60)
    recording.append(frame(0, len(skeleton["names"])))
    assert not recording.active and recording.frame_count == 0 and str(folder) in recording.failure
    recording.close()
    assert os.listdir(folder) == []
