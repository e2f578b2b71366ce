"""Writer specs: a whole pack described as JSON, for ``burnpack pack`` and the conformance suite.

A spec lists the tensors in write (= data) order with their bytes, plus metadata and scalars::

    {
      "tensors": [
        {"name": "w", "dtype": "F32", "shape": [2, 2], "param_id": 7, "data_hex": "0000803f..."},
        {"name": "m", "dtype": {"Bool": "Native"}, "shape": [3], "data_hex": "010001"}
      ],
      "metadata": {"producer": "me"},
      "scalars": {"step": {"type": "UInt", "value": 3},
                  "lr": {"type": "Float", "value": 0.001, "f64_bits": "0x3f50624dd2f1a9fc"}}
    }

``dtype`` is Burn's serde form (as in ``dump --json``); ``param_id`` may be omitted or null;
an optional ``byte_len`` declares a length other than ``data_hex``'s (a source that then produces
the wrong bytes: planning succeeds, writing fails with ``TensorBytesSizeMismatch``, as in Burn);
a Float scalar's ``f64_bits`` (when given) is authoritative, so NaN payloads and -0.0 survive
JSON; ``value`` may then be ``"nan"``, ``"inf"``, ``"-inf"``. A malformed spec raises
``SpecError``; a well-formed spec the writer refuses (duplicate names, wrong byte lengths,
out-of-range values) raises the writer's ``BurnpackError``, exactly as ``Writer`` does.
"""

from __future__ import annotations

import math
import os
import struct
from typing import TYPE_CHECKING, Any

from ..codec._generated.metadata import DType, Scalar
from .dump import scalar_json
from ..errors import OptionError, SpecError, ValidationError
from .sidefile import JSON, JSONObject, parse_json, read_side_file
from .writer import Tensor, Writer

if TYPE_CHECKING:  # the pack a spec is taken from; reading a pack needs no spec
    from .reader import Pack


def _need(obj: dict, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in obj:
        raise SpecError(f"{where}: missing '{key}'")
    value = obj[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise SpecError(f"{where}: '{key}' must be {getattr(kind, '__name__', kind)}, got {type(value).__name__}")
    return value


def scalar_from_json(name: str, obj: JSON) -> Scalar:
    """A scalar in the dump form ``{"type", "value", "f64_bits"?}`` → ``Scalar``."""
    where = f"scalar {name!r}"
    if not isinstance(obj, dict):
        raise SpecError(f"{where}: must be an object with 'type' and 'value'")
    kind = _need(obj, "type", str, where)
    if kind not in Scalar.VARIANTS:
        raise SpecError(f"{where}: unknown type {kind!r} (one of {', '.join(Scalar.VARIANTS)})")
    if kind == "Float":
        if "f64_bits" in obj:
            bits = obj["f64_bits"]
            try:
                raw = int(bits, 16) if isinstance(bits, str) else int(bits)
                return Scalar.Float(struct.unpack("<d", raw.to_bytes(8, "little"))[0])
            except (ValueError, OverflowError, TypeError):
                raise SpecError(f"{where}: f64_bits {bits!r} is not a 64-bit pattern") from None
        value = obj.get("value")
        special = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
        if isinstance(value, str) and value in special:
            return Scalar.Float(special[value])
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return Scalar.Float(float(value))
        raise SpecError(f"{where}: Float needs a number, 'nan', 'inf', '-inf' or f64_bits")
    if "value" not in obj:
        raise SpecError(f"{where}: missing 'value'")
    value = obj["value"]
    if kind == "Bool":
        if not isinstance(value, bool):
            raise SpecError(f"{where}: Bool needs true or false")
    elif not isinstance(value, int) or isinstance(value, bool):
        raise SpecError(f"{where}: {kind} needs an integer")
    return Scalar(kind, value)  # range checks (i64 / u64) are the writer's: it refuses


def tensor_from_json(obj: JSON, index: int) -> Tensor:
    where = f"tensor #{index}"
    if not isinstance(obj, dict):
        raise SpecError(f"{where}: must be an object")
    name = _need(obj, "name", str, where)
    where = f"tensor #{index} ('{name}')"
    if "dtype" not in obj:
        raise SpecError(f"{where}: missing 'dtype'")
    try:
        dtype = DType.from_serde(obj["dtype"])
    except ValueError as exc:
        raise SpecError(f"{where}: {exc}") from None
    shape = _need(obj, "shape", list, where)
    if not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
        raise SpecError(f"{where}: shape must hold integers")
    param_id = obj.get("param_id")
    if param_id is not None and (not isinstance(param_id, int) or isinstance(param_id, bool)):
        raise SpecError(f"{where}: param_id must be an integer or null")
    data_hex = _need(obj, "data_hex", str, where)
    try:
        data = bytes.fromhex(data_hex)
    except ValueError:
        raise SpecError(f"{where}: data_hex is not hexadecimal") from None
    if "byte_len" in obj:  # the length the tensor declares, when its source produces other bytes
        byte_len = _need(obj, "byte_len", int, where)
        if byte_len != len(data):
            return Tensor.deferred(name, dtype, shape, byte_len, lambda: data, param_id=param_id)
    return Tensor(name, dtype, shape, data, param_id=param_id)


def writer_from_spec(spec: JSON) -> Writer:
    """The ``Writer`` a spec describes (planning, and so any refusal, happens on first use)."""
    if not isinstance(spec, dict):
        raise SpecError("a writer spec is a JSON object with 'tensors', 'metadata' and 'scalars'")
    tensors_json = _need(spec, "tensors", list, "spec")
    tensors = [tensor_from_json(t, i) for i, t in enumerate(tensors_json)]
    metadata = spec.get("metadata") or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise SpecError("spec: 'metadata' must map strings to strings")
    scalars_json = spec.get("scalars") or {}
    if not isinstance(scalars_json, dict):
        raise SpecError("spec: 'scalars' must be an object")
    scalars = {name: scalar_from_json(name, s) for name, s in scalars_json.items()}
    return Writer(tensors, metadata=metadata, scalars=scalars)


SPEC_MAX_BYTES = 256 << 20
"""Default cap on a spec's size: tensor bytes are hex in a spec, so 128 MiB of tensors."""


def load_spec(path: str | os.PathLike[str], *, max_bytes: int = SPEC_MAX_BYTES) -> JSON:
    """The JSON of a spec file: a regular file of at most ``max_bytes``, parsed with the JSON
    checks of :func:`burnpack.core.sidefile.parse_json` (``SpecError`` when it is not JSON)."""
    return parse_spec(read_side_file(path, max_bytes=max_bytes))


def parse_spec(text: str | bytes) -> JSON:
    """The JSON of a spec's text (``SpecError`` when it is not JSON, too dense or too deep)."""
    return parse_json(text, SpecError, "spec")


def bytes_from_spec(spec: JSON) -> bytes:
    """The file a spec describes, in memory."""
    return writer_from_spec(spec).to_bytes()


def spec_from_pack(pack: Pack, *, order: str = "data") -> JSONObject:
    """The spec that re-writes an open pack: tensors in data order (or ``order="name"``)."""
    views = pack.tensors()
    if order == "data":
        views.sort(key=lambda v: (v.data_offsets, v.name))
    elif order != "name":
        raise OptionError("order is 'data' or 'name'")
    for view in views:
        if view.byte_len < 0:
            raise ValidationError(f"tensor {view.name!r} has end < start")
    return {
        "tensors": [
            {"name": v.name, "dtype": v.dtype.to_serde(), "shape": list(v.shape), "param_id": v.param_id, "data_hex": v.tobytes().hex()}
            for v in views
        ],
        "metadata": dict(pack.metadata),
        "scalars": {name: scalar_json(s) for name, s in sorted(pack.scalars.items())},
    }
