"""Pieces every record kind shares: param ids, scalar conversions, Rust renderings, reading packs."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ..codec._cbor import rust_debug_str
from ..codec._cbor import I64_MAX, I64_MIN, U64_MAX
from ..codec._generated.metadata import Scalar
from ..errors import ValidationError
from ..core.reader import Pack, PathLike, load
from ..core.source import FileSource
from ..core.tensor import Tensor

RANK_KEY = "__rank"
"""The scalar ``<param id>.__rank`` Burn's optimizers store with each parameter's state."""

# Rust integer types → (min, max); what `TryFrom<Scalar>` accepts (burn-pack base.rs:203-229).
INT_RANGES: dict[str, tuple[int, int]] = {
    "u8": (0, (1 << 8) - 1),
    "u16": (0, (1 << 16) - 1),
    "u32": (0, (1 << 32) - 1),
    "u64": (0, U64_MAX),
    "usize": (0, U64_MAX),
    "i8": (-(1 << 7), (1 << 7) - 1),
    "i16": (-(1 << 15), (1 << 15) - 1),
    "i32": (-(1 << 31), (1 << 31) - 1),
    "i64": (I64_MIN, I64_MAX),
    "isize": (I64_MIN, I64_MAX),
}
"""Rust's ``usize``/``isize`` are 64-bit here, as on every platform Burn trains on."""


def new_param_id(taken: set[int] | None = None) -> int:
    """A random u64, as Burn's ``ParamId::new`` draws one; never one of ``taken``."""
    import secrets  # (random's import is paid when an id is drawn, not by every reader)

    while True:
        value = secrets.randbits(64)
        if taken is None or value not in taken:
            if taken is not None:
                taken.add(value)
            return value


PARAM_ID_DOMAIN = b"burnpack param id\x00"
"""What every derived param id's hash input starts with (``derive_param_ids``)."""


def derive_param_ids(names: Iterable[str], *, seed: int | None = None, taken: Iterable[int] = ()) -> list[int]:
    r"""The param ids burnpack gives tensors a conversion invents ids for: one u64 per name, the same
    for the same names every time, so that converting the same input twice gives the same bytes
    (Burn draws random ones; any u64 is valid to it).

    The rule: the id of the tensor at path ``name`` is the first 8 bytes, read little-endian, of
    ``BLAKE2b-64(b"burnpack param id\0" + key)``, where ``key`` is the UTF-8 path, or
    ``str(seed) + "\0" + path`` with a ``seed``. Should an id be taken (by ``taken``, or by an
    earlier name), ``"\0"`` and a counter from 1 are appended to the key until it is not.

    Args:
        names: The tensor paths, in order.
        seed: A number mixed into every key.
        taken: Ids already in use.

    Returns:
        One id per name, in order.
    """
    import hashlib  # (paid when ids are derived, not by every reader)

    used = set(taken)
    out = []
    prefix = PARAM_ID_DOMAIN + (b"" if seed is None else str(int(seed)).encode() + b"\x00")
    for name in names:
        key = prefix + name.encode("utf-8")
        value = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little")
        counter = 0
        while value in used:
            counter += 1
            value = int.from_bytes(hashlib.blake2b(key + b"\x00" + str(counter).encode(), digest_size=8).digest(), "little")
        used.add(value)
        out.append(value)
    return out


def parse_u64(text: str) -> int | None:
    """Rust's ``text.parse::<u64>()``: optional ``+``, ASCII digits only, no overflow; else None."""
    digits = text[1:] if text.startswith("+") else text
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    value = int(digits)
    return value if value <= U64_MAX else None


def scalar_for(rust_type: str, value: Any) -> Scalar:
    """The ``Scalar`` Burn writes for a field of ``rust_type`` (``From<T> for Scalar``)."""
    if rust_type == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise ValidationError(f"{value!r} is not a bool")
        return Scalar.Bool(bool(value))
    if rust_type in ("f32", "f64"):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise ValidationError(f"{value!r} is not a number")
        number = float(value)
        if rust_type == "f32":
            number = float(np.float32(number))
        return Scalar.Float(number)
    lo, hi = INT_RANGES[rust_type]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or not lo <= value <= hi:
        raise ValidationError(f"{value!r} does not fit the Rust type {rust_type}")
    return Scalar.UInt(int(value)) if rust_type.startswith("u") else Scalar.Int(int(value))


def scalar_value(rust_type: str, scalar: Scalar | None) -> Any:
    """Burn's ``TryFrom<Scalar>`` for ``rust_type``: the value, or None where Burn gets an error.

    Integers accept ``Int`` and ``UInt`` in range; ``f64``/``f32`` accept ``Float``, ``Int`` and
    ``UInt``; ``bool`` only ``Bool``.
    """
    if scalar is None:
        return None
    value = scalar.value
    if rust_type == "bool":
        return value if scalar.is_bool else None
    integer = scalar.is_int or scalar.is_uint
    if rust_type in ("f32", "f64"):
        if not (scalar.is_float or integer):
            return None
        number = float(value)
        return float(np.float32(number)) if rust_type == "f32" else number
    if not integer:
        return None
    lo, hi = INT_RANGES[rust_type]
    return value if lo <= value <= hi else None


def rust_debug_list(items: Iterable[str]) -> str:
    """Rust's ``{:?}`` of a ``Vec<String>``: ``["a", "b"]``."""
    return "[" + ", ".join(rust_debug_str(item) for item in items) + "]"


def shape_debug(shape: Iterable[int]) -> str:
    """Burn's ``{:?}`` of a ``Shape`` (cubecl-zspace derives Debug): ``Shape { dims: [2, 3] }``."""
    return "Shape { dims: [" + ", ".join(str(d) for d in shape) + "] }"


def pack_tensors_in_data_order(pack: Pack) -> list[Tensor]:
    """Every tensor of ``pack`` (Burn's ``into_tensors`` checks), in the order of its data.

    Burn returns them by name; keeping the data order instead is what lets a loaded record
    re-save byte for byte (the MNIST file's data follows the module's field order).
    """
    views = pack.tensors()
    views.sort(key=lambda v: (v.data_offsets[0], v.data_offsets[1]))
    return [Tensor(v.name, v.dtype, v.shape, v.memoryview(), param_id=v.param_id) for v in views]


def open_pack(source: PathLike | FileSource | bytes | bytearray | memoryview) -> Pack:
    """Open a record source: a path (``.bpk`` appended as Burn's reader does), a file opened
    already (a checkpoint's, through its closed folder) or bytes."""
    return load(source)

