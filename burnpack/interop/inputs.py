"""Any input a command compares or shows — a ``.bpk``, a file or folder of another registered
format, a URL — opened as one pack-like object (:func:`open_input`)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..codec._generated.layout import MAGIC_BYTES
from ..errors import blame

if TYPE_CHECKING:
    import numpy as np

    from ..core.reader import Pack
    from .format import Format
    from .tensors import Entry, TensorSet


class EntryView:
    """A converted tensor seen through the interface ``diff_packs`` reads."""

    def __init__(self, entry: Entry) -> None:
        self.name = entry.name
        self.dtype = entry.dtype
        self.shape = tuple(entry.shape)
        self.param_id = entry.param_id
        self.data_offsets = (0, 0)
        self.byte_len = entry.byte_len
        self.numel = entry.numel
        self._entry = entry

    def numpy(self) -> np.ndarray:
        return self._entry.numpy()

    def memoryview(self) -> memoryview:
        """The tensor's bytes (as bytes: a buffer of bf16 or another ml_dtypes type has no format code)."""
        import numpy as np

        return np.ascontiguousarray(self.numpy()).reshape(-1).view(np.uint8).data


class FormatTensors:
    """A file read through the interop readers, shaped like a pack for ``diff_packs`` and
    ``inspect``: also its registry ``format``, its tensor names in the reader's (data) order, and
    the entries the reader ``skipped`` (not tensors: path → what it is)."""

    def __init__(self, tset: TensorSet, fmt: Format) -> None:
        self._views = {e.name: EntryView(e) for e in tset.entries}
        self.names = sorted(self._views)
        self.data_order = [e.name for e in tset.entries]
        self.metadata = dict(tset.metadata)
        self.scalars = dict(tset.scalars)
        self.skipped = dict(tset.skipped)
        self.format = fmt

    def tensors(self) -> list[EntryView]:
        return [self._views[n] for n in self.names]

    def __len__(self) -> int:
        return len(self._views)

    def __getitem__(self, name: str) -> EntryView:
        return self._views[name]

    def __contains__(self, name: object) -> bool:
        return name in self._views


def _starts_like_a_pack(path: str) -> bool:
    """A local regular file that starts with burnpack's magic bytes: the native format's sniff
    (the same generated constant), asked before the format table is loaded."""
    try:
        with open(path, "rb") as file:
            return os.path.isfile(path) and file.read(len(MAGIC_BYTES)) == MAGIC_BYTES
    except OSError:
        return False


@contextlib.contextmanager
def open_input(
    path: str,
    readers: dict[str, str] | None = None,
    *,
    from_format: str | None = None,
    crosscheck: bool = True,
    legacy_ok: bool = False,
) -> Iterator[Pack | FormatTensors]:
    """A file, folder or URL of any registered format (``from_format``, else found by content):
    a ``.bpk`` as an open ``Pack`` (read with ``legacy_ok``), any other as a pack-like
    ``FormatTensors`` (``names``, ``tensors()``, ``metadata``, ``scalars``, ``format``); failures
    name ``path``.

    With ``crosscheck``, a local file of another format is read with that format's own library
    where one is installed (``interop.crosscheck``), so that a bug in burnpack's reader of that
    format cannot hide itself in a diff against a file converted with it; without, it is read as
    ``convert`` reads it. ``readers[path]`` says which reader was used."""
    from ..core.remote import is_url

    readers = {} if readers is None else readers
    if from_format is None and not is_url(path) and _starts_like_a_pack(path):
        from ..core.reader import load  # what the registry would choose, without loading its table

        readers[path] = "burnpack"
        with blame(path), load(path, legacy_ok=legacy_ok) as pack:
            yield pack
        return
    from .format import ReadOptions
    from .registry import choose, probe_url, read_tensors

    with blame(path):
        if is_url(path) and from_format is None:  # the probe's first block opens a .bpk: no second request
            fmt, source = probe_url(path)
            if not fmt.native:
                source.close()
        else:
            fmt, source = choose(path, from_format), None
        if fmt.native:
            from ..core.reader import load

            readers[path] = "burnpack"
            with load(source or path, legacy_ok=legacy_ok) as pack:
                yield pack
            return
        independent = None
        if crosscheck and fmt.crosscheck is not None and not is_url(path) and Path(path).is_file():
            independent = fmt.crosscheck(Path(path), ReadOptions())
        if independent is not None:
            tset, readers[path] = independent
        else:
            tset, readers[path] = read_tensors(path, fmt), "burnpack"
        with tset:
            yield FormatTensors(tset, fmt)
