"""Every model kind by name: read a checkpoint of any kind, and build the motion model it holds.

`KINDS` maps a kind (the checkpoint's `kind`, 'pfnn' when absent) to how its file is read and which
`MotionModel` runs it. `load_checkpoint(path)` and `load_model(path)` are what every command, the
viewer and the panel's model field call, so each of them accepts any kind.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, NamedTuple

from pfnn_core.models.checkpoint import Checkpoint, CheckpointError, load_pfnn_checkpoint, read_checkpoint_file
from pfnn_core.models.matching.model import MatchingModel, load_matching_checkpoint
from pfnn_core.models.mvae.checkpoint import load_mvae_checkpoint
from pfnn_core.models.mvae.model import MVAEModel
from pfnn_core.models.pfnn.network import PFNNModel


class Kind(NamedTuple):
    load: Callable  # (path, info, tensors, device) -> Checkpoint
    model: type  # the MotionModel subclass: model(checkpoint, device=..., backend=...)
    summary: str  # one line for people


KINDS: dict[str, Kind] = {
    "pfnn": Kind(load_pfnn_checkpoint, PFNNModel, "Phase-Functioned Neural Network (Holden et al. 2017)"),
    "mvae": Kind(load_mvae_checkpoint, MVAEModel, "Motion VAE with a latent control policy (Ling et al. 2020)"),
    "matching": Kind(load_matching_checkpoint, MatchingModel, "Motion matching (Clavet 2016; Holden's Motion-Matching demo)"),
}


def load_checkpoint(path, device="cpu") -> Checkpoint:
    """Read a checkpoint of any kind; CheckpointError (naming the file) for anything unusable."""
    path = Path(path)
    info, tensors = read_checkpoint_file(path)
    kind = str(info.get("kind") or "pfnn")
    if kind not in KINDS:
        raise CheckpointError(f"{path}: model kind {kind!r} is unknown (this program reads {', '.join(KINDS)})")
    return KINDS[kind].load(path, info, tensors, device)


def build_model(checkpoint: Checkpoint, device: str = "auto", backend: str = "auto"):
    """The `MotionModel` that runs a loaded checkpoint."""
    return KINDS[checkpoint.kind].model(checkpoint, device=device, backend=backend)


def load_model(path, device: str = "auto", backend: str = "auto"):
    """`build_model(load_checkpoint(path))`."""
    return build_model(load_checkpoint(path), device=device, backend=backend)
