"""The viewer's writers on a full disk (a 64 KiB tmpfs) and on a folder turned read-only while they
write: a take, a screenshot, a video, the Editor's export and its autosave each give one clear line in their
section, leave the earlier files as they were and no partial file, and the viewer runs on; a take that
could not be saved stays in its journal and is offered for recovery. pfnn-eval --out on a full disk
says so and exits 1."""

from pathlib import Path

import numpy as np
import pytest
from conftest import BVH_DIR, ROOT, make_random_checkpoint
from disk_faults import fill, full_disk, listing, read_only_folder, when_writing  # noqa: F401  (fixtures)

from app.jobs.edits import EditAutosave
from app.ui.sections.editor import EditorPanel, PieceRow
from pfnn_core.motion import bvh

WALK = BVH_DIR / "dataset-2_walk_normal_001.bvh.gz"
PREVIOUS = b"an earlier file\n"
FULL = "no space left on the device"


@pytest.fixture(scope="module")
def viewer(walk_motion, tmp_path_factory):
    from app.viewer import Viewer

    model = make_random_checkpoint(walk_motion, tmp_path_factory.mktemp("ckpt") / "writers.safetensors")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PFNN_VIEWER_HOME", str(tmp_path_factory.mktemp("work")))
        patch.setenv("PFNN_VIEWER_CONFIG", str(tmp_path_factory.mktemp("config")))
        app = Viewer(480, 300, model_path=model, visible=False, vsync=False)
        yield app
        app.close()


def _runs_on(viewer) -> None:
    """The viewer goes on simulating and drawing after the failure."""
    before = viewer.sim_time
    viewer.run_frames(5)
    assert viewer.sim_time == pytest.approx(before + 5 / 60) and np.all(np.isfinite(viewer.cur_frames[0].joint_pos))


def _take(viewer, folder: Path) -> None:
    viewer.state.record.path = f"{folder}/"
    viewer.state.request("record_start")
    viewer.run_frames(20)
    viewer.state.request("record_stop")
    viewer.run_frames(1)


def test_a_take_on_a_full_disk_says_so_keeps_the_folder_and_is_offered_for_recovery(viewer, full_disk):  # noqa: F811
    (full_disk / "earlier.bvh").write_bytes(PREVIOUS)
    filler = fill(full_disk)
    before = listing(full_disk)
    _take(viewer, full_disk)
    state = viewer.state
    assert FULL in state.record.error and "kept on disk" in state.record.error and str(full_disk) in state.record.error
    assert listing(full_disk) == before and (full_disk / "earlier.bvh").read_bytes() == PREVIOUS
    _runs_on(viewer)
    assert state.recovery.open and len(state.recovery.takes) == 1 and state.recovery.takes[0].frames >= 19
    filler.unlink()  # room again: the offer writes the take where it was asked for
    state.request("recovery", ("recover", str(state.recovery.takes[0].path)))
    viewer.run_frames(1)
    [recovered] = [p for p in full_disk.glob("*.bvh") if p.name != "earlier.bvh"]
    assert recovered.name.endswith("-recovered.bvh") and bvh.load(recovered).num_frames >= 19
    assert state.recovery.takes == [] and not state.recovery.open


def test_a_take_on_a_folder_turned_read_only_says_so_and_leaves_nothing(viewer, read_only_folder, monkeypatch):  # noqa: F811
    folder, make_read_only = read_only_folder
    (folder / "earlier.bvh").write_bytes(PREVIOUS)
    before = listing(folder)
    with when_writing(make_read_only, monkeypatch) as switched:
        _take(viewer, folder)
    assert switched and ("read-only" in viewer.state.record.error or "permission" in viewer.state.record.error)
    assert listing(folder) == before and (folder / "earlier.bvh").read_bytes() == PREVIOUS
    _runs_on(viewer)
    for take in viewer.state.recovery.takes:  # the kept journal, not this test's business beyond being offered
        viewer.recovery.action(("discard", str(take.path)))


def test_a_screenshot_on_a_full_disk_says_so_and_leaves_no_partial_file(viewer, full_disk):  # noqa: F811
    (full_disk / "earlier.png").write_bytes(PREVIOUS)
    viewer.state.capture.folder = str(full_disk)
    try:
        fill(full_disk)
        before = listing(full_disk)
        viewer.state.request("save_screenshot")
        viewer.run_frames(1)
        error = viewer.state.capture.error
        assert FULL in error and str(full_disk) in error
        assert listing(full_disk) == before and (full_disk / "earlier.png").read_bytes() == PREVIOUS
        _runs_on(viewer)
    finally:
        viewer.state.capture.folder, viewer.state.capture.error = "captures", ""


def test_a_screenshot_in_a_folder_turned_read_only_leaves_nothing(viewer, read_only_folder, monkeypatch):  # noqa: F811
    folder, make_read_only = read_only_folder
    viewer.state.capture.folder = str(folder)
    try:
        before = listing(folder)
        with when_writing(make_read_only, monkeypatch) as switched:
            viewer.state.request("save_screenshot")
            viewer.run_frames(1)
        assert switched and str(folder) in viewer.state.capture.error and listing(folder) == before
        _runs_on(viewer)
    finally:
        viewer.state.capture.folder, viewer.state.capture.error = "captures", ""


def _video(viewer, folder: Path, during=None) -> None:
    """Record 20 frames of video into `folder` (`during()` after 10 of them), then stop."""
    viewer.state.capture.folder = str(folder)
    viewer.state.request("video_start")
    viewer.run_frames(10)
    if during is not None:
        during()
    viewer.run_frames(10)
    viewer.state.request("video_stop")
    viewer.run_frames(1)


def test_a_video_on_a_full_disk_says_so_and_leaves_no_partial_file(viewer, full_disk):  # noqa: F811
    (full_disk / "earlier.mp4").write_bytes(PREVIOUS)
    try:
        fill(full_disk)
        before = listing(full_disk)
        _video(viewer, full_disk)
        capture = viewer.state.capture
        assert not capture.video_recording and viewer.captures.video is None
        assert capture.error.startswith(f"Could not record {full_disk}/pfnn-") and FULL in capture.error
        assert capture.error.count(str(full_disk)) == 1 and capture.error in viewer.state.toast_text
        assert listing(full_disk) == before and (full_disk / "earlier.mp4").read_bytes() == PREVIOUS
        _runs_on(viewer)
    finally:
        viewer.state.capture.folder, viewer.state.capture.error = "captures", ""


def _read_only_while_written(folder: Path, make_read_only):
    """Turn the folder read-only while the encoder has its file open; returns the undo. A remount of a
    file system with a file open for writing is refused, so as root the folder gets a read-only bind
    mount of itself instead (what is open stays writable, nothing new can be made or named there)."""
    import os
    import subprocess

    if os.geteuid() != 0:
        make_read_only()
        return lambda: None
    subprocess.run(["mount", "--bind", str(folder), str(folder)], check=True, capture_output=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=True, capture_output=True)
    return lambda: subprocess.run(["umount", str(folder)], capture_output=True)


def test_a_video_in_a_folder_turned_read_only_while_recording_leaves_nothing(viewer, read_only_folder):  # noqa: F811
    folder, make_read_only = read_only_folder
    (folder / "earlier.mp4").write_bytes(PREVIOUS)
    before = listing(folder)
    undo = []
    try:
        _video(viewer, folder, during=lambda: undo.append(_read_only_while_written(folder, make_read_only)))
        capture = viewer.state.capture
        assert not capture.video_recording and viewer.captures.video is None
        assert capture.error.startswith(f"Could not record {folder}/pfnn-") and capture.error.count(str(folder)) == 1
        assert "read-only" in capture.error and "Error" not in capture.error
        assert listing(folder) == before and (folder / "earlier.mp4").read_bytes() == PREVIOUS
        _runs_on(viewer)
    finally:
        for step in undo:
            step()
        viewer.state.capture.folder, viewer.state.capture.error = "captures", ""


def test_the_editors_export_on_a_full_disk_keeps_the_earlier_export(viewer, full_disk):  # noqa: F811
    panel = viewer.state.editor
    out = full_disk / "edit.bvh"
    out.write_bytes(PREVIOUS)
    duration = bvh.load(WALK).duration
    panel.pieces = [PieceRow(str(WALK), 0.5, 2.5, duration=duration), PieceRow(str(WALK), 3.0, 5.0, duration=duration)]
    panel.out_path = str(out)
    try:
        fill(full_disk)
        before = listing(full_disk)
        viewer.state.request("editor", "export")
        viewer.run_frames(1)
        assert panel.error == f"{out}: cannot write the file ({FULL})"
        assert out.read_bytes() == PREVIOUS and listing(full_disk) == before
        _runs_on(viewer)
    finally:
        panel.pieces, panel.error, panel.out_path = [], "", EditorPanel.out_path


def test_the_autosave_on_a_full_disk_says_so_and_keeps_its_last_file(full_disk):  # noqa: F811
    panel = EditorPanel()
    panel.pieces = [PieceRow(str(WALK), 0.5, 2.5, duration=10.0)]
    autosave = EditAutosave(full_disk / "edit-list.json", interval_s=0.0)
    autosave.update(panel)
    kept = autosave.path.read_bytes()
    fill(full_disk)
    before = listing(full_disk)
    panel.pieces.append(PieceRow(str(WALK), 3.0, 5.0, duration=10.0))
    autosave.update(panel)
    assert autosave.error == f"The edit list could not be autosaved: {autosave.path}: cannot write the file ({FULL})"
    assert autosave.path.read_bytes() == kept and listing(full_disk) == before


def test_pfnn_eval_on_a_full_disk_says_so_exits_1_and_keeps_the_earlier_report(full_disk, capsys):  # noqa: F811
    from pfnn_core.evaluation import cli

    out = full_disk / "eval"
    out.mkdir()
    (out / "report.md").write_bytes(PREVIOUS)
    fill(full_disk)
    code = cli.main(["--quick", "--scripts", str(ROOT / "scripts" / "drives" / "walk_forward.json"), "--out", str(out),
                     "--threads", "1"])
    error = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 1 and error.startswith(f"pfnn-eval: {out}") and error.endswith(f"({FULL})")
    assert (out / "report.md").read_bytes() == PREVIOUS
    assert [p for p in out.rglob("*") if p.is_file()] == [out / "report.md"]  # no partial or temporary file
