"""The motion VAE's loss terms on normalised frames, and the posterior-collapse measures.

- reconstruction: mean squared error over the normalised frame;
- KL: of the posterior N(mu, exp(logvar)) from N(0, 1), per latent dimension, averaged over the
  dimensions (as Ling et al.: against a reconstruction averaged over the frame's numbers);
- foot: the horizontal speed (m/s) of the 4 contact joints where the data's contact label is on,
  counted only above the data's own foot speed there (mocap feet creep a little: never fight the data);
- acceleration: the second difference of the joint positions and rotations (normalised) against the
  data's, so the motion is as smooth as the data, neither jittery nor damped.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

ACTIVE_KL = 0.01  # nats: a latent dimension whose mean KL is above this carries information
COLLAPSE_SHARE = 0.25  # warn when fewer than this share of the dimensions are active


@dataclass
class FrameParts:
    """Indices of a frame's parts and its normalisation, on the training device."""

    mean: torch.Tensor  # [F]
    std: torch.Tensor  # [F]
    contacts: torch.Tensor  # [4] indices of the contact labels
    foot_vel: torch.Tensor  # [4, 2] indices of the contact joints' horizontal (x, z) velocity
    pose: torch.Tensor  # indices of joint positions and rotations (the acceleration term)
    root: torch.Tensor  # indices of the root velocity and yaw rate (the policy's responsiveness term)

    @staticmethod
    def of(y_layout, foot_joints, mean, std, device) -> "FrameParts":
        def block(name):
            part = y_layout.slice(name)
            return np.arange(part.start, part.stop)

        joint_vel = block("joint_vel").reshape(-1, 3)
        as_long = lambda a: torch.as_tensor(np.asarray(a, np.int64), device=device)  # noqa: E731
        return FrameParts(
            mean=torch.as_tensor(np.asarray(mean, np.float32), device=device),
            std=torch.as_tensor(np.asarray(std, np.float32), device=device),
            contacts=as_long(block("contacts")), foot_vel=as_long(joint_vel[np.asarray(foot_joints)][:, [0, 2]]),
            pose=as_long(np.concatenate([block("joint_pos"), block("joint_rot")])),
            root=as_long(np.concatenate([block("root_vel"), block("root_yaw_rate")])))


def kl_per_dimension(mu: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    """[B, Z] KL(N(mu, exp(logvar)) || N(0, 1)) of each dimension."""
    return 0.5 * (mu * mu + logvar.exp() - 1.0 - logvar)


def reconstruction(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """[B] mean squared error over the normalised frame."""
    return ((pred - target) ** 2).mean(-1)


def foot_velocity(pred: torch.Tensor, target: torch.Tensor, parts: FrameParts) -> torch.Tensor:
    """[B] mean over the contact joints of contact x (predicted foot speed above the data's), m/s."""
    def speed(frames):
        velocity = frames[:, parts.foot_vel] * parts.std[parts.foot_vel] + parts.mean[parts.foot_vel]
        return velocity.norm(dim=-1)

    contact = (target[:, parts.contacts] * parts.std[parts.contacts] + parts.mean[parts.contacts]).clamp(0.0, 1.0)
    return (contact * torch.relu(speed(pred) - speed(target))).mean(-1)


def acceleration(pred: torch.Tensor, history: torch.Tensor, target: torch.Tensor, real_history: torch.Tensor,
                 parts: FrameParts) -> torch.Tensor:
    """[B] squared error of the pose's second difference (pred - 2 h[-1] + h[-2], h the frames the model
    was fed) against the data's (target - 2 r[-1] + r[-2]); normalised units."""
    index = parts.pose
    predicted = pred[:, index] - 2.0 * history[:, -1, index] + history[:, -2, index]
    real = target[:, index] - 2.0 * real_history[:, -1, index] + real_history[:, -2, index]
    return ((predicted - real) ** 2).mean(-1)


def active_dimensions(kl_per_dim: np.ndarray) -> int:
    """How many latent dimensions carry information (mean KL above ACTIVE_KL)."""
    return int((np.asarray(kl_per_dim) > ACTIVE_KL).sum())


def collapse_warning(kl_per_dim: np.ndarray) -> str | None:
    """A warning when fewer than COLLAPSE_SHARE of the latent dimensions are active, else None."""
    kl_per_dim = np.asarray(kl_per_dim)
    active = active_dimensions(kl_per_dim)
    if active >= COLLAPSE_SHARE * len(kl_per_dim):
        return None
    return (f"posterior collapse: {active} of {len(kl_per_dim)} latent dimensions active (KL > {ACTIVE_KL} nats; "
            f"total KL {float(kl_per_dim.sum()):.3g}); the decoder ignores the latent: lower the KL weight "
            f"or train the decoder alone longer")
