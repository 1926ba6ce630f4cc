"""The compiled kernels' disk cache is keyed by the source of every kernel module (math/kernel_cache.py)."""
import shutil
import types
from pathlib import Path

from pfnn_core.math import kernel_cache

PACKAGE = Path(kernel_cache.__file__).resolve().parents[1]


def copy_kernel_sources(folder: Path) -> Path:
    for name in kernel_cache.KERNEL_MODULES:
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(PACKAGE / name, target)
    return folder


def test_an_edit_to_a_helper_module_changes_the_cache_key(tmp_path):
    package = copy_kernel_sources(tmp_path / "pfnn_core")
    before = kernel_cache.kernel_source_digest(package)
    assert before == kernel_cache.kernel_source_digest(PACKAGE)  # same sources, same key
    helper = package / "math" / "mat3.py"  # inlined by every kernel, never compiled on its own file's behalf
    helper.write_text(helper.read_text() + "\n# an edit\n")
    assert kernel_cache.kernel_source_digest(package) != before


def test_configure_uses_a_folder_per_source_and_removes_stale_ones(tmp_path, monkeypatch):
    monkeypatch.setenv("PFNN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("PFNN_NUMBA_CACHE", raising=False)
    stale = tmp_path / "numba" / "0123456789abcdef"
    stale.mkdir(parents=True)
    fake_numba = types.SimpleNamespace(config=types.SimpleNamespace(CACHE_DIR=""))
    assert kernel_cache.configure(fake_numba) is True
    assert Path(fake_numba.config.CACHE_DIR) == tmp_path / "numba" / kernel_cache.kernel_source_digest()
    assert Path(fake_numba.config.CACHE_DIR).is_dir() and not stale.exists()


def test_the_cache_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("PFNN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("PFNN_NUMBA_CACHE", "0")
    fake_numba = types.SimpleNamespace(config=types.SimpleNamespace(CACHE_DIR="untouched"))
    assert kernel_cache.configure(fake_numba) is False
    assert fake_numba.config.CACHE_DIR == "untouched" and not (tmp_path / "numba").exists()
