"""The runtime as it was before the tick rewrite (git revision BASELINE), loaded from git history for
side-by-side comparisons: `load(revision)` returns its `runtime` module (with the `ik` it used).

Used by bench_runtime.py ('before' figures, and the check that the new tick reproduces the old one).
"""
from __future__ import annotations

import importlib
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "c73e90f"  # the last commit with the single-file runtime


def load(revision: str = BASELINE):
    folder = Path(tempfile.mkdtemp(prefix="old_runtime_"))
    package = folder / "old_pfnn"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in ("runtime", "ik"):
        text = subprocess.run(["git", "show", f"{revision}:pfnn_core/{name}.py"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout
        text = text.replace("from pfnn_core.ik import", "from old_pfnn.ik import")
        (package / f"{name}.py").write_text(text)
    sys.path.insert(0, str(folder))
    return importlib.import_module("old_pfnn.runtime")
