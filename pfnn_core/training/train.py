"""Training the PFNN: `TrainConfig`, `train(config, progress, stop, data)`, and the `pfnn-train` command.

Owns the training loop: AdamW with cosine decay; short rollouts with scheduled sampling (the model's own
predicted pose fed back as the next input's previous pose, with a probability ramping 0 -> max over the
epochs); the loss (SmoothL1 on normalised outputs + root-velocity consistency + foot skating); validation
each epoch; keeping the best model; early stopping; resumable checkpoints (safetensors tensors + JSON, no
pickle); a fixed seed reproduces a run on the CPU. The same `train` runs from the command line and from the
viewer's background thread (progress callback, stop flag).

Under torchrun (`distributed`), the same loop runs in every process: the model is wrapped in
DistributedDataParallel, each rank takes its share of every global batch (so the batch size and the
learning-rate schedule are the ones asked for, whatever the number of processes), validation sums over
the ranks, stop requests are agreed on before each batch, and rank 0 alone writes checkpoints and reports
progress. Startup checks (`data_checks`) and the dataset (built once per machine, `dataset_cache`) come
before any epoch.
"""
from __future__ import annotations

import argparse
import hashlib
import logging
import math
import os
import signal
import sys
import threading
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Callable

import numpy as np
import torch
from torch.nn import functional

from pfnn_core.data import checks
from pfnn_core.data.build import build_training_data
from pfnn_core.data.dataset_cache import NormalisedRows, remembered
from pfnn_core.data.normalise import normalisation, split_by_clip
from pfnn_core.data.statistics import motion_kind
from pfnn_core.models.checkpoint import NORM_NAMES, load_checkpoint, save_checkpoint
from pfnn_core.models.pfnn import PFNN, ModelConfig
from pfnn_core.motion import bvh
from pfnn_core.threads import set_thread_counts
from pfnn_core.training import distributed

# Never the shipped model: a training run with no --out must not overwrite assets/models/default.safetensors.
DEFAULT_OUT = "runs/model.safetensors"
VALIDATION_BATCH = 4096


class TrainingError(RuntimeError):
    """Training cannot continue (NaN loss, data that does not fit a resumed model); the message says why."""


@dataclass
class TrainConfig:
    data: list[str] = field(default_factory=lambda: ["assets/bvh"])  # BVH folders or files
    out: str = DEFAULT_OUT        # best model; the resumable state goes next to it (*.resume.safetensors)
    hidden_size: int = 512        # units per hidden layer
    phase_function: str = "rbf"   # 'rbf' or 'cubic'
    num_kernels: int = 8          # rbf weight sets (cubic always uses 4)
    beta: float = 8.0             # rbf bandwidth (validation and the model's default)
    beta_range: tuple | None = (4.0, 16.0)  # rbf: beta drawn log-uniformly per batch from [lo, hi], so the
                                  # live knob works across that range; None = always `beta`
    dropout: float = 0.3          # drop probability [PFNN keeps 70%]
    epochs: int = 60              # upper bound; early stopping may end sooner
    batch_size: int = 256         # rollouts per optimizer step
    lr: float = 1e-3              # AdamW peak learning rate
    lr_final_fraction: float = 0.05  # cosine decay ends at lr * this
    weight_decay: float = 1e-4    # AdamW decoupled weight decay
    max_grad_norm: float = 5.0    # gradient clipping
    rollout_length: int = 4       # frames per rollout; 1 = plain one-step training
    feedback_max: float = 0.5     # final probability of feeding back the model's own pose
    feedback_ramp_epochs: int = 0  # epochs to ramp the feedback 0 -> max; 0 = half of `epochs`
    root_velocity_weight: float = 0.5  # weight of the root-velocity consistency term (m/s)
    foot_skating_weight: float = 0.5   # weight of the foot-skating term (m/s)
    val_fraction: float = 0.1     # share of clips held out for validation
    seed: int = 0                 # data split, initialisation, batches, dropout, feedback draws
    patience: int = 10            # epochs without validation improvement before stopping early
    mirror: bool = True           # add left/right mirrored clips
    device: str = "auto"          # 'auto' (cuda when present), 'cpu' or 'cuda'
    threads: int = 0              # torch CPU threads; 0 = leave torch's default
    resume: str | None = None     # resumable checkpoint to continue from
    init: str | None = None       # fine-tune: start from this model's weights and normalisation
    oversample: dict = field(default_factory=dict)  # motion kind ('side', 'back', ...) -> how many times
                                  # each of its training rows is fed per epoch (an integer >= 1)
    labels: str | None = None     # labelling rule: 'filename' (default), 'folder' or a JSON/CSV table
    workers: int = 1              # processes building the dataset's clips in parallel; 0 = one per CPU core
    cache: bool = True            # keep the built dataset in the dataset cache and reuse it
    cache_dir: str | None = None  # None: $PFNN_DATASET_CACHE, else ~/.cache/pfnn-viewer/datasets

    @classmethod
    def from_dict(cls, values: dict) -> "TrainConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in values.items() if key in known})


@dataclass
class TrainResult:
    out_path: Path | None         # best model so far (None if no epoch finished)
    resume_path: Path             # resumable state (written at every epoch end and on stop)
    epochs_completed: int
    best_epoch: int               # 1-based; 0 if none
    best_val_loss: float
    train_losses: list[float]     # per completed epoch
    val_losses: list[float]
    stopped: bool                 # the stop flag ended the run
    early_stopped: bool
    wall_s: float


# --- data -------------------------------------------------------------------------------------------

def _indices(layout, name: str) -> np.ndarray:
    part = layout.slice(name)
    return np.arange(part.start, part.stop)


def _foot_joint_indices(data) -> list[int]:
    """The contact joints the labels were made on (stored with the skeleton by the data builder)."""
    from pfnn_core.skeleton import contact_joint_order, foot_joints
    stored = data.skeleton.get("contact_joints")
    if stored:
        return [int(j) for j in stored]
    return contact_joint_order(foot_joints(list(data.skeleton["names"]), data.skeleton.get("parents")))


def _content_sha1(data) -> dict:
    digest = hashlib.sha1()
    for array in (data.x, data.y, data.phase):
        digest.update(memoryview(np.ascontiguousarray(array)).cast("B"))  # no copy of a memory-mapped set
    return {"sha1": np.array(digest.hexdigest())}


def _data_summary(data) -> dict:
    # seconds on a large set: kept with a cached set (named by what it hashes)
    sha1 = str(remembered(data, "content-sha1-x-y-phase", lambda: _content_sha1(data))["sha1"])
    summary = {key: value for key, value in (getattr(data, "summary", None) or {}).items()
               if isinstance(value, (str, int, float, bool)) and not key.startswith("cache")}
    return {**summary, "files": list(data.clip_names), "samples": int(len(data.x)), "sha1": sha1}


@dataclass
class _Tensors:
    """Everything the loop needs on the device: normalised arrays and the slices the loss reads."""
    x: torch.Tensor               # [N, nx] normalised (or NormalisedRows: indexed the same way)
    y: torch.Tensor               # [N, ny] normalised (or NormalisedRows)
    phase: torch.Tensor           # [N]
    next_index: torch.Tensor      # [N] long, -1 at clip ends
    y_mean: torch.Tensor
    y_std: torch.Tensor
    x_pose: torch.Tensor          # indices of joint_pos + joint_vel in x
    y_pose: torch.Tensor          # the same quantities in y (both in the root frame of frame i)
    pose_scale: torch.Tensor      # normalised y pose -> normalised x pose: y * scale + shift
    pose_shift: torch.Tensor
    root_vel: torch.Tensor        # indices in y
    joint_vel: torch.Tensor       # indices in y, [J * 3]
    contacts: torch.Tensor        # indices in y, [4]
    foot_joints: torch.Tensor     # joint indices of the 4 contact joints
    style: torch.Tensor | None    # [N] long style index of each row; None for a model without styles
    num_styles: int = 0           # width of the model's style input (one-hot per batch, `_style_of`)


def _normalised(array, mean: torch.Tensor, std: torch.Tensor, device, on_demand: bool | None = None):
    """The rows of `array` normalised: on the CPU gathered and normalised per batch (`NormalisedRows`, no
    normalised copy of a possibly memory-mapped set in every process); on a GPU normalised once into GPU
    memory, chunk by chunk (fast gathers; each GPU then holds the whole set). Same numbers either way."""
    if on_demand if on_demand is not None else device.type == "cpu":
        return NormalisedRows(array, mean, std, device)
    out = torch.empty(array.shape, dtype=torch.float32, device=device)
    for start in range(0, len(array), 1 << 16):
        chunk = torch.from_numpy(np.array(array[start:start + (1 << 16)], dtype=np.float32)).to(device)
        out[start:start + len(chunk)] = (chunk - mean) / std
    return out


def _to_device(data, norm, device, on_demand: bool | None = None) -> _Tensors:
    x_layout, y_layout = data.layout  # ModelLayout(x, y)
    x_mean, x_std, y_mean, y_std = (torch.as_tensor(np.asarray(a, np.float32), device=device) for a in norm)
    as_long = lambda a: torch.as_tensor(np.array(a, dtype=np.int64), device=device)  # noqa: E731
    x_pose = np.concatenate([_indices(x_layout, "joint_pos"), _indices(x_layout, "joint_vel")])
    y_pose = np.concatenate([_indices(y_layout, "joint_pos"), _indices(y_layout, "joint_vel")])
    x_pose_t, y_pose_t = as_long(x_pose), as_long(y_pose)
    return _Tensors(
        x=_normalised(data.x, x_mean, x_std, device, on_demand),
        y=_normalised(data.y, y_mean, y_std, device, on_demand),
        phase=torch.as_tensor(np.array(data.phase, dtype=np.float32), device=device),
        next_index=as_long(data.next_index),
        y_mean=y_mean, y_std=y_std, x_pose=x_pose_t, y_pose=y_pose_t,
        pose_scale=y_std[y_pose_t] / x_std[x_pose_t],
        pose_shift=(y_mean[y_pose_t] - x_mean[x_pose_t]) / x_std[x_pose_t],
        root_vel=as_long(_indices(y_layout, "root_vel")),
        joint_vel=as_long(_indices(y_layout, "joint_vel")),
        contacts=as_long(_indices(y_layout, "contacts")),
        foot_joints=as_long(_foot_joint_indices(data)),
        style=as_long(data.style) if num_styles(data) else None, num_styles=num_styles(data),
    )


def num_styles(data) -> int:
    """Width of the model's style input: the number of styles, 0 when the data has one style or none."""
    styles = list(getattr(data, "styles", None) or [])
    return len(styles) if len(styles) > 1 else 0


def _style_of(tensors: _Tensors, rows: torch.Tensor):
    """One-hot styles [B, S] of the given rows, made per batch (never an [N, S] copy of the whole set)."""
    if tensors.style is None:
        return None
    return functional.one_hot(tensors.style[rows], tensors.num_styles).float()


# --- loss -------------------------------------------------------------------------------------------

def sample_losses(pred: torch.Tensor, target: torch.Tensor, tensors: _Tensors, config: TrainConfig) -> dict:
    """Per-sample loss terms [B] on normalised predictions and targets.

    - `fit`: SmoothL1 on every normalised output (the phase is an input, never normalised).
    - `root_velocity`: the root velocity must agree with the body's motion. Integrating a root velocity
      that disagrees with the predicted limbs is what makes the character slide, so we ask that the gap
      between the predicted root velocity and the mean horizontal joint velocity equals the data's gap
      (the gap is not zero in the data: the body sways around the root within a step).
    - `foot_skating`: horizontal speed of the 4 contact joints (m/s) weighted by the data's contact label,
      counted only above the mocap's own speed for that sample, so the term never fights the data.
    """
    fit = functional.smooth_l1_loss(pred, target, reduction="none").mean(-1)

    def physical(values, index):
        return values[:, index] * tensors.y_std[index] + tensors.y_mean[index]

    def root_minus_body(values):
        joint_vel = physical(values, tensors.joint_vel).reshape(len(values), -1, 3)
        return physical(values, tensors.root_vel) - joint_vel[..., [0, 2]].mean(1)

    root_velocity = functional.smooth_l1_loss(root_minus_body(pred), root_minus_body(target),
                                              reduction="none").sum(-1)

    def foot_speed(values):
        joint_vel = physical(values, tensors.joint_vel).reshape(len(values), -1, 3)
        return joint_vel[:, tensors.foot_joints][..., [0, 2]].norm(dim=-1)

    contact = physical(target, tensors.contacts).clamp(0.0, 1.0)
    foot_skating = (contact * torch.relu(foot_speed(pred) - foot_speed(target))).mean(-1)
    total = fit + config.root_velocity_weight * root_velocity + config.foot_skating_weight * foot_skating
    return {"total": total, "fit": fit, "root_velocity": root_velocity, "foot_skating": foot_skating}


def rollout_loss(model: PFNN, tensors: _Tensors, start_rows: torch.Tensor, config: TrainConfig,
                 feedback_probability: float) -> torch.Tensor:
    """Mean loss over rollouts of `rollout_length` frames from `start_rows`.

    From the second frame on, each rollout's input pose is, with `feedback_probability`, the model's own
    previous prediction instead of the data (scheduled sampling). The fed-back pose is detached: the
    model learns to recover from its own errors without back-propagating through time. A rollout that
    reaches its clip's end stops contributing.
    """
    rows = start_rows
    active = torch.ones(len(rows), dtype=torch.bool, device=rows.device)
    total = torch.zeros((), device=rows.device)
    count = torch.zeros((), device=rows.device)
    fed_pose = None
    for step in range(config.rollout_length):
        x = tensors.x[rows]
        if fed_pose is not None:
            feed = torch.rand(len(rows), device=rows.device) < feedback_probability
            x[:, tensors.x_pose] = torch.where(feed[:, None], fed_pose, x[:, tensors.x_pose])
        pred = model(x, tensors.phase[rows], _style_of(tensors, rows))
        losses = sample_losses(pred, tensors.y[rows], tensors, config)["total"]
        total = total + (losses * active).sum()
        count = count + active.sum()
        following = tensors.next_index[rows]
        active = active & (following >= 0)
        if step + 1 < config.rollout_length:
            if not bool(active.any()):
                break
            rows = torch.where(following >= 0, following, rows)
            fed_pose = pred[:, tensors.y_pose].detach() * tensors.pose_scale + tensors.pose_shift
    return total / count.clamp(min=1)


@torch.no_grad()
def validation_losses(model: PFNN, tensors: _Tensors, rows: torch.Tensor, config: TrainConfig) -> dict:
    """Mean one-step loss terms over `rows` in eval mode."""
    was_training = model.training
    model.eval()
    sums: dict[str, float] = {}
    for start in range(0, len(rows), VALIDATION_BATCH):
        batch = rows[start:start + VALIDATION_BATCH]
        pred = model(tensors.x[batch], tensors.phase[batch], _style_of(tensors, batch))
        for name, value in sample_losses(pred, tensors.y[batch], tensors, config).items():
            sums[name] = sums.get(name, 0.0) + float(value.sum())
    model.train(was_training)
    return {name: value / max(len(rows), 1) for name, value in sums.items()}


# --- schedule ---------------------------------------------------------------------------------------

def cosine_lr(config: TrainConfig, step: int, total_steps: int) -> float:
    final = config.lr * config.lr_final_fraction
    progress = min(step / max(total_steps, 1), 1.0)
    return final + 0.5 * (config.lr - final) * (1.0 + math.cos(math.pi * progress))


def batch_beta(config: TrainConfig, step: int) -> float:
    """The RBF beta of one optimizer step: log-uniform in `beta_range`, drawn from (seed, step) so a
    resumed run draws the same values; `beta` when there is no range."""
    if not config.beta_range:
        return float(config.beta)
    low, high = (float(v) for v in config.beta_range)
    draw = np.random.default_rng([config.seed, 7919, step]).random()
    return float(math.exp(math.log(low) + draw * (math.log(high) - math.log(low))))


def feedback_probability(config: TrainConfig, epoch: int) -> float:
    ramp = config.feedback_ramp_epochs or max(config.epochs // 2, 1)
    return config.feedback_max * min(epoch / ramp, 1.0)


def epoch_start_rows(train_rows: np.ndarray, config: TrainConfig, epoch: int) -> list[np.ndarray]:
    """Shuffled rollout starts for one epoch, in batches; derived from (seed, epoch) so a resumed run
    replays the same batches. One epoch feeds about as many frames as the training set has."""
    order = np.random.default_rng([config.seed, epoch]).permutation(train_rows)
    starts = order[:max(1, math.ceil(len(order) / config.rollout_length))]
    return [starts[i:i + config.batch_size] for i in range(0, len(starts), config.batch_size)]


# --- resumable state --------------------------------------------------------------------------------

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


def _rng_tensors(device: torch.device) -> dict:
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


def resume_path_for(out) -> Path:
    out = Path(out)
    return out.with_name(out.name.removesuffix(".safetensors") + ".resume.safetensors")


def resume_config(path, **overrides) -> TrainConfig:
    """The TrainConfig stored in a resumable checkpoint, with `overrides` (those not None) applied."""
    stored = load_checkpoint(path).meta.get("resume")
    if not stored:
        raise ValueError(f"{path}: not a resumable checkpoint (no training state); train a new model instead")
    config = TrainConfig.from_dict(stored["config"])
    return replace(config, resume=str(path), **{k: v for k, v in overrides.items() if v is not None})


# --- the loop ---------------------------------------------------------------------------------------

def choose_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError("--device cuda was asked for but CUDA is not available here; use --device cpu")
    return torch.device(name)


def load_training_data(config: TrainConfig, progress: Callable[[int, int], None] | None = None):
    """The dataset of `config.data`, labelled by `config.labels`: from the dataset cache when it holds these
    files, settings and labels, else built (in `config.workers` processes) and stored there.
    `progress(files_done, files_total)`."""
    from pfnn_core.data import dataset_cache
    from pfnn_core.data.labels import LabelRule
    source = config.data[0] if len(config.data) == 1 else list(config.data)
    cache_dir = (config.cache_dir or dataset_cache.default_cache_dir()) if config.cache else None
    return build_training_data(source, mirror=config.mirror, cache_dir=cache_dir, progress=progress,
                                        workers=config.workers, label_rule=LabelRule.parse(config.labels))


def oversampled_rows(train_rows: np.ndarray, data, factors: dict) -> np.ndarray:
    """`train_rows` with the rows of each motion kind in `factors` (`motion_kind`: 'side',
    'back', 'run', 'walk', ...) repeated to `factors[kind]` copies in all; calm standing rows keep one.
    Side-steps and backward walks are seconds per style among an hour of forward walks: repeating them
    makes every epoch weigh them more. ValueError for an unknown kind or a factor below 1."""
    from pfnn_core.data.labels import ClipLabel
    if not factors:
        return train_rows
    known = ("walk", "run", "back", "side", "stand", "other", "unknown")
    for kind, factor in factors.items():
        if kind not in known:
            raise ValueError(f"oversample: unknown motion kind '{kind}' (known: {', '.join(known[:5])})")
        if int(factor) != factor or factor < 1:
            raise ValueError(f"oversample: the factor of '{kind}' must be a whole number >= 1, got {factor}")
    if not data.clip_labels:
        raise ValueError("oversample: this dataset has no clip labels to find motion kinds by")
    clip_kinds = np.array([motion_kind(ClipLabel(label["style"], label["content"]))
                           for label in data.clip_labels])
    kinds = clip_kinds[data.clip[train_rows]]
    standing = getattr(data, "standing", None)
    if standing is not None:
        kinds = np.where(standing[train_rows], "stand", kinds)
    parts = [train_rows]
    for kind, factor in factors.items():
        parts += [train_rows[kinds == kind]] * (int(factor) - 1)
    return np.concatenate(parts)


def _split_and_norm(data, config: TrainConfig):
    train_rows, val_rows = split_by_clip(data, config.val_fraction, config.seed)
    train_rows = np.asarray(train_rows)
    # seconds on a large set: kept with a cached set, named by the training rows it is computed over
    rows_digest = hashlib.sha1(np.ascontiguousarray(train_rows, dtype=np.int64)).hexdigest()[:16]
    stats = remembered(data, f"normalisation-{rows_digest}",
                       lambda: dict(zip(NORM_NAMES, normalisation(data, train_rows))))
    return train_rows, np.asarray(val_rows), tuple(stats[name] for name in NORM_NAMES)


def _batch_loss(loss: torch.Tensor, context: distributed.Context) -> float:
    """The loss of the whole global batch (each rank's loss is already scaled by its share), on every rank."""
    if not context.distributed:
        return loss.item()
    return float(distributed.sum_over_ranks([loss.item()], context)[0] / context.world_size)


def _restore_rank_rng(training_state: dict, stored: dict, device, context: distributed.Context,
                      config: TrainConfig) -> None:
    """Each rank continues its own random stream; a rank the checkpoint has none for (the run was saved by
    fewer processes) starts a new one, and the run no longer repeats an uninterrupted one exactly."""
    if _restore_rng(training_state, device, context.rank):
        return
    torch.manual_seed(distributed.rank_seed(config.seed + int(stored["run"].get("step", 0)), context.rank))
    if context.is_main or context.rank == stored.get("world_size", 1):
        logging.getLogger(__name__).warning(
            "%s was saved by %s process(es) and resumed by %s: the ranks without a saved random state draw new "
            "numbers, so this run will not repeat an uninterrupted one exactly", config.resume,
            stored.get("world_size", 1), context.world_size)


def train(config: TrainConfig, progress: Callable[[dict], None] | None = None,
          stop: threading.Event | None = None, data=None) -> TrainResult:
    """Train (or resume) a PFNN; returns when done, early-stopped or stopped by `stop` (checked per batch).

    Raises ValueError for unusable data and TrainingError for a NaN loss (the last good checkpoints are
    kept) or a resumed model that does not fit the data.
    """
    wall_start = time.perf_counter()
    if config.threads > 0:
        torch.set_num_threads(config.threads)
    context = distributed.current()
    device = distributed.training_device(choose_device(config.device), context)
    if data is None:
        data = distributed.first_on_each_machine(lambda: load_training_data(config), context)
    train_rows, val_rows, norm = _split_and_norm(data, config)
    if len(train_rows) == 0:
        raise ValueError("no training samples after the train/validation split")
    train_rows = oversampled_rows(train_rows, data, config.oversample)
    start_from = load_checkpoint(config.init, device="cpu") if config.init and not config.resume else None
    if start_from is not None:  # fine-tuning: the model's inputs and outputs keep its own normalisation
        norm = tuple(start_from.norm[name].numpy() for name in NORM_NAMES)
    tensors = _to_device(data, norm, device)
    out_path, resume_path = Path(config.out), resume_path_for(config.out)

    torch.manual_seed(config.seed)
    meta_base_data = _data_summary(data)
    # The held-out clips by name, so an evaluation never has to repeat the split to find them.
    meta_base_data["val_files"] = sorted({data.clip_names[c] for c in np.unique(data.clip[val_rows])})
    # Absolute, so `pfnn-eval` finds the clips of this skeleton from any working directory.
    meta_base_data["folders"] = [str(Path(item).resolve()) for item in config.data]
    model_config = ModelConfig(input_size=data.x.shape[1], output_size=data.y.shape[1],
                               hidden_size=config.hidden_size, phase_function=config.phase_function,
                               num_kernels=config.num_kernels, beta=config.beta, dropout=config.dropout,
                               num_styles=num_styles(data))
    model = PFNN(model_config).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    run = {"epoch": 0, "batch": 0, "step": 0, "best_val_loss": math.inf, "best_epoch": 0,
           "epochs_since_best": 0, "train_losses": [], "val_losses": [], "epoch_loss_sum": 0.0,
           "epoch_batches": 0, "wall_s": 0.0}
    if config.resume:
        resumed = load_checkpoint(config.resume, device="cpu")
        stored = resumed.meta.get("resume")
        if not stored:
            raise ValueError(f"{config.resume}: not a resumable checkpoint (no training state)")
        if resumed.config != model_config:
            raise TrainingError(f"{config.resume}: its model {resumed.config} does not match this data and "
                                f"settings {model_config}")
        model.load_state_dict(resumed.model.state_dict())
        _restore_optimizer(optimizer, resumed.training_state, stored["param_groups"])
        run.update(stored["run"])
        _restore_rank_rng(resumed.training_state, stored, device, context, config)
        if context.is_main and resumed.meta.get("data", {}).get("sha1") != meta_base_data["sha1"]:
            logging.getLogger(__name__).warning("%s was trained on different data; continuing on this data",
                                                config.resume)
    else:
        if start_from is not None:
            if start_from.config != model_config:
                raise TrainingError(f"{config.init}: its model {start_from.config} does not match this data and "
                                    f"settings {model_config}")
            model.load_state_dict(start_from.model.state_dict())
        if context.rank > 0:
            torch.manual_seed(distributed.rank_seed(config.seed, context.rank))  # its own dropout and feedback draws
    trainable = distributed.wrap_model(model, context)
    model.train()

    batches_per_epoch = len(epoch_start_rows(train_rows, config, 0))
    total_steps = batches_per_epoch * config.epochs
    val_rows_t = torch.as_tensor(val_rows if len(val_rows) else train_rows, dtype=torch.long, device=device)
    val_rows_t = val_rows_t[context.rank::context.world_size]  # this rank's share; the means are summed over ranks
    meta_base_data["clip_labels"] = {name: [label["style"], label["content"]]
                                     for name, label in zip(data.clip_names, data.clip_labels)}
    meta_base = {"skeleton": data.skeleton, "stride": data.stride, "gait_speeds": data.gait_speeds,
                 "data": meta_base_data, "styles": {"names": list(data.styles), "stats": data.style_stats},
                 "floor_heights": list(data.floor_heights), "stance": data.stance}
    session_start, session_start_step = time.perf_counter(), run["step"]

    def report(event: str, **extra) -> None:
        if progress is None or not context.is_main:
            return
        done = run["step"] - session_start_step
        elapsed = time.perf_counter() - session_start
        eta = elapsed / done * (total_steps - run["step"]) if done else None
        in_epoch = run["epoch_batches"] > 0 or not run["train_losses"]
        progress({"event": event, "epoch": run["epoch"] + 1 if in_epoch else run["epoch"],
                  "epochs": config.epochs, "batch": run["batch"], "batches": batches_per_epoch,
                  "step": run["step"], "total_steps": total_steps,
                  "train_loss": (run["epoch_loss_sum"] / max(run["epoch_batches"], 1) if in_epoch
                                 else run["train_losses"][-1]),
                  "val_loss": run["val_losses"][-1] if run["val_losses"] else None,
                  "best_val_loss": run["best_val_loss"] if run["best_epoch"] else None,
                  "lr": optimizer.param_groups[0]["lr"], "elapsed_s": elapsed, "eta_s": eta,
                  "world_size": context.world_size, **extra})

    def wall() -> float:
        return run["wall_s"] + time.perf_counter() - wall_start

    def save_resumable() -> None:
        rng_states = distributed.gather_to_main(_rng_tensors(device), context)  # every rank takes part
        if context.is_main:
            tensors_to_save, param_groups = _optimizer_tensors(optimizer)
            tensors_to_save.update(rng_states)
            stored_run = {**run, "wall_s": wall()}
            save_checkpoint(resume_path, model, data.layout, norm,
                            {**meta_base, "resume": {"config": asdict(config), "run": stored_run,
                                                     "param_groups": param_groups, "world_size": context.world_size}},
                            training_state=tensors_to_save)
        distributed.wait_for_all(context)  # no rank returns before the files are written

    def result(stopped: bool = False, early_stopped: bool = False) -> TrainResult:
        return TrainResult(out_path=out_path if run["best_epoch"] else None, resume_path=resume_path,
                           epochs_completed=len(run["train_losses"]), best_epoch=run["best_epoch"],
                           best_val_loss=run["best_val_loss"], train_losses=list(run["train_losses"]),
                           val_losses=list(run["val_losses"]), stopped=stopped,
                           early_stopped=early_stopped, wall_s=wall())

    while run["epoch"] < config.epochs:
        epoch = run["epoch"]
        batches = epoch_start_rows(train_rows, config, epoch)
        feedback = feedback_probability(config, epoch)
        while run["batch"] < len(batches):
            if distributed.any_rank(stop is not None and stop.is_set(), context):
                save_resumable()
                report("stopped")
                return result(stopped=True)
            lr = cosine_lr(config, run["step"], total_steps)
            for group in optimizer.param_groups:
                group["lr"] = lr
            share, share_weight = distributed.rank_share(batches[run["batch"]], context)
            start_rows = torch.as_tensor(share, dtype=torch.long, device=device)
            model.beta = batch_beta(config, run["step"])  # drawn from (seed, step): the same on every rank
            loss = rollout_loss(trainable, tensors, start_rows, config, feedback)
            if context.distributed:
                loss = loss * share_weight
            batch_loss = _batch_loss(loss, context)
            if not math.isfinite(batch_loss):
                kept = [str(p) for p in (out_path, resume_path) if p.exists()]
                raise TrainingError(f"loss became {batch_loss} at epoch {epoch + 1}, batch {run['batch'] + 1}; "
                                    f"training stopped, last good checkpoints kept: {', '.join(kept) or 'none'}")
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
            optimizer.step()
            run["step"] += 1
            run["batch"] += 1
            run["epoch_loss_sum"] += batch_loss
            run["epoch_batches"] += 1
            report("batch", feedback_probability=feedback)

        model.beta = float(config.beta)
        val = distributed.mean_of_means(validation_losses(model, tensors, val_rows_t, config), len(val_rows_t),
                                        context)
        run["train_losses"].append(run["epoch_loss_sum"] / max(run["epoch_batches"], 1))
        run["val_losses"].append(val["total"])
        run.update(epoch=epoch + 1, batch=0, epoch_loss_sum=0.0, epoch_batches=0)
        if val["total"] < run["best_val_loss"]:
            run.update(best_val_loss=val["total"], best_epoch=epoch + 1, epochs_since_best=0)
            training_meta = {"epochs_completed": epoch + 1, "best_epoch": epoch + 1,
                             "train_loss": run["train_losses"][-1], "val_loss": val["total"],
                             "val_terms": val, "train_losses": run["train_losses"],
                             "val_losses": run["val_losses"], "wall_s": wall(), "device": str(device),
                             "world_size": context.world_size, "config": asdict(config)}
            if context.is_main:
                save_checkpoint(out_path, model, data.layout, norm, {**meta_base, "training": training_meta})
        else:
            run["epochs_since_best"] += 1
        save_resumable()
        report("epoch", val_terms=val)
        if run["epochs_since_best"] >= config.patience:
            report("done", early_stopped=True)
            return result(early_stopped=True)
    report("done", early_stopped=False)
    return result()


# --- command line -----------------------------------------------------------------------------------

def _kind_factor(text: str) -> tuple[str, int]:
    kind, _, factor = text.partition("=")
    try:
        return kind.strip(), int(factor)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected KIND=N (e.g. side=4), got '{text}'") from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pfnn-train", description="Train a PFNN on a folder of BVH clips.")
    parser.add_argument("data", nargs="*", help="BVH folder(s) or files (default assets/bvh)")
    parser.add_argument("--out", help=f"best model path (default {DEFAULT_OUT})")
    parser.add_argument("--epochs", type=int)
    parser.add_argument("--hidden", type=int, dest="hidden_size")
    parser.add_argument("--phase-function", choices=["rbf", "cubic"])
    parser.add_argument("--kernels", type=int, dest="num_kernels")
    parser.add_argument("--beta", type=float)
    parser.add_argument("--beta-range", type=float, nargs=2, metavar=("LO", "HI"),
                        help="rbf: draw beta per batch log-uniformly from [LO, HI] (default 4 16)")
    parser.add_argument("--fixed-beta", action="store_const", const=(), dest="beta_range",
                        help="rbf: always train at --beta")
    parser.add_argument("--labels", help="labelling rule: 'filename' (default: {set}_{content}_{style}_{id}), "
                        "'folder' (one folder per style) or a JSON/CSV table of file -> style, content")
    parser.add_argument("--dropout", type=float)
    parser.add_argument("--lr", type=float)
    parser.add_argument("--batch-size", type=int)
    parser.add_argument("--rollout", type=int, dest="rollout_length")
    parser.add_argument("--patience", type=int)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--device", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--threads", type=int, help="CPU threads for BLAS and torch (default: all cores, shared "
                        "among the processes torchrun starts on one machine)")
    parser.add_argument("--no-mirror", action="store_false", dest="mirror", default=None)
    parser.add_argument("--init", metavar="MODEL",
                        help="fine-tune: start from this model's weights and normalisation (same size and data layout)")
    parser.add_argument("--oversample", metavar="KIND=N", action="append", type=_kind_factor,
                        help="feed each training row of a motion kind (side, back, run, walk) N times per epoch; "
                             "repeatable")
    parser.add_argument("--resume", metavar="CKPT", help="continue from a *.resume.safetensors checkpoint")
    parser.add_argument("--workers", type=int, default=0,
                        help="processes building the dataset's clips in parallel (default 0: one per CPU core)")
    parser.add_argument("--no-cache", action="store_false", dest="cache", default=None,
                        help="build the dataset afresh and do not store it in the dataset cache")
    parser.add_argument("--cache-dir", metavar="DIR",
                        help="dataset cache folder (default $PFNN_DATASET_CACHE, else ~/.cache/pfnn-viewer/datasets)")
    return parser


def _config_from_args(args: argparse.Namespace) -> TrainConfig:
    overrides = {name: value for name, value in vars(args).items() if name not in ("data", "resume")}
    if args.oversample is not None:
        overrides["oversample"] = dict(args.oversample)
    if args.data:
        overrides["data"] = list(args.data)
    if args.resume:
        return resume_config(args.resume, **overrides)
    return replace(TrainConfig(), **{k: v for k, v in overrides.items() if v is not None})


def default_threads(environ=None) -> int:
    """The CPU threads of one training process: every core, shared among the processes torchrun starts on
    this machine (LOCAL_WORLD_SIZE), so several processes never oversubscribe the cores."""
    environ = os.environ if environ is None else environ
    processes = max(int(environ.get("LOCAL_WORLD_SIZE") or 1), 1)
    return max((os.cpu_count() or 1) // processes, 1)


def _check_data_paths(paths: list[str]) -> None:
    for path in map(Path, paths):
        if not path.exists():
            raise ValueError(f"{path}: no such file or folder")
        if path.is_dir() and not bvh.find_files(path):
            raise ValueError(f"{path}: folder contains no .bvh or .bvh.gz files")


def _prepare_data(config: TrainConfig, context: distributed.Context, on_build=None):
    """Everything checked before any epoch, then the dataset: the data paths, the output path (rank 0 writes
    it), the data checks (in the build, kept in the cache). Each machine's first process builds the
    dataset into the cache; the others read it back."""
    def prepare():
        _check_data_paths(config.data)
        if context.is_main:
            message = checks.errors_message(checks.output_findings(config.out))
            if message:
                raise ValueError(message)
        return load_training_data(config, progress=on_build if context.local_rank == 0 else None)

    return distributed.first_on_each_machine(prepare, context)


def _dataset_report(data, config: TrainConfig, context: distributed.Context) -> list[str]:
    """What pfnn-train prints when it starts: where the dataset came from, its size, the data checks'
    warnings, and the processes taking part."""
    summary = getattr(data, "summary", None) or {}
    lines = []
    if summary.get("cache") == "hit":
        lines.append(f"pfnn-train: dataset read from the cache in {summary.get('cache_load_seconds', 0):.1f} s, "
                     f"not rebuilt ({summary.get('cache_folder')})")
    elif "build_seconds" in summary:
        where = {"stored": f"; cached in {summary.get('cache_folder')}",
                 "not stored": "; the cache could not be written"}.get(summary.get("cache"), " (cache off)")
        lines.append(f"pfnn-train: features built in {summary['build_seconds']:.1f} s with "
                     f"{summary.get('workers', 1)} worker process(es){where}")
    clips = len(data.clip_names)
    minutes = f", {summary['minutes']:.1f} min of motion" if "minutes" in summary else ""
    mirrored = " (mirrored copies included)" if summary.get("mirror") else ""
    lines.append(f"pfnn-train: dataset: {clips} clips{minutes}, {len(data.x):,} samples{mirrored}")
    lines += [str(checks.Finding.from_dict(item)) for item in summary.get("findings", [])]
    if context.distributed:
        lines.append(f"pfnn-train: {context.world_size} processes ({context.backend}); global batch "
                     f"{config.batch_size}, about {math.ceil(config.batch_size / context.world_size)} rows per process")
    return lines


def main(argv: list[str] | None = None) -> int:
    from tqdm import tqdm

    args = _parser().parse_args(argv)
    stop = threading.Event()
    context = distributed.Context()
    build_bar = None

    def on_build(done: int, total: int) -> None:
        nonlocal build_bar
        if build_bar is None:
            build_bar = tqdm(total=total, unit="clip", desc="features", dynamic_ncols=True)
        build_bar.update(done - build_bar.n)

    def say(text: str) -> None:
        if context.is_main:
            print(text, file=sys.stderr)

    try:
        config = _config_from_args(args)
        config = replace(config, threads=set_thread_counts(config.threads or default_threads()))
        context = distributed.setup(config.device)
        say(f"pfnn-train: loading {', '.join(config.data)}")
        data = _prepare_data(config, context, on_build)
    except (ValueError, OSError) as error:
        say(f"pfnn-train: error: {error}")
        distributed.shutdown(context)
        return 2
    except KeyboardInterrupt:
        say("pfnn-train: interrupted while loading data")
        return 130
    finally:
        if build_bar is not None:
            build_bar.close()
    for line in _dataset_report(data, config, context):
        say(line)

    bar = tqdm(total=1, unit="batch", dynamic_ncols=True, disable=not context.is_main)

    def on_progress(info: dict) -> None:
        bar.total = info["total_steps"]
        bar.n = info["step"]
        postfix = {"epoch": f"{info['epoch']}/{info['epochs']}", "loss": f"{info['train_loss']:.4f}"}
        if info["val_loss"] is not None:
            postfix["val"] = f"{info['val_loss']:.4f}"
        if info["world_size"] > 1:
            postfix["processes"] = info["world_size"]
        bar.set_postfix(postfix, refresh=False)
        bar.refresh() if info["event"] != "batch" else bar.update(0)

    def on_interrupt(signum, frame) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        if context.is_main:
            bar.write("pfnn-train: stopping after this batch (Ctrl+C again to abort without saving)")

    # Under torchrun, Ctrl+C reaches the workers as the SIGINT torchrun forwards; a scheduler's SIGTERM
    # (preemption) stops as gracefully. Every rank agrees on the batch to stop at (`train`).
    stop_signals = [signal.SIGINT] + ([signal.SIGTERM] if context.distributed else [])
    previous = ({sig: signal.signal(sig, on_interrupt) for sig in stop_signals}
                if threading.current_thread() is threading.main_thread() else {})
    try:
        result = train(config, progress=on_progress if context.is_main else None, stop=stop, data=data)
    except (ValueError, TrainingError) as error:  # raised on every rank alike
        bar.close()
        say(f"pfnn-train: error: {error}")
        distributed.shutdown(context)
        return 2 if isinstance(error, ValueError) else 1
    except KeyboardInterrupt:
        bar.close()
        say("pfnn-train: aborted; the last epoch's resumable checkpoint is kept")
        return 130  # without waiting for the other processes: torchrun ends them
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    distributed.shutdown(context)
    bar.close()
    if result.stopped:
        again = " under torchrun with the same options" if context.distributed else ""
        say(f"pfnn-train: stopped; resumable checkpoint saved to {result.resume_path}\n"
            f"  resume with: pfnn-train --resume {result.resume_path}{again}")
        return 130
    best = f"{result.best_val_loss:.4f} at epoch {result.best_epoch}" if result.best_epoch else "none"
    say(f"pfnn-train: {result.epochs_completed} epochs in {result.wall_s:.0f} s"
        f"{' (early stop)' if result.early_stopped else ''}; best validation loss {best}; "
        f"model: {result.out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
