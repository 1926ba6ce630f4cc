"""The blind A/B page: one self-contained HTML file (`ab_page.html` filled in; styles and script inline,
no server, no network) beside its `videos/` folder.

The page knows each drive's name, what it tests and its two videos by side only; the models behind
the sides stay in the key (`ab_key.py`). Its Save button downloads `answers.json` ({"page", "answers":
[{"drive", "choice", "note"}], "folder"}) and also shows the same text in `#answers-json`.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

from pfnn_core import files
from pfnn_core.evaluation.ab_key import BlindKey

TEMPLATE = Path(__file__).with_name("ab_page.html")


def page_data(key: BlindKey, descriptions: dict, folder: str = "") -> dict:
    """What the page is given: its id, its folder (answers name it, to find the key) and per drive the
    description and the two videos (no model)."""
    return {"page": key.page_id, "folder": folder,
            "pairs": [{"drive": pair.drive, "description": descriptions.get(pair.drive, ""),
                       "left": pair.video("left"), "right": pair.video("right")} for pair in key.pairs]}


def render_page(key: BlindKey, descriptions: dict, title: str = "Which motion looks more natural?",
                folder: str = "") -> str:
    data = json.dumps(page_data(key, descriptions, folder), indent=1).replace("</", "<\\/")  # safe inside <script>
    return TEMPLATE.read_text(encoding="utf-8").replace("{{TITLE}}", html.escape(title)).replace("{{PAGE_DATA}}", data)


def write_page(path, key: BlindKey, descriptions: dict, title: str = "Which motion looks more natural?") -> Path:
    return files.write_text(path, render_page(key, descriptions, title, str(Path(path).resolve().parent)))
