"""Resumable training: what a `*.resume.safetensors` checkpoint holds beyond the model (the config, the
run's progress `RunState`, the optimizer's state, every rank's random state) and how a run continues
from one exactly where it stopped (`restore_run`), or is described by one (`resume_config`)."""
from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

import torch

from pfnn_core.models.pfnn.model import PFNN, ModelConfig
from pfnn_core.models.registry import load_checkpoint
from pfnn_core.training import distributed
from pfnn_core.training.config import TrainConfig, TrainingError

log = logging.getLogger(__name__)


@dataclass
class RunState:
    """How far a run has come; stored as it is in the resumable checkpoint (meta 'resume' -> 'run')."""
    epoch: int = 0                # epochs completed
    batch: int = 0                # batches done in the current epoch
    step: int = 0                 # optimizer steps done over the whole run
    best_val_loss: float = math.inf
    best_epoch: int = 0           # 1-based; 0 if none
    epochs_since_best: int = 0    # for early stopping (`patience`)
    train_losses: list = field(default_factory=list)  # mean batch loss per completed epoch
    val_losses: list = field(default_factory=list)    # validation loss per completed epoch
    epoch_loss_sum: float = 0.0   # sum of the current epoch's batch losses so far
    epoch_batches: int = 0        # batches in that sum
    wall_s: float = 0.0           # wall seconds of the earlier sessions of this run (0 for a new run)

    @classmethod
    def from_dict(cls, values: dict) -> "RunState":
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in values.items() if key in known})


def resume_path_for(out) -> Path:
    """Where a run writing its best model to `out` keeps its resumable state: `X.resume.safetensors`."""
    out = Path(out)
    return out.with_name(out.name.removesuffix(".safetensors") + ".resume.safetensors")


def resumed_kind(path) -> str:
    """The model kind of a resumable checkpoint (ValueError naming the file when it is none)."""
    checkpoint = load_checkpoint(path)
    if not checkpoint.meta.get("resume"):
        raise ValueError(f"{path}: not a resumable checkpoint (no training state); train a new model instead")
    return checkpoint.kind


def resume_config(path, **overrides) -> TrainConfig:
    """The TrainConfig stored in a resumable checkpoint, with `overrides` (those not None) applied."""
    stored = load_checkpoint(path).meta.get("resume")
    if not stored or "config" not in stored:
        raise ValueError(f"{path}: not a resumable PFNN checkpoint (no training state); train a new model instead")
    config = TrainConfig.from_dict(stored["config"])
    return replace(config, resume=str(path), **{k: v for k, v in overrides.items() if v is not None})


def _optimizer_tensors(optimizer: torch.optim.Optimizer) -> tuple[dict, list]:
    state = optimizer.state_dict()
    tensors = {f"optimizer.{index}.{key}": torch.as_tensor(value)
               for index, values in state["state"].items() for key, value in values.items()}
    return tensors, state["param_groups"]


def _restore_optimizer(optimizer: torch.optim.Optimizer, tensors: dict, param_groups: list) -> None:
    state: dict[int, dict] = {}
    for name, value in tensors.items():
        if name.startswith("optimizer."):
            _, index, key = name.split(".", 2)
            state.setdefault(int(index), {})[key] = value
    optimizer.load_state_dict({"state": state, "param_groups": param_groups})


def rng_tensors(device: torch.device) -> dict:
    """This process's random state (torch's, and CUDA's when training there)."""
    tensors = {"rng.torch": torch.get_rng_state()}
    if device.type == "cuda":
        tensors["rng.cuda"] = torch.cuda.get_rng_state(device)
    return tensors


def _restore_rng(tensors: dict, device: torch.device, rank: int = 0) -> bool:
    """Restore rank `rank`'s random state (rank r > 0's is stored under 'rng.torch.rank<r>'); False when
    the checkpoint holds none for this rank (it was saved by fewer processes)."""
    suffix = "" if rank == 0 else f".rank{rank}"
    if f"rng.torch{suffix}" not in tensors:
        return False
    torch.set_rng_state(tensors[f"rng.torch{suffix}"])
    if device.type == "cuda" and f"rng.cuda{suffix}" in tensors:
        torch.cuda.set_rng_state(tensors[f"rng.cuda{suffix}"], device)
    return True


def _restore_rank_rng(training_state: dict, stored: dict, device, context: distributed.Context,
                      config: TrainConfig) -> None:
    """Each rank continues its own random stream; a rank the checkpoint has none for (the run was saved by
    fewer processes) starts a new one, and the run no longer repeats an uninterrupted one exactly."""
    if _restore_rng(training_state, device, context.rank):
        return
    torch.manual_seed(distributed.rank_seed(config.seed + int(stored["run"].get("step", 0)), context.rank))
    if context.is_main or context.rank == stored.get("world_size", 1):
        log.warning("%s was saved by %s process(es) and resumed by %s: the ranks without a saved random state "
                    "draw new numbers, so this run will not repeat an uninterrupted one exactly", config.resume,
                    stored.get("world_size", 1), context.world_size)


def resumable_state(config: TrainConfig, run: RunState, optimizer: torch.optim.Optimizer, rng_states: dict,
                    world_size: int) -> tuple[dict, dict]:
    """(the 'resume' metadata, the training-state tensors) a resumable checkpoint stores; `rng_states` holds
    every rank's random state (`distributed.gather_to_main` of `rng_tensors`)."""
    tensors, param_groups = _optimizer_tensors(optimizer)
    tensors.update(rng_states)
    meta = {"config": asdict(config), "run": asdict(run), "param_groups": param_groups, "world_size": world_size}
    return meta, tensors


def restore_run(config: TrainConfig, model: PFNN, optimizer: torch.optim.Optimizer, model_config: ModelConfig,
                device: torch.device, context: distributed.Context, data_sha1: str) -> RunState:
    """Continue from `config.resume`: the model's weights, the optimizer's state and this rank's random state
    restored in place; returns the run's progress. ValueError for a file without training state,
    TrainingError for a model that does not fit this data and these settings."""
    resumed = load_checkpoint(config.resume, device="cpu")
    stored = resumed.meta.get("resume")
    if not stored:
        raise ValueError(f"{config.resume}: not a resumable checkpoint (no training state)")
    if resumed.config != model_config:
        raise TrainingError(f"{config.resume}: its model {resumed.config} does not match this data and "
                            f"settings {model_config}")
    model.load_state_dict(resumed.model.state_dict())
    _restore_optimizer(optimizer, resumed.training_state, stored["param_groups"])
    run = RunState.from_dict(stored["run"])
    _restore_rank_rng(resumed.training_state, stored, device, context, config)
    if context.is_main and resumed.meta.get("data", {}).get("sha1") != data_sha1:
        log.warning("%s was trained on different data; continuing on this data", config.resume)
    return run
