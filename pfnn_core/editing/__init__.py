"""Clip editing: splice pieces of BVH clips into one sequence at matching gait phase, with smooth seams.

The package, by job (the public names are gathered in `pfnn_core.edit`):
- `document`: the edit list JSON (`EditList`, `Piece`; parse, load, save; `EditError` names the piece
  and the field) and where a piece's file is;
- `clips`: each piece's clip read, checked (range, one skeleton), mirrored, time-scaled, resampled and
  labelled (root, contacts, phase);
- `matching`: each join moved within the search window to the frames whose phases and contacts agree;
- `joins`: pose sequences, the alignment of each incoming piece onto the outgoing one, the transitions
  (inertialization, crossfade) and the spliced sequence;
- `feet`: contacts touching a seam held where they touched down (leg IK);
- `report`: what the pieces and joins became, and the seam measures (the evaluation's);
- `build`: `build` (all of the above, nothing written) and `export` (and the BVH written);
- `cli`: `pfnn-edit EDIT.json --out OUT.bvh`.
"""
