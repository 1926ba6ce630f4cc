"""BVH loading cost against parsing the MOTION numbers alone with numpy (same files, same run, best of 3;
.bvh.gz files are decompressed on both sides).

Usage: python benchmarks/bench_bvh.py [FOLDER]   (default: assets/bvh)
"""
from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pfnn_core.motion import bvh  # noqa: E402


def motion_numbers(data: bytes) -> bytes:
    """The bytes of the frame lines: everything after the 'Frame Time' line."""
    match = re.search(rb"Frame\s+Time\s*:[^\n]*\n", data, re.IGNORECASE)
    return data[match.end():]


def best_time(runs: int, fn, *args) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - start)
    return best


def parse_fromstring(path: Path):
    return np.fromstring(motion_numbers(bvh.read_bytes(path)), dtype=np.float64, sep=" ")


def parse_split(path: Path):
    return np.array(motion_numbers(bvh.read_bytes(path)).split(), dtype=np.float64)


def main(argv=None) -> None:
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0]) if args else ROOT / "assets" / "bvh" / "bandai-namco-ds2"
    files = sorted(bvh.find_files(folder))
    count = sum(parse_fromstring(f).size for f in files)
    # Per file, the three ways alternate and each keeps its best of 3, so load on a busy machine
    # shifts both sides of the ratio alike.
    totals = {"load": 0.0, "fromstring": 0.0, "split": 0.0}
    for f in files:
        totals["load"] += best_time(3, bvh.load, f)
        totals["fromstring"] += best_time(3, parse_fromstring, f)
        totals["split"] += best_time(3, parse_split, f)
    t_load = totals["load"]
    print(f"{len(files)} files, {count} numbers (sums of per-file best of 3)")
    print(f"bvh.load                                : {t_load * 1e3:8.1f} ms")
    print(f"read + np.fromstring(sep=' ') numbers   : {totals['fromstring'] * 1e3:8.1f} ms   "
          f"ratio load/this = {t_load / totals['fromstring']:.2f}")
    print(f"read + np.array(bytes.split(), float)   : {totals['split'] * 1e3:8.1f} ms   "
          f"ratio load/this = {t_load / totals['split']:.2f}")


if __name__ == "__main__":
    main()
