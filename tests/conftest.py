"""Shared test setup: headless OpenGL through EGL, paths to the bundled data, small thread counts."""
import os
from pathlib import Path

# Headless GL must be chosen before pyglet or PyOpenGL is imported anywhere.
os.environ.setdefault("PYGLET_HEADLESS", "true")
os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
os.environ.setdefault("MPLBACKEND", "Agg")

import pytest

from pfnn_core.features.layout import make_layouts
from pfnn_core.features.samples import clip_features
from pfnn_core.skeleton import skeleton_dict

ROOT = Path(__file__).resolve().parents[1]
BVH_DIR = ROOT / "assets" / "bvh" / "bandai-namco-ds2"
DEFAULT_MODEL = ROOT / "assets" / "models" / "default.safetensors"


@pytest.fixture(scope="session", autouse=True)
def private_dataset_cache(tmp_path_factory):
    """pfnn-train keeps built datasets in the user's ~/.cache by default: tests use a folder of their own."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PFNN_DATASET_CACHE", str(tmp_path_factory.mktemp("dataset-cache")))
        yield


@pytest.fixture(scope="session", autouse=True)
def private_viewer_config(tmp_path_factory):
    """The viewer's settings (recent folders, the panel's layout) go to a folder of this test session, not the
    user's ~/.config; a test that names its own folder (PFNN_VIEWER_CONFIG) still gets it."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PFNN_VIEWER_CONFIG", str(tmp_path_factory.mktemp("viewer-config")))
        yield


@pytest.fixture(scope="session", autouse=True)
def body_mesh_cache(tmp_path_factory) -> Path:
    """Generated body meshes go to a folder of this test session, not the user's cache."""
    folder = tmp_path_factory.mktemp("body-mesh-cache")
    os.environ["PFNN_CACHE_DIR"] = str(folder)
    return folder


@pytest.fixture(scope="session")
def bvh_dir() -> Path:
    return BVH_DIR


@pytest.fixture(scope="session")
def bundled_bvh_files() -> list[Path]:
    from pfnn_core.motion import bvh

    return bvh.find_files(BVH_DIR)


def make_random_checkpoint(motion, path, extra_meta=None, hidden_size=32) -> Path:
    """A randomly initialised small PFNN with the real layout, skeleton, norms and stride of one clip:
    enough for code that runs a model without judging its motion."""
    import numpy as np
    import torch

    from pfnn_core.models.checkpoint import save_checkpoint
    from pfnn_core.models.pfnn.model import PFNN, ModelConfig
    from pfnn_core.motion.phase import stride_statistics

    layouts = make_layouts(motion.num_joints)
    clip = clip_features(motion, layouts)
    norm = (clip.x.mean(0), np.maximum(clip.x.std(0), 1e-3), clip.y.mean(0), np.maximum(clip.y.std(0), 1e-3))
    torch.manual_seed(0)
    model = PFNN(ModelConfig(clip.x.shape[1], clip.y.shape[1], hidden_size=hidden_size))
    meta = {"skeleton": skeleton_dict(motion),
            "stride": stride_statistics(clip.cycle_speeds, clip.stride_lengths),
            "gait_speeds": {"walk": 1.2, "run": 3.4}, **(extra_meta or {})}
    return save_checkpoint(path, model, layouts, norm, meta)


@pytest.fixture(scope="session")
def walk_motion():
    from pfnn_core.motion import bvh

    return bvh.load(BVH_DIR / "dataset-2_walk_normal_001.bvh.gz")


@pytest.fixture(scope="session")
def random_checkpoint(walk_motion, tmp_path_factory) -> Path:
    return make_random_checkpoint(walk_motion, tmp_path_factory.mktemp("ckpt") / "random.safetensors")


def click_widget(viewer, name, x_fraction=0.5):
    """A real mouse click (move, press, release) at a widget the viewer's panel drew last frame
    (`state.field_rects[name]`, panel coordinates from the top)."""
    from pyglet.window import mouse

    x0, y0, x1, y1 = viewer.state.field_rects[name]
    x, y = x0 + (x1 - x0) * x_fraction, viewer.window.height - (y0 + y1) / 2  # pyglet's y goes up
    viewer.window.dispatch_event("on_mouse_motion", x, y, 0, 0)
    viewer.run_frames(1)
    viewer.window.dispatch_event("on_mouse_press", x, y, mouse.LEFT, 0)
    viewer.run_frames(1)
    viewer.window.dispatch_event("on_mouse_release", x, y, mouse.LEFT, 0)
    viewer.run_frames(1)
