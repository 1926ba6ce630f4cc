"""A file browser drawn inside the viewer (no desktop file dialog needed, works headless), and the
small JSON file that remembers the folders last used (`recent.json` in `app.paths.config_dir()`).

`BrowserState` is what the window edits; `list_folder` is the pure listing it shows; `browser_window`
draws it and returns the chosen path once the user confirms.
"""

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from imgui_bundle import imgui

from app.ui.theme import DIM_COLOUR, ERROR_COLOUR
from pfnn_core.motion.bvh import is_bvh_path

RECENT_COUNT = 8
KIND_TITLES = {"checkpoint": "model checkpoint (.safetensors)", "bvh": "BVH file (.bvh, .bvh.gz)",
               "folder": "folder", "video": "video (.mp4)", "edit_list": "edit list (.json)", "any": "file"}


def shows_file(name: str, kind: str) -> bool:
    """Whether a file belongs in a listing for `kind` (folders are always listed)."""
    lower = name.lower()
    if kind == "checkpoint":
        return lower.endswith(".safetensors")
    if kind == "bvh":
        return is_bvh_path(name)
    if kind == "video":
        return lower.endswith(".mp4")
    if kind == "edit_list":
        return lower.endswith(".json")
    if kind == "folder":
        return is_bvh_path(name)  # shown dimmed, so the user sees a folder holds data
    return True


@dataclass(frozen=True)
class Entry:
    name: str
    path: str
    is_dir: bool


def list_folder(folder, kind: str) -> list[Entry]:
    """Sub-folders then the files `kind` shows, each sorted by name (case-insensitive); hidden names
    (a leading dot) are left out. Raises OSError when the folder cannot be read."""
    folders, files = [], []
    with os.scandir(folder) as scan:
        for item in scan:
            if item.name.startswith("."):
                continue
            try:
                is_dir = item.is_dir()
            except OSError:
                continue
            if is_dir:
                folders.append(Entry(item.name, item.path, True))
            elif shows_file(item.name, kind):
                files.append(Entry(item.name, item.path, False))
    order = lambda entry: entry.name.lower()  # noqa: E731
    return sorted(folders, key=order) + sorted(files, key=order)


class RecentFolders:
    """The last folder used per kind and the most recent folders overall, kept in a JSON file.
    A missing or unreadable file starts empty; a failed save is reported, never raised."""

    def __init__(self, path):
        self.path = Path(path)
        self.last: dict = {}
        self.recent: list = []
        try:
            stored = json.loads(self.path.read_text())
            self.last = {str(k): str(v) for k, v in dict(stored.get("last", {})).items()}
            self.recent = [str(v) for v in list(stored.get("recent", []))][:RECENT_COUNT]
        except (OSError, ValueError, TypeError, AttributeError):
            pass

    def remember(self, kind: str, folder) -> str | None:
        """Note `folder` as the last one used for `kind`; returns an error message if it could not be saved."""
        folder = str(folder)
        self.last[kind] = folder
        self.recent = [folder] + [f for f in self.recent if f != folder][: RECENT_COUNT - 1]
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps({"last": self.last, "recent": self.recent}, indent=1))
        except OSError as error:
            return f"Could not save the recent folders to {self.path}: {error.strerror or error}"
        return None


@dataclass
class BrowserState:
    open: bool = False
    target: str = ""  # the path field that receives the choice (a key of `path_fields.PATH_FIELDS`)
    kind: str = "any"  # 'checkpoint', 'bvh', 'folder', 'video', 'edit_list' or 'any'
    save: bool = False  # choosing a name for a new file (output fields)
    folder: str = ""
    name: str = ""  # the file selected or typed
    error: str = ""
    entries: list = field(default_factory=list)  # listing of `listed`
    listed: str = ""  # the folder `entries` was read from ("" = read again)


def open_browser(browser: BrowserState, field_name: str, kind: str, save: bool, current: Path,
                 recent: RecentFolders, fallback: Path) -> None:
    """Open the browser for a path field: in the folder of its current value when that exists, else
    in the folder last used for this kind, else in `fallback`."""
    current = Path(current)
    start = current if kind == "folder" or current.is_dir() else current.parent  # a folder opens itself
    candidates = [start, Path(recent.last.get(kind, "")) if recent.last.get(kind) else None, fallback, Path.home()]
    folder = next(c for c in candidates if c is not None and c.is_dir())
    name = "" if kind == "folder" or current.is_dir() else current.name
    browser.open, browser.target, browser.kind, browser.save = True, field_name, kind, save
    browser.folder, browser.name, browser.error, browser.listed = str(folder), name, "", ""


def _go(browser: BrowserState, folder) -> None:
    folder = Path(folder).expanduser()
    if folder.is_dir():
        browser.folder, browser.listed, browser.error = str(folder), "", ""
    else:
        browser.error = f"{folder}: no such folder"


def _refresh(browser: BrowserState) -> None:
    if browser.listed == browser.folder:
        return
    try:
        browser.entries = list_folder(browser.folder, browser.kind)
    except OSError as error:
        browser.entries, browser.error = [], f"{browser.folder}: {error.strerror or error}"
    browser.listed = browser.folder


def chosen_path(browser: BrowserState) -> tuple[str | None, str]:
    """(the path the confirm button would choose, or None; why not)."""
    folder = Path(browser.folder)
    if browser.kind == "folder":
        return str(folder), ""
    name = browser.name.strip()
    if not name:
        return None, "type a file name" if browser.save else "select a file"
    path = folder / name
    if path.is_dir():
        return None, f"{name} is a folder"
    if not browser.save and not path.is_file():
        return None, f"{name}: no such file"
    return str(path), ""


def browser_window(browser: BrowserState, recent: RecentFolders, work_dir: Path, display_size,
                   rects: dict | None = None) -> str | None:
    """Draw the browser when open; returns the chosen path on the frame the user confirms. `rects`
    receives the screen rectangle of the confirm button."""
    if not browser.open:
        return None
    _refresh(browser)
    imgui.set_next_window_size(imgui.ImVec2(min(600, display_size[0] - 40), min(460, display_size[1] - 40)),
                               imgui.Cond_.appearing)
    imgui.set_next_window_pos(imgui.ImVec2(display_size[0] / 2, display_size[1] / 2), imgui.Cond_.appearing,
                              imgui.ImVec2(0.5, 0.5))
    title = ("Save as " if browser.save else "Choose a ") + KIND_TITLES.get(browser.kind, "file")
    _, still_open = imgui.begin(f"{title}###file_browser", True, imgui.WindowFlags_.no_collapse)
    _navigation(browser, recent, work_dir)
    chosen = _entries(browser)
    confirmed, cancelled = _confirm_row(browser, rects)
    chosen = confirmed or chosen
    imgui.end()
    if chosen is not None:
        browser.open = False
        browser.error = recent.remember(browser.kind, Path(chosen).parent if browser.kind != "folder" else chosen) or ""
        return chosen
    browser.open = bool(still_open) and not cancelled
    return None


def _navigation(browser: BrowserState, recent: RecentFolders, work_dir: Path) -> None:
    """Up, Home, the work folder, the recent folders and the folder typed."""
    if imgui.button("Up"):
        _go(browser, Path(browser.folder).parent)
    imgui.same_line()
    if imgui.button("Home"):
        _go(browser, Path.home())
    imgui.same_line()
    if imgui.button("Work folder"):
        work_dir.mkdir(parents=True, exist_ok=True)
        _go(browser, work_dir)
    imgui.same_line()
    imgui.set_next_item_width(-1)
    if imgui.begin_combo("##recent", "Recent folders", imgui.ComboFlags_.height_large):
        for folder in recent.recent:
            if imgui.selectable(folder, False)[0]:
                _go(browser, folder)
        if not recent.recent:
            imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), "none yet")
        imgui.end_combo()
    imgui.set_next_item_width(-1)
    entered, typed = imgui.input_text("##folder", browser.folder, imgui.InputTextFlags_.enter_returns_true)
    if entered:
        _go(browser, typed)


def _entries(browser: BrowserState) -> str | None:
    """The folder's listing (a click on a folder opens it, on a file selects it); the path of a file
    double-clicked, else None."""
    chosen = None
    footer = imgui.get_frame_height_with_spacing() * (3 if browser.kind != "folder" else 2) + 8
    imgui.begin_child("##entries", imgui.ImVec2(0, -footer), imgui.ChildFlags_.borders)
    for entry in browser.entries:
        if entry.is_dir:
            clicked, _ = imgui.selectable(f"[{entry.name}]", False, imgui.SelectableFlags_.allow_double_click)
            if clicked:
                _go(browser, entry.path)
        elif browser.kind == "folder":
            imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), entry.name)
        else:
            clicked, _ = imgui.selectable(entry.name, entry.name == browser.name,
                                          imgui.SelectableFlags_.allow_double_click)
            if clicked:
                browser.name = entry.name
                if imgui.is_mouse_double_clicked(0):
                    chosen = chosen_path(browser)[0]
    if not browser.entries:
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), "(empty)")
    imgui.end_child()
    return chosen


def _confirm_row(browser: BrowserState, rects: dict | None) -> tuple[str | None, bool]:
    """The file name field, the confirm and Cancel buttons and why the choice cannot be confirmed yet;
    (the path confirmed or None, Cancel pressed)."""
    chosen = None
    if browser.kind != "folder":
        imgui.set_next_item_width(-1)
        _, browser.name = imgui.input_text("##name", browser.name)
    path, why_not = chosen_path(browser)
    imgui.begin_disabled(path is None)
    label = "Use this folder" if browser.kind == "folder" else "Save here" if browser.save else "Open"
    if imgui.button(label):
        chosen = path
    if rects is not None:
        low, high = imgui.get_item_rect_min(), imgui.get_item_rect_max()
        rects["browser_confirm"] = (low.x, low.y, high.x, high.y)
    imgui.end_disabled()
    imgui.same_line()
    cancelled = imgui.button("Cancel")
    imgui.same_line()
    message = browser.error or why_not
    if message:
        imgui.text_colored(imgui.ImVec4(*(ERROR_COLOUR if browser.error else DIM_COLOUR)), message)
    return chosen, cancelled
