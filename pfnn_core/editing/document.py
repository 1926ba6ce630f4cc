"""The edit list: a JSON document naming pieces of BVH clips and how to join them, its checked form
(`EditList` of `Piece`s; `EditError` names the piece and the field), reading, writing, and where a
piece's file is.

Edit list::

    {"name": "walk_to_run", "fps": 60,
     "pieces": [{"file": "assets/bvh/.../walk.bvh.gz", "start": 0.0, "end": 4.0, "mirror": false, "speed": 1.0},
                ...],
     "transition": {"kind": "inertialize" | "crossfade", "seconds": 0.3},
     "match": "phase" | "none", "search_seconds": 0.5}

`start`/`end` are seconds of the source clip (`end` defaults to the clip's end); `speed` time-scales a
piece (2 plays it twice as fast); `mirror` swaps left and right on the same skeleton. A relative `file`
is looked up in the current folder, then in the edit list's folder.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from pfnn_core import files
from pfnn_core.jsonfile import read_json

KINDS = ("inertialize", "crossfade")
MATCHES = ("phase", "none")
DEFAULT_FPS = 60.0
DEFAULT_TRANSITION_S = 0.3
DEFAULT_SEARCH_S = 0.5
MAX_FPS = 480.0


class EditError(ValueError):
    """An edit list that cannot be built; the message names the piece and the field."""


@dataclass(frozen=True)
class Piece:
    file: str
    start: float = 0.0  # seconds of the source clip
    end: float | None = None  # seconds of the source clip; None = the clip's end
    mirror: bool = False
    speed: float = 1.0  # time scale: 2 plays the piece twice as fast


@dataclass(frozen=True)
class EditList:
    name: str
    pieces: tuple
    fps: float = DEFAULT_FPS
    transition_kind: str = "inertialize"
    transition_seconds: float = DEFAULT_TRANSITION_S
    match: str = "phase"
    search_seconds: float = DEFAULT_SEARCH_S
    base_dir: str = ""  # the edit list's folder: relative piece files are also looked up there


def _where(index: int, piece_data) -> str:
    file = piece_data.get("file") if isinstance(piece_data, dict) else None
    return f"pieces[{index}]" + (f" ({Path(file).name})" if isinstance(file, str) and file else "")


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise EditError(f"{where}: expected a finite number, got {json.dumps(value)}")
    return float(value)


def _choice(value, choices, where: str) -> str:
    if value not in choices:
        raise EditError(f"{where}: expected one of {', '.join(map(json.dumps, choices))}, got {json.dumps(value)}")
    return value


def _check_fields(data: dict, allowed: tuple, where: str) -> None:
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        raise EditError(f"{where}{unknown[0]}: unknown field (expected {', '.join(allowed)})")


def parse_edit_list(data, source: str = "edit list", base_dir="") -> EditList:
    """Validate an edit list's JSON value; raise EditError naming the first bad field.

    The files themselves (existence, ranges, skeletons) are checked when the pieces are loaded."""
    if not isinstance(data, dict):
        raise EditError(f"{source}: expected a JSON object with 'pieces', got {type(data).__name__}")
    _check_fields(data, ("name", "description", "fps", "pieces", "transition", "match", "search_seconds"), "")
    name = data.get("name", Path(source).stem)
    if not isinstance(name, str):
        raise EditError(f"name: expected a string, got {json.dumps(name)}")
    fps = _number(data.get("fps", DEFAULT_FPS), "fps")
    if not 0.0 < fps <= MAX_FPS:
        raise EditError(f"fps: expected frames per second in (0, {MAX_FPS:g}], got {json.dumps(data.get('fps'))}")
    pieces_data = data.get("pieces")
    if not isinstance(pieces_data, list):
        raise EditError(f"pieces: expected a list of pieces, got {json.dumps(pieces_data)}")
    if not pieces_data:
        raise EditError("pieces: the edit list is empty (add at least one piece)")
    pieces = []
    for index, piece in enumerate(pieces_data):
        where = _where(index, piece)
        if not isinstance(piece, dict):
            raise EditError(f"{where}: expected an object with 'file', got {json.dumps(piece)}")
        _check_fields(piece, ("file", "start", "end", "mirror", "speed"), f"{where}.")
        file = piece.get("file")
        if not isinstance(file, str) or not file.strip():
            raise EditError(f"{where}.file: expected a BVH file path, got {json.dumps(file)}")
        start = _number(piece.get("start", 0.0), f"{where}.start")
        end = None if piece.get("end") is None else _number(piece["end"], f"{where}.end")
        if start < 0.0:
            raise EditError(f"{where}.start: {start:g} s is before the clip's start (0 s)")
        if end is not None and end <= start:
            raise EditError(f"{where}.end: {end:g} s is not after the start ({start:g} s)")
        mirror = piece.get("mirror", False)
        if not isinstance(mirror, bool):
            raise EditError(f"{where}.mirror: expected true or false, got {json.dumps(mirror)}")
        speed = _number(piece.get("speed", 1.0), f"{where}.speed")
        if speed <= 0.0:
            raise EditError(f"{where}.speed: expected a positive time scale, got {json.dumps(piece.get('speed'))}")
        pieces.append(Piece(file.strip(), start, end, mirror, speed))
    transition = data.get("transition", {})
    if not isinstance(transition, dict):
        raise EditError(f"transition: expected an object with 'kind' and 'seconds', got {json.dumps(transition)}")
    _check_fields(transition, ("kind", "seconds"), "transition.")
    kind = _choice(transition.get("kind", "inertialize"), KINDS, "transition.kind")
    seconds = _number(transition.get("seconds", DEFAULT_TRANSITION_S), "transition.seconds")
    if seconds <= 0.0:
        raise EditError(f"transition.seconds: expected a positive time, got {json.dumps(transition.get('seconds'))}")
    match = _choice(data.get("match", "phase"), MATCHES, "match")
    search = _number(data.get("search_seconds", DEFAULT_SEARCH_S), "search_seconds")
    if search < 0.0:
        raise EditError(f"search_seconds: expected zero or more seconds, got {json.dumps(data.get('search_seconds'))}")
    return EditList(name, tuple(pieces), fps, kind, seconds, match, search, str(base_dir))


def load_edit_list(path) -> EditList:
    path = Path(path)
    data = read_json(path, "edit list", EditError)
    try:
        return parse_edit_list(data, str(path), base_dir=path.parent)
    except EditError as error:
        raise EditError(f"{path}: {error}") from None


def edit_list_dict(edit: EditList) -> dict:
    """The JSON value of an edit list (what `parse_edit_list` reads)."""
    pieces = []
    for piece in edit.pieces:
        item = {"file": piece.file, "start": piece.start}
        if piece.end is not None:
            item["end"] = piece.end
        item.update(mirror=piece.mirror, speed=piece.speed)
        pieces.append(item)
    return {"name": edit.name, "fps": edit.fps, "pieces": pieces,
            "transition": {"kind": edit.transition_kind, "seconds": edit.transition_seconds},
            "match": edit.match, "search_seconds": edit.search_seconds}


def save_edit_list(edit: EditList, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return files.write_text(path, json.dumps(edit_list_dict(edit), indent=2) + "\n")


def piece_path(edit: EditList, index: int) -> Path:
    """Where a piece's file is: as given (absolute or from the current folder), else from the edit
    list's folder; EditError naming the piece when neither exists."""
    piece = edit.pieces[index]
    given = Path(piece.file).expanduser()
    candidates = [given] if given.is_absolute() else [Path.cwd() / given] + (
        [Path(edit.base_dir) / given] if edit.base_dir else [])
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    looked = " and ".join(str(c.parent) for c in candidates)
    raise EditError(f"pieces[{index}] ({given.name}).file: {piece.file}: no such file (looked in {looked})")
