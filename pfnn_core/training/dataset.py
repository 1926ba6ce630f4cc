"""The dataset as training uses it: loaded through the dataset cache (`load_training_data`), split by clip
and normalised over the training rows (`split_and_normalise`), and what every checkpoint records about it
(`checkpoint_meta`: skeleton, strides, styles, the data's digest and held-out clips)."""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Callable

import numpy as np

from pfnn_core.data import dataset_cache
from pfnn_core.data.build import build_training_data
from pfnn_core.data.dataset_cache import remembered
from pfnn_core.data.labels import LabelRule
from pfnn_core.data.normalise import normalisation, split_by_clip
from pfnn_core.models.checkpoint import NORM_NAMES
from pfnn_core.training.config import TrainConfig


def load_training_data(config: TrainConfig, progress: Callable[[int, int], None] | None = None):
    """The dataset of `config.data`, labelled by `config.labels`: from the dataset cache when it holds these
    files, settings and labels, else built (in `config.workers` processes) and stored there.
    `progress(files_done, files_total)`."""
    source = config.data[0] if len(config.data) == 1 else list(config.data)
    cache_dir = (config.cache_dir or dataset_cache.default_cache_dir()) if config.cache else None
    return build_training_data(source, mirror=config.mirror, cache_dir=cache_dir, progress=progress,
                               workers=config.workers, label_rule=LabelRule.parse(config.labels))


def split_and_normalise(data, config: TrainConfig) -> tuple[np.ndarray, np.ndarray, tuple]:
    """(training rows, validation rows, normalisation as x mean, x std, y mean, y std): the clips split by
    `config.seed`, the statistics over the training rows only."""
    train_rows, val_rows = split_by_clip(data, config.val_fraction, config.seed)
    train_rows = np.asarray(train_rows)
    # seconds on a large set: kept with a cached set, named by the training rows it is computed over
    rows_digest = hashlib.sha1(np.ascontiguousarray(train_rows, dtype=np.int64)).hexdigest()[:16]
    stats = remembered(data, f"normalisation-{rows_digest}",
                       lambda: dict(zip(NORM_NAMES, normalisation(data, train_rows))))
    return train_rows, np.asarray(val_rows), tuple(stats[name] for name in NORM_NAMES)


def _content_sha1(data) -> dict:
    digest = hashlib.sha1()
    for array in (data.x, data.y, data.phase):
        digest.update(memoryview(np.ascontiguousarray(array)).cast("B"))  # no copy of a memory-mapped set
    return {"sha1": np.array(digest.hexdigest())}


def data_summary(data) -> dict:
    """The dataset's own summary (plain values, no cache details), its files, size and content digest."""
    # seconds on a large set: kept with a cached set (named by what it hashes)
    sha1 = str(remembered(data, "content-sha1-x-y-phase", lambda: _content_sha1(data))["sha1"])
    summary = {key: value for key, value in (getattr(data, "summary", None) or {}).items()
               if isinstance(value, (str, int, float, bool)) and not key.startswith("cache")}
    return {**summary, "files": list(data.clip_names), "samples": int(len(data.x)), "sha1": sha1}


def checkpoint_meta(data, config: TrainConfig, val_rows: np.ndarray) -> dict:
    """The metadata every checkpoint of this run carries about its data (the training facts come on top)."""
    data_meta = data_summary(data)
    # The held-out clips by name, so an evaluation never has to repeat the split to find them.
    data_meta["val_files"] = sorted({data.clip_names[c] for c in np.unique(data.clip[val_rows])})
    # Absolute, so `pfnn-eval` finds the clips of this skeleton from any working directory.
    data_meta["folders"] = [str(Path(item).resolve()) for item in config.data]
    data_meta["clip_labels"] = {name: [label["style"], label["content"]]
                                for name, label in zip(data.clip_names, data.clip_labels)}
    return {"skeleton": data.skeleton, "stride": data.stride, "gait_speeds": data.gait_speeds,
            "data": data_meta, "styles": {"names": list(data.styles), "stats": data.style_stats},
            "floor_heights": list(data.floor_heights), "stance": data.stance}
