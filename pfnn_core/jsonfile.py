"""Reading a JSON document a user wrote (a drive script, an edit list, a labels table) with one rule
for the errors: the file and what it is named, and the line of a syntax error.

Whatever the bytes, `read_json` returns a value or raises the caller's error class: text that is not
UTF-8, nesting deeper than `MAX_DEPTH`, a field given twice, a field name with a control character,
an unpaired surrogate escape and a file too large to be a document are all named as such. Integers
too long to be a float are read as infinity, so every field check that refuses non-finite numbers
names the field.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

MAX_DOCUMENT_BYTES = 16 * 2**20  # a script or an edit list is kilobytes; a larger file is not one
MAX_DEPTH = 64  # lists and objects in one another; a document of this product is at most 4 deep
_MAX_INT_DIGITS = 300
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # longer integers are beyond any float (1e308) and beyond Python's int() limit


class _DuplicateField(ValueError):
    pass


def _unique_fields(pairs):
    value = {}
    for key, item in pairs:
        if key in value:
            raise _DuplicateField(key)
        value[key] = item
    return value


def _integer(text: str):
    return int(text) if len(text.lstrip("-")) <= _MAX_INT_DIGITS else float(text)


def read_json(path, what: str, error: type[Exception] = ValueError):
    """The JSON value of the file at `path`; `error` naming the file (and the line) when it cannot be
    read or parsed. `what` says what the file is, e.g. "script" or "edit list"."""
    path = Path(path)
    try:
        if path.is_file() and path.stat().st_size > MAX_DOCUMENT_BYTES:
            raise error(f"{path}: {path.stat().st_size} bytes is too large for a {what} "
                        f"(at most {MAX_DOCUMENT_BYTES})")
        data = path.read_bytes()
    except OSError as failure:
        raise error(f"{path}: cannot read the {what} ({failure.strerror or failure})") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as failure:
        line = data.count(b"\n", 0, failure.start) + 1
        raise error(f"{path}: line {line}: not UTF-8 text (byte {data[failure.start]:#04x}); "
                    f"a {what} is a UTF-8 JSON file") from None
    try:
        value = json.loads(text, object_pairs_hook=_unique_fields, parse_int=_integer)
    except json.JSONDecodeError as failure:
        raise error(f"{path}: line {failure.lineno}: not valid JSON ({failure.msg})") from None
    except _DuplicateField as failure:
        raise error(f"{path}: field {json.dumps(str(failure))} is given twice in one object") from None
    except RecursionError:
        raise error(f"{path}: lists or objects nested too deep to read; not a {what}") from None
    problem = _shape_problem(value)
    if problem:
        raise error(f"{path}: {problem}; not a {what}")
    return value


def _shape_problem(value) -> str | None:
    """Nesting deeper than MAX_DEPTH (every reader's messages print values back with json.dumps, which
    recurses), a string that is not text, or a field name with a control character (the readers name
    fields in one-line messages); walked with a stack, not recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"lists or objects nested deeper than {MAX_DEPTH} levels"
        if isinstance(item, dict):
            for key in item:
                if _CONTROL.search(key):
                    return f"field name {json.dumps(key)} holds a control character"
            stack.extend((key, depth) for key in item)
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return "a string holds an unpaired surrogate escape (\\ud800-\\udfff), not text"
    return None
