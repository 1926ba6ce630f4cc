"""The training losses on normalised outputs: per-sample terms (`sample_losses`: fit, root-velocity
consistency, foot skating), the scheduled-sampling rollout loss a batch trains on (`rollout_loss`) and
the one-step validation terms (`validation_losses`)."""
from __future__ import annotations

import torch
from torch.nn import functional

from pfnn_core.models.pfnn.model import PFNN
from pfnn_core.training.config import TrainConfig
from pfnn_core.training.tensors import TrainingTensors, style_one_hot

VALIDATION_BATCH = 4096  # rows per forward pass of validation


def sample_losses(pred: torch.Tensor, target: torch.Tensor, tensors: TrainingTensors, config: TrainConfig) -> dict:
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


def rollout_loss(model: PFNN, tensors: TrainingTensors, start_rows: torch.Tensor, config: TrainConfig,
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
        pred = model(x, tensors.phase[rows], style_one_hot(tensors, rows))
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
def validation_losses(model: PFNN, tensors: TrainingTensors, rows: torch.Tensor, config: TrainConfig) -> dict:
    """Mean one-step loss terms over `rows` in eval mode."""
    was_training = model.training
    model.eval()
    sums: dict[str, float] = {}
    for start in range(0, len(rows), VALIDATION_BATCH):
        batch = rows[start:start + VALIDATION_BATCH]
        pred = model(tensors.x[batch], tensors.phase[batch], style_one_hot(tensors, batch))
        for name, value in sample_losses(pred, tensors.y[batch], tensors, config).items():
            sums[name] = sums.get(name, 0.0) + float(value.sum())
    model.train(was_training)
    return {name: value / max(len(rows), 1) for name, value in sums.items()}
