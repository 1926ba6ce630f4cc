"""Generated bodies kept between runs: one `.npz` per skeleton under `$PFNN_CACHE_DIR` (or the user's cache
folder), named by `Rig.key()`; a cache that cannot be read or written is rebuilt / skipped, never fatal."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from app.render.body.build import build_body
from app.render.body.mesh import BodyMesh, BodyModel
from app.render.body.rig import Rig


def default_cache_dir() -> Path:
    """Where generated meshes are kept between runs: $PFNN_CACHE_DIR, else the user's cache folder."""
    if os.environ.get("PFNN_CACHE_DIR"):
        return Path(os.environ["PFNN_CACHE_DIR"]) / "body-mesh"
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "pfnn-viewer" / "body-mesh"


_MESH_FIELDS = ("vertices", "normals", "triangles", "joints", "weights", "materials")


def save_body(model: BodyModel, path: Path) -> None:
    arrays = {"bind_rot": model.bind_rot, "bind_pos": model.bind_pos}
    for index, lod in enumerate(model.lods):
        arrays.update({f"lod{index}_{name}": getattr(lod, name) for name in _MESH_FIELDS})
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(f".{os.getpid()}.tmp.npz")
    np.savez_compressed(temporary, **arrays)
    os.replace(temporary, path)


def load_body(path: Path, key: str) -> BodyModel:
    with np.load(path, allow_pickle=False) as data:
        count = len({name.split("_")[0] for name in data.files if name.startswith("lod")})
        lods = [BodyMesh(**{name: data[f"lod{index}_{name}"] for name in _MESH_FIELDS}) for index in range(count)]
        return BodyModel(key, data["bind_rot"], data["bind_pos"], lods)


def load_or_build_body(rig: Rig, cache_dir: Path | None = None) -> BodyModel:
    """The rig's body from the disk cache, or built and saved there (a cache that cannot be read or
    written is rebuilt / skipped, never fatal)."""
    key = rig.key()
    path = Path(cache_dir if cache_dir is not None else default_cache_dir()) / f"{key}.npz"
    if path.exists():
        try:
            model = load_body(path, key)
            if len(model.bind_pos) == len(rig.parents):
                return model
        except (OSError, ValueError, KeyError):
            pass
    model = build_body(rig)
    try:
        save_body(model, path)
    except OSError:
        pass
    return model
