"""The table tier's scan in each of its implementations: the regex scan (``table.python_columns``,
always tested) and the compiled kernel (``burnpack/core/_ctable.c``, tested when it is built).

The kernel may decline any map (the regex scan then decides), but whatever it accepts it must
split into exactly the regex scan's columns; and ``scan_table`` must give the same table, or
None, whichever scan runs.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import burnpack
from burnpack import DType, Tensor, Writer
from burnpack.codec._cbor import map_header
from burnpack.codec._generated.metadata import METADATA_FIRST_KEY
from burnpack.core import table
from burnpack.dtypes import numpy_dtype
from burnpack.errors import OptionError
from burnpack.core.table import TensorTable, python_columns, scan_table
from tests.conftest import BURN_PACK_FIXTURES, fixture_params, peak_bytes
from tests.strategies import PackSpec, packs

COMPILED = table._ctable is not None
needs_kernel = pytest.mark.skipif(not COMPILED, reason="the optional compiled table scan is not built")


def _blob(data: bytes) -> bytes:
    size = int.from_bytes(data[6:10], "little")
    return data[10 : 10 + size]


def _pack_blob(tensors: list[Tensor], **kw: object) -> bytes:
    return _blob(Writer(tensors, **kw).to_bytes())  # type: ignore[arg-type]


def _entries(blob: bytes) -> tuple[int, int] | None:
    """(position, count) of the tensors map's entries, None when scan_table stops before them."""
    if not blob or not 1 <= blob[0] - 0xA0 <= 3 or not blob.startswith(METADATA_FIRST_KEY, 1):
        return None
    try:
        count, pos = map_header(blob, 1 + len(METADATA_FIRST_KEY))
    except Exception:
        return None
    return (pos, count) if 0 < count <= len(blob) else None


def _normal(columns: tuple) -> tuple:
    end, names, dtypes, rank_head, shape_keys, starts, ends, param_ids, max_end = columns
    starts = table._native_column(starts) if isinstance(starts, bytes) else table._uint_column(starts)
    if isinstance(ends, bytes):
        ends = table._native_column(ends)
    assert starts.dtype == ends.dtype == np.uint64 and type(max_end) is int and max_end == max(ends.tolist())
    return end, names, list(dtypes), rank_head, list(shape_keys), starts.tolist(), ends.tolist(), list(param_ids), max_end


def _snapshot(meta: object) -> object:
    if meta is None:
        return None
    tensors = meta.tensors  # type: ignore[attr-defined]
    assert isinstance(tensors, TensorTable)
    columns = (tensors.names, tensors._dtype_keys, tensors._shape_keys, tensors._shapes, tensors.starts.tolist(), tensors.ends.tolist(),
               tensors._param_ids)
    return meta._replace(tensors=None), columns, dict(tensors.items())  # type: ignore[attr-defined]


def _assert_agree(blob: bytes) -> bool:
    """Both scans give the same columns and table; True when the kernel accepted the entries."""
    accepted = False
    where = _entries(blob)
    if COMPILED and where is not None:
        found = table._ctable.scan_entries(blob, *where, table._KERNEL_SPEC)
        if found is not None:
            accepted = True
            regex = python_columns(blob, *where)
            assert regex is not None, "the kernel accepted entries the regex scan refuses"
            assert _normal(regex) == _normal(found)
    expected = _snapshot(scan_table(blob, compiled=False))
    assert _snapshot(scan_table(blob)) == expected
    return accepted


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packs(max_tensors=8))
def test_scans_agree_on_generated_packs(spec: PackSpec) -> None:
    _assert_agree(_pack_blob(spec.tensors, metadata=spec.metadata, scalars=spec.scalars))


_ascii_names = st.lists(st.text("abcxyz._0123456789", max_size=30), min_size=1, max_size=10, unique=True)
_plain_dtypes = st.sampled_from([DType.F32, DType.F64, DType.BF16, DType.I8, DType.U8, DType.U64, DType.Bool(burnpack.BoolStore.Native)])


@needs_kernel
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(_ascii_names, st.data())
def test_the_kernel_accepts_every_map_burn_writes_with_ascii_names(names: list[str], data: st.DataObject) -> None:
    tensors = []
    for name in names:
        dtype = data.draw(_plain_dtypes)
        shape = data.draw(st.lists(st.sampled_from([0, 1, 2, 24, 256]), max_size=4).filter(lambda dims: np.prod(dims) <= 4096).map(tuple))
        tensors.append(Tensor.from_numpy(name, np.zeros(shape, numpy_dtype(dtype)), dtype=dtype, param_id=data.draw(st.none() | st.integers(0, 2**64 - 1))))
    assert _assert_agree(_pack_blob(tensors))


def _varied_blob() -> bytes:
    tensors = [Tensor.from_numpy("a" * n, np.arange(n % 7 + 30, dtype=np.float32), param_id=n * 1_000_003 if n % 2 else None)
               for n in (1, 23, 24, 200, 255)]
    tensors += [Tensor.from_numpy("b.bool", np.ones((2, 3), np.bool_)), Tensor.from_numpy("c.scalar", np.float64(1.5)),
                Tensor.from_numpy("d.bf16", np.ones((3, 1, 2), np.float32), dtype=DType.BF16)]
    return _pack_blob(tensors, metadata={"k": "v"})


def test_scans_agree_on_every_truncation_of_a_pack() -> None:
    blob = _varied_blob()
    assert _assert_agree(blob) == COMPILED
    for cut in range(len(blob)):
        _assert_agree(blob[:cut])


def test_scans_agree_on_every_single_byte_change_of_a_pack() -> None:
    blob = _pack_blob([Tensor.from_numpy("w", np.ones((2, 300), np.float32), param_id=7), Tensor.from_numpy("x", np.ones(3, np.int64))])
    for at in range(len(blob)):
        for value in {0x00, 0x17, 0x18, 0x1C, 0x60, 0x78, 0x80, 0x98, 0xA3, 0xA4, 0xFF, blob[at] ^ 1}:
            _assert_agree(blob[:at] + bytes([value]) + blob[at + 1 :])


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300), st.integers(1, 40))
def test_scans_agree_on_random_bytes_after_the_tensors_key(body: bytes, count: int) -> None:
    _assert_agree(bytes([0xA1]) + METADATA_FIRST_KEY + bytes([0xB8, count]) + body)


def _entry(name: bytes, head: int = 0xA3, dtype: bytes = b"cF32", shape: bytes = b"\x81\x02", offsets: bytes = b"\x00\x08",
           param: bytes | None = None) -> bytes:
    name_head = bytes([0x60 + len(name)]) if len(name) < 24 else bytes([0x78, len(name)])
    out = name_head + name + bytes([head]) + b"\x65dtype" + dtype + b"\x65shape" + shape + b"\x6cdata_offsets\x82" + offsets
    return out + (b"\x68param_id" + param if param is not None else b"")


def _tensors_map(*entries: bytes) -> bytes:
    return bytes([0xA1]) + METADATA_FIRST_KEY + bytes([0xB8, len(entries)]) + b"".join(entries)


HOSTILE = {
    "plain": _tensors_map(_entry(b"a"), _entry(b"b", offsets=b"\x18\x20\x19\x01\x00")),
    "non-canonical integers": _tensors_map(_entry(b"a", shape=b"\x81\x18\x02", offsets=b"\x1a\x00\x00\x00\x00\x1b" + bytes(7) + b"\x08")),
    "struct head without param_id counting one": _tensors_map(_entry(b"a", head=0xA4)),
    "param_id the struct head does not count": _tensors_map(_entry(b"a", param=b"\x05")),
    "param_id key with a broken integer": _tensors_map(_entry(b"a", param=b"\x1c")),
    "param_id of every width": _tensors_map(*(_entry(bytes([0x61 + i]), head=0xA4, param=p)
                                              for i, p in enumerate([b"\x05", b"\x18\xff", b"\x19\x01\x00", b"\x1a" + bytes(4),
                                                                     b"\x1b" + bytes(range(8))]))),
    "names out of order": _tensors_map(_entry(b"b"), _entry(b"a")),
    "a name twice": _tensors_map(_entry(b"a"), _entry(b"a")),
    "a name and its prefix": _tensors_map(_entry(b"ab"), _entry(b"a")),
    "a NUL in a name": _tensors_map(_entry(b"a\x00b")),
    "a name that is not UTF-8": _tensors_map(_entry(b"a\xff")),
    "a struct-head byte in a name": _tensors_map(_entry("£".encode())),
    "a descriptor inside a name": _tensors_map(_entry(b"x" + _entry(b"")[1:])),
    "a name of 255 bytes": _tensors_map(_entry(b"n" * 255)),
    "a name of 256 bytes": bytes([0xA1]) + METADATA_FIRST_KEY + b"\xa1\x79\x01\x00" + b"n" * 256 + _entry(b"")[1:],
    "a name length past the descriptor": _tensors_map(b"\x63a" + _entry(b"")[1:]),
    "rank above its integers": _tensors_map(_entry(b"a", shape=b"\x82\x02")),
    "rank below its integers": _tensors_map(_entry(b"a", shape=b"\x81\x02\x03")),
    "rank in one and two bytes": _tensors_map(_entry(b"a", shape=b"\x98\x01\x02"), _entry(b"b", shape=b"\x99\x00\x02\x01\x02")),
    "mixed ranks": _tensors_map(_entry(b"a", shape=b"\x80"), _entry(b"b", shape=b"\x81\x02"), _entry(b"c", shape=b"\x82\x02\x03")),
    "a reserved head in a shape": _tensors_map(_entry(b"a", shape=b"\x81\x1c")),
    "a negative integer in a shape": _tensors_map(_entry(b"a", shape=b"\x81\x20")),
    "an indefinite shape": _tensors_map(_entry(b"a", shape=b"\x9f\x02\xff")),
    "an offset running past the end": _tensors_map(_entry(b"a", offsets=b"\x00\x1b\x00")),
    "an unknown dtype": _tensors_map(_entry(b"a", dtype=b"cF8E")),
    "every dtype": _tensors_map(*(_entry(bytes([0x41 + i]), dtype=key) for i, key in enumerate(table._KERNEL_SPEC[2]))),
    "another field after the tensors": bytes([0xA2]) + _tensors_map(_entry(b"a"))[1:] + b"\x68metadata\xa1\x61k\x61v",
    "the tensors key twice": bytes([0xA2]) + _tensors_map(_entry(b"a"))[1:] + _tensors_map(_entry(b"b"))[1:],
    "fewer entries than the map claims": _tensors_map(_entry(b"a"))[:-len(_entry(b"a"))] + b"\x02" + _entry(b"a"),
}


@pytest.mark.parametrize("name", HOSTILE)
def test_scans_agree_on_hand_built_maps(name: str) -> None:
    _assert_agree(HOSTILE[name])


def _fixture_blobs() -> list:
    return [pytest.param(path, id=path.name) for path in sorted(BURN_PACK_FIXTURES.glob("*.bpk"))]


@pytest.mark.parametrize("path", fixture_params(BURN_PACK_FIXTURES, _fixture_blobs))
def test_scans_agree_on_burns_fixtures(path) -> None:
    data = path.read_bytes()
    if len(data) >= 10:
        _assert_agree(_blob(data))


def test_scans_agree_on_the_conformance_vectors() -> None:
    import conformance

    vectors = sorted((Path(conformance.__file__).parent / "vectors").rglob("*.bpk"))
    assert vectors
    for path in vectors:
        data = path.read_bytes()
        if len(data) >= 10:
            _assert_agree(_blob(data))


@needs_kernel
@pytest.mark.parametrize("claimed", [1 << 20, 1 << 40, (1 << 64) - 1])
def test_the_kernel_believes_a_claimed_count_only_as_far_as_the_bytes_hold_entries(claimed: int) -> None:
    blob = bytes([0xA1]) + METADATA_FIRST_KEY + b"\xbb" + struct.pack(">Q", claimed) + _entry(b"a") * 3
    assert peak_bytes(lambda: scan_table(blob, compiled=True)) < 10_000
    assert table._ctable.scan_entries(blob, 18, min(claimed, 1 << 40), table._KERNEL_SPEC) is None


def test_compiled_true_without_the_kernel_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(table, "_ctable", None)
    with pytest.raises(OptionError, match="_ctable"):
        scan_table(HOSTILE["plain"], compiled=True)


def test_without_the_kernel_load_opens_packs_with_the_regex_scan() -> None:
    script = (
        "import sys; sys.modules['burnpack.core._ctable'] = None  # as when the optional build failed\n"
        "import burnpack; from burnpack.core import table\n"
        "pack = burnpack.load(bytes.fromhex(sys.argv[1]))\n"
        "print(table.KERNEL, len(pack.names))\n"
    )
    tensors = [Tensor.from_numpy(f"t{i:02}", np.full(3, i, np.int32), param_id=i or None) for i in range(20)]
    result = subprocess.run([sys.executable, "-c", script, Writer(tensors).to_bytes().hex()], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["python", "20"]


def test_a_kernel_built_from_older_sources_is_not_used() -> None:
    script = (
        "import sys, types\n"
        "old = types.ModuleType('burnpack.core._ctable')  # an in-place build from before INTERFACE 2: eight columns\n"
        "old.scan_entries = lambda *args: (0,) * 8\n"
        "sys.modules['burnpack.core._ctable'] = old\n"
        "import burnpack; from burnpack.core import table\n"
        "pack = burnpack.load(bytes.fromhex(sys.argv[1]))\n"
        "print(table.KERNEL, len(pack.names))\n"
    )
    tensors = [Tensor.from_numpy(f"t{i:02}", np.full(3, i, np.int32)) for i in range(5)]
    result = subprocess.run([sys.executable, "-c", script, Writer(tensors).to_bytes().hex()], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["python", "5"]


@needs_kernel
def test_load_scans_with_the_compiled_kernel_when_it_is_built(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = table._ctable.scan_entries
    monkeypatch.setattr(table, "_ctable", type(sys)("stand-in"))
    table._ctable.scan_entries = lambda *args: calls.append(args[2]) or real(*args)  # type: ignore[attr-defined]
    pack = burnpack.load(Writer([Tensor.from_numpy(f"t{i}", np.ones(2, np.float32)) for i in range(5)]).to_bytes())
    assert table.KERNEL == "compiled" and calls == [5] and pack.names == [f"t{i}" for i in range(5)]


@needs_kernel
@pytest.mark.parametrize("wrap", [bytearray, memoryview], ids=["bytearray", "memoryview"])
def test_the_compiled_scan_takes_bytes_only(wrap: type) -> None:
    """Its second pass copies the names and keys its first pass proved: a buffer that can change
    between them (a mapped file another process rewrites) is refused; scan_table copies into bytes."""
    blob = _pack_blob([Tensor.from_numpy("a", np.ones(2, np.float32))])
    pos, count = _entries(blob)  # type: ignore[misc]
    with pytest.raises(TypeError):
        table._ctable.scan_entries(wrap(blob), pos, count, table._KERNEL_SPEC)
    assert table._ctable.scan_entries(blob, pos, count, table._KERNEL_SPEC) is not None
    assert scan_table(wrap(blob), compiled=True) == scan_table(blob, compiled=False)
