"""``skip_plain``, the inner loop of skipping an ignored value (``Decoder.skip``), in each of its
implementations: the Python walk (``_cbor.python_skip_plain``, always tested) and the compiled
kernel (``burnpack/codec/_cskip.c``, tested when it is built).

Each implementation must leave exactly the state the reference leaves — the contract, token by
token: consume what serde's IgnoredAny cannot fail on while the innermost open container is
definite, stop at the first token that needs the careful path. And skipping through either must
give Burn's verdict, error and offset, as the careful path alone gives it.
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Callable
from unittest import mock

import cbor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import burnpack
from burnpack.codec import _cbor
from burnpack.codec._generated.layout import CBOR_SCRATCH_SIZE, MAX_CBOR_DEPTH
from tests.conftest import python_calls

SkipPlain = Callable[[bytes, int, int, int, int, list[int]], tuple[int, int, bool]]

IMPLEMENTATIONS: dict[str, SkipPlain] = {"python": _cbor.python_skip_plain}
if _cbor._compiled_skip_plain is not None:
    IMPLEMENTATIONS["compiled"] = _cbor._compiled_skip_plain


def reference_skip_plain(buf: bytes, pos: int, end: int, depth: int, scratch: int, stack: list[int]) -> tuple[int, int, bool]:
    """The contract, one token at a time: the Python walk with every bulk path switched off (the
    token path itself gives the careful path's verdicts: the tests at the end of this file)."""
    with mock.patch.object(_cbor, "_ONE_BYTE_ITEMS", frozenset()), mock.patch.object(_cbor, "_FIXED_WIDTH", bytes(256)), \
            mock.patch.object(_cbor, "_ATOM_HEADS", frozenset()), mock.patch.object(_cbor, "_SHAPED_HEADS", frozenset()):
        return _cbor.python_skip_plain(buf, pos, end, depth, scratch, stack)


def _run(func: SkipPlain, buf: bytes, pos: int, end: int, depth: int, scratch: int, stack: list[int]) -> tuple:
    stack = list(stack)
    result = func(buf, pos, end, depth, scratch, stack)
    return result, stack


# Tokens of every kind, valid and hostile: integers and floats of every width, known and unknown
# simple values, strings (ASCII, non-ASCII, broken UTF-8, surrogates, overlongs), containers,
# tags, bignums, indefinite lengths, breaks, reserved values, truncated heads.
_TOKENS = [
    "00", "17", "18ff", "1903e8", "1a00010000", "1b0000000100000000", "20", "3801", "39ffff", "3a7fffffff", "3bffffffffffffffff",
    "f4", "f5", "f6", "f7", "f0", "f818", "f93c00", "fa3f8ccccd", "fb3ff0000000000000", "fc", "fd", "fe", "ff",
    "40", "4100", "42ffff", "5803aabbcc", "60", "6161", "62c3a9", "62c3", "63e282ac", "63eda080", "62c0af", "64f4908080",
    "64f09f9880", "62e282", "63f09f98", "6180", "780161", "7801", "5a00000001", "5bffffffffffffffff",
    "80", "81", "82", "83", "9803", "a0", "a1", "a2", "b803", "9f", "bf", "5f", "7f", "9b0000000100000000", "bbffffffffffffffff",
    "c6", "d903e8", "c2", "c3", "c24101", "c34100", "d8", "1c", "1f", "3f", "df",
]
_TOKEN = st.sampled_from(_TOKENS).map(bytes.fromhex)
_STACK_ENTRY = st.integers(1, 6) | st.sampled_from([-1, -2, -3, 1 << 63, (1 << 64) - 1, 2 * ((1 << 64) - 1)])


@st.composite
def _valid_items(draw: st.DrawFn) -> bytes:
    leaf = (st.integers(-(1 << 70), 1 << 70) | st.floats() | st.text(max_size=70) | st.binary(max_size=70) | st.booleans()
            | st.none())
    tree = st.recursive(leaf, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=4)
                        | st.builds(cbor2.CBORTag, st.sampled_from([0, 1, 6, 1000, 55799]), inner), max_leaves=30)
    return cbor2.dumps(draw(tree), canonical=draw(st.booleans()))


def _assert_agree(buf: bytes, pos: int, end: int, depth: int, scratch: int, stack: list[int]) -> None:
    expected = _run(reference_skip_plain, buf, pos, end, depth, scratch, stack)
    for name, func in IMPLEMENTATIONS.items():
        assert _run(func, buf, pos, end, depth, scratch, stack) == expected, name


@settings(max_examples=600, deadline=None)
@given(st.lists(_TOKEN, max_size=60).map(b"".join), st.lists(_STACK_ENTRY, min_size=0, max_size=4),
       st.integers(0, 6) | st.integers(120, MAX_CBOR_DEPTH), st.sampled_from([0, 1, 3, CBOR_SCRATCH_SIZE]), st.integers(0, 8))
def test_every_implementation_stops_where_the_contract_stops_on_token_soup(buf, stack, depth, scratch, cut):
    _assert_agree(buf, 0, max(0, len(buf) - cut), depth, scratch, stack)


@settings(max_examples=150, deadline=None)  # the kernel's differential fuzz (benchmarks/kernel_fuzz.py) runs on in CI
@given(st.lists(_valid_items(), min_size=1, max_size=40), st.integers(0, 20), st.integers(0, MAX_CBOR_DEPTH), st.integers(0, 30))
def test_every_implementation_stops_where_the_contract_stops_on_valid_cbor(items, count, depth, cut):
    body = b"".join(items)
    buf = b"\x9b" + (count or len(items)).to_bytes(8, "big") + body
    _assert_agree(buf, 9, max(9, len(buf) - cut), depth, CBOR_SCRATCH_SIZE, [count or len(items)])
    _assert_agree(buf, 0, len(buf), depth, CBOR_SCRATCH_SIZE, [1])


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.lists(_STACK_ENTRY, min_size=1, max_size=3), st.integers(0, MAX_CBOR_DEPTH))
def test_every_implementation_stops_where_the_contract_stops_on_random_bytes(buf, stack, depth):
    _assert_agree(buf, 0, len(buf), depth, CBOR_SCRATCH_SIZE, stack)


@pytest.mark.parametrize("nesting", [0, 1, 126, 127, 128, 129, 200])
@pytest.mark.parametrize("opener", ["81", "a1", "c6", "9803"])
def test_every_implementation_stops_at_the_recursion_limit_as_the_contract_does(nesting, opener):
    inner = bytes.fromhex(opener) * nesting + b"\x01" * 4
    _assert_agree(inner, 0, len(inner), MAX_CBOR_DEPTH, CBOR_SCRATCH_SIZE, [1])


_TEXTS = ["", "61", "c3a9", "e282ac", "f09f9880", "c3", "e282", "f09f98", "80", "bf", "c0af", "c1bf", "e080af", "eda080", "edbfbf",
          "ed9fbf", "ee8080", "f08080af", "f4908080", "f48fbfbf", "f5808080", "ff", "fe"]


@pytest.mark.parametrize("ascii_before", [0, 1, 7, 8, 9, 16])
@pytest.mark.parametrize("text", _TEXTS)
def test_every_implementation_judges_text_as_pythons_strict_utf8_codec(text, ascii_before):
    payload = b"a" * ascii_before + bytes.fromhex(text)
    buf = bytes([0x78, len(payload)]) + payload + b"\x80" * 4  # continuation bytes right after the text
    _assert_agree(buf, 0, len(buf), MAX_CBOR_DEPTH, CBOR_SCRATCH_SIZE, [3])


@pytest.mark.parametrize("count", [(1 << 64) - 1, 2 * ((1 << 64) - 1), 1 << 63])
def test_every_implementation_keeps_counts_past_64_bits(count):
    buf = b"\xbb" + b"\xff" * 8 + b"\x01\x02\x03"
    _assert_agree(buf, 0, len(buf), MAX_CBOR_DEPTH, CBOR_SCRATCH_SIZE, [count])
    _assert_agree(buf, 0, len(buf), MAX_CBOR_DEPTH, CBOR_SCRATCH_SIZE, [2, count])


def test_every_implementation_leaves_the_stack_entries_below_the_walk_untouched():
    stack = [5, -1, 7, 3, 1]
    buf = b"\x01\x02\x03\x04\x05"  # closes the inner 1 and 3, then counts 7 down to 4
    for name, func in IMPLEMENTATIONS.items():
        got = list(stack)
        assert func(buf, 0, len(buf), 10, CBOR_SCRATCH_SIZE, got) == (5, 12, False), name
        assert got == [5, -1, 4], name


# -- skipping through each implementation gives Burn's verdict ---------------------------------
def _with_unknown_field(junk: bytes) -> bytes:
    return b"\xa2" + cbor2.dumps({"tensors": {}})[1:] + b"\x61z" + junk


def _careful_only(buf: bytes, pos: int, end: int, depth: int, scratch: int, stack: list[int]) -> tuple[int, int, bool]:
    return pos, depth, False  # nothing consumed: every token goes through serde's walk


def _verdict(blob: bytes, func: SkipPlain) -> str:
    from burnpack.core.metadata import decode_metadata_exact

    with mock.patch.object(_cbor, "skip_plain", func):
        try:
            return repr(decode_metadata_exact(blob))
        except burnpack.MetadataDeserializationError as exc:
            return str(exc)


@settings(max_examples=400, deadline=None)
@given(st.lists(_TOKEN, max_size=50).map(b"".join), st.integers(0, 40), st.integers(0, 4) | st.integers(124, 128))
def test_skipping_through_every_implementation_gives_the_verdict_of_the_careful_path(tokens, count, nesting):
    blob = _with_unknown_field(b"\x81" * nesting + bytes([0x98, count]) + tokens)
    expected = _verdict(blob, _careful_only)
    for name, func in {**IMPLEMENTATIONS, "reference": reference_skip_plain}.items():
        assert _verdict(blob, func) == expected, name


# -- which path skipping takes, and what it costs ------------------------------------------------
def _varied_atoms(count: int) -> bytes:
    """An array of ``count`` atoms whose kinds and widths change from item to item."""
    cycle = [b"\x01", b"\x19\x03\xe8", b"\x63abc", b"\xfa\x3f\x8c\xcc\xcd", b"\x38\x07", b"\x42\x00\xff", b"\xf5",
             b"\x1b" + b"\x00" * 7 + b"\x01", b"\x60", b"\xf9\x3c\x00", b"\x3a\x00\x01\x00\x00", b"\x45hello"]
    items = [cycle[(i * 7 + i // 12) % len(cycle)] for i in range(count)]
    return b"\x9a" + struct.pack(">I", count) + b"".join(items)


def _varied_containers(count: int) -> bytes:
    """An array of ``count`` small arrays and maps whose shapes change from item to item."""
    shapes = [b"\x82\x01\x19\x03\xe8", b"\xa1\x61k\x63abc", b"\x83\xf5\x80\xa0", b"\x81\x42\x00\x01", b"\xa2\x61a\x01\x61b\x82\x02\x03",
              b"\xd9\x03\xe8\x81\xf6", b"\x84\x01\x02\x03\x04", b"\xa1\x41\x00\xfa\x3f\x8c\xcc\xcd"]
    items = [shapes[(i * 5 + i // 8) % len(shapes)] for i in range(count)]
    return b"\x9a" + struct.pack(">I", count) + b"".join(items)


def test_without_the_kernel_load_skips_an_ignored_value_with_the_python_walk():
    import subprocess

    script = (
        "import sys; sys.modules['burnpack.codec._cskip'] = None  # as when the optional build failed\n"
        "import struct, burnpack; from burnpack.codec import _cbor\n"
        "blob = bytes.fromhex('a26774656e736f7273a0617a') + bytes.fromhex(sys.argv[1])\n"
        "head = b'NRUB' + struct.pack('<HI', 1, len(blob)) + blob\n"
        "burnpack.load(head + bytes(-len(head) % 256))\n"
        "print(_cbor.SKIP_KERNEL, _cbor.skip_plain is _cbor.python_skip_plain)\n"
    )
    result = subprocess.run([sys.executable, "-c", script, _varied_containers(1_000).hex()], capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["python", "True"]


@pytest.mark.skipif("compiled" not in IMPLEMENTATIONS, reason="the optional compiled kernel is not built")
def test_load_skips_an_ignored_value_with_the_compiled_kernel_when_it_is_built():
    assert _cbor.SKIP_KERNEL == "compiled" and _cbor.skip_plain is _cbor._compiled_skip_plain


@pytest.mark.skipif("compiled" not in IMPLEMENTATIONS, reason="the optional compiled kernel is not built")
@pytest.mark.parametrize("junk", [_varied_atoms, _varied_containers], ids=["atoms", "containers"])
def test_skipping_varied_content_with_the_kernel_costs_a_constant_number_of_pythonpython_calls(junk):
    from burnpack.core.metadata import decode_metadata_exact

    def calls(count: int) -> int:
        blob = _with_unknown_field(junk(count))
        return python_calls(lambda: decode_metadata_exact(blob))

    assert calls(100_000) == calls(1_000)


@pytest.mark.parametrize("junk", [_varied_atoms, _varied_containers], ids=["atoms", "containers"])
def test_skipping_varied_content_in_python_gives_the_verdict_of_the_careful_path(junk):
    blob = _with_unknown_field(junk(5_000)[:-3] + b"\xf0\x00\x00")  # ... and an unknown simple value near the end
    assert "expected known simple value" in _verdict(blob, _cbor.python_skip_plain)
    assert _verdict(blob, _cbor.python_skip_plain) == _verdict(blob, _careful_only)


def test_skipping_a_long_array_of_varied_atoms_in_python_costs_calls_growing_with_the_log_of_its_length():
    from burnpack.core.metadata import decode_metadata_exact

    def calls(count: int) -> int:
        blob = _with_unknown_field(_varied_atoms(count))
        with mock.patch.object(_cbor, "skip_plain", _cbor.python_skip_plain):
            return python_calls(lambda: decode_metadata_exact(blob))

    for k in range(len(_cbor._ATOM_RUNS)):  # the run patterns, compiled once, on first use
        _cbor._atom_run(k)
    assert calls(64_000) - calls(1_000) < 100  # item by item: over 60,000 more


@pytest.mark.skipif("compiled" not in IMPLEMENTATIONS, reason="the optional compiled kernel is not built")
@pytest.mark.parametrize("args, error", [
    ((b"\x01", 0, 1, 5, 10, [True]), TypeError),  # no int subclass: its __index__ could change the stack mid-walk
    ((b"\x01", 0, 2, 5, 10, [3]), ValueError),  # an end past the buffer
    ((b"\x01", 2, 1, 5, 10, [3]), ValueError),
    ((b"\x01", 0, 1, -1, 10, [3]), ValueError),
])
def test_the_kernel_refuses_arguments_outside_its_contract(args, error):
    with pytest.raises(error):
        _cbor._compiled_skip_plain(*args)
