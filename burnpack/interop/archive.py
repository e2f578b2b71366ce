"""Bounded reading of zip members (PyTorch's zip checkpoints and ``.npz`` archives).

A zip member declares its uncompressed size, and DEFLATE can expand a kilobyte into a
megabyte. Before any member is inflated its declared size is checked against what the archive
can hold: at most ``DEFLATE_MAX_RATIO`` times its compressed bytes (no valid DEFLATE stream
expands more), and, summed over the archive, at most ``max_inflate_bytes`` +
``max_inflate_ratio`` × the archive's size (keywords of the readers, ``limits.ReadLimits``). ``zipfile`` then never produces more than the
declared size, so memory follows the bytes really present. Stored (uncompressed) members are
tensor data really present and are not counted.
"""

from __future__ import annotations

import zipfile
import zlib

from ..errors import cause, excerpt
from .limits import DEFAULT_LIMITS, ReadLimits

__all__ = ["DEFLATE_MAX_RATIO", "InflateBudget", "ZIP_ERRORS"]

DEFLATE_MAX_RATIO = 1032  # DEFLATE's largest expansion: 258 bytes from every 2 bits

# What ``zipfile`` raises on a corrupt archive, besides its own BadZipFile.
ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    zlib.error,
    EOFError,
    OSError,
    ValueError,  # includes UnicodeDecodeError of member names
    NotImplementedError,  # compression methods zipfile lacks
    RuntimeError,  # encrypted members
    KeyError,
    IndexError,
    OverflowError,
)


class InflateBudget:
    """The bytes an archive of ``archive_size`` bytes may inflate to, spent member by member."""

    def __init__(self, archive_size: int, error: type[Exception], limits: ReadLimits = DEFAULT_LIMITS) -> None:
        self.archive_size = archive_size
        self.left = limits.max_inflate_bytes + limits.max_inflate_ratio * archive_size
        self.limits = limits
        self._error = error

    def check(self, info: zipfile.ZipInfo) -> None:
        """Refuse a member whose declared size its compressed bytes cannot hold or the budget cannot pay."""
        if info.compress_size > self.archive_size:  # a read of that many bytes would allocate them first
            raise self._error(
                f"zip record {excerpt(info.filename)} declares {info.compress_size} bytes, more than the "
                f"archive's {self.archive_size}"
            )
        if info.compress_type == zipfile.ZIP_STORED:
            if info.file_size != info.compress_size:
                raise self._error(
                    f"zip record {excerpt(info.filename)} is stored but declares {info.file_size} bytes "
                    f"for {info.compress_size} stored"
                )
            return
        if info.file_size > DEFLATE_MAX_RATIO * info.compress_size + 64:
            raise self._error(
                f"zip record {excerpt(info.filename)} declares {info.file_size} bytes, more than its "
                f"{info.compress_size} compressed bytes can hold"
            )
        if info.file_size > self.left:
            raise self._error(
                f"zip record {excerpt(info.filename)} would inflate to {info.file_size} bytes, over the "
                f"archive's inflation limit ({self.limits.max_inflate_bytes} + {self.limits.max_inflate_ratio} x its "
                f"size in total: {self.limits.lift('max_inflate_bytes')}, as does max_inflate_ratio=); "
                "store large tensors uncompressed"
            )
        self.left -= info.file_size

    def read(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
        """A member's bytes, its declared size checked first; zipfile stops at that size."""
        self.check(info)
        try:
            with archive.open(info) as member:
                data = member.read(info.file_size + 1)
        except self._error:
            raise
        except ZIP_ERRORS as exc:
            raise self._error(f"cannot read zip record {excerpt(info.filename)}: {cause(exc)}") from None
        if len(data) != info.file_size:
            raise self._error(f"zip record {excerpt(info.filename)} holds {len(data)} bytes, declares {info.file_size}")
        return data
