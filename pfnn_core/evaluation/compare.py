"""`pfnn-eval --model A --model B ...`: the same drives and measures on several models, one report with a
column per model and subject, the mocap's own figures beside them (the A/B comparison a baseline is kept
for: is one model really more natural, or only better fitted to its data?).

Each model is evaluated as `cli.evaluate` does alone, into a folder of its own under the output folder
(its report, results, plots, filmstrips and drives); `compare` then writes `report.md` and `results.json`
over all of them. The mocap column is the first model's reference (the same folder and floor levels
give every model the same figures; a model measured against other mocap says so in the header).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from pfnn_core import files
from pfnn_core.evaluation import controller_rows, report
from pfnn_core.evaluation.analysis import Row
from pfnn_core.evaluation.suite import SUBJECTS


def model_names(paths) -> list[str]:
    """A short, distinct name per model file: its stem, with its folder when two stems are the same."""
    stems = [Path(path).stem for path in paths]
    names = []
    for path, stem in zip(paths, stems):
        name = stem if stems.count(stem) == 1 else f"{Path(path).parent.name}/{stem}"
        while name in names:
            name += "'"
        names.append(name)
    return names


def _folder_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def comparison_table(results: list[tuple[str, list[Row]]], keep=None) -> str:
    """Markdown: drive | measure | one column per model and subject | mocap | target, one line per measure
    any model has (a model without it shows '-'); `keep(row)` chooses the rows (default all)."""
    keyed: dict = {}
    for name, rows in results:
        for row in rows:
            if keep is not None and not keep(row):
                continue
            keyed.setdefault((row.drive, row.measure), {})[(name, row.subject)] = row
    columns = [(name, subject) for name, _ in results for subject in SUBJECTS]
    lines = ["| drive | measure | " + " | ".join(f"{name} {subject}" for name, subject in columns) + " | mocap | target |",
             "|---|---|" + "---|" * len(columns) + "---|---|"]
    first_model = results[0][0]
    for (drive, measure), cells in keyed.items():
        reference = next((row for (name, _), row in cells.items() if name == first_model), next(iter(cells.values())))
        lines.append(f"| {drive} | {measure} | " + " | ".join(report._cell(cells.get(column)) for column in columns)
                     + f" | {report.format_number(reference.reference, reference.unit)} | {reference.target or '-'} |")
    return "\n".join(lines)


def summary_lines(results: list[tuple[str, list[Row]]]) -> list[str]:
    lines = []
    for name, rows in results:
        counts = report.summary(rows)
        lines.append(f"{name}: " + ", ".join(f"{subject} {c['passed']} of {c['checked']}" for subject, c in counts.items())
                     + " targets met")
    return lines


def compare(model_paths, out_dir, evaluate, log=None, **options) -> dict:
    """Evaluate every model (`evaluate(path, folder, log=..., **options)`, i.e. `cli.evaluate`) into
    out_dir/NAME/, then write out_dir/report.md and results.json side by side. Returns {"results":
    [(name, rows)], "report", "results_file", "table", "evaluations": {name: what evaluate returned}}."""
    out_dir = Path(out_dir)
    names = model_names(model_paths)
    evaluations, results = {}, []
    for name, path in zip(names, model_paths):
        if log:
            log(f"model {name}: {path}")
        evaluations[name] = evaluate(path, out_dir / _folder_name(name), log=log, **options)
        results.append((name, evaluations[name]["rows"]))
    table = comparison_table(results)
    lines = ["# Motion-quality comparison", "",
             "The same drives and measures on each model (docs/EVALUATION.md); per model two subjects: **network** "
             "is the model alone (its own root motion, turning and phase; no command blending, drift correction, "
             "foot locks, IK or floor clamp), **runtime** is everything as shipped. Each model's own report, plots "
             "and filmstrips are in its folder.", ""]
    lines += [f"- {name}: `{path}` (report: [{_folder_name(name)}/report.md]({_folder_name(name)}/report.md))"
              for name, path in zip(names, model_paths)]
    lines += [f"- {line}" for line in summary_lines(results)]
    lines += ["", "## Controllers side by side", "",
              "Response latency (counterfactual: each input change against the same drive with the input held), "
              "acceleration noise and turning slip against the mocap's, determinism (docs/EVALUATION.md).", "",
              comparison_table(results, keep=controller_rows.is_summary_row), "", "## Every measure", "", table, ""]
    report_path, results_path = out_dir / "report.md", out_dir / "results.json"
    files.write_text(report_path, "\n".join(lines) + "\n")
    files.write_text(results_path, json.dumps({"models": {name: str(path) for name, path in zip(names, model_paths)},
                                               "rows": {name: [row.as_dict() for row in rows] for name, rows in results},
                                               "passed": {name: report.summary(rows) for name, rows in results}}, indent=1))
    return {"results": results, "report": report_path, "results_file": results_path, "table": table,
            "evaluations": evaluations}
