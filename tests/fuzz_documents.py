"""Inputs for the fuzz tests of the JSON documents and the checkpoints (tests/test_fuzz_json.py,
tests/test_fuzz_checkpoint.py, scripts/fuzz_readers.py): JSON trees with any value in any field,
fields removed or added, deep nesting; raw text no serialiser writes (5,000-digit integers, a field
twice, unpaired surrogates, UTF-16, NUL); checkpoints with their 'pfnn' metadata, their model card's
fields, their safetensors header or their bytes mutated. The demands are `fuzz_cases`'."""
from __future__ import annotations

import json
import re
import struct

from fuzz_cases import byte_mutation
from hypothesis import strategies as st

HUGE_INTEGER = "9" * 5000  # beyond Python's int() limit and any float
_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.integers().map(lambda i: i * 10**40),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
                    st.sampled_from(["", "elderly", "walk.bvh", "inertialize", "phase", "rbf", "\ud800", "\x00"]))
JSON_VALUES = st.recursive(_LEAVES, lambda children: st.lists(children, max_size=4)
                           | st.dictionaries(st.text(max_size=8), children, max_size=4), max_leaves=12)


def _paths(value, prefix=()):
    """Every (path, value) in a JSON value, the root first."""
    found = [(prefix, value)]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, prefix + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, prefix + (index,))
    return found


def _replace(value, path, new):
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replace(value[path[0]], path[1:], new)
    return copy


@st.composite
def json_tree_mutation(draw, value):
    """A JSON value with a few nodes replaced by any JSON value, removed, or given unknown siblings."""
    for _ in range(draw(st.integers(1, 3))):
        path, node = draw(st.sampled_from(_paths(value)))
        kind = draw(st.sampled_from(["replace", "replace", "remove", "extra", "nest"]))
        if kind == "remove" and path:
            parent = value
            for step in path[:-1]:
                parent = parent[step]
            smaller = dict(parent) if isinstance(parent, dict) else list(parent)
            del smaller[path[-1]]
            value = _replace(value, path[:-1], smaller)
        elif kind == "extra" and isinstance(node, dict):
            value = _replace(value, path, {**node, draw(st.text(max_size=8)): draw(JSON_VALUES)})
        elif kind == "nest":
            value = _replace(value, path, _nested(node, draw(st.sampled_from([2, 70]))))
        else:
            value = _replace(value, path, draw(JSON_VALUES))
    return value


def _nested(node, depth):
    for _ in range(depth):
        node = [node]
    return node


@st.composite
def json_text_mutation(draw, seeds: list[bytes]):
    """A JSON document as bytes: a mutated tree written back (NaN and Infinity literals included),
    sometimes with raw text no serialiser writes: an integer of 5,000 digits, a field given twice, an
    unpaired surrogate escape, nesting past Python's recursion limit, a byte-order mark, UTF-16."""
    seed = draw(st.sampled_from(seeds))
    value = draw(json_tree_mutation(json.loads(seed)))
    try:
        text = json.dumps(value, allow_nan=True)
    except (ValueError, RecursionError):
        text = seed.decode()
    raw = draw(st.sampled_from([None, "huge_integer", "twice", "surrogate", "deep", "bom", "utf16", "control"]))
    if raw == "huge_integer":
        text = re.sub(r"(?<![\w.\"])\d+(\.\d+)?(?![\w\"])", HUGE_INTEGER, text, count=1)
    elif raw == "twice" and text.startswith("{") and len(text) > 2:
        text = text[:-1] + (", " if text[1:-1].strip() else "") + text[1:-1].split(",")[0] + "}"
    elif raw == "surrogate":
        text = text.replace('"', '"\\udc80', 1)
    elif raw == "deep":
        text = "[" * 100_000 + text + "]" * 100_000
    elif raw == "control":
        text = text.replace(" ", "\x00", 1)
    data = text.encode("utf-8", errors="surrogatepass")
    if raw == "bom":
        data = b"\xef\xbb\xbf" + data
    elif raw == "utf16":
        data = text.encode("utf-16", errors="surrogatepass")
    return data


def split_safetensors(data: bytes) -> tuple[dict, bytes]:
    """(header JSON, tensor bytes) of a safetensors file."""
    (size,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + size]), data[8 + size:]


def join_safetensors(header, body: bytes) -> bytes:
    text = json.dumps(header, allow_nan=True).encode("utf-8", errors="surrogatepass")
    return struct.pack("<Q", len(text)) + text + body


CARD_FIELDS = ("skeleton", "floor_heights", "stance", "stride", "gait_speeds", "styles", "training", "data", "kind",
               "version", "format", "layout", "model_config")
# Well-formed values of the card's optional fields, for the tree mutation to start from.
CARD_EXAMPLES = {"floor_heights": [0.0, 0.01, 0.0, 0.01],
                 "stance": {"positions": [[0.1, 0.0, 0.0]] * 4, "spread": [[0.0] * 3] * 4},
                 "styles": {"names": ["normal", "elderly"], "stats": {"normal": {"minutes": 2.0}}},
                 "training": {"config": {"beta": 8.0, "val_fraction": 0.1, "seed": 3, "data": ["assets/bvh"]}},
                 "data": {"folders": ["assets/bvh"], "files": ["a.bvh"]}}


@st.composite
def checkpoint_mutation(draw, seed: bytes):
    """A checkpoint whose 'pfnn' metadata, safetensors header or bytes were mutated."""
    header, body = split_safetensors(seed)
    kind = draw(st.sampled_from(["metadata", "metadata", "metadata", "header", "bytes"]))
    if kind == "metadata":
        meta = json.loads(header["__metadata__"]["pfnn"])
        if draw(st.booleans()):  # a field of the model card itself: the tree's nodes are mostly the layout's
            field = draw(st.sampled_from(CARD_FIELDS))
            meta[field] = draw(st.one_of(JSON_VALUES, json_tree_mutation(meta.get(field, CARD_EXAMPLES.get(field, {})))))
        else:
            meta = draw(json_tree_mutation(meta))
        try:
            header["__metadata__"]["pfnn"] = json.dumps(meta, allow_nan=True)
        except (ValueError, RecursionError):
            pass
        return join_safetensors(header, body)
    if kind == "header":
        return join_safetensors(draw(json_tree_mutation(header)), body)
    return draw(byte_mutation([seed[:len(seed) // 4]] if draw(st.booleans()) else [seed]))
