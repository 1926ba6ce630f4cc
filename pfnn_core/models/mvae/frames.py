"""The motion VAE's frames and condition, shared by training and the runtime, and its training windows.

A frame is one output row of the feature contract (`features.layout` output: root velocity and yaw
rate in the previous root frame, phase change, contacts, future trajectory, joint positions,
velocities and 6D rotations in the root frame), z-scored with the training set's statistics. The
condition of the frame at row r is the phase as (sin, cos) (never the raw scalar, which jumps at the
seam), the control (the input layout's trajectory blocks: what the PFNN is given), normalised, and the
style weights.

Training windows (`SequenceIndex`) follow each clip's chain of rows (`next_index`); a window is the
encoder's history and a rollout's frames, all inside one clip, never within TRIM_S of a motion clip's
first or last frame (start and end poses are not motion). The calm standing rows are kept whole.
"""
from __future__ import annotations

import numpy as np
import torch

from pfnn_core.features.contract import SIM_FPS

CONTROL_NAMES = ("traj_pos", "traj_dir", "traj_gait")
TRIM_S = 0.5  # s left out at each end of a motion clip


def layout_indices(layout, names) -> np.ndarray:
    """The flat indices of the named blocks of a layout, in order."""
    return np.concatenate([np.arange(layout.slice(name).start, layout.slice(name).stop) for name in names])


def control_indices(x_layout) -> np.ndarray:
    """Indices of the control (trajectory) features in the input layout."""
    return layout_indices(x_layout, CONTROL_NAMES)


def phase_features(phase):
    """[B] phase in [0, 1) -> [B, 2] (sin, cos) of the phase angle; numpy or torch alike."""
    if isinstance(phase, torch.Tensor):
        angle = 2.0 * torch.pi * phase
        return torch.stack([torch.sin(angle), torch.cos(angle)], -1)
    angle = 2.0 * np.pi * np.asarray(phase, np.float64)
    return np.stack([np.sin(angle), np.cos(angle)], -1).astype(np.float32)


def condition(phase, control, style=None):
    """[B, 2 + C + S]: phase (sin, cos), normalised control [B, C], style weights [B, S] (or none)."""
    parts = [phase_features(phase), control] + ([] if style is None else [style])
    if isinstance(control, torch.Tensor):
        return torch.cat([p.to(control.dtype) for p in parts], -1)
    return np.concatenate([np.asarray(p, np.float32) for p in parts], -1)


class SequenceIndex:
    """Every clip's rows in order (`sequence`) and where windows may start.

    `starts(history, length)`: positions p in `sequence` such that sequence[p - history .. p + length - 1]
    lie in one clip and, for a motion clip, at least TRIM_S from both ends; `rows(starts, offsets)`
    gives the rows at p + offset."""

    def __init__(self, next_index: np.ndarray, standing: np.ndarray | None = None, trim_s: float = TRIM_S):
        next_index = np.asarray(next_index, np.int64)
        count = len(next_index)
        has_previous = np.zeros(count, bool)
        has_previous[next_index[next_index >= 0]] = True
        heads = np.flatnonzero(~has_previous)
        chains, current = [], heads
        while len(current):
            chains.append(current)
            following = next_index[current]
            current = following[following >= 0]
        # chains[k] holds the k-th row of every chain still running: rebuild each chain in order
        chain_id = np.empty(count, np.int64)
        position = np.empty(count, np.int64)
        chain_id[heads] = np.arange(len(heads))
        position[heads] = 0
        for step in range(1, len(chains)):
            previous = chains[step - 1]
            following = next_index[previous]
            alive = following >= 0
            chain_id[following[alive]] = chain_id[previous[alive]]
            position[following[alive]] = step
        order = np.lexsort((position, chain_id))
        self.sequence = order
        self.chain = chain_id[order]
        self.position = position[order]
        lengths = np.bincount(chain_id, minlength=len(heads))
        self.length = lengths[self.chain]
        trim = int(round(trim_s * SIM_FPS))
        standing_chain = (np.zeros(len(heads), bool) if standing is None
                          else np.asarray(standing, bool)[heads])
        self.trim = np.where(standing_chain[self.chain], 0, trim)

    def starts(self, history: int, length: int) -> np.ndarray:
        """Positions in `sequence` where a window of `history` frames before and `length` frames from
        the start fits in its clip and its trimmed span."""
        first = self.position - history
        last = self.position + length - 1
        return np.flatnonzero((first >= self.trim) & (last < self.length - self.trim)).astype(np.int64)

    def rows(self, starts: np.ndarray, offsets) -> np.ndarray:
        """[M, len(offsets)] rows at each start position plus each offset."""
        return self.sequence[np.asarray(starts)[:, None] + np.asarray(offsets)[None, :]]
