"""The clip editor's public names (`pfnn_core.editing` holds them, one module per job) and
`python -m pfnn_core.edit EDIT.json --out OUT.bvh` (the same as `pfnn-edit`)."""
import sys

from pfnn_core.editing.build import build, export
from pfnn_core.editing.cli import EXIT_BAD_INPUT, main
from pfnn_core.editing.clips import PreparedClip, load_clips, load_motion, prepare_clip
from pfnn_core.editing.document import (
    DEFAULT_FPS,
    DEFAULT_SEARCH_S,
    DEFAULT_TRANSITION_S,
    KINDS,
    MATCHES,
    EditError,
    EditList,
    Piece,
    edit_list_dict,
    load_edit_list,
    parse_edit_list,
    piece_path,
    save_edit_list,
)
from pfnn_core.editing.feet import contact_runs, plant_feet, planted_foot_goals
from pfnn_core.editing.joins import (
    SPRING_RATE,
    alignment,
    clip_pose,
    crossfade,
    inertialize,
    offset_decay,
    placement_joint,
    splice,
)
from pfnn_core.editing.matching import JoinMatch, match_join, match_joins, piece_frames
from pfnn_core.editing.report import EditResult, JoinResult, PieceResult
from pfnn_core.motion.phase import phase_distance

__all__ = [
    "DEFAULT_FPS", "DEFAULT_SEARCH_S", "DEFAULT_TRANSITION_S", "EXIT_BAD_INPUT", "KINDS", "MATCHES", "SPRING_RATE",
    "EditError", "EditList", "EditResult", "JoinMatch", "JoinResult", "Piece", "PieceResult", "PreparedClip",
    "alignment", "build", "clip_pose", "contact_runs", "crossfade", "edit_list_dict", "export", "inertialize",
    "load_clips", "load_edit_list", "load_motion", "main", "match_join", "match_joins", "offset_decay",
    "parse_edit_list", "phase_distance", "piece_frames", "piece_path", "placement_joint", "plant_feet",
    "planted_foot_goals", "prepare_clip", "save_edit_list", "splice",
]

if __name__ == "__main__":
    sys.exit(main())
