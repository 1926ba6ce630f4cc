"""Phase matching: each join moved, within the search window, to the (outgoing, incoming) frame pair
whose gait phases (cyclic distance) and foot contact states agree best, with the feet in similar places
under the body, preferring small moves."""
from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from pfnn_core.editing.clips import PreparedClip
from pfnn_core.editing.document import EditError, EditList
from pfnn_core.math.planar import inverse_rotate_xz
from pfnn_core.motion.phase import phase_distance

# Phase-match cost = cyclic phase distance (cycles, 0-0.5) + CONTACT_WEIGHT * share of the 4 contact
# joints in a different state + SHIFT_WEIGHT * seconds the two cut frames moved from where they were asked.
CONTACT_WEIGHT = 0.25
SHIFT_WEIGHT = 0.02
# ... + FEET_WEIGHT * the feet's mean distance (root frame, metres): at one phase a run's planted foot can
# sit 30 cm further back under the body than a walk's (too far to hold it across the seam), and a
# mirrored walk's swinging foot lower, landing early.
FEET_WEIGHT = 1.0


class JoinMatch(NamedTuple):
    out_frame: int
    in_frame: int
    phase_difference: float  # cycles, 0-0.5
    contacts_agree: int  # contact joints in the same state (of 4)


def match_join(out_phase, out_contacts, in_phase, in_contacts, out_candidates, in_candidates,
               nominal_out: int, nominal_in: int, fps: float, out_feet=None, in_feet=None) -> JoinMatch:
    """The (outgoing, incoming) frame pair among the candidates whose phases and contact states agree
    best (cost: module constants), preferring pairs near the nominal frames.

    out_phase [F1], out_contacts [F1, K] bool, in_phase [F2], in_contacts [F2, K]; candidates: frame
    indices. out_feet / in_feet [F, K, 3] (optional): the contact joints in the root frame; their mean
    distance then costs FEET_WEIGHT per metre."""
    out_candidates, in_candidates = np.asarray(out_candidates), np.asarray(in_candidates)
    out_contacts, in_contacts = np.asarray(out_contacts, bool), np.asarray(in_contacts, bool)
    distance = phase_distance(np.asarray(out_phase)[out_candidates][:, None], np.asarray(in_phase)[in_candidates][None, :])
    out_down, in_down = out_contacts[out_candidates][:, None, :], in_contacts[in_candidates][None, :, :]
    differ = out_down != in_down
    shift = (np.abs(out_candidates - nominal_out)[:, None] + np.abs(in_candidates - nominal_in)[None, :]) / fps
    cost = distance + CONTACT_WEIGHT * differ.mean(axis=-1) + SHIFT_WEIGHT * shift
    if out_feet is not None and in_feet is not None:
        apart = np.linalg.norm(np.asarray(out_feet)[out_candidates][:, None] - np.asarray(in_feet)[in_candidates][None], axis=-1)
        cost = cost + FEET_WEIGHT * apart.mean(axis=-1)
    i, j = np.unravel_index(int(np.argmin(cost)), cost.shape)
    return JoinMatch(int(out_candidates[i]), int(in_candidates[j]), float(distance[i, j]),
                     int(differ.shape[-1] - differ[i, j].sum()))


def feet_in_root_frame(clip: PreparedClip) -> np.ndarray:
    """[F, 4, 3]: the contact joints relative to each frame's control root (its ground position, turned
    to its facing)."""
    labels = clip.labels
    relative = labels.global_positions[:, labels.contact_joints].copy()
    relative[..., [0, 2]] = inverse_rotate_xz(labels.root_yaw[:, None], relative[..., [0, 2]] - labels.root_xz[:, None])
    return relative


def _min_piece_frames(edit: EditList) -> int:
    return int(round(edit.transition_seconds * edit.fps)) + 1


def piece_frames(edit: EditList, clips: list[PreparedClip]) -> list[tuple[int, int]]:
    """(first, last) frame of each piece in its prepared clip, as asked (before any phase match)."""
    frames = []
    for index, (piece, clip) in enumerate(zip(edit.pieces, clips)):
        first = min(clip.frame_at(piece.start), clip.num_frames - 1)
        last = clip.num_frames - 1 if piece.end is None else min(clip.frame_at(piece.end), clip.num_frames - 1)
        if len(edit.pieces) > 1 and last - first < _min_piece_frames(edit):
            raise EditError(f"pieces[{index}] ({Path(clip.path).name}): {(last - first) / edit.fps:.2f} s long "
                            f"(after speed {piece.speed:g}), shorter than the transition ({edit.transition_seconds:g} s)")
        frames.append((first, last))
    return frames


def match_joins(edit: EditList, clips: list[PreparedClip], frames: list[tuple[int, int]]):
    """Move every join to its best phase match (edit.match == 'phase') or keep it where asked.

    Returns (frames with the chosen cuts, [JoinMatch]). Each piece keeps at least the transition's length."""
    frames = [list(f) for f in frames]
    window = int(round(edit.search_seconds * edit.fps)) if edit.match == "phase" else 0
    shortest = _min_piece_frames(edit)
    joins = []
    for index in range(len(clips) - 1):
        out_clip, in_clip = clips[index], clips[index + 1]
        out_first, out_last = frames[index]
        in_first, in_last = frames[index + 1]
        out_candidates = np.arange(max(out_last - window, out_first + shortest),
                                   min(out_last + window, out_clip.num_frames - 1) + 1)
        in_candidates = np.arange(max(in_first - window, 0), min(in_first + window, in_last - shortest) + 1)
        if len(out_candidates) == 0:
            out_candidates = np.array([out_last])
        if len(in_candidates) == 0:
            in_candidates = np.array([in_first])
        match = match_join(out_clip.labels.phase, out_clip.labels.contacts, in_clip.labels.phase,
                           in_clip.labels.contacts, out_candidates, in_candidates, out_last, in_first, edit.fps,
                           feet_in_root_frame(out_clip), feet_in_root_frame(in_clip))
        frames[index][1], frames[index + 1][0] = match.out_frame, match.in_frame
        joins.append(match)
    return [tuple(f) for f in frames], joins
