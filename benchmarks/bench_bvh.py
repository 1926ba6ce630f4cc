"""BVH loading cost against parsing the MOTION numbers alone with numpy (same files, same run, best of 3).

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

from pfnn_core import bvh  # noqa: E402


def motion_numbers(data: bytes) -> bytes:
    """The bytes of the frame lines: everything after the 'Frame Time' line."""
    match = re.search(rb"Frame\s+Time\s*:[^\n]*\n", data, re.IGNORECASE)
    return data[match.end():]


def best_of(runs: int, fn) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv=None) -> None:
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0]) if args else ROOT / "assets" / "bvh"
    files = sorted(folder.glob("*.bvh"))
    bodies = [motion_numbers(f.read_bytes()) for f in files]
    count = sum(np.fromstring(b, sep=" ").size for b in bodies)

    def parse_fromstring():
        for f in files:
            np.fromstring(motion_numbers(f.read_bytes()), dtype=np.float64, sep=" ")

    def parse_split():
        for f in files:
            np.array(motion_numbers(f.read_bytes()).split(), dtype=np.float64)

    def load_all():
        for f in files:
            bvh.load(f)

    load_all()  # warm the file cache and imports
    t_load = best_of(3, load_all)
    t_fromstring = best_of(3, parse_fromstring)
    t_split = best_of(3, parse_split)
    print(f"{len(files)} files, {count} numbers")
    print(f"bvh.load (all)                          : {t_load * 1e3:8.1f} ms")
    print(f"read + np.fromstring(sep=' ') numbers   : {t_fromstring * 1e3:8.1f} ms   ratio load/this = {t_load / t_fromstring:.2f}")
    print(f"read + np.array(bytes.split(), float)   : {t_split * 1e3:8.1f} ms   ratio load/this = {t_load / t_split:.2f}")


if __name__ == "__main__":
    main()
