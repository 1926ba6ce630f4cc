"""Training the motion VAE (`pfnn-train --kind mvae`, or `python -m pfnn_core.models.mvae.cli` for every option).

Two stages over one schedule of epochs (an epoch = `batches_per_epoch` batches of rollouts drawn from
the trimmed training windows, `mvae_frames.SequenceIndex`):

1. the VAE (`vae_epochs`): the first `decoder_only_epochs` train the decoder alone with the encoder
   frozen and no KL (the KL cannot push the latent back to the prior before the decoder uses it);
   then the KL weight warms up linearly over `kl_warmup_epochs` to `kl_weight`. Rollouts of
   `rollout` frames with scheduled sampling: `teacher_epochs` teacher-forced, `ramp_epochs` ramping
   the feedback 0 -> 1, then fully autoregressive [Ling et al.: 8 frames; 20, 20 and 100 of 140 epochs].
2. the control policy (`policy_epochs`) through the frozen decoder (`mvae_rollouts.policy_rollout`),
   on rollouts of `policy_rollout` frames (0: `rollout`), with its own foot weight and, when their
   weights are set, a skating term near the floor, a jerk term, a style term (a small frame -> style
   classifier trained on the data before the stage, then frozen) and a still term (root and feet at rest
   while commanded to stand: on the data's standing frames, on an `idle_share` of windows drawn from
   those that end standing, and on a `stop_share` of rollouts turned into stops).

`policy_only` names a model checkpoint: its encoder and decoder are kept as they are (frozen), its
policy is trained further for `policy_epochs` (the VAE stage is skipped; its facts and loss history
are the checkpoint's).

After every VAE epoch the KL of each latent dimension is measured on held-out clips; the number of
active dimensions is logged, a warning given when fewer than a quarter are active (posterior
collapse), and both go in the checkpoint. A resumable checkpoint (`*.resume.safetensors`) is written
every `save_every_s` seconds and at each epoch's end; `resume` continues from one.
"""
from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field, fields
from typing import Callable

import numpy as np
import torch

from pfnn_core.models.mvae.losses import active_dimensions, collapse_warning
from pfnn_core.models.mvae.networks import MVAEConfig
from pfnn_core.models.mvae.rollouts import LossWeights, policy_rollout, vae_rollout
from pfnn_core.models.mvae.session import Session, prepare

log = logging.getLogger(__name__)


@dataclass
class MVAETrainConfig:
    data: list = field(default_factory=lambda: ["assets/bvh"])  # BVH folders or files
    out: str = "runs/mvae.safetensors"  # the model; the resumable state goes next to it
    latent_size: int = 32
    encoder: str = "mlp"          # 'mlp' over the last `window` frames or 'gru' over them
    window: int = 2               # encoder window (frames) [Ling et al. 2; the design notes 30 with a GRU]
    experts: int = 6
    hidden: int = 256             # encoder and decoder hidden units
    carry: float = 0.0            # the decoder's frame = carry x the previous frame + its output (0: the output)
    rollout: int = 8              # frames per rollout [Ling et al.: 8]
    batch_size: int = 128         # rollouts per step
    batches_per_epoch: int = 250
    vae_epochs: int = 34
    decoder_only_epochs: int = 3  # encoder frozen, no KL
    kl_warmup_epochs: int = 6     # KL weight 0 -> kl_weight after the decoder-only epochs
    teacher_epochs: int = 5       # feedback 0
    ramp_epochs: int = 5          # feedback 0 -> 1, then fully autoregressive
    policy_epochs: int = 10
    kl_weight: float = 0.001
    foot_weight: float = 0.5
    acceleration_weight: float = 0.1
    velocity_weight: float = 1.0  # the policy's root-velocity (responsiveness) term
    policy_foot_weight: float = -1.0  # the policy's foot term (< 0: foot_weight)
    skate_weight: float = 0.0     # the policy's: feet within 2 cm of the floor sliding, or sunk (m/s, m)
    jerk_weight: float = 0.0      # the policy's: the pose's third difference against the data's
    style_weight: float = 0.0     # the policy's: the style classifier's cross-entropy on the decoded frames
    still_weight: float = 0.0     # the policy's: root and foot motion above the data's while commanded to stand
    planted_weight: float = 0.0   # the policy's: contact feet moving in the world as root and pose place them (m/s)
    vae_planted_weight: float = 0.0  # the same term for the decoder in the VAE stage
    idle_share: float = 0.0       # share of each policy batch drawn from windows that end standing
    stop_share: float = 0.0       # share of policy rollouts made stops (standing command from the first target)
    policy_rollout: int = 0       # frames per policy rollout (0: `rollout`)
    policy_only: str | None = None  # a model checkpoint: keep its encoder and decoder, train its policy on
    lr: float = 5e-4              # Adam, decayed linearly to lr_final within each stage
    lr_final: float = 1e-5
    max_grad_norm: float = 1.0
    val_fraction: float = 0.1
    val_windows: int = 2048       # held-out windows measured after each epoch
    seed: int = 0
    threads: int = 1
    save_every_s: float = 300.0   # resumable checkpoint at least this often
    max_minutes: float = 0.0      # > 0: end a stage early to fit (the VAE stage keeps the policy's epochs)
    resume: str | None = None
    mirror: bool = True
    labels: str | None = None
    workers: int = 1
    cache: bool = True
    cache_dir: str | None = None

    def network_config(self, frame_size: int, control_size: int, num_styles: int) -> MVAEConfig:
        return MVAEConfig(frame_size=frame_size, control_size=control_size, num_styles=num_styles,
                          latent_size=self.latent_size, encoder=self.encoder, window=self.window,
                          encoder_hidden=self.hidden, decoder_hidden=self.hidden, experts=self.experts,
                          carry=self.carry)

    def weights(self, stage: str = "vae") -> LossWeights:
        if stage == "vae":
            return LossWeights(self.kl_weight, self.foot_weight, self.acceleration_weight, self.velocity_weight,
                               planted=self.vae_planted_weight)
        foot = self.foot_weight if self.policy_foot_weight < 0 else self.policy_foot_weight
        return LossWeights(self.kl_weight, foot, self.acceleration_weight, self.velocity_weight,
                           skate=self.skate_weight, jerk=self.jerk_weight, style=self.style_weight,
                           still=self.still_weight, planted=self.planted_weight)

    def rollout_length(self, stage: str) -> int:
        return self.policy_rollout if stage == "policy" and self.policy_rollout > 0 else self.rollout

    @property
    def epochs(self) -> int:
        return self.vae_epochs + self.policy_epochs

    @classmethod
    def from_dict(cls, values: dict) -> "MVAETrainConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in values.items() if key in known})


def feedback_at(config: MVAETrainConfig, epoch: int, fraction: float) -> float:
    """Scheduled sampling: the probability of feeding back the model's own frame at (epoch + fraction)."""
    position = epoch + fraction - config.teacher_epochs
    if position <= 0.0:
        return 0.0
    return min(position / max(config.ramp_epochs, 1e-9), 1.0)


def kl_weight_at(config: MVAETrainConfig, epoch: int, fraction: float) -> float:
    """0 while the decoder trains alone, then warmed up linearly to `kl_weight`."""
    position = epoch + fraction - config.decoder_only_epochs
    if position < 0.0:
        return 0.0
    return config.kl_weight * min(position / max(config.kl_warmup_epochs, 1e-9), 1.0)


def lr_at(config: MVAETrainConfig, share: float) -> float:
    """Linear decay lr -> lr_final over a stage (`share` of it done)."""
    return config.lr + (config.lr_final - config.lr) * min(max(share, 0.0), 1.0)


def train(config, progress: Callable[[dict], None] | None = None, stop: threading.Event | None = None,
          data=None):
    """Train a motion VAE and its policy; `config` an `MVAETrainConfig` or `pfnn-train`'s TrainConfig
    (its data, output, seed, threads, labels and cache settings are taken; the rest are this kind's
    defaults). Returns the training `TrainResult`."""
    if not isinstance(config, MVAETrainConfig):
        config = from_train_config(config)
    torch.manual_seed(config.seed)
    session = prepare(config, data, progress)
    started = time.perf_counter() - session.wall_before
    while session.epoch < config.epochs:
        stage = "vae" if session.epoch < config.vae_epochs else "policy"
        reserve = config.policy_epochs if stage == "vae" else 0
        if session.batch == 0 and _out_of_time(session, config, started, reserve):
            note = f"{stage} stage ended after epoch {session.epoch} of {config.epochs} to fit {config.max_minutes:g} min"
            log.warning("mvae: %s", note)
            session.time_limits.append(note)
            if stage == "policy":
                break
            session.skip_to_policy()
            continue
        if not _run_epoch(session, stage, stop, started):
            session.save_resumable(time.perf_counter() - started)
            return session.result(time.perf_counter() - started, stopped=True)
        _end_epoch(session, stage, time.perf_counter() - started)
    session.save_model(time.perf_counter() - started)
    return session.result(time.perf_counter() - started)


def _out_of_time(session: Session, config: MVAETrainConfig, started: float, reserve_epochs: int) -> bool:
    """With `max_minutes` set: whether one more epoch, and `reserve_epochs` after it, at the pace so far
    would run past it (the VAE stage keeps the policy's epochs in reserve)."""
    if config.max_minutes <= 0 or session.epoch <= session.clock_epoch:
        return False
    elapsed = time.perf_counter() - started
    per_epoch = elapsed / (session.epoch - session.clock_epoch)
    return elapsed + per_epoch * (1 + reserve_epochs) > config.max_minutes * 60.0


def _run_epoch(session: Session, stage: str, stop, started: float) -> bool:
    """The rest of the current epoch's batches; False when `stop` ended it (mid-epoch, resumable)."""
    config = session.config
    model, optimizer = session.model, session.optimizer
    model.train()
    weights = config.weights(stage)
    while session.batch < config.batches_per_epoch:
        if stop is not None and stop.is_set():
            return False
        fraction = session.batch / config.batches_per_epoch
        rows = session.draw_rows(stage)
        if stage == "vae":
            weights.kl = kl_weight_at(config, session.epoch, fraction)
            share = (session.epoch + fraction) / max(config.vae_epochs, 1)
            terms = vae_rollout(model, session.tensors, rows, weights, feedback_at(config, session.epoch, fraction),
                                train_encoder=session.epoch >= config.decoder_only_epochs)
        else:
            share = (session.epoch - config.vae_epochs + fraction) / max(config.policy_epochs, 1)
            terms = policy_rollout(model, session.tensors, rows, weights, stop_share=config.stop_share)
        for group in optimizer[stage].param_groups:
            group["lr"] = lr_at(config, share)
        loss = terms["total"]
        if not bool(torch.isfinite(loss)):
            raise FloatingPointError(f"mvae: the {stage} loss is {float(loss)} at epoch {session.epoch + 1}")
        optimizer[stage].zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(session.trained_parameters(stage), config.max_grad_norm)
        optimizer[stage].step()
        session.add_batch(stage, terms)
        if time.perf_counter() - session.last_save >= config.save_every_s:
            session.save_resumable(time.perf_counter() - started)
        if session.progress:
            session.report("batch", time.perf_counter() - started)
    return True


def _end_epoch(session: Session, stage: str, wall: float) -> None:
    """Validation, the collapse guard, the epoch's losses in the history, a resumable checkpoint."""
    val = session.validate(stage)
    session.end_epoch(stage, val)
    if stage == "vae":
        kl = np.asarray(val["kl_per_dim"])
        log.info("mvae: epoch %d: %d of %d latent dimensions active", session.epoch, active_dimensions(kl), len(kl))
        warning = collapse_warning(kl)
        if warning and session.epoch > session.config.decoder_only_epochs:
            log.warning("mvae: epoch %d: %s", session.epoch, warning)
    session.save_resumable(wall)
    if session.progress:
        session.report("epoch", wall, finished=stage)


def resumed_config(path) -> MVAETrainConfig:
    """The config a resumable motion-VAE checkpoint was trained with (ValueError naming the file)."""
    from pfnn_core.models.registry import load_checkpoint

    stored = (load_checkpoint(path).card.training or {}).get("config")
    if not stored:
        raise ValueError(f"{path}: no motion-VAE training config stored; train a new model instead")
    return MVAETrainConfig.from_dict({**stored, "resume": str(path)})


def from_train_config(train_config) -> MVAETrainConfig:
    """This kind's config from `pfnn-train`'s: the settings both kinds share (resuming, the stored run's
    own settings, only the thread count from this command)."""
    if getattr(train_config, "resume", None):
        resumed = resumed_config(train_config.resume)
        threads = max(int(getattr(train_config, "threads", 0) or resumed.threads or 1), 1)
        return MVAETrainConfig.from_dict({**resumed.__dict__, "threads": threads})
    shared = ("data", "seed", "threads", "resume", "mirror", "labels", "workers", "cache", "cache_dir")
    values = {name: getattr(train_config, name) for name in shared if getattr(train_config, name, None) is not None}
    out = getattr(train_config, "out", None)
    if out and out != "runs/model.safetensors":
        values["out"] = out
    values["threads"] = max(int(values.get("threads") or 1), 1)
    return MVAETrainConfig.from_dict(values)
