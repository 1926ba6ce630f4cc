"""Shared test setup: headless OpenGL through EGL, paths to the bundled data, small thread counts."""
import os
from pathlib import Path

# Headless GL must be chosen before pyglet or PyOpenGL is imported anywhere.
os.environ.setdefault("PYGLET_HEADLESS", "true")
os.environ.setdefault("PYOPENGL_PLATFORM", "egl")
os.environ.setdefault("MPLBACKEND", "Agg")

import pytest

ROOT = Path(__file__).resolve().parents[1]
BVH_DIR = ROOT / "assets" / "bvh"
DEFAULT_MODEL = ROOT / "assets" / "models" / "default.safetensors"


@pytest.fixture(scope="session")
def bvh_dir() -> Path:
    return BVH_DIR


@pytest.fixture(scope="session")
def bundled_bvh_files() -> list[Path]:
    return sorted(BVH_DIR.glob("*.bvh"))
