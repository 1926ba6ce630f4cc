"""Training the PFNN: `train(config, progress, stop, data)`, the loop the command line (`training.cli`) and the
viewer's background thread (progress callback, stop flag) both run.

AdamW with cosine decay; short rollouts with scheduled sampling (the model's own predicted pose fed back
as the next input's previous pose, with a probability ramping 0 -> max over the epochs, `schedules`); the
loss (`losses`); validation each epoch; keeping the best model; early stopping; resumable checkpoints
(safetensors tensors + JSON, no pickle, `resume`); a fixed seed reproduces a run on the CPU.

Under torchrun (`distributed`), the same loop runs in every process: the model is wrapped in
DistributedDataParallel, each rank takes its share of every global batch (so the batch size and the
learning-rate schedule are the ones asked for, whatever the number of processes), validation sums over
the ranks, stop requests are agreed on before each batch, and rank 0 alone writes checkpoints and reports
progress.

A run reads as its stages: `_start` (data split and normalised, the model new, fine-tuned or resumed),
then per epoch `_train_epoch` (per batch `_train_batch`) and `_end_epoch` (validation, the best model
kept), with the resumable state saved at every epoch end and on stop.
"""
from __future__ import annotations

import math
import threading
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from pfnn_core.device import resolve_device
from pfnn_core.models.checkpoint import NORM_NAMES, save_checkpoint
from pfnn_core.models.pfnn.model import PFNN, ModelConfig
from pfnn_core.models.registry import load_checkpoint
from pfnn_core.training import distributed
from pfnn_core.training.config import TrainConfig, TrainingError, TrainResult
from pfnn_core.training.dataset import checkpoint_meta, load_training_data, split_and_normalise
from pfnn_core.training.losses import rollout_loss, validation_losses
from pfnn_core.training.resume import RunState, restore_run, resumable_state, resume_path_for, rng_tensors
from pfnn_core.training.schedules import (
    batch_beta,
    cosine_lr,
    epoch_start_rows,
    feedback_probability,
    oversampled_rows,
)
from pfnn_core.training.tensors import TrainingTensors, num_styles, to_device


@dataclass
class _Session:
    """What the stages of one training session share: the data on the device, the model and optimizer,
    the run's progress (`RunState`, the part a resumable checkpoint keeps) and the progress callback."""
    config: TrainConfig
    context: distributed.Context
    device: torch.device
    data: object                  # the dataset (`TrainingData` or anything shaped like it)
    norm: tuple                   # x mean, x std, y mean, y std
    tensors: TrainingTensors
    model: PFNN
    trainable: torch.nn.Module    # the model, or DistributedDataParallel around it under torchrun
    optimizer: torch.optim.Optimizer
    run: RunState
    train_rows: np.ndarray        # training rows, oversampled
    val_rows: torch.Tensor        # this rank's share of the validation rows (the means are summed over ranks)
    meta: dict                    # what every checkpoint records about the data (`checkpoint_meta`)
    progress: Callable[[dict], None] | None
    wall_start: float             # perf_counter when `train` was called
    batches_per_epoch: int
    total_steps: int
    session_start_step: int       # the run's step when this session began (for the ETA)
    session_start: float          # perf_counter when the first batch was about to start

    @property
    def out_path(self) -> Path:
        return Path(self.config.out)

    @property
    def resume_path(self) -> Path:
        return resume_path_for(self.config.out)

    def wall(self) -> float:
        """Wall seconds of the whole run: the earlier sessions' and this one's."""
        return self.run.wall_s + time.perf_counter() - self.wall_start

    def report(self, event: str, **extra) -> None:
        """One progress dict to the callback (rank 0 only): where the run is, its losses, lr and ETA."""
        if self.progress is None or not self.context.is_main:
            return
        run = self.run
        done = run.step - self.session_start_step
        elapsed = time.perf_counter() - self.session_start
        eta = elapsed / done * (self.total_steps - run.step) if done else None
        in_epoch = run.epoch_batches > 0 or not run.train_losses
        self.progress({"event": event, "epoch": run.epoch + 1 if in_epoch else run.epoch,
                       "epochs": self.config.epochs, "batch": run.batch, "batches": self.batches_per_epoch,
                       "step": run.step, "total_steps": self.total_steps,
                       "train_loss": (run.epoch_loss_sum / max(run.epoch_batches, 1) if in_epoch
                                      else run.train_losses[-1]),
                       "val_loss": run.val_losses[-1] if run.val_losses else None,
                       "best_val_loss": run.best_val_loss if run.best_epoch else None,
                       "lr": self.optimizer.param_groups[0]["lr"], "elapsed_s": elapsed, "eta_s": eta,
                       "world_size": self.context.world_size, **extra})

    def save_resumable(self) -> None:
        """Write the resumable checkpoint (rank 0; every rank hands its random state over and waits)."""
        rng_states = distributed.gather_to_main(rng_tensors(self.device), self.context)
        if self.context.is_main:
            resume, training_state = resumable_state(self.config, replace(self.run, wall_s=self.wall()),
                                                     self.optimizer, rng_states, self.context.world_size)
            save_checkpoint(self.resume_path, self.model, self.data.layout, self.norm, {**self.meta, "resume": resume},
                            training_state=training_state)
        distributed.wait_for_all(self.context)  # no rank returns before the files are written

    def save_best(self, val: dict) -> None:
        """Write the best model so far with the training facts (rank 0)."""
        run = self.run
        training_meta = {"epochs_completed": run.epoch, "best_epoch": run.epoch,
                         "train_loss": run.train_losses[-1], "val_loss": val["total"],
                         "val_terms": val, "train_losses": run.train_losses,
                         "val_losses": run.val_losses, "wall_s": self.wall(), "device": str(self.device),
                         "world_size": self.context.world_size, "config": asdict(self.config)}
        if self.context.is_main:
            save_checkpoint(self.out_path, self.model, self.data.layout, self.norm,
                            {**self.meta, "training": training_meta})

    def result(self, stopped: bool = False, early_stopped: bool = False) -> TrainResult:
        run = self.run
        return TrainResult(out_path=self.out_path if run.best_epoch else None, resume_path=self.resume_path,
                           epochs_completed=len(run.train_losses), best_epoch=run.best_epoch,
                           best_val_loss=run.best_val_loss, train_losses=list(run.train_losses),
                           val_losses=list(run.val_losses), stopped=stopped,
                           early_stopped=early_stopped, wall_s=self.wall())


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
    device = distributed.training_device(resolve_device(config.device), context)
    if data is None:
        data = distributed.first_on_each_machine(lambda: load_training_data(config), context)
    session = _start(config, data, context, device, progress, wall_start)
    while session.run.epoch < config.epochs:
        if not _train_epoch(session, stop):
            session.save_resumable()
            session.report("stopped")
            return session.result(stopped=True)
        val = _end_epoch(session)
        session.save_resumable()
        session.report("epoch", val_terms=val)
        if session.run.epochs_since_best >= config.patience:
            session.report("done", early_stopped=True)
            return session.result(early_stopped=True)
    session.report("done", early_stopped=False)
    return session.result()


def _start(config: TrainConfig, data, context: distributed.Context, device: torch.device, progress,
           wall_start: float) -> _Session:
    """The data split, normalised and on the device; the model new, fine-tuned from `config.init` or resumed
    from `config.resume`; the optimizer; every seed set in the order a reproducible run needs."""
    train_rows, val_rows, norm = split_and_normalise(data, config)
    if len(train_rows) == 0:
        raise ValueError("no training samples after the train/validation split")
    train_rows = oversampled_rows(train_rows, data, config.oversample)
    start_from = load_checkpoint(config.init, device="cpu") if config.init and not config.resume else None
    if start_from is not None:  # fine-tuning: the model's inputs and outputs keep its own normalisation
        norm = tuple(start_from.norm[name].numpy() for name in NORM_NAMES)
    tensors = to_device(data, norm, device)

    torch.manual_seed(config.seed)  # before the model's initialisation
    meta = checkpoint_meta(data, config, val_rows)
    model_config = ModelConfig(input_size=data.x.shape[1], output_size=data.y.shape[1],
                               hidden_size=config.hidden_size, phase_function=config.phase_function,
                               num_kernels=config.num_kernels, beta=config.beta, dropout=config.dropout,
                               num_styles=num_styles(data))
    model = PFNN(model_config).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    if config.resume:
        run = restore_run(config, model, optimizer, model_config, device, context, meta["data"]["sha1"])
    else:
        run = RunState()
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
    val_rows_t = torch.as_tensor(val_rows if len(val_rows) else train_rows, dtype=torch.long, device=device)
    return _Session(config=config, context=context, device=device, data=data, norm=norm, tensors=tensors,
                    model=model, trainable=trainable, optimizer=optimizer, run=run, train_rows=train_rows,
                    val_rows=val_rows_t[context.rank::context.world_size], meta=meta, progress=progress,
                    wall_start=wall_start, batches_per_epoch=batches_per_epoch,
                    total_steps=batches_per_epoch * config.epochs, session_start_step=run.step,
                    session_start=time.perf_counter())


def _train_epoch(session: _Session, stop: threading.Event | None) -> bool:
    """The remaining batches of the current epoch; False when a stop request (on any rank) ended it early."""
    batches = epoch_start_rows(session.train_rows, session.config, session.run.epoch)
    feedback = feedback_probability(session.config, session.run.epoch)
    while session.run.batch < len(batches):
        if distributed.any_rank(stop is not None and stop.is_set(), session.context):
            return False
        _train_batch(session, batches[session.run.batch], feedback)
        session.report("batch", feedback_probability=feedback)
    return True


def _train_batch(session: _Session, batch: np.ndarray, feedback: float) -> None:
    """One optimizer step on this rank's share of a global batch of rollout starts."""
    config, context, run = session.config, session.context, session.run
    lr = cosine_lr(config, run.step, session.total_steps)
    for group in session.optimizer.param_groups:
        group["lr"] = lr
    share, share_weight = distributed.rank_share(batch, context)
    start_rows = torch.as_tensor(share, dtype=torch.long, device=session.device)
    session.model.beta = batch_beta(config, run.step)  # drawn from (seed, step): the same on every rank
    loss = rollout_loss(session.trainable, session.tensors, start_rows, config, feedback)
    if context.distributed:
        loss = loss * share_weight
    batch_loss = _batch_loss(loss, context)
    if not math.isfinite(batch_loss):
        kept = [str(p) for p in (session.out_path, session.resume_path) if p.exists()]
        raise TrainingError(f"loss became {batch_loss} at epoch {run.epoch + 1}, batch {run.batch + 1}; "
                            f"training stopped, last good checkpoints kept: {', '.join(kept) or 'none'}")
    session.optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(session.model.parameters(), config.max_grad_norm)
    session.optimizer.step()
    run.step += 1
    run.batch += 1
    run.epoch_loss_sum += batch_loss
    run.epoch_batches += 1


def _batch_loss(loss: torch.Tensor, context: distributed.Context) -> float:
    """The loss of the whole global batch (each rank's loss is already scaled by its share), on every rank."""
    if not context.distributed:
        return loss.item()
    return float(distributed.sum_over_ranks([loss.item()], context)[0] / context.world_size)


def _end_epoch(session: _Session) -> dict:
    """Validation at the model's own beta (means over every rank's rows), the epoch's losses recorded, the
    best model written when validation improved; returns the validation terms."""
    run, model = session.run, session.model
    model.beta = float(session.config.beta)
    val = distributed.mean_of_means(validation_losses(model, session.tensors, session.val_rows, session.config),
                                    len(session.val_rows), session.context)
    run.train_losses.append(run.epoch_loss_sum / max(run.epoch_batches, 1))
    run.val_losses.append(val["total"])
    run.epoch, run.batch, run.epoch_loss_sum, run.epoch_batches = run.epoch + 1, 0, 0.0, 0
    if val["total"] < run.best_val_loss:
        run.best_val_loss, run.best_epoch, run.epochs_since_best = val["total"], run.epoch, 0
        session.save_best(val)
    else:
        run.epochs_since_best += 1
    return val
