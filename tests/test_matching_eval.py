"""`pfnn-eval --model A --model B`: one report with a column per model and subject, the mocap beside them;
one model keeps the single report."""
import json

import pytest
from test_matching_build import CLIPS, linked_folder

from pfnn_core.evaluation import cli
from pfnn_core.evaluation.analysis import Row
from pfnn_core.evaluation.compare import compare, comparison_table, model_names
from pfnn_core.models.matching.build import build_matching


def rows(value, drive="walk_turn"):
    return [Row("foot skating (walk)", "network", drive, value, "m/s", "<= 1.3x mocap", value < 0.3, 0.24),
            Row("foot skating (walk)", "runtime", drive, value / 2, "m/s", "<= 1.3x mocap", True, 0.24)]


def test_the_table_has_a_column_per_model_and_subject_and_the_mocap_once():
    table = comparison_table([("default", rows(0.2)), ("matching", rows(0.5) + rows(0.1, drive="idle")[:1])])
    header, rule, first, second = table.splitlines()
    assert header == ("| drive | measure | default network | default runtime | matching network | matching runtime "
                      "| mocap | target |")
    assert rule.count("---") == 8
    assert first == "| walk_turn | foot skating (walk) | 0.20 m/s ok | 0.10 m/s ok | 0.50 m/s **FAIL** | 0.25 m/s ok " \
                    "| 0.24 m/s | <= 1.3x mocap |"
    assert second.startswith("| idle | foot skating (walk) | - | - | 0.10 m/s ok | - |")


def test_models_get_distinct_names():
    assert model_names(["a/default.safetensors", "b/mm.safetensors"]) == ["default", "mm"]
    assert model_names(["a/m.safetensors", "b/m.safetensors"]) == ["a/m", "b/m"]


def test_compare_evaluates_each_model_into_its_folder_and_writes_one_report(tmp_path):
    calls = []

    def evaluate(path, folder, log=None, **options):
        calls.append((path, folder, options))
        folder.mkdir(parents=True)
        return {"rows": rows(0.2 if "one" in str(path) else 0.4)}

    result = compare(["x/one.safetensors", "y/two.safetensors"], tmp_path, evaluate, quick=True)
    assert [c[1].name for c in calls] == ["one", "two"] and calls[0][2] == {"quick": True}
    text = result["report"].read_text()
    assert "one network" in text and "two runtime" in text and "one: network 1 of 1, runtime 1 of 1" in text
    saved = json.loads(result["results_file"].read_text())
    assert set(saved["rows"]) == {"one", "two"} and saved["passed"]["two"]["network"]["passed"] == 0


@pytest.mark.slow
def test_pfnn_eval_compares_the_pfnn_with_a_matching_database(tmp_path):
    from conftest import DEFAULT_MODEL

    folder = linked_folder(tmp_path / "clips", CLIPS)
    database = build_matching(folder, tmp_path / "matching.safetensors", say=lambda message: None)
    out = tmp_path / "eval"
    assert cli.main(["--model", str(DEFAULT_MODEL), "--model", str(database), "--out", str(out), "--quick",
                     "--drives", "walk_turn", "--threads", "1"]) == 0
    text = (out / "report.md").read_text()
    assert "| default network | default runtime | matching network | matching runtime | mocap |" in text
    line = next(line for line in text.splitlines() if line.startswith("| walk_turn | foot skating (walk)"))
    assert line.count("m/s") == 5  # four subjects and the mocap
    for name in ("default", "matching"):
        assert (out / name / "report.md").exists() and (out / name / "plots" / "walk_turn_filmstrip.png").exists()
