"""Issue 25, the viewer's side: a take is journaled while it is recorded and a real viewer process killed
with SIGKILL mid-take loses no frame it captured (every frame bit-equal to what it reported); the next
start offers the take back (recover to the recordings folder, discard, later) and `pfnn-data recover`
rebuilds it headless; the Editor's edit list autosaves and is offered back. Viewers run headless (EGL)."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

import numpy as np
import pytest
from conftest import BVH_DIR, DEFAULT_MODEL, ROOT, click_widget

from app.jobs.edits import EditAutosave, panel_document, restore_document
from app.jobs.recorder import Recorder, journal_folder
from app.ui.sections.editor import EditorPanel, PieceRow
from pfnn_core import edit
from pfnn_core.data import inspector
from pfnn_core.motion import bvh, journal
from pfnn_core.skeleton import skeleton_dict

WALK = BVH_DIR / "dataset-2_walk_normal_001.bvh.gz"
KILL_AFTER_TICKS = int(os.environ.get("PFNN_KILL_AFTER_TICKS", "600"))  # 10 s of recording (3600: a minute)

# The real viewer (`pfnn-viewer`'s main) with one line per captured frame: its count and the CRC-32 of
# the pose as the journal stores it (float64, little endian), so the test knows exactly what was shown.
CHILD = textwrap.dedent("""
    import sys, zlib
    import numpy as np
    from app.jobs import recorder
    capture = recorder.Recorder.capture
    def reporting_capture(self, source):
        capture(self, source)
        pose = np.concatenate([np.asarray(self.local_rotations[-1], "<f8").ravel(),
                               np.asarray(self.root_translations[-1], "<f8").ravel()])
        print(self.frame_count, zlib.crc32(pose.tobytes()), flush=True)
    recorder.Recorder.capture = reporting_capture
    from app.cli import main
    sys.exit(main(sys.argv[1:]))
""")


def pose_crc(motion: bvh.Motion, k: int) -> int:
    pose = np.concatenate([motion.rotations[k].astype("<f8").ravel(), motion.positions[k, 0].astype("<f8").ravel()])
    return zlib.crc32(pose.tobytes())


@pytest.fixture
def work(tmp_path, monkeypatch):
    folder = tmp_path / "work"
    monkeypatch.setenv("PFNN_VIEWER_HOME", str(folder))
    monkeypatch.setenv("PFNN_VIEWER_CONFIG", str(tmp_path / "config"))
    return folder


def open_viewer(model=DEFAULT_MODEL):
    from app.viewer import Viewer

    viewer = Viewer(640, 400, model_path=model, visible=False, vsync=False)
    viewer.run_frames(2)
    return viewer


def kill_mid_take(work: Path, tmp_path: Path) -> list[int]:
    """Run the real viewer headless recording a walk, SIGKILL it after KILL_AFTER_TICKS captured frames;
    the CRCs of the frames it reported, in order."""
    script = tmp_path / "walk.json"
    script.write_text(json.dumps({"segments": [{"duration": 3.0, "move": [0, 1]},
                                               {"duration": 600.0, "move": [0.6, 0.8], "run": True}]}))
    command = [sys.executable, "-c", CHILD, "--headless", "--model", str(DEFAULT_MODEL), "--script", str(script),
               "--frames", "1000000", "--width", "160", "--height", "96", "--view", "skeleton", "--no-panel",
               "--record", str(work / "recordings")]
    environment = {**os.environ, "PFNN_VIEWER_HOME": str(work), "PYGLET_HEADLESS": "true", "PYOPENGL_PLATFORM": "egl"}
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT, env=environment)
    shown = []
    try:
        for line in process.stdout:
            count, crc = map(int, line.split())
            assert count == len(shown) + 1, "one line per captured frame, in order"
            shown.append(crc)
            if count >= KILL_AFTER_TICKS:
                break
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == -signal.SIGKILL and len(shown) >= KILL_AFTER_TICKS
    return shown


def test_a_viewer_killed_mid_take_loses_no_frame_and_the_next_start_recovers_it(work, tmp_path):
    shown = kill_mid_take(work, tmp_path)
    [left] = journal.recoverable(journal_folder(work))
    assert left.problem is None
    # SIGKILL loses nothing written: at least every frame reported (the child may have captured one more)
    assert len(shown) <= left.frames <= len(shown) + 2
    motion = journal.read_journal(left.path).motion
    assert [pose_crc(motion, k) for k in range(len(shown))] == shown  # bit-equal to what was shown
    assert not list((work / "recordings").glob("*.bvh")), "the take itself was never saved"

    headless = tmp_path / "headless.bvh"
    assert inspector.main(["recover", str(left.path), "--out", str(headless), "--keep"]) == 0
    assert bvh.load(headless, scale=motion.scale).num_frames == left.frames and left.path.exists()

    viewer = open_viewer()
    try:
        state = viewer.state
        assert state.recovery.open and [t.path for t in state.recovery.takes] == [left.path]
        click_widget(viewer, "recover_take_0")
        viewer.run_frames(1)
        assert state.recovery.error == "" and not state.recovery.open and state.recovery.takes == []
        [recovered] = list((work / "recordings").glob("*.bvh"))
        assert recovered.name == f"pfnn-{left.started.replace('-', '').replace(':', '').replace('T', '-')}-recovered.bvh"
        again = bvh.load(recovered, scale=motion.scale)
        assert again.num_frames == left.frames
        np.testing.assert_allclose(again.positions[:, 0], motion.positions[:, 0], atol=1e-5)
        dots = np.abs(np.sum(again.rotations * motion.rotations, axis=-1))
        assert np.degrees(2 * np.arccos(np.clip(dots, -1, 1))).max() < 1e-3  # BVH text keeps 6 decimals
        assert not left.path.exists() and state.record.last_path == str(recovered)
    finally:
        viewer.close()


def _left_journal(work: Path, frames: int = 30) -> Path:
    motion = bvh.load(WALK)
    recording = journal.RecordingJournal.start(journal_folder(work), skeleton_dict(motion), 1 / 60)
    for k in range(frames):
        recording.append(journal.PoseFrame(motion.rotations[k], motion.positions[k, 0]))
    recording.close(keep=True)  # as a killed run leaves it (the lock goes with the process)
    return recording.path


def test_later_keeps_the_take_for_the_next_start_and_discard_removes_it(work):
    path = _left_journal(work)
    viewer = open_viewer()
    try:
        state = viewer.state
        assert state.recovery.open and len(state.recovery.takes) == 1
        click_widget(viewer, "recovery_later")
        viewer.run_frames(1)
        assert not state.recovery.open and path.exists() and len(state.recovery.takes) == 1
        state.open_sections = ("Record",)
        viewer.run_frames(2)
        state.request("recovery", ("show", None))  # the Record section's '1 unsaved takes...' button
        viewer.run_frames(2)
        assert state.recovery.open
        click_widget(viewer, "discard_take_0")
        viewer.run_frames(1)
        assert not path.exists() and state.recovery.takes == [] and not state.recovery.open
        assert not list((work / "recordings").glob("*.bvh"))
    finally:
        viewer.close()


def test_a_take_is_journaled_while_recording_stepping_back_cuts_it_and_saving_removes_it(work, tmp_path):
    viewer = open_viewer()
    try:
        assert not viewer.state.recovery.open
        viewer.state.record.path = str(tmp_path / "take.bvh")
        viewer.state.request("record_start")
        viewer.run_frames(40)
        recorder = viewer.captures.recorder
        live_path = recorder.journal.path
        assert journal.in_use(live_path) and journal.recoverable(journal_folder(work)) == []  # live: not offered
        assert recorder.frame_count == recorder.journal.frame_count == 39  # the take starts after frame 1's ticks
        viewer.step_ticks(-15)
        assert recorder.frame_count == recorder.journal.frame_count == 39 - 15
        memory = recorder.motion()
        on_disk = journal.read_journal(live_path).motion  # what is on disk now is what is in memory
        np.testing.assert_array_equal(on_disk.rotations, memory.rotations)
        np.testing.assert_array_equal(on_disk.positions, memory.positions)
        viewer.state.request("record_stop")
        viewer.run_frames(1)
        assert viewer.state.record.error == "" and not live_path.exists()
        saved = bvh.load(tmp_path / "take.bvh", scale=memory.scale)
        np.testing.assert_allclose(saved.positions[:, 0], memory.positions[:, 0], atol=1e-5)
    finally:
        viewer.close()


def test_closing_the_viewer_mid_take_saves_the_take(work):
    viewer = open_viewer()
    viewer.state.request("record_start")
    viewer.run_frames(10)
    viewer.close()
    [take] = list((work / "recordings").glob("*.bvh"))
    assert bvh.load(take).num_frames >= 9 and not list(journal_folder(work).iterdir())


# ---- the Editor's edit list ---------------------------------------------------------------------

class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def _panel_with_pieces() -> EditorPanel:
    panel = EditorPanel()
    panel.pieces = [PieceRow(str(WALK), 0.5, 2.0, False, 1.0, 10.0), PieceRow(str(WALK), 3.0, 4.5, True, 1.5, 10.0)]
    panel.kind, panel.seconds = "crossfade", 0.4
    return panel


def test_autosave_writes_a_change_within_the_interval_and_removes_what_is_saved(tmp_path):
    clock = Clock()
    autosave = EditAutosave(tmp_path / "a" / "edit-list-1.json", interval_s=2.0, clock=clock)
    panel = EditorPanel()
    autosave.update(panel)
    assert not autosave.path.exists()  # nothing to lose
    panel.pieces = _panel_with_pieces().pieces
    autosave.update(panel)
    written = json.loads(autosave.path.read_text())["editor"]
    assert written == panel_document(panel) and written["pieces"][1]["mirror"] is True
    panel.pieces[0].end = 1.5
    clock.now += 1.0
    autosave.update(panel)
    assert json.loads(autosave.path.read_text())["editor"]["pieces"][0]["end"] == 2.0  # within the interval
    clock.now += 1.0
    autosave.update(panel)
    assert json.loads(autosave.path.read_text())["editor"]["pieces"][0]["end"] == 1.5
    panel.saved_document = panel_document(panel)  # 'Save list' wrote the same
    clock.now += 2.0
    autosave.update(panel)
    assert not autosave.path.exists()


def test_restore_puts_back_every_field_and_refuses_a_damaged_document():
    source = _panel_with_pieces()
    restored = EditorPanel()
    restore_document(restored, json.loads(json.dumps(panel_document(source))), "autosave.json")
    assert panel_document(restored) == panel_document(source)
    damaged = panel_document(source)
    damaged["seconds"] = "long"
    with pytest.raises(edit.EditError, match=r"autosave.json: field 'seconds'"):
        restore_document(EditorPanel(), damaged, "autosave.json")
    damaged = panel_document(source)
    del damaged["pieces"][1]["start"]
    before = panel_document(restored)
    with pytest.raises(edit.EditError, match=r"pieces\[1\]"):
        restore_document(restored, damaged, "autosave.json")
    assert panel_document(restored) == before  # a refused document changes nothing


def test_an_edit_list_left_unsaved_is_offered_back_and_restored(work):
    first = open_viewer()
    try:
        first.state.editor.new_piece = str(WALK)
        first.state.request("editor", "add")
        first.run_frames(2)
        first.state.editor.pieces[0].start, first.state.editor.pieces[0].end = 1.25, 3.5
        first.recovery.autosave.interval_s = 0.0
        first.run_frames(2)
        expected = panel_document(first.state.editor)
        saved = first.recovery.autosave.path
        assert json.loads(saved.read_text())["editor"] == expected
        os.rename(saved, saved.with_name(saved.name.replace(f"-{os.getpid()}.", "-999999999.")))  # a run gone
        second = open_viewer()
        try:
            state = second.state
            assert state.recovery.open and [s.pieces for s in state.recovery.edits] == [1]
            click_widget(second, "restore_edits_0")  # its request runs at the end of the click's last frame
            assert state.recovery.error == "" and panel_document(state.editor) == expected
            second.run_frames(1)  # (drawn, the section's sliders hold their values as float32)
            assert "Editor" in state.open_sections and state.recovery.edits == []
            assert json.loads(second.recovery.autosave.path.read_text())["editor"] == expected
        finally:
            second.close()
    finally:
        first.state.editor.pieces = []
        first.close()
    assert not first.recovery.autosave.path.exists()  # emptied, then closed: nothing left to offer


def test_recorder_without_a_model_says_so():
    with pytest.raises(ValueError, match="load a model"):
        Recorder.for_source(object())
