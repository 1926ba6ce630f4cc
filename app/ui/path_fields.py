"""The panel's path fields: the table of every field (which panel attribute it edits, what the file
browser lists for it, whether it names a new file, what choosing a file does), the widget
(`path_field`: label, text field, `...` browse button, optional action button) and what happens when
the browser confirms a choice (`apply_choice`). Used by the panel's sections; relative
paths typed in these fields are resolved against the work folder (`app.paths`).
"""

from imgui_bundle import imgui

from app import paths
from app.ui.file_browser import open_browser
from app.ui.widgets import remember_rect

LABEL_WIDTH = 96  # the label column of path fields
MIN_FIELD = 110  # px: a path field narrower than this shows too little of its path (it goes under its label)

# Path fields: id -> (panel attribute of ViewerState, field, what the browser lists, choosing a new file?)
PATH_FIELDS = {
    "model": ("model", "load_path", "checkpoint", False),
    "bvh_dir": ("train", "bvh_dir", "folder", False),
    "train_out": ("train", "out", "checkpoint", True),
    "resume": ("train", "resume_path", "checkpoint", False),
    "playback": ("playback", "path", "bvh", False),
    "record": ("record", "path", "bvh", True),
    "capture_dir": ("capture", "folder", "folder", False),
    "edit_piece": ("editor", "new_piece", "bvh", False),
    "edit_list": ("editor", "list_path", "edit_list", True),  # saved to and loaded from: may be new
    "edit_out": ("editor", "out_path", "bvh", True),
    "edit_train_dir": ("editor", "train_dir", "folder", False),
}
# Fields whose path is only opened: a relative name not in the work folder may name a shipped file.
OPENED_FIELDS = ("model", "bvh_dir", "resume", "playback", "edit_piece")
# Where the browser of an empty field opens (in the work folder): the takes for playback.
EMPTY_FIELD_FOLDERS = {"playback": "recordings", "edit_piece": "recordings"}


def empty_field_folder(field_id: str, work_dir):
    """The folder the browser of an empty field opens: its kind's folder when it exists, else the work folder."""
    folder = work_dir / EMPTY_FIELD_FOLDERS.get(field_id, "")
    return folder if folder.is_dir() else work_dir


# Choosing a file in these fields also acts on it: field -> (request, payload; None = the chosen path).
ACT_ON_CHOICE = {"model": ("load_model", None), "playback": ("open_bvh", None), "edit_piece": ("editor", "add")}


def path_field(state, field_id: str, label: str, button: str = "") -> bool:
    """Label, a path field as wide as the panel allows, a browse button ('...') and an optional action
    button; returns whether the action button (or Enter in the field) was pressed. A click in the field
    selects the whole path, so typing replaces it (Ctrl+A selects all too)."""
    panel_name, attribute, kind, save = PATH_FIELDS[field_id]
    panel = getattr(state, panel_name)
    style = imgui.get_style()
    buttons = imgui.calc_text_size("...").x + 2 * style.frame_padding.x
    if button:
        buttons += imgui.calc_text_size(button).x + 2 * style.frame_padding.x + style.item_spacing.x
    imgui.align_text_to_frame_padding()
    imgui.text(label)
    beside = imgui.get_content_region_avail().x - LABEL_WIDTH - buttons - style.item_spacing.x
    if imgui.calc_text_size(label).x + style.item_spacing.x <= LABEL_WIDTH and beside >= MIN_FIELD:
        imgui.same_line(LABEL_WIDTH)  # else (a narrow panel, a long label) the field gets the line below
    imgui.set_next_item_width(-(buttons + style.item_spacing.x))
    value = getattr(panel, attribute)
    entered, value = imgui.input_text(f"##{field_id}", value, imgui.InputTextFlags_.auto_select_all |
                                      imgui.InputTextFlags_.enter_returns_true)
    setattr(panel, attribute, value)
    remember_rect(state, field_id)
    if imgui.is_item_hovered() and value.strip():
        resolved = state.resolve_existing(value) if field_id in OPENED_FIELDS else state.resolve(value)
        note = "  (inside the repository)" if kind != "folder" and save and paths.inside_repository(resolved) else ""
        imgui.set_tooltip(f"{resolved}{note}")
    imgui.same_line()
    if imgui.button(f"...##{field_id}"):
        resolve = state.resolve_existing if field_id in OPENED_FIELDS else state.resolve  # as the field opens it
        current = resolve(value) if value.strip() else empty_field_folder(field_id, paths.work_dir())
        open_browser(state.browser, field_id, kind, save, current, state.recent, paths.work_dir())
    remember_rect(state, f"{field_id}_browse")
    if imgui.is_item_hovered() and not state.browser.open:  # once open, the browser says what it is for
        imgui.set_tooltip(f"Browse for a {kind.replace('_', ' ') if kind != 'any' else 'file'}")
    pressed = bool(button) and entered  # Enter in the field presses its button (and leaves the field)
    if button:
        imgui.same_line()
        pressed = imgui.button(f"{button}##{field_id}") or pressed
    return pressed


def apply_choice(state, field_id: str, chosen: str) -> None:
    """The browser's choice written into its field, and the field's action queued when it has one."""
    panel_name, attribute, _, _ = PATH_FIELDS[field_id]
    setattr(getattr(state, panel_name), attribute, chosen)
    if field_id in ACT_ON_CHOICE:
        request, payload = ACT_ON_CHOICE[field_id]
        state.request(request, chosen if payload is None else payload)
