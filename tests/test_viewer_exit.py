"""Issue 26, fault 12: Ctrl+Q ends the process at once. The window closed at once but the process took
2-7 s more in the interpreter's teardown (torch, numba's compiler, the GL driver); `end_process` ends it
after the exit handlers have run, so what they save is saved."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_end_process_runs_the_exit_handlers_flushes_and_exits_with_the_code(tmp_path):
    saved = tmp_path / "saved.txt"
    program = (f"import atexit, pathlib\n"
               f"atexit.register(lambda: pathlib.Path({str(saved)!r}).write_text('layout'))\n"
               f"print('unflushed output', end='')\n"
               f"from app.cli import end_process\n"
               f"end_process(3)\n"
               f"print('never')\n")
    result = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 3
    assert result.stdout == "unflushed output"
    assert saved.read_text() == "layout"
