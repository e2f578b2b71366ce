"""The readers and writers of the file formats: burnpack, safetensors, PyTorch (read; written by
``torch_live``) and npz. Their names, extensions, detection and capabilities are entries of the
one format table, :mod:`burnpack.interop.registry`, which every command reads.

Dtypes map one to one where both sides have them. Safetensors ``BOOL`` / numpy / PyTorch
``bool`` become ``Bool(U8)`` (the store Burn's CPU backend uses; ``bool_store`` picks another)
and every ``Bool(...)`` store becomes ``BOOL`` again; ``Flex32`` is written as ``F32``;
safetensors has no ``QFloat``. Output files are written to a scratch sibling and renamed over
the target, so a failed conversion never leaves a partial file; an existing target is kept
unless ``overwrite=True``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tokenize
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ..codec._generated.metadata import DTYPE_INFO, BoolStore, DType
from ..core.display import plural
from ..core.dtypes import EXTENSION_DTYPES, NATIVE_BOOL, dtype_from_numpy, dtype_from_safetensors, element_size, is_extension_type, numpy_dtype, safetensors_code
from ..core.reader import TensorView, load
from ..core.sidefile import parse_json
from ..core.source import Folder, open_regular
from ..core.tensor import NUMPY_MAX_DIMS
from ..core.tensor import FileRange, le_c_bytes
from ..core.writer import Tensor, Writer
from ._io import PageReleaser, atomic_output, entries_from_arrays, entry_from_array
from ..errors import ConversionError, SafetensorsError, cause, excerpt
from .archive import ZIP_ERRORS, InflateBudget
from .limits import DEFAULT_LIMITS, ReadLimits
from .safetensors import build_header, map_safetensors
from .tensors import Entry, TensorSet, dtype_name, flatten_nested

__all__ = [
    "atomic_output",
    "read_burnpack",
    "read_in_memory",
    "read_npz",
    "read_pytorch_file",
    "npz_notes",
    "read_safetensors_buffer",
    "read_safetensors_file",
    "write_burnpack",
    "write_npz",
    "write_safetensors_file",
]

_METADATA_KEY = "__metadata__"


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------
def read_burnpack(source: str | os.PathLike[str] | bytes | bytearray | memoryview, *, legacy_ok: bool = False) -> TensorSet:
    """A ``.bpk`` path or bytes: entries in data order, ids, metadata and scalars kept.

    An entry of a pack opened from a path names its ``file_range`` (the pack stays open until the
    set is closed), so a burnpack output copies unchanged tensors from the file in the kernel."""
    pack = load(source, legacy_ok=legacy_ok)
    views = pack.tensors()
    views.sort(key=lambda v: (v.data_offsets, v.name))

    def entry(view: TensorView) -> Entry:
        plain = Entry(view.name, view.dtype, view.shape, view.numpy, param_id=view.param_id, byte_len=view.byte_len)
        where = view.file_range
        if where is None or where.length != plain.byte_len:  # a length Burn refuses: numpy() says so
            return plain
        return plain.replace(file_range=where)

    entries = [entry(view) for view in views]
    return TensorSet(entries, dict(pack.metadata), dict(pack.scalars), format="burnpack", closers=[pack.close])


def read_safetensors_file(
    path: str | os.PathLike[str], *, bool_store: str | BoolStore = BoolStore.U8, pages: PageReleaser | None = None,
    folder: Folder | None = None,
) -> TensorSet:
    """A ``.safetensors`` file (validated, memory-mapped); ``__metadata__`` becomes metadata.

    Each entry views the mapping and names its ``file_range`` (the file stays open until the set
    is closed), so a burnpack output copies unchanged tensors from the file in the kernel.
    Taking an entry's elements releases the pages of the one taken before (``pages``, shared
    by the shards of a model); ``folder``: the folder it was reached through (a shard's)."""
    file = open_regular(path, folder=folder)
    try:
        mapping, arrays, metadata = map_safetensors(file)
    except BaseException:
        file.close()
        raise
    pages = pages or PageReleaser()
    base = np.frombuffer(mapping, np.uint8, 1).ctypes.data if len(mapping) else 0

    def entry(name: str, array: np.ndarray) -> Entry:
        offset = array.ctypes.data - base if array.size else 0
        plain = entry_from_array(name, array, bool_store)
        take = plain.numpy

        def load() -> np.ndarray:
            pages.take(mapping, offset, offset + array.nbytes)
            return take()

        same = plain.byte_len == array.nbytes  # the file's bytes as they are (not widened bools)
        return plain.replace(load=load, file_range=FileRange(file, offset, array.nbytes) if same else None)

    entries = [entry(name, array) for name, array in arrays.items()]

    def close() -> None:
        arrays.clear()
        with contextlib.suppress(BufferError):  # arrays a caller kept still view it
            mapping.close()
        file.close()

    return TensorSet(entries, dict(metadata), format="safetensors", closers=[close])


def read_pytorch_file(
    path: Any,
    *,
    top_level_key: str | None = None,
    bool_store: str | BoolStore = BoolStore.U8,
    limits: ReadLimits = DEFAULT_LIMITS,
    folder: Folder | None = None,
) -> TensorSet:
    """A ``torch.save`` file read without torch and without running pickled code (reached
    through ``folder``, a shard's, when given)."""
    from .pytorch import read_pytorch_contents

    arrays, skipped = read_pytorch_contents(path, top_level_key=top_level_key, limits=limits, folder=folder)
    entries = entries_from_arrays(arrays.items(), bool_store)  # tied weights: one array under several names
    return TensorSet(entries, format="pytorch", top_level_key=top_level_key, skipped=skipped)


def read_npz(path: str | os.PathLike[str], *, bool_store: str | BoolStore = BoolStore.U8, limits: ReadLimits = DEFAULT_LIMITS) -> TensorSet:
    """A ``.npz`` archive of ``.npy`` members (no pickle). A 0-d string ``__metadata__`` member
    holding JSON ``{"metadata": {...}, "dtypes": {...}}`` (what :func:`write_npz` adds with
    ``metadata=True``) restores the metadata and the Burn dtypes numpy cannot express (BF16, Bool
    stores, Flex32); without a hint, raw 2-byte items (how numpy saves ml_dtypes' bfloat16) are BF16.

    Each member's ``.npy`` header is checked against the member's declared size before its data
    is read, and compressed members inflate only within the archive's budget (``archive``)."""
    with open_regular(path) as file:  # a file that cannot be opened is the caller's OSError
        try:
            archive = zipfile.ZipFile(file)
            with archive:
                budget = InflateBudget(os.fstat(file.fileno()).st_size, ConversionError, limits)
                arrays = {_npz_name(info): _read_npy(archive, info, budget) for info in archive.infolist()}
        except ConversionError as exc:
            raise ConversionError(f"{path}: {exc}") from None
        except (*ZIP_ERRORS, MemoryError, RecursionError, SyntaxError, tokenize.TokenError) as exc:
            # numpy's header parser tokenizes and literal-evals the header; zipfile seeks where
            # the directory says: corrupt archives surface as any of these
            raise ConversionError(f"{path}: not a readable .npz archive: {cause(exc)}") from None
    return _npz_tensor_set(path, arrays, bool_store)


def _npz_name(info: zipfile.ZipInfo) -> str:
    if not info.filename.endswith(".npy") or info.is_dir():
        raise ConversionError(f"member {excerpt(info.filename)} is not a .npy array")
    return info.filename[:-4]


_NPY_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}


def _read_npy(archive: zipfile.ZipFile, info: zipfile.ZipInfo, budget: InflateBudget) -> np.ndarray:
    """One ``.npy`` member: its header, checked against the member's size, then its data."""
    budget.check(info)
    with archive.open(info) as member:
        version = np.lib.format.read_magic(member)
        if version not in _NPY_HEADER_READERS:
            raise ConversionError(f"member {excerpt(info.filename)} has .npy format version {version}, not 1.0 or 2.0")
        try:
            shape, fortran_order, dtype = _NPY_HEADER_READERS[version](member)
        except (ValueError, TypeError, SyntaxError, RecursionError, tokenize.TokenError) as exc:
            # numpy tokenizes, literal-evals and sorts the header dict: a crafted one fails anywhere
            raise ConversionError(f"member {excerpt(info.filename)} has an unreadable .npy header: {cause(exc)}") from None
        if dtype.hasobject:
            raise ConversionError(f"member {excerpt(info.filename)} holds Python objects, which need pickle")
        if len(shape) > NUMPY_MAX_DIMS or any(dim < 0 for dim in shape) or dtype.itemsize == 0:
            raise ConversionError(f"member {excerpt(info.filename)} has an invalid shape {shape} or dtype {dtype}")
        nbytes = math.prod(shape) * dtype.itemsize
        present = info.file_size - member.tell()
        if nbytes != present:
            raise ConversionError(
                f"member {excerpt(info.filename)}: its header declares {shape} x {dtype} = {nbytes} bytes, "
                f"the member holds {present}"
            )
        data = member.read(nbytes)
    if len(data) != nbytes:
        raise ConversionError(f"member {excerpt(info.filename)} is truncated")
    return np.frombuffer(data, dtype).reshape(shape, order="F" if fortran_order else "C")


def _npz_tensor_set(path: Any, arrays: dict[str, np.ndarray], bool_store: str | BoolStore) -> TensorSet:
    metadata: dict[str, str] = {}
    dtypes: dict[str, Any] = {}
    info = arrays.get(_METADATA_KEY)
    if info is not None and info.ndim == 0 and info.dtype.kind == "U":
        try:
            # From the raw UTF-32 code units: numpy's str() passes code points past U+10FFFF through.
            text = info.astype(info.dtype.newbyteorder("<")).tobytes().decode("utf-32-le").rstrip("\0")
        except UnicodeDecodeError as exc:
            raise ConversionError(f"{path}: {_METADATA_KEY} is not JSON: {exc}") from None
        parsed = parse_json(text, ConversionError, f"{path}: {_METADATA_KEY}")
        meta_part = parsed.get("metadata") or {} if isinstance(parsed, dict) else None
        dtypes_part = parsed.get("dtypes") or {} if isinstance(parsed, dict) else None
        if not isinstance(meta_part, dict) or not isinstance(dtypes_part, dict):
            raise ConversionError(f"{path}: {_METADATA_KEY} must be a JSON object of 'metadata' and 'dtypes' objects")
        metadata = {str(k): str(v) for k, v in meta_part.items()}
        dtypes = dict(dtypes_part)
        del arrays[_METADATA_KEY]
    entries = []
    for name, array in arrays.items():
        try:
            entries.append(_npz_entry(name, array, dtypes.get(name), bool_store))
        except ValueError as exc:  # an unknown dtype hint, a dtype burnpack lacks, a failed cast
            raise ConversionError(f"{path}: member {excerpt(name)}: {exc}") from None
    return TensorSet(entries, metadata, format="npz")


def _npz_entry(name: str, array: np.ndarray, hint: Any, bool_store: str | BoolStore) -> Entry:
    if hint is not None:
        from .tensors import parse_dtype

        dtype = parse_dtype(hint)
        want = numpy_dtype(dtype)
        if array.dtype.kind == "V" and array.dtype.itemsize == want.itemsize:
            array = array.view(want)
        elif array.dtype != want:
            array = array.astype(want)
        return Entry.from_numpy(name, array, dtype=dtype)
    raw = _RAW_ITEMS.get(array.dtype)
    if raw is not None:  # numpy saves ml_dtypes' types (bfloat16) as raw items of their size
        return Entry.from_numpy(name, array.view(numpy_dtype(raw)), dtype=raw)
    if array.dtype.kind == "V":
        raise ValueError(f"raw dtype {excerpt(str(array.dtype))} and no dtype hint")  # a structured one names its fields
    return entry_from_array(name, array, bool_store)


_RAW_ITEMS: dict[np.dtype, DType] = {}
"""Raw items of a ``.npy`` file without a dtype hint → the first ml_dtypes dtype of that size (BF16)."""
for _dtype in EXTENSION_DTYPES:
    _RAW_ITEMS.setdefault(np.dtype(f"V{element_size(_dtype)}"), _dtype)


def read_safetensors_buffer(buffer: memoryview, *, bool_store: str | BoolStore = BoolStore.U8) -> TensorSet:
    """A safetensors file held in memory (validated as a file is)."""
    from .safetensors import parse_safetensors

    arrays, metadata = parse_safetensors(buffer)
    entries = [entry_from_array(n, a, bool_store) for n, a in arrays.items()]
    return TensorSet(entries, dict(metadata), format="safetensors")


def read_in_memory(source: Any, *, top_level_key: str | None = None, bool_store: str | BoolStore = BoolStore.U8) -> TensorSet:
    """Tensors held in Python objects: a ``{name: array}`` mapping, or a torch ``state_dict`` or
    ``nn.Module`` (files, URLs and bytes are the format registry's)."""
    from .torch_live import is_torch_object, read_torch

    if is_torch_object(source):
        return read_torch(source, top_level_key=top_level_key, bool_store=bool_store)
    if isinstance(source, dict) or hasattr(source, "items"):
        root = source
        if top_level_key is not None:
            root = source[top_level_key]
        entries = []
        skipped: dict[str, str] = {}
        for name, value in _flatten_arrays(root, skipped):
            entries.append(entry_from_array(name, np.asarray(value), bool_store))
        return TensorSet(entries, format="memory", top_level_key=top_level_key, skipped=skipped)
    raise TypeError(f"cannot read tensors from a {type(source).__name__}")


def _flatten_arrays(tree: Any, skipped: dict[str, str] | None = None) -> Iterator[tuple[str, Any]]:
    """The arrays of nested dicts, lists and tuples under dotted names; other leaves go into ``skipped``."""
    return flatten_nested(tree, lambda value: isinstance(value, np.ndarray) or hasattr(value, "__array__"), {} if skipped is None else skipped)


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------
Progress = Callable[[int], None]


def _noop(_: int) -> None:
    pass


def burnpack_writer(tset: TensorSet) -> Writer:
    """The format layer's writer for a tensor set (deferred: one tensor in memory at a time;
    an entry still holding its file's bytes is that ``FileRange``, one made in ``Bands`` is
    written band by band)."""
    tensors = []
    for entry in tset.entries:
        if entry.file_range is not None:
            tensors.append(Tensor.deferred(entry.name, entry.dtype, entry.shape, entry.byte_len, entry.file_range, param_id=entry.param_id))
            continue
        bands = entry.bands
        if bands is not None and bands.dtype == numpy_dtype(entry.dtype) and bands.shape == entry.shape:
            tensors.append(Tensor.deferred(entry.name, entry.dtype, entry.shape, entry.byte_len, bands, param_id=entry.param_id))
            continue
        size = element_size(entry.dtype)
        byte_len = entry.byte_len if size is None else entry.numel * size

        def provide(entry: Entry = entry) -> np.ndarray:
            array = entry.checked_numpy()
            if element_size(entry.dtype) is None:
                return np.ascontiguousarray(array).reshape(-1).view(np.uint8)
            return array

        tensors.append(Tensor.deferred(entry.name, entry.dtype, entry.shape, byte_len, provide, param_id=entry.param_id))
    return Writer(tensors, metadata=tset.metadata, scalars=tset.scalars)


def write_burnpack(tset: TensorSet, path: Path, *, overwrite: bool = False, progress: Progress = _noop) -> Path:
    writer = burnpack_writer(tset)
    writer.plan()  # every error before the first byte
    with atomic_output(path, overwrite=overwrite) as stream:
        writer.write_stream(stream, progress=progress)
    return path


def _safetensors_array(entry: Entry) -> tuple[str, Callable[[], np.ndarray]]:
    dtype = entry.dtype
    if dtype.is_bool:
        def load() -> np.ndarray:
            array = entry.numpy()
            if array.dtype != np.bool_:
                if array.size and int(array.max(initial=0)) > 1:
                    raise ConversionError(f"tensor {entry.name!r}: {dtype_name(dtype)} holds values other than 0 and 1")
                array = array.astype(np.bool_)
            return array

        return safetensors_code(dtype) or "", load
    code = safetensors_code(dtype)
    if code is None:
        raise ConversionError(f"tensor {entry.name!r}: safetensors cannot hold {dtype_name(dtype)}")
    return code, entry.numpy


def write_safetensors_file(tset: TensorSet, path: Path, *, overwrite: bool = False, progress: Progress = _noop) -> Path:
    """Streamed, in the ``safetensors`` library's layout; the metadata becomes ``__metadata__``."""
    specs, loaders = [], []
    for entry in tset.entries:
        code, loader = _safetensors_array(entry)
        itemsize = element_size(dtype_from_safetensors(code)) or 0
        specs.append((entry.name, code, entry.shape, entry.numel * itemsize))
        loaders.append(loader)
    try:
        header, order = build_header(specs, tset.metadata or None)
    except SafetensorsError as exc:
        raise ConversionError(str(exc)) from None
    with atomic_output(path, overwrite=overwrite) as stream:
        stream.write(header)
        for index in order:
            array = loaders[index]()
            data = le_c_bytes(array)
            if data.nbytes != specs[index][3]:
                raise ConversionError(f"tensor {specs[index][0]!r}: produced {data.nbytes} bytes, expected {specs[index][3]}")
            stream.write(data)
            progress(data.nbytes)
            del array, data
    return path


def npz_notes(tset: TensorSet, npz_metadata: bool) -> list[str]:
    """What a conversion to a .npz reports: it holds tensors only unless ``npz_metadata``, so say
    what was left out, or where it went, and how the dtypes numpy has no name for were stored."""
    notes: list[str] = []
    if npz_metadata:
        if tset.metadata:
            notes.append(f"{plural(len(tset.metadata), 'metadata entry', 'metadata entries')} written to the __metadata__ member")
        return notes
    if tset.metadata:
        notes.append(
            f"{plural(len(tset.metadata), 'metadata entry', 'metadata entries')} not written: the .npz holds tensors only "
            "(--npz-metadata keeps them in a __metadata__ member)"
        )
    for raw in EXTENSION_DTYPES:
        count = sum(1 for e in tset.entries if e.dtype == raw)
        if count:
            name = dtype_name(raw)
            notes.append(
                f"{plural(count, f'{name} tensor')} written as raw {element_size(raw)}-byte items, as numpy saves ml_dtypes' "
                f"{DTYPE_INFO[raw.variant].numpy} (burnpack reads them back as {name})"
            )
    for e in tset.entries:
        if e.dtype == DType.Flex32:
            notes.append(f"{e.name}: Flex32 written as F32")
        elif e.dtype.is_bool and e.dtype != NATIVE_BOOL:
            notes.append(f"{e.name}: {dtype_name(e.dtype)} written as numpy bool (--npz-metadata records the store)")
    return notes


def write_npz(
    tset: TensorSet, path: Path, *, overwrite: bool = False, compress: bool = False, progress: Progress = _noop, metadata: bool = False
) -> Path:
    """One ``<name>.npy`` member per tensor, written one at a time, and nothing else: BF16 is
    stored as raw 2-byte items, Bool stores as numpy bools, Flex32 as float32. With ``metadata``
    a ``__metadata__`` JSON member that :func:`read_npz` understands also holds the metadata and
    the dtypes numpy cannot name (BF16, Bool stores, Flex32)."""
    hints: dict[str, str] = {}
    for entry in tset.entries:
        if element_size(entry.dtype) is None:
            raise ConversionError(f"tensor {entry.name!r}: .npz cannot hold {dtype_name(entry.dtype)}")
        kept = numpy_dtype(entry.dtype)  # .npy holds numpy's own types, and names no Burn dtype
        if entry.dtype.is_bool or is_extension_type(kept) or dtype_from_numpy(kept) != entry.dtype:
            hints[entry.name] = dtype_name(entry.dtype)
        if entry.name == _METADATA_KEY:
            raise ConversionError(f"a tensor named {_METADATA_KEY!r} cannot be written to .npz")
    mode = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with atomic_output(path, overwrite=overwrite) as stream:
        with zipfile.ZipFile(stream, "w", compression=mode, allowZip64=True) as archive:
            for entry in tset.entries:
                array = entry.numpy()
                if is_extension_type(array.dtype):
                    array = array.view(f"V{array.dtype.itemsize}")
                elif entry.dtype.is_bool and not metadata:
                    array = array != 0
                with archive.open(entry.name + ".npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, array if array.flags.c_contiguous else array.copy(order="C"), allow_pickle=False)
                progress(array.nbytes)
                del array
            if metadata and (tset.metadata or hints):
                info = json.dumps({"metadata": tset.metadata, "dtypes": hints}, ensure_ascii=False, sort_keys=True)
                with archive.open(_METADATA_KEY + ".npy", "w", force_zip64=True) as member:
                    np.lib.format.write_array(member, np.array(info), allow_pickle=False)
    return path
