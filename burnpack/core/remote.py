"""Packs at URLs and in object stores (``https://``, ``s3://``, ``gs://``, ``hf://``, …) through
fsspec, an optional extra: ``pip install 'burnpack[remote]'``.

Opening costs one size request and one range request: the first 64 KiB are fetched at once,
which holds the header and the metadata of nearly every pack. Each tensor is then one range
request of exactly its bytes; bulk reads coalesce neighbouring tensors into large requests.
Every failure (HTTP error, timeout, a server that sends too few bytes) is a burnpack ``IoError``.

Every request is bounded: it fails after ``idle_timeout`` seconds without a byte (for HTTP; other
backends take their own timeouts in ``storage_options``) and after ``deadline`` seconds in all,
however slowly the server keeps sending. On HTTP and every asynchronous backend (s3fs, gcsfs,
…) the deadline cancels the request itself; a synchronous backend's call cannot be cancelled
from outside, so there the deadline ends our wait and the call is left to the backend's timeouts. An HTTP response body is read up to the bytes asked for
and one more: a server that sends more is an ``IoError``, never a download of what it sends.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeGuard

from ..errors import BurnpackError, IoError, OptionError
from .source import BULK_BLOCK, BULK_GAP, coalesce

__all__ = [
    "DEADLINE",
    "HEAD_BLOCK",
    "IDLE_TIMEOUT",
    "NO_RANGES",
    "PARALLEL_BLOCK",
    "PARALLEL_REQUESTS",
    "REMOTE_EXTRA_HINT",
    "FsspecSource",
    "is_url",
]

REMOTE_EXTRA_HINT = "reading URLs needs fsspec: pip install 'burnpack[remote]'"
"""What to install when fsspec is missing, as the error says it."""
NO_RANGES = (
    "the server does not answer range requests (it sends the whole file each time), so its tensors cannot be "
    "read one by one; download the file (e.g. curl -O URL) and read the local copy"
)
"""The refusal of a server that ignores range requests, and what to do instead."""
HEAD_BLOCK = 64 << 10
"""Bytes fetched by the first request: the header plus metadata of up to 64 KiB - 10."""
IDLE_TIMEOUT = 60.0
"""Default seconds an HTTP request may wait for the connection or the next byte."""
DEADLINE = 600.0
"""Default seconds one request (a size query or a range of at most 64 MiB) may take in all."""
PARALLEL_REQUESTS = 4
"""Ranged GETs a bulk read keeps in flight at once over HTTP."""
PARALLEL_BLOCK = 16 << 20
"""Largest block of neighbouring ranges one of those GETs asks for (a larger range is its own):
smaller blocks than other sources' keep more requests in flight."""
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://")
_READ_CHUNK = 1 << 20


def is_url(value: object) -> TypeGuard[str]:
    r"""Whether ``value`` is a URL: ``scheme://…`` (a Windows drive path like ``C:\x`` is not one).

    Args:
        value: Anything ``load`` was given.

    Returns:
        True for a URL string.
    """
    return isinstance(value, str) and "://" in value and _URL.match(value) is not None  # the test first: a path is the usual answer


class FsspecSource:
    """A remote file served as byte ranges, through fsspec.

    Pass a source made with other limits to ``burnpack.load`` in place of the URL.

    Args:
        url: The file's URL (``https://``, ``s3://``, ``gs://``, ``hf://``, …).
        storage_options: Options of fsspec's filesystem for the URL.
        idle_timeout: Seconds without a byte on an HTTP connection before a request fails
            (``IDLE_TIMEOUT`` by default, unless ``storage_options`` give aiohttp's
            ``client_kwargs`` themselves).
        deadline: Seconds for one whole request, on every backend (``DEADLINE`` by default).
    """

    def __init__(
        self,
        url: str,
        storage_options: Mapping[str, Any] | None = None,
        *,
        idle_timeout: float = IDLE_TIMEOUT,
        deadline: float = DEADLINE,
    ) -> None:
        import threading  # (paid by a remote source, not by every command's start)

        try:
            import fsspec
        except ImportError:
            raise ModuleNotFoundError(REMOTE_EXTRA_HINT, name="fsspec") from None
        if not idle_timeout > 0 or not deadline > 0:
            raise OptionError(f"idle_timeout and deadline must be positive seconds, not {idle_timeout!r} and {deadline!r}")
        options = dict(storage_options or {})
        self._http = url.split("://", 1)[0].lower() in ("http", "https")  # ranged GETs of our own
        if self._http and "client_kwargs" not in options:
            import aiohttp

            options["client_kwargs"] = {"timeout": aiohttp.ClientTimeout(sock_connect=idle_timeout, sock_read=idle_timeout)}
        self.url = url
        self.deadline = deadline
        self._lock = threading.Lock()
        self._head = b""
        self._file: Any = None
        self._closed = False
        self._fs, self._path = self._call("open", lambda: fsspec.core.url_to_fs(url, **options))
        self._async = bool(getattr(self._fs, "async_impl", False))  # coroutines: cancelled at the deadline
        if self._http or self._async:
            size = self._call("size request", lambda: self._sync(self._fs._info, self._path)["size"])
        else:
            self._file = self._call("open", lambda: self._bounded(lambda: self._fs.open(self._path, "rb", cache_type="none")))
            size = self._file.size
        if not isinstance(size, int):
            self.close()
            raise IoError("the server does not report the file's size", where=url)
        self._size = size

    @property
    def size(self) -> int:
        """The file's size in bytes, as the server reports it."""
        return self._size

    def buffer(self) -> None:
        """Remote files are read by range: no zero-copy window."""
        return None

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset``: one range request (the first block, with the header, is kept).

        Args:
            offset: The first byte.
            length: How many bytes.

        Returns:
            The bytes.

        Raises:
            IoError: The request fails, times out, or the server answers another length.
        """
        if offset + length <= len(self._head):
            return self._head[offset : offset + length]
        if offset == 0 and not self._head:
            self._head = self._fetch(0, HEAD_BLOCK)
            return self._head[:length] if length <= len(self._head) else self._head + self._fetch(len(self._head), length - len(self._head))
        return self._fetch(offset, length)

    def read_ranges(self, ranges: Sequence[tuple[int, int]]) -> list[memoryview]:
        """Every range, fetched in blocks of neighbouring ranges (one request per block; over HTTP and
        asynchronous backends up to ``PARALLEL_REQUESTS`` blocks at a time).

        Args:
            ranges: ``(offset, length)`` pairs.

        Returns:
            Each range's bytes, in the order asked.

        Raises:
            IoError: A request fails, times out, or the server answers another length.
        """
        out: list[memoryview] = [memoryview(b"")] * len(ranges)
        cancellable = self._http or self._async
        blocks = coalesce(ranges, max_gap=BULK_GAP, max_block=PARALLEL_BLOCK if cancellable else BULK_BLOCK)
        if cancellable and len(blocks) > 1:
            data = self._call("read of several ranges", lambda: self._sync_all([(start, end - start) for start, end, _ in blocks]))
        else:
            data = [self._fetch(start, end - start) for start, end, _ in blocks]
        for (start, _, members), fetched in zip(blocks, data):
            block = memoryview(fetched if isinstance(fetched, bytearray) else bytearray(fetched))  # writable, as read_coalesced's
            for i in members:
                offset, length = ranges[i]
                out[i] = block[offset - start : offset - start + length]
        return out

    def _fetch(self, offset: int, length: int) -> bytes:
        expected = max(0, min(length, self._size - offset))
        if expected == 0:
            return b""

        def get() -> bytes:
            if self._closed:
                raise IoError("the remote file is closed", where=self.url)
            if self._http:
                return self._sync(_http_range, self._fs, self._path, offset, expected)
            if self._async:
                return self._sync(_backend_range, self._fs, self._path, offset, expected)

            def read() -> bytes:
                with self._lock:  # taken on the worker: a read left running past its deadline still holds it
                    self._file.seek(offset)
                    return self._file.read(expected)

            return self._bounded(read)

        data = self._call(f"read of bytes {offset}..{offset + expected}", get)
        if len(data) != expected:
            raise IoError(f"short read: got {len(data)} of {expected} bytes at offset {offset}", where=self.url)
        return data

    def _sync_all(self, ranges: Sequence[tuple[int, int]]) -> list[bytearray]:
        """Ranged reads of every ``(offset, length)``, :data:`PARALLEL_REQUESTS` at a time on the
        filesystem's loop, each bounded as ``_sync`` bounds one; the first failure raises."""
        import asyncio  # (paid by a remote read, not by every command: the module imports ssl, sockets...)

        from fsspec.asyn import sync

        if self._closed:
            raise IoError("the remote file is closed", where=self.url)
        gate = asyncio.Semaphore(PARALLEL_REQUESTS)
        fetch = _http_range if self._http else _backend_range

        async def one(offset: int, length: int) -> bytearray:
            length = max(0, min(length, self._size - offset))
            if length == 0:
                return bytearray()
            async with gate:
                try:
                    data = await asyncio.wait_for(fetch(self._fs, self._path, offset, length), self.deadline)
                except asyncio.TimeoutError as exc:
                    if type(exc) is asyncio.TimeoutError:  # wait_for's own: the deadline (aiohttp's idle timeout is a subclass)
                        raise IoError(f"no complete answer within the {self.deadline} s deadline", where=self.url) from None
                    raise IoError(f"{type(exc).__name__}: no byte within the idle timeout", where=self.url) from None
            if len(data) != length:
                raise IoError(f"short read: got {len(data)} of {length} bytes at offset {offset}", where=self.url)
            return data

        async def run() -> list[bytearray]:
            tasks = [asyncio.ensure_future(one(offset, length)) for offset, length in ranges]
            try:
                return list(await asyncio.gather(*tasks))
            finally:
                for task in tasks:  # the first failure: the others stop instead of downloading on
                    task.cancel()

        return sync(self._fs.loop, run)

    def _sync(self, coroutine: Callable[..., Any], *args: Any) -> Any:
        """Run one of the filesystem's coroutines on its loop, cancelled after the deadline."""
        import asyncio

        from fsspec.asyn import FSTimeoutError, sync

        async def run() -> Any:
            try:
                return await coroutine(*args)
            except asyncio.TimeoutError as exc:  # aiohttp's idle timeout (the deadline cancels instead)
                raise IoError(f"{type(exc).__name__}: no byte within the idle timeout", where=self.url) from None

        try:
            return sync(self._fs.loop, run, timeout=self.deadline)
        except FSTimeoutError:
            raise IoError(f"no complete answer within the {self.deadline} s deadline", where=self.url) from None

    def _bounded(self, action: Callable[[], Any]) -> Any:
        """``action()`` of a backend without a loop we can cancel on: waited for up to the deadline
        on a daemon thread (left to the backend's own timeouts after that)."""
        outcome: list[Any] = []

        def run() -> None:
            try:
                outcome.append((True, action()))
            except BaseException as exc:  # handed to the caller
                outcome.append((False, exc))

        import threading

        worker = threading.Thread(target=run, daemon=True)
        worker.start()
        worker.join(self.deadline)
        if not outcome:
            raise IoError(f"no complete answer within the {self.deadline} s deadline", where=self.url)
        ok, value = outcome[0]
        if not ok:
            raise value
        return value

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
        """Close the remote file; reading afterwards raises ``IoError``."""
        self._closed = True
        self._file, file = None, self._file
        if file is not None:
            try:
                file.close()
            except Exception:  # closing a read-only handle has nothing to lose
                pass


async def _backend_range(fs: Any, path: str, offset: int, length: int) -> bytearray:
    """``length`` bytes at ``offset`` from an asynchronous backend's ranged read (writable, as
    ``_http_range``'s)."""
    return bytearray(await fs._cat_file(path, start=offset, end=offset + length))


async def _http_range(fs: Any, url: str, offset: int, length: int) -> bytearray:
    """``length`` bytes at ``offset`` with one ranged GET, reading at most ``length + 1`` bytes
    of the body whatever the server sends (fsspec's own fetch reads a 206 body to its end)."""
    kwargs = dict(fs.kwargs)
    headers = {**kwargs.pop("headers", {}), "Range": f"bytes={offset}-{offset + length - 1}"}
    session = await fs.set_session()
    async with session.get(fs.encode_url(url), headers=headers, **kwargs) as response:
        if response.status == 404:
            raise FileNotFoundError(url)
        response.raise_for_status()
        ranged = response.status == 206
        if not ranged and offset > 0:
            raise IoError(f"HTTP {response.status} to a range request: {NO_RANGES}", where=url)
        limit = length + 1 if ranged else length  # a whole file from byte 0: its first bytes are the range
        chunks: list[bytes] = []
        got = 0
        while got < limit:
            chunk = await response.content.read(min(limit - got, _READ_CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > length:
            raise IoError(f"the server sent more than the {length} bytes asked for at offset {offset}", where=url)
        return bytearray().join(chunks)  # writable: arrays and torch tensors of a bulk read may view it
