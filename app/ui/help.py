"""The F1 help overlay: every key, mouse and gamepad control, in sections, from the control table
(`app.input.keys.CONTROLS`), a column per device (so a gamepad's X is never read as the X key), and the
legend of the ground overlays (`app.ui.legend`)."""

from imgui_bundle import imgui

from app.input import keys
from app.ui.legend import LEGEND, legend_rows
from app.ui.sections.view import OVERLAY_TOGGLES
from app.ui.theme import HELP_MOUSE_COLOUR, HELP_PAD_COLOUR, HIGHLIGHT_COLOUR
from app.ui.widgets import dim_line

DEVICE_COLUMNS = (("Keyboard", HIGHLIGHT_COLOUR, 92), ("Mouse", HELP_MOUSE_COLOUR, 92),
                  ("Gamepad", HELP_PAD_COLOUR, 92))  # (heading, colour, width in pixels)
TWO_COLUMNS_FROM = 900  # pixels of help width: narrower windows get one column


def help_window(state, display_size) -> None:
    """The F1 overlay: every key, mouse and gamepad control, in sections, from `app.input.keys.CONTROLS`."""
    if not state.show_help:
        return
    width, height = min(1100, display_size[0] - 40), display_size[1] - 40
    imgui.set_next_window_pos(imgui.ImVec2(display_size[0] / 2, display_size[1] / 2), imgui.Cond_.always,
                              imgui.ImVec2(0.5, 0.5))
    imgui.set_next_window_size(imgui.ImVec2(width, height), imgui.Cond_.always)
    imgui.set_next_window_bg_alpha(0.93)
    close = keys.keys_label(keys.control("toggle_help"))
    _, still_open = imgui.begin(f"Controls ({close} or Escape to close)###help", True,
                                imgui.WindowFlags_.no_collapse | imgui.WindowFlags_.no_move |
                                imgui.WindowFlags_.no_resize)
    sections = keys.help_sections() + [("What the overlays show", None)]
    columns = 2 if width >= TWO_COLUMNS_FROM else 1
    half = (sum(len(rows or LEGEND) + 2 for _, rows in sections) + 1) // columns
    if imgui.begin_table("##help_columns", columns, imgui.TableFlags_.sizing_stretch_same):
        imgui.table_next_row()
        imgui.table_set_column_index(0)
        lines = 0
        for section, rows in sections:
            if columns > 1 and lines >= half:
                imgui.table_set_column_index(1)
                lines = -10 ** 6  # the rest go in the second column
            if rows is None:
                overlay_legend()
            else:
                help_section(section, rows)
            lines += len(rows or LEGEND) + 2
        imgui.end_table()
    dim_line(f"Relative paths typed in the panel start in the work folder: {state.work_dir}")
    imgui.end()
    if not still_open:
        state.show_help = False


def help_section(section: str, rows) -> None:
    """One section's controls: a column per device (empty where a device has none), then the action."""
    imgui.separator_text(section)
    flags = imgui.TableFlags_.row_bg | imgui.TableFlags_.sizing_fixed_fit
    if not imgui.begin_table(f"##help_{section}", len(DEVICE_COLUMNS) + 1, flags):
        return
    for heading, _, column_width in DEVICE_COLUMNS:
        imgui.table_setup_column(heading, imgui.TableColumnFlags_.width_fixed, column_width)
    imgui.table_setup_column("Action", imgui.TableColumnFlags_.width_stretch)
    imgui.table_next_row(imgui.TableRowFlags_.headers)
    for index, (heading, colour, _) in enumerate(DEVICE_COLUMNS):
        imgui.table_set_column_index(index)
        imgui.text_colored(imgui.ImVec4(*colour), heading)
    for keys_text, mouse_text, pad_text, description in rows:
        imgui.table_next_row()
        for index, text in enumerate((keys_text, mouse_text, pad_text)):
            imgui.table_set_column_index(index)
            if text:
                imgui.push_text_wrap_pos(0.0)
                imgui.text_colored(imgui.ImVec4(*DEVICE_COLUMNS[index][1]), text)
                imgui.pop_text_wrap_pos()
        imgui.table_set_column_index(len(DEVICE_COLUMNS))
        imgui.push_text_wrap_pos(0.0)
        imgui.text_unformatted(description)
        imgui.pop_text_wrap_pos()
    imgui.end_table()


def overlay_legend() -> None:
    """Each overlay's marks, in the colours they are drawn with."""
    imgui.separator_text("What the overlays show")
    for name, label, action in OVERLAY_TOGGLES:
        imgui.text_colored(imgui.ImVec4(*HIGHLIGHT_COLOUR), f"{label} ({keys.keys_label(keys.control(action))})")
        imgui.indent()
        legend_rows(name)
        imgui.unindent()
