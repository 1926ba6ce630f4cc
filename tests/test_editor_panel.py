"""The Editor section in a real headless viewer window: pieces added from paths and from the file browser,
a preview playing in the 3D view through the Playback section, phase and contact curves with the cuts
drawn, export, the edit list saved and loaded, "train on this", relative paths in the work folder, and
bad input shown in the panel while the viewer keeps running."""
import json
from pathlib import Path

import numpy as np
import pytest
from pyglet.window import mouse

from pfnn_core.motion import bvh

ROOT = Path(__file__).resolve().parents[1]
WIDTH, HEIGHT = 1100, 1000
WALK = "dataset-2_walk_normal_{:03d}.bvh.gz"
RUN = "dataset-2_run_normal_{:03d}.bvh.gz"


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    return {"work": tmp_path_factory.mktemp("work"), "config": tmp_path_factory.mktemp("config")}


@pytest.fixture(scope="module")
def viewer(random_checkpoint, tmp_path_factory, folders):
    from app.viewer import Viewer

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PFNN_VIEWER_HOME", str(folders["work"]))
        patch.setenv("PFNN_VIEWER_CONFIG", str(folders["config"]))
        app = Viewer(WIDTH, HEIGHT, model_path=random_checkpoint, visible=False, vsync=False)
        app.state.open_sections = ("Editor",)
        app.state.show_help = False
        app.state.editor.preview_path = str(tmp_path_factory.mktemp("preview") / "preview.bvh")
        yield app
        app.close()


@pytest.fixture
def editor(viewer, tmp_path):
    """The viewer on the live character with an empty editor whose files go to tmp_path."""
    from app.ui.sections.editor import EditorPanel

    viewer.state.take_requests()
    if viewer.state.playback.active:
        viewer.back_to_live()
    preview = viewer.state.editor.preview_path
    viewer.state.editor = EditorPanel(preview_path=preview, list_path=str(tmp_path / "edit.json"),
                                      out_path=str(tmp_path / "edit.bvh"), train_dir=str(tmp_path / "training"))
    viewer.run_frames(1)
    return viewer


def add_pieces(viewer, bvh_dir, ranges):
    for name, start, end in ranges:
        viewer.state.editor.new_piece = str(bvh_dir / name)
        viewer.state.request("editor", "add")
        viewer.run_frames(1)
        row = viewer.state.editor.pieces[-1]
        assert row.duration == pytest.approx(bvh.load(bvh_dir / name).duration) and row.end == pytest.approx(row.duration)
        row.start, row.end = start, end


def click(viewer, name):
    """A real mouse click (move, press, release) in the middle of a widget the panel drew last frame."""
    x0, y0, x1, y1 = viewer.state.field_rects[name]
    x, y = (x0 + x1) / 2, HEIGHT - (y0 + y1) / 2  # pyglet's y goes up
    for event, args in (("on_mouse_motion", (x, y, 0, 0)), ("on_mouse_press", (x, y, mouse.LEFT, 0)),
                        ("on_mouse_release", (x, y, mouse.LEFT, 0))):
        viewer.window.dispatch_event(event, *args)
        viewer.run_frames(1)


def colour_pixels(image, predicate) -> int:
    red, green, blue = (image[..., k].astype(int) for k in range(3))
    return int(np.sum(predicate(red, green, blue)))


def cut_pixels(image):  # the yellow cut lines of the piece plots
    return colour_pixels(image, lambda r, g, b: (r > 220) & (g > 190) & (b < 110))


def error_pixels(image):
    return colour_pixels(image, lambda r, g, b: (r > 200) & (g < 140) & (b < 140))


def test_preview_plays_the_spliced_sequence_and_the_curves_show_the_cuts(editor, bvh_dir, tmp_path):
    add_pieces(editor, bvh_dir, [(WALK.format(1), 0.5, 4.0), (RUN.format(1), 0.3, 2.2)])
    before = cut_pixels(editor.read_pixels())
    editor.state.request("editor", "preview")
    editor.run_frames(2)  # the preview is built after the UI pass, then the playback opens on the next frame
    panel = editor.state.editor
    assert panel.error == "" and "Playback" in panel.message
    assert editor.state.playback.active and editor.state.playback.path == panel.preview_path
    preview = bvh.load(panel.preview_path)
    assert editor.source.clip.duration == pytest.approx(preview.duration)
    assert len(panel.curves) == 2 and panel.report[0].startswith("0->1: cut")
    start, end = panel.curves[1].cut
    assert 0.3 - 0.5 <= start <= 0.3 + 0.5  # moved within the search window
    time_before = editor.source.time
    editor.run_frames(30)
    assert editor.source.time == pytest.approx(time_before + 0.5, abs=1e-6)  # it plays
    image = editor.read_pixels()
    assert cut_pixels(image) > before + 50  # two plots, two cut lines each
    from app.jobs.capture import save_png

    save_png(image, tmp_path / "editor_panel.png")  # to look at


def test_export_save_load_and_train_on_this(editor, bvh_dir, tmp_path):
    add_pieces(editor, bvh_dir, [(WALK.format(2), 1.0, 4.0), (WALK.format(3), 2.0, 5.0)])
    panel = editor.state.editor
    panel.pieces[1].mirror = True
    editor.state.request("editor", "export")
    editor.run_frames(1)
    assert panel.error == "" and panel.exported == str(tmp_path / "edit.bvh")
    exported = bvh.load(tmp_path / "edit.bvh")
    assert exported.num_frames > 300
    editor.state.request("editor", "save")
    editor.run_frames(1)
    saved_rows = [(r.file, r.start, r.end, r.mirror) for r in panel.pieces]
    panel.pieces = []
    editor.state.request("editor", "load")
    editor.run_frames(1)
    assert [(r.file, r.start, r.end, r.mirror) for r in panel.pieces] == saved_rows
    editor.state.request("editor", "train")
    editor.run_frames(1)
    copied = tmp_path / "training" / "edit.bvh"
    assert panel.error == "" and copied.exists()
    assert editor.state.train.bvh_dir == str(tmp_path / "training")
    assert bvh.load(copied).num_frames == exported.num_frames


def test_bad_input_is_shown_in_the_panel_and_the_viewer_keeps_running(editor, bvh_dir):
    running = editor.source
    before = error_pixels(editor.read_pixels())
    editor.state.editor.new_piece = str(bvh_dir / "no_such_clip.bvh")
    editor.state.request("editor", "add")
    editor.run_frames(2)
    panel = editor.state.editor
    assert "no_such_clip.bvh" in panel.error and panel.pieces == []
    assert error_pixels(editor.read_pixels()) > before + 20  # drawn in red
    add_pieces(editor, bvh_dir, [(WALK.format(1), 0.5, 4.0), (WALK.format(2), 1.0, 1.1)])
    editor.state.request("editor", "preview")
    editor.run_frames(2)
    assert "pieces[1]" in panel.error and "shorter than the transition" in panel.error
    assert editor.source is running and not editor.state.playback.active
    editor.state.request("editor", "preview")
    panel.pieces = []
    editor.run_frames(1)
    assert "empty" in panel.error


def test_a_piece_chosen_in_the_file_browser_is_added(editor, bvh_dir, folders):
    panel, browser = editor.state.editor, editor.state.browser
    panel.new_piece = str(bvh_dir / WALK.format(4))  # the browser opens in this file's folder, on this file
    editor.run_frames(1)
    click(editor, "edit_piece_browse")
    assert browser.open and browser.target == "edit_piece" and browser.kind == "bvh"
    assert browser.folder == str(bvh_dir) and browser.name == WALK.format(4)
    assert WALK.format(4) in [entry.name for entry in browser.entries]
    click(editor, "browser_confirm")
    editor.run_frames(1)  # the choice queues "add", done after the UI pass
    assert not browser.open and panel.error == ""
    assert [row.file for row in panel.pieces] == [str(bvh_dir / WALK.format(4))] and panel.new_piece == ""
    assert panel.pieces[0].duration == pytest.approx(bvh.load(bvh_dir / WALK.format(4)).duration)
    assert json.loads((folders["config"] / "recent.json").read_text())["last"]["bvh"] == str(bvh_dir)


def test_relative_paths_are_in_the_work_folder(editor, bvh_dir, folders):
    work = folders["work"]
    (work / "clips").mkdir(exist_ok=True)
    (work / "clips" / "walk.bvh.gz").write_bytes((bvh_dir / WALK.format(1)).read_bytes())
    panel = editor.state.editor
    panel.new_piece = "clips/walk.bvh.gz"
    editor.state.request("editor", "add")
    editor.run_frames(1)
    assert panel.error == "" and panel.pieces[0].file == str(work / "clips" / "walk.bvh.gz")
    panel.pieces[0].start, panel.pieces[0].end = 1.0, 3.0
    panel.list_path, panel.out_path, panel.train_dir = "edits/mine.json", "edits/mine.bvh", "edits/training"
    for action in ("save", "train"):
        editor.state.request("editor", action)
        editor.run_frames(1)
        assert panel.error == ""
    assert (work / "edits" / "mine.json").is_file() and (work / "edits" / "mine.bvh").is_file()
    assert (work / "edits" / "training" / "mine.bvh").is_file()
    assert editor.state.train.bvh_dir == str(work / "edits" / "training")
    assert not (ROOT / "edits").exists() and not (ROOT / "clips").exists()  # not the current folder
