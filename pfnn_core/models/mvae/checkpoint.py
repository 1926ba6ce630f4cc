"""The motion VAE's checkpoint: `save_mvae` writes one `.safetensors` file (the shared format of
`models.checkpoint`), `load_mvae_checkpoint` rebuilds it for `models.registry` (every tensor's shape
checked; a bad file raises `CheckpointError` naming the file and the tensor or field).

Tensors: the networks under `model.*` (encoder, decoder, policy), the normalisation under `norm.*`
(x: the control is read from it; y: the frame), `latent.scale` [Z] (the posterior's typical standard
deviation per dimension: what the variation setting samples with) and, in a resumable training
checkpoint, optimizer and RNG state under `train.*`. The metadata key `mvae` holds the kind's facts:
the KL per latent dimension, the active dimensions, the loss history per term, the schedule.
"""
from __future__ import annotations

from pathlib import Path

import torch

from pfnn_core.models.checkpoint import (
    NORM_NAMES,
    Checkpoint,
    CheckpointError,
    _checked_tensor,
    card_of,
    layout_of,
    stored_meta,
    write_checkpoint,
)
from pfnn_core.models.mvae.networks import MotionVAE, MVAEConfig

KIND = "mvae"


def save_mvae(path, model: MotionVAE, layout, norm: dict, latent_scale, meta: dict | None = None,
              training_state: dict | None = None) -> Path:
    """Write a motion VAE, its layout, normalisation and latent scale (+ resumable state) to one file."""
    tensors = {f"model.{name}": value for name, value in model.state_dict().items()}
    for name in NORM_NAMES:
        tensors[f"norm.{name}"] = torch.as_tensor(norm[name], dtype=torch.float32)
    tensors["latent.scale"] = torch.as_tensor(latent_scale, dtype=torch.float32)
    for name, value in (training_state or {}).items():
        tensors[f"train.{name}"] = value
    return write_checkpoint(path, KIND, tensors, layout, meta, model_config=model.config.to_dict())


def load_mvae_checkpoint(path: Path, info: dict, tensors: dict, device="cpu") -> Checkpoint:
    """Rebuild a motion VAE's checkpoint from one file's contents; CheckpointError naming the file."""
    path = Path(path)
    if not isinstance(info.get("model_config"), dict):
        raise CheckpointError(f"{path}: checkpoint metadata has no model_config")
    try:
        config = MVAEConfig.from_dict(info["model_config"])
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{path}: bad model_config ({error})") from None
    layout = layout_of(path, info)
    if layout is None or not hasattr(layout, "y") or layout.y.size != config.frame_size:
        raise CheckpointError(f"{path}: layout does not match model_config.frame_size {config.frame_size}")
    model = MotionVAE(config)
    state = {name: _checked_tensor(path, tensors, f"model.{name}", value.shape)
             for name, value in model.state_dict().items()}
    try:
        model.load_state_dict(state)
    except RuntimeError as error:
        raise CheckpointError(f"{path}: network weights do not fit model_config ({error})") from None
    sizes = {"x_mean": layout.x.size, "x_std": layout.x.size, "y_mean": layout.y.size, "y_std": layout.y.size}
    norm = {name: _checked_tensor(path, tensors, f"norm.{name}", (size,)) for name, size in sizes.items()}
    for name in ("x_std", "y_std"):
        if not bool((norm[name] > 0).all()):
            raise CheckpointError(f"{path}: norm.{name} has values <= 0")
    scale = _checked_tensor(path, tensors, "latent.scale", (config.latent_size,))
    meta = stored_meta(info)
    training_state = {name[len("train."):]: value for name, value in tensors.items() if name.startswith("train.")}
    return Checkpoint(model=None, config=config, layout=layout, norm=norm, meta=meta, training_state=training_state,
                      path=path, kind=KIND, card=card_of(path, meta, layout, None, KIND),
                      tensors={**{f"model.{name}": value for name, value in state.items()}, "latent.scale": scale})


def network_of(checkpoint: Checkpoint) -> MotionVAE:
    """A fresh `MotionVAE` (eval mode, CPU) with a loaded checkpoint's weights."""
    model = MotionVAE(checkpoint.config)
    model.load_state_dict({name[len("model."):]: value for name, value in checkpoint.tensors.items()
                           if name.startswith("model.")})
    return model.eval()
