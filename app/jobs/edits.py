"""The clip editor's actions, run by the viewer after the UI pass: add a piece, preview the edit through
the Playback section, save / load the edit list, export the BVH, "Train on this" (export into a training
folder the Train section then trains on). Each works with `pfnn_core.edit` on the Editor section's state
(`state.editor`, an `app.ui.sections.editor.EditorPanel`) and writes the outcome or the error (naming the
piece and field) back. Relative paths typed in the panel are resolved against the work folder
(`state.resolve`), a loaded edit list's own relative piece files as `pfnn-edit` reads them (the current
folder, then the list's folder). `EditAutosave` keeps what the section holds on disk while it is
unsaved, so a crash never costs it (`app.jobs.recovery` offers it back at the next start).
"""

import dataclasses
import json
import shutil
import time
from datetime import datetime
from pathlib import Path

import numpy as np

from app.ui.messages import user_error
from app.ui.sections.editor import EditorPanel, PieceCurves, PieceRow, piece_problem
from pfnn_core import edit, files


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
            path = str(state.resolve_existing(panel.new_piece))
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
            panel.saved_document = panel_document(panel)
            panel.message = f"Saved the edit list to {path}"
        elif action == "load":
            edits = edit.load_edit_list(list_file)
            panel.pieces = rows_from(edits, panel.cache)
            panel.name, panel.fps = edits.name, edits.fps
            panel.kind, panel.seconds = edits.transition_kind, edits.transition_seconds
            panel.match_phase, panel.search_seconds = edits.match == "phase", edits.search_seconds
            panel.saved_document = panel_document(panel)
            panel.message = f"Loaded {len(panel.pieces)} pieces from {list_file}"
        elif action == "export":
            panel.exported = _build(panel, state.resolve(panel.out_path), base_dir)
            panel.message = f"Wrote {panel.exported}"
        elif action == "train":
            train_on_this(state, base_dir)
    except edit.EditError as error:
        panel.error = user_error(error)
    except OSError as error:
        if isinstance(error, files.WriteError):  # the file and why ('no space left on the device')
            panel.error = user_error(error.message)
        else:
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


# ---- autosave: the edit list survives a crash ---------------------------------------------------

AUTOSAVE_FOLDER = "edits/.autosave"  # in the work folder; one file per viewer run
AUTOSAVE_INTERVAL_S = 2.0  # a change is on disk within this (a dragged slider is not written every frame)
_PANEL_FIELDS = ("name", "kind", "seconds", "match_phase", "search_seconds", "fps", "list_path", "out_path",
                 "train_dir")


def panel_document(panel: EditorPanel) -> dict:
    """What the Editor section holds that a person made (pieces, cuts, settings, paths), as JSON."""
    document = {name: getattr(panel, name) for name in _PANEL_FIELDS}
    document["pieces"] = [dataclasses.asdict(row) for row in panel.pieces]
    return document


def restore_document(panel: EditorPanel, document, source: str) -> None:
    """Put an autosaved `panel_document` back into the panel; EditError naming `source` and the field
    when it is not one (the panel is then unchanged)."""
    if not isinstance(document, dict) or not isinstance(document.get("pieces"), list):
        raise edit.EditError(f"{source}: not an autosaved edit list (no 'pieces' list)")
    values = {}
    for name in _PANEL_FIELDS:
        default = getattr(EditorPanel, name)  # every field autosaved has a plain default
        value = document.get(name, default)
        if type(value) is not type(default) and not (isinstance(default, float) and type(value) is int):
            raise edit.EditError(f"{source}: field '{name}' should be {type(default).__name__}")
        values[name] = value
    rows = []
    for index, piece in enumerate(document["pieces"]):
        try:
            rows.append(PieceRow(str(piece["file"]), float(piece["start"]), float(piece["end"]), bool(piece["mirror"]),
                                 float(piece["speed"]), float(piece["duration"])))
        except (KeyError, TypeError, ValueError):
            raise edit.EditError(f"{source}: pieces[{index}] needs file, start, end, mirror, speed, duration") from None
    for name, value in values.items():
        setattr(panel, name, value)
    panel.pieces, panel.report, panel.curves = rows, [], []


class EditAutosave:
    """Writes the Editor's pieces and settings to `path` (atomically) a little after each change; removes
    the file when there is nothing left to lose (no pieces, or what the edit list file last saved or
    loaded holds)."""

    def __init__(self, path, interval_s: float = AUTOSAVE_INTERVAL_S, clock=time.monotonic):
        self.path, self.interval_s, self.clock = Path(path), interval_s, clock
        self.written = None  # the document on disk (None: no file of this run)
        self.error = ""  # why the last autosave failed ('' when it worked)
        self._last_write = -float("inf")

    def update(self, panel: EditorPanel, force: bool = False) -> None:
        document = panel_document(panel)
        keep = bool(panel.pieces) and document != panel.saved_document
        wanted = document if keep else None
        if wanted == self.written or (not force and self.clock() - self._last_write < self.interval_s):
            return
        self._last_write = self.clock()
        try:
            if wanted is None:
                self.path.unlink(missing_ok=True)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                files.write_text(self.path, json.dumps({"autosaved": datetime.now().isoformat(timespec="seconds"),
                                                        "editor": wanted}, indent=1))
        except OSError as error:
            self.error = f"The edit list could not be autosaved: {files.explain(error)}"
            return
        self.written, self.error = wanted, ""
