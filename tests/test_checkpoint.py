"""Checkpoints: save -> load round trip gives identical outputs; pickles, zips, garbage, mismatched and
corrupt files are refused with a CheckpointError, and a pickle is never executed."""
import json
import pickle
import struct
import zipfile

import numpy as np
import pytest
import torch
from safetensors.torch import save_file

from pfnn_core.models.checkpoint import CheckpointError, save_checkpoint
from pfnn_core.models.pfnn.model import PFNN, ModelConfig
from pfnn_core.models.registry import load_checkpoint

IN, OUT = 10, 6


def make_model(form="rbf") -> PFNN:
    torch.manual_seed(0)
    model = PFNN(ModelConfig(input_size=IN, output_size=OUT, hidden_size=12, phase_function=form))
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.2 * torch.randn_like(parameter))
    return model.eval()


def make_norm():
    rng = np.random.default_rng(0)
    return (rng.normal(size=IN), rng.random(IN) + 0.5, rng.normal(size=OUT), rng.random(OUT) + 0.5)


META = {"skeleton": {"names": ["Hips", "Spine"], "parents": [-1, 0], "offsets": [[0.0, 1.0, 0.0], [0.0, 0.2, 0.0]]},
        "stride": {"walk": 1.3},
        "training": {"epochs": 3, "seed": 7}}
LAYOUT = None  # the real FeatureLayout round trip is covered in test_train.py


@pytest.mark.parametrize("form", ["rbf", "cubic"])
def test_save_load_round_trip_gives_identical_outputs(tmp_path, form):
    model = make_model(form)
    norm = make_norm()
    path = save_checkpoint(tmp_path / "m.safetensors", model, LAYOUT, norm, META)
    loaded = load_checkpoint(path)
    assert loaded.config == model.config
    assert not loaded.model.training
    assert loaded.meta["skeleton"] == META["skeleton"] and loaded.meta["training"]["seed"] == 7
    for name, value in zip(("x_mean", "x_std", "y_mean", "y_std"), norm):
        np.testing.assert_allclose(loaded.norm[name].numpy(), value.astype(np.float32))
    x, phase = torch.randn(7, IN), torch.rand(7)
    torch.testing.assert_close(loaded.model(x, phase), model(x, phase), rtol=0, atol=0)
    assert loaded.training_state == {}


def test_training_state_round_trip(tmp_path):
    state = {"optimizer.0.exp_avg": torch.randn(3, 4), "rng.torch": torch.get_rng_state()}
    path = save_checkpoint(tmp_path / "r.safetensors", make_model(), LAYOUT, make_norm(),
                           {**META, "resume": {"epoch": 2}}, training_state=state)
    loaded = load_checkpoint(path)
    assert loaded.meta["resume"] == {"epoch": 2}
    assert set(loaded.training_state) == set(state)
    assert torch.equal(loaded.training_state["rng.torch"], state["rng.torch"])


class _Marker:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def test_pickle_is_refused_and_never_executed(tmp_path):
    marker = tmp_path / "executed.txt"
    bad = tmp_path / "evil.safetensors"
    bad.write_bytes(pickle.dumps(_Marker(str(marker))))
    with pytest.raises(CheckpointError, match="pickle"):
        load_checkpoint(bad)
    assert not marker.exists()
    # the same payload in torch.save's zip container
    bad_zip = tmp_path / "evil.pt"
    torch.save({"weights": _Marker(str(marker))}, bad_zip)
    assert not marker.exists()
    with pytest.raises(CheckpointError, match="zip"):
        load_checkpoint(bad_zip)
    assert not marker.exists()


@pytest.mark.parametrize("content", [b"", b"abc", b"\x00" * 64, b"garbage that is not a checkpoint at all",
                                     struct.pack("<Q", 10) + b"{not json}"])
def test_garbage_is_refused(tmp_path, content):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match="bad.safetensors"):
        load_checkpoint(path)


def test_missing_file_and_plain_zip(tmp_path):
    with pytest.raises(CheckpointError, match="no such"):
        load_checkpoint(tmp_path / "absent.safetensors")
    with zipfile.ZipFile(tmp_path / "a.zip", "w") as archive:
        archive.writestr("x.txt", "hello")
    with pytest.raises(CheckpointError, match="zip"):
        load_checkpoint(tmp_path / "a.zip")


def test_truncated_file_is_refused(tmp_path):
    path = save_checkpoint(tmp_path / "m.safetensors", make_model(), LAYOUT, make_norm(), META)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 100])
    with pytest.raises(CheckpointError):
        load_checkpoint(path)


def test_safetensors_without_pfnn_metadata_is_refused(tmp_path):
    path = tmp_path / "plain.safetensors"
    save_file({"w": torch.zeros(2)}, str(path))
    with pytest.raises(CheckpointError, match="'pfnn' metadata"):
        load_checkpoint(path)


def rewrite(tmp_path, mutate_tensors=None, mutate_info=None):
    """Save a good checkpoint, then rewrite it with changed tensors or metadata."""
    path = save_checkpoint(tmp_path / "m.safetensors", make_model(), LAYOUT, make_norm(), META)
    from safetensors import safe_open
    with safe_open(str(path), framework="pt") as reader:
        tensors = {name: reader.get_tensor(name) for name in reader.keys()}
        info = json.loads(reader.metadata()["pfnn"])
    if mutate_tensors:
        mutate_tensors(tensors)
    if mutate_info:
        mutate_info(info)
    save_file(tensors, str(path), metadata={"pfnn": json.dumps(info)})
    return path


def test_mismatched_shapes_are_refused(tmp_path):
    def wider_config(info):
        info["model_config"]["hidden_size"] = 16

    with pytest.raises(CheckpointError, match=r"model\.layers\.0\.weight.*shape"):
        load_checkpoint(rewrite(tmp_path, mutate_info=wider_config))


def test_missing_tensor_is_refused(tmp_path):
    with pytest.raises(CheckpointError, match=r"norm\.y_std.*missing"):
        load_checkpoint(rewrite(tmp_path, mutate_tensors=lambda t: t.pop("norm.y_std")))


def test_nan_weights_are_refused(tmp_path):
    def poison(tensors):
        tensors["model.layers.1.weight"][0, 0, 0] = float("nan")

    with pytest.raises(CheckpointError, match=r"layers\.1\.weight.*NaN"):
        load_checkpoint(rewrite(tmp_path, mutate_tensors=poison))


def test_unknown_version_and_bad_config_are_refused(tmp_path):
    def future(info):
        info["version"] = 99

    with pytest.raises(CheckpointError, match="version 99"):
        load_checkpoint(rewrite(tmp_path, mutate_info=future))

    def bad_function(info):
        info["model_config"]["phase_function"] = "linear"

    with pytest.raises(CheckpointError, match="model_config"):
        load_checkpoint(rewrite(tmp_path, mutate_info=bad_function))
