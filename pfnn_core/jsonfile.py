"""Reading a JSON document a user wrote (a drive script, an edit list, a labels table) with one rule
for the errors: the file and what it is named, and the line of a syntax error."""
from __future__ import annotations

import json
from pathlib import Path


def read_json(path, what: str, error: type[Exception] = ValueError):
    """The JSON value of the file at `path`; `error` naming the file (and the line) when it cannot be
    read or parsed. `what` says what the file is, e.g. "script" or "edit list"."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as failure:
        raise error(f"{path}: cannot read the {what} ({failure.strerror or failure})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as failure:
        raise error(f"{path}: line {failure.lineno}: not valid JSON ({failure.msg})") from None
