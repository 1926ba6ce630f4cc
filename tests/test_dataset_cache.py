"""The dataset cache: a second build of the same files and settings is read back (memory-mapped) instead of
rebuilt, any changed file or setting rebuilds, every dataclass field round-trips (fields added later too),
a cache that cannot be written never fails a build; the parallel build equals the serial one; rows
normalised on demand equal a normalised copy; chunked normalisation equals numpy's."""
import dataclasses
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import torch
from test_train import synthetic_data

from pfnn_core.data import dataset_cache
from pfnn_core.data.build import build_training_data
from pfnn_core.data.dataset import TrainingData
from pfnn_core.data.labels import LabelRule
from pfnn_core.data.normalise import normalisation
from pfnn_core.features.layout import FeatureLayout, ModelLayout
from pfnn_core.motion import bvh
from pfnn_core.training import cli, distributed
from pfnn_core.training.config import TrainConfig
from pfnn_core.training.dataset import split_and_normalise
from pfnn_core.training.tensors import style_one_hot, to_device

CLIPS = ("dataset-2_walk_normal_001", "dataset-2_run_normal_001", "dataset-2_raise-up-both-hands_normal_001")


@pytest.fixture()
def clip_folder(tmp_path, bvh_dir):
    folder = tmp_path / "clips"
    folder.mkdir()
    for name in CLIPS:
        shutil.copy(bvh_dir / f"{name}.bvh.gz", folder)
    return folder


def assert_same_data(first, second):
    for item in dataclasses.fields(first):
        a, b = getattr(first, item.name), getattr(second, item.name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a, b), item.name
        elif item.name != "summary":
            assert a == b, item.name


def test_second_build_reads_the_cache_memory_mapped(clip_folder, tmp_path):
    cache = tmp_path / "cache"
    built = build_training_data(clip_folder, cache_dir=cache)
    assert built.summary["cache"] == "stored" and len(list(cache.iterdir())) == 1
    again = build_training_data(clip_folder, cache_dir=cache)
    assert again.summary["cache"] == "hit"
    assert isinstance(again.x, np.memmap) and not again.x.flags.writeable
    assert_same_data(built, again)
    assert_same_data(build_training_data(clip_folder), again)  # the cache holds what a build makes


def test_a_changed_file_or_setting_rebuilds(clip_folder, tmp_path):
    cache = tmp_path / "cache"
    first = build_training_data(clip_folder, cache_dir=cache)
    assert build_training_data(clip_folder, cache_dir=cache, mirror=False).summary["cache"] == "stored"
    assert build_training_data(clip_folder, cache_dir=cache, seed=1).summary["cache"] == "stored"
    walk = clip_folder / f"{CLIPS[0]}.bvh.gz"
    motion = bvh.load(walk, scale=1.0)
    motion.rotations[5:] = motion.rotations[5:][:, ::-1]  # same size, other content
    bvh.save(motion, walk)
    changed = build_training_data(clip_folder, cache_dir=cache)
    assert changed.summary["cache"] == "stored"
    assert changed.x.shape != first.x.shape or not np.array_equal(changed.x, first.x)
    assert len(list(cache.iterdir())) == 4
    assert build_training_data(clip_folder, cache_dir=cache).summary["cache"] == "hit"


def test_other_labels_rebuild(clip_folder, tmp_path):
    """The key covers the clip labels (a labels.json in the data folder) and the labelling rule."""
    cache = tmp_path / "cache"
    first = build_training_data(clip_folder, cache_dir=cache)
    assert first.styles == ["normal"]
    assert build_training_data(clip_folder, cache_dir=cache, label_rule=LabelRule(kind="folder")).styles == ["clips"]
    (clip_folder / "labels.json").write_text('{"aliases": {"normal": "neutral"}}')
    relabelled = build_training_data(clip_folder, cache_dir=cache)
    assert relabelled.summary["cache"] == "stored" and relabelled.styles == ["neutral"]
    assert len(list(cache.iterdir())) == 3
    assert build_training_data(clip_folder, cache_dir=cache).summary["cache"] == "hit"


def test_the_key_covers_files_settings_and_fields(clip_folder):
    paths = sorted(clip_folder.iterdir())
    config = {"mirror": True, "version": 2}
    key = dataset_cache.cache_key(paths, config, TrainingData)
    assert dataset_cache.cache_key(paths, dict(config), TrainingData) == key
    assert dataset_cache.cache_key(paths, {**config, "version": 3}, TrainingData) != key
    assert dataset_cache.cache_key(paths[:2], config, TrainingData) != key

    @dataclass
    class WithMore(TrainingData):
        terrain: np.ndarray = None

    assert dataset_cache.cache_key(paths, config, WithMore) != key  # a field added later never reads stale data


@dataclass
class Everything:
    """A dataclass like TrainingData with every kind of field the cache stores."""
    rows: np.ndarray
    flags: np.ndarray
    empty: np.ndarray
    layout: ModelLayout
    names: list
    labels: dict
    count: int
    missing: np.ndarray = None
    summary: dict = field(default_factory=dict)


def test_every_field_round_trips_generically(tmp_path):
    layout = ModelLayout(FeatureLayout([("a", (2, 3))]), FeatureLayout([("b", (1,))]))
    data = Everything(rows=np.arange(12, dtype=np.float32).reshape(4, 3), flags=np.array([True, False]),
                      empty=np.zeros((0, 5), np.int64), layout=layout, names=["a.bvh", "b.bvh"],
                      labels={"style": ["neutral", "old"], "floor": np.float64(0.25), "n": np.int64(3)}, count=7)
    folder = dataset_cache.store(data, tmp_path / "entry")
    loaded = dataset_cache.load(folder, Everything)
    for name in ("rows", "flags", "empty"):
        original, back = getattr(data, name), getattr(loaded, name)
        assert back.dtype == original.dtype and back.shape == original.shape and np.array_equal(back, original)
    assert loaded.layout == layout and loaded.layout.x.slice("a") == slice(0, 6)
    assert loaded.names == data.names and loaded.count == 7 and loaded.missing is None
    assert loaded.labels == {"style": ["neutral", "old"], "floor": 0.25, "n": 3}
    assert dataset_cache.load(folder, TrainingData) is None  # other fields: not this entry


def test_an_incomplete_entry_is_rebuilt_and_an_unwritable_cache_only_warns(clip_folder, tmp_path, caplog):
    cache = tmp_path / "cache"
    build_training_data(clip_folder, cache_dir=cache)
    entry = next(cache.iterdir())
    (entry / "x.npy").unlink()
    with caplog.at_level(logging.WARNING):
        assert build_training_data(clip_folder, cache_dir=cache).summary["cache"] == "stored"
    blocked = tmp_path / "a_file"
    blocked.write_text("not a folder")
    with caplog.at_level(logging.WARNING):
        data = build_training_data(clip_folder, cache_dir=blocked / "cache")
    assert data.summary["cache"] == "not stored" and "could not write the dataset cache" in caplog.text


def test_default_cache_dir():
    assert dataset_cache.default_cache_dir({"PFNN_DATASET_CACHE": "/data/c"}) == Path("/data/c")
    assert dataset_cache.default_cache_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/pfnn-viewer/datasets")
    assert dataset_cache.default_cache_dir({}) == Path.home() / ".cache" / "pfnn-viewer" / "datasets"


def test_parallel_build_equals_the_serial_build(tmp_path, bvh_dir):
    """Clips of three bundled folders and several styles (the bundled labels.json maps dataset 1's 'old'
    onto 'elderly'): per-row styles, per-style statistics, floor and stance equal whether built in worker
    processes or here."""
    bundled = bvh_dir.parent
    shutil.copy(bundled / "labels.json", tmp_path)
    for folder, names in (("bandai-namco-ds2", CLIPS), ("bandai-namco-ds1", ["dataset-1_walk_old_001"]),
                          ("bandai-namco-ds2-styles", ["dataset-2_walk_elderly_001"])):
        (tmp_path / folder).mkdir()
        for name in names:
            shutil.copy(bundled / folder / f"{name}.bvh.gz", tmp_path / folder)
    serial = build_training_data(tmp_path, workers=1)
    parallel = build_training_data(tmp_path, workers=2)
    assert parallel.summary["workers"] == 2 and serial.summary["workers"] == 1
    assert serial.styles == ["elderly", "normal"] and serial.style_stats["elderly"]["clips"] == 2
    assert set(np.unique(serial.style[serial.standing])) == {0, 1}  # standing replicas shown as either style
    assert_same_data(serial, parallel)
    assert serial.summary["findings"] == parallel.summary["findings"]


def test_rows_normalised_on_demand_equal_a_normalised_copy():
    data = synthetic_data(styles=3)
    norm = normalisation(data)
    on_demand = to_device(data, norm, torch.device("cpu"), on_demand=True)
    copied = to_device(data, norm, torch.device("cpu"), on_demand=False)
    assert isinstance(on_demand.x, dataset_cache.NormalisedRows) and isinstance(copied.x, torch.Tensor)
    rows = torch.tensor([5, 0, 700, 5])
    assert torch.equal(on_demand.x[rows], copied.x[rows]) and torch.equal(on_demand.y[rows], copied.y[rows])
    assert torch.equal(on_demand.y[3:9], copied.y[3:9])
    expected = (data.x[700] - norm[0]) / norm[1]
    np.testing.assert_allclose(on_demand.x[torch.tensor([700])][0].numpy(), expected, rtol=1e-6)
    # the style input of a batch (or of one rank's share) is its rows' styles, one-hot
    share, _ = distributed.rank_share(np.array([5, 700, 0, 181, 300, 95]), distributed.Context(1, 2))
    for tensors in (on_demand, copied):
        styles = style_one_hot(tensors, torch.as_tensor(share))
        assert torch.equal(styles, torch.nn.functional.one_hot(torch.as_tensor(data.style[share]), 3).float())


def test_chunked_normalisation_equals_numpy():
    data = synthetic_data()
    rows = np.arange(0, len(data.x), 2)
    one_chunk = normalisation(data, rows)
    x = data.x[rows].astype(np.float64)
    assert np.array_equal(one_chunk[0], x.mean(0).astype(np.float32))  # one chunk: numpy's numbers exactly
    assert np.array_equal(one_chunk[1], np.maximum(x.std(0), 1e-3).astype(np.float32))
    chunked = normalisation(data, rows, chunk_rows=37)
    for ours, numpy_value in zip(chunked, one_chunk):
        np.testing.assert_allclose(ours, numpy_value, rtol=1e-5, atol=1e-7)


def test_pfnn_train_says_when_the_dataset_comes_from_the_cache(clip_folder, tmp_path, capsys):
    common = [str(clip_folder), "--out", str(tmp_path / "m.safetensors"), "--epochs", "1", "--hidden", "16",
              "--threads", "1", "--device", "cpu", "--cache-dir", str(tmp_path / "cache")]
    assert cli.main(common) == 0
    first = capsys.readouterr().err
    assert "features built in" in first and "cached in" in first
    assert "dataset: 3 clips" in first and "samples (mirrored copies included)" in first
    assert cli.main(common) == 0
    second = capsys.readouterr().err
    assert "dataset read from the cache" in second and "not rebuilt" in second and "features built" not in second
    assert cli.main(common + ["--no-cache"]) == 0
    assert "(cache off)" in capsys.readouterr().err


def test_values_derived_from_a_cached_set_are_computed_once(clip_folder, tmp_path):
    calls = []

    def compute():
        calls.append(1)
        return {"mean": np.arange(3.0)}

    cached = build_training_data(clip_folder, cache_dir=tmp_path / "cache")
    assert np.array_equal(dataset_cache.remembered(cached, "means-v1", compute)["mean"], np.arange(3.0))
    again = build_training_data(clip_folder, cache_dir=tmp_path / "cache")
    assert np.array_equal(dataset_cache.remembered(again, "means-v1", compute)["mean"], np.arange(3.0))
    assert len(calls) == 1 and (Path(again.summary["cache_folder"]) / "derived" / "means-v1.npz").exists()
    uncached = build_training_data(clip_folder)
    dataset_cache.remembered(uncached, "means-v1", compute)
    dataset_cache.remembered(uncached, "means-v1", compute)
    assert len(calls) == 3
    # training reads the kept normalisation: the same numbers as computing it
    config = TrainConfig(val_fraction=0.34, seed=2)
    for data in (cached, again, uncached):
        rows, _, norm = split_and_normalise(data, config)
        expected = normalisation(uncached, rows)
        assert all(np.array_equal(a, b) for a, b in zip(norm, expected))
