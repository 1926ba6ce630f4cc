"""Writing files so that a crash, a full disk or a folder that turns read-only never costs the previous
file: every writer of the product goes through here.

A file is written to a hidden temporary file next to its destination (`.NAME.XXXXXXXX.tmp`, same
folder, so same file system), fsynced, then renamed over the destination, and the folder is fsynced
so the rename itself survives a power cut. Until the rename the destination holds its old contents;
after it, the new ones; never a mix. On any failure the temporary file is removed and the error is a
`WriteError` (an `OSError`) whose message names the file and says why in words.

Writers make their whole contents in memory first (`write_bytes`, `write_text`, `write_figure`), so
the temporary file lives for one write: a folder that turns read-only while the contents are being
made refuses the temporary file itself, and nothing is left behind. (Once a temporary file exists,
a folder that then turns read-only cannot have it removed by anyone.) `replacing(path)` is for
writers that must stream to a path themselves (a video).
"""
from __future__ import annotations

import contextlib
import errno
import io
import os
import secrets
from pathlib import Path

# What an OSError's errno means for someone who asked for a file to be written.
_REASONS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied (is the folder read-only?)",
    errno.EPERM: "permission denied (is the folder read-only?)",
    errno.ENOENT: "the folder does not exist",
    errno.ENOTDIR: "a part of the path is not a folder",
    errno.EISDIR: "the path is a folder",
    errno.EFBIG: "the file is too large for the file system",
    errno.EIO: "an input/output error of the device",
    errno.ENAMETOOLONG: "the file name is too long",
}


class WriteError(OSError):
    """A file that could not be written; the message names the file and why. The previous file at that
    path, if there was one, is unchanged, and no temporary file is left behind."""

    def __init__(self, path, failure: OSError):
        super().__init__(failure.errno, failure.strerror)
        self.filename = str(path)
        self.reason = describe(failure)
        self.message = f"{path}: cannot write the file ({self.reason})"

    def __str__(self) -> str:
        return self.message


def describe(failure: OSError) -> str:
    """An OSError in words, as the product's messages say it ('no space left on the device')."""
    return _REASONS.get(failure.errno, failure.strerror or str(failure))


def explain(failure: OSError) -> str:
    """One line for an OSError met while writing: a WriteError's own message, else 'PATH: cannot
    write (reason)' (a folder that could not be made, say)."""
    if isinstance(failure, WriteError):
        return failure.message
    return f"{failure.filename or 'file'}: cannot write ({describe(failure)})"


def temporary_path(path, keep_suffix: bool = False) -> Path:
    """A fresh hidden name next to `path` for its temporary file; with `keep_suffix` it ends in `path`'s
    suffix too, for libraries that choose the format by the name."""
    path = Path(path)
    return path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp" + (path.suffix if keep_suffix else ""))


def sync_folder(folder: Path) -> None:
    """fsync a folder so a rename in it survives a power cut; some file systems cannot, which is harmless."""
    try:
        descriptor = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def _create(temporary: Path) -> int:
    # 0o666 before the umask: the file gets the permissions a plain open() would give it.
    return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)


def _write_all(descriptor: int, data) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(descriptor, view):]


def _remove(temporary: Path) -> None:
    with contextlib.suppress(OSError):
        temporary.unlink()


def write_bytes(path, data: bytes) -> Path:
    """Replace the file at `path` with `data` (temporary file, fsync, rename); `WriteError` on failure,
    with the previous file unchanged and no temporary file left."""
    path = Path(path)
    temporary = temporary_path(path)
    created = False
    try:
        descriptor = _create(temporary)
        created = True
        try:
            _write_all(descriptor, data)
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.replace(temporary, path)
    except OSError as failure:
        if created:
            _remove(temporary)
        raise WriteError(path, failure) from None
    except BaseException:
        if created:
            _remove(temporary)
        raise
    sync_folder(path.parent)
    return path


def write_text(path, text: str, encoding: str = "utf-8") -> Path:
    """`write_bytes` of `text` encoded (UTF-8 unless told)."""
    return write_bytes(path, text.encode(encoding))


def write_figure(path, figure, **options) -> Path:
    """A matplotlib figure saved with `write_bytes`, the format from `path`'s suffix (`options` go to
    `savefig`): rendered in memory first, so a failure leaves no half image."""
    path = Path(path)
    buffer = io.BytesIO()
    figure.savefig(buffer, format=path.suffix.lstrip(".").lower() or "png", **options)
    return write_bytes(path, buffer.getbuffer())


@contextlib.contextmanager
def replacing(path):
    """Yield a temporary path next to `path` (ending in its suffix) for a writer that streams to a path
    itself; when the block ends without an exception the file written there is fsynced and renamed to
    `path`. On any exception the temporary file is removed; an OSError comes out as a `WriteError`
    naming `path`."""
    path = Path(path)
    temporary = temporary_path(path, keep_suffix=True)
    try:
        yield temporary
        descriptor = os.open(temporary, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.replace(temporary, path)
    except OSError as failure:
        _remove(temporary)
        raise WriteError(path, failure) from None
    except BaseException:
        _remove(temporary)
        raise
    sync_folder(path.parent)
