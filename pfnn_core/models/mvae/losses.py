"""The motion VAE's loss terms on normalised frames, and the posterior-collapse measures.

- reconstruction: mean squared error over the normalised frame;
- KL: of the posterior N(mu, exp(logvar)) from N(0, 1), per latent dimension, averaged over the
  dimensions (as Ling et al.: against a reconstruction averaged over the frame's numbers);
- foot: the horizontal speed (m/s) of the 4 contact joints where the data's contact label is on,
  counted only above the data's own foot speed there (mocap feet creep a little: never fight the data);
- acceleration: the second difference of the joint positions and rotations (normalised) against the
  data's, so the motion is as smooth as the data, neither jittery nor damped; jerk the same of the
  third difference;
- skate (the policy's, optional): the horizontal speed (m/s) of the 4 contact joints weighted as the
  evaluation's foot skating weighs a step (w = 2 - 2^(h/H), h the height above the joint's floor level,
  H = 2 cm; w held fixed, so the feet are not lifted to hide a slide), plus how far (m) a joint sinks
  more than H below its floor level;
- planted (the policy's, optional): the horizontal speed (m/s) in the world of the 4 contact joints
  where the data's contact label is on, as the frame moves them: the root's step (velocity and yaw
  rate) plus the joint's own step in the root frame from the frame before; counted above the data's
  own. The foot term reads the frame's joint-velocity numbers, which the runtime never integrates; a
  model whose root and feet disagree skates with clean velocity numbers (docs/EVALUATION.md, "The root
  from the contact feet");
- still (the policy's, optional): on frames whose command is to stand, the root's speed (m/s) and yaw
  rate (rad/s) and the 4 contact joints' horizontal speed (m/s), each counted above the data's own
  (absolute, not squared: a drift of half a degree a second is 1e-4 of a normalised squared error,
  invisible to the reconstruction, yet 5 degrees in 10 s of idling).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

SKATE_BAND = 0.02  # m: H of the evaluation's foot-skating contacts
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
    foot_pos: torch.Tensor | None = None  # [4, 3] indices of the contact joints' positions (root frame)
    floor: torch.Tensor | None = None  # [4] m, the contact joints' floor levels (the skate term)
    root_vel: torch.Tensor | None = None  # [2] indices of the root velocity (x, z)
    yaw_rate: torch.Tensor | None = None  # [1] index of the root yaw rate

    @staticmethod
    def of(y_layout, foot_joints, mean, std, device, floor_heights=None) -> "FrameParts":
        def block(name):
            part = y_layout.slice(name)
            return np.arange(part.start, part.stop)

        joint_vel = block("joint_vel").reshape(-1, 3)
        joint_pos = block("joint_pos").reshape(-1, 3)
        floor = np.zeros(len(foot_joints)) if floor_heights is None else np.asarray(floor_heights, np.float64)
        as_long = lambda a: torch.as_tensor(np.asarray(a, np.int64), device=device)  # noqa: E731
        return FrameParts(
            mean=torch.as_tensor(np.asarray(mean, np.float32), device=device),
            std=torch.as_tensor(np.asarray(std, np.float32), device=device),
            contacts=as_long(block("contacts")), foot_vel=as_long(joint_vel[np.asarray(foot_joints)][:, [0, 2]]),
            pose=as_long(np.concatenate([block("joint_pos"), block("joint_rot")])),
            root=as_long(np.concatenate([block("root_vel"), block("root_yaw_rate")])),
            foot_pos=as_long(joint_pos[np.asarray(foot_joints)]),
            floor=torch.as_tensor(floor.astype(np.float32), device=device),
            root_vel=as_long(block("root_vel")), yaw_rate=as_long(block("root_yaw_rate")))


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


def planted(pred: torch.Tensor, before: torch.Tensor, target: torch.Tensor, real_before: torch.Tensor,
            parts: FrameParts, dt: float) -> torch.Tensor:
    """[B] mean over the contact joints of contact x (world speed the frame gives the joint above the
    data's), m/s. A joint's world step over dt, in the root frame before: root velocity x dt plus
    R(yaw rate x dt) p_now - p_before (the feature contract: the root's velocity is in the last root
    frame, joint positions in their own tick's); `before` is the frame the model was fed."""
    def real(frames, index):
        return frames[:, index] * parts.std[index] + parts.mean[index]

    def world_speed(frames, frames_before):
        now, then = real(frames, parts.foot_pos), real(frames_before, parts.foot_pos)
        turn = real(frames, parts.yaw_rate) * dt  # [B, 1]
        c, s = torch.cos(turn), torch.sin(turn)
        x = c * now[..., 0] + s * now[..., 2] - then[..., 0]
        z = -s * now[..., 0] + c * now[..., 2] - then[..., 2]
        root = real(frames, parts.root_vel)
        return torch.stack([root[:, :1] + x / dt, root[:, 1:] + z / dt], -1).norm(dim=-1)

    contact = (target[:, parts.contacts] * parts.std[parts.contacts] + parts.mean[parts.contacts]).clamp(0.0, 1.0)
    excess = torch.relu(world_speed(pred, before) - world_speed(target, real_before))
    return (contact * excess).mean(-1)


def acceleration(pred: torch.Tensor, history: torch.Tensor, target: torch.Tensor, real_history: torch.Tensor,
                 parts: FrameParts) -> torch.Tensor:
    """[B] squared error of the pose's second difference (pred - 2 h[-1] + h[-2], h the frames the model
    was fed) against the data's (target - 2 r[-1] + r[-2]); normalised units."""
    index = parts.pose
    predicted = pred[:, index] - 2.0 * history[:, -1, index] + history[:, -2, index]
    real = target[:, index] - 2.0 * real_history[:, -1, index] + real_history[:, -2, index]
    return ((predicted - real) ** 2).mean(-1)


def jerk(pred: torch.Tensor, trail: torch.Tensor, target: torch.Tensor, real_trail: torch.Tensor,
         parts: FrameParts) -> torch.Tensor:
    """[B] squared error of the pose's third difference (pred - 3 h[-1] + 3 h[-2] - h[-3], h the frames
    before it) against the data's; normalised units."""
    index = parts.pose

    def third(now, before):
        return now[:, index] - 3.0 * before[:, -1, index] + 3.0 * before[:, -2, index] - before[:, -3, index]

    return ((third(pred, trail) - third(target, real_trail)) ** 2).mean(-1)


def skate(pred: torch.Tensor, parts: FrameParts) -> torch.Tensor:
    """[B] mean over the contact joints of w x horizontal speed (m/s), w = clip(2 - 2^(h/H), 0, 1) the
    evaluation's contact weight at height h above the joint's floor level (held fixed), plus the depth
    (m) below floor - H."""
    def real(index):
        return pred[:, index] * parts.std[index] + parts.mean[index]

    height = real(parts.foot_pos[:, 1]) - parts.floor
    weight = (2.0 - torch.pow(2.0, torch.relu(height.detach()) / SKATE_BAND)).clamp(0.0, 1.0)
    speed = real(parts.foot_vel).norm(dim=-1)
    return (weight * speed + torch.relu(-height - SKATE_BAND)).mean(-1)


def still(pred: torch.Tensor, target: torch.Tensor, parts: FrameParts) -> torch.Tensor:
    """[B] motion above the data's while standing: relu(|root speed| - data's) (m/s) + relu(|yaw rate| -
    data's) (rad/s) + the mean over the 4 contact joints of relu(horizontal speed - data's) (m/s)."""
    def real(frames, index):
        return frames[:, index] * parts.std[index] + parts.mean[index]

    def motion(frames):
        return (real(frames, parts.root_vel).norm(dim=-1), real(frames, parts.yaw_rate)[:, 0].abs(),
                real(frames, parts.foot_vel).norm(dim=-1))

    (speed, yaw, feet), (speed_data, yaw_data, feet_data) = motion(pred), motion(target)
    return torch.relu(speed - speed_data) + torch.relu(yaw - yaw_data) + torch.relu(feet - feet_data).mean(-1)


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
