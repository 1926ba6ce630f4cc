"""Clip labels: the style and the content (walk, run, walk-back, ...) of each training file.

Owns `ClipLabel`, `LabelRule`, `label_clips` and the content -> gait rule.

Where labels come from (`LabelRule.kind`):
- "filename" (default): names of the form `{set}_{content}_{style}_{id}` (the bundled Bandai-Namco
  files: `dataset-2_walk-turn-left_elderly_012.bvh.gz`); a name that does not have four parts gets the
  style "default" and content "unknown".
- "folder": the style is the name of the folder holding the file (one folder per style); content as in
  "filename" when the name has that form, else "unknown".
- a file: a JSON or CSV table mapping files to labels. JSON: `{"files": {"NAME": {"style": ..., "content":
  ...}}, "aliases": {...}}`; CSV: a header `file,style,content` (content optional). NAME is the file
  name with or without `.bvh`/`.bvh.gz`, or its path relative to the table's folder. A file missing
  from a table is an error naming it.
Any rule also applies `aliases` (style name -> style name): dataset 1 says "old" where dataset 2 says
"elderly". A `labels.json` in a data folder is read automatically for the files below it (its
`aliases` and `files`); an explicit rule given by the user wins over it.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from pfnn_core.jsonfile import read_json
from pfnn_core.motion.bvh import clip_name

DEFAULT_STYLE = "default"
UNKNOWN_CONTENT = "unknown"
LABELS_FILE = "labels.json"
# Content names -> the gait the network is told about while the clip moves. Unknown contents take the
# gait from the speed alone (`features.gait_labels` with no run flag).
RUN_CONTENTS = ("run", "dash", "jog", "sprint")
STAND_CONTENTS = ("stand", "idle", "raise")


class LabelError(ValueError):
    """A labelling rule that cannot label a file; the message names the file or the table and line."""


@dataclass(frozen=True)
class ClipLabel:
    style: str
    content: str

    @property
    def runs(self) -> bool | None:
        """True for a run/dash clip, False for a walk (or stand) clip, None when the content is unknown."""
        if self.content == UNKNOWN_CONTENT:
            return None
        return any(self.content.startswith(word) for word in RUN_CONTENTS)

    @property
    def stands(self) -> bool:
        return any(self.content.startswith(word) for word in STAND_CONTENTS)


@dataclass
class LabelRule:
    """How to label clips: kind 'filename', 'folder' or 'table' (with `table` the JSON/CSV path)."""

    kind: str = "filename"
    table: Path | None = None
    aliases: dict = field(default_factory=dict)

    @classmethod
    def parse(cls, text: str | None) -> "LabelRule":
        """'filename' (or None), 'folder', or a path to a JSON/CSV table."""
        if text in (None, "", "filename"):
            return cls()
        if text == "folder":
            return cls(kind="folder")
        path = Path(text)
        if not path.is_file():
            raise LabelError(f"{text}: no such labels file (expected 'filename', 'folder' or a JSON/CSV file)")
        return cls(kind="table", table=path)

    def describe(self) -> str:
        return str(self.table) if self.kind == "table" else self.kind


def parse_file_name(name: str) -> ClipLabel | None:
    """`{set}_{content}_{style}_{id}` -> label; None when the name has another form."""
    parts = clip_name(name).split("_")
    if len(parts) != 4 or not all(parts):
        return None
    return ClipLabel(style=parts[2], content=parts[1])


def _read_table(path: Path) -> tuple[dict, dict]:
    """(files: name -> ClipLabel, aliases) from a JSON or CSV labels table."""
    files: dict[str, ClipLabel] = {}
    if path.suffix.lower() == ".csv":
        try:
            text = path.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError as error:
            raise LabelError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
        rows = list(csv.reader(text.splitlines()))
        if not rows or [cell.strip().lower() for cell in rows[0][:2]] != ["file", "style"]:
            raise LabelError(f"{path}: line 1: expected the header 'file,style[,content]'")
        for line, row in enumerate(rows[1:], 2):
            if not any(cell.strip() for cell in row):
                continue
            if len(row) < 2 or not row[0].strip() or not row[1].strip():
                raise LabelError(f"{path}: line {line}: expected 'file,style[,content]', got {','.join(row)!r}")
            content = row[2].strip() if len(row) > 2 and row[2].strip() else UNKNOWN_CONTENT
            files[row[0].strip()] = ClipLabel(row[1].strip(), content)
        return files, {}
    value = read_json(path, "labels table", LabelError)
    if not isinstance(value, dict) or not set(value) <= {"files", "aliases", "description"}:
        raise LabelError(f"{path}: expected an object with 'files' and/or 'aliases'")
    if not isinstance(value.get("files") or {}, dict):
        raise LabelError(f"{path}: files: expected an object mapping file names to {{\"style\": NAME, \"content\": NAME}}")
    for name, entry in (value.get("files") or {}).items():
        if not isinstance(entry, dict) or not isinstance(entry.get("style"), str) or not entry["style"]:
            raise LabelError(f"{path}: files.{name}: expected {{\"style\": NAME, \"content\": NAME}}")
        files[name] = ClipLabel(entry["style"], str(entry.get("content") or UNKNOWN_CONTENT))
    aliases = value.get("aliases") or {}
    if not isinstance(aliases, dict) or not all(isinstance(v, str) and v for v in aliases.values()):
        raise LabelError(f"{path}: aliases: expected an object mapping style names to style names")
    return files, dict(aliases)


def _lookup(files: dict, path: Path, table_folder: Path) -> ClipLabel | None:
    keys = [path.name, clip_name(path)]
    try:
        relative = path.resolve().relative_to(table_folder.resolve())
        keys += [relative.as_posix(), (relative.parent / clip_name(path)).as_posix()]
    except ValueError:
        pass
    return next((files[key] for key in keys if key in files), None)


def _folder_tables(paths) -> list[tuple[Path, dict, dict]]:
    """`labels.json` files in the folders above the given files (nearest first per file)."""
    seen, tables = set(), []
    for path in paths:
        for folder in Path(path).resolve().parents:
            candidate = folder / LABELS_FILE
            if candidate not in seen and candidate.is_file():
                seen.add(candidate)
                files, aliases = _read_table(candidate)
                tables.append((folder, files, aliases))
    return sorted(tables, key=lambda entry: len(entry[0].parts), reverse=True)


def label_clips(paths, rule: LabelRule | None = None) -> list[ClipLabel]:
    """One ClipLabel per path, by the rule (see the module docstring); aliases applied last."""
    rule = rule or LabelRule()
    paths = [Path(p) for p in paths]
    folder_tables = _folder_tables(paths)
    table = _read_table(rule.table) if rule.kind == "table" else None
    labels = []
    for path in paths:
        label = None
        aliases = dict(rule.aliases)
        for folder, files, folder_aliases in folder_tables:
            if folder in path.resolve().parents:
                aliases = {**folder_aliases, **aliases}
                label = label or _lookup(files, path, folder)
        if table is not None:
            files, table_aliases = table
            aliases = {**aliases, **table_aliases}
            label = _lookup(files, path, rule.table.parent)
            if label is None:
                raise LabelError(f"{rule.table}: no labels for {path.name} (every training file needs a row)")
        elif rule.kind == "folder":
            parsed = parse_file_name(path.name)
            label = ClipLabel(path.parent.name, parsed.content if parsed else UNKNOWN_CONTENT)
        elif label is None:
            label = parse_file_name(path.name) or ClipLabel(DEFAULT_STYLE, UNKNOWN_CONTENT)
        labels.append(ClipLabel(aliases.get(label.style, label.style), label.content))
    return labels
