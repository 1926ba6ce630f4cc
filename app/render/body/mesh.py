"""The generated body as data: `BodyMesh` (one level of detail, in the bind pose, ready for the GPU) and
`BodyModel` (the bind pose and its levels of detail), with the generator's version and detail levels
that the cache key includes."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

BODY_MESH_VERSION = 1  # part of the cache key: bump it when the generator changes its output
LOD_TRIANGLES = (12000, 1800, 600)  # followed character; crowd; far crowd and shadows


@dataclass
class BodyMesh:
    """One level of detail, in the bind pose. Arrays are float32 / int32, ready for the GPU."""
    vertices: np.ndarray  # [V, 3]
    normals: np.ndarray  # [V, 3] unit, outward
    triangles: np.ndarray  # [T, 3] counter-clockwise seen from outside
    joints: np.ndarray  # [V, 4] joint indices
    weights: np.ndarray  # [V, 4] summing to 1
    materials: np.ndarray  # [V, 4] scores of shirt, trousers, shoes, hair against skin (`material_scores`)


@dataclass
class BodyModel:
    key: str
    bind_rot: np.ndarray  # [J, 4] world rotations of the bind pose
    bind_pos: np.ndarray  # [J, 3]
    lods: list = field(default_factory=list)  # [BodyMesh], most detailed first

