"""Self-describing checkpoints: one `.safetensors` file, rebuilt into a model without any other file.

Owns the file format every model kind shares (`write_checkpoint`, `read_checkpoint_file`), the PFNN's
`save_checkpoint` / `load_pfnn_checkpoint`, `Checkpoint`, `CheckpointError`; `models.registry.load_checkpoint`
reads a file of any kind.

PFNN tensors: the model weights under `model.*`, the normalisation under `norm.x_mean`, `norm.x_std`,
`norm.y_mean`, `norm.y_std`, and, in a resumable training checkpoint, optimizer and RNG state under
`train.*`. The header metadata key `pfnn` holds one JSON object: `format`, `version`, `kind` (absent in
checkpoints older than the other kinds: 'pfnn'), `model_config`, `layout` and whatever the caller passes
as `meta` (skeleton, stride, gait_speeds, data, training, resume...). Loading reads the header by hand
first (so a pickle, a zip or garbage gets a clear message), then uses `safetensors.safe_open`; nothing
is ever unpickled, and a model config is checked against the file's tensors before anything is built.
"""
from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open
from safetensors.torch import save

from pfnn_core import files
from pfnn_core.models.card import CardError, ModelCard
from pfnn_core.models.pfnn.model import PFNN, ModelConfig

FORMAT_NAME = "pfnn-checkpoint"
FORMAT_VERSION = 1
METADATA_KEY = "pfnn"
NORM_NAMES = ("x_mean", "x_std", "y_mean", "y_std")
MAX_HEADER_BYTES = 100_000_000


class CheckpointError(ValueError):
    """A file that is not a usable PFNN checkpoint; the message says why."""


@dataclass
class Checkpoint:
    """One checkpoint's contents: the network (PFNN) or the kind's tensors, the layout, the typed card."""

    model: PFNN | None                # the PFNN (eval mode, on the requested device); None for other kinds
    config: ModelConfig
    layout: object                    # FeatureLayout, or the stored JSON dict when features is unavailable
    norm: dict[str, torch.Tensor]     # x_mean, x_std [input_size]; y_mean, y_std [output_size]
    meta: dict                        # everything else stored in the JSON (skeleton, stride, training, ...)
    training_state: dict[str, torch.Tensor] = field(default_factory=dict)  # `train.*` tensors, if resumable
    path: Path | None = None
    kind: str = "pfnn"                # the model kind (`models.registry.KINDS`)
    card: ModelCard | None = None     # the typed facts of `meta`, read once
    tensors: dict[str, torch.Tensor] = field(default_factory=dict)  # a non-PFNN kind's own tensors


def _layout_to_json_value(layout):
    if layout is None or isinstance(layout, dict):
        return layout
    as_json = layout.to_json()
    return json.loads(as_json) if isinstance(as_json, str) else as_json


def _layout_from_json_value(value):
    if value is None:
        return None
    try:
        from pfnn_core.features.layout import FeatureLayout
    except ImportError:
        return value
    return FeatureLayout.from_json(value)


def _norm_tensors(norm) -> dict[str, torch.Tensor]:
    if isinstance(norm, dict):
        values = [norm[name] for name in NORM_NAMES]
    else:
        values = list(norm)
    if len(values) != len(NORM_NAMES):
        raise ValueError(f"norm must hold {NORM_NAMES}, got {len(values)} arrays")
    return {f"norm.{name}": torch.as_tensor(np.asarray(value, np.float32)).contiguous()
            for name, value in zip(NORM_NAMES, values)}


def save_checkpoint(path, model: PFNN, layout, norm, meta: dict | None = None,
                    training_state: dict[str, torch.Tensor] | None = None) -> Path:
    """Write a PFNN + layout + normalisation (+ resumable training state) to one .safetensors file.

    `norm` is (x_mean, x_std, y_mean, y_std) or a dict with those keys; `meta` must be JSON-serialisable.
    """
    tensors = {f"model.{name}": value for name, value in model.state_dict().items()}
    tensors.update(_norm_tensors(norm))
    for name, value in (training_state or {}).items():
        tensors[f"train.{name}"] = value
    return write_checkpoint(path, "pfnn", tensors, layout, meta, model_config=model.config.to_dict())


def write_checkpoint(path, kind: str, tensors: dict[str, torch.Tensor], layout, meta: dict | None = None,
                     model_config: dict | None = None) -> Path:
    """Write any kind's checkpoint: its tensors, the feature layout and the JSON metadata (the card's
    facts and the kind's own). Made in memory, then written next to its destination, fsynced and
    renamed (`files.write_bytes`), so a crash or a full disk never leaves half a checkpoint
    (`files.WriteError`, an OSError naming the file, then)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "kind": str(kind),
              "model_config": model_config, "layout": _layout_to_json_value(layout)}
    for key, value in (meta or {}).items():
        if key in header:
            raise ValueError(f"meta key {key!r} is reserved")
        header[key] = value
    tensors = {name: torch.as_tensor(value).detach().cpu().contiguous() for name, value in tensors.items()}
    files.write_bytes(path, save(tensors, metadata={METADATA_KEY: json.dumps(header)}))
    return path


def _describe_non_safetensors(start: bytes) -> str:
    if start[:1] == b"\x80" and start[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return ("looks like a Python pickle (e.g. torch.save); pickles are never loaded because "
                "loading one can run code. Use a .safetensors checkpoint")
    if start[:4] == b"PK\x03\x04":
        return "looks like a zip archive (e.g. torch.save); only .safetensors checkpoints are accepted"
    return "not a safetensors checkpoint"


def _check_safetensors_header(path: Path) -> None:
    """Refuse anything that is not a safetensors file before a parser sees it, naming what it looks like."""
    if not path.is_file():
        raise CheckpointError(f"{path}: no such checkpoint file")
    size = path.stat().st_size
    if size < 8:
        raise CheckpointError(f"{path}: not a safetensors checkpoint (file is {size} bytes)")
    with path.open("rb") as stream:
        start = stream.read(8)
        (header_size,) = struct.unpack("<Q", start)
        valid_size = 1 < header_size <= min(size - 8, MAX_HEADER_BYTES)
        raw_header = stream.read(header_size) if valid_size else b""
    try:
        header = json.loads(raw_header.decode("utf-8")) if valid_size else None
    except (ValueError, RecursionError):  # not UTF-8, not JSON, nested too deep, an integer too long
        header = None
    if not isinstance(header, dict):
        raise CheckpointError(f"{path}: {_describe_non_safetensors(start)}")


def _read_metadata(path: Path, metadata: dict | None) -> dict:
    if not metadata or METADATA_KEY not in metadata:
        raise CheckpointError(f"{path}: safetensors file without '{METADATA_KEY}' metadata; "
                              "not a checkpoint written by pfnn-train")
    try:
        info = json.loads(metadata[METADATA_KEY])
    except (ValueError, RecursionError) as error:  # not JSON, nested too deep, an integer too long
        raise CheckpointError(f"{path}: '{METADATA_KEY}' metadata is not valid JSON ({error})") from None
    if not isinstance(info, dict) or info.get("format") != FORMAT_NAME:
        raise CheckpointError(f"{path}: '{METADATA_KEY}' metadata does not describe a {FORMAT_NAME}")
    if info.get("version") != FORMAT_VERSION:
        raise CheckpointError(f"{path}: checkpoint version {info.get('version')!r} is not supported "
                              f"(this program reads version {FORMAT_VERSION})")
    return info


def _checked_tensor(path: Path, tensors: dict, name: str, shape: tuple) -> torch.Tensor:
    if name not in tensors:
        raise CheckpointError(f"{path}: tensor {name!r} is missing")
    value = tensors[name]
    if not value.is_floating_point():
        raise CheckpointError(f"{path}: tensor {name!r} holds {value.dtype}, expected floating-point numbers")
    if tuple(value.shape) != tuple(shape):
        raise CheckpointError(f"{path}: tensor {name!r} has shape {tuple(value.shape)}, "
                              f"the model config needs {tuple(shape)}")
    if value.is_floating_point() and not bool(torch.isfinite(value).all()):
        raise CheckpointError(f"{path}: tensor {name!r} contains NaN or infinite values")
    return value


def read_checkpoint_file(path) -> tuple[dict, dict[str, torch.Tensor]]:
    """(metadata JSON, tensors) of any kind's checkpoint file; CheckpointError for anything else."""
    path = Path(path)
    _check_safetensors_header(path)
    try:
        with safe_open(str(path), framework="pt", device="cpu") as reader:
            metadata = reader.metadata()
            tensors = {name: reader.get_tensor(name) for name in reader.keys()}
    except CheckpointError:
        raise
    except Exception as error:  # the safetensors parser's own error types vary between versions
        raise CheckpointError(f"{path}: not a readable safetensors file ({error})") from None
    return _read_metadata(path, metadata), tensors


def card_of(path: Path, meta: dict, layout, config, kind: str) -> ModelCard:
    """The typed card of a checkpoint's metadata; CheckpointError naming the file and the field."""
    try:
        return ModelCard.from_meta(meta, layout, config, kind)
    except CardError as error:
        raise CheckpointError(f"{path}: {error}") from None


def layout_of(path: Path, info: dict):
    try:
        return _layout_from_json_value(info.get("layout"))
    except Exception as error:
        raise CheckpointError(f"{path}: stored feature layout is unreadable ({error})") from None


def stored_meta(info: dict) -> dict:
    """The metadata besides the file format's own keys (skeleton, stride, training, the kind's facts...)."""
    return {key: value for key, value in info.items() if key not in ("format", "version", "kind", "model_config", "layout")}


def _model_config(path: Path, values: dict, tensor_count: int) -> tuple[ModelConfig, dict]:
    """The PFNN's config from the metadata and the shapes of the weights it asks for (found without
    allocating them); CheckpointError unless a network can be built from it: sizes are whole numbers,
    and no more layers than the file has tensors for."""
    try:
        config = ModelConfig.from_dict(values)
        sizes = ("input_size", "output_size", "hidden_size", "num_layers", "num_kernels", "num_styles")
        for name in sizes:
            if isinstance(getattr(config, name), bool) or not isinstance(getattr(config, name), int):
                raise ValueError(f"{name} must be a whole number, got {getattr(config, name)!r}")
        if config.num_layers > tensor_count:
            raise ValueError(f"num_layers {config.num_layers} is more than the file's {tensor_count} tensors")
        with torch.device("meta"):
            shapes = {name: value.shape for name, value in PFNN(config).state_dict().items()}
    except (TypeError, ValueError, RuntimeError, OverflowError) as error:
        raise CheckpointError(f"{path}: bad model_config ({error})") from None
    return config, shapes


def load_pfnn_checkpoint(path: Path, info: dict, tensors: dict, device="cpu") -> Checkpoint:
    """Rebuild a PFNN, its layout and normalisation from one checkpoint's contents; raise CheckpointError."""
    if not isinstance(info.get("model_config"), dict):
        raise CheckpointError(f"{path}: checkpoint metadata has no model_config")
    config, shapes = _model_config(path, info["model_config"], len(tensors))
    state = {name: _checked_tensor(path, tensors, f"model.{name}", shape) for name, shape in shapes.items()}
    model = PFNN(config)  # now no larger than the tensors the file holds
    model.load_state_dict(state)
    norm_sizes = {"x_mean": config.input_size, "x_std": config.input_size,
                  "y_mean": config.output_size, "y_std": config.output_size}
    norm = {name: _checked_tensor(path, tensors, f"norm.{name}", (size,)).to(device)
            for name, size in norm_sizes.items()}
    for name in ("x_std", "y_std"):
        if not bool((norm[name] > 0).all()):
            raise CheckpointError(f"{path}: norm.{name} has values <= 0")
    layout = layout_of(path, info)
    meta = stored_meta(info)
    training_state = {name[len("train."):]: value for name, value in tensors.items() if name.startswith("train.")}
    model.to(device).eval()
    return Checkpoint(model=model, config=config, layout=layout, norm=norm, meta=meta,
                      training_state=training_state, path=path, kind="pfnn",
                      card=card_of(path, meta, layout, config, "pfnn"))
