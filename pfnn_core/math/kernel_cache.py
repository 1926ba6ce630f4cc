"""Where the compiled (numba) kernels of the runtime are cached on disk, keyed by their source.

numba's own cache checks only the source file of the function it compiled: a kernel that inlines a
helper from another module (every kernel calls `mat3`) is served stale machine code after that helper
changes. So the cache folder is named by a digest of every module that holds kernels: any edit to one
of them gives a fresh folder (older folders are removed). `PFNN_NUMBA_CACHE=0` turns the disk cache off
(each process compiles afresh); `PFNN_CACHE_DIR` moves it (default `~/.cache/pfnn-viewer/numba`).
"""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

# Modules (under pfnn_core/) whose functions are compiled, or are inlined into compiled code.
KERNEL_MODULES = (
    "math/quat.py", "math/mat3.py", "math/springs.py", "models/base.py", "models/matching/database.py",
    "models/matching/features.py", "models/matching/inertialize.py", "models/matching/model.py",
    "physics/landing.py", "physics/servo_targets.py", "runtime/feet.py", "runtime/guards.py", "runtime/ik.py",
    "runtime/pose.py", "runtime/reach.py", "runtime/release.py", "runtime/root_motion.py", "runtime/settle.py",
    "runtime/trajectory.py",
)


def kernel_source_digest(package: Path | None = None) -> str:
    package = Path(package) if package else Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for name in KERNEL_MODULES:
        path = package / name
        digest.update(name.encode())
        digest.update(path.read_bytes() if path.exists() else b"")
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    base = os.environ.get("PFNN_CACHE_DIR")
    return (Path(base) if base else Path.home() / ".cache" / "pfnn-viewer") / "numba"


def configure(numba_module) -> bool:
    """Point numba's cache at this source's own folder; False when caching is off (then compile only)."""
    if os.environ.get("PFNN_NUMBA_CACHE", "1") == "0":
        return False
    root = cache_root()
    folder = root / kernel_source_digest()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for other in root.iterdir():
            if other.is_dir() and other != folder:
                shutil.rmtree(other, ignore_errors=True)
    except OSError:
        return False  # an unwritable cache folder: compile in memory
    numba_module.config.CACHE_DIR = str(folder)
    return True
