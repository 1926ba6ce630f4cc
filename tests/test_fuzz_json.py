"""The JSON documents the product reads, under a fuzzer (fixed seed, bounded examples): drive scripts,
edit lists and labels tables, mutated as bytes and as trees (any value in any field, fields removed
or added, deep nesting, NaN, 5,000-digit integers, a field twice, unpaired surrogates, UTF-16),
either read into a document whose fields hold what the format promises, or refused with the
reader's own error, in one line naming the file; never another exception, a hang or memory beyond a
bound. Then each hole the fuzzer found, as a plain example."""
import json
import math

import pytest
from conftest import ROOT
from fuzz_cases import byte_mutation, run_bounded
from fuzz_documents import json_text_mutation
from hypothesis import HealthCheck, given, settings

from pfnn_core.data.labels import ClipLabel, LabelError, LabelRule, label_clips
from pfnn_core.drive.cli import ScriptError, load_script
from pfnn_core.editing.document import MAX_FPS, EditError, load_edit_list
from pfnn_core.jsonfile import read_json

SCRIPTS = [p.read_bytes() for p in sorted((ROOT / "scripts" / "drives").glob("*.json"))]
EDITS = [p.read_bytes() for p in sorted((ROOT / "scripts" / "edits").glob("*.json"))]
LABELS = [(ROOT / "assets" / "bvh" / "labels.json").read_bytes(),
          json.dumps({"files": {"walk.bvh": {"style": "elderly", "content": "walk"},
                                "sub/run.bvh.gz": {"style": "proud"}}, "aliases": {"old": "elderly"}}).encode()]
FUZZ = settings(derandomize=True, database=None, deadline=None, print_blob=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])


def _finite(value) -> bool:
    return isinstance(value, float) and math.isfinite(value)


def check_script(data: bytes, folder):
    path = folder / "script.json"
    path.write_bytes(data)
    outcome, value = run_bounded(load_script, path, ScriptError, len(data))
    if outcome == "refused":
        assert "\n" not in str(value)
        return outcome
    assert value.segments and isinstance(value.name, str) and _finite(value.duration) and value.duration > 0
    for segment in value.segments:
        assert _finite(segment.duration) and segment.duration > 0 and isinstance(segment.run, bool)
        assert all(_finite(v) for v in segment.move) and math.hypot(*segment.move) <= 1.0 + 1e-12
        assert segment.face is None or (all(_finite(v) for v in segment.face) and math.hypot(*segment.face) > 0)
        assert segment.style is None or abs(sum(segment.style.values()) - 1.0) < 1e-9
    return "loaded"


def check_edit_list(data: bytes, folder):
    path = folder / "edit.json"
    path.write_bytes(data)
    outcome, value = run_bounded(load_edit_list, path, EditError, len(data))
    if outcome == "refused":
        assert "\n" not in str(value)
        return outcome
    assert value.pieces and 0 < value.fps <= MAX_FPS and value.transition_seconds > 0 and value.search_seconds >= 0
    for piece in value.pieces:
        assert isinstance(piece.file, str) and piece.file.strip() == piece.file and piece.file
        assert _finite(piece.start) and piece.start >= 0 and _finite(piece.speed) and piece.speed > 0
        assert piece.end is None or (_finite(piece.end) and piece.end > piece.start)
    return "loaded"


def check_labels(data: bytes, folder, suffix=".json"):
    path = folder / f"labels-table{suffix}"
    path.write_bytes(data)
    clips = [folder / "walk.bvh", folder / "sub" / "run.bvh.gz"]
    outcome, value = run_bounded(lambda p: label_clips(clips, LabelRule(kind="table", table=p)), path, LabelError,
                                 len(data))
    if outcome == "refused":
        return outcome
    assert len(value) == 2 and all(isinstance(label, ClipLabel) for label in value)
    assert all(isinstance(label.style, str) and label.style and isinstance(label.content, str) for label in value)
    return "loaded"


@settings(FUZZ, max_examples=120)
@given(data=json_text_mutation(SCRIPTS))
def test_drive_scripts(data, tmp_path):
    check_script(data, tmp_path)


@settings(FUZZ, max_examples=120)
@given(data=json_text_mutation(EDITS))
def test_edit_lists(data, tmp_path):
    check_edit_list(data, tmp_path)


@settings(FUZZ, max_examples=100)
@given(data=json_text_mutation(LABELS))
def test_labels_tables(data, tmp_path):
    check_labels(data, tmp_path)


@settings(FUZZ, max_examples=100)
@given(data=byte_mutation(SCRIPTS + EDITS + LABELS))
def test_byte_mutations_of_every_document(data, tmp_path):
    check_script(data, tmp_path)
    check_edit_list(data, tmp_path)
    check_labels(data, tmp_path)


@settings(FUZZ, max_examples=60)
@given(data=byte_mutation([b"file,style,content\nwalk.bvh,elderly,walk\nsub/run.bvh.gz,proud,\n"]))
def test_csv_labels_tables(data, tmp_path):
    check_labels(data, tmp_path, suffix=".csv")


# ---- the holes, as plain examples (the fuzzer found all but the float overflow against the readers
# as they were; that one came from reading them) ----------------------------------------------------

FOUND = {
    "an integer of 5,000 digits (ValueError from int())":
        '{"segments": [{"duration": ' + "9" * 5000 + ', "move": [0, 1]}]}',
    "an integer beyond any float (OverflowError from math.isfinite)":
        '{"segments": [{"duration": 1' + "0" * 400 + ', "move": [0, 1]}]}',
    "nesting past Python's recursion limit (RecursionError)": "[" * 100_000 + "]" * 100_000,
    "text that is not UTF-8 (UnicodeDecodeError)": b'{"name": "caf\xe9"}',
    "an unpaired surrogate escape (UnicodeEncodeError when printed)": '{"name": "\\udc80", "segments": 1}',
    "files as a list in a labels table (AttributeError)": '{"files": ["walk.bvh"], "segments": 1, "pieces": 1}',
}


@pytest.mark.parametrize("case", sorted(FOUND))
def test_found_holes_give_the_readers_own_error_naming_the_file(case, tmp_path):
    text = FOUND[case]
    path = tmp_path / "doc.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    for read, error in ((load_script, ScriptError), (load_edit_list, EditError),
                        (lambda p: label_clips([tmp_path / "a.bvh"], LabelRule(kind="table", table=p)), LabelError)):
        with pytest.raises(error) as failure:
            read(path)
        assert str(path) in str(failure.value)


def test_an_alias_to_an_empty_style_name_is_refused(tmp_path):
    """Found by the fuzzer: a folder's labels.json aliasing a style to "" labelled clips with no style."""
    (tmp_path / "labels.json").write_text('{"aliases": {"elderly": ""}}')
    with pytest.raises(LabelError, match="labels.json: aliases: expected an object mapping style names"):
        label_clips([tmp_path / "dataset-2_walk_elderly_001.bvh"])


def test_read_json_names_what_is_wrong(tmp_path):
    path = tmp_path / "doc.json"
    for text, expected in (('{"a": 1, "a": 2}', 'field "a" is given twice'),
                           ("[" * 70 + "]" * 70, "nested deeper than 64 levels"),
                           (b'{\n"a": "\xff"}', r"line 2: not UTF-8 text \(byte 0xff\)"),
                           ("{\n\n  nope", "line 3: not valid JSON"),
                           ('{"a": "\\ud800"}', "unpaired surrogate"),
                           ('{"segments": [], "\\n": 1}', r'field name "\\n" holds a control character')):
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        with pytest.raises(ValueError, match=expected) as failure:
            read_json(path, "script")
        assert str(failure.value).startswith(f"{path}: ")
    path.write_text('{"segments": [{"duration": 1' + "0" * 400 + ', "move": [0, 1]}]}')
    assert read_json(path, "script")["segments"][0]["duration"] == math.inf  # refused by the field check
    with pytest.raises(ScriptError, match=r"doc.json: segments\[0\].duration: expected a finite number"):
        load_script(path)
