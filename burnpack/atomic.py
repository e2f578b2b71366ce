"""Atomic file output: a scratch sibling, fsync, rename, fsync of the directory.

The destination either keeps its old content or gets the complete new one; no scratch file is
left behind on any failure (Burn's ``write_to_file_atomic``, burn-pack writer.rs:532-646).
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO


class DestinationExists(FileExistsError):
    """``replace=False`` and the destination appeared while the scratch file was being written."""


@contextlib.contextmanager
def atomic_file(path: Path, *, replace: bool = True) -> Iterator[BinaryIO]:
    """A stream whose bytes land at ``path`` only if the ``with`` block succeeds.

    The scratch file is ``<name>.<pid>-<n>.tmp`` beside ``path`` (created exclusively). With
    ``replace=False`` an existing ``path`` is never replaced: the file is hard-linked into place,
    which raises ``DestinationExists`` if ``path`` appeared meanwhile. Raises ``OSError``.
    """
    for n in itertools.count():
        scratch = path.with_name(f"{path.name}.{os.getpid()}-{n}.tmp")
        try:
            stream = open(scratch, "xb")
            break
        except FileExistsError:
            continue
    try:
        with stream:
            yield stream
            stream.flush()
            os.fsync(stream.fileno())
        if replace:
            os.replace(scratch, path)
        else:
            _link_into_place(scratch, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(scratch)
        raise
    _fsync_dir(path.parent)


def _link_into_place(scratch: Path, path: Path) -> None:
    try:
        os.link(scratch, path)
    except FileExistsError:
        raise DestinationExists(f"{path} exists") from None
    except OSError:  # file systems without hard links: a (racy) existence check instead
        if path.exists():
            raise DestinationExists(f"{path} exists") from None
        os.replace(scratch, path)
    else:
        os.unlink(scratch)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # platforms without directory handles
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
