"""Read PyTorch checkpoints (``.pt`` / ``.pth``) without torch and without running pickled code.

A ``torch.save`` file is a pickle, and unpickling calls whatever the file names, so ``pickle.load``
(or ``torch.load(weights_only=False)``) on a downloaded checkpoint can execute arbitrary code.
Here every global the pickle asks for is looked up in an allowlist of inert stand-ins (the tensor
and parameter rebuild functions, storage types, ``OrderedDict``, ``torch.Size``, ``torch.device``,
dtype names); anything else raises :class:`UnsafePickleError` before it is imported or called.
What an unpickling returns is plain data (None, bool, int, float, str, bytes, containers of them,
numpy scalars this reader built) and this reader's frozen stand-ins: the allowlisted callables are
wrapped so that no opcode (BUILD, ``__setstate__``, attribute writes) can change them, take exactly
the parameters of what they stand for, and never appear in a result — downstream code duck-types
values (``np.asarray``), so an object a file could shape is an attack surface.

The three layouts Burn's ``burn-store`` PyTorch reader knows are recognised:

* zip (torch >= 1.6): ``<name>/data.pkl`` plus one raw record ``<name>/data/<key>`` per storage
  and an optional ``<name>/byteorder``;
* legacy stream (torch 0.1.10-1.5, or ``_use_new_zipfile_serialization=False``): pickles of the
  magic number, the protocol version and the system info, then the object pickle, then the
  pickled list of storage keys, then each storage as an int64 element count and its bytes;
* tar (torch < 0.1.10): members ``sys_info``, ``storages`` (storages, then storage views),
  ``tensors`` (shapes, strides, offsets) and ``pickle``.

Tensors come back as read-only numpy arrays: views of their storage when the PyTorch view is
C-contiguous, C-contiguous copies otherwise. Deliberate differences from Burn: strides are
honoured (Burn reads ``prod(shape)`` consecutive elements from the storage offset, which is wrong
for transposed or expanded views), and a view reaching past its storage is an error (Burn pads it
with zeros).
"""

from __future__ import annotations

import collections
import contextlib
import io
import math
import mmap
import os
import pickle
import pickletools
import re
import struct
import sys
import tarfile
import types
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO, Literal, Unpack, cast

import numpy as np
from numpy.lib.stride_tricks import as_strided

from ..codec._generated.metadata import BOOL_STORE_INFO, DTYPE_INFO
from ..core.dtypes import NATIVE_BOOL, dtype_from_torch, numpy_dtype, numpy_dtype_named
from ..errors import PyTorchReadError, UnsafePickleError, cause, excerpt, excerpts
from ..core.sidefile import MAX_INT_DIGITS, is_bounded_int
from ..core.source import Folder, open_regular
from ..core.tensor import NUMPY_MAX_DIMS
from .archive import ZIP_ERRORS, InflateBudget
from .limits import DEFAULT_LIMITS, PICKLE_LIMITS, ReadCaps, ReadLimits
from .tensors import not_a_tensor

__all__ = [
    "PickledObject", "describe_leaf", "pickled_class", "read_pytorch", "read_pytorch_buffer", "read_pytorch_contents",
    "read_pytorch_object", "unpickle_allowing",
]  # fmt: skip

_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
_LEGACY_PROTOCOL = 1001
_NOT_PYTORCH = (
    "not a PyTorch checkpoint: expected a zip archive (torch >= 1.6), a tar archive "
    "(torch < 0.1.10) or a legacy stream starting with torch's magic number"
)
# Sizes, strides and offsets are bounded so that they stay exact in numpy's intp once scaled by
# an element size of up to 8 bytes.
_MAX_INDEX = np.iinfo(np.intp).max // 8
# Nesting is bounded for flattening (``max_pickle_depth``): a pickle can build cyclic dicts.
# A dict shared at every nesting level multiplies the dotted paths (a 1.4 KB pickle can name
# millions of tensors). Every entry written out costs the pickle at least a byte, so walking more
# entries than the file has bytes (plus this slack) can only come from sharing, and is refused.
_ENTRY_SLACK = 4096
# Views that repeat elements (stride 0, overlapping strides) are copied to C order; the copies of
# one checkpoint may exceed its storages' bytes by at most ``max_view_expansion``.


class _FrozenClass(type):
    """The type of every stand-in class: its attributes cannot be set. BUILD on a class calls the
    ``__setstate__`` it finds on it, and the class's own is its instances' — a plain function that
    would take the state for ``self`` (an ``OrderedDict`` given the attribute ``state``). This
    property is found first, and refuses."""

    def __setattr__(cls, name: str, value: object) -> None:
        raise AttributeError(f"{cls.__name__} is read-only")

    def __delattr__(cls, name: str) -> None:
        raise AttributeError(f"{cls.__name__} is read-only")

    @property
    def __setstate__(cls) -> Callable[[object], None]:
        return _no_state


def _no_state(state: object) -> None:
    raise PyTorchReadError("the reader's objects are read-only: a pickle cannot give them state")


class _Frozen(metaclass=_FrozenClass):
    """Base for objects a pickle can reach: without ``__dict__``, attribute writes or state, a
    BUILD opcode cannot alter them. (Frozen slotted dataclasses would not do: their generated
    ``__setstate__`` bypasses the freeze.)"""

    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} objects are read-only")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} objects are read-only")

    def __setstate__(self, state: object) -> None:
        _no_state(state)


class _Allowed(_Frozen):
    """An allowlisted callable as a pickle meets it: calling it calls ``function``, whose
    parameters are torch's (or numpy's, ``_codecs``') public ones; it has no attribute a pickle
    can set or replace, and an unpickled result never holds it (:func:`_check_result`)."""

    __slots__ = ("name", "_function")
    name: str
    _function: Callable[..., object]

    def __init__(self, name: str, function: Callable[..., object]) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "_function", function)

    def __call__(self, *args: object) -> object:
        return self._function(*args)

    def __repr__(self) -> str:
        return f"<allowlisted {self.name}>"


class _StorageType(_Frozen):
    """Stand-in for a ``torch.*Storage`` class: all a storage type tells us is its dtype (None
    for a dtype Burn lacks, named by ``label``; ``UntypedStorage`` holds bytes)."""

    __slots__ = ("numpy_name", "label")
    numpy_name: str | None
    label: str

    def __init__(self, numpy_name: str | None, label: str = "") -> None:
        object.__setattr__(self, "numpy_name", numpy_name)
        object.__setattr__(self, "label", label or str(numpy_name))

    @property
    def dtype(self) -> np.dtype | None:
        return None if self.numpy_name is None else numpy_dtype_named(self.numpy_name)


class _Storage(_Frozen):
    """One storage of the checkpoint; its elements live apart, since legacy streams store them
    after the pickle that references them."""

    __slots__ = ("key", "dtype", "big_endian")
    key: str
    dtype: np.dtype
    big_endian: bool  # byte order of its bytes as read (typed storages are swapped on reading)

    def __init__(self, key: str, dtype: np.dtype, big_endian: bool = False) -> None:
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "big_endian", big_endian)


class _TensorRef(_Frozen):
    """A tensor as the pickle describes it: a strided view into a storage, in elements of
    ``dtype`` (the storage's own, or the one ``_rebuild_tensor_v3`` names for an untyped storage)."""

    __slots__ = ("storage", "offset", "shape", "stride", "dtype")
    storage: _Storage
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: np.dtype

    def __init__(
        self, storage: _Storage, offset: object, shape: object, stride: object, dtype: np.dtype | None = None
    ) -> None:
        shape = _indices(shape, "tensor size")
        stride = _indices(stride, "tensor stride")
        if len(shape) != len(stride):
            raise PyTorchReadError(f"tensor size {shape} and stride {stride} differ in rank")
        if len(shape) > NUMPY_MAX_DIMS:  # as the .bpk reader refuses it, before numpy sees it
            raise PyTorchReadError(f"tensor has {len(shape)} dimensions; numpy arrays have at most {NUMPY_MAX_DIMS}")
        if dtype is not None and dtype != storage.dtype and storage.dtype != np.uint8:
            raise PyTorchReadError(f"a {dtype} tensor cannot view a {storage.dtype} storage")
        if math.prod(max(dim, 1) for dim in shape) > _MAX_INDEX:
            raise PyTorchReadError(f"tensor size {shape} is too large")
        object.__setattr__(self, "storage", storage)
        object.__setattr__(self, "offset", _index(offset, "storage offset"))
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "stride", stride)
        object.__setattr__(self, "dtype", storage.dtype if dtype is None else dtype)


class _Stated(_Frozen):
    """A stand-in whose pickled state is data, given once (by BUILD) and never changed."""

    __slots__ = ("state",)

    def __setstate__(self, state: object) -> None:
        try:
            object.__getattribute__(self, "state")
        except AttributeError:
            object.__setattr__(self, "state", state)
            return
        raise PyTorchReadError(f"{type(self).__name__} state set twice")


class PickledObject(_Stated):
    """A non-tensor object a training checkpoint commonly holds (``argparse.Namespace``): its
    class name and pickled state, kept as data — the real class is never imported or called."""

    __slots__ = ()
    type_name = "object"

    def __repr__(self) -> str:
        return f"<{self.type_name}>"


def pickled_class(module: str, name: str) -> type[PickledObject]:
    """A fresh stand-in class for ``module.name``: instances keep their pickled state as data."""
    return cast(type[PickledObject], _FrozenClass(name, (PickledObject,), {"__slots__": (), "type_name": f"{module}.{name}"}))


class _OrderedDict(collections.OrderedDict, metaclass=_FrozenClass):  # type: ignore[type-arg]
    """``collections.OrderedDict`` as a pickle builds it: items are set as a dict's are, but its
    instance attributes cannot be (``state_dict()``'s ``_metadata``, module versions, is dropped),
    so a result holds no attribute a file chose. :func:`read_pytorch_object` returns plain
    ``OrderedDict``\\ s."""

    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("OrderedDict objects of a pickle are read-only")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("OrderedDict objects of a pickle are read-only")

    def __setstate__(self, state: object) -> None:
        """BUILD's instance attributes: dropped (never set), whatever they are."""


# ``numpy.dtype`` names of the numbers a pickled numpy scalar may be: bool, ints, floats, complex.
_SCALAR_DTYPE = re.compile(r"[biufc](?:1|2|4|8|16)")


class _NumpyDtype(_Stated):
    """``numpy.dtype(dtype, align, copy)`` as pickled for a numpy scalar (a number type's short
    name, ``"f8"``), its state (byte order second) given once."""

    __slots__ = ("name",)
    name: str

    def __init__(self, dtype: object, align: object = False, copy: object = False) -> None:
        if not isinstance(dtype, str) or not _SCALAR_DTYPE.fullmatch(dtype):
            raise PyTorchReadError("malformed numpy dtype: a numpy scalar's dtype is a number type's short name")
        object.__setattr__(self, "name", dtype)

    def __setstate__(self, state: object) -> None:
        if not isinstance(state, tuple) or len(state) < 2 or state[1] not in ("<", ">", "|", "="):
            raise PyTorchReadError("malformed numpy dtype state")
        super().__setstate__(state)

    @property
    def order(self) -> Literal["<", ">", "|", "="]:
        try:
            return cast(Literal["<", ">", "|", "="], cast(tuple, object.__getattribute__(self, "state"))[1])
        except AttributeError:
            return "="


def _pickled_dtype() -> type[_NumpyDtype]:
    return cast(type[_NumpyDtype], _FrozenClass("dtype", (_NumpyDtype,), {"__slots__": ()}))


def _numpy_scalar(dtype: object, obj: object = b"") -> np.generic:
    """``numpy.core.multiarray.scalar``: a number (bool, int, float, complex) from its bytes."""
    if not isinstance(dtype, _NumpyDtype) or not isinstance(obj, bytes):
        raise PyTorchReadError("malformed numpy scalar")
    try:
        np_dtype = np.dtype(dtype.name).newbyteorder(dtype.order)
    except (AttributeError, TypeError) as exc:  # a dtype built without its name (NEWOBJ, OBJ)
        raise PyTorchReadError("malformed numpy scalar dtype") from exc
    if len(obj) != np_dtype.itemsize:
        raise PyTorchReadError(f"numpy scalar of dtype {dtype.name} holds {len(obj)} bytes, not {np_dtype.itemsize}")
    return np.frombuffer(obj, np_dtype)[0]


def _storage_dtypes() -> dict[str, str]:
    """``torch.<X>Storage`` → the numpy name of its elements (from the first dtype naming ``X``;
    ml_dtypes' types are imported only when such a storage is met)."""
    out: dict[str, str] = {}
    for variant, info in DTYPE_INFO.items():
        numpy = BOOL_STORE_INFO[NATIVE_BOOL.value.value].numpy if variant == NATIVE_BOOL.variant else info.numpy
        if info.torch_storage is not None and numpy is not None:
            out.setdefault(info.torch_storage, numpy)
    return out


_STORAGE_DTYPES = _storage_dtypes()
"""Storage type prefix → numpy name."""
_TORCH_DTYPE_NAMES = tuple(dict.fromkeys(info.torch for info in DTYPE_INFO.values() if info.torch is not None))
# Legitimate torch storages and dtypes Burn has no dtype for: named in "unsupported dtype" errors
# rather than refused as unknown (possibly malicious) globals.
_UNSUPPORTED_STORAGES = {
    "ComplexHalf": "complex32", "ComplexFloat": "complex64", "ComplexDouble": "complex128",
    "QInt8": "qint8", "QUInt8": "quint8", "QInt32": "qint32", "QUInt4x2": "quint4x2", "QUInt2x4": "quint2x4",
}  # fmt: skip
_UNSUPPORTED_TORCH_DTYPES = (
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2",
    "complex32", "complex64", "complex128", "chalf", "cfloat", "cdouble",
    "qint8", "quint8", "qint32", "quint4x2", "quint2x4", "bits1x8", "bits2x4", "bits4x2", "bits8", "bits16",
    *(f"uint{n}" for n in range(1, 8)), *(f"int{n}" for n in range(1, 8)),
)  # fmt: skip
# Tensor kinds torch rebuilds with functions of their own: legitimate, but not dense strided tensors.
_UNSUPPORTED_REBUILDS = {
    "_rebuild_sparse_tensor": "sparse tensor", "_rebuild_sparse_csr_tensor": "sparse CSR tensor",
    "_rebuild_qtensor": "quantized tensor", "_rebuild_nested_tensor": "nested tensor",
    "_rebuild_wrapper_subclass": "tensor subclass", "_rebuild_meta_tensor_no_storage": "meta tensor",
    "_rebuild_device_tensor_from_numpy": "device tensor", "_rebuild_device_tensor_from_cpu_tensor": "device tensor",
    "_rebuild_xla_tensor": "XLA tensor", "_rebuild_mtia_tensor": "MTIA tensor",
}  # fmt: skip
_LAYOUTS = ("torch.strided", "torch.sparse_coo", "torch.sparse_csr", "torch.sparse_csc", "torch.sparse_bsr",
            "torch.sparse_bsc", "torch._mkldnn", "torch.jagged")  # fmt: skip


TORCH_DTYPES = frozenset(f"torch.{name}" for name in (*_TORCH_DTYPE_NAMES, *_UNSUPPORTED_TORCH_DTYPES))
"""The torch dtypes a pickle can name (their marker values): Burn's and the legitimate others."""


def _markers() -> dict[tuple[str, str], object]:
    """Allowlisted globals that are plain values: storage types (CPU and the ``torch.cuda`` ones
    legacy files name), tensor classes the tar layout records, and dtype / class names that
    checkpoints carry as metadata. Values are immutable, so sharing them between loads is safe."""
    markers: dict[tuple[str, str], object] = {
        ("torch", "Tensor"): "torch.Tensor",
        ("torch.nn.parameter", "Parameter"): "torch.nn.parameter.Parameter",
    }
    for module in ("torch", "torch.cuda"):
        for prefix, dtype in _STORAGE_DTYPES.items():
            markers[module, f"{prefix}Storage"] = _StorageType(dtype)
            markers[module, f"{prefix}Tensor"] = f"{module}.{prefix}Tensor"
        for prefix, label in _UNSUPPORTED_STORAGES.items():
            markers[module, f"{prefix}Storage"] = _StorageType(None, f"torch.{label}")
    untyped = _StorageType("uint8", "untyped")
    markers["torch", "UntypedStorage"] = markers["torch.storage", "UntypedStorage"] = untyped
    for name in (*_TORCH_DTYPE_NAMES, *_UNSUPPORTED_TORCH_DTYPES):
        markers["torch", name] = f"torch.{name}"
    for scheme in ("per_tensor_affine", "per_channel_affine", "per_channel_affine_float_qparams",
                   "per_tensor_symmetric", "per_channel_symmetric"):  # fmt: skip
        markers["torch", scheme] = f"torch.{scheme}"
    return markers


def _tensor_dtype(name: object) -> np.dtype:
    """The numpy dtype of a torch dtype marker (``"torch.uint16"``); Burn's dtypes only."""
    if not isinstance(name, str) or name not in TORCH_DTYPES:
        raise PyTorchReadError("a tensor's dtype is not one of torch's dtypes")
    try:
        return numpy_dtype(dtype_from_torch(str(name)))
    except (ValueError, KeyError):
        raise PyTorchReadError(f"unsupported dtype {name}: Burn has no such dtype") from None


def _unsupported_rebuild(what: str) -> Callable[..., object]:
    """A torch rebuild function for a tensor kind this reader does not read: it says so."""

    def refuse(*args: object) -> object:
        raise PyTorchReadError(f"unsupported {what}: only dense strided tensors can be read")

    return refuse


_MARKERS = _markers()


def _allowed_globals(
    resolve_storage: Callable[[object], _Storage],
) -> dict[tuple[str, str], object]:
    """The allowlist: markers (values), stand-in classes, and functions taking exactly the
    parameters of the torch, numpy or ``_codecs`` callable they stand for (:func:`_unpickle` wraps
    each in an :class:`_Allowed`). Tensors are made by :func:`_tensor`, which no pickle names."""

    def tensor(storage: object, offset: object, size: object, stride: object, dtype: np.dtype | None = None) -> _TensorRef:
        return _TensorRef(resolve_storage(storage), offset, size, stride, dtype)

    def _rebuild_tensor(storage: object, storage_offset: object, size: object, stride: object) -> _TensorRef:
        return tensor(storage, storage_offset, size, stride)

    def _rebuild_tensor_v2(
        storage: object, storage_offset: object, size: object, stride: object,
        requires_grad: object, backward_hooks: object, metadata: object = None,
    ) -> _TensorRef:  # fmt: skip
        return tensor(storage, storage_offset, size, stride)

    def _rebuild_tensor_v3(
        storage: object, storage_offset: object, size: object, stride: object,
        requires_grad: object, backward_hooks: object, dtype: object, metadata: object = None,
    ) -> _TensorRef:  # fmt: skip
        # torch >= 2.3 for dtypes without a typed storage (uint16-64, fp8, bits): bytes + dtype
        return tensor(storage, storage_offset, size, stride, _tensor_dtype(dtype))

    def _get_layout(name: object) -> str:
        if name not in _LAYOUTS:
            raise PyTorchReadError(f"unknown tensor layout {excerpt(name) if isinstance(name, str) else type(name).__name__}")
        return cast(str, name)

    def _rebuild_parameter(data: object, requires_grad: object, backward_hooks: object) -> _TensorRef:
        return _expect_tensor(data)

    def _rebuild_parameter_with_state(data: object, requires_grad: object, backward_hooks: object, state: object) -> _TensorRef:
        return _expect_tensor(data)

    def _rebuild_from_type(func: object, type: object, args: object, dict: object) -> _TensorRef:
        return _rebuild_from_type_v2(func, type, args, dict)

    def _rebuild_from_type_v2(func: object, new_type: object, args: object, state: object) -> _TensorRef:
        # ``func`` can only be another allowlisted global: calling it is safe.
        if not isinstance(func, _Allowed) or not isinstance(args, tuple):
            raise PyTorchReadError("malformed tensor subclass record")
        return _expect_tensor(func(*args))

    def Size(sizes: object = ()) -> tuple[int, ...]:  # noqa: N802 - torch.Size
        return _indices(sizes, "torch.Size")

    def device(type: object, index: object = None) -> str:
        if not isinstance(type, str) or len(type) > 64 or not (index is None or (isinstance(index, int) and not isinstance(index, bool))):
            raise PyTorchReadError("malformed torch.device")
        return type if index is None else f"{type}:{index}"

    def encode(obj: object, encoding: object = "utf-8", errors: object = "strict") -> bytes:
        # Protocol-2 pickles spell ``bytes`` values as _codecs.encode(text, "latin1").
        if not isinstance(obj, str) or encoding not in ("latin1", "latin-1") or errors != "strict":
            raise PyTorchReadError("only latin-1 _codecs.encode calls are allowed")
        return obj.encode("latin-1")

    def scalar(dtype: object, obj: object = b"") -> np.generic:
        return _numpy_scalar(dtype, obj)

    return _MARKERS | {
        # Non-tensor entries common beside the state dicts: numbers as numpy scalars, argparse options.
        ("argparse", "Namespace"): pickled_class("argparse", "Namespace"),
        ("numpy", "dtype"): _pickled_dtype(),
        ("numpy.core.multiarray", "scalar"): scalar,
        ("numpy._core.multiarray", "scalar"): scalar,
        ("collections", "OrderedDict"): _OrderedDict,
        ("torch._utils", "_rebuild_tensor"): _rebuild_tensor,
        ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
        ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
        ("torch.serialization", "_get_layout"): _get_layout,
        **{("torch._utils", name): _unsupported_rebuild(what) for name, what in _UNSUPPORTED_REBUILDS.items()},
        ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
        ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
        ("torch._tensor", "_rebuild_from_type"): _rebuild_from_type,
        ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
        ("torch", "Size"): Size,
        ("torch", "device"): device,
        ("_codecs", "encode"): encode,
    }


class _SafeUnpickler(pickle.Unpickler):
    """Resolves globals only through the allowlist and persistent ids through the layout."""

    def __init__(
        self,
        file: BinaryIO | mmap.mmap,
        allowed: Mapping[tuple[str, str], object],
        persistent_load: Callable[[object], object] | None,
    ) -> None:
        super().__init__(file, encoding="utf-8")  # as torch.load: Python 2 str pickles as text
        self._allowed = allowed
        self._persistent_load = persistent_load

    def find_class(self, module: str, name: str) -> object:
        """Hand out an allowlisted stand-in; never import anything."""
        try:
            return self._allowed[module, name]
        except KeyError:
            raise UnsafePickleError(f"{module}.{name}") from None

    def persistent_load(self, pid: object) -> object:
        """Resolve a storage reference through the layout being read."""
        if self._persistent_load is None:
            raise PyTorchReadError("unexpected storage reference in a metadata pickle")
        return self._persistent_load(pid)


def _storage_arg(storage: object) -> _Storage:
    """The storage argument of a rebuild call, as persistent ids deliver it."""
    if not isinstance(storage, _Storage):
        raise PyTorchReadError(f"tensor rebuilt from a {type(storage).__name__}, not a storage")
    return storage


_MEMO_PUTS = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_EXTENSIONS = frozenset({"EXT1", "EXT2", "EXT4"})
# Opcodes that build a fresh object of some 30-100 bytes. Checkpoints spend at least 5 pickle
# bytes per such object; a run of one-byte ``]`` would cost 60x its size. Allowed: one per 4
# bytes, plus _OBJECT_SLACK.
_BUILDS_OBJECT = frozenset({
    "EMPTY_LIST", "EMPTY_DICT", "EMPTY_SET", "LIST", "DICT", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3",
    "FROZENSET", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8", "UNICODE", "STRING", "BINSTRING",
    "SHORT_BINSTRING", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8", "BINFLOAT", "FLOAT",
    "LONG", "LONG1", "LONG4", "BININT", "INT", "REDUCE", "NEWOBJ", "NEWOBJ_EX", "OBJ", "INST",
})  # fmt: skip
_OBJECT_SLACK = 1 << 20
_BUILDS_TUPLE = frozenset({"EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3"})
_MAX_TUPLE_DEPTH = 1000
"""How deeply a pickle's tuples may nest. Hashing a tuple (a dict key, a set item) recurses in C
through its items with no recursion limit, about 64 bytes of stack a level: a 200 KB pickle of a
tuple nested 200,000 deep used as a dict key overflowed the stack (a segfault). 1000 levels take
64 KiB, well within the smallest thread stacks; no checkpoint nests tuples more than a few deep."""
_MARK = -1
_PUSH, _POP, _POP_TO_MARK, _MARK_OP, _GET, _PUT, _MEMOIZE = range(7)


def _stack_effects() -> dict[str, tuple[int, int, int, int]]:
    """Opcode name → (what it does to the stack, items it pops (beneath the mark, for
    ``_POP_TO_MARK``), items it pushes, 1 if it builds a tuple), from ``pickletools``' tables."""
    effects = {}
    for op in pickletools.opcodes:
        before, pushes, builds = op.stack_before, len(op.stack_after), int(op.name in _BUILDS_TUPLE)
        if op.name == "MARK":
            effect = (_MARK_OP, 0, 0, 0)
        elif op.name in ("GET", "BINGET", "LONG_BINGET"):
            effect = (_GET, 0, 1, 0)
        elif op.name in _MEMO_PUTS:
            effect = (_PUT, 0, 0, 0)
        elif op.name == "MEMOIZE":
            effect = (_MEMOIZE, 0, 0, 0)
        elif pickletools.markobject in before:
            effect = (_POP_TO_MARK, before.index(pickletools.markobject), pushes, builds)
        elif before or builds or pushes != 1:  # PROTO and FRAME push nothing
            effect = (_POP, len(before), pushes, builds)
        else:
            effect = (_PUSH, 0, 1, 0)
        effects[op.name] = effect
    return effects


_STACK_EFFECTS = _stack_effects()


class _TupleNesting:
    """The nesting of the tuples a pickle builds, followed opcode by opcode on a stack of depths,
    before anything is built. Exact for tuples (immutable, built only by the tuple opcodes);
    anything else an opcode makes from stack items (a call's result, a container) is taken to
    nest as deeply as they do, which errs only on the safe side."""

    def __init__(self) -> None:
        self.stack: list[int] = []
        self.memo: dict[object, int] = {}

    def step(self, name: str, arg: object) -> int:
        """Follow one opcode; the depth of the tuple it builds (0 when it builds none)."""
        effect, pops, pushes, builds = _STACK_EFFECTS[name]
        stack = self.stack
        if effect == _PUSH:  # one item: an atom, a global, an empty container
            stack.append(0)
            return 0
        if effect == _MARK_OP:
            stack.append(_MARK)
            return 0
        if effect == _GET:
            stack.append(self.memo.get(arg, 0))
            return 0
        if effect == _PUT or effect == _MEMOIZE:
            self.memo[len(self.memo) if effect == _MEMOIZE else arg] = max(stack[-1], 0) if stack else 0
            return 0
        depth = 0
        if effect == _POP_TO_MARK:
            while stack and (item := stack.pop()) != _MARK:
                depth = max(depth, item)
        for _ in range(pops):  # a malformed pickle may pop more than it pushed: it fails when unpickled
            if stack:
                depth = max(depth, stack.pop())
        depth += builds
        stack.extend((depth,) * pushes)
        return depth if builds else 0


def _check_opcodes(file: BinaryIO | mmap.mmap) -> None:
    """Walk the pickle at ``file``'s position (then rewind) before anything is built.

    Refused: a memo index beyond the pickle's own length (the C unpickler sizes its memo by the
    index, so one opcode could claim gigabytes), the EXT opcodes, which resolve through
    ``copyreg``'s extension registry and cache instead of the allowlist, more new objects than
    bytes can pay for (``_BUILDS_OBJECT``), and an integer of more than :data:`MAX_INT_DIGITS`
    digits (no checkpoint value is one; formatting or multiplying it would cost), and tuples
    nested more than :data:`_MAX_TUPLE_DEPTH` deep (hashing one would overflow the C stack).
    Linear in the pickle.
    """
    start = file.tell()
    objects = 0
    nesting = _TupleNesting()
    try:
        for opcode, arg, at in pickletools.genops(cast(BinaryIO, file)):
            position = at if at is not None else start  # positions come from file.tell()
            if opcode.name in _BUILDS_OBJECT:
                objects += 1
                if objects > _OBJECT_SLACK + (position - start) // 4:
                    raise PyTorchReadError(
                        f"the pickle builds more than {objects - 1} objects in {position - start} bytes, "
                        "more than one per 4 bytes: refused before unpickling"
                    )
            if opcode.name in _EXTENSIONS:
                raise PyTorchReadError(f"pickle opcode {opcode.name} (copyreg extension) is not allowed")
            if opcode.name in _MEMO_PUTS and (type(arg) is not int or not 0 <= arg <= position - start):
                raise PyTorchReadError(f"pickle memo index {arg} lies beyond the pickle")
            if type(arg) is int and not is_bounded_int(arg):
                raise _long_int()
            if nesting.step(opcode.name, arg) > _MAX_TUPLE_DEPTH:
                raise PyTorchReadError(
                    f"the pickle nests tuples more than {_MAX_TUPLE_DEPTH} deep (hashing one would overflow "
                    "the C stack): refused before unpickling"
                )
    except PyTorchReadError:
        raise
    except ValueError as exc:
        if "integer string conversion" in str(exc):  # a text int Python refuses to parse: longer still
            raise _long_int() from None
        raise _malformed(exc) from None
    except Exception as exc:  # genops meets the same malformations the unpickler would
        raise _malformed(exc) from None
    file.seek(start)


def _long_int() -> PyTorchReadError:
    return PyTorchReadError(f"the pickle holds an integer of more than {MAX_INT_DIGITS} digits: refused before unpickling")


def _malformed(exc: Exception) -> PyTorchReadError:
    """A malformation Python's pickle machinery found; what it says may quote the file, so only
    an excerpt of it is shown (and the caller raises it ``from None``)."""
    return PyTorchReadError(f"malformed pickle ({cause(exc)})")


def _allowlist(
    resolve_storage: Callable[[object], _Storage], extra: Mapping[tuple[str, str], object] | None
) -> dict[tuple[str, str], object]:
    """What each allowed global is to a pickle: markers and stand-ins as they are, every function
    wrapped in an :class:`_Allowed`. Anything else is a mistake of this package, refused here."""
    table: dict[tuple[str, str], object] = {}
    for (module, name), value in (_allowed_globals(resolve_storage) | dict(extra or {})).items():
        if isinstance(value, types.FunctionType):
            value = _Allowed(f"{module}.{name}", value)
        elif not isinstance(value, (str, _Frozen, _FrozenClass)):
            raise TypeError(f"allowlisted {module}.{name} is a {type(value).__name__}, neither a value nor a stand-in")
        table[module, name] = value
    return table


_PLAIN = frozenset({type(None), bool, int, float, complex, str, bytes, bytearray})
_CONTAINERS = frozenset({dict, _OrderedDict, list, tuple, set, frozenset})


def _check_result(root: object) -> None:
    """Refuse an unpickled object unless everything reachable from it is plain data — None,
    bool, int, float, str, bytes, containers of them, numpy scalars this reader built — or a
    frozen stand-in of this reader (tensors, storages, pickled objects, whose state is walked
    too). Above all, an allowlisted callable or stand-in class is never handed out: code
    downstream duck-types values (``np.asarray``, ``hasattr``). Each object is walked once."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind in _PLAIN or id(value) in seen:
            continue
        seen.add(id(value))
        if kind in _CONTAINERS:
            if isinstance(value, dict):
                stack.extend(dict.keys(value))
                stack.extend(dict.values(value))
            else:
                stack.extend(cast(Iterable[object], value))
        elif isinstance(value, _Allowed):
            raise PyTorchReadError(f"the pickle returns the allowlisted callable {value.name} itself, not a value it makes")
        elif isinstance(value, _FrozenClass):
            raise PyTorchReadError(f"the pickle returns the class {getattr(value, 'type_name', value.__name__)} itself, not a value")
        elif isinstance(value, _Stated):
            with contextlib.suppress(AttributeError):  # no state given
                stack.append(object.__getattribute__(value, "state"))
        elif not isinstance(value, (_Frozen, np.generic)):  # a numpy scalar comes from _numpy_scalar only
            raise PyTorchReadError(f"the pickle returns a {kind.__name__}, which is neither data nor a stand-in of this reader")


def _unpickle(
    file: BinaryIO | mmap.mmap,
    persistent_load: Callable[[object], object] | None = None,
    resolve_storage: Callable[[object], _Storage] = _storage_arg,
    extra: Mapping[tuple[str, str], object] | None = None,
) -> object:
    """Unpickle one object from ``file``'s position with the allowlist (plus ``extra``): plain
    data and this reader's frozen stand-ins (:func:`_check_result`)."""
    _check_opcodes(file)
    unpickler = _SafeUnpickler(file, _allowlist(resolve_storage, extra), persistent_load)
    try:
        result = unpickler.load()
    except PyTorchReadError:
        raise
    except Exception as exc:  # malformed pickles surface as nearly any builtin exception type
        raise _malformed(exc) from None
    _check_result(result)
    return result


def _index(value: object, what: str) -> int:
    """A size, stride, offset or count: a non-negative int small enough for numpy."""
    if type(value) is not int or not 0 <= value <= _MAX_INDEX:
        raise PyTorchReadError(f"{what} must be a non-negative int below 2**60")
    return value


def _indices(values: object, what: str) -> tuple[int, ...]:
    if not isinstance(values, tuple | list):
        raise PyTorchReadError(f"{what} must be a tuple of ints, not {type(values).__name__}")
    return tuple(_index(value, what) for value in values)


def _key(value: object) -> str:
    """A dict or storage key as text; ints (optimizer state, tar ids) become decimal, as in Burn."""
    if type(value) is str:
        return value
    if type(value) is int and -(2**63) <= value < 2**63:
        return str(value)
    raise PyTorchReadError(f"unsupported key of type {type(value).__name__}")


def _expect_tensor(value: object) -> _TensorRef:
    if not isinstance(value, _TensorRef):
        raise PyTorchReadError(f"expected a tensor, got a {type(value).__name__}")
    return value


def _storage_id(pid: object) -> tuple[np.dtype, str, int, tuple[object, ...]]:
    """Split a ``('storage', type, key, location, numel, *rest)`` storage reference."""
    if not (isinstance(pid, tuple) and len(pid) >= 5 and pid[0] == "storage"):
        raise PyTorchReadError(f"unsupported storage reference of type {type(pid).__name__}")
    _, storage_type, key, _location, numel, *rest = pid
    if not isinstance(storage_type, _StorageType):
        raise PyTorchReadError(f"storage type is a {type(storage_type).__name__}")
    if storage_type.dtype is None:
        raise PyTorchReadError(f"unsupported dtype {storage_type.label}: Burn has no such dtype")
    return storage_type.dtype, _key(key), _index(numel, "storage size"), tuple(rest)


def _same_dtype(storage: _Storage, dtype: np.dtype) -> _Storage:
    if storage.dtype != dtype:
        raise PyTorchReadError(
            f"storage {excerpt(storage.key)} is used as both {storage.dtype} and {dtype}"
        )
    return storage


def _elements(
    buffer: bytes | memoryview | mmap.mmap, dtype: np.dtype, count: int, big_endian: bool, offset: int = 0
) -> np.ndarray:
    """``count`` elements at ``offset`` in host byte order: a view, or a swapped copy when the
    file's byte order differs from the host's. The caller has checked the bounds."""
    elements = np.frombuffer(buffer, dtype=dtype, count=count, offset=offset)
    if big_endian != (sys.byteorder == "big") and dtype.itemsize > 1:
        elements = elements.byteswap()
        elements.flags.writeable = False
    return elements


def _take(stream: BinaryIO | mmap.mmap, size: int) -> bytes:
    chunk = stream.read(size)
    if len(chunk) != size:
        raise PyTorchReadError("file is truncated")
    return chunk


def _read_storage(
    buffer: bytes | mmap.mmap, stream: BinaryIO | mmap.mmap, dtype: np.dtype, big_endian: bool
) -> tuple[int, np.ndarray]:
    """One raw storage at ``stream``'s position: its int64 element count, then the elements
    (viewed in ``buffer``, the bytes ``stream`` reads)."""
    (count,) = struct.unpack(">q" if big_endian else "<q", _take(stream, 8))
    start = stream.tell()
    if count < 0 or start + count * dtype.itemsize > len(buffer):
        raise PyTorchReadError("file is truncated inside a storage")
    stream.seek(start + count * dtype.itemsize)
    return count, _elements(buffer, dtype, count, big_endian, offset=start)


def _big_endian(sys_info: object) -> bool:
    """The byte order torch's system-info pickle records (little-endian when silent)."""
    if not isinstance(sys_info, dict):
        raise PyTorchReadError("system-info pickle is not a dict")
    little_endian = dict.get(sys_info, "little_endian", True)
    if type(little_endian) is not bool:
        raise PyTorchReadError("system-info 'little_endian' is not a bool")
    return not little_endian


def _view_storages(
    views: Mapping[str, tuple[_Storage, _Storage, int, int]], arrays: dict[_Storage, np.ndarray]
) -> None:
    """Fill storages defined as element ranges of others (pre-1.0 storage views)."""
    for key, (view, root, offset, count) in views.items():
        elements = arrays.get(root)
        if elements is None or offset + count > elements.size:
            raise PyTorchReadError(f"storage view {excerpt(key)} lies outside its root storage")
        arrays[view] = elements[offset : offset + count]


def _zip_info(archive: zipfile.ZipFile, name: str) -> zipfile.ZipInfo:
    try:
        return archive.getinfo(name)
    except KeyError:
        raise PyTorchReadError(f"zip record {excerpt(name)} is missing") from None


def _stored_member(mapped: mmap.mmap | memoryview | None, info: zipfile.ZipInfo) -> memoryview | None:
    """An uncompressed zip member as a view of the mapped file (torch stores storages
    uncompressed), its CRC-32 checked as ``ZipFile.read`` would; None when it must be read."""
    if mapped is None or info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
        return None
    start = info.header_offset
    if start + 30 > len(mapped) or mapped[start : start + 4] != b"PK\x03\x04":
        raise PyTorchReadError(f"zip record {excerpt(info.filename)}: bad local header")
    name_len, extra_len = struct.unpack_from("<HH", mapped, start + 26)
    begin = start + 30 + name_len + extra_len
    end = begin + info.file_size
    if end > len(mapped):
        raise PyTorchReadError(f"zip record {excerpt(info.filename)} is truncated")
    view = memoryview(mapped)[begin:end]
    if zlib.crc32(view) != info.CRC:
        raise PyTorchReadError(f"cannot read zip record {excerpt(info.filename)}: Bad CRC-32")
    return view


def _load_zip(
    file: BinaryIO, mapped: mmap.mmap | memoryview | None = None, limits: ReadLimits = DEFAULT_LIMITS
) -> tuple[object, dict[_Storage, np.ndarray]]:
    """torch >= 1.6: the pickle in ``<name>/data.pkl``, storage ``k`` in ``<name>/data/k``.

    With ``mapped`` (the file's bytes, memory-mapped), uncompressed storages are zero-copy views of it.
    Compressed records are inflated only up to their declared size, checked first (``archive``)."""
    try:
        archive = zipfile.ZipFile(file)
    except ZIP_ERRORS as exc:
        raise PyTorchReadError(f"broken zip archive: {cause(exc)}") from None
    budget = InflateBudget(len(mapped) if mapped is not None else os.fstat(file.fileno()).st_size, PyTorchReadError, limits)
    with archive:
        names = set(archive.namelist())
        pickles = sorted(
            n for n in names if n == "data.pkl" or (n.endswith("/data.pkl") and n.count("/") == 1)
        )
        if len(pickles) != 1:
            raise PyTorchReadError(f"expected one '<name>/data.pkl' record, found {len(pickles)}")
        prefix = pickles[0].removesuffix("data.pkl")
        byteorder = (
            budget.read(archive, _zip_info(archive, prefix + "byteorder")).strip()
            if prefix + "byteorder" in names
            else b"little"
        )
        if byteorder not in (b"little", b"big"):
            raise PyTorchReadError("zip record 'byteorder' is neither 'little' nor 'big'")
        storages: dict[str, _Storage] = {}
        arrays: dict[_Storage, np.ndarray] = {}

        def persistent_load(pid: object) -> _Storage:
            dtype, key, count, rest = _storage_id(pid)
            if rest:
                raise PyTorchReadError("zip storage reference has extra fields")
            if key in storages:
                return _same_dtype(storages[key], dtype)
            info = _zip_info(archive, f"{prefix}data/{key}")
            if info.file_size != count * dtype.itemsize:  # before anything is read or inflated
                raise PyTorchReadError(
                    f"storage {excerpt(key)} holds {info.file_size} bytes, expected {count} x {dtype}"
                )
            raw: bytes | memoryview | None = _stored_member(mapped, info)
            if raw is None:
                raw = budget.read(archive, info)
            storage = storages[key] = _Storage(key, dtype, byteorder == b"big")
            arrays[storage] = _elements(raw, dtype, count, byteorder == b"big")
            return storage

        root = _unpickle(io.BytesIO(budget.read(archive, _zip_info(archive, prefix + "data.pkl"))), persistent_load)
    return root, arrays


def _load_legacy(data: mmap.mmap) -> tuple[object, dict[_Storage, np.ndarray]]:
    """torch 0.1.10-1.5: magic, protocol and sys-info pickles, the object pickle, the storage
    keys pickle, then the storages, each as an int64 element count and its elements."""
    try:
        magic = _unpickle(data)
    except UnsafePickleError:
        raise  # a bare pickle that would run code: say so rather than "not a checkpoint"
    except PyTorchReadError as exc:
        raise PyTorchReadError(_NOT_PYTORCH) from exc
    if type(magic) is not int or magic != _LEGACY_MAGIC:
        raise PyTorchReadError(_NOT_PYTORCH)
    if _unpickle(data) != _LEGACY_PROTOCOL:
        raise PyTorchReadError(
            f"unsupported legacy format: protocol version is not {_LEGACY_PROTOCOL}"
        )
    big_endian = _big_endian(_unpickle(data))
    roots: dict[str, _Storage] = {}
    sizes: dict[_Storage, int] = {}
    views: dict[str, tuple[_Storage, _Storage, int, int]] = {}

    def persistent_load(pid: object) -> _Storage:
        dtype, key, count, rest = _storage_id(pid)
        if len(rest) != 1:
            raise PyTorchReadError("legacy storage reference lacks its view field")
        if key in roots:
            root = _same_dtype(roots[key], dtype)
        else:
            root = roots[key] = _Storage(key, dtype)
            sizes[root] = count
        if rest[0] is None:
            return root
        view_key, offset, view_count = _view_field(rest[0])
        if view_key not in views:
            views[view_key] = (_Storage(view_key, dtype), root, offset, view_count)
        return views[view_key][0]

    root_object = _unpickle(data, persistent_load)
    keys = _unpickle(data)
    if not isinstance(keys, list):
        raise PyTorchReadError("legacy storage-key pickle is not a list")
    arrays: dict[_Storage, np.ndarray] = {}
    for key in keys:
        storage = roots.get(_key(key))
        if storage is None:
            raise PyTorchReadError(f"storage {excerpt(_key(key))} has data but no tensor uses it")
        count, arrays[storage] = _read_storage(data, data, storage.dtype, big_endian)
        if count != sizes[storage]:
            raise PyTorchReadError(
                f"storage {excerpt(storage.key)} holds {count} elements, expected {sizes[storage]}"
            )
    _view_storages(views, arrays)
    return root_object, arrays


def _view_field(view: object) -> tuple[str, int, int]:
    """A legacy ``(view_key, offset, size)`` storage-view field."""
    if not (isinstance(view, tuple) and len(view) == 3):
        raise PyTorchReadError("malformed legacy storage view")
    return _key(view[0]), _index(view[1], "view offset"), _index(view[2], "view size")


def _extract(tar: tarfile.TarFile, member: tarfile.TarInfo) -> bytes:
    reader = tar.extractfile(member)
    if reader is None:  # members were filtered with isfile(), which always has a reader
        raise PyTorchReadError(f"tar member {excerpt(member.name)} has no data")
    return reader.read()


def _load_tar(file: BinaryIO) -> tuple[object, dict[_Storage, np.ndarray]]:
    """torch < 0.1.10: ``storages``, ``tensors`` and ``pickle`` members (plus ``sys_info``)."""
    try:
        with tarfile.open(fileobj=file, mode="r:") as tar:
            members = {m.name.removeprefix("./"): m for m in tar.getmembers() if m.isfile()}
            for member in members.values():
                if member.issparse():  # holes would be read back as zeros never stored
                    raise PyTorchReadError(f"tar member {excerpt(member.name)} is sparse")
            contents = {
                name: _extract(tar, members[name])
                for name in ("sys_info", "storages", "tensors", "pickle")
                if name in members
            }
    except (tarfile.TarError, EOFError, OSError, ValueError, OverflowError) as exc:
        raise PyTorchReadError(f"broken tar archive: {cause(exc)}") from None
    for required in ("storages", "pickle"):
        if required not in contents:
            raise PyTorchReadError(f"tar checkpoint has no {required!r} member")
    big_endian = "sys_info" in contents and _big_endian(_unpickle(io.BytesIO(contents["sys_info"])))
    storages, arrays = _tar_storages(contents["storages"], big_endian)
    objects: dict[str, _Storage | _TensorRef] = dict(storages)
    if "tensors" in contents:
        objects |= _tar_tensors(contents["tensors"], storages)

    def persistent_load(pid: object) -> _Storage | _TensorRef:
        if type(pid) not in (str, int) or _key(pid) not in objects:
            raise PyTorchReadError("tar pickle references an unknown storage or tensor")
        return objects[_key(pid)]

    def resolve_storage(storage: object) -> _Storage:
        # Burn's tar fixtures (create_tar_format.py) inline the ('storage', type, key, location,
        # numel) tuple as the rebuild argument instead of a persistent id; accept both.
        if not isinstance(storage, tuple):
            return _storage_arg(storage)
        dtype, key, _count, _rest = _storage_id(storage)
        if key not in storages:
            raise PyTorchReadError(f"tar pickle references unknown storage {excerpt(key)}")
        return _same_dtype(storages[key], dtype)

    root = _unpickle(io.BytesIO(contents["pickle"]), persistent_load, resolve_storage)
    return root, arrays


def _tar_storages(
    blob: bytes, big_endian: bool
) -> tuple[dict[str, _Storage], dict[_Storage, np.ndarray]]:
    """The ``storages`` member: a count, then per storage a ``(key, location, type)`` pickle and
    the raw storage, then (real torch only, Burn's fixtures stop before it) the storage views."""
    stream = io.BytesIO(blob)
    storages: dict[str, _Storage] = {}
    arrays: dict[_Storage, np.ndarray] = {}
    for _ in range(_index(_unpickle(stream), "storage count")):
        entry = _unpickle(stream)
        if not (
            isinstance(entry, tuple) and len(entry) == 3 and isinstance(entry[2], _StorageType)
        ):
            raise PyTorchReadError("malformed tar storage header")
        if entry[2].dtype is None:
            raise PyTorchReadError(f"unsupported dtype {entry[2].label}: Burn has no such dtype")
        storage = storages[_key(entry[0])] = _Storage(_key(entry[0]), entry[2].dtype)
        _count, arrays[storage] = _read_storage(blob, stream, storage.dtype, big_endian)
    if stream.tell() < len(blob):
        views_entry = _unpickle(stream)
        if not isinstance(views_entry, list):
            raise PyTorchReadError("tar storage views are not a list")
        views: dict[str, tuple[_Storage, _Storage, int, int]] = {}
        for view in views_entry:
            if not (isinstance(view, tuple) and len(view) == 4 and _key(view[1]) in storages):
                raise PyTorchReadError("malformed tar storage view")
            root = storages[_key(view[1])]
            storage = storages[_key(view[0])] = _Storage(_key(view[0]), root.dtype)
            views[storage.key] = (storage, root, _index(view[2], "offset"), _index(view[3], "size"))
        _view_storages(views, arrays)
    return storages, arrays


def _tar_tensors(blob: bytes, storages: Mapping[str, _Storage]) -> dict[str, _TensorRef]:
    """The ``tensors`` member: a count, then per tensor a ``(key, storage key, class)`` pickle,
    an int32 rank padded to 8 bytes, int64 sizes, int64 strides and an int64 storage offset."""
    stream = io.BytesIO(blob)
    tensors: dict[str, _TensorRef] = {}
    for _ in range(_index(_unpickle(stream), "tensor count")):
        entry = _unpickle(stream)
        if not (isinstance(entry, tuple) and len(entry) == 3 and _key(entry[1]) in storages):
            raise PyTorchReadError("malformed tar tensor header")
        (rank,) = struct.unpack("<i", _take(stream, 4))
        _take(stream, 4)
        if rank < 0:
            raise PyTorchReadError("negative tensor rank")
        shape = struct.unpack(f"<{rank}q", _take(stream, 8 * rank))
        stride = struct.unpack(f"<{rank}q", _take(stream, 8 * rank))
        (offset,) = struct.unpack("<q", _take(stream, 8))
        tensors[_key(entry[0])] = _TensorRef(storages[_key(entry[1])], offset, shape, stride)
    return tensors


def _load(path: Path, limits: ReadLimits, folder: Folder | None = None) -> tuple[object, dict[_Storage, np.ndarray], int]:
    """Read the file (reached through ``folder``, when given) in the layout its first bytes
    announce; also returns the file's size."""
    with open_regular(path, folder=folder) as file:
        size = os.fstat(file.fileno()).st_size
        return (*_load_layout(file, limits), size)


def _load_layout(file: BinaryIO, limits: ReadLimits) -> tuple[object, dict[_Storage, np.ndarray]]:
    head = file.read(262)
    file.seek(0)
    if head[:4] == b"PK\x03\x04":
        # Mapped, so that stored (uncompressed) storages are zero-copy views of the file.
        return _load_zip(file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ), limits)
    if head[257:262] == b"ustar":
        return _load_tar(file)
    if not head:
        raise PyTorchReadError("file is empty")
    # Mapped, so that legacy storages are zero-copy views of the file.
    return _load_legacy(mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ))


def _shared_containers(limit: int) -> PyTorchReadError:
    return PyTorchReadError(
        f"the pickle's containers hold more than {limit} entries or name characters, more than a "
        "file of this size can write out: containers are shared to multiply them"
    )


def describe_leaf(value: object) -> str:
    """Why a leaf of a checkpoint is not a tensor: what it is instead."""
    if isinstance(value, PickledObject):
        return not_a_tensor(f"{value.type_name} object")
    if isinstance(value, _Storage):
        return "a bare storage outside any tensor"
    if isinstance(value, np.generic):
        return not_a_tensor(f"numpy {value.dtype} scalar")
    return not_a_tensor(type(value).__name__)


def _too_deep(limits: ReadLimits) -> PyTorchReadError:
    return PyTorchReadError(
        f"containers nest more than {limits.max_pickle_depth} deep (cyclic?): {limits.lift('max_pickle_depth')}"
    )


def _flatten(
    tree: dict[object, object], file_size: int, limits: ReadLimits
) -> tuple[dict[str, _TensorRef], dict[str, str]]:
    """Name every tensor reachable through nested dicts, lists and tuples by its dotted key path
    (list and tuple items by their index, as Burn names a ``Vec`` of modules: ``layers.0.w``);
    every other leaf is returned apart, path → what it is, so nothing goes missing unsaid.

    Items are read with ``dict.items`` because a pickle can set an instance attribute called
    ``items`` on an ``OrderedDict``. Entries walked and name characters built are bounded by the
    file's size (see ``_ENTRY_SLACK``). The walk keeps its own stack: ``max_pickle_depth`` may be
    lifted past Python's recursion limit.
    """
    found: dict[str, _TensorRef] = {}
    skipped: dict[str, str] = {}
    limit = file_size + _ENTRY_SLACK
    entries = 0
    characters = 0
    stack: list[tuple[Iterator[tuple[object, object]], str, int]] = [(iter(dict.items(tree)), "", 0)]
    while stack:
        items, prefix, depth = stack[-1]
        pair = next(items, None)
        if pair is None:
            stack.pop()
            continue
        key, value = pair
        entries += 1
        if entries > limit:
            raise _shared_containers(limit)
        try:
            part = _key(key)
        except PyTorchReadError:
            if isinstance(value, (_TensorRef, dict, list, tuple)):
                raise
            part = f"<{type(key).__name__} key>"  # a leaf skipped anyway: named as best it can be
        characters += len(prefix) + len(part)
        if characters > 8 * limit:
            raise _shared_containers(8 * limit)
        name = prefix + part
        if isinstance(value, _TensorRef):
            if name in found:
                raise PyTorchReadError(f"two tensors flatten to the same name {excerpt(name)}")
            found[name] = value
        elif isinstance(value, (dict, list, tuple)):
            if depth + 1 > limits.max_pickle_depth:
                raise _too_deep(limits)
            stack.append((_items(value), name + ".", depth + 1))
        else:
            skipped[name] = describe_leaf(value)
    return found, skipped


def _items(container: dict[object, object] | list[object] | tuple[object, ...]) -> Iterator[tuple[object, object]]:
    """A container's (key, item) pairs, list and tuple items keyed by index; read with the built-in
    types' own methods, whatever attributes a pickle gave the object."""
    if isinstance(container, dict):
        return iter(dict.items(container))
    if isinstance(container, list):
        return enumerate(list.__iter__(container))
    return enumerate(tuple.__iter__(container))


class _CopyBudget:
    """Bytes the C-order copies of non-contiguous views may take: the storages' own bytes plus
    ``max_view_expansion``, so stride-0 or overlapping views cannot turn a few bytes into gigabytes."""

    def __init__(self, arrays: Mapping[_Storage, np.ndarray], limits: ReadLimits) -> None:
        self.left = limits.max_view_expansion + sum(array.nbytes for array in arrays.values())
        self.limits = limits

    def spend(self, nbytes: int, name: str, shape: tuple[int, ...]) -> None:
        if nbytes > self.left:
            raise PyTorchReadError(
                f"tensor {excerpt(name)} of size {shape} is a view that repeats its storage's elements "
                f"(stride 0 or overlapping); copying it would exceed the expansion limit of the "
                f"storages' size + {self.limits.max_view_expansion} bytes: {self.limits.lift('max_view_expansion')}"
            )
        self.left -= nbytes


def _materialize(tensor: _TensorRef, elements: np.ndarray, name: str, budget: _CopyBudget) -> np.ndarray:
    """Apply the view to its storage: zero-copy when C-contiguous, else a C-order copy (paid
    from ``budget``)."""
    shape, stride, offset = tensor.shape, tensor.stride, tensor.offset
    if tensor.dtype != elements.dtype:  # an untyped (byte) storage viewed as the tensor's dtype
        if elements.size % tensor.dtype.itemsize:
            raise PyTorchReadError(f"tensor {excerpt(name)}: its storage of {elements.size} bytes is not a whole number of {tensor.dtype}")
        elements = elements.view(tensor.dtype)
        if tensor.storage.big_endian != (sys.byteorder == "big") and tensor.dtype.itemsize > 1:
            budget.spend(elements.nbytes, name, shape)
            elements = elements.byteswap()
    extent = 0 if 0 in shape else 1 + sum((dim - 1) * step for dim, step in zip(shape, stride))
    if offset + extent > elements.size:
        raise PyTorchReadError(
            f"tensor {excerpt(name)} (offset {offset}, size {shape}, stride {stride}) reaches past "
            f"its storage of {elements.size} elements"
        )
    view = as_strided(
        elements[offset:],
        shape=shape,
        strides=tuple(step * elements.itemsize for step in stride),
        writeable=False,
    )
    if view.flags.c_contiguous:
        return view
    budget.spend(math.prod(shape) * elements.itemsize, name, shape)
    try:
        copy = np.ascontiguousarray(view)
    except MemoryError as exc:
        raise PyTorchReadError(f"tensor {excerpt(name)} of size {shape} does not fit in memory") from exc
    copy.flags.writeable = False
    return copy


def read_pytorch(
    path: str | os.PathLike[str], *, top_level_key: str | None = None, **caps: Unpack[ReadCaps]
) -> dict[str, np.ndarray]:
    """Load every tensor of a PyTorch checkpoint as numpy arrays keyed by dotted paths.

    Nothing in the file is executed, so untrusted checkpoints are safe to read. Nested dicts
    flatten to names like ``"encoder.layer.weight"``, tensors in lists and tuples to indexed
    names (``"layers.0.weight"``, as a Burn ``Vec`` of modules is named); non-tensor leaves
    (epochs, configs) are left out. Arrays are read-only; tensors that share a storage come back
    as views of the same buffer.

    Args:
        path: The ``.pt`` / ``.pth`` file.
        top_level_key: One entry of the root dict to read (e.g. ``"state_dict"`` or ``"model"``),
            so checkpoints that wrap the state dict yield the module's own names.
        **caps: Lift the reader's bounds (``max_pickle_depth``, ``max_view_expansion``,
            ``max_inflate_bytes``, ``max_inflate_ratio``).

    Returns:
        The arrays by path.

    Raises:
        PyTorchReadError: The file is not a readable checkpoint, or ``top_level_key`` is absent.
        UnsafePickleError: The pickle asks for something outside the allowlist.
        OSError: The file cannot be opened.
    """
    limits = ReadLimits.of(caps, PICKLE_LIMITS, "a PyTorch checkpoint")
    return read_pytorch_contents(path, top_level_key=top_level_key, limits=limits)[0]


def read_pytorch_contents(
    path: str | os.PathLike[str], *, top_level_key: str | None = None, limits: ReadLimits = DEFAULT_LIMITS, folder: Folder | None = None
) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """:func:`read_pytorch`'s tensors, and the leaves that are not tensors: path → what it is
    (``{"epoch": "a int, not a tensor"}``); ``folder``: the folder it was reached through (a shard's)."""
    try:
        root, arrays, file_size = _load(Path(path), limits, folder)
        if not isinstance(root, dict):
            kind = "tensor" if isinstance(root, _TensorRef) else type(root).__name__
            raise PyTorchReadError(f"the checkpoint holds a {kind}, not a dict of tensors")
        if top_level_key is not None:
            selected = dict.get(root, top_level_key)
            if not isinstance(selected, dict):
                available = sorted(key for key in dict.keys(root) if type(key) is str)
                raise PyTorchReadError(f"no dict under top-level key {top_level_key!r}; keys: {excerpts(available) or 'none'}")
            root = selected
        tensors: dict[str, np.ndarray] = {}
        done: dict[_TensorRef, np.ndarray] = {}
        budget = _CopyBudget(arrays, limits)
        found, skipped = _flatten(root, file_size, limits)
        for name, tensor in found.items():
            if tensor not in done:
                elements = arrays.get(tensor.storage)
                if elements is None:
                    raise PyTorchReadError(
                        f"tensor {excerpt(name)}: storage {excerpt(tensor.storage.key)} has no data"
                    )
                done[tensor] = _materialize(tensor, elements, name, budget)
            tensors[name] = done[tensor]
        return tensors, skipped
    except PyTorchReadError as exc:
        exc.add_note(f"while reading {os.fspath(path)!r}")
        raise


def read_pytorch_object(path: str | os.PathLike[str], **caps: Unpack[ReadCaps]) -> object:
    """The whole object a checkpoint holds, with every tensor as a read-only numpy array.

    Unlike ``read_pytorch``, nothing is flattened or skipped: dicts (keys as pickled, so an
    optimizer's integer state keys stay ints), lists, tuples, numbers, strings, ``None`` and
    tensors come back as they were saved — what an optimizer's or LR scheduler's
    ``state_dict()`` needs. The same allowlist applies: nothing in the file is executed. Shared
    tensors come back as the same array object.

    Args:
        path: The ``.pt`` / ``.pth`` file.
        **caps: As ``read_pytorch``'s.

    Returns:
        The object.

    Raises:
        PyTorchReadError: The file is not a readable checkpoint.
        UnsafePickleError: The pickle asks for something outside the allowlist.
        OSError: The file cannot be opened.
    """
    limits = ReadLimits.of(caps, PICKLE_LIMITS, "a PyTorch checkpoint")
    try:
        root, arrays, file_size = _load(Path(path), limits)
        return _plain(root, arrays, file_size, f"<tensor in {os.fspath(path)}>", limits)
    except PyTorchReadError as exc:
        exc.add_note(f"while reading {os.fspath(path)!r}")
        raise


def read_pytorch_buffer(buffer: memoryview, limits: ReadLimits = DEFAULT_LIMITS, *, copy: bool = False) -> object:
    """:func:`read_pytorch_object` of a ``torch.save`` zip held in memory (a record of a DCP
    ``.distcp`` file): arrays of stored records view ``buffer``, or are copies with ``copy``."""
    root, arrays = _load_zip(cast(BinaryIO, io.BufferedReader(_BufferFile(buffer))), buffer, limits)
    return _plain(root, arrays, len(buffer), "<tensor in a torch.save record>", limits, copy)


def unpickle_allowing(data: bytes, extra: Mapping[tuple[str, str], object]) -> object:
    """A bare pickle (no storages) read with this module's allowlist plus ``extra`` globals —
    the stand-ins of another format's classes (DCP's metadata): nothing else is imported or called."""
    return _unpickle(io.BytesIO(data), extra=extra)


class _BufferFile(io.RawIOBase):
    """A read-only, seekable file over a buffer, without copying it (``io.BytesIO`` would)."""

    def __init__(self, buffer: memoryview) -> None:
        self._view = buffer
        self._at = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, target: Any) -> int:
        chunk = self._view[self._at : self._at + len(target)]
        target[: len(chunk)] = chunk
        self._at += len(chunk)
        return len(chunk)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._at, io.SEEK_END: len(self._view)}[whence]
        if base + offset < 0:
            raise OSError("negative seek position")
        self._at = base + offset
        return self._at

    def tell(self) -> int:
        return self._at


def _plain(
    root: object, arrays: Mapping[_Storage, np.ndarray], file_size: int, where: str, limits: ReadLimits, copy: bool = False
) -> object:
    """``root`` with every tensor materialised and every container as a plain one (see
    :func:`read_pytorch_object`); ``copy``: arrays own their memory rather than view the file's.
    Entries walked are bounded by the file's size; the walk keeps its own stack, as ``_flatten``'s."""
    done: dict[_TensorRef, np.ndarray] = {}
    budget = _CopyBudget(arrays, limits)
    limit = file_size + _ENTRY_SLACK
    entries = 0

    def start(value: object, depth: int) -> tuple[object, Iterator[tuple[object, object]] | None]:
        """A leaf as it is returned, or a container's empty plain copy (a list for a tuple, made
        one once filled) and its items."""
        nonlocal entries
        entries += 1
        if entries > limit:
            raise _shared_containers(limit)
        if depth > limits.max_pickle_depth:
            raise _too_deep(limits)
        if isinstance(value, dict):
            return (collections.OrderedDict() if isinstance(value, collections.OrderedDict) else {}), _items(value)
        if isinstance(value, (list, tuple)):
            return [], _items(value)
        if isinstance(value, _TensorRef):
            if value not in done:
                elements = arrays.get(value.storage)
                if elements is None:
                    raise PyTorchReadError(f"storage {excerpt(value.storage.key)} has no data")
                array = _materialize(value, elements, where, budget)
                done[value] = array.copy() if copy else array
            return done[value], None
        if isinstance(value, _Storage):
            raise PyTorchReadError("a bare storage outside any tensor is not supported")
        return value, None

    def put(container: dict[object, object] | list[object], key: object, value: object) -> None:
        if isinstance(container, dict):
            container[key] = value
        else:
            container.append(value)

    out, items = start(root, 0)
    if items is None:
        return out
    # (the copy being filled, the original's remaining items, its depth, whether it was a tuple, its key)
    stack: list[tuple[Any, Iterator[tuple[object, object]], int, bool, object]] = [(out, items, 0, isinstance(root, tuple), None)]
    while True:
        out, items, depth, was_tuple, key = stack[-1]
        pair = next(items, None)
        if pair is not None:
            made, inner = start(pair[1], depth + 1)
            if inner is None:
                put(out, pair[0], made)
            else:
                stack.append((made, inner, depth + 1, isinstance(pair[1], tuple), pair[0]))
            continue
        stack.pop()
        finished = tuple(out) if was_tuple else out
        if not stack:
            return finished
        put(stack[-1][0], key, finished)
