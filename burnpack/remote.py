"""Packs at URLs and in object stores (``https://``, ``s3://``, ``gs://``, ``hf://``, …) through
fsspec, an optional extra: ``pip install 'burnpack[remote]'``.

Opening costs one size request and one range request: the first 64 KiB are fetched at once,
which holds the header and the metadata of nearly every pack. Each tensor is then one range
request of exactly its bytes; bulk reads coalesce neighbouring tensors into large requests.
Every failure (HTTP error, timeout, a server that sends too few bytes) is a burnpack ``IoError``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from .errors import BurnpackError, IoError
from .source import BULK_BLOCK, BULK_GAP, coalesce

REMOTE_EXTRA_HINT = "reading URLs needs fsspec: pip install 'burnpack[remote]'"
NO_RANGES = (
    "the server does not answer range requests (it sends the whole file each time), so its tensors cannot be "
    "read one by one; download the file (e.g. curl -O URL) and read the local copy"
)
HEAD_BLOCK = 64 << 10
"""Bytes fetched by the first request: the header plus metadata of up to 64 KiB - 10."""
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
_HTTP_TIMEOUTS = {"sock_connect": 30, "sock_read": 60}  # seconds; no request waits forever


def is_url(value: object) -> TypeGuard[str]:
    """``scheme://…`` (a Windows drive path like ``C:\\x`` is not one)."""
    return isinstance(value, str) and _URL.match(value) is not None


class FsspecSource:
    """A remote file served as byte ranges."""

    def __init__(self, url: str, storage_options: Mapping[str, Any] | None = None) -> None:
        try:
            import fsspec
        except ImportError:
            raise ImportError(REMOTE_EXTRA_HINT) from None
        options = dict(storage_options or {})
        if url.split("://", 1)[0].lower() in ("http", "https") and "client_kwargs" not in options:
            import aiohttp

            options["client_kwargs"] = {"timeout": aiohttp.ClientTimeout(**_HTTP_TIMEOUTS)}
        self.url = url
        self._lock = threading.Lock()
        self._head = b""
        self._file: Any = None
        fs, path = self._call("open", lambda: fsspec.core.url_to_fs(url, **options))
        self._file = self._call("open", lambda: fs.open(path, "rb", cache_type="none"))
        size = self._file.size
        if not isinstance(size, int):
            self.close()
            raise IoError("the server does not report the file's size", where=url)
        self._size = size

    @property
    def size(self) -> int:
        return self._size

    def buffer(self) -> None:
        """Remote files are read by range: no zero-copy window."""
        return None

    def read(self, offset: int, length: int) -> bytes:
        if offset + length <= len(self._head):
            return self._head[offset : offset + length]
        if offset == 0 and not self._head:
            self._head = self._fetch(0, HEAD_BLOCK)
            return self._head[:length] if length <= len(self._head) else self._head + self._fetch(len(self._head), length - len(self._head))
        return self._fetch(offset, length)

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list[memoryview]:
        """Every range, fetched in blocks of neighbouring ranges (one request per block)."""
        out: list[memoryview] = [memoryview(b"")] * len(ranges)
        for start, end, members in coalesce(ranges, max_gap=BULK_GAP, max_block=BULK_BLOCK):
            block = memoryview(self._fetch(start, end - start))
            for i in members:
                offset, length = ranges[i]
                out[i] = block[offset - start : offset - start + length]
        return out

    def _fetch(self, offset: int, length: int) -> bytes:
        expected = max(0, min(length, self._size - offset))
        if expected == 0:
            return b""

        def get() -> bytes:
            with self._lock:
                self._file.seek(offset)
                return self._file.read(expected)

        data = self._call(f"read of bytes {offset}..{offset + expected}", get)
        if len(data) != expected:
            raise IoError(f"short read: got {len(data)} of {expected} bytes at offset {offset}", where=self.url)
        return data

    def _call(self, what: str, action: Any) -> Any:
        try:
            return action()
        except (BurnpackError, ImportError):  # ImportError: fsspec names the package a scheme needs
            raise
        except FileNotFoundError:
            raise IoError("not found", where=self.url) from None
        except Exception as exc:  # fsspec backends raise their own types (aiohttp, botocore, …)
            if isinstance(exc, ValueError) and "range requests" in str(exc):  # fsspec's HTTP file: a whole file came back
                raise IoError(NO_RANGES, where=self.url) from None
            raise IoError(f"{what} failed: {type(exc).__name__}: {exc}", where=self.url) from exc

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except Exception:  # closing a read-only handle has nothing to lose
                pass
