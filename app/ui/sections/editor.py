"""The panel's Editor section: pieces of BVH clips on a timeline, joined at matching phase
(`pfnn_core.edit`), previewed in the 3D view through the Playback section, saved as an edit list,
exported as BVH, and handed to the Train section ("Train on this").

`editor_section(state)` only reads and writes `state.editor` (an `EditorPanel`) and queues
`state.request("editor", action)`; the app calls `handle_request(state, action)` after the UI pass,
which does the work with `pfnn_core.edit` and writes the result or the error back. Its path fields are
the panel's (`app.path_fields`: a `...` file browser, recent folders); relative paths typed there are
resolved against the work folder (`state.resolve`), a loaded edit list's own relative piece files as
`pfnn-edit` reads them (the current folder, then the list's folder).
"""

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from imgui_bundle import imgui, implot

from app.ui.path_fields import path_field
from app.ui.theme import (
    ASKED_COLOUR,
    CURVE_COLOUR,
    DIM_COLOUR,
    ERROR_COLOUR,
    HIGHLIGHT_COLOUR,
    LEFT_COLOUR,
    OK_COLOUR,
    PIECE_COLOURS,
    RIGHT_COLOUR,
)
from app.ui.widgets import wrapped
from pfnn_core import edit


@dataclass
class PieceRow:
    file: str
    start: float = 0.0
    end: float = 0.0
    mirror: bool = False
    speed: float = 1.0
    duration: float = 0.0  # the clip's length in seconds (the range sliders' limit)


@dataclass
class PieceCurves:
    """What the plot of one piece shows, from the last build (source seconds)."""

    time: np.ndarray
    phase: np.ndarray
    left_down: np.ndarray  # [F] bool: left ankle or toe in contact
    right_down: np.ndarray
    cut: tuple  # (start, end) chosen
    asked: tuple  # (start, end) as asked


@dataclass
class EditorPanel:
    name: str = "edit"
    pieces: list = field(default_factory=list)  # PieceRow
    new_piece: str = ""  # path of the next piece (choosing one in the file browser adds it)
    kind: str = edit.KINDS[0]
    seconds: float = edit.DEFAULT_TRANSITION_S
    match_phase: bool = True
    search_seconds: float = edit.DEFAULT_SEARCH_S
    fps: float = edit.DEFAULT_FPS
    list_path: str = "edits/edit.json"  # relative paths: in the work folder
    out_path: str = "edits/edit.bvh"
    train_dir: str = "edits/training"
    preview_path: str = field(default_factory=lambda: str(Path(tempfile.gettempdir()) / "pfnn-editor-preview.bvh"))
    curves: list = field(default_factory=list)  # PieceCurves of the last build
    report: list = field(default_factory=list)  # the last build's report, in short (`summary_lines`)
    exported: str = ""  # the file the last export wrote
    message: str = ""
    error: str = ""
    cache: dict = field(default_factory=dict, repr=False)  # loaded and labelled clips (pfnn_core.edit)


# ---- the edit list the rows describe -------------------------------------------------------------

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


# ---- actions (after the UI pass) ------------------------------------------------------------------

def handle_request(state, action: str) -> None:
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
        panel.error = str(error)
    except OSError as error:
        panel.error = f"{getattr(error, 'filename', '') or ''}: {error.strerror or error}".lstrip(": ")


def summary_lines(result: edit.EditResult) -> list:
    """The report, short enough for the panel: one line per join and the totals."""
    lines = [f"{i}->{i + 1}: cut {result.pieces[i].end:.2f} / {result.pieces[i + 1].start:.2f} s, phase diff "
             f"{join.match.phase_difference:.3f}, contacts {join.match.contacts_agree}/4, skating "
             f"{join.seam_skating:.2f} m/s (source {join.source_skating:.2f})" for i, join in enumerate(result.joins)]
    return lines + [f"{result.motion.duration:.2f} s; root step max {100 * result.root_step_max:.1f} cm (clips "
                    f"{100 * result.source_root_step_max:.1f}); pose pops {result.pops}"]


def _build(panel: EditorPanel, out_path, base_dir) -> str:
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


# ---- widgets ---------------------------------------------------------------------------------------

def timeline(panel: EditorPanel) -> None:
    """The pieces as coloured blocks in output time, seams as ticks."""
    lengths = [max(row.end - row.start, 0.0) / max(row.speed, 1e-6) for row in panel.pieces]
    total = sum(lengths)
    width, height = imgui.get_content_region_avail().x, 16.0
    origin = imgui.get_cursor_screen_pos()
    draw = imgui.get_window_draw_list()
    x = origin.x
    for index, length in enumerate(lengths):
        right = x + width * length / total if total > 0 else x
        colour = imgui.color_convert_float4_to_u32(imgui.ImVec4(*PIECE_COLOURS[index % len(PIECE_COLOURS)]))
        draw.add_rect_filled(imgui.ImVec2(x, origin.y), imgui.ImVec2(max(right - 1, x), origin.y + height), colour, 3.0)
        x = right
    imgui.dummy(imgui.ImVec2(width, height))
    imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), f"{total:.2f} s in {len(lengths)} pieces")


def piece_rows(panel: EditorPanel) -> None:
    """Each piece: its file, a range slider over the clip, speed, mirror, and (after a build) its curves."""
    remove = None
    for index, row in enumerate(panel.pieces):
        imgui.push_id(f"piece{index}")
        colour = imgui.ImVec4(*PIECE_COLOURS[index % len(PIECE_COLOURS)])
        imgui.text_colored(colour, f"{index}  {Path(row.file).name}")
        imgui.same_line()
        if imgui.small_button("x"):
            remove = index
        imgui.set_next_item_width(-1)
        _, row.start, row.end = imgui.drag_float_range2("##range", row.start, row.end, 0.01, 0.0,
                                                        max(row.duration, 0.01), "%.2f s")
        imgui.set_next_item_width(120)
        _, row.speed = imgui.slider_float("speed", row.speed, 0.25, 3.0, "%.2fx")
        imgui.same_line()
        _, row.mirror = imgui.checkbox("mirror", row.mirror)
        if len(panel.curves) == len(panel.pieces):
            piece_plot(index, panel.curves[index])
        imgui.pop_id()
    if remove is not None:
        panel.pieces.pop(remove)


def piece_plot(index: int, curves: PieceCurves) -> None:
    """Phase (0-1) and left / right contact bands of one piece, the chosen cut (yellow) and the asked one (grey)."""
    if not implot.begin_plot("##piece_plot", imgui.ImVec2(-1, 110), implot.Flags_.no_legend | implot.Flags_.no_menus):
        return
    implot.setup_axes("", "", 0, implot.AxisFlags_.no_tick_labels)
    implot.setup_axis_limits(implot.ImAxis_.y1, -0.4, 1.05, imgui.Cond_.always)
    implot.setup_axis_limits(implot.ImAxis_.x1, float(curves.time[0]), float(curves.time[-1]), imgui.Cond_.always)
    time = curves.time.astype(np.float64)
    for down, low, colour in ((curves.left_down, -0.15, LEFT_COLOUR), (curves.right_down, -0.35, RIGHT_COLOUR)):
        implot.plot_shaded("##contact", time, np.full(len(time), low), np.where(down, low + 0.1, low),
                           implot.Spec(fill_color=imgui.ImVec4(*colour), fill_alpha=0.8))
    implot.plot_line("phase", time, curves.phase.astype(np.float64), implot.Spec(line_color=imgui.ImVec4(*CURVE_COLOUR)))
    implot.plot_inf_lines("asked", np.asarray(curves.asked, np.float64), implot.Spec(line_color=imgui.ImVec4(*ASKED_COLOUR),
                                                                                      line_weight=1.5))
    implot.plot_inf_lines("cut", np.asarray(curves.cut, np.float64), implot.Spec(line_color=imgui.ImVec4(*HIGHLIGHT_COLOUR),
                                                                                  line_weight=2.0))
    implot.end_plot()


def editor_section(state) -> None:
    panel = state.editor
    imgui.set_next_item_width(-1)
    _, panel.name = imgui.input_text("##edit_name", panel.name)
    piece_rows(panel)
    if panel.pieces:
        timeline(panel)
    if path_field(state, "edit_piece", "Piece", "Add"):  # choosing a file in its browser adds it too
        state.request("editor", "add")
    imgui.push_item_width(130)
    kinds = list(edit.KINDS)
    _, kind_index = imgui.combo("transition", kinds.index(panel.kind) if panel.kind in kinds else 0, kinds)
    panel.kind = kinds[kind_index]
    imgui.same_line()
    _, panel.seconds = imgui.slider_float("s##seconds", panel.seconds, 0.05, 1.0, "%.2f")
    _, panel.match_phase = imgui.checkbox("match phase", panel.match_phase)
    if panel.match_phase:
        imgui.same_line()
        _, panel.search_seconds = imgui.slider_float("search (s)", panel.search_seconds, 0.0, 1.5, "%.2f")
    imgui.pop_item_width()
    if imgui.button("Preview"):
        state.request("editor", "preview")
    if path_field(state, "edit_out", "Export to", "Export"):
        state.request("editor", "export")
    path_field(state, "edit_list", "Edit list")
    if imgui.button("Save list"):
        state.request("editor", "save")
    imgui.same_line()
    if imgui.button("Load list"):
        state.request("editor", "load")
    if path_field(state, "edit_train_dir", "Train folder", "Train on this"):
        state.request("editor", "train")
    wrapped(OK_COLOUR, panel.message)
    wrapped(ERROR_COLOUR, panel.error)
    for line in panel.report:
        wrapped(DIM_COLOUR, line)
