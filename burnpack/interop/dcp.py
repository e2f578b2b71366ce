"""``torch.distributed.checkpoint`` (DCP) folders: read without torch and without running pickled
code, written through torch's own DCP code.

DCP's ``.metadata`` file is a pickle (torch's reader ``pickle.load``\\ s it). Here it is read with
the ``.pt`` reader's allowlisted unpickler (:mod:`burnpack.interop.pytorch`), extended with inert
stand-ins for the classes of ``torch.distributed.checkpoint.metadata`` (``Metadata``,
``TensorStorageMetadata``, ``ChunkStorageMetadata``, ``TensorProperties``, ``MetadataIndex``,
``BytesStorageMetadata``, ``StorageMeta``), ``filesystem._StorageInfo`` and the few values they
hold (``torch.Size``, dtypes, layouts, ``pathlib`` paths): a ``.metadata`` naming anything else
is refused before it is imported or called, so converting a DCP checkpoint from an untrusted
source is as safe as converting a ``.pt``.

Each tensor chunk is a ``torch.save`` record at an offset of a ``.distcp`` file, read by the same
``.pt`` reader; ``read_dcp`` assembles a tensor's chunks (FSDP/DDP shards) into the full tensor
only when that tensor is asked for, so converting to ``.bpk`` holds one tensor at a time. Every
claim of the metadata is checked against the files before anything is allocated: relative paths
name files in the folder (no traversal), records lie inside their file and do not overlap, and
chunks tile their tensor exactly. The folder is closed (:class:`~burnpack.core.source.Folder`):
``.metadata`` and every ``.distcp`` file must resolve inside it, as regular files on disk — a
record file that is a link out of the folder is refused, not followed. Nested state dicts become DCP's flattened dotted names
(``model.fc.weight``, ``optim.state.0.exp_avg``); non-tensor entries are listed in
``TensorSet.skipped``. ``read_dcp_object`` gives the whole nested state (training checkpoints),
its non-tensor entries read by the same allowlist. ``write_dcp`` and ``write_dcp_state`` save
tensors or a whole training state with ``dcp.save`` so that ``dcp.load`` restores them.
"""

from __future__ import annotations

import contextlib
import math
import mmap
import os
import stat
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

import numpy as np

from ..codec._generated.metadata import BoolStore, DType
from ..core.dtypes import dtype_from_torch, numpy_dtype
from ..core.atomic import atomic_folder
from ..errors import BurnpackError, ConversionError, DestinationExists, OutputExistsError, PyTorchReadError, ValidationError, excerpt, shown
from ..core.frameworks import import_torch, numpy_to_torch
from ..core.sidefile import read_side_file
from ..core.source import Folder, open_regular
from ..core.tensor import NUMPY_MAX_DIMS, check_numpy_shape
from ._io import entry_from_array
from .limits import DEFAULT_LIMITS, ReadLimits
from .pytorch import TORCH_DTYPES, PickledObject, describe_leaf, pickled_class, read_pytorch_buffer, unpickle_allowing
from .tensors import Entry, TensorSet

__all__ = ["DcpMetadata", "is_dcp", "read_dcp", "read_dcp_metadata", "read_dcp_object", "write_dcp", "write_dcp_state"]

_METADATA = "torch.distributed.checkpoint.metadata"
_FILESYSTEM = "torch.distributed.checkpoint.filesystem"
_RECORD_CLASSES = (
    (_METADATA, "Metadata"), (_METADATA, "TensorStorageMetadata"), (_METADATA, "BytesStorageMetadata"),
    (_METADATA, "ChunkStorageMetadata"), (_METADATA, "TensorProperties"), (_METADATA, "MetadataIndex"),
    (_METADATA, "StorageMeta"), (_FILESYSTEM, "_StorageInfo"),
)  # fmt: skip
_PATH_CLASSES = ("Path", "PosixPath", "WindowsPath", "PurePath", "PurePosixPath", "PureWindowsPath")
_T = TypeVar("_T")
_I64 = 2**63
"""torch's sizes, offsets and lengths are int64: larger ones are refused before any is used."""


def is_dcp(path: object) -> bool:
    """A folder holding DCP's ``.metadata`` file."""
    return isinstance(path, (str, os.PathLike)) and (Path(path) / ".metadata").is_file()


# --------------------------------------------------------------------------------------------
# The metadata, read with the allowlist
# --------------------------------------------------------------------------------------------
def _dcp_globals() -> dict[tuple[str, str], object]:
    """The stand-ins DCP's metadata may name, on top of the ``.pt`` allowlist (fresh per read)."""

    def memory_format(code: object) -> int:  # _MEM_FORMAT_ENCODING(n): an enum member by value
        if type(code) is not int or not 0 <= code < 8:
            raise PyTorchReadError("malformed memory format")
        return code

    def path(*parts: object) -> str:  # a StorageMeta's checkpoint_id saved as a pathlib path
        if not all(isinstance(part, str) for part in parts):
            raise PyTorchReadError("malformed pathlib path")
        return os.path.join(*(str(part) for part in parts)) if parts else ""

    extra: dict[tuple[str, str], object] = {key: pickled_class(*key) for key in _RECORD_CLASSES}
    extra[_METADATA, "_MEM_FORMAT_ENCODING"] = memory_format
    for module in ("pathlib", "pathlib._local"):
        for name in _PATH_CLASSES:
            extra[module, name] = path
    return extra


@dataclass(frozen=True)
class _Record:
    """A ``torch.save`` record: ``length`` bytes at ``offset`` of a ``.distcp`` file."""

    file: Path
    offset: int
    length: int


@dataclass(frozen=True)
class _Chunk:
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    record: _Record


@dataclass(frozen=True)
class _TensorInfo:
    dtype: DType
    shape: tuple[int, ...]
    chunks: tuple[_Chunk, ...]


@dataclass
class DcpMetadata:
    """What a DCP checkpoint's ``.metadata`` says, checked against its files.

    ``tensors``: fqn → dtype, shape and chunks; ``objects``: fqn → the record of a non-tensor
    entry; ``paths``: fqn → its key path in the nested state (``("model", "layers", 0)``);
    ``closed``: the folder its files must lie in; ``limits``: what its records are read within."""

    folder: Path
    tensors: dict[str, _TensorInfo]
    objects: dict[str, _Record]
    paths: dict[str, tuple[str | int, ...]]
    closed: Folder
    limits: ReadLimits = DEFAULT_LIMITS


def _shown_path(path: tuple[str | int, ...]) -> str:
    return excerpt(".".join(map(str, path)))


def _bad(folder: Path, what: str) -> ConversionError:
    return ConversionError(f"{folder}: malformed DCP metadata: {what}")


def _fields(folder: Path, value: object, name: str) -> dict[str, Any]:
    """The pickled fields of a stand-in of class ``name`` (a dataclass's ``__dict__``, or the
    ``(dict, slots)`` pair of a slotted one)."""
    if not isinstance(value, PickledObject) or not value.type_name.endswith("." + name):
        raise _bad(folder, f"expected a {name}, found {getattr(value, 'type_name', type(value).__name__)}")
    try:
        state = object.__getattribute__(value, "state")
    except AttributeError:
        return {}
    if isinstance(state, tuple) and len(state) == 2 and all(part is None or isinstance(part, dict) for part in state):
        return {**(state[0] or {}), **(state[1] or {})}
    if not isinstance(state, dict):
        return {"__state__": state}
    return state


def _ints(folder: Path, value: object, what: str) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or not all(type(v) is int and 0 <= v < _I64 for v in value):
        raise _bad(folder, f"{what} is not a tuple of non-negative ints below 2**63")
    if len(value) > NUMPY_MAX_DIMS:
        raise ConversionError(f"{folder}: {what} has {len(value)} dimensions; numpy arrays have at most {NUMPY_MAX_DIMS}")
    return tuple(value)


def _dtype(folder: Path, fqn: str, properties: object) -> DType:
    fields = _fields(folder, properties, "TensorProperties")
    state = fields.get("__state__")
    if isinstance(state, tuple) and len(state) >= 2:  # TensorProperties.__getstate__: (dtype, layout, ...)
        dtype, layout = state[0], state[1]
    else:
        dtype, layout = fields.get("dtype"), fields.get("layout", "torch.strided")
    if not isinstance(dtype, str):
        raise _bad(folder, f"{excerpt(fqn)} has no dtype")
    if layout != "torch.strided":
        raise ConversionError(f"{folder}: tensor {excerpt(fqn)}: unsupported layout {shown(layout)}: only dense strided tensors can be read")
    try:
        return dtype_from_torch(dtype)
    except ValueError:
        raise ConversionError(f"{folder}: tensor {excerpt(fqn)}: unsupported dtype {dtype if dtype in TORCH_DTYPES else excerpt(dtype)}: Burn has no such dtype") from None


def _relative_file(folder: Path, name: object) -> Path:
    """A record's file: a plain file name in the folder (DCP writes ``__0_0.distcp``), never a
    path that leaves it."""
    if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise ConversionError(f"{folder}: DCP metadata names the file {shown(name)}, which is not a file in the checkpoint folder")
    return folder / name


def _records(folder: Path, closed: Folder, storage_data: object) -> dict[tuple[str, tuple[int, ...] | None], _Record]:
    """``storage_data`` keyed by (fqn, chunk offsets), each record checked to lie inside its file
    and apart from every other record."""
    if not isinstance(storage_data, dict):
        raise _bad(folder, "storage_data is not a dict")
    records: dict[tuple[str, tuple[int, ...] | None], _Record] = {}
    sizes: dict[Path, int] = {}
    for index, info in dict.items(storage_data):
        where = _fields(folder, index, "MetadataIndex")
        fields = _fields(folder, info, "_StorageInfo")
        fqn, offsets = where.get("fqn"), where.get("offset")
        if not isinstance(fqn, str):
            raise _bad(folder, "a storage index has no fqn")
        if fields.get("transform_descriptors"):
            raise ConversionError(f"{folder}: {excerpt(fqn)} is stored transformed (it has transform_descriptors), which is not supported")
        offset, length = fields.get("offset"), fields.get("length")
        if type(offset) is not int or type(length) is not int or not 0 <= offset < _I64 or not 0 <= length < _I64:
            raise _bad(folder, f"{excerpt(fqn)} has no valid offset and length")
        file = _relative_file(folder, fields.get("relative_path"))
        if file not in sizes:
            sizes[file] = _file_size(folder, closed, file)
        if offset + length > sizes[file]:
            raise ConversionError(
                f"{folder}: {excerpt(fqn)} lies at bytes {offset}..{offset + length} of {excerpt(file.name)}, past its end ({sizes[file]} bytes)"
            )
        key = (fqn, None if offsets is None else _ints(folder, offsets, f"{excerpt(fqn)} chunk offset"))
        records[key] = _Record(file, offset, length)
    spans = sorted((r.file.name, r.offset, r.offset + r.length) for r in records.values())
    for (name_a, _, end_a), (name_b, start_b, _) in zip(spans, spans[1:]):
        if name_a == name_b and start_b < end_a:
            raise ConversionError(f"{folder}: two records of {name_a} overlap at byte {start_b}")
    return records


def _file_size(folder: Path, closed: Folder, file: Path) -> int:
    try:
        with open_regular(file, folder=closed) as handle:
            info = os.fstat(handle.fileno())
    except FileNotFoundError:
        raise ConversionError(f"{folder}: the metadata lists {excerpt(file.name)}, which does not exist") from None
    except OSError as exc:
        raise ConversionError(f"{folder}: cannot open {excerpt(file.name)}: {exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ConversionError(f"{folder}: {excerpt(file.name)} is not a regular file")
    return info.st_size


def _path(folder: Path, fqn: str, value: object) -> tuple[str | int, ...]:
    if value is None:
        return (fqn,)
    if not isinstance(value, tuple) or not value or not all(type(p) is str or (type(p) is int and p >= 0) for p in value):
        raise _bad(folder, f"the key path of {excerpt(fqn)} is not a tuple of names and indices")
    return value


def read_dcp_metadata(path: str | os.PathLike[str], *, limits: ReadLimits = DEFAULT_LIMITS) -> DcpMetadata:
    """A DCP checkpoint's ``.metadata``, unpickled with the allowlist (nothing in it runs) and
    checked against the folder's files: every record inside its file, no two overlapping, every
    tensor's chunks inside its shape and adding up to it, each chunk's record large enough for
    its elements — so that what is later allocated is paid for by bytes really present.
    ``.metadata`` is read as a side file: a regular file of at most ``limits.max_metadata_bytes``."""
    folder = Path(path)
    closed = Folder(folder)
    try:
        data = read_side_file(folder / ".metadata", max_bytes=limits.max_metadata_bytes, lift="max_metadata_bytes", folder=closed)
    except OSError as exc:
        if exc.errno is None:  # over the cap: the side-file reader's own error says so
            raise
        raise ConversionError(f"{folder}: not a torch.distributed.checkpoint folder (no readable .metadata: {exc.strerror})") from None
    try:
        root = unpickle_allowing(data, _dcp_globals())
    except PyTorchReadError as exc:  # UnsafePickleError included: refused before anything ran
        raise ConversionError(f"{folder}: cannot read its metadata: {exc}") from exc
    fields = _fields(folder, root, "Metadata")
    items = fields.get("state_dict_metadata")
    if not isinstance(items, dict):
        raise _bad(folder, "state_dict_metadata is not a dict")
    planner = fields.get("planner_data")
    planner = planner if isinstance(planner, dict) else {}
    records = _records(folder, closed, fields.get("storage_data") or {})
    tensors: dict[str, _TensorInfo] = {}
    objects: dict[str, _Record] = {}
    paths: dict[str, tuple[str | int, ...]] = {}
    for fqn, item in dict.items(items):
        if not isinstance(fqn, str):
            raise _bad(folder, f"a state dict key is a {type(fqn).__name__}")
        paths[fqn] = _path(folder, fqn, dict.get(planner, fqn))
        if isinstance(item, PickledObject) and item.type_name.endswith(".BytesStorageMetadata"):
            record = records.get((fqn, None))
            if record is None:
                raise ConversionError(f"{folder}: entry {excerpt(fqn)} has no record in the metadata's storage_data")
            objects[fqn] = record
            continue
        tensors[fqn] = _tensor_info(folder, fqn, _fields(folder, item, "TensorStorageMetadata"), records)
    return DcpMetadata(folder, tensors, objects, paths, closed, limits)


def _tensor_info(folder: Path, fqn: str, fields: dict[str, Any], records: Mapping[Any, _Record]) -> _TensorInfo:
    dtype = _dtype(folder, fqn, fields.get("properties"))
    shape = _ints(folder, fields.get("size"), f"{excerpt(fqn)} size")
    itemsize = numpy_dtype(dtype).itemsize
    try:  # an empty shape whose other dimensions numpy cannot index passes the element count
        check_numpy_shape(fqn, shape, itemsize)
    except ValidationError as exc:
        raise ConversionError(f"{folder}: {exc.payload}") from None
    chunk_list = fields.get("chunks")
    if not isinstance(chunk_list, list):
        raise _bad(folder, f"{excerpt(fqn)} has no chunk list")
    chunks = []
    covered = 0
    for chunk in chunk_list:
        cf = _fields(folder, chunk, "ChunkStorageMetadata")
        offsets = _ints(folder, cf.get("offsets"), f"{excerpt(fqn)} chunk offset")
        sizes = _ints(folder, cf.get("sizes"), f"{excerpt(fqn)} chunk size")
        if len(offsets) != len(shape) or len(sizes) != len(shape) or any(o + s > d for o, s, d in zip(offsets, sizes, shape)):
            raise _bad(folder, f"{excerpt(fqn)} has a chunk at {list(offsets)} of size {list(sizes)} outside its shape {list(shape)}")
        record = records.get((fqn, offsets))
        if record is None:
            raise ConversionError(f"{folder}: the chunk of {excerpt(fqn)} at {list(offsets)} has no record in the metadata's storage_data")
        if math.prod(sizes) * itemsize > record.length:
            raise ConversionError(f"{folder}: the chunk of {excerpt(fqn)} at {list(offsets)} needs more bytes than its record's {record.length}")
        covered += math.prod(sizes)
        chunks.append(_Chunk(offsets, sizes, record))
    if covered != math.prod(shape):
        raise ConversionError(f"{folder}: the chunks of {excerpt(fqn)} hold {covered} elements, its shape {list(shape)} {math.prod(shape)}")
    return _TensorInfo(dtype, shape, tuple(chunks))


# --------------------------------------------------------------------------------------------
# The records
# --------------------------------------------------------------------------------------------
def _with_record(meta: DcpMetadata, fqn: str, record: _Record, use: Callable[[object], _T], *, copy: bool = False) -> _T:
    """``use`` of what the ``torch.save`` record holds (read with the ``.pt`` allowlist), while
    the file is mapped; ``use`` copies what it keeps, unless the arrays are copies (``copy``)."""
    folder = meta.folder
    try:
        with open_regular(record.file, folder=meta.closed) as handle, contextlib.ExitStack() as stack:
            if record.offset + record.length > os.fstat(handle.fileno()).st_size:
                raise ConversionError(f"{folder}: {excerpt(record.file.name)} shrank below the record of {excerpt(fqn)}")
            mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
            stack.callback(_close, mapped)
            window = memoryview(mapped)[record.offset : record.offset + record.length]
            try:
                return use(read_pytorch_buffer(window, meta.limits, copy=copy))
            finally:
                window.release()
    except PyTorchReadError as exc:
        raise ConversionError(f"{folder}: {excerpt(fqn)} (in {excerpt(record.file.name)} at byte {record.offset}): {exc}") from exc
    except OSError as exc:
        raise ConversionError(f"{folder}: cannot read {excerpt(fqn)} from {excerpt(record.file.name)}: {exc}") from exc


def _close(mapped: mmap.mmap) -> None:
    with contextlib.suppress(BufferError):  # an array a caller kept still views it
        mapped.close()


def _load_tensor(meta: DcpMetadata, fqn: str) -> np.ndarray:
    """The full tensor, its chunks placed where the metadata says (each element written once)."""
    info = meta.tensors[fqn]
    want = numpy_dtype(info.dtype)
    full = np.empty(info.shape, want)
    written = np.zeros(info.shape, np.bool_)
    for chunk in info.chunks:
        region = tuple(slice(o, o + s) for o, s in zip(chunk.offsets, chunk.sizes))

        def place(value: object, chunk: _Chunk = chunk, region: tuple[slice, ...] = region) -> None:
            if not isinstance(value, np.ndarray) or value.shape != chunk.sizes or value.dtype != want:
                got = f"{value.dtype} {list(value.shape)}" if isinstance(value, np.ndarray) else type(value).__name__
                raise ConversionError(f"{meta.folder}: the chunk of {excerpt(fqn)} at {list(chunk.offsets)} holds {got}, not {want} {list(chunk.sizes)}")
            if written[region].any():
                raise ConversionError(f"{meta.folder}: chunks of {excerpt(fqn)} overlap at {list(chunk.offsets)}")
            full[region] = value
            written[region] = True

        _with_record(meta, fqn, chunk.record, place)
    return full


def _load_object(meta: DcpMetadata, fqn: str) -> Any:
    """A non-tensor entry, its arrays copied out of the mapping so that the file can go."""
    return _with_record(meta, fqn, meta.objects[fqn], lambda value: value, copy=True)


def read_dcp(
    path: str | os.PathLike[str],
    *,
    bool_store: str | BoolStore = "U8",
    top_level_key: str | None = None,
    limits: ReadLimits = DEFAULT_LIMITS,
) -> TensorSet:
    """The tensors of a DCP checkpoint, each loaded only when asked for (``top_level_key``
    takes the tensors under ``"<key>."``, with that prefix removed); the non-tensor entries are
    listed in the set's ``skipped`` with what they hold. Needs no torch. ``limits``: the
    ``.metadata`` file's size (see :func:`read_dcp_metadata`) and the records' pickle caps."""
    folder = Path(path)
    if not is_dcp(folder):
        raise ConversionError(f"{folder}: not a torch.distributed.checkpoint folder (no .metadata file)")
    meta = read_dcp_metadata(folder, limits=limits)
    prefix = f"{top_level_key}." if top_level_key is not None else ""
    entries = []
    for fqn, info in meta.tensors.items():
        if fqn.startswith(prefix):
            prototype = entry_from_array(fqn, np.empty((0,), numpy_dtype(info.dtype)), bool_store)
            entries.append(Entry(fqn[len(prefix) :], prototype.dtype, info.shape, _loader(meta, fqn, bool_store)))
    if prefix and not entries:
        raise ConversionError(f"{folder}: no tensors under {top_level_key!r}")
    skipped = {fqn[len(prefix) :]: _describe_object(meta, fqn) for fqn in meta.objects if fqn.startswith(prefix)}
    return TensorSet(entries, {}, format="dcp", top_level_key=top_level_key, skipped=skipped)


def _describe_object(meta: DcpMetadata, fqn: str) -> str:
    try:
        return _with_record(meta, fqn, meta.objects[fqn], describe_leaf)
    except BurnpackError as exc:
        return f"a pickled object this reader does not read ({exc})"


def _loader(meta: DcpMetadata, fqn: str, bool_store: str | BoolStore) -> Callable[[], np.ndarray]:
    def load() -> np.ndarray:
        return entry_from_array(fqn, _load_tensor(meta, fqn), bool_store).numpy()

    return load


def read_dcp_object(path: str | os.PathLike[str], *, limits: ReadLimits = DEFAULT_LIMITS) -> Any:
    """The whole nested state of a DCP checkpoint, as :func:`~burnpack.interop.pytorch.read_pytorch_object`
    returns a ``torch.save`` file's: tensors as numpy arrays, other entries read with the same
    allowlist, nested along the key paths DCP recorded (list items by index). Needs no torch."""
    meta = read_dcp_metadata(path, limits=limits)
    _check_distinct_paths(meta.folder, meta.paths)
    values: dict[str, Any] = {fqn: _load_tensor(meta, fqn) for fqn in meta.tensors}
    values.update((fqn, _load_object(meta, fqn)) for fqn in meta.objects)
    state: dict[Any, Any] = {}
    limit = len(values)
    room = limit + sum(map(len, meta.paths.values()))
    for fqn, value in values.items():
        room -= _set_element(meta.folder, state, meta.paths[fqn], value, limit, room)
    return state


_LEAF, _VIA = object(), object()


def _check_distinct_paths(folder: Path, paths: Mapping[str, tuple[str | int, ...]]) -> None:
    """No entry's key path equals another's or runs through it (nesting would drop one of them).
    A trie of the paths: work linear in their total length."""
    trie: dict[Any, Any] = {}
    for fqn, path in paths.items():
        node = trie
        for key in path:
            if _LEAF in node:
                raise _bad(folder, f"the key path of {excerpt(fqn)} runs through {excerpt(node[_LEAF])}")
            node.setdefault(_VIA, fqn)
            node = node.setdefault((type(key), key), {})
        if _LEAF in node:
            raise _bad(folder, f"{excerpt(fqn)} and {excerpt(node[_LEAF])} are both at key path {_shown_path(path)}")
        if _VIA in node:
            raise _bad(folder, f"the key path of {excerpt(node[_VIA])} runs through {excerpt(fqn)}")
        node[_LEAF] = fqn


def _set_element(folder: Path, root: dict[Any, Any], path: tuple[str | int, ...], value: Any, limit: int, room: int) -> int:
    """Put ``value`` at ``path`` as DCP's ``unflatten_state_dict`` does: a dict under a name, a list
    under an index (grown with None up to it); the list slots added are returned.

    An index beyond the entry count ``limit`` is refused, and so is growing lists by more than
    ``room`` slots: the caller grants all lists together the key paths' length (every slot DCP
    fills holds an entry or a container on an entry's path) plus the entry count (for holes: the
    empty containers DCP records nothing for). Without that bound one key path of n indices n - 1
    grew n lists to n slots each: n * n from metadata of size n."""
    container: Any = root
    added = 0
    for key, following in zip(path, (*path[1:], None)):
        if isinstance(container, list):
            if type(key) is not int or key >= limit:
                raise _bad(folder, f"key path {_shown_path(path)} indexes a list with {shown(key)}")
            added += max(key + 1 - len(container), 0)
            if added > room:
                raise _bad(folder, f"key path {_shown_path(path)} grows its lists by more list slots than the entries' key paths name")
            container.extend([None] * (key + 1 - len(container)))
        elif not isinstance(container, dict):
            raise _bad(folder, f"key path {_shown_path(path)} goes through a {type(container).__name__}")
        if following is None:
            container[key] = value
        else:
            current = container[cast(int, key)] if isinstance(container, list) else container.get(key)
            if current is None:
                current = {} if type(following) is str else []
                container[key] = current
            container = current
    return added


# --------------------------------------------------------------------------------------------
# Writing, through torch's DCP code
# --------------------------------------------------------------------------------------------
@contextlib.contextmanager
def _quiet_dcp() -> Iterator[Any]:
    """torch's DCP module, with its warnings about running without a process group silenced."""
    import_torch()
    import torch.distributed.checkpoint as dcp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", FutureWarning)
        yield dcp


def write_dcp(tset: TensorSet, folder: Path, *, overwrite: bool = False, progress: Callable[[int], None] = lambda n: None) -> Path:
    """A DCP checkpoint of the tensors (flat dotted names) that ``dcp.load`` restores. Metadata,
    scalars and param ids have no place in it (the converter reports them as dropped)."""
    state = {}
    for entry in tset.entries:
        if entry.dtype.is_quantized:
            raise ConversionError(f"tensor {entry.name!r}: a DCP checkpoint cannot hold {entry.dtype!r}")
        array = entry.numpy()
        if array.dtype != numpy_dtype(entry.dtype):
            array = array.astype(numpy_dtype(entry.dtype))
        state[entry.name] = numpy_to_torch(array, entry.dtype, name=entry.name, copy=False)
        progress(array.nbytes)
    return write_dcp_state(state, folder, overwrite=overwrite)


def write_dcp_state(state: dict[str, Any], folder: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
    """``dcp.save`` of a (nested) state dict of torch tensors, written to a scratch folder beside
    ``folder`` and put in place as a whole (:func:`~burnpack.core.atomic.atomic_folder`), so a
    failure or an interrupt leaves no half-written checkpoint; an existing ``folder`` that is not
    empty is replaced only with ``overwrite``. torch's failures (its ``CheckpointException`` is a
    ``BaseException``) are :class:`ConversionError`\\ s."""
    folder = Path(folder)
    if folder.exists() and not overwrite and not (folder.is_dir() and not any(folder.iterdir())):
        raise OutputExistsError(folder)
    try:
        with atomic_folder(folder, replace=overwrite) as scratch:
            try:
                with _quiet_dcp() as dcp:
                    dcp.save(state, checkpoint_id=scratch, no_dist=True)
            except BaseException as exc:
                if isinstance(exc, (BurnpackError, KeyboardInterrupt, SystemExit, GeneratorExit, ImportError)):
                    raise
                raise ConversionError(f"{folder}: dcp.save failed: {type(exc).__name__}: {exc}") from exc
    except DestinationExists:
        raise OutputExistsError(folder, "appeared while converting; nothing was replaced") from None
    return folder
