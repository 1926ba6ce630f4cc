"""The F1 help overlay: every key, mouse and gamepad control, in sections, from the control table
(`app.input.keys.CONTROLS`)."""

from imgui_bundle import imgui

from app.input import keys
from app.ui.theme import HELP_MOUSE_COLOUR, HELP_PAD_COLOUR, HIGHLIGHT_COLOUR
from app.ui.widgets import dim_line


def help_window(state, display_size) -> None:
    """The F1 overlay: every key, mouse and gamepad control, in sections, from `app.input.keys.CONTROLS`."""
    if not state.show_help:
        return
    width, height = min(1000, display_size[0] - 40), display_size[1] - 40
    imgui.set_next_window_pos(imgui.ImVec2(display_size[0] / 2, display_size[1] / 2), imgui.Cond_.always,
                              imgui.ImVec2(0.5, 0.5))
    imgui.set_next_window_size(imgui.ImVec2(width, height), imgui.Cond_.always)
    imgui.set_next_window_bg_alpha(0.93)
    close = keys.keys_label(keys.control("toggle_help"))
    _, still_open = imgui.begin(f"Controls ({close} or Escape to close)###help", True,
                                imgui.WindowFlags_.no_collapse | imgui.WindowFlags_.no_move |
                                imgui.WindowFlags_.no_resize)
    sections = keys.help_sections()
    half = (sum(len(rows) + 2 for _, rows in sections) + 1) // 2
    if imgui.begin_table("##help_columns", 2, imgui.TableFlags_.sizing_stretch_same):
        imgui.table_next_row()
        imgui.table_set_column_index(0)
        lines = 0
        for section, rows in sections:
            if lines >= half:
                imgui.table_set_column_index(1)
                lines = -10 ** 6  # the rest go in the second column
            help_section(section, rows)
            lines += len(rows) + 2
        imgui.end_table()
    imgui.text_colored(imgui.ImVec4(*HIGHLIGHT_COLOUR), "keys")
    imgui.same_line()
    imgui.text_colored(imgui.ImVec4(*HELP_MOUSE_COLOUR), "mouse")
    imgui.same_line()
    imgui.text_colored(imgui.ImVec4(*HELP_PAD_COLOUR), "gamepad")
    dim_line(f"Relative paths typed in the panel start in the work folder: {state.work_dir}")
    imgui.end()
    if not still_open:
        state.show_help = False


def help_section(section: str, rows) -> None:
    imgui.separator_text(section)
    flags = imgui.TableFlags_.row_bg | imgui.TableFlags_.sizing_fixed_fit
    if not imgui.begin_table(f"##help_{section}", 2, flags):
        return
    imgui.table_setup_column("input", imgui.TableColumnFlags_.width_fixed, 170)
    imgui.table_setup_column("action", imgui.TableColumnFlags_.width_stretch)
    for keys_text, mouse_text, pad_text, description in rows:
        imgui.table_next_row()
        imgui.table_set_column_index(0)
        first = True
        for text, colour in ((keys_text, HIGHLIGHT_COLOUR), (mouse_text, HELP_MOUSE_COLOUR),
                             (pad_text, HELP_PAD_COLOUR)):
            if text:
                if not first:
                    imgui.same_line()
                imgui.text_colored(imgui.ImVec4(*colour), text)
                first = False
        imgui.table_set_column_index(1)
        imgui.push_text_wrap_pos(0.0)
        imgui.text_unformatted(description)
        imgui.pop_text_wrap_pos()
    imgui.end_table()
