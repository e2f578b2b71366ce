"""What every converter passes around: lazily loaded tensors with Burn dtypes, in data order.

An ``Entry`` is one tensor: its name, Burn ``DType``, shape, optional ``param_id``, the Burn
module type of the module that owns it (when known) and a loader that produces its elements as
a numpy array only when asked — so a conversion that changes nothing but names or the container
never copies data, and one that transposes or casts works one tensor at a time while writing.

A ``TensorSet`` is a whole file's worth: the entries in data order plus the user metadata
and scalars the source carried.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..codec._generated.metadata import DTYPE_ALIASES, DTYPE_INFO, BoolStore, DType, Scalar
from ..core.dtypes import NATIVE_BOOL, debug, dtype_from_numpy, element_size, numpy_dtype
from ..errors import ConversionError, OptionError, ValidationError
from ..core.tensor import FileRange, Tensor, _blank, _describe, _freeze

__all__ = ["Entry", "Rule", "TensorSet", "cast_array", "dtype_name", "flatten_nested", "is_float", "not_a_tensor", "parse_dtype"]

def _dtype_names() -> dict[str, DType]:
    """Every spelling ``parse_dtype`` takes: Burn's names, torch's, C's, and the Bool stores."""
    names: dict[str, DType] = {}
    for variant, info in DTYPE_INFO.items():
        if variant in DType.UNIT_VARIANTS:
            dtype = getattr(DType, variant)
            names[variant.lower()] = dtype
            if info.torch is not None:
                names.setdefault(info.torch, dtype)
    names[DTYPE_INFO[NATIVE_BOOL.variant].torch or ""] = NATIVE_BOOL
    for alias, variant in DTYPE_ALIASES.items():
        names.setdefault(alias, getattr(DType, variant))
    for store in BoolStore:
        names[debug(DType.Bool(store)).lower()] = DType.Bool(store)
    return names


_NAMES = _dtype_names()
_EXPECTED = ", ".join(dict.fromkeys(debug(dtype) for dtype in _NAMES.values()))


def parse_dtype(value: str | DType) -> DType:
    """A Burn dtype from its name (``F16``, ``bf16``, ``float32``, ``Bool(U8)``...)."""
    if isinstance(value, DType):
        return value
    try:
        return _NAMES[str(value).strip().lower()]
    except KeyError:
        raise OptionError(f"unknown dtype {value!r}; expected one of {_EXPECTED}") from None


def flatten_nested(
    tree: Mapping[Any, Any], is_tensor: Callable[[Any], bool], skipped: dict[str, str], *, max_depth: int = 128
) -> Iterator[tuple[str, Any]]:
    """``(name, tensor)`` for every tensor in nested mappings, lists and tuples, named by its dotted
    key path (list and tuple items by index: ``layers.0.weight``, as Burn names a ``Vec`` of
    modules); every other leaf goes into ``skipped`` as path → what it is."""

    def walk(items: Iterable[tuple[Any, Any]], prefix: str, depth: int) -> Iterator[tuple[str, Any]]:
        if depth > max_depth:
            raise ValueError(f"containers nest more than {max_depth} deep")
        for key, value in items:
            name = f"{prefix}{key}"
            if is_tensor(value):
                yield name, value
            elif isinstance(value, Mapping):
                yield from walk(value.items(), name + ".", depth + 1)
            elif isinstance(value, (list, tuple)):
                yield from walk(enumerate(value), name + ".", depth + 1)
            else:
                skipped[name] = not_a_tensor(type(value).__name__)

    return walk(tree.items(), "", 0)


def not_a_tensor(kind: str) -> str:
    """Why a reader skipped a leaf of a nested state: ``not_a_tensor("int")`` → ``"an int, not a
    tensor"`` (``None``'s type stays bare: ``"None, not a tensor"``)."""
    if kind in ("None", "NoneType"):
        return "None, not a tensor"
    return f"{'an' if kind[:1].lower() in tuple('aeiou') else 'a'} {kind}, not a tensor"


def dtype_name(dtype: DType) -> str:
    """Burn's Debug rendering (``F32``, ``Bool(U8)``)."""
    return debug(dtype)


def is_float(dtype: DType) -> bool:
    """Burn's ``DType::is_float``: F64, F32, Flex32, F16, BF16."""
    return dtype.is_float


def cast_array(array: np.ndarray, target: DType) -> np.ndarray:
    """Elements converted to ``target`` (round to nearest even, as Burn's ``convert_dtype``)."""
    want = numpy_dtype(target)
    if array.dtype == want:
        return array
    return array.astype(want)


@dataclass(frozen=True)
class Rule:
    """The layout rule that produced a tensor: the module it belongs to, that module's type, where
    the type came from (``"live module"``, ``"module_types"``, ``"type_rules"``, ``"inferred: …"``,
    ``"best guess: …"``) and what was done to the tensor."""

    module: str
    kind: str
    type_from: str
    what: str

    def to_dict(self) -> dict[str, str]:
        return {"module": self.module, "type": self.kind, "type_from": self.type_from, "rule": self.what}



class Entry(Tensor):
    """One tensor on its way through a conversion: a deferred ``Tensor`` plus where it came from.

    Its bytes come from a loader that produces its elements as a numpy array only when asked;
    ``numpy()`` calls the loader each time (nothing is cached, so a writer holding only entries
    holds no tensor data).

    Args:
        name: The tensor's name.
        dtype: Its Burn dtype.
        shape: Its shape.
        load: Produces its elements as a numpy array.
        param_id: Burn's parameter id, if any.
        module_type: The Burn module type of the module that owns it (when known).
        source_name: The name the tensor had in the input (by default ``name``).
        steps: What was done to it (``"transposed"``, ``"F32 -> F16"``...).
        rule: The module-layout rule that produced it (``Rule``: which module, its type and
            where that came from, and what was done), when a module type decided its layout.
        byte_len: Its length in bytes, for QFloat (whose elements do not tell it).
        file_range: Where its bytes are in a file as they are (a burnpack writer copies them from
            there in the kernel); a ``replace`` with a new loader or dtype drops it.
        tie: The same for entries that are one tensor of the source under several names (tied
            weights, read from one storage), so that a writer whose format can alias them writes
            it once; dropped as ``file_range`` is.
    """

    __slots__ = ("module_type", "source_name", "steps", "rule", "tie", "_file_range")

    module_type: str | None
    source_name: str
    steps: tuple[str, ...]
    rule: Rule | None
    tie: str | None
    _file_range: FileRange | None

    def __new__(  # type: ignore[misc]
        cls,
        name: str,
        dtype: DType,
        shape: Iterable[int],
        load: Callable[[], np.ndarray],
        *,
        param_id: int | None = None,
        module_type: str | None = None,
        source_name: str | None = None,
        steps: Iterable[str] = (),
        rule: Rule | None = None,
        byte_len: int | None = None,
        file_range: FileRange | None = None,
        tie: str | None = None,
    ) -> Entry:
        entry = _blank(cls)
        _describe(entry, name, dtype, shape, param_id)
        size = element_size(dtype)
        if size is not None:
            byte_len = math.prod(entry.shape) * size
        elif byte_len is None:  # QFloat: only its data knows its length
            byte_len = load().nbytes
        entry.byte_len, entry._data, entry._provider = byte_len, None, load
        if file_range is not None and file_range.length != byte_len:
            raise ValidationError(f"tensor {name!r}: {byte_len} bytes, but its {file_range!r} holds {file_range.length}")
        entry._file_range = file_range
        entry.module_type = module_type
        entry.source_name = name if source_name is None else source_name
        entry.steps = tuple(steps)
        entry.rule = rule
        entry.tie = tie
        return _freeze(entry, cls)

    @classmethod
    def from_numpy(  # type: ignore[override]
        cls,
        name: str,
        array: np.ndarray,
        *,
        param_id: int | None = None,
        dtype: DType | None = None,
        source_name: str | None = None,
    ) -> Entry:
        """An entry holding an array already in memory.

        Args:
            name: The tensor's name.
            array: The array.
            param_id: Burn's parameter id, if any.
            dtype: The Burn dtype; by default the array's.
            source_name: The name it had in the input.

        Returns:
            The entry.
        """
        if dtype is None:
            dtype = dtype_from_numpy(array.dtype)
        if not array.dtype.isnative:  # a big-endian .npy member or array: swapped when it is written, not before
            native = array.dtype.newbyteorder("=")
            return cls(name, dtype, array.shape, lambda: array.astype(native), param_id=param_id, source_name=source_name, byte_len=array.nbytes)
        return cls(name, dtype, array.shape, lambda: array, param_id=param_id, source_name=source_name, byte_len=array.nbytes)

    def numpy(self) -> np.ndarray:
        """The elements (numpy dtype per ``burnpack.dtypes.numpy_dtype``), shaped; the loader runs each time.

        Returns:
            The array.
        """
        assert self._provider is not None
        return self._provider()  # type: ignore[return-value]

    def checked_numpy(self) -> np.ndarray:
        """``numpy()``, checked to be of the entry's dtype and shape, where a writer copies the
        elements as they are (a copy into a buffer would cast silently); QFloat bytes unchecked.

        Returns:
            The array.

        Raises:
            ConversionError: The loader gave another dtype or shape.
        """
        array = self.numpy()
        if element_size(self.dtype) is None:
            return array
        want = numpy_dtype(self.dtype)
        if array.dtype != want:
            raise ConversionError(f"tensor {self.name!r}: loader produced {array.dtype}, expected {want}")
        if tuple(array.shape) != self.shape:
            raise ConversionError(f"tensor {self.name!r}: loader produced shape {list(array.shape)}, expected {list(self.shape)}")
        return array

    def replace(self, **changes: Any) -> Entry:  # type: ignore[override]
        """A copy with some fields changed.

        Args:
            **changes: Fields of the constructor (``load=`` for a new loader), and ``step=`` to append
                one step.

        Returns:
            The changed copy.

        Raises:
            TypeError: A field is unknown.
        """
        step = changes.pop("step", None)
        fields: dict[str, Any] = {
            "name": self.name,
            "dtype": self.dtype,
            "shape": self.shape,
            "load": self._provider,
            "param_id": self.param_id,
            "module_type": self.module_type,
            "source_name": self.source_name,
            "steps": self.steps,
            "rule": self.rule,
            "byte_len": self.byte_len,
            "file_range": self._file_range,
            "tie": self.tie,
        }
        unknown = set(changes) - set(fields)
        if unknown:
            raise TypeError(f"Entry has no field(s) {sorted(unknown)}")
        for kept in ("file_range", "tie"):
            if kept not in changes and {"load", "dtype", "byte_len"} & set(changes):
                fields[kept] = None  # the bytes change: no longer the file's, nor the tensor's it shared
        fields.update(changes)
        if step is not None:
            fields["steps"] = (*fields["steps"], step)
        name, dtype, shape, load = fields.pop("name"), fields.pop("dtype"), fields.pop("shape"), fields.pop("load")
        return Entry(name, dtype, shape, load, **fields)

    @property
    def file_range(self) -> FileRange | None:
        """Where the entry's bytes are in a file, unchanged; None when they are produced."""
        return self._file_range

    @property
    def param(self) -> str:
        """The last path segment (``weight``, ``gamma``...)."""
        return self.name.rpartition(".")[2]

    @property
    def module_path(self) -> str:
        """The path of the owning module (``""`` for a root-level tensor)."""
        return self.name.rpartition(".")[0]

    def __repr__(self) -> str:
        kind = f", {self.module_type}" if self.module_type else ""
        return f"Entry({self.name!r}, {dtype_name(self.dtype)}, {list(self.shape)}{kind})"


@dataclass
class TensorSet:
    """Tensors in data order plus the metadata and scalars of their file.

    Args:
        entries: The tensors, in data order.
        metadata: The file's metadata.
        scalars: The file's scalars.
        format: The container they came from: ``burnpack``, ``safetensors``, ``pytorch``, ``npz``, ``torch``.
        module_types: Module types the source itself names (module path → type).
        top_level_key: The root-dict entry a PyTorch checkpoint was read from, if any.
        skipped: Entries of the source the reader did not take as tensors: source path → why.
        closers: What to call to release the source (``close()`` calls them).
    """

    entries: list[Entry] = field(default_factory=list)
    metadata: dict[str, str] = field(default_factory=dict)
    scalars: dict[str, Scalar] = field(default_factory=dict)
    format: str = "memory"
    """The container they came from: ``burnpack``, ``safetensors``, ``pytorch``, ``npz``, ``torch``."""
    module_types: dict[str, str] = field(default_factory=dict)
    """Module path → Burn module type, when the source knows them (a ``torch.nn.Module``)."""
    top_level_key: str | None = None
    """The top-level key the reader already selected (PyTorch files, torch objects, dicts)."""
    skipped: dict[str, str] = field(default_factory=dict)
    """Entries of the source the reader did not take as tensors: source path → why (``"epoch":
    "an int, not a tensor"``), so that nothing is left out unsaid."""
    closers: list[Callable[[], None]] = field(default_factory=list, repr=False)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, name: object) -> bool:
        return any(e.name == name for e in self.entries)

    def __getitem__(self, name: str) -> Entry:
        for entry in self.entries:
            if entry.name == name:
                return entry
        raise KeyError(name)

    @property
    def names(self) -> list[str]:
        """The tensor names, in data order."""
        return [e.name for e in self.entries]

    @property
    def nbytes(self) -> int:
        """The tensors' bytes in all."""
        return sum(e.byte_len or 0 for e in self.entries)

    def numpy(self) -> dict[str, np.ndarray]:
        """Every tensor as an array (loads every tensor).

        Returns:
            ``{name: array}`` in data order.
        """
        return {e.name: e.numpy() for e in self.entries}

    def close(self) -> None:
        """Release file mappings (arrays already taken stay valid where the OS allows)."""
        for close in self.closers:
            try:
                close()
            except BufferError:  # a view still exported keeps the mapping; that is fine
                pass
        self.closers.clear()

    def __enter__(self) -> TensorSet:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @classmethod
    def from_numpy(
        cls,
        arrays: Mapping[str, Any],
        *,
        metadata: Mapping[str, str] | None = None,
        dtypes: Mapping[str, DType] | None = None,
        format: str = "memory",
    ) -> TensorSet:
        """A set from ``{name: array}``.

        Args:
            arrays: The arrays by name, in data order.
            metadata: User metadata.
            dtypes: Burn dtypes numpy cannot express, pinned by name.
            format: The container named as their source.

        Returns:
            The set.
        """
        entries = []
        for name, array in arrays.items():
            array = np.asarray(array)
            dtype = (dtypes or {}).get(name)
            entries.append(Entry.from_numpy(name, array, dtype=dtype))
        return cls(entries, dict(metadata or {}), format=format)

