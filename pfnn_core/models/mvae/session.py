"""One motion-VAE training run's state (`Session`): the data as tensors, the training and held-out
windows, the networks and their optimizers, the loss history per term, and the checkpoints it writes
(the model, and a resumable state restored by `prepare` when the config names one)."""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import numpy as np
import torch

from pfnn_core.models.checkpoint import NORM_NAMES
from pfnn_core.models.mvae.checkpoint import load_mvae_checkpoint, save_mvae
from pfnn_core.models.mvae.frames import SequenceIndex, control_indices
from pfnn_core.models.mvae.losses import FrameParts, active_dimensions, collapse_warning
from pfnn_core.models.mvae.networks import MotionVAE
from pfnn_core.models.mvae.rollouts import (
    MVAETensors,
    history_length,
    policy_history_length,
    policy_rollout,
    vae_rollout,
)

VAL_CHUNK = 512
TERMS = {"vae": ("total", "reconstruction", "kl", "foot", "acceleration"),
         "policy": ("total", "reconstruction", "velocity", "acceleration", "foot")}
EXTRA_POLICY_TERMS = ("skate", "jerk", "style", "still", "planted")  # kept in the history when their weight is set
CLASSIFIER_STEPS, CLASSIFIER_BATCH = 400, 512


def terms_of(config) -> dict:
    """The loss terms each stage of this run records."""
    weights = config.weights("policy")
    extra = tuple(name for name in EXTRA_POLICY_TERMS if getattr(weights, name) > 0.0)
    vae_extra = ("planted",) if config.weights("vae").planted > 0.0 else ()
    return {"vae": TERMS["vae"] + vae_extra, "policy": TERMS["policy"] + extra}


def train_style_classifier(tensors: MVAETensors, train_rows, seed: int, hidden: int = 128) -> torch.nn.Module:
    """A small MLP from a normalised frame to style logits, trained on the training rows (seeded, so a
    resumed run gets the same one), frozen."""
    generator = torch.Generator().manual_seed(seed + 2)
    with torch.random.fork_rng():  # its own initialisation: the run's random stream is not moved
        torch.manual_seed(seed + 2)
        classifier = torch.nn.Sequential(torch.nn.Linear(tensors.frames.shape[1], hidden), torch.nn.ELU(),
                                         torch.nn.Linear(hidden, hidden), torch.nn.ELU(),
                                         torch.nn.Linear(hidden, tensors.num_styles))
    rows = torch.as_tensor(np.asarray(train_rows, np.int64))
    optimizer = torch.optim.Adam(classifier.parameters(), lr=1e-3)
    for _ in range(CLASSIFIER_STEPS):
        batch = rows[torch.randint(len(rows), (CLASSIFIER_BATCH,), generator=generator)]
        loss = torch.nn.functional.cross_entropy(classifier(tensors.frames[batch]), tensors.style[batch])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    for parameter in classifier.parameters():
        parameter.requires_grad_(False)
    return classifier.eval()


def _pfnn_train_config(config):
    """The PFNN's TrainConfig with the settings the shared data helpers read."""
    from pfnn_core.training.config import TrainConfig

    return TrainConfig(data=list(config.data), seed=config.seed, val_fraction=config.val_fraction,
                       mirror=config.mirror, labels=config.labels, workers=config.workers, cache=config.cache,
                       cache_dir=config.cache_dir)


def _tensors(data, norm: dict, x_layout, y_layout) -> MVAETensors:
    """Normalised frames and control of every row (float32, in chunks, so a memory-mapped set is read once)."""
    from pfnn_core.training.tensors import _foot_joint_indices, num_styles

    control_index = control_indices(x_layout)
    frames = np.empty(data.y.shape, np.float32)
    control = np.empty((len(data.x), len(control_index)), np.float32)
    for start in range(0, len(frames), 1 << 16):
        part = slice(start, start + (1 << 16))
        frames[part] = (np.asarray(data.y[part]) - norm["y_mean"]) / norm["y_std"]
        x_part = np.asarray(data.x[part])[:, control_index]
        control[part] = (x_part - norm["x_mean"][control_index]) / norm["x_std"][control_index]
    styles = num_styles(data)
    idle, future = _standing_command(data, x_layout, control_index)
    stand_rows = np.flatnonzero(idle)
    stand_control = control[stand_rows[0]] if len(stand_rows) else np.zeros(len(control_index), np.float32)
    parts = FrameParts.of(y_layout, _foot_joint_indices(data), norm["y_mean"], norm["y_std"], "cpu",
                          getattr(data, "floor_heights", None))
    return MVAETensors(torch.from_numpy(frames), torch.from_numpy(control),
                       torch.as_tensor(np.array(data.phase, np.float32)),
                       torch.as_tensor(np.array(data.style, np.int64)) if styles else None, styles, parts,
                       idle=torch.from_numpy(idle), stand_control=torch.from_numpy(np.array(stand_control)),
                       future_control=torch.from_numpy(future))


def _standing_command(data, x_layout, control_index) -> tuple[np.ndarray, np.ndarray]:
    """[N] bool: rows whose command is to stand (every future trajectory sample at the root, facing
    ahead, gait 'stand'); [C] bool: the control's future samples (trajectory offsets >= 0)."""
    from pfnn_core.features.contract import TRAJ_OFFSETS

    future_sample = np.asarray(TRAJ_OFFSETS) >= 0
    future_index = []
    for name in ("traj_pos", "traj_dir", "traj_gait"):
        part = x_layout.slice(name)
        width = (part.stop - part.start) // len(TRAJ_OFFSETS)
        future_index.append(np.arange(part.start, part.stop)[np.repeat(future_sample, width)])
    pos, direction, gait = (np.asarray(data.x[:, index]) for index in future_index)
    idle = ((np.abs(pos) < 1e-3).all(1) & (np.abs(direction[:, 0::2]) < 1e-3).all(1)
            & (gait[:, 0::3] > 0.999).all(1))
    return idle, np.isin(control_index, np.concatenate(future_index))


class Session:
    def __init__(self, config, data, progress):
        from pfnn_core.training.dataset import checkpoint_meta, split_and_normalise

        self.config, self.progress = config, progress
        train_rows, val_rows, norm = split_and_normalise(data, _pfnn_train_config(config))
        self.norm = {name: np.asarray(value, np.float32) for name, value in zip(NORM_NAMES, norm)}
        self.layout = data.layout
        x_layout, y_layout = data.layout
        self.tensors = _tensors(data, self.norm, x_layout, y_layout)
        self.model = MotionVAE(config.network_config(y_layout.size, self.tensors.control.shape[1],
                                                     self.tensors.num_styles))
        self.terms = terms_of(config)
        if "style" in self.terms["policy"]:
            if self.tensors.style is not None and self.tensors.num_styles > 1:
                self.tensors.style_classifier = train_style_classifier(self.tensors, train_rows, config.seed)
            else:  # one style or none: nothing to tell apart
                self.terms["policy"] = tuple(term for term in self.terms["policy"] if term != "style")
        self.optimizer = {"vae": torch.optim.Adam(self.trained_parameters("vae"), lr=config.lr),
                          "policy": torch.optim.Adam(self.trained_parameters("policy"), lr=config.lr)}
        self.generator = torch.Generator().manual_seed(config.seed)
        self._windows(data, train_rows, val_rows)
        self.meta = checkpoint_meta(data, _pfnn_train_config(config), val_rows)
        self.epoch, self.batch, self.first_epoch, self.wall_before = 0, 0, 0, 0.0
        self.sums: dict = {}
        self.history: dict = {stage: {term: [] for term in terms} for stage, terms in self.terms.items()}
        self.history["val"] = {stage: {term: [] for term in terms} for stage, terms in self.terms.items()}
        self.kl_per_dim = np.zeros(config.latent_size)
        self.latent_scale = np.ones(config.latent_size, np.float32)
        self.last_save = time.perf_counter()
        self.batches_done = 0
        self.time_limits: list[str] = []  # stages ended early to fit `max_minutes`
        self.clock_epoch = 0  # the epoch this run's training clock started at (the policy's in a policy-only run)

    def _windows(self, data, train_rows, val_rows) -> None:
        """Start positions of the training and held-out windows of each stage (whole clips on one side)."""
        index = SequenceIndex(data.next_index, getattr(data, "standing", None))
        is_train = np.zeros(len(data.y), bool)
        is_train[np.asarray(train_rows)] = True
        self.index, self.starts, self.val, self.idle_starts = index, {}, {}, {}
        window = self.config.window
        rng = np.random.default_rng(self.config.seed)
        for stage, history in (("vae", history_length(window)), ("policy", policy_history_length(window))):
            length = self.config.rollout_length(stage)
            starts = index.starts(history, length)
            train = is_train[index.sequence[starts]]
            if not train.any():
                raise ValueError(f"{self.config.data}: no training windows of {history + length} frames")
            self.starts[stage] = torch.as_tensor(starts[train])
            if stage == "policy" and self.config.idle_share > 0.0:
                ends_idle = self.tensors.idle.numpy()[index.sequence[starts[train] + length - 1]]
                self.idle_starts[stage] = torch.as_tensor(starts[train][ends_idle])
            held = starts[~train] if (~train).any() else starts[train]
            held = rng.choice(held, min(self.config.val_windows, len(held)), replace=False)
            self.val[stage] = torch.as_tensor(index.rows(held, np.arange(-history, length)))

    def trained_parameters(self, stage: str) -> list:
        model = self.model
        if stage == "policy":
            return list(model.policy.parameters())
        return list(model.encoder.parameters()) + list(model.decoder.parameters())

    def draw_rows(self, stage: str) -> torch.Tensor:
        """[B, H + L] rows of a batch of training windows."""
        starts = self.starts[stage]
        picked = starts[torch.randint(len(starts), (self.config.batch_size,), generator=self.generator)]
        idle = self.idle_starts.get(stage)
        if idle is not None and len(idle):  # a share of the windows that end standing
            count = int(round(self.config.idle_share * self.config.batch_size))
            picked[:count] = idle[torch.randint(len(idle), (count,), generator=self.generator)]
        history = history_length(self.config.window) if stage == "vae" else policy_history_length(self.config.window)
        offsets = torch.arange(-history, self.config.rollout_length(stage))
        return torch.as_tensor(self.index.sequence)[picked[:, None] + offsets[None]]

    def add_batch(self, stage: str, terms: dict) -> None:
        for term in self.terms[stage]:
            self.sums[term] = self.sums.get(term, 0.0) + float(terms[term].detach())
        self.batch += 1
        self.batches_done += 1

    @torch.no_grad()
    def validate(self, stage: str) -> dict:
        """Mean terms over the held-out windows, fully autoregressive; for the VAE also the KL per latent
        dimension (with this epoch's KL weight) and the posterior's typical std per dimension."""
        self.model.eval()
        rows, sums, kl, std = self.val[stage], {}, [], []
        state = torch.get_rng_state()
        torch.manual_seed(self.config.seed + 1)  # the same draws at every validation
        weights = self.config.weights(stage)
        for start in range(0, len(rows), VAL_CHUNK):
            chunk = rows[start:start + VAL_CHUNK]
            terms = (vae_rollout(self.model, self.tensors, chunk, weights, 1.0, True) if stage == "vae"
                     else policy_rollout(self.model, self.tensors, chunk, weights, zero_start=0.0))
            for term in self.terms[stage]:
                sums[term] = sums.get(term, 0.0) + float(terms[term]) * len(chunk) / len(rows)
            if stage == "vae":
                kl.append(terms["kl_per_dim"].numpy() * len(chunk) / len(rows))
                history = history_length(self.config.window)
                frames = self.tensors.frames[chunk[:, history - self.config.window + 1:history + 1]]
                std.append(torch.exp(0.5 * self.model.encoder(frames)[1]).mean(0).numpy() * len(chunk) / len(rows))
        torch.set_rng_state(state)
        self.model.train()
        if stage == "vae":
            sums["kl_per_dim"] = np.sum(kl, axis=0)
            self.kl_per_dim = sums["kl_per_dim"]
            self.latent_scale = np.sum(std, axis=0).astype(np.float32)
        return sums

    def end_epoch(self, stage: str, val: dict) -> None:
        for term in self.terms[stage]:
            self.history[stage][term].append(self.sums.get(term, 0.0) / max(self.batch, 1))
            self.history["val"][stage][term].append(float(val[term]))
        self.sums, self.batch = {}, 0
        self.epoch += 1

    def start_from(self, path) -> None:
        """A policy-only run: the encoder, decoder and policy of the model at `path` (its network config
        must be this run's), its latent facts and VAE loss history; training starts at the policy stage."""
        from pfnn_core.models.checkpoint import read_checkpoint_file
        from pfnn_core.models.mvae.checkpoint import network_of

        path = Path(path)
        checkpoint = load_mvae_checkpoint(path, *read_checkpoint_file(path))
        if checkpoint.config != self.model.config:
            raise ValueError(f"{path}: its model config {checkpoint.config} differs from this run's")
        self.model.load_state_dict(network_of(checkpoint).state_dict())
        extra = checkpoint.card.extra
        self.kl_per_dim = np.asarray(extra["kl_per_dim"])
        self.latent_scale = checkpoint.tensors["latent.scale"].numpy()
        stored = extra.get("loss_history") or {}
        for stage, source in (("vae", stored.get("vae") or {}), ("val", (stored.get("val") or {}).get("vae") or {})):
            target = self.history[stage] if stage == "vae" else self.history["val"]["vae"]
            for term in target:
                target[term] = list(source.get(term, []))
        self.skip_to_policy()
        self.clock_epoch = self.config.vae_epochs

    def skip_to_policy(self) -> None:
        self.epoch, self.batch, self.sums = self.config.vae_epochs, 0, {}

    def mvae_meta(self) -> dict:
        kl = np.asarray(self.kl_per_dim, float)
        return {"kl_per_dim": [round(float(v), 6) for v in kl], "active_dimensions": active_dimensions(kl),
                "latent_dimensions": int(len(kl)), "collapse_warning": collapse_warning(kl),
                "loss_history": self.history, "encoder": self.config.encoder, "window": self.config.window}

    def training_meta(self, wall: float) -> dict:
        last = {stage: {term: values[-1] for term, values in terms.items() if values}
                for stage, terms in self.history["val"].items()}
        return {"config": dataclasses.asdict(self.config), "epochs_completed": self.epoch, "epochs": self.config.epochs,
                "wall_s": round(wall, 1), "batches": self.batches_done, "val_losses": last,
                "time_limits": list(self.time_limits)}

    def save_model(self, wall: float) -> Path:
        meta = {**self.meta, "training": self.training_meta(wall), "mvae": self.mvae_meta()}
        return save_mvae(self.config.out, self.model, self.layout, self.norm, self.latent_scale, meta)

    @property
    def resume_path(self) -> Path:
        out = Path(self.config.out)
        return out.with_name(out.name.replace(".safetensors", "") + ".resume.safetensors")

    def save_resumable(self, wall: float) -> None:
        state = {"rng": torch.get_rng_state(), "generator": self.generator.get_state()}
        for stage, optimizer in self.optimizer.items():
            for index, values in optimizer.state_dict()["state"].items():
                for name, value in values.items():
                    state[f"opt.{stage}.{index}.{name}"] = torch.as_tensor(value)
        meta = {**self.meta, "training": self.training_meta(wall), "mvae": self.mvae_meta(),
                "resume": {"epoch": self.epoch, "batch": self.batch, "sums": self.sums, "wall_s": wall,
                           "batches_done": self.batches_done}}
        save_mvae(self.resume_path, self.model, self.layout, self.norm, self.latent_scale, meta, state)
        self.last_save = time.perf_counter()

    def restore(self, path) -> None:
        from pfnn_core.models.checkpoint import read_checkpoint_file
        from pfnn_core.models.mvae.checkpoint import network_of

        path = Path(path)
        info, tensors = read_checkpoint_file(path)
        checkpoint = load_mvae_checkpoint(path, info, tensors)
        if checkpoint.config != self.model.config:
            raise ValueError(f"{path}: its model config {checkpoint.config} differs from this run's")
        self.model.load_state_dict(network_of(checkpoint).state_dict())
        resume, extra = checkpoint.meta.get("resume") or {}, checkpoint.card.extra
        self.epoch, self.batch, self.sums = int(resume["epoch"]), int(resume["batch"]), dict(resume["sums"])
        self.first_epoch, self.wall_before = self.epoch, float(resume["wall_s"])
        self.batches_done = int(resume.get("batches_done", 0))
        self.time_limits = list((checkpoint.card.training or {}).get("time_limits") or [])
        self.history = extra["loss_history"]
        self.kl_per_dim = np.asarray(extra["kl_per_dim"])
        self.latent_scale = checkpoint.tensors["latent.scale"].numpy()
        state = checkpoint.training_state
        torch.set_rng_state(state["rng"])
        self.generator.set_state(state["generator"])
        for stage, optimizer in self.optimizer.items():
            saved = optimizer.state_dict()
            for key in state:
                if key.startswith(f"opt.{stage}."):
                    _, _, index, name = key.split(".")
                    saved["state"].setdefault(int(index), {})[name] = state[key]
            optimizer.load_state_dict(saved)

    def report(self, event: str, wall: float, finished: str = "") -> None:
        """One progress dict: the batch going on, or (`finished`: its stage) the epoch that just ended,
        with its number, its stage's training loss and its held-out loss per term."""
        config = self.config
        total = config.epochs * config.batches_per_epoch
        step = self.epoch * config.batches_per_epoch + self.batch
        if finished:
            stage, epoch, train_loss = finished, self.epoch, self.history[finished]["total"][-1]
        else:
            stage, epoch = ("vae" if self.epoch < config.vae_epochs else "policy"), self.epoch + 1
            train_loss = self.sums.get("total", 0.0) / max(self.batch, 1)
        history = self.history["val"][stage]["total"] or self.history["val"]["vae"]["total"]
        self.progress({"event": event, "step": step, "total_steps": total, "epoch": epoch,
                       "epochs": config.epochs, "stage": stage, "train_loss": train_loss,
                       "val_loss": history[-1] if history else None, "world_size": 1, "wall_s": wall,
                       "active_dimensions": active_dimensions(self.kl_per_dim),
                       "terms": {term: values[-1] for term, values in self.history["val"][stage].items() if values}})

    def result(self, wall: float, stopped: bool = False):
        from pfnn_core.training.config import TrainResult

        val_history = self.history["val"]
        val = val_history["policy"]["total"] or val_history["vae"]["total"]
        return TrainResult(out_path=None if stopped else Path(self.config.out), resume_path=self.resume_path,
                           epochs_completed=self.epoch, best_epoch=self.epoch if val else 0,
                           best_val_loss=val[-1] if val else float("nan"),
                           train_losses=self.history["vae"]["total"] + self.history["policy"]["total"],
                           val_losses=val_history["vae"]["total"] + val_history["policy"]["total"],
                           stopped=stopped, early_stopped=False, wall_s=wall)


def prepare(config, data=None, progress=None) -> Session:
    """The session of a run: its data (loaded when not given), networks, and the resumed state."""
    from pfnn_core.threads import set_thread_counts
    from pfnn_core.training.dataset import load_training_data

    set_thread_counts(config.threads)
    if data is None:
        data = load_training_data(_pfnn_train_config(config))
    session = Session(config, data, progress)
    if config.policy_only:
        session.start_from(config.policy_only)
    if config.resume:
        session.restore(config.resume)
    return session

