"""The data inspector: rows for real files, speed and folder warnings, failures reported per file."""
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from pfnn_core.data.inspector import format_table, inspect_file, main
from pfnn_core.motion import bvh


@pytest.fixture()
def walk_file(bundled_bvh_files):
    return next(p for p in bundled_bvh_files if p.name.startswith("dataset-2_walk_normal"))


def test_row_for_a_bundled_walk(walk_file):
    row = inspect_file(walk_file)
    m = bvh.load(walk_file)
    assert row["frames"] == m.num_frames and row["joints"] == 22 and row["units"] == "cm"
    assert row["channels"] == "6ch x22"
    assert 0.9 < row["speed_mps"] < 1.4 and row["warnings"] == []
    hips = m.global_positions()[:, 1]
    expected = np.linalg.norm(hips[-1, [0, 2]] - hips[0, [0, 2]]) / m.duration  # straight walk: path ~ chord
    assert row["speed_mps"] == pytest.approx(expected, rel=0.1)


def test_wrong_frame_time_is_flagged(walk_file, tmp_path):
    text = re.sub(r"Frame Time:\s*0.0333333", "Frame Time: 0.00833333", bvh.read_bytes(walk_file).decode())
    (tmp_path / "walk_fast.bvh").write_text(text)
    row = inspect_file(tmp_path / "walk_fast.bvh")
    assert row["speed_mps"] > 4 and any("implausible for a 'walk'" in w for w in row["warnings"])


def test_folder_with_broken_mixed_and_differing_rates(walk_file, tmp_path, capsys):
    shutil.copy(walk_file, tmp_path / "a_walk.bvh")
    text = bvh.read_bytes(walk_file).decode()
    (tmp_path / "b_walk_60fps.bvh").write_text(re.sub(r"Frame Time:\s*0.0333333", "Frame Time: 0.0166667", text))
    (tmp_path / "c_other_skeleton.bvh").write_text(text.replace("OFFSET 15.7357 0.0 0.0", "OFFSET 25.7357 0.0 0.0"))
    (tmp_path / "d_broken.bvh").write_text("HIERARCHY\nROOT x\n{\n")
    code = main(["inspect", str(tmp_path)])
    out = capsys.readouterr().out
    assert code != 0
    assert "a_walk.bvh" in out and "FAILED" in out
    assert "d_broken.bvh" in out and "ERROR" in out
    assert "mixed skeletons" in out and "c_other_skeleton.bvh" in out
    assert "frame rates differ" in out


def test_clean_files_exit_zero(walk_file, capsys):
    assert main(["inspect", str(walk_file)]) == 0
    assert "WARNING" not in capsys.readouterr().out


def test_format_table_shows_extra_columns(walk_file):
    row = inspect_file(walk_file, extra_columns=[lambda motion: {"contact_share": 0.54}])
    table = format_table([row, {"path": "x.bvh", "file": "x.bvh", "warnings": [], "error": "x.bvh: empty file"}])
    header = table.splitlines()[0]
    assert header.split()[:8] == ["file", "frames", "frame_time", "duration_s", "joints", "channels", "units", "speed_mps"]
    assert "contact_share" in header and "0.54" in table and "FAILED" in table


def test_contacts_option_adds_phase_columns_and_plots(tmp_path, capsys):
    walk = Path(__file__).resolve().parents[1] / "assets" / "bvh" / "bandai-namco-ds2" / "dataset-2_walk_normal_001.bvh.gz"
    assert main(["inspect", str(walk), "--plots", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    row = next(line for line in printed.splitlines() if line.startswith(walk.name))
    assert "contacts" in row  # phase labelled from foot contacts, not the root-height fallback
    # a walking gait cycle at 60 Hz is ~66 frames on this data (63-68 p10-p90)
    cycle = int(row.split()[-3])
    assert 60 <= cycle <= 72
    assert (tmp_path / f"{walk.stem}_contacts_phase.png").stat().st_size > 10_000


def test_minutes_per_style_and_content_with_warnings(tmp_path, capsys):
    folder = Path(__file__).resolve().parents[1] / "assets" / "bvh"
    names = ["bandai-namco-ds2/dataset-2_walk_normal_001.bvh.gz", "bandai-namco-ds2/dataset-2_run_normal_001.bvh.gz",
             "bandai-namco-ds2-styles/dataset-2_walk_elderly_001.bvh.gz",
             "bandai-namco-ds1/dataset-1_walk-left_old_001.bvh.gz"]
    for name in names:
        shutil.copy(folder / name, tmp_path / Path(name).name)
    shutil.copy(folder / "labels.json", tmp_path / "labels.json")  # old -> elderly
    assert main(["inspect", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    table = out[out.index("minutes per style and content"):]
    header, _, *lines = table.splitlines()[1:5]
    assert header.split() == ["style", "run", "walk", "walk-left", "total_min"]
    elderly = next(line for line in lines if line.startswith("elderly")).split()
    walk = bvh.load(folder / names[2]).duration + 0.0
    assert float(elderly[2]) == pytest.approx(walk / 60.0, abs=0.06) and float(elderly[3]) > 0  # the old clip joined
    assert "WARNING style 'normal' has only" in out and "WARNING content 'walk-left' is missing in style(s) normal" in out
