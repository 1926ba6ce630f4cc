"""Where the viewer reads and writes files.

- Work folder: `$PFNN_VIEWER_HOME`, default `~/pfnn-viewer`. Relative paths typed in the panel are
  resolved against it (a file to open that is not there is looked for in the repository too, so
  `assets/models/matching.safetensors` opens the shipped model), and what the viewer writes by default
  goes there (`models/`, `recordings/`, `captures/`), never into the repository. Paths on the command
  line are resolved against the shell's current folder, as for any command.
- Settings folder: `$PFNN_VIEWER_CONFIG`, default `$XDG_CONFIG_HOME/pfnn-viewer` (`~/.config/pfnn-viewer`):
  `recent.json` remembers the folders last used in the file browser, `panel.json` the panel's layout.
"""

import os
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
BUNDLED_BVH = REPOSITORY / "assets" / "bvh"
DEFAULT_MODEL = REPOSITORY / "assets" / "models" / "default.safetensors"  # what the viewer runs first


def work_dir() -> Path:
    return Path(os.environ.get("PFNN_VIEWER_HOME") or Path.home() / "pfnn-viewer").expanduser()


def config_dir() -> Path:
    explicit = os.environ.get("PFNN_VIEWER_CONFIG")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config"
    return Path(base).expanduser() / "pfnn-viewer"


def resolve(text: str, base) -> Path:
    """A path typed in the panel: '~' expanded, relative paths taken from `base` (the work folder)."""
    path = Path(str(text).strip()).expanduser()
    return path if path.is_absolute() else Path(base) / path


def resolve_existing(text: str, base) -> Path:
    """A path typed in the panel to open: as `resolve`, but a relative path that names nothing in the work
    folder and names a file or folder of the repository (the README's `assets/models/matching.safetensors`,
    `assets/bvh`) is taken from the repository, so the shipped files open by the names the docs give."""
    path = resolve(text, base)
    typed = Path(str(text).strip()).expanduser()
    if not typed.is_absolute() and not path.exists() and (REPOSITORY / typed).exists():
        return REPOSITORY / typed
    return path


def inside_repository(path) -> bool:
    try:
        Path(path).resolve().relative_to(REPOSITORY)
        return True
    except ValueError:
        return False


def writable_file_problem(path) -> str | None:
    """Why a file could not be written at `path` (None when it can): an existing folder in its place, a
    file where a parent folder should be, or no permission on the nearest existing folder."""
    path = Path(path)
    if path.is_dir():
        return f"{path} is a folder; give a file name"
    parent = path.parent
    while not parent.exists():
        if parent == parent.parent:
            break
        parent = parent.parent
    if not parent.is_dir():
        return f"cannot create {path}: {parent} is a file, not a folder"
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return f"cannot write {path}: no permission"
    return None


def free_path(path) -> Path:
    """`path` when nothing is there, else the first free 'STEM-2.SUFFIX', 'STEM-3.SUFFIX', ... beside it:
    what the viewer writes never replaces an earlier file."""
    path = Path(path)
    if not path.exists():
        return path
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    number = 2
    while (path.with_name(f"{stem}-{number}{path.suffix}")).exists():
        number += 1
    return path.with_name(f"{stem}-{number}{path.suffix}")


def display_path(path: str) -> str:
    """A path as it can be typed back into any path field: absolute, with '~' for the home folder
    (a field resolves relative paths against the work folder, not the shell's current folder)."""
    if not path:
        return path
    try:
        absolute = Path(path).expanduser().resolve()
    except OSError:
        return path
    try:
        return str(Path("~") / absolute.relative_to(Path.home().resolve()))
    except (ValueError, RuntimeError):
        return str(absolute)
