"""The soak script (scripts/soak.py) in short: 20 simulated seconds of the real headless viewer with
every kind of event (input, styles, swaps to every shipped model kind, takes, screenshots, steps back,
pause, a tiny training run started and stopped); no exception, no NaN, the takes and screenshots on
disk, and the report's per-minute memory and frame-time figures."""
import json
import subprocess
import sys

from conftest import ROOT

SOAK = ROOT / "scripts" / "soak.py"


def test_a_short_soak_runs_every_event_without_exception_or_nan(tmp_path):
    out = tmp_path / "soak.json"
    result = subprocess.run([sys.executable, str(SOAK), "--minutes", "0.34", "--event-every", "0.5", "--out", str(out)],
                            capture_output=True, text=True, cwd=ROOT, timeout=1200)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["exceptions"] == [] and report["nan_count"] == 0 and report["targets_met"]
    assert all(count >= 1 for count in report["events"].values()), report["events"]
    assert report["simulated_minutes"] == 0.34 and report["takes_written"] >= 1 and report["screenshots_written"] >= 1
    [minute] = report["minutes"]
    assert minute["frames"] == round(0.34 * 60 * 60 / 4) and minute["rss_mb"] > 100
    assert 0 < minute["p50_ms"] <= minute["p95_ms"] <= minute["p99_ms"] <= minute["max_ms"]
    assert report["panel_errors"] == [], report["panel_errors"]
