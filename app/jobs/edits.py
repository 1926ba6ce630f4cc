"""The clip editor's actions, run by the viewer after the UI pass: add a piece, preview the edit through
the Playback section, save / load the edit list, export the BVH, "Train on this" (export into a training
folder the Train section then trains on). Each works with `pfnn_core.edit` on the Editor section's state
(`state.editor`, an `app.ui.sections.editor.EditorPanel`) and writes the outcome or the error (naming the
piece and field) back. Relative paths typed in the panel are resolved against the work folder
(`state.resolve`), a loaded edit list's own relative piece files as `pfnn-edit` reads them (the current
folder, then the list's folder).
"""

import shutil
from pathlib import Path

import numpy as np

from app.ui.messages import user_error
from app.ui.sections.editor import EditorPanel, PieceCurves, PieceRow, piece_problem
from pfnn_core import edit


def edit_list(panel: EditorPanel, base_dir) -> edit.EditList:
    """The panel's pieces and settings as a checked edit list (EditError names the bad piece or field);
    relative piece files are also looked up in `base_dir` (the edit list file's folder)."""
    data = {"name": panel.name, "fps": panel.fps, "match": "phase" if panel.match_phase else "none",
            "search_seconds": panel.search_seconds, "transition": {"kind": panel.kind, "seconds": panel.seconds},
            "pieces": [{"file": row.file, "start": row.start, "end": row.end, "mirror": row.mirror, "speed": row.speed}
                       for row in panel.pieces]}
    return edit.parse_edit_list(data, panel.name, base_dir=base_dir)


def rows_from(edits: edit.EditList, cache: dict) -> list:
    rows = []
    for index, piece in enumerate(edits.pieces):
        duration = edit.load_motion(edit.piece_path(edits, index), cache).duration
        rows.append(PieceRow(piece.file, piece.start, duration if piece.end is None else piece.end, piece.mirror,
                             piece.speed, duration))
    return rows


def curves_from(result: edit.EditResult) -> list:
    curves = []
    for piece, asked in zip(result.pieces, result.edit.pieces):
        labels, frame_time = piece.clip.labels, piece.clip.source_frame_time
        contacts = labels.contacts
        curves.append(PieceCurves(np.arange(len(labels.phase)) * frame_time, np.asarray(labels.phase, float),
                                  contacts[:, 0] | contacts[:, 1], contacts[:, 2] | contacts[:, 3],
                                  (piece.start, piece.end), (asked.start, piece.nominal_last * frame_time)))
    return curves


def editor_action(state, action: str) -> None:
    """Do one editor action; the outcome (or the error, naming the piece and field) lands in `state.editor`."""
    panel = state.editor
    panel.error, panel.message = "", ""
    list_file = state.resolve(panel.list_path) if panel.list_path.strip() else None
    base_dir = list_file.parent if list_file else ""
    try:
        if action == "add":
            if not panel.new_piece.strip():
                raise edit.EditError("no BVH path given for the new piece")
            path = str(state.resolve(panel.new_piece))
            duration = edit.load_motion(path, panel.cache).duration
            panel.pieces.append(PieceRow(path, 0.0, duration, duration=duration))
            panel.new_piece = ""
        elif action == "preview":
            _build(panel, panel.preview_path, base_dir)
            state.request("open_bvh", panel.preview_path)
            panel.message = "Previewing in the Playback section (play, speed, scrub)."
        elif action in ("save", "load") and list_file is None:
            raise edit.EditError("name the edit list file first")
        elif action == "save":
            path = edit.save_edit_list(edit_list(panel, base_dir), list_file)
            panel.message = f"Saved the edit list to {path}"
        elif action == "load":
            edits = edit.load_edit_list(list_file)
            panel.pieces = rows_from(edits, panel.cache)
            panel.name, panel.fps = edits.name, edits.fps
            panel.kind, panel.seconds = edits.transition_kind, edits.transition_seconds
            panel.match_phase, panel.search_seconds = edits.match == "phase", edits.search_seconds
            panel.message = f"Loaded {len(panel.pieces)} pieces from {list_file}"
        elif action == "export":
            panel.exported = _build(panel, state.resolve(panel.out_path), base_dir)
            panel.message = f"Wrote {panel.exported}"
        elif action == "train":
            train_on_this(state, base_dir)
    except edit.EditError as error:
        panel.error = user_error(error)
    except OSError as error:
        panel.error = user_error(f"{getattr(error, 'filename', '') or ''}: {error.strerror or error}".lstrip(": "))
    if panel.error and action in ("preview", "export", "train"):
        panel.report, panel.curves = [], []  # no seam report of an earlier build under the new error


def summary_lines(result: edit.EditResult) -> list:
    """The report, short enough for the panel: one line per join and the totals."""
    lines = [f"{i}->{i + 1}: cut {result.pieces[i].end:.2f} / {result.pieces[i + 1].start:.2f} s, phase diff "
             f"{join.match.phase_difference:.3f}, contacts {join.match.contacts_agree}/4, skating "
             f"{join.seam_skating:.2f} m/s (source {join.source_skating:.2f})" for i, join in enumerate(result.joins)]
    return lines + [f"{result.motion.duration:.2f} s; root step max {100 * result.root_step_max:.1f} cm (clips "
                    f"{100 * result.source_root_step_max:.1f}); pose pops {result.pops}"]


def _build(panel: EditorPanel, out_path, base_dir) -> str:
    for index, row in enumerate(panel.pieces):
        problem = piece_problem(row)
        if problem:
            raise edit.EditError(f"piece {index} ({Path(row.file).name}): {problem}")
    result = edit.export(edit_list(panel, base_dir), out_path, panel.cache)
    panel.curves, panel.report = curves_from(result), summary_lines(result)
    return result.written


def train_on_this(state, base_dir) -> None:
    """Export the edit, copy the clip into the training folder and point the Train section at it."""
    panel = state.editor
    if not panel.train_dir.strip():
        raise edit.EditError("name a training folder first")
    folder = state.resolve(panel.train_dir)
    exported = _build(panel, state.resolve(panel.out_path), base_dir)
    folder.mkdir(parents=True, exist_ok=True)
    copied = shutil.copy2(exported, folder / Path(exported).name)
    state.train.bvh_dir = str(folder)
    panel.message = f"Copied {Path(copied).name} into {folder}; the Train section now trains on that folder."
