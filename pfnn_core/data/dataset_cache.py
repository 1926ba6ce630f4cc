"""The dataset cache: a built training set stored once per (input files, feature configuration), and
rows read from it on demand.

Owns `default_cache_dir`, `cache_key`, `store`, `load`, `load_or_build`, `remembered` (values derived from
a cached set, kept beside it) and `NormalisedRows`.

Where: `$PFNN_DATASET_CACHE` when set, else `$XDG_CACHE_HOME/pfnn-viewer/datasets`, else
`~/.cache/pfnn-viewer/datasets` (`pfnn-train --cache-dir` overrides all three). One folder per entry,
named by its key.

Key: a hash of every input file's resolved path and content, the feature configuration the builder
passes (mirroring, standing replicas, frame rate, its version number, a digest of the feature code...),
this file's format number and the field names of the stored dataclass. Any changed file, setting,
feature code or added field gives a new key, so a stale entry is never read.

What: every field of the dataclass, generically, so a field added later is cached without touching
this file. A numpy array goes to `<field>.npy` and is opened memory-mapped (read-only): several
training processes on one machine then share one copy of the pages, and none has to hold the whole
set in its own memory. A value with `to_json` (the feature layout) is stored as that JSON and rebuilt
with its declared type's `from_json`; anything else is stored as JSON (numpy scalars and nested arrays
become plain numbers and lists).

An entry is written to a temporary folder and renamed into place, so a crash or two builders racing
never leave half an entry.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
import time
import typing
import uuid
from pathlib import Path
from typing import Callable

import numpy as np

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
ENV_VAR = "PFNN_DATASET_CACHE"
META_FILE = "meta.json"
_HASH_CHUNK = 1 << 20


def default_cache_dir(environ=None) -> Path:
    """`$PFNN_DATASET_CACHE`, else `$XDG_CACHE_HOME/pfnn-viewer/datasets`, else `~/.cache/pfnn-viewer/datasets`."""
    environ = os.environ if environ is None else environ
    if environ.get(ENV_VAR):
        return Path(environ[ENV_VAR]).expanduser()
    base = Path(environ["XDG_CACHE_HOME"]).expanduser() if environ.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "pfnn-viewer" / "datasets"


def file_digest(path) -> str:
    """sha256 of a file's bytes (as stored: a .bvh.gz is hashed compressed)."""
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(_HASH_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_key(paths, feature_config: dict, data_type) -> str:
    """The entry name for these input files, this feature configuration and this dataclass."""
    digest = hashlib.sha256()
    header = {"format": FORMAT_VERSION, "fields": [f.name for f in dataclasses.fields(data_type)],
              "config": feature_config}
    digest.update(json.dumps(header, sort_keys=True, default=str).encode())
    for path in paths:
        digest.update(str(Path(path).resolve()).encode() + b"\0")
        digest.update(file_digest(path).encode())
    return digest.hexdigest()[:32]


def _plain(value):
    """JSON fallback for numpy values nested in dicts and lists."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def store(data, folder) -> Path:
    """Write every field of the dataclass `data` into `folder` (atomically: temporary folder + rename).

    When another process stored the same entry first, its entry is kept and ours discarded.
    """
    folder = Path(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    temporary = folder.parent / f".{folder.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
    temporary.mkdir()
    try:
        stored_fields = {}
        for item in dataclasses.fields(data):
            value = getattr(data, item.name)
            if isinstance(value, np.ndarray):
                np.save(temporary / f"{item.name}.npy", np.ascontiguousarray(value), allow_pickle=False)
                stored_fields[item.name] = {"array": f"{item.name}.npy"}
            elif hasattr(value, "to_json") and hasattr(value, "from_json"):
                stored_fields[item.name] = {"from_json": json.loads(value.to_json())}
            else:
                try:
                    json.dumps(value, default=_plain)
                except (TypeError, ValueError) as error:
                    raise TypeError(f"dataset field {item.name!r} cannot be cached as JSON ({error})") from None
                stored_fields[item.name] = {"json": value}
        meta = {"format": FORMAT_VERSION, "type": data.__class__.__name__, "fields": stored_fields}
        (temporary / META_FILE).write_text(json.dumps(meta, default=_plain))
        try:
            temporary.rename(folder)
        except OSError:
            if not (folder / META_FILE).exists():
                raise
            shutil.rmtree(temporary, ignore_errors=True)  # another process stored this entry first
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    return folder


def _open_array(path: Path) -> np.ndarray:
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False)
    except ValueError:  # an empty array cannot be memory-mapped
        return np.load(path, allow_pickle=False)


def load(folder, data_type):
    """The dataclass stored in `folder` (arrays memory-mapped, read-only), or None when there is no
    complete, readable entry of this format for `data_type`'s fields."""
    folder = Path(folder)
    try:
        meta = json.loads((folder / META_FILE).read_text())
    except (OSError, ValueError):
        return None
    stored = meta.get("fields", {}) if isinstance(meta, dict) else {}
    names = [f.name for f in dataclasses.fields(data_type)]
    if meta.get("format") != FORMAT_VERSION or sorted(stored) != sorted(names):
        return None
    hints = typing.get_type_hints(data_type)
    values = {}
    try:
        for name in names:
            entry = stored[name]
            if "array" in entry:
                values[name] = _open_array(folder / entry["array"])
            elif "from_json" in entry:
                values[name] = hints[name].from_json(entry["from_json"])
            else:
                values[name] = entry["json"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        log.warning("%s: unreadable dataset cache entry (%s); rebuilding", folder, error)
        return None
    return data_type(**values)


def load_or_build(paths, feature_config: dict, build: Callable[[], object], data_type, cache_dir=None):
    """The cached dataset for these files and settings, or `build()` stored for next time.

    `summary` (a dict field, when the dataclass has one) gets `cache` ('hit', 'stored' or 'not stored'),
    `cache_folder` and `cache_load_seconds` / `build_seconds`. A cache that cannot be written is a
    warning, never a failed build.
    """
    started = time.perf_counter()
    folder = Path(cache_dir or default_cache_dir()) / cache_key(paths, feature_config, data_type)
    data = load(folder, data_type)
    if data is not None:
        _note(data, cache="hit", cache_folder=str(folder), cache_load_seconds=round(time.perf_counter() - started, 3))
        return data
    if folder.exists():
        shutil.rmtree(folder, ignore_errors=True)  # an incomplete or outdated entry under this key
    data = build()
    _note(data, cache="stored", cache_folder=str(folder))
    try:
        store(data, folder)
    except OSError as error:
        log.warning("could not write the dataset cache %s (%s); continuing without it", folder, error)
        _note(data, cache="not stored")
        return data
    reopened = load(folder, data_type)  # memory-mapped: the built arrays' memory is released
    return data if reopened is None else reopened


def remembered(data, name: str, compute: Callable[[], dict]) -> dict:
    """`compute()` (a dict of arrays derived from `data`) kept in `data`'s cache entry under `name`, so the
    next start reads it instead: the normalisation of a given split, the content digest. An entry never
    changes and its key changes with the feature code, so a derived value cannot go stale as long as
    `name` holds every other input. Computed every time for a dataset that is not from the cache."""
    summary = getattr(data, "summary", None) or {}
    if summary.get("cache") not in ("hit", "stored") or not summary.get("cache_folder"):
        return compute()
    path = Path(summary["cache_folder"]) / "derived" / f"{name}.npz"
    try:
        with np.load(path, allow_pickle=False) as stored:
            return {key: stored[key] for key in stored.files}
    except (OSError, ValueError):
        pass
    values = compute()
    temporary = path.with_name(f".{name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.npz")
    try:
        path.parent.mkdir(exist_ok=True)
        np.savez(temporary, **values)
        temporary.replace(path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        log.warning("could not keep %s in the dataset cache (%s)", name, error)
    return values


def _note(data, **items) -> None:
    summary = getattr(data, "summary", None)
    if isinstance(summary, dict):
        summary.update(items)


class NormalisedRows:
    """Rows of a [N, D] array (in memory or memory-mapped) normalised when asked for.

    `rows[index]` -> float32 tensor [len(index), D] = (array[index] - mean) / std on `device`, the same
    numbers as normalising the whole array first, without a normalised copy of the whole set.
    `index` may be a tensor, an array, a slice or an int.
    """

    def __init__(self, array, mean, std, device):
        import torch  # here, not at the top: building and caching a dataset needs no torch

        self.array = array
        self.mean, self.std = mean, std
        self.device = torch.device(device)

    @property
    def shape(self) -> tuple:
        return tuple(self.array.shape)

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, index):
        import torch

        if isinstance(index, torch.Tensor):
            index = index.detach().cpu().numpy()
        raw = np.array(self.array[index], dtype=np.float32)  # a private copy: the source may be read-only
        return (torch.from_numpy(raw).to(self.device) - self.mean) / self.std
