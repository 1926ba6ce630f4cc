"""The panel's Style section and the rules behind it: the checkpoint's styles listed most data first
with their minutes of mocap and full-stick walk / run speeds (styles with little data marked), a
selector for one style, and a blend between two (weights (1 - t, t)).

`StylePanel` is part of the one `ViewerState`. `style_section(state)` only reads and writes it and
asks the viewer to apply a choice (`state.request("set_style", weights)`); the viewer sets the style
of every live character before the next tick and mirrors what runs back into `StylePanel.running`
(which the HUD and the list show, whatever changed it: the panel, the cycle key, a script).
"""

from dataclasses import dataclass

import numpy as np
from imgui_bundle import imgui

from app.input import keys
from app.ui.theme import DIM_COLOUR, LITTLE_DATA_COLOUR
from app.ui.widgets import remember_rect, tooltip
from pfnn_core.data.inspector import MIN_STYLE_MINUTES

VISIBLE_ROWS = 9  # the list scrolls past this many styles
ONE_HOT = 1.0 - 1e-6  # a weight this close to 1 is one style alone


@dataclass(frozen=True)
class StyleRow:
    name: str
    minutes: float | None  # mocap minutes of the style in the training data (None: not stored)
    walk: float | None  # measured full-stick walking speed, m/s
    run: float | None  # measured running speed, m/s

    @property
    def little_data(self) -> bool:
        return self.minutes is not None and self.minutes < MIN_STYLE_MINUTES


@dataclass
class StylePanel:
    names: tuple = ()  # the model's styles in the order of its style input (empty: no style input)
    rows: tuple = ()  # a StyleRow per style, most data first: the list's, the selector's and the key's order
    selected: str = ""  # the style asked for when not blending
    blending: bool = False
    blend_a: str = ""
    blend_b: str = ""
    blend_t: float = 0.5  # weights (1 - t, t) over (blend_a, blend_b)
    running: tuple = ()  # style weights of the followed character now (mirrored by the viewer)
    scrolled_to: str = ""  # the style the list last scrolled to (it scrolls again when another runs)


def _number(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and np.isfinite(value) else None


def style_rows(names, stats: dict) -> tuple:
    """A StyleRow per style from a checkpoint's `meta["styles"]["stats"]`, most minutes first (styles
    without a figure last, in the model's order)."""
    rows = []
    for name in names:
        entry = stats.get(name) if isinstance(stats, dict) else None
        entry = entry if isinstance(entry, dict) else {}
        rows.append(StyleRow(name, _number(entry.get("minutes")), _number(entry.get("walk")), _number(entry.get("run"))))
    order = sorted(range(len(rows)), key=lambda i: (rows[i].minutes is None, -(rows[i].minutes or 0.0), i))
    return tuple(rows[i] for i in order)


def style_panel_for(names, meta: dict) -> StylePanel:
    """The panel for a newly loaded model: its styles, the blend between its two best-covered ones."""
    rows = style_rows(list(names), (meta.get("styles") or {}).get("stats") or {})
    first = rows[0].name if rows else ""
    second = rows[1].name if len(rows) > 1 else first
    return StylePanel(names=tuple(names), rows=rows, selected=first, blend_a=first, blend_b=second)


def one_style(names, name: str) -> np.ndarray:
    weights = np.zeros(len(names))
    weights[list(names).index(name)] = 1.0
    return weights


def blend_weights(names, style_a: str, style_b: str, t: float) -> np.ndarray:
    """Weights [S] over `names`: (1 - t) on style_a, t on style_b (all on it when both are one)."""
    t = float(np.clip(t, 0.0, 1.0))
    return (1.0 - t) * one_style(names, style_a) + t * one_style(names, style_b)


def asked_weights(panel: StylePanel) -> np.ndarray:
    """What the panel asks for: the blend when blending, else the selected style."""
    if panel.blending:
        return blend_weights(panel.names, panel.blend_a, panel.blend_b, panel.blend_t)
    return one_style(panel.names, panel.selected)


def dominant_style(names, weights) -> str:
    return names[int(np.argmax(weights))] if len(names) and len(weights) == len(names) else ""


def start_blend(panel) -> None:
    """A blend starts from the style the style box shows, towards the next one unless another was chosen."""
    if panel.selected:
        panel.blend_a = panel.selected
    if not panel.blend_b or panel.blend_b == panel.blend_a:
        panel.blend_b = next_style(panel.rows, panel.blend_a)


def blend_label(panel) -> str:
    """The blend in the panel's order: 'normal 70% + elderly 30%' (first style, then second)."""
    return f"{panel.blend_a} {100 * (1 - panel.blend_t):.0f}% + {panel.blend_b} {100 * panel.blend_t:.0f}%"


def weights_label(names, weights, most: int = 3) -> str:
    """'elderly', or 'elderly 60% + normal 40%' for a blend (largest first, at most `most` named);
    '' for a model without styles."""
    weights = np.asarray(weights, float)
    if not len(names) or weights.shape != (len(names),):
        return ""
    if weights.max() >= ONE_HOT:
        return names[int(np.argmax(weights))]
    order = [i for i in np.argsort(-weights, kind="stable") if weights[i] >= 0.005]
    parts = [f"{names[i]} {100 * weights[i]:.0f}%" for i in order[:most]]
    return " + ".join(parts) + (" + ..." if len(order) > most else "")


def next_style(rows, current: str, step: int = 1) -> str:
    """The style `step` places after `current` in the list's order (most data first), wrapping."""
    order = [row.name for row in rows]
    if not order:
        return ""
    if current not in order:
        return order[0] if step > 0 else order[-1]
    return order[(order.index(current) + step) % len(order)]


# ---- the section ---------------------------------------------------------------------------------

def _speed(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _style_combo(state, label: str, name: str, current: str, width: float = 150) -> tuple[bool, str]:
    """A combo over the styles in the list's order."""
    order = [row.name for row in state.style.rows]
    index = order.index(current) if current in order else 0
    imgui.set_next_item_width(width)
    changed, index = imgui.combo(label, index, order)
    remember_rect(state, name)
    return changed, order[index]


VALUE_LABELS = ("data min", "walk m/s", "run m/s")
SHORT_VALUE_LABELS = ("min", "walk", "run")  # a narrow panel: the units in the header's tooltip
NAME_ROOM = 80  # pixels the style names keep before the headers are shortened
CELL_ROOM = 16  # a cell's padding and the column border, both sides


def _value_columns(available: float, cells, text_width) -> tuple[tuple, list]:
    """The numeric columns' labels and widths for a table `available` pixels wide: each as wide as its
    widest text (label or value, measured by `text_width`); the long labels while the names keep
    NAME_ROOM pixels, else the short ones (the values are never cut)."""
    if not cells:
        cells = [("", "", "")]
    for labels in (VALUE_LABELS, SHORT_VALUE_LABELS):
        widths = [max(text_width(text) for text in (label, *column)) for label, column in zip(labels, zip(*cells))]
        if available - sum(widths) - CELL_ROOM * 4 >= NAME_ROOM:
            break
    return labels, widths


def _style_list(state) -> bool:
    """The styles as a table, the ones running highlighted (a click on a row selects it); returns
    whether one was clicked."""
    panel = state.style
    running = {name for name, weight in zip(panel.names, panel.running) if weight > 0}
    clicked = False
    flags = (imgui.TableFlags_.row_bg | imgui.TableFlags_.borders_inner_h | imgui.TableFlags_.scroll_y |
             imgui.TableFlags_.sizing_stretch_prop)
    row_height = imgui.get_text_line_height() + 2 * imgui.get_style().cell_padding.y
    height = row_height * (min(len(panel.rows), VISIBLE_ROWS) + 1) + 2
    cells = [(("-" if row.minutes is None else f"{row.minutes:.1f}"), _speed(row.walk), _speed(row.run))
             for row in panel.rows]
    labels, widths = _value_columns(imgui.get_content_region_avail().x - imgui.get_style().scrollbar_size, cells,
                                    lambda text: imgui.calc_text_size(text).x)
    if not imgui.begin_table("##styles", 4, flags, imgui.ImVec2(0, height)):
        return False
    imgui.table_setup_scroll_freeze(0, 1)
    imgui.table_setup_column("style", imgui.TableColumnFlags_.width_stretch, 1.0)
    for label, width in zip(labels, widths):  # the numbers keep their width; the names take the rest
        imgui.table_setup_column(label, imgui.TableColumnFlags_.width_fixed, width)
    imgui.table_headers_row()
    if labels[0] != VALUE_LABELS[0]:
        tooltip("min: minutes of mocap; walk, run: the data's speeds in m/s")
    shown = dominant_style(panel.names, panel.running) if len(panel.running) == len(panel.names) else ""
    for row, values in zip(panel.rows, cells):
        imgui.table_next_row()
        imgui.table_set_column_index(0)
        colour = imgui.ImVec4(*LITTLE_DATA_COLOUR) if row.little_data else None
        if colour is not None:
            imgui.push_style_color(imgui.Col_.text, colour)
        chosen, _ = imgui.selectable(f"{row.name}##style_{row.name}", row.name in running,
                                     imgui.SelectableFlags_.span_all_columns)
        remember_rect(state, f"style_row_{row.name}")
        if row.name == shown and panel.scrolled_to != shown:  # once per change: the list stays scrollable
            imgui.set_scroll_here_y(0.5)
            panel.scrolled_to = shown
        if row.little_data:
            tooltip(f"{row.name}: only {row.minutes:.1f} min of mocap (under {MIN_STYLE_MINUTES:g} min): "
                     "the model knows this style poorly")
        if chosen:
            panel.selected, panel.blending, clicked = row.name, False, True
        for column, text in enumerate(values, start=1):
            imgui.table_set_column_index(column)
            imgui.text(text)
            if row is panel.rows[0]:
                remember_rect(state, f"style_value_{column}")
        if colour is not None:
            imgui.pop_style_color()
    imgui.end_table()
    remember_rect(state, "style_table")
    return clicked


def style_section(state) -> None:
    panel = state.style
    if not panel.names:
        imgui.push_text_wrap_pos(0.0)
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), "This model has no style input (it was trained on one style).")
        imgui.pop_text_wrap_pos()
        return
    asked = False
    key_label = keys.keys_label(keys.control("next_style"))
    changed, name = _style_combo(state, f"Style ({key_label})##style_select", "style_select", panel.selected)
    if changed:
        panel.selected, panel.blending, asked = name, False, True
    tooltip(f"{key_label} / {keys.keys_label(keys.control('previous_style'))}: next / previous style, "
             "most data first (a style chosen here or in the list ends a blend)")
    imgui.same_line()
    style = imgui.get_style()
    if imgui.get_content_region_avail().x < imgui.get_frame_height() + style.item_inner_spacing.x + \
            imgui.calc_text_size("Blend two").x:
        imgui.new_line()  # a narrow panel (an 800-pixel window): the box on a line of its own, not cut off
    changed, panel.blending = imgui.checkbox("Blend two##style_blending", panel.blending)
    remember_rect(state, "style_blending")
    if changed and panel.blending:
        start_blend(panel)
    asked = asked or changed
    if panel.blending:
        imgui.align_text_to_frame_padding()
        imgui.text("from")
        imgui.same_line()
        changed, panel.blend_a = _style_combo(state, "##style_a", "style_a", panel.blend_a, 135)
        asked = asked or changed
        imgui.same_line()
        imgui.text("to")
        imgui.same_line()
        changed, panel.blend_b = _style_combo(state, "##style_b", "style_b", panel.blend_b, 135)
        asked = asked or changed
        imgui.set_next_item_width(200)
        changed, t = imgui.slider_float("##style_blend", panel.blend_t, 0.0, 1.0, "")
        remember_rect(state, "style_blend")
        if changed:
            panel.blend_t, asked = float(t), True
        tooltip("0: all 'from', 1: all 'to'")
        imgui.same_line()
        imgui.text(f"{100 * (1 - panel.blend_t):.0f}% / {100 * panel.blend_t:.0f}%")
    asked = _style_list(state) or asked
    if any(row.little_data for row in panel.rows):
        imgui.text_colored(imgui.ImVec4(*LITTLE_DATA_COLOUR), f"orange: under {MIN_STYLE_MINUTES:g} min of data, known poorly")
    imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), f"Full stick: walk {state.settings.walk_speed:.2f} m/s, run "
                                   f"{state.settings.run_speed:.2f} m/s (Tune)")
    tooltip("The style's measured speeds (a blend's weighted mean); change them in Tune")
    if asked:
        state.request("set_style", tuple(float(w) for w in asked_weights(panel)))
