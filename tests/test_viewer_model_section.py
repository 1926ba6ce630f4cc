"""Issue 26: at a narrow panel (a 1024x600 window) the Model section's lines stay inside the panel,
through the real headless window: the running path shortened in its middle with the file name kept
(the whole path in its tooltip), the lines about the model wrapped at the panel's edge."""

import pytest
from conftest import make_random_checkpoint

from app.ui.sections.model import ELLIPSIS, elide_middle


def test_elide_middle_keeps_the_end_and_fits():
    path = "/home/someone/a/long/folder/of/models/default.safetensors"
    assert elide_middle(path, lambda text: True) == path
    shortened = elide_middle(path, lambda text: len(text) <= 30)
    assert len(shortened) <= 30 and ELLIPSIS in shortened and shortened.endswith("default.safetensors"[-15:])
    assert shortened.startswith("/home/")
    assert elide_middle(path, lambda text: len(text) <= 3) == ELLIPSIS


@pytest.fixture(scope="module")
def narrow(walk_motion, tmp_path_factory):
    from app.viewer import Viewer

    folder = tmp_path_factory.mktemp("models") / "a-folder-with-a-rather-long-name" / "and-another-one-below-it"
    folder.mkdir(parents=True)
    model = make_random_checkpoint(walk_motion, folder / "a-model-with-a-long-descriptive-name.safetensors")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PFNN_VIEWER_HOME", str(tmp_path_factory.mktemp("work")))
        patch.setenv("PFNN_VIEWER_CONFIG", str(tmp_path_factory.mktemp("config")))
        app = Viewer(1024, 600, model_path=model, visible=False, vsync=False)
        yield app, model
        app.close()


def test_the_model_sections_lines_stay_inside_a_narrow_panel(narrow):
    viewer, model = narrow
    viewer.state.open_sections = ("Model",)
    viewer.run_frames(3)
    rects = viewer.state.field_rects
    right = rects["panel"][2]
    running = rects["model_running"]
    assert running[2] <= right  # the path fits on its line
    summary = [rects[name] for name in rects if name.startswith("model_summary_")]
    assert summary and all(rect[2] <= right for rect in summary)
    assert viewer.state.model.path == str(model)  # the tooltip's text: the whole path
