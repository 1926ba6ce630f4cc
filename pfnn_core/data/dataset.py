"""`TrainingData` (the packed samples of a BVH set), the BVH files of a folder, and what keys a built set in
the cache: the files' contents, the feature settings and a digest of the code that makes the samples."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pfnn_core.features.contract import SIM_FPS
from pfnn_core.features.layout import ModelLayout
from pfnn_core.motion import bvh

FEATURE_VERSION = 4  # bump when the features computed from the same files change (keys the dataset cache)


# Modules whose code decides the samples: their source is part of the dataset cache key.
FEATURE_CODE_MODULES = (
    "motion.bvh", "math.quat", "math.planar", "math.easing", "motion.kinematics", "motion.contacts", "motion.phase",
    "motion.root", "motion.gait_labels", "skeleton", "features.contract", "features.layout", "features.samples",
    "data.build", "data.statistics", "data.dataset", "data.checks", "data.labels",
)


@dataclass
class TrainingData:
    """Packed samples of a BVH set (ARCHITECTURE.md 'Training data'); arrays are float32/int64."""

    x: np.ndarray  # [N, nx] raw (unnormalised), packed with layout.x
    y: np.ndarray  # [N, ny] raw, packed with layout.y
    phase: np.ndarray  # [N] in [0, 1)
    clip: np.ndarray  # [N] clip id; mirrored copies share their source clip's id
    next_index: np.ndarray  # [N] row of the next sample of the same clip, -1 at the end
    layout: ModelLayout  # (x, y) layouts; `x_layout, y_layout = data.layout`
    clip_names: list  # clip id -> source file name
    skeleton: dict
    stride: dict
    gait_speeds: dict
    mirrored: np.ndarray = None  # [N] bool
    standing: np.ndarray = None  # [N] bool: calm standing samples
    summary: dict = field(default_factory=dict)  # counts, hash, build seconds
    style: np.ndarray = None  # [N] int64: index into `styles` of each row's style
    styles: list = field(default_factory=list)  # style names, in the order of the model's style input
    clip_labels: list = field(default_factory=list)  # clip id -> {"style": ..., "content": ...}
    style_stats: dict = field(default_factory=dict)  # style -> `style_statistics` (speeds, strides, minutes)
    floor_heights: list = field(default_factory=list)  # [4] planted height (m) of each contact joint
    stance: dict = field(default_factory=dict)  # `standing_stance`: the feet under the hips when standing


def bvh_paths(paths_or_folder) -> list[Path]:
    """Sorted BVH files (.bvh, .bvh.gz) from folders (searched recursively), files, or a list of them;
    ValueError when there are none."""
    items = [paths_or_folder] if isinstance(paths_or_folder, (str, os.PathLike)) else list(paths_or_folder)
    found = []
    for item in items:
        item = Path(item)
        if item.is_dir():
            found += bvh.find_files(item)
        elif item.exists():
            found.append(item)
        else:
            raise ValueError(f"{item}: no such file or folder")
    if not found:
        raise ValueError(f"{paths_or_folder}: no BVH files found")
    return sorted(set(found))


def data_hash(paths, settings: dict) -> str:
    digest = hashlib.sha256(json.dumps(settings, sort_keys=True).encode())
    for path in paths:
        digest.update(Path(path).name.encode())
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()[:16]


def feature_config(mirror: bool, standing_replicas: int, seed: int, clip_labels=(), label_rule: str = "filename") -> dict:
    """Everything besides the files that decides the built samples; the dataset cache's key holds it,
    with the clip labels and the rule that gave them, and a digest of the code that makes the samples
    (so an edit can never be served stale samples)."""
    return {"mirror": bool(mirror), "standing_replicas": int(standing_replicas), "seed": int(seed),
            "fps": SIM_FPS, "version": FEATURE_VERSION, "code": _feature_code_digest(), "label_rule": str(label_rule),
            "labels": [[label.style, label.content] for label in clip_labels]}


def _feature_code_digest() -> str:
    import importlib

    digest = hashlib.sha256()
    for name in FEATURE_CODE_MODULES:
        digest.update(Path(importlib.import_module(f"pfnn_core.{name}").__file__).read_bytes())
    return digest.hexdigest()[:16]
