"""Un-blinding the A/B page's answers: each rater's left / right / same per drive back to model A or B.

An answers file is what the page's Save button downloads: {"page": id, "answers": [{"drive", "choice":
"left" | "right" | "same" | null, "note"}]}. `unblind` maps each choice through the key; `totals` counts
the drives each model was preferred on; `results_table` is the Markdown `pfnn-eval --ab-results` prints.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pfnn_core.evaluation.ab_key import MODELS, SIDES, BlindKey
from pfnn_core.jsonfile import read_json

CHOICES = SIDES + ("same",)
OUTCOMES = MODELS + ("same", "unanswered")


@dataclass(frozen=True)
class Verdict:
    drive: str
    choice: str | None  # what the rater clicked: "left", "right", "same" or None
    preferred: str  # "A", "B", "same" or "unanswered"
    note: str = ""


def read_answers(path) -> dict:
    """An answers file, checked: ValueError naming the file and the field."""
    value = read_json(path, "answers file")
    if not isinstance(value, dict) or not isinstance(value.get("answers"), list):
        raise ValueError(f"{path}: expected an object with 'answers' (the file the A/B page's Save button writes)")
    for index, answer in enumerate(value["answers"]):
        where = f"{path}: answers[{index}]"
        if not isinstance(answer, dict) or not isinstance(answer.get("drive"), str):
            raise ValueError(f"{where}: expected {{\"drive\": name, \"choice\": ..., \"note\": ...}}")
        if answer.get("choice") not in CHOICES + (None, ""):
            raise ValueError(f"{where}.choice: expected one of {', '.join(CHOICES)} or null, got {answer['choice']!r}")
        if not isinstance(answer.get("note", ""), str):
            raise ValueError(f"{where}.note: expected text")
    return value


def unblind(answers: dict, key: BlindKey, source: str = "answers") -> list[Verdict]:
    """One verdict per drive of the key, in the page's order (drives the rater left open: 'unanswered')."""
    if answers.get("page") not in (None, key.page_id):
        raise ValueError(f"{source}: these answers are for page {answers.get('page')}, the key is for {key.page_id}")
    given = {}
    for answer in answers["answers"]:
        if key.pair(answer["drive"]) is None:
            raise ValueError(f"{source}: drive {answer['drive']!r} is not on the key's page")
        given[answer["drive"]] = answer
    verdicts = []
    for pair in key.pairs:
        answer = given.get(pair.drive, {})
        choice = answer.get("choice") or None
        preferred = {"left": pair.left, "right": pair.right, "same": "same", None: "unanswered"}[choice]
        verdicts.append(Verdict(pair.drive, choice, preferred, str(answer.get("note", "")).strip()))
    return verdicts


def totals(verdicts) -> dict:
    """{"A": drives A was preferred on, "B": ..., "same": ..., "unanswered": ...}."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for verdict in verdicts:
        counts[verdict.preferred] += 1
    return counts


def results_table(raters: dict, key: BlindKey) -> str:
    """Markdown: a row per drive with each rater's preferred model, the totals, then the notes.
    `raters`: {rater name: [Verdict]} (a name per answers file)."""
    names = list(raters)
    label = {model: f"{model} ({Path(key.models[model]).name})" for model in MODELS}
    lines = ["| drive | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for index, pair in enumerate(key.pairs):
        cells = [raters[name][index].preferred for name in names]
        lines.append(f"| {pair.drive} | " + " | ".join(cells) + " |")
    lines += ["", "| preferred | " + " | ".join(names) + " | all |", "|---|" + "---|" * (len(names) + 1)]
    counted = {name: totals(raters[name]) for name in names}
    for outcome in OUTCOMES:
        row = [counted[name][outcome] for name in names]
        lines.append(f"| {label.get(outcome, outcome)} | " + " | ".join(str(n) for n in row) + f" | {sum(row)} |")
    notes = [f"- {name}, {v.drive} ({v.preferred}): {v.note}" for name in names for v in raters[name] if v.note]
    return "\n".join(lines + (["", "Notes:"] + notes if notes else []))
