"""The motion VAE's training rollouts: the VAE's (scheduled sampling from teacher forcing to fully
autoregressive) and the control policy's (through the frozen decoder), and the validation measures.

A rollout starts from real frames (the history) and predicts `length` frames in turn; the frame fed
back as the next step's previous frame is, with the feedback probability, the model's own prediction
(detached: the model learns to recover from its own errors without back-propagating through time),
else the data's. The policy's rollouts are always autoregressive.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.nn import functional

from pfnn_core.features.contract import SIM_FPS
from pfnn_core.models.mvae.frames import condition
from pfnn_core.models.mvae.losses import (
    FrameParts,
    acceleration,
    foot_velocity,
    jerk,
    kl_per_dimension,
    planted,
    reconstruction,
    skate,
    still,
)
from pfnn_core.models.mvae.networks import MotionVAE


@dataclass
class MVAETensors:
    """The training set as the rollouts read it (normalised, on the training device)."""

    frames: torch.Tensor  # [N, F] normalised frames
    control: torch.Tensor  # [N, C] normalised control
    phase: torch.Tensor  # [N]
    style: torch.Tensor | None  # [N] long, None without styles
    num_styles: int
    parts: FrameParts
    style_classifier: torch.nn.Module | None = None  # frame -> style logits, frozen (the policy's style term)
    idle: torch.Tensor | None = None  # [N] bool: the row's command is to stand (future trajectory still)
    stand_control: torch.Tensor | None = None  # [C] a standing row's normalised control
    future_control: torch.Tensor | None = None  # [C] bool: the control's future samples (now and ahead)

    def condition(self, rows: torch.Tensor) -> torch.Tensor:
        style = None if self.style is None else functional.one_hot(self.style[rows], self.num_styles).float()
        return condition(self.phase[rows], self.control[rows], style)


@dataclass
class LossWeights:
    kl: float = 0.001
    foot: float = 0.5
    acceleration: float = 0.1
    velocity: float = 1.0  # the policy's root-velocity term
    skate: float = 0.0  # the policy's: feet near the floor sliding or sunk (`losses.skate`)
    jerk: float = 0.0  # the policy's: the pose's third difference against the data's
    style: float = 0.0  # the policy's: cross-entropy of the style classifier on the decoded frames
    still: float = 0.0  # the policy's: motion above the data's on standing frames (`losses.still`)
    planted: float = 0.0  # contact feet moving in the world as the frame places them (`losses.planted`; either stage)

STOP_RAMP_S = 0.5  # s: a stop rollout's still term ramps 0 -> 1 over this time after the release


def history_length(window: int) -> int:
    """Real frames before a VAE rollout's first target: the encoder's W - 1, at least the 2 the
    acceleration term needs."""
    return max(window - 1, 2)


def policy_history_length(window: int) -> int:
    """Real frames before a policy rollout's first target: the encoder's whole window (the current
    latent is the posterior mean of the last real transition), at least 2."""
    return max(window, 2)


def vae_rollout(model: MotionVAE, tensors: MVAETensors, rows: torch.Tensor, weights: LossWeights,
                feedback: float, train_encoder: bool) -> dict:
    """Mean loss terms [scalar] over rollouts along `rows` [B, H + L] (H = `history_length`); 'total'
    is what to minimise, 'kl_per_dim' [Z] the mean KL of each latent dimension."""
    window = model.config.window
    history_count = history_length(window)
    real = tensors.frames[rows]
    history = real[:, :history_count]
    sums: dict[str, torch.Tensor] = {}
    steps = rows.shape[1] - history_count
    for step in range(steps):
        t = history_count + step
        target = real[:, t]
        encoder_window = torch.cat([history[:, history.shape[1] - (window - 1):], target[:, None]], 1)
        with torch.set_grad_enabled(train_encoder and torch.is_grad_enabled()):
            mu, logvar = model.encoder(encoder_window)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        pred = model.decoder(z, history[:, -1], tensors.condition(rows[:, t]))
        kl = kl_per_dimension(mu, logvar)
        terms = {"reconstruction": reconstruction(pred, target).mean(), "kl": kl.mean(),
                 "foot": foot_velocity(pred, target, tensors.parts).mean(),
                 "acceleration": acceleration(pred, history, target, real[:, t - 2:t], tensors.parts).mean(),
                 "kl_per_dim": kl.mean(0).detach()}
        if weights.planted > 0.0:
            terms["planted"] = planted(pred, history[:, -1], target, real[:, t - 1], tensors.parts, 1.0 / SIM_FPS).mean()
        for name, value in terms.items():
            sums[name] = sums.get(name, 0.0) + value / steps
        if step + 1 < steps:
            fed = torch.rand(len(rows), 1, device=rows.device) < feedback
            next_frame = torch.where(fed, pred.detach(), target)
            history = torch.cat([history[:, 1:], next_frame[:, None]], 1)
    kl_weight = weights.kl if train_encoder else 0.0
    sums["total"] = (sums["reconstruction"] + kl_weight * sums["kl"] + weights.foot * sums["foot"]
                     + weights.acceleration * sums["acceleration"] + weights.planted * sums.get("planted", 0.0))
    return sums


def policy_rollout(model: MotionVAE, tensors: MVAETensors, rows: torch.Tensor, weights: LossWeights,
                   zero_start: float = 0.25, stop_share: float = 0.0) -> dict:
    """Mean loss terms over fully autoregressive policy rollouts along `rows` [B, H + L]
    (H = `policy_history_length`), in pose space through the frozen decoder: reconstruction of the
    data's frames under the data's control, root velocity (responsiveness), acceleration (smoothness),
    foot velocity on the data's contacts; with their weights set, skating near the floor, the contact
    feet's world motion (`losses.planted`), jerk (from the
    second frame on), the style classifier's cross-entropy against the commanded style, and the still
    term on the data's standing frames.
    The first current latent is the posterior mean of the last real transition, or the prior mean
    (zero, as at a runtime start) for a `zero_start` share of the rollouts.
    With the still term on, a `stop_share` of the rollouts are stops: from the first target on, the
    control's future is the standing command's (the past stays the data's) and the phase is held; they
    count only in the still term, ramped 0 -> 1 over STOP_RAMP_S after the release (the data has no
    frames to match there)."""
    window = model.config.window
    history_count = policy_history_length(window)
    real = tensors.frames[rows]
    history = real[:, :history_count]
    trail = history
    with torch.no_grad():
        z, _ = model.encoder(history[:, history_count - window:])
        z = torch.where(torch.rand(len(rows), 1, device=rows.device) < zero_start, torch.zeros_like(z), z)
    sums: dict[str, torch.Tensor] = {}
    steps = rows.shape[1] - history_count
    root = tensors.parts.root
    extra = _policy_extra_terms(weights, tensors)
    stop = torch.zeros(len(rows), dtype=torch.bool, device=rows.device)
    if "still" in extra and stop_share > 0.0:
        stop = torch.rand(len(rows), device=rows.device) < stop_share
    moving = (~stop).float()
    count = moving.sum().clamp(min=1.0)

    def mean(values):  # [B] -> the mean over the rollouts that follow the data
        return (values * moving).sum() / count

    for step in range(steps):
        t = history_count + step
        target = real[:, t]
        cond = tensors.condition(rows[:, t])
        if bool(stop.any()):
            held = tensors.condition(rows[:, history_count])
            control = torch.where(tensors.future_control, tensors.stand_control, held[:, 2:2 + len(tensors.stand_control)])
            stopped = torch.cat([held[:, :2], control, held[:, 2 + len(tensors.stand_control):]], -1)
            cond = torch.where(stop[:, None], stopped, cond)
        z = model.policy(z, history, cond)
        pred = model.decoder(z, history[:, -1], cond)
        terms = {"reconstruction": mean(reconstruction(pred, target)),
                 "velocity": mean(((pred[:, root] - target[:, root]) ** 2).mean(-1)),
                 "acceleration": mean(acceleration(pred, history, target, real[:, t - 2:t], tensors.parts)),
                 "foot": mean(foot_velocity(pred, target, tensors.parts))}
        if "skate" in extra:
            terms["skate"] = mean(skate(pred, tensors.parts))
        if "planted" in extra:
            terms["planted"] = mean(planted(pred, history[:, -1], target, real[:, t - 1], tensors.parts, 1.0 / SIM_FPS))
        if "jerk" in extra and t >= 3:
            terms["jerk"] = mean(jerk(pred, trail, target, real[:, t - 3:t], tensors.parts)) * steps / (steps - 1)
        if "style" in extra:
            logits = tensors.style_classifier(pred)
            terms["style"] = mean(functional.cross_entropy(logits, tensors.style[rows[:, t]], reduction="none"))
        if "still" in extra:
            ramp = min((step + 1) / (STOP_RAMP_S * SIM_FPS), 1.0)
            standing = torch.where(stop, torch.full_like(moving, ramp), tensors.idle[rows[:, t]].float())
            zero = torch.where(stop[:, None], _standing_frame(tensors.parts, target), target)
            terms["still"] = (standing * still(pred, zero, tensors.parts)).mean()
        for name, value in terms.items():
            sums[name] = sums.get(name, 0.0) + value / steps
        history = torch.cat([history[:, 1:], pred.detach()[:, None]], 1)
        trail = torch.cat([trail[:, -2:], pred.detach()[:, None]], 1)
        z = z.detach()
    sums["total"] = (sums["reconstruction"] + weights.velocity * sums["velocity"]
                     + weights.acceleration * sums["acceleration"] + weights.foot * sums["foot"])
    for name in extra:
        sums.setdefault(name, torch.zeros(()))
        sums["total"] = sums["total"] + getattr(weights, name) * sums[name]
    return sums


def _standing_frame(parts: FrameParts, like: torch.Tensor) -> torch.Tensor:
    """[B, F] normalised frames whose root and foot velocities are zero (the still term's reference)."""
    frame = like.clone()
    for index in (parts.root_vel, parts.yaw_rate, parts.foot_vel.reshape(-1)):
        frame[:, index] = -parts.mean[index] / parts.std[index]
    return frame


def _policy_extra_terms(weights: LossWeights, tensors: MVAETensors) -> tuple:
    """The optional policy terms whose weight is set (the style term also needs styles and a classifier)."""
    names = [name for name in ("skate", "jerk", "planted") if getattr(weights, name) > 0.0]
    if weights.still > 0.0 and tensors.idle is not None:
        names.append("still")
    if weights.style > 0.0 and tensors.style is not None and tensors.style_classifier is not None:
        names.append("style")
    return tuple(names)
