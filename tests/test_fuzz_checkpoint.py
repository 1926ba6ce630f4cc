"""The checkpoint reader under a fuzzer (fixed seed, bounded examples): a real small checkpoint with its
'pfnn' metadata mutated as a tree (any value in model_config, layout, skeleton, kind, version...),
its safetensors header mutated (dtypes, shapes, offsets), or its bytes mutated or cut, either loads
into a model that runs, or is refused with CheckpointError naming the file; never another exception,
a hang or memory beyond a bound (a config asking for a billion hidden units must not be allocated
before the file's tensors are found not to match it). Then each hole found, as a plain example."""
import json
import re

import pytest
import torch
from conftest import make_random_checkpoint
from fuzz_cases import run_bounded
from fuzz_documents import checkpoint_mutation, join_safetensors, split_safetensors
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pfnn_core.models.checkpoint import CheckpointError
from pfnn_core.models.registry import load_checkpoint

FUZZ = settings(derandomize=True, database=None, deadline=None, print_blob=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def seed(walk_motion, tmp_path_factory) -> bytes:
    path = make_random_checkpoint(walk_motion, tmp_path_factory.mktemp("seed") / "seed.safetensors", hidden_size=8)
    return path.read_bytes()


def check_checkpoint(data: bytes, folder):
    path = folder / "model.safetensors"
    path.write_bytes(data)
    outcome, value = run_bounded(load_checkpoint, path, CheckpointError, len(data))
    if outcome == "refused":
        return outcome
    config = value.config
    assert value.card is not None and value.model is not None
    for name in ("x_std", "y_std"):
        assert bool((value.norm[name] > 0).all()) and bool(torch.isfinite(value.norm[name]).all())
    with torch.no_grad():
        y = value.model(torch.zeros(2, config.input_size), torch.tensor([0.0, 0.5]),
                        torch.full((2, config.num_styles), 1.0 / max(config.num_styles, 1)) if config.num_styles else None)
    assert tuple(y.shape) == (2, config.output_size) and bool(torch.isfinite(y).all())
    return "loaded"


def test_the_seed_loads(seed, tmp_path):
    check_checkpoint(seed, tmp_path)
    assert load_checkpoint(tmp_path / "model.safetensors").config.hidden_size == 8


@settings(FUZZ, max_examples=100)
@given(data=st.data())
def test_mutated_checkpoints(seed, data, tmp_path):
    check_checkpoint(data.draw(checkpoint_mutation(seed)), tmp_path)


def _with_meta(seed: bytes, change) -> bytes:
    header, body = split_safetensors(seed)
    meta = json.loads(header["__metadata__"]["pfnn"])
    change(meta)
    header["__metadata__"]["pfnn"] = json.dumps(meta)
    return join_safetensors(header, body)


FOUND = {
    "a billion hidden units (allocated before the shapes were compared)":
        lambda meta: meta["model_config"].update(hidden_size=10**9),
    "ten million layers (built one by one before anything was compared)":
        lambda meta: meta["model_config"].update(num_layers=10**7),
    "a fractional hidden size (TypeError from torch)": lambda meta: meta["model_config"].update(hidden_size=8.5),
    "a text beta (ValueError from float())": lambda meta: meta["model_config"].update(beta="eight"),
}


@pytest.mark.parametrize("case", sorted(FOUND))
def test_found_model_configs_are_refused_naming_the_file(case, seed, tmp_path):
    path = tmp_path / "odd.safetensors"
    data = _with_meta(seed, FOUND[case])
    path.write_bytes(data)
    outcome, error = run_bounded(load_checkpoint, path, CheckpointError, len(data))
    assert outcome == "refused" and "bad model_config" in str(error)


def test_metadata_nested_past_the_recursion_limit_or_with_a_huge_integer_is_refused(seed, tmp_path):
    header, body = split_safetensors(seed)
    for text in ("[" * 100_000 + "]" * 100_000, '{"format": "pfnn-checkpoint", "version": ' + "9" * 5000 + "}"):
        header["__metadata__"]["pfnn"] = text
        path = tmp_path / "odd.safetensors"
        path.write_bytes(join_safetensors(header, body))
        with pytest.raises(CheckpointError, match="'pfnn' metadata is not valid JSON"):
            load_checkpoint(path)


def test_integer_weights_of_the_right_shape_are_refused(seed, tmp_path):
    header, body = split_safetensors(seed)
    name = next(key for key in header if key.startswith("model."))
    header[name]["dtype"] = "I32"  # four bytes a value, as F32: the file is otherwise valid
    path = tmp_path / "ints.safetensors"
    path.write_bytes(join_safetensors(header, body))
    with pytest.raises(CheckpointError, match=re.escape(f"tensor {name!r} holds torch.int32")):
        load_checkpoint(path)


CARD_FIELDS_FOUND = {  # each was a TypeError, ValueError or AttributeError from the card reader
    "skeleton.offsets": lambda meta: meta["skeleton"].update(offsets=[[0.0, 1.0, 0.0], [1.0]] * 11),
    "stance": lambda meta: meta.update(stance=[0.1, 0.2]),
    "styles.stats.normal": lambda meta: meta.update(styles={"names": ["normal"], "stats": {"normal": [1, 2]}}),
    "floor_heights": lambda meta: meta.update(floor_heights="low"),
    "training.config": lambda meta: meta.update(training={"config": 8}),
    "gait_speeds": lambda meta: meta.update(gait_speeds=[1.2, 3.4]),
    "styles.names": lambda meta: meta.update(styles={"names": 3}),
}


@pytest.mark.parametrize("field", sorted(CARD_FIELDS_FOUND))
def test_card_fields_of_the_wrong_type_are_refused_naming_file_and_field(field, seed, tmp_path):
    path = tmp_path / "card.safetensors"
    path.write_bytes(_with_meta(seed, CARD_FIELDS_FOUND[field]))
    with pytest.raises(CheckpointError) as failure:
        load_checkpoint(path)
    assert str(failure.value).startswith(f"{path}: ") and field in str(failure.value)
