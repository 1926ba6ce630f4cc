"""Every writer of pfnn_core on a full file system (a 64 KiB tmpfs) and on a folder that turns
read-only between start and finish: a WriteError (an OSError) whose message names the file and says
why, the previous file byte for byte as it was, no temporary or partial file left; the commands say
so in one line and exit 1. Also the atomic write itself: the old contents until the rename, the new
ones after it, never a mix, whatever fails in between."""
import json
import os

import numpy as np
import pytest
import torch
from conftest import ROOT
from disk_faults import fill, full_disk, listing, read_only_folder, when_writing  # noqa: F401  (fixtures)
from matplotlib.figure import Figure

from pfnn_core import files
from pfnn_core.drive import cli as drive_cli
from pfnn_core.editing import cli as edit_cli
from pfnn_core.editing.document import EditList, Piece, save_edit_list
from pfnn_core.evaluation import report
from pfnn_core.models.checkpoint import write_checkpoint
from pfnn_core.motion import bvh

TINY = ROOT / "tests" / "data" / "tiny.bvh"
PREVIOUS = b"the previous contents\n"


def _figure():
    figure = Figure(figsize=(4, 3), dpi=80)
    figure.subplots().plot(np.sin(np.linspace(0, 6, 200)))
    return figure


WRITERS = {
    "bvh.save": (".bvh", lambda path: bvh.save(bvh.load(TINY), path)),
    "bvh.save gzip": (".bvh.gz", lambda path: bvh.save(bvh.load(TINY), path)),
    "checkpoint": (".safetensors", lambda path: write_checkpoint(path, "pfnn", {"w": torch.zeros(8_000)}, None, {})),
    "edit list": (".json", lambda path: save_edit_list(EditList("walk", (Piece("walk.bvh", 0.5, 2.0),)), path)),
    "evaluation report": (".md", lambda path: report.write_report(path, [], {"model": "m.safetensors"}, [])),
    "evaluation results": (".json", lambda path: report.write_results(path, [], {"model": "m.safetensors"})),
    "evaluation plot": (".png", lambda path: files.write_figure(path, _figure())),
    "drive log": (".csv", lambda path: drive_cli.write_log(path, {name: np.arange(50.0) for name in drive_cli.LOG_COLUMNS})),
    "text": (".txt", lambda path: files.write_text(path, "new contents " * 1000)),
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_each_writer_on_a_full_disk_keeps_the_previous_file(writer, full_disk):  # noqa: F811
    suffix, write = WRITERS[writer]
    path = full_disk / f"output{suffix}"
    path.write_bytes(PREVIOUS)
    filler = fill(full_disk)
    before = listing(full_disk)
    with pytest.raises(files.WriteError) as failure:
        write(path)
    assert str(failure.value) == f"{path}: cannot write the file (no space left on the device)"
    assert isinstance(failure.value, OSError) and failure.value.filename == str(path)
    assert path.read_bytes() == PREVIOUS
    assert listing(full_disk) == before
    filler.unlink()
    write(path)  # with room again the same call writes the file
    assert path.read_bytes() != PREVIOUS and listing(full_disk) == sorted([path.name])


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_each_writer_on_a_folder_turned_read_only_keeps_the_previous_file(writer, read_only_folder, monkeypatch):  # noqa: F811
    folder, make_read_only = read_only_folder
    suffix, write = WRITERS[writer]
    path = folder / f"output{suffix}"
    path.write_bytes(PREVIOUS)
    before = listing(folder)
    with when_writing(make_read_only, monkeypatch) as switched:
        with pytest.raises(files.WriteError) as failure:
            write(path)
    assert switched == [path], "the folder turned read-only while this writer ran"
    reason = "the file system is read-only" if os.geteuid() == 0 else "permission denied (is the folder read-only?)"
    assert str(failure.value) == f"{path}: cannot write the file ({reason})"
    assert path.read_bytes() == PREVIOUS and listing(folder) == before


def test_a_failure_after_the_temporary_file_leaves_the_old_contents_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "clip.bvh"
    path.write_bytes(PREVIOUS)

    def torn_rename(source, destination):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", torn_rename)
    with pytest.raises(files.WriteError, match="no space left"):
        files.write_bytes(path, b"new")
    assert path.read_bytes() == PREVIOUS and listing(tmp_path) == ["clip.bvh"]


def test_an_interrupt_mid_write_leaves_the_old_contents_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "model.safetensors"
    path.write_bytes(PREVIOUS)
    real_write = os.write

    def interrupted(descriptor, data):
        real_write(descriptor, bytes(data[:10]))
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        files.write_bytes(path, b"x" * 1000)
    assert path.read_bytes() == PREVIOUS and listing(tmp_path) == ["model.safetensors"]


def test_written_files_are_whole_and_get_ordinary_permissions(tmp_path):
    path = files.write_text(tmp_path / "a.json", json.dumps({"x": 1}))
    assert json.loads(path.read_text()) == {"x": 1}
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask
    with pytest.raises(files.WriteError, match="the folder does not exist"):
        files.write_text(tmp_path / "missing" / "a.json", "{}")
    with pytest.raises(files.WriteError, match="the path is a folder"):
        files.write_text(tmp_path, "{}")


def test_replacing_renames_a_streamed_file_only_when_it_is_complete(tmp_path):
    path = tmp_path / "video.mp4"
    path.write_bytes(PREVIOUS)
    with pytest.raises(RuntimeError):
        with files.replacing(path) as temporary:
            assert temporary.suffix == ".mp4" and temporary.parent == tmp_path
            temporary.write_bytes(b"half a video")
            raise RuntimeError("the encoder failed")
    assert path.read_bytes() == PREVIOUS and listing(tmp_path) == ["video.mp4"]
    with files.replacing(path) as temporary:
        temporary.write_bytes(b"a whole video")
    assert path.read_bytes() == b"a whole video" and listing(tmp_path) == ["video.mp4"]


# ---- the commands say it in one line -------------------------------------------------------------

def test_pfnn_edit_on_a_full_disk_says_so_and_exits_1(full_disk, capsys):  # noqa: F811
    out = full_disk / "edit.bvh"
    out.write_bytes(PREVIOUS)
    fill(full_disk)
    code = edit_cli.main([str(ROOT / "scripts" / "edits" / "walk_run.json"), "--out", str(out)])
    assert code == edit_cli.EXIT_WRITE_FAILED == 1
    assert capsys.readouterr().err.strip() == f"pfnn-edit: {out}: cannot write the file (no space left on the device)"
    assert out.read_bytes() == PREVIOUS


def test_pfnn_drive_on_a_read_only_folder_says_so_and_exits_1(read_only_folder, random_checkpoint, capsys):  # noqa: F811
    folder, make_read_only = read_only_folder
    script = ROOT / "scripts" / "drives" / "idle.json"
    (folder / "motion.bvh").write_bytes(PREVIOUS)
    make_read_only()
    code = drive_cli.main(["--script", str(script), "--out", str(folder), "--model", str(random_checkpoint),
                           "--device", "cpu"])
    assert code == drive_cli.EXIT_WRITE_FAILED == 1
    err = capsys.readouterr().err
    assert f"pfnn-drive: {folder / 'motion.bvh'}: cannot write the file (" in err
    assert (folder / "motion.bvh").read_bytes() == PREVIOUS and listing(folder) == ["motion.bvh"]
