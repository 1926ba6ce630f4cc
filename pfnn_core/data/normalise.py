"""Normalisation statistics over the training rows (chunked, so a memory-mapped set is never copied whole)
and the train/validation split by clip within each (style, content) group."""

from __future__ import annotations

import numpy as np

from pfnn_core.data.dataset import TrainingData


def normalisation(data: TrainingData, rows=None, std_floor: float = 1e-3, chunk_rows: int = 1 << 16):
    """(x_mean, x_std, y_mean, y_std) float32 over the given rows (training rows only); std floored.

    Reads `chunk_rows` rows at a time (merging chunk statistics with Chan's formula), so a memory-mapped
    set is never copied whole into memory; up to one chunk the numbers equal numpy's mean and std.
    """
    rows = np.arange(len(data.x)) if rows is None else np.asarray(rows)
    x_mean, x_std = _mean_std(data.x, rows, chunk_rows)
    y_mean, y_std = _mean_std(data.y, rows, chunk_rows)
    return (x_mean.astype(np.float32), np.maximum(x_std, std_floor).astype(np.float32),
            y_mean.astype(np.float32), np.maximum(y_std, std_floor).astype(np.float32))


def _mean_std(array, rows: np.ndarray, chunk_rows: int):
    count, mean, squares = 0, None, None
    for start in range(0, len(rows), chunk_rows):
        block = np.asarray(array[rows[start:start + chunk_rows]]).astype(np.float64)
        block_mean = block.mean(0)
        block_squares = ((block - block_mean) ** 2).sum(0)
        if mean is None:
            count, mean, squares = len(block), block_mean, block_squares
            continue
        total = count + len(block)
        delta = block_mean - mean
        mean = mean + delta * (len(block) / total)
        squares = squares + block_squares + delta ** 2 * (count * len(block) / total)
        count = total
    return mean, np.sqrt(squares / count)


def split_by_clip(data: TrainingData, val_fraction: float = 0.1, seed: int = 0):
    """(train_rows, val_rows): whole clips (with their mirrored copies) go to one side only.

    With clip labels of several kinds, the split is drawn within each (style, content) group:
    round(val_fraction * n) clips of a group of n, always leaving two in training, so a content that
    has only a clip or two per style (side-steps, backward walks) is never held out altogether. When
    that holds nothing out (tiny sets), clips are drawn from all, at least one."""
    clip_ids = np.unique(data.clip)
    rng = np.random.default_rng(seed)
    groups = {}
    for clip_id in clip_ids:
        label = data.clip_labels[clip_id] if data.clip_labels else {}
        groups.setdefault((label.get("style"), label.get("content")), []).append(clip_id)
    val_clips = []
    if len(groups) > 1:
        for key in sorted(groups, key=str):
            members = rng.permutation(groups[key])
            val_clips += list(members[:max(0, min(int(round(val_fraction * len(members))), len(members) - 2))])
    if not val_clips:  # one kind of clip, or groups too small to stratify: draw from all clips
        shuffled = rng.permutation(clip_ids)
        val_count = int(round(val_fraction * len(clip_ids)))
        if val_fraction > 0 and len(clip_ids) > 1:
            val_count = min(max(val_count, 1), len(clip_ids) - 1)
        val_clips = shuffled[:val_count]
    is_val = np.isin(data.clip, val_clips)
    return np.flatnonzero(~is_val), np.flatnonzero(is_val)
