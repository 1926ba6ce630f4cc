"""A file browser drawn inside the viewer (no desktop file dialog needed, works headless), and the
small JSON file that remembers the folders last used (`recent.json` in `app.paths.config_dir()`).

`BrowserState` is what the window edits; `list_folder` is the pure listing it shows (with sizes and
dates); `browser_window` draws it and returns the chosen path once the user confirms. Its places: up,
home, the work folder, the shipped models (`assets/models/`) or clips (`assets/bvh/`) for the fields that
take them, and the recent folders (a list Escape closes on its own).
"""

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from imgui_bundle import imgui

from app import paths
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


# Places for the fields of a kind: (button, folder)
SHIPPED_PLACES = {"checkpoint": ("Shipped models", paths.REPOSITORY / "assets" / "models"),
                  "bvh": ("Bundled clips", paths.BUNDLED_BVH), "folder": ("Bundled clips", paths.BUNDLED_BVH)}


@dataclass(frozen=True)
class Entry:
    name: str
    path: str
    is_dir: bool
    size: int = 0  # bytes (files)
    modified: float = 0.0  # seconds since the epoch


def size_text(size: int) -> str:
    """'812 B', '18.4 kB', '9.9 MB', '1.2 GB' (powers of 1000, as the model cards and `ls --si` give them:
    in powers of 1024 the shipped 6.87 MB model read "6.5 MB" beside the README's 6.9)."""
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return ""


def date_text(modified: float, now: float | None = None) -> str:
    """The time of day for today's files, else the date."""
    now = time.time() if now is None else now
    local, today = time.localtime(modified), time.localtime(now)
    same_day = local[:3] == today[:3]
    return time.strftime("%H:%M" if same_day else "%Y-%m-%d", local)


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
                stat = item.stat()
            except OSError:
                continue
            if is_dir:
                folders.append(Entry(item.name, item.path, True, 0, stat.st_mtime))
            elif shows_file(item.name, kind):
                files.append(Entry(item.name, item.path, False, stat.st_size, stat.st_mtime))
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
    recent_open: bool = False  # the "Recent folders" list is open (last frame)
    close_recent: bool = False  # close that list on the next frame

    def escape(self) -> None:
        """Escape closes the "Recent folders" list when it is open, else the browser."""
        if self.recent_open:
            self.close_recent = True
        else:
            self.open = False


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
    receives the screen rectangles of the confirm button and the places."""
    if not browser.open:
        return None
    _refresh(browser)
    imgui.set_next_window_size(imgui.ImVec2(min(600, display_size[0] - 40), min(460, display_size[1] - 40)),
                               imgui.Cond_.appearing)
    imgui.set_next_window_pos(imgui.ImVec2(display_size[0] / 2, display_size[1] / 2), imgui.Cond_.appearing,
                              imgui.ImVec2(0.5, 0.5))
    title = ("Save as " if browser.save else "Choose a ") + KIND_TITLES.get(browser.kind, "file")
    imgui.set_next_window_bg_alpha(1.0)  # opaque: the panel's text behind read through the listing
    _, still_open = imgui.begin(f"{title}###file_browser", True, imgui.WindowFlags_.no_collapse)
    rects = rects if rects is not None else {}
    low, size = imgui.get_window_pos(), imgui.get_window_size()
    rects["browser_window"] = (low.x, low.y, low.x + size.x, low.y + size.y)
    _navigation(browser, recent, work_dir, rects)
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


def _rect(rects: dict, name: str) -> None:
    low, high = imgui.get_item_rect_min(), imgui.get_item_rect_max()
    rects[name] = (low.x, low.y, high.x, high.y)


def _navigation(browser: BrowserState, recent: RecentFolders, work_dir: Path, rects: dict) -> None:
    """Up, Home, the work folder, the shipped files of the field's kind, the recent folders and the folder
    typed (`rects` receives the places' screen rectangles)."""
    if imgui.button("Up"):
        _go(browser, Path(browser.folder).parent)
    imgui.same_line()
    if imgui.button("Home"):
        _go(browser, Path.home())
    imgui.same_line()
    if imgui.button("Work folder"):
        work_dir.mkdir(parents=True, exist_ok=True)
        _go(browser, work_dir)
    if browser.kind in SHIPPED_PLACES:
        label, folder = SHIPPED_PLACES[browser.kind]
        imgui.same_line()
        if imgui.button(label):
            _go(browser, folder)
        _rect(rects, "browser_shipped")
        if imgui.is_item_hovered():
            imgui.set_tooltip(str(folder))
    imgui.same_line()
    imgui.set_next_item_width(-1)
    browser.recent_open = imgui.begin_combo("##recent", "Recent folders", imgui.ComboFlags_.height_large)
    if browser.recent_open:
        if browser.close_recent:
            imgui.close_current_popup()
        for folder in recent.recent:
            if imgui.selectable(folder, False)[0]:
                _go(browser, folder)
        if not recent.recent:
            imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), "none yet")
        imgui.end_combo()
    else:
        _rect(rects, "browser_recent")  # the closed list's box (an open one's popup is the last item)
    browser.close_recent = False
    imgui.set_next_item_width(-1)
    entered, typed = imgui.input_text("##folder", browser.folder, imgui.InputTextFlags_.enter_returns_true)
    if entered:
        _go(browser, typed)


def _entries(browser: BrowserState) -> str | None:
    """The folder's listing with sizes and dates (a click on a folder opens it, on a file selects it); the
    path of a file double-clicked, else None."""
    chosen = None
    footer = imgui.get_frame_height_with_spacing() * (3 if browser.kind != "folder" else 2) + 8
    imgui.begin_child("##entries", imgui.ImVec2(0, -footer), imgui.ChildFlags_.borders)
    flags = imgui.TableFlags_.sizing_fixed_fit | imgui.TableFlags_.row_bg
    if browser.entries and imgui.begin_table("##listing", 3, flags):
        imgui.table_setup_column("Name", imgui.TableColumnFlags_.width_stretch)
        imgui.table_setup_column("Size", imgui.TableColumnFlags_.width_fixed, 70)
        imgui.table_setup_column("Modified", imgui.TableColumnFlags_.width_fixed, 80)
        imgui.table_headers_row()
        now = time.time()
        for entry in browser.entries:
            imgui.table_next_row()
            imgui.table_set_column_index(0)
            chosen = _entry_name(browser, entry) or chosen
            imgui.table_set_column_index(1)
            imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), "" if entry.is_dir else size_text(entry.size))
            imgui.table_set_column_index(2)
            imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), date_text(entry.modified, now))
        imgui.end_table()
    if not browser.entries:
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), "(empty)")
    imgui.end_child()
    return chosen


def _entry_name(browser: BrowserState, entry: Entry) -> str | None:
    """One entry's name cell; the path of a file double-clicked, else None."""
    flags = imgui.SelectableFlags_.allow_double_click | imgui.SelectableFlags_.span_all_columns
    if entry.is_dir:
        if imgui.selectable(f"[{entry.name}]", False, flags)[0]:
            _go(browser, entry.path)
    elif browser.kind == "folder":
        imgui.text_colored(imgui.ImVec4(*DIM_COLOUR), entry.name)
    elif imgui.selectable(entry.name, entry.name == browser.name, flags)[0]:
        browser.name = entry.name
        if imgui.is_mouse_double_clicked(0):
            return chosen_path(browser)[0]
    return None


def _confirm_row(browser: BrowserState, rects: dict) -> tuple[str | None, bool]:
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
    _rect(rects, "browser_confirm")
    imgui.end_disabled()
    imgui.same_line()
    cancelled = imgui.button("Cancel")
    imgui.same_line()
    message = browser.error or why_not
    if message:
        imgui.text_colored(imgui.ImVec4(*(ERROR_COLOUR if browser.error else DIM_COLOUR)), message)
    return chosen, cancelled
