"""One read plan: a pack's decoded descriptors as checked byte ranges.

Every way of reading tensors — one ``TensorView``, ``pack.numpy()``, ``pack.torch()``, slices,
remote blocks, kernel copies (``file_range``) — asks a ``ReadPlan`` where a tensor's bytes are,
so Burn's per-tensor checks live here only, in Burn's order (burn@2c06be35
crates/burn-pack/src/reader.rs ``tensor_range``: offset overflow, end before start,
``MAX_TENSOR_SIZE``, then the range inside the source: ``into_tensors`` takes each tensor as
``Bytes::view(start, end)``, which refuses ``start > end || end > len`` — an empty range that
starts past the end too; cubecl@48348968 crates/cubecl-environment/src/bytes/base.rs). The plan does not care which decoder tier
produced the descriptors: a ``TensorTable`` (columns) or a dict of ``TensorDescriptor`` give the
same answers, the table's in bulk.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from . import legacy
from ..codec._cbor import U64_MAX
from ..codec._generated.metadata import TensorDescriptor
from .dtypes import UNIT_VIEW_SPECS
from ..errors import LegacyFormatError, ValidationError
from .limits import LoadLimits
from .table import TensorTable
from .tensor import NUMPY_MAX_DIMS

__all__ = ["ReadPlan"]


_NO_VIEW: tuple[int, np.dtype] = (0, np.dtype("V1"))
"""Size 0: the dtype has no in-place view (Bool stores, QFloat, or bf16 on big-endian hosts)."""


class ReadPlan:
    """Where each tensor of a pack is, checked as Burn checks it before it reads the bytes."""

    __slots__ = ("descriptors", "names", "base", "size", "limits", "from_file", "diagnose_legacy")

    def __init__(
        self,
        descriptors: Mapping[str, TensorDescriptor],
        *,
        base: int,
        size: int,
        limits: LoadLimits,
        from_file: bool,
        diagnose_legacy: bool,
    ) -> None:
        self.descriptors = descriptors
        self.names: list[str] = descriptors.names if isinstance(descriptors, TensorTable) else sorted(descriptors)
        self.base = base
        """Where the data section starts: offsets are relative to it."""
        self.size = size
        """The source's size when the plan was made."""
        self.limits = limits
        self.from_file = from_file
        self.diagnose_legacy = diagnose_legacy

    def contains(self, name: object) -> bool:
        """``name in pack``: a str naming a tensor (anything else is not a tensor name)."""
        return type(name) is str and name in self.descriptors

    def range(self, name: str, offsets: tuple[int, int], *, whole_pack: bool = False) -> tuple[int, int]:
        """Absolute [start, end) of a tensor, with Burn's ``tensor_range`` checks in its order.

        Burn words an out-of-range tensor differently in ``into_tensors`` (``whole_pack``) and in
        ``tensor_data`` for memory and file sources; the messages follow it.
        """
        start, end = self.base + offsets[0], self.base + offsets[1]
        if start > U64_MAX or end > U64_MAX:
            raise ValidationError(f"Tensor '{name}' has corrupted offset data: overflow")
        if end < start:
            raise ValidationError(f"Tensor '{name}' has corrupted offset data: end {end} < start {start}")
        limit = self.limits.max_tensor_size
        if end - start > limit:
            raise ValidationError(
                f"Tensor '{name}' size {end - start} exceeds maximum allowed size of {limit} bytes (potential DoS attack)",
                where=self.limits.lift("max_tensor_size"),
            )
        available = self.size
        if end > available:
            if whole_pack:
                message = f"Tensor '{name}' data range {start}..{end} could not be viewed (source is {available} bytes)"
            elif self.from_file:
                message = f"Tensor '{name}' data range {start}..{end} could not be viewed"
            else:
                message = f"Tensor data range {start}..{end} is out of bounds (buffer is {available} bytes)"
            if self.diagnose_legacy:  # Burn's own error, with the diagnosis beside it
                error = LegacyFormatError(message, where=f"tensor {name!r}, file is {available} bytes; {legacy.LAYOUT_DIAGNOSIS}")
                raise legacy.with_diagnosis(error, legacy.LAYOUT_DIAGNOSIS, legacy.LAYOUT_DETAILS)
            raise ValidationError(message, where=f"tensor {name!r}, file is {available} bytes")
        # An in-range tensor of a pre-alignment-looking file is returned as Burn returns it: the
        # layout cannot be told apart from a modern file cut at exactly 10 + M + max_end, whose
        # bytes are right. Opening such a file has already warned (LegacyFormatWarning).
        return start, end

    def ranges(self) -> list[tuple[int, int]]:
        """Every tensor's range in name order, checked as Burn's ``into_tensors`` checks them:
        the first tensor that fails raises its error."""
        table = self.descriptors
        if isinstance(table, TensorTable) and not self._bad(table.starts, table.ends).any():
            base = self.base
            return [(base + start, base + end) for start, end in zip(table.starts.tolist(), table.ends.tolist())]
        descriptors = self.descriptors
        return [self.range(name, descriptors[name].data_offsets, whole_pack=True) for name in self.names]

    def _bad(self, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """``range``'s checks over columns of relative offsets: True where a tensor fails one."""
        room = self.size - self.base  # a table's offsets are u64 and the base is small: no overflow
        if room < 0:  # the data section starts past the end: every range ends past it, an empty one too
            return np.ones(starts.shape, np.bool_)
        return (ends < starts) | (ends - starts > self.limits.max_tensor_size) | (ends > room)

    def unit_view(self, descriptor: TensorDescriptor) -> tuple[int, np.dtype]:
        """(element size, numpy dtype) when the tensor is exactly one in-place slice of the data
        section viewed as that dtype — Burn's checks pass, its length is its shape's, numpy can
        hold the shape; else size 0, and the per-tensor path words the refusal."""
        dtype, shape, (start, end) = descriptor.dtype, descriptor.shape, descriptor.data_offsets
        spec = UNIT_VIEW_SPECS.get(dtype.variant, _NO_VIEW) if dtype.value is None else _NO_VIEW
        size = spec[0]
        length = end - start
        if (
            not size
            or not 0 <= length <= self.limits.max_tensor_size
            or self.base + end > self.size
            or start % size
            or length != math.prod(shape) * size
            or len(shape) > NUMPY_MAX_DIMS
            or 0 in shape
        ):
            return _NO_VIEW
        return spec

    def table_arrays(self, table: TensorTable, buffer: memoryview) -> list[np.ndarray] | None:
        """Every tensor of a ``TensorTable`` as a zero-copy array of ``buffer``, in name order, one
        numpy view per (dtype, shape) group; None when any tensor is not a ``unit_view``."""
        if not table.names:
            return []
        limit = self.size - self.base
        if limit < 0 or self._bad(table.starts, table.ends).any():
            return None
        sections: dict[np.dtype, np.ndarray] = {}
        out: list[np.ndarray] = [None] * len(table.names)  # type: ignore[list-item]
        groups = table.groups()
        for dtype, shape, index in groups:
            size, np_dtype = UNIT_VIEW_SPECS.get(dtype.variant, _NO_VIEW) if dtype.value is None else _NO_VIEW
            if not size or len(shape) > NUMPY_MAX_DIMS or 0 in shape:
                return None  # the checked path words what numpy cannot hold
            starts, ends = table.starts[index], table.ends[index]
            length = math.prod(shape) * size
            if length > limit or (ends - starts != length).any() or (starts % size).any():
                return None
            section = sections.get(np_dtype)
            if section is None:
                section = sections[np_dtype] = np.frombuffer(buffer, np_dtype, limit // size, self.base)
            numel = length // size
            at = (starts // size).tolist()
            if shape:
                strides = tuple(size * math.prod(shape[d + 1 :]) for d in range(len(shape)))
                windows = np.lib.stride_tricks.as_strided(section, (section.size - numel + 1, *shape), (size, *strides))
                views = list(map(windows.__getitem__, at))
            else:
                views = [section[k : k + 1].reshape(()) for k in at]
            if len(groups) == 1:
                return views
            for i, view in zip(index.tolist(), views):
                out[i] = view
        return out
