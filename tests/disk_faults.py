"""Disks that fail on purpose, for the writer tests: a full file system (a 64 KiB tmpfs) and a folder
that turns read-only while a writer runs.

Mounting needs root; without it `full_disk` is skipped, and the read-only folder is made with chmod
(which root ignores, hence the remount as root). `when_writing(folder, switch)` turns the folder
read-only at the moment a writer asks for its temporary file, after it has made its contents: the
"between start and finish" of the issue.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest

from pfnn_core import files


def _mount(folder: Path, size: str) -> None:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    folder.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                            capture_output=True, text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")


def _unmount(folder: Path) -> None:
    if subprocess.run(["umount", str(folder)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


@pytest.fixture
def full_disk(tmp_path):
    """A folder on a 64 KiB tmpfs; `fill(folder)` takes every free byte but `keep` (returns the filler)."""
    folder = tmp_path / "small-disk"
    _mount(folder, "64k")
    yield folder
    _unmount(folder)


def fill(folder: Path, keep: int = 0) -> Path:
    """Fill the file system of `folder` to within `keep` bytes (a filler file)."""
    filler = folder / "filler"
    with open(filler, "ab") as stream:
        block = b"\0" * 4096
        while True:
            free = os.statvfs(folder).f_bavail * os.statvfs(folder).f_frsize
            if free <= keep:
                break
            try:
                stream.write(block[:max(1, min(len(block), free - keep))])
                stream.flush()
            except OSError:
                break
    return filler


@pytest.fixture
def read_only_folder(tmp_path):
    """(folder, make_read_only): a writable folder and the call that makes it read-only for this
    process. As root: a tmpfs remounted read-only; otherwise: chmod 555."""
    folder = tmp_path / "vanishing"
    if os.geteuid() == 0:
        _mount(folder, "8m")

        def make_read_only():
            subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True, capture_output=True)
        yield folder, make_read_only
        _unmount(folder)
    else:
        folder.mkdir()

        def make_read_only():
            folder.chmod(0o555)
        yield folder, make_read_only
        folder.chmod(0o755)


@contextlib.contextmanager
def when_writing(make_read_only, monkeypatch):
    """Make the folder read-only when the writer, its contents made, asks for its temporary file."""
    real = files.temporary_path
    switched = []

    def switch_then_name(path, *args, **kwargs):
        if not switched:
            make_read_only()
            switched.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(files, "temporary_path", switch_then_name)
    yield switched
    monkeypatch.setattr(files, "temporary_path", real)


def listing(folder: Path) -> list[str]:
    """Every name in the folder, hidden temporary files included."""
    return sorted(p.name for p in Path(folder).iterdir())
