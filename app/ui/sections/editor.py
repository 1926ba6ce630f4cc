"""The panel's Editor section: pieces of BVH clips on a timeline, joined at matching phase
(`pfnn_core.edit`), previewed in the 3D view through the Playback section, saved as an edit list,
exported as BVH, and handed to the Train section ("Train on this").

`editor_section(state)` only reads and writes `state.editor` (an `EditorPanel`) and queues
`state.request("editor", action)`; the viewer runs the action (`app.jobs.edits.editor_action`) after the
UI pass. Its path fields are the panel's (`app.ui.path_fields`: a `...` file browser, recent folders).
"""

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from imgui_bundle import imgui, implot

from app.ui.path_fields import path_field
from app.ui.recovery import reopen_button
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
    saved_document: dict | None = None  # what the edit list file last saved or loaded held (autosave's 'saved')
    message: str = ""
    error: str = ""
    cache: dict = field(default_factory=dict, repr=False)  # loaded and labelled clips (pfnn_core.edit)


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


def piece_problem(row: PieceRow) -> str | None:
    """What is impossible about a piece's cut times (None when they can be cut): checked as they are
    edited, and again before a build."""
    limit = row.duration + 1e-6
    if row.start < 0 or row.start >= limit:
        return f"start {row.start:.2f} s is outside the clip (0 to {row.duration:.2f} s)"
    if row.end > limit:
        return f"end {row.end:.2f} s is past the clip's end ({row.duration:.2f} s)"
    if row.end <= row.start:
        return f"end {row.end:.2f} s is not after start {row.start:.2f} s"
    return None


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
        changed, row.start, row.end = imgui.drag_float_range2("##range", row.start, row.end, 0.01, 0.0,
                                                              max(row.duration, 0.01), "%.2f s")
        if changed:
            panel.report, panel.curves = [], []  # the last build's report is not this edit's
        problem = piece_problem(row)
        if problem:
            imgui.text_colored(imgui.ImVec4(*ERROR_COLOUR), problem)
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
    if imgui.get_content_region_avail().x > 2 * 130 + 120:  # the seconds beside the kind where both fit
        imgui.same_line()
    _, panel.seconds = imgui.slider_float("s##seconds", panel.seconds, 0.05, 1.0, "%.2f")
    _, panel.match_phase = imgui.checkbox("match phase", panel.match_phase)
    if panel.match_phase:
        if imgui.get_content_region_avail().x > 2 * 130 + 140:
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
    wrapped(ERROR_COLOUR, state.recovery.autosave_error)
    reopen_button(state, "edit lists")
    for line in panel.report:
        wrapped(DIM_COLOUR, line)
