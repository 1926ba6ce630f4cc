"""The training set on the training device: `TrainingTensors` (normalised rows, clip links, styles and the
feature slices the losses read), made by `to_device`; `style_one_hot` makes a batch's style input."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch.nn import functional

from pfnn_core.data.dataset_cache import NormalisedRows
from pfnn_core.skeleton import contact_joint_order, foot_joints


@dataclass
class TrainingTensors:
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
    num_styles: int = 0           # width of the model's style input (one-hot per batch, `style_one_hot`)


def num_styles(data) -> int:
    """Width of the model's style input: the number of styles, 0 when the data has one style or none."""
    styles = list(getattr(data, "styles", None) or [])
    return len(styles) if len(styles) > 1 else 0


def style_one_hot(tensors: TrainingTensors, rows: torch.Tensor):
    """One-hot styles [B, S] of the given rows, made per batch (never an [N, S] copy of the whole set)."""
    if tensors.style is None:
        return None
    return functional.one_hot(tensors.style[rows], tensors.num_styles).float()


def _indices(layout, name: str) -> np.ndarray:
    part = layout.slice(name)
    return np.arange(part.start, part.stop)


def _foot_joint_indices(data) -> list[int]:
    """The contact joints the labels were made on (stored with the skeleton by the data builder)."""
    stored = data.skeleton.get("contact_joints")
    if stored:
        return [int(j) for j in stored]
    return contact_joint_order(foot_joints(list(data.skeleton["names"]), data.skeleton.get("parents")))


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


def to_device(data, norm, device, on_demand: bool | None = None) -> TrainingTensors:
    """`data` normalised by `norm` (x mean, x std, y mean, y std) on `device`; `on_demand` as `_normalised`
    (None: on demand on the CPU, a normalised copy on a GPU)."""
    x_layout, y_layout = data.layout  # ModelLayout(x, y)
    x_mean, x_std, y_mean, y_std = (torch.as_tensor(np.asarray(a, np.float32), device=device) for a in norm)
    as_long = lambda a: torch.as_tensor(np.array(a, dtype=np.int64), device=device)  # noqa: E731
    x_pose = np.concatenate([_indices(x_layout, "joint_pos"), _indices(x_layout, "joint_vel")])
    y_pose = np.concatenate([_indices(y_layout, "joint_pos"), _indices(y_layout, "joint_vel")])
    x_pose_t, y_pose_t = as_long(x_pose), as_long(y_pose)
    return TrainingTensors(
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
