"""`pfnn-eval --ab A B --out DIR` (a blind A/B page of the same drives with two models) and
`pfnn-eval --ab-results answers.json` (un-blind the answers into a table)."""
from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    print("pfnn-eval: --ab is not built yet", file=sys.stderr)
    return 2
