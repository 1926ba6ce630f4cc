"""Building an edit: load and prepare the clips, match the joins, splice, hold the feet, measure; and
export (write the BVH only when all of that succeeded)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from pfnn_core.editing.clips import load_clips
from pfnn_core.editing.document import EditError, EditList
from pfnn_core.editing.feet import plant_feet
from pfnn_core.editing.joins import placement_joint, splice, to_local
from pfnn_core.editing.matching import match_joins, piece_frames
from pfnn_core.editing.report import EditResult, PieceResult, measure
from pfnn_core.motion import bvh


def build(edit: EditList, cache: dict | None = None) -> EditResult:
    """Load, match, splice, plant the feet and measure; nothing is written. EditError on bad input."""
    clips = load_clips(edit, cache)
    nominal = piece_frames(edit, clips)
    frames, matches = match_joins(edit, clips, nominal)
    reference = clips[0].motion
    placement = placement_joint(reference)
    rotations, translations, feet, contacts, starts, seams = splice(edit, clips, frames, placement)
    rotations, translations = to_local(reference, rotations, translations, placement)
    motion = replace(reference, rotations=rotations, positions=translations, frame_time=1.0 / edit.fps,
                     source=edit.name)
    motion = plant_feet(motion, feet, contacts, seams, edit.transition_seconds)
    pieces = [PieceResult(clip.path, clip, first, last, nominal[i][0], nominal[i][1], starts[i])
              for i, (clip, (first, last)) in enumerate(zip(clips, frames))]
    return measure(edit, motion, clips, pieces, matches, seams, contacts)


def export(edit: EditList, out_path, cache: dict | None = None) -> EditResult:
    """Build the edit and write it as BVH (.bvh.gz compressed); nothing is written on bad input."""
    out_path = Path(out_path)
    if not bvh.is_bvh_path(out_path):
        raise EditError(f"{out_path}: the output must be a .bvh or .bvh.gz file")
    result = build(edit, cache)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    bvh.save(result.motion, out_path)
    result.written = str(out_path)
    return result
