"""``ModuleRecord``: a module's parameters, keyed by module path (burn-core ``src/store/mod.rs``).

What is written: one tensor per parameter named by its dotted path, each with its ``param_id``,
data in traversal order, no metadata, no scalars — so a record made from the same tensors, ids and
order is byte-identical with Burn's. What loading does (Burn's ``ModuleRecordMapper``): every
target parameter takes the record entry at its path (and the record's ``param_id``); a parameter
without an entry is *missing*, an entry without a parameter is *unused*, a shape mismatch is an
*apply error* that leaves the parameter unchanged. Then, in this order: apply errors fail unless
``validate(False)``, missing ones unless ``allow_partial(True)``, unused ones unless
``allow_unused(True)``.
"""

from __future__ import annotations

import difflib
import enum
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..codec._generated.metadata import DType
from ..core.dtypes import dtype_from_numpy
from ..errors import QuantizationError, RecordValidationError, ValidationError
from ..core.quant import QuantizedTensor, decode
from ..core.writer import Writer
from ..core.frameworks import as_numpy, is_torch_module
from ..core.patterns import compile_pattern
from ..core.tensor import Tensor
from ._cast import cast_array, is_float
from ..core.source import FileSource
from ._common import (
    new_param_id,
    open_pack,
    pack_tensors_in_data_order,
    rust_debug_list,
    shape_debug,
)
from .tree import Param, RunningState, is_leaf, iter_params, map_params

PathLike = str | os.PathLike[str]


class DTypePolicy(enum.Enum):
    """How a parameter's dtype is chosen on load (Burn's ``DTypePolicy``)."""

    FromRecord = "FromRecord"
    """The parameter takes the record's dtype; data is loaded verbatim (Burn's default)."""
    CastToModule = "CastToModule"
    """The record's data is cast to the parameter's current dtype."""


@dataclass(frozen=True)
class ApplyError:
    """One parameter a load could not apply (Burn's ``ApplyError``; only shape mismatches here).

    Args:
        path: The parameter's path.
        expected: The target parameter's shape.
        found: The record entry's shape.
        kind: What went wrong (``"shape"``).
    """

    path: str
    expected: tuple[int, ...]
    found: tuple[int, ...]
    kind: str = "ShapeMismatch"

    @property
    def message(self) -> str:
        """Burn's text: ``"{path}: shape mismatch, expected Shape { dims: [..] } but record has ..."``."""
        return f"{self.path}: shape mismatch, expected {shape_debug(self.expected)} but record has {shape_debug(self.found)}"


@dataclass
class ApplyReport:
    """What a load did, like burn-store's ``ApplyResult``.

    Args:
        applied: Parameters that took the record's value.
        skipped: Parameters with an entry that was not applied (shape mismatch).
        missing: Parameters without an entry.
        unused: Entries no parameter took (sorted).
        errors: The apply errors.
        suggestions: For each missing path, the closest unused entry ("did you mean ...").
    """

    applied: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    unused: list[str] = field(default_factory=list)
    errors: list[ApplyError] = field(default_factory=list)
    suggestions: dict[str, str] = field(default_factory=dict)

    def is_success(self) -> bool:
        """Whether the load had no apply errors (Burn's ``ApplyResult::is_success``).

        Returns:
            True without apply errors.
        """
        return not self.errors

    def hint_lines(self) -> list[str]:
        """The "did you mean" lines for the missing paths, as error messages show them.

        Returns:
            One indented line per suggestion.
        """
        return [f"  {path}: did you mean {other!r}?" for path, other in self.suggestions.items()]

    def __str__(self) -> str:
        lines = [
            f"applied {len(self.applied)}, skipped {len(self.skipped)}, missing {len(self.missing)}, "
            f"unused {len(self.unused)}, errors {len(self.errors)}"
        ]
        for error in self.errors:
            lines.append(f"  error: {error.message}")
        for path in self.missing:
            hint = f" (did you mean {self.suggestions[path]!r}?)" if path in self.suggestions else ""
            lines.append(f"  missing: {path}{hint}")
        for path in self.unused:
            lines.append(f"  unused: {path}")
        return "\n".join(lines)


@dataclass
class LoadResult:
    """The outcome of ``ModuleRecord.apply``.

    Args:
        module: The loaded target: for a mapping or nested structure, a copy whose every parameter
            is a ``Param`` (value, ``param_id``, dtype); for a ``torch.nn.Module``, the same module,
            updated in place.
        params: The flat ``{path: Param}`` view.
        report: What happened.
    """

    module: Any
    params: dict[str, Param]
    report: ApplyReport

    @property
    def param_ids(self) -> dict[str, int | None]:
        """``{path: param_id}`` of every parameter after the load."""
        return {path: p.param_id for path, p in self.params.items()}

    def numpy(self) -> dict[str, np.ndarray]:
        """Every parameter after the load, as arrays.

        Returns:
            ``{path: array}``.
        """
        return {path: as_numpy(p.value) for path, p in self.params.items()}


class ModuleRecord:
    """A module's parameters: path → (``param_id``, dtype, shape, data), in data order.

    Make one with ``from_module`` (Burn's ``module.into_record()``) or ``from_tensors``, read one
    with ``load`` / ``from_bytes``, write with ``save`` / ``into_bytes``, and apply it with
    ``apply`` (Burn's ``try_load_record``). The builder methods (``allow_partial``,
    ``allow_unused``, ``validate``, ``with_dtype_policy``, ``cast_to_module_dtype``) return a
    configured copy; they only affect loading.

    Args:
        tensors: The parameters as tensors named by path, in data order.
        dtype_policy: How a loaded entry's dtype meets the parameter's.
        allow_partial: Allow target parameters absent from the record.
        allow_unused: Allow record entries no target parameter takes.
        validate: Refuse shape mismatches (False: the parameter keeps its value).
    """

    def __init__(
        self,
        tensors: Iterable[Tensor] = (),
        *,
        dtype_policy: DTypePolicy = DTypePolicy.FromRecord,
        allow_partial: bool = False,
        allow_unused: bool = False,
        validate: bool = True,
    ) -> None:
        self.tensors: list[Tensor] = list(tensors)
        taken = {t.param_id for t in self.tensors if t.param_id is not None}
        for i, tensor in enumerate(self.tensors):
            if tensor.param_id is None:  # Burn: `param_id.unwrap_or_else(ParamId::new)`
                self.tensors[i] = tensor.with_name(tensor.name, param_id=new_param_id(taken))
        self._dtype_policy = DTypePolicy(dtype_policy)
        self._allow_partial = bool(allow_partial)
        self._allow_unused = bool(allow_unused)
        self._validate = bool(validate)

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_module(cls, module: Any, *, param_ids: Mapping[str, int] | None = None) -> ModuleRecord:
        """Burn's ``module.into_record()`` for a Python structure or a ``torch.nn.Module``.

        Paths follow Burn's rules (``burnpack.records.tree``); ids come from ``Param`` leaves or
        ``param_ids``, else fresh random ones; dtypes from ``Param.dtype`` or the data.

        Args:
            module: A nested structure (dicts, lists, dataclasses, ``Variant``, …) or a ``torch.nn.Module``.
            param_ids: Ids by path (u64), for leaves that carry none.

        Returns:
            The record.

        Raises:
            RecordError: A leaf is not a tensor Burn can hold, or a path is not one Burn can name.
        """
        tensors = []
        for path, leaf in iter_params(module):
            value, pid, dtype = leaf, None, None
            if isinstance(leaf, Param):
                value, pid, dtype = leaf.value, leaf.param_id, leaf.dtype
            if param_ids is not None and path in param_ids:
                pid = param_ids[path]
            if isinstance(value, QuantizedTensor):  # kept quantized: its QFloat payload
                value = value.to_tensor(path)
            if isinstance(value, Tensor) and (dtype is None or dtype == value.dtype):
                tensors.append(value.with_name(path, param_id=pid))
            else:
                if isinstance(value, Tensor):
                    value = value.numpy()
                tensors.append(Tensor.from_numpy(path, value, param_id=pid, dtype=dtype))
        return cls(tensors)

    @classmethod
    def from_tensors(
        cls, tensors: Mapping[str, Any] | Iterable[Tensor], *, param_ids: Mapping[str, int] | None = None
    ) -> ModuleRecord:
        """A record from ``{path: array or Param}`` (in data order) or ``Tensor`` objects.

        Args:
            tensors: The parameters.
            param_ids: Ids by path (u64), for entries that carry none.

        Returns:
            The record.

        Raises:
            RecordError: An entry is not a tensor Burn can hold.
        """
        if isinstance(tensors, Mapping):
            return cls.from_module(dict(tensors), param_ids=param_ids)
        items = list(tensors)
        if param_ids:
            items = [t.with_name(t.name, param_id=param_ids.get(t.name)) for t in items]
        return cls(items)

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> ModuleRecord:
        """Burn's ``ModuleRecord::from_bytes``: the tensors of a pack; metadata and scalars ignored.

        Args:
            data: The pack's bytes.

        Returns:
            The record.

        Raises:
            BurnpackError: The bytes are not a valid pack.
        """
        return cls(pack_tensors_in_data_order(open_pack(data)))

    @classmethod
    def load(cls, path: PathLike | FileSource) -> ModuleRecord:
        """Burn's ``ModuleRecord::load`` (``.bpk`` appended when the extensionless path is absent).

        Args:
            path: The file, or a file opened already (a ``FileSource``).

        Returns:
            The record, viewing the mapped file.

        Raises:
            BurnpackError: The file is not a valid pack, or cannot be read.
        """
        return cls(pack_tensors_in_data_order(open_pack(path)))

    # -- output ------------------------------------------------------------------------------
    def _writer(self) -> Writer:
        return Writer(self.tensors)

    def into_bytes(self) -> bytes:
        """The burnpack bytes Burn's ``into_bytes`` writes: tensors with ids, nothing else.

        Returns:
            The pack's bytes.
        """
        return self._writer().to_bytes()

    def save(self, path: PathLike) -> Path:
        """Write the record, atomically.

        Args:
            path: Where to write (``.bpk`` appended when the path has no extension).

        Returns:
            The path written.

        Raises:
            BurnpackError: The record cannot be written (Burn's writer error, or I/O).
        """
        return self._writer().write_atomic(path)

    # -- options (builder, like Burn's by-value methods) ------------------------------------
    def _with(self, **changes: Any) -> ModuleRecord:
        twin = ModuleRecord.__new__(ModuleRecord)
        twin.__dict__.update(self.__dict__)
        twin.tensors = list(self.tensors)
        for key, value in changes.items():
            setattr(twin, f"_{key}", value)
        return twin

    def with_dtype_policy(self, policy: DTypePolicy | str) -> ModuleRecord:
        """A copy that loads with another dtype policy.

        Args:
            policy: A ``DTypePolicy`` or its value.

        Returns:
            The configured copy.

        Raises:
            ValueError: The policy is unknown.
        """
        return self._with(dtype_policy=DTypePolicy(policy))

    def cast_to_module_dtype(self) -> ModuleRecord:
        """Sugar for ``with_dtype_policy(DTypePolicy.CastToModule)``.

        Returns:
            The configured copy.
        """
        return self.with_dtype_policy(DTypePolicy.CastToModule)

    def allow_partial(self, allow: bool = True) -> ModuleRecord:
        """A copy that allows target parameters absent from the record (they keep their value).

        Args:
            allow: Whether to allow them.

        Returns:
            The configured copy.
        """
        return self._with(allow_partial=bool(allow))

    def allow_unused(self, allow: bool = True) -> ModuleRecord:
        """A copy that allows record entries no target parameter takes (refused by default since Burn 44415923).

        Args:
            allow: Whether to allow them.

        Returns:
            The configured copy.
        """
        return self._with(allow_unused=bool(allow))

    def validate(self, validate: bool = True) -> ModuleRecord:
        """A copy that refuses shape mismatches, or (``validate(False)``) silences them only: the
        parameter keeps its value.

        Args:
            validate: Whether to refuse them.

        Returns:
            The configured copy.
        """
        return self._with(validate=bool(validate))

    @property
    def dtype_policy(self) -> DTypePolicy:
        """How a loaded entry's dtype meets the parameter's."""
        return self._dtype_policy

    @property
    def options(self) -> dict[str, Any]:
        """The loading options: ``dtype_policy``, ``allow_partial``, ``allow_unused``, ``validate``."""
        return {
            "dtype_policy": self._dtype_policy,
            "allow_partial": self._allow_partial,
            "allow_unused": self._allow_unused,
            "validate": self._validate,
        }

    # -- content -----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.tensors)

    def is_empty(self) -> bool:
        """Whether the record has no parameter.

        Returns:
            True when empty.
        """
        return not self.tensors

    def __iter__(self) -> Iterator[str]:
        return (t.name for t in self.tensors)

    def __contains__(self, path: object) -> bool:
        return any(t.name == path for t in self.tensors)

    def __getitem__(self, path: str) -> Tensor:
        for tensor in self.tensors:
            if tensor.name == path:
                return tensor
        raise KeyError(path)

    def __repr__(self) -> str:
        opts = ", ".join(f"{k}={v.value if isinstance(v, DTypePolicy) else v}" for k, v in self.options.items())
        return f"<ModuleRecord: {len(self)} tensors, {self.num_elements} elements; {opts}>"

    @property
    def paths(self) -> list[str]:
        """Parameter paths in data order."""
        return [t.name for t in self.tensors]

    @property
    def param_ids(self) -> dict[str, int | None]:
        """``{path: param_id}``."""
        return {t.name: t.param_id for t in self.tensors}

    @property
    def num_elements(self) -> int:
        """The number of elements over every parameter."""
        return sum(t.numel for t in self.tensors)

    def numpy(self, *, dequantize: bool = False) -> dict[str, np.ndarray]:
        """Every parameter as an array (zero-copy for loaded records).

        Args:
            dequantize: Give QFloat tensors as their float32 values instead of their raw bytes.

        Returns:
            ``{path: array}``.
        """
        return {t.name: dequantized(t) if dequantize and _is_quantized(t.dtype) else t.numpy() for t in self.tensors}

    def params(self) -> dict[str, Param]:
        """``{path: Param(array, param_id, dtype)}``: a structure ``from_module`` turns back into this
        very record (QFloat data stays a ``Tensor``: its bytes are not its shape).

        Returns:
            The parameters by path.
        """
        return {t.name: Param(t if _is_quantized(t.dtype) else t.numpy(), t.param_id, t.dtype) for t in self.tensors}

    def into_record_group(
        self,
        *,
        paths: Iterable[str] | None = None,
        ids: Iterable[int] | None = None,
        regex: str | None = None,
        predicate: Callable[[str, int | None], bool] | None = None,
    ) -> ModuleRecord:
        """The record of a parameter group (Burn's ``into_record_group``); load it with ``allow_partial(True)``.

        An entry is in the group when it matches any of the selectors given.

        Args:
            paths: Exact paths.
            ids: Param ids.
            regex: A regular expression searched in each path (like Rust's ``is_match``).
            predicate: ``predicate(path, id)``.

        Returns:
            The group's record.

        Raises:
            InvalidPattern: ``regex`` is not one Burn's regex syntax accepts.
        """
        path_set = set(paths or ())
        id_set = set(ids or ())
        pattern = compile_pattern(regex) if regex is not None else None

        def keep(t: Tensor) -> bool:
            return (
                t.name in path_set
                or t.param_id in id_set
                or (pattern is not None and pattern.search(t.name) is not None)
                or (predicate is not None and bool(predicate(t.name, t.param_id)))
            )

        twin = self._with()
        twin.tensors = [t for t in self.tensors if keep(t)]
        return twin

    def same_content(self, other: ModuleRecord) -> bool:
        """Whether two records hold the same tensors (names, ids, dtypes, shapes, bytes) in the same order.

        Args:
            other: The record to compare with.

        Returns:
            True when they do.
        """
        return len(self) == len(other) and all(a.same_content(b) for a, b in zip(self.tensors, other.tensors))

    # -- loading into a target ---------------------------------------------------------------
    def report(self, target: Any) -> ApplyReport:
        """What ``apply`` would find, without applying or raising.

        Args:
            target: What ``apply`` would load into.

        Returns:
            The report.
        """
        return self._apply(target, dry_run=True)[2]

    def apply(self, target: Any, *, dequantize: bool = False) -> LoadResult:
        """Load into ``target`` (Burn's ``module.try_load_record(record)``), raising on failure.

        Quantized (QFloat) entries stay quantized, unless ``dequantize``.

        Args:
            target: A mapping ``{path: array or Param}``, a nested structure (dicts, lists,
                dataclasses, ``Variant``...; see ``burnpack.records.tree``) or a ``torch.nn.Module``
                (updated in place).
            dequantize: Load QFloat entries into float parameters as their dequantized values, cast
                to the parameter's float dtype (F32 when it has none); a parameter that is itself
                QFloat still takes the quantized data.

        Returns:
            The loaded target, its parameters and the report.

        Raises:
            RecordValidationError: Burn's message — ``Apply errors: [...]``, ``Missing tensors:
                [...]`` or ``Unused tensors: [...]``, checked in that order — with the full report.
        """
        module, params, report = self._apply(target, dry_run=False, dequantize=dequantize)
        if self._validate and report.errors:
            raise RecordValidationError(
                f"Apply errors: {rust_debug_list(e.message for e in report.errors)}", kind="apply", report=report
            )
        if not self._allow_partial and report.missing:
            raise RecordValidationError(
                f"Missing tensors: {rust_debug_list(report.missing)}", kind="missing", report=report, hints=report.hint_lines()
            )
        if not self._allow_unused and report.unused:
            raise RecordValidationError(
                f"Unused tensors: {rust_debug_list(report.unused)}", kind="unused", report=report
            )
        return LoadResult(module, params, report)

    def _apply(self, target: Any, *, dry_run: bool, dequantize: bool = False) -> tuple[Any, dict[str, Param], ApplyReport]:
        entries = {t.name: t for t in self.tensors}  # a later duplicate wins, as in Burn's HashMap
        report = ApplyReport()
        params: dict[str, Param] = {}
        taken_ids: set[int] = set()

        def resolve(path: str, current_dtype: Callable[[], DType], shape: tuple[int, ...]) -> Any:
            entry = entries.pop(path, None)
            if entry is None:
                report.missing.append(path)
                return None
            if entry.shape != shape:
                report.errors.append(ApplyError(path, shape, entry.shape))
                report.skipped.append(path)
                return None
            report.applied.append(path)
            if dry_run:
                return None
            if dequantize and _is_quantized(entry.dtype):
                wanted = current_dtype()
                if not _is_quantized(wanted):
                    wanted = wanted if is_float(wanted) else DType.F32
                    return entry, wanted, cast_array(dequantized(entry), DType.F32, wanted, where=path)
            dtype = entry.dtype if self._dtype_policy is DTypePolicy.FromRecord else current_dtype()
            if dtype != entry.dtype:
                return entry, dtype, cast_array(entry.numpy(), entry.dtype, dtype, where=path)
            return entry, dtype, entry if _is_quantized(dtype) else entry.numpy()

        if is_torch_module(target):
            from . import _torch

            module = _torch.apply_to_module(target, resolve, params, dry_run=dry_run)
        else:

            def load_leaf(path: str, leaf: Any) -> Param:
                value, pid, dtype = leaf, None, None
                if isinstance(leaf, Param):
                    value, pid, dtype = leaf.value, leaf.param_id, leaf.dtype
                elif isinstance(leaf, Tensor):
                    pid = leaf.param_id
                if isinstance(value, Tensor):
                    array, shape = None, value.shape
                    dtype = dtype if dtype is not None else value.dtype
                else:
                    array = as_numpy(value)
                    shape = tuple(int(d) for d in array.shape)

                def current_dtype() -> DType:
                    if dtype is not None:
                        return dtype
                    assert array is not None  # a Tensor leaf always has its dtype
                    try:
                        return dtype_from_numpy(array.dtype)
                    except ValueError as exc:
                        raise ValidationError(f"{path}: {exc}") from None

                hit = resolve(path, current_dtype, shape)
                param: Param
                if hit is not None and isinstance(leaf, RunningState):  # keeps its own id
                    _, new_dtype, data = hit
                    param = RunningState(data, pid if pid is not None else new_param_id(taken_ids), new_dtype)
                elif hit is not None:
                    entry, new_dtype, data = hit
                    param = Param(data, entry.param_id, new_dtype)
                else:
                    if pid is None:
                        pid = new_param_id(taken_ids)
                    kind = RunningState if isinstance(leaf, RunningState) else Param
                    param = kind(value, pid, dtype if dtype is not None or array is None else _maybe_dtype(array))
                params[path] = param
                return param

            module = map_params(target, load_leaf) if not is_leaf(target) else load_leaf("", target)
        report.unused = sorted(entries)
        for path in report.missing:
            close = difflib.get_close_matches(path, report.unused, n=1, cutoff=0.6)
            if close:
                report.suggestions[path] = close[0]
        return module, params, report


def load_record(target: Any, record: ModuleRecord) -> LoadResult:
    """Burn's ``module.try_load_record(record)`` (and ``load_record``, which panics where this
    raises): ``record.apply(target)``.

    Args:
        target: What to load into (see ``ModuleRecord.apply``).
        record: The record.

    Returns:
        The loaded target, its parameters and the report.

    Raises:
        RecordValidationError: The record does not fit the target (Burn's message).
    """
    return record.apply(target)


def _is_quantized(dtype: DType) -> bool:
    return dtype.is_quantized


def dequantized(tensor: Tensor) -> np.ndarray:
    """A QFloat record tensor's float32 values (``QuantizationError`` when they cannot be had)."""
    if not _is_quantized(tensor.dtype):
        raise QuantizationError(f"tensor {tensor.name!r} is {tensor.dtype.variant}, not a quantized (QFloat) tensor")
    return decode(tensor.numpy(), tensor.dtype.value, tensor.shape, name=tensor.name).dequantize()


def _maybe_dtype(array: np.ndarray) -> DType | None:
    try:
        return dtype_from_numpy(array.dtype)
    except ValueError:
        return None

