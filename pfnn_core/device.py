"""The torch device a command or the runtime asked for by name: one rule for training, the runtime's
network and every command's `--device`."""
from __future__ import annotations

import torch


def resolve_device(name: str = "auto") -> torch.device:
    """'auto' -> CUDA when this machine has it, else the CPU; 'cpu', 'cuda' and 'cuda:N' as given.

    ValueError for a name torch does not know and for CUDA asked for where there is none, so the error
    says what to pass instead of a later failure inside torch.
    """
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ValueError(f"unknown device '{name}' (expected 'auto', 'cpu', 'cuda' or 'cuda:N')") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device '{name}' was asked for but CUDA is not available here; use 'cpu' or 'auto'")
    return device
