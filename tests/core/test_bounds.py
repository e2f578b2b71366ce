"""Resource bounds of the burnpack reader and writer on hostile input (docs/bounds.md).

Every test counts work or bounds memory; none times anything.
"""

from __future__ import annotations

import os
import struct
import sys
import threading
from unittest import mock

import cbor2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import burnpack
from burnpack import Tensor, Writer
from burnpack.codec._cbor import plain_item
from burnpack.codec._generated.layout import MAX_TENSOR_COUNT
from burnpack.interop.safetensors import parse_safetensors
from burnpack.errors import SafetensorsError
from tests.conftest import peak_bytes
from tests.conftest import python_calls as _calls


def _file(blob: bytes, data: bytes = b"") -> bytes:
    head = b"NRUB" + struct.pack("<HI", 1, len(blob)) + blob
    return head + bytes(-len(head) % 256) + data


def _bool_tensor() -> dict:
    return {"a": {"dtype": "Bool", "shape": [1], "data_offsets": [0, 1]}}


def _shared_doubling(levels: int) -> bytes:
    """A CBOR array whose last item, with shared references resolved, holds 2**levels leaves."""
    items = [b"\xd8\x1c\x81\x01"]  # shareable(0): [1]
    for index in range(levels):
        ref = b"\xd8\x1d" + cbor2.dumps(index)  # sharedref(index)
        items.append(b"\xd8\x1c\x82" + ref + ref)  # shareable: [previous, previous]
    return b"\x99" + struct.pack(">H", len(items)) + b"".join(items)


# -- CBOR tags are ignored, as Burn ignores them ----------------------------------------------
@pytest.mark.parametrize(
    "tagged, plain",
    [
        (cbor2.CBORTag(30, [3, 4]), [3, 4]),  # rational
        (cbor2.CBORTag(4, [-2, 27315]), [-2, 27315]),  # decimal fraction
        (cbor2.CBORTag(5, [1, 3]), [1, 3]),  # bigfloat
        (cbor2.CBORTag(258, [1, 2]), [1, 2]),  # set
        (cbor2.CBORTag(2, b"\x01\x00"), b"\x01\x00"),  # bignum
        (cbor2.CBORTag(1000, "x"), "x"),  # unknown tag
    ],
)
def test_the_plain_decoder_reads_a_tagged_item_as_the_item_it_wraps(tagged, plain):
    assert plain_item(cbor2.dumps(tagged), 0)[0] == plain


def test_the_plain_decoder_reads_shared_references_as_their_index_without_expanding_them():
    assert plain_item(_shared_doubling(3), 0)[0][-1] == [2, 2]


def test_a_rejected_file_with_big_rationals_is_diagnosed_without_building_them():
    big = (1 << (8 * 200_000)) - 1
    blob = cbor2.dumps({"tensors": _bool_tensor(), "x": cbor2.CBORTag(30, [big, big - 2])})
    calls = []
    sys.setprofile(lambda frame, event, arg: calls.append(frame.f_code.co_filename) if event == "call" else None)
    try:
        with pytest.raises(burnpack.MetadataDeserializationError, match="legacy_ok"):
            burnpack.load(_file(blob, b"\x01"))
    finally:
        sys.setprofile(None)
    assert not [name for name in calls if name.endswith(("fractions.py", "_pydecimal.py"))]


# -- legacy_ok ---------------------------------------------------------------------------------
def test_legacy_rewrite_of_a_tiny_file_with_shared_references_stays_small():
    head = cbor2.dumps({"tensors": _bool_tensor()})
    blob = b"\xa2" + head[1:] + cbor2.dumps("junk") + _shared_doubling(24)  # a second, unknown field
    data = _file(blob, b"\x01")
    assert len(data) < 1024
    peak = peak_bytes(lambda: burnpack.load(data, legacy_ok=True))
    assert peak < 4 * 1024 * 1024


@pytest.mark.parametrize(
    "scheme",
    [
        {"value": "Q8S", "param": "F32", "store": "Native", "mode": "Symmetric", "level": {"BlockTensor": 5}},
        {"value": "Q8S", "param": "F32", "store": "U32", "mode": "Symmetric", "level": {"Block": []}},
        {"value": "Q8S", "param": 1.5, "store": "U32", "mode": None, "level": "Tensor"},
        {"store": "U32"},
    ],
)
def test_crafted_legacy_schemes_are_refused_with_burnpack_errors(scheme):
    blob = cbor2.dumps({"tensors": {"q": {"dtype": {"QFloat": scheme}, "shape": [1], "data_offsets": [0, 1]}}})
    try:
        burnpack.load(_file(blob, b"\x01"), legacy_ok=True)
    except burnpack.BurnpackError:
        pass


def test_a_legacy_file_whose_metadata_is_not_a_map_gets_burns_error():
    with pytest.raises(burnpack.MetadataDeserializationError):
        burnpack.load(_file(cbor2.dumps(["Bool", "U32"])), legacy_ok=True)


# -- numpy's limits ------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [[1] * 65, [1 << 62, 1 << 62, 0], [1 << 63, 0]])
def test_a_shape_numpy_cannot_hold_opens_but_numpy_raises_a_burnpack_error(shape):
    blob = cbor2.dumps({"tensors": {"t": {"dtype": "F32", "shape": shape, "data_offsets": [0, 0]}}})
    with burnpack.load(_file(blob)) as pack:
        assert pack["t"].shape == tuple(shape)
        with pytest.raises(burnpack.ValidationError, match="numpy"):
            pack["t"].numpy()
        with pytest.raises(burnpack.ValidationError, match="numpy"):
            pack.numpy()


# -- non-regular files ---------------------------------------------------------------------------
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    fifo = tmp_path / "pipe.bpk"
    os.mkfifo(fifo)
    outcome: list[BaseException] = []
    reader = threading.Thread(target=lambda: _capture(outcome, lambda: burnpack.load(fifo)), daemon=True)
    reader.start()
    reader.join(timeout=30)
    if reader.is_alive():  # the fix is gone: unblock the reader before failing
        with open(fifo, "wb"):
            pass
        pytest.fail("load() blocked on a FIFO")
    assert isinstance(outcome[0], burnpack.IoError) and "FIFO" in str(outcome[0])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_swapped_in_after_the_kind_check_is_refused_without_waiting_for_a_writer(tmp_path, monkeypatch):
    # The check before opening sees a regular file (the path is swapped between the check and the
    # open); the open must not wait for a writer, and the descriptor's check refuses the FIFO.
    import stat

    fifo = tmp_path / "pipe.bpk"
    os.mkfifo(fifo)
    real_stat = os.stat

    def regular_at_first(path, *args, **kwargs):
        found = real_stat(path, *args, **kwargs)
        if os.fspath(path) != os.fspath(fifo):
            return found
        return os.stat_result((stat.S_IFREG | 0o644, *tuple(found)[1:]))

    monkeypatch.setattr(os, "stat", regular_at_first)
    outcome: list[BaseException] = []
    reader = threading.Thread(target=lambda: _capture(outcome, lambda: burnpack.load(fifo)), daemon=True)
    reader.start()
    reader.join(timeout=30)
    if reader.is_alive():
        with open(fifo, "wb"):
            pass
        pytest.fail("load() blocked on a FIFO swapped in after the check")
    assert isinstance(outcome[0], burnpack.IoError) and "FIFO" in str(outcome[0])


def _capture(out: list, func) -> None:
    try:
        func()
    except BaseException as exc:  # noqa: BLE001 - handed to the test thread
        out.append(exc)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_a_character_device_is_refused():
    with pytest.raises(burnpack.IoError, match="character device"):
        burnpack.load("/dev/zero")


# -- writer and reader agree on the limits ------------------------------------------------------
def test_the_writer_refuses_more_tensors_than_a_reader_accepts():
    empty = np.zeros(0, dtype=np.uint8)
    writer = Writer(Tensor.from_numpy(f"t{i}", empty) for i in range(MAX_TENSOR_COUNT + 1))
    with pytest.raises(burnpack.ValidationError, match=str(MAX_TENSOR_COUNT)):
        writer.size()


def test_the_writer_refuses_metadata_larger_than_a_reader_accepts():
    writer = Writer(metadata={"k": "x" * (100 * 1024 * 1024)})
    with pytest.raises(burnpack.ValidationError, match="Metadata size"):
        writer.size()


# -- safetensors ---------------------------------------------------------------------------------
def _repeated_key_header(entries: int) -> bytes:
    body = ",".join(f'"k{i}":{{}}' for i in range(entries)) + ',"k0":{}'
    header = ("{" + body + "}").encode()
    return struct.pack("<Q", len(header)) + header


def test_the_safetensors_repeated_key_check_is_linear_in_the_header():
    def refuse(entries: int) -> None:
        with pytest.raises(SafetensorsError, match="repeats"):
            parse_safetensors(_repeated_key_header(entries))

    small, large = _calls(lambda: refuse(2_000)), _calls(lambda: refuse(8_000))
    assert large < 5 * small


# -- the exact decoder: faster, with the same verdicts -------------------------------------------
def _with_unknown_field(junk: bytes) -> bytes:
    """``{"tensors": {}, "z": <junk>}``: Burn skips the unknown field's item."""
    return b"\xa2" + cbor2.dumps({"tensors": {}})[1:] + b"\x61z" + junk


_NOTHING = "Metadata(tensors={}, metadata={}, scalars={})"


@pytest.mark.parametrize(
    "junk, verdict",
    [
        ("85010220f6f5", _NOTHING),  # a run of one-byte scalars filling an array
        ("830102820304", _NOTHING),  # a run, then a nested array
        ("9fa10102bf0304ffff", _NOTHING),  # indefinite containers
        ("8480a09fffbfff", _NOTHING),  # empty containers of every kind
        ("a20102031820", _NOTHING),  # a definite map
        ("bf6161ff", 'Semantic(None, "invalid type: break, expected non-break") (metadata byte 16)'),
        ("8301f002", 'Semantic(None, "invalid type: simple, expected known simple value") (metadata byte 15)'),
        ("850102", 'Io(Error { kind: UnexpectedEof, message: "failed to fill whole buffer" }) (metadata byte 15)'),
        ("c6" * 200 + "01", "RecursionLimitExceeded (metadata byte 140)"),
        ("81" * 200 + "01", "RecursionLimitExceeded (metadata byte 140)"),
        ("81" * 125 + "83" + "80a080", _NOTHING),  # empty containers one level above the limit
        ("81" * 126 + "83" + "80a080", "RecursionLimitExceeded (metadata byte 140)"),  # ... and at it
        ("c350" + "ff" * 16, 'Semantic(None, "integer too large") (metadata byte 30)'),
        ("8262fffe01", "Syntax(13) (metadata byte 13)"),
        ("81" * 125 + "9803" + "a1616101" * 3, _NOTHING),  # same-shaped maps one level above the limit
        ("81" * 126 + "9803" + "a1616101" * 3, "RecursionLimitExceeded (metadata byte 141)"),  # ... and at it
        ("81" * 124 + "9803" + "a161618101" * 3, _NOTHING),  # maps holding arrays, two levels above
        ("81" * 125 + "9803" + "a161618101" * 3, "RecursionLimitExceeded (metadata byte 143)"),  # ... and one
    ],
)
def test_skipping_an_unknown_field_gives_serdes_verdict_and_offset(junk, verdict):
    from burnpack.core.metadata import decode_metadata_exact

    try:
        got = repr(decode_metadata_exact(_with_unknown_field(bytes.fromhex(junk))))
    except burnpack.MetadataDeserializationError as exc:
        got = str(exc)
    assert got == verdict


@pytest.fixture
def python_skip():
    """Skip with the Python walk, also when the compiled kernel is built (tests/codec/test_skip_kernel.py),
    its run patterns compiled beforehand (they are compiled once, on first use)."""
    from burnpack.codec import _cbor

    for k in range(len(_cbor._ATOM_RUNS)):
        _cbor._atom_run(k)
    with mock.patch.object(_cbor, "skip_plain", _cbor.python_skip_plain):
        yield


@pytest.mark.usefixtures("python_skip")
def test_skipping_a_long_array_of_small_integers_costs_a_constant_number_of_calls():
    from burnpack.core.metadata import decode_metadata_exact

    short = _with_unknown_field(cbor2.dumps([7] * 1_000))
    long = _with_unknown_field(cbor2.dumps([7] * 200_000))
    decode_metadata_exact(short)  # one-time work (compiled patterns, abc caches) is not per item
    assert _calls(lambda: decode_metadata_exact(long)) == _calls(lambda: decode_metadata_exact(short))


@pytest.mark.usefixtures("python_skip")
@pytest.mark.parametrize(
    "value",
    [1_000, -1_000, 100_000, -100_000, 1 << 40, 1.5, 1.1, 1e300],  # 2-, 3-, 5- and 9-byte items
    ids=["u16", "neg16", "u32", "neg32", "u64", "f16", "f32", "f64"],
)
def test_skipping_a_long_array_of_wider_numbers_costs_calls_growing_with_the_log_of_its_length(value):
    from burnpack.core.metadata import decode_metadata_exact

    def calls(count: int) -> int:
        blob = _with_unknown_field(cbor2.dumps([value] * count))
        return _calls(lambda: decode_metadata_exact(blob))

    assert calls(64_000) - calls(1_000) < 50  # item by item: over 60,000 more


def test_skipping_a_run_of_wider_numbers_keeps_serdes_verdict_on_the_item_after_it():
    from burnpack.core.metadata import decode_metadata_exact

    junk = b"\x99\x03\xe9" + b"\x19\x03\xe8" * 1_000 + b"\xf0"  # 1,000 u16 then an unknown simple value
    with pytest.raises(burnpack.MetadataDeserializationError, match="expected known simple value") as info:
        decode_metadata_exact(_with_unknown_field(junk))
    assert "metadata byte 3016" in str(info.value)  # as item by item (after the token, as ciborium counts)


_NUMBER_TOKENS = st.sampled_from(["18ff", "3801", "190100", "39ffff", "f93c00", "1a00010000", "fa3f8ccccd", "1b" + "00" * 8,
                                  "fb" + "3f" * 8, "01", "f0", "f818", "81", "a0", "60", "1b00"])
# Tokens of strings and small containers, valid and not: heads, ASCII and non-ASCII text (and a
# broken UTF-8 sequence), tags, bignums, indefinite lengths, a break, simple values.
_SHAPE_TOKENS = st.sampled_from(["a1", "a2", "81", "82", "83", "98", "9f", "bf", "ff", "6161", "6162", "62c3a9", "62c3",
                                 "63e282ac", "6180", "4100", "42ffff", "c6", "c2", "f5", "f6", "f0", "f818", "1903e8", "fb"])


def _bulk_and_one_by_one_verdicts(blob: bytes) -> tuple[str, str]:
    from burnpack.codec import _cbor
    from burnpack.core.metadata import decode_metadata_exact

    def verdict() -> str:
        try:
            return repr(decode_metadata_exact(blob))
        except burnpack.MetadataDeserializationError as exc:
            return str(exc)

    with mock.patch.object(_cbor, "skip_plain", _cbor.python_skip_plain):  # the Python walk, also when the kernel is built
        bulk = verdict()
        with mock.patch.object(_cbor, "_fixed_run", lambda buf, pos, stop, width: 1), \
                mock.patch.object(_cbor, "_shape", lambda buf, pos, end, depth, scratch: None), \
                mock.patch.object(_cbor, "_ATOM_HEADS", frozenset()):  # one token at a time
            return bulk, verdict()


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 40), st.lists(_NUMBER_TOKENS, max_size=40))
def test_skipping_runs_of_numbers_in_bulk_gives_the_verdict_of_skipping_them_one_by_one(count, tokens):
    bulk, one_by_one = _bulk_and_one_by_one_verdicts(_with_unknown_field(bytes([0x98, count]) + bytes.fromhex("".join(tokens))))
    assert bulk == one_by_one


@settings(max_examples=400, deadline=None)
@given(st.integers(0, 60), st.lists(_SHAPE_TOKENS, min_size=1, max_size=12), st.integers(0, 30), st.lists(_SHAPE_TOKENS, max_size=12),
       st.integers(0, 4) | st.integers(120, 128))
def test_skipping_runs_of_same_shaped_items_in_bulk_gives_the_verdict_of_skipping_them_one_by_one(count, item, repeats, tail, nesting):
    """An array of ``count`` items: one item's tokens repeated, then other tokens, under ``nesting``
    arrays (near the recursion limit too): the same verdict, error and offset either way."""
    body = bytes([0x98, count]) + bytes.fromhex("".join(item)) * repeats + bytes.fromhex("".join(tail))
    bulk, one_by_one = _bulk_and_one_by_one_verdicts(_with_unknown_field(b"\x81" * nesting + body))
    assert bulk == one_by_one


@pytest.mark.usefixtures("python_skip")
@pytest.mark.parametrize(
    "item",
    [{"a": 1000}, [1, 2.5, "x"], "hello world", "héllo wörld", b"\x00\xff" * 5, {"name": "layer", "shape": [3, 4], "ok": True}],
    ids=["small-map", "array", "ascii-text", "unicode-text", "bytes", "nested-record"],
)
def test_skipping_a_long_array_of_same_shaped_items_costs_calls_growing_with_the_log_of_its_length(item):
    from burnpack.core.metadata import decode_metadata_exact

    def calls(count: int) -> int:
        blob = _with_unknown_field(cbor2.dumps([item] * count))
        return _calls(lambda: decode_metadata_exact(blob))

    assert calls(64_000) - calls(1_000) < 300  # a few per byte of the shape and doubling; item by item: over 60,000 more


@pytest.mark.usefixtures("python_skip")
def test_same_shaped_items_may_differ_in_numbers_bytes_and_ascii_text():
    from burnpack.core.metadata import decode_metadata_exact

    def calls(count: int) -> int:
        items = [{"k": f"v{i % 10}", "n": 1000 + i % 50_000, "b": bytes([i % 256, 7])} for i in range(count)]
        blob = _with_unknown_field(cbor2.dumps(items))
        return _calls(lambda: decode_metadata_exact(blob))

    assert calls(64_000) - calls(1_000) < 300  # item by item: over 60,000 more


def test_a_bad_item_after_a_run_of_same_shaped_items_gets_serdes_verdict_and_offset():
    from burnpack.core.metadata import decode_metadata_exact

    item = b"\xa1\x61a\x19\x03\xe8"  # {"a": 1000}, 6 bytes
    junk = b"\x99\x03\xe9" + item * 1_000 + b"\xa1\x61a\xf0"  # 1,000 maps, then one holding an unknown simple value
    with pytest.raises(burnpack.MetadataDeserializationError, match="expected known simple value") as info:
        decode_metadata_exact(_with_unknown_field(junk))
    assert "metadata byte 6019" in str(info.value)  # as item by item


def test_a_string_in_a_run_of_same_shaped_items_with_broken_utf8_gets_serdes_syntax_error():
    from burnpack.core.metadata import decode_metadata_exact

    junk = b"\x99\x03\xe8" + b"\x62ab" * 500 + b"\x62a\xff" + b"\x62ab" * 499
    with pytest.raises(burnpack.MetadataDeserializationError, match=r"Syntax\(1515\)"):
        decode_metadata_exact(_with_unknown_field(junk))


def test_the_exact_decoder_reads_plain_tensor_entries_in_a_few_calls_each():
    from burnpack.core.metadata import decode_metadata_exact

    def blob(count: int) -> bytes:
        tensors = {f"t{i}": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]} for i in range(count)}
        return cbor2.dumps({"tensors": tensors, "z": cbor2.CBORTag(99, 0)})  # the tag rules out the fast paths

    per_entry = (_calls(lambda: decode_metadata_exact(blob(2_000))) - _calls(lambda: decode_metadata_exact(blob(1_000)))) / 1_000
    assert per_entry < 40  # the token-by-token walk made over 150


@pytest.mark.parametrize("legacy_ok", [False, True])
def test_metadata_whose_unknown_field_would_become_millions_of_objects_stays_small(legacy_ok):
    junk = cbor2.dumps([[]] * 1_000_000)  # 1 MB: one empty list per byte if it were built
    blob = b"\xa2" + cbor2.dumps({"tensors": _bool_tensor()})[1:] + b"\x61z" + junk
    data = _file(blob, b"\x01")

    def load() -> None:  # current Burn rejects the "Bool" dtype; legacy_ok reads it as Bool(Native)
        if legacy_ok:
            assert burnpack.load(data, legacy_ok=True)["a"].dtype == burnpack.DType.Bool(burnpack.BoolStore.Native)
        else:
            with pytest.raises(burnpack.MetadataDeserializationError, match="legacy_ok"):
                burnpack.load(data)

    assert peak_bytes(load) < 16 * 1024 * 1024


def test_a_tensor_entry_hiding_a_huge_unknown_field_is_not_built_in_memory():
    junk = cbor2.dumps([[]] * 1_000_000)
    entry = cbor2.dumps({"dtype": "F32", "shape": [1], "data_offsets": [0, 4]})
    blob = b"\xa1" + cbor2.dumps("tensors") + b"\xa1\x61t" + bytes([entry[0] + 1]) + entry[1:] + b"\x61z" + junk
    with burnpack.load(_file(blob, bytes(4))) as pack:
        assert pack["t"].shape == (1,)
    assert peak_bytes(lambda: burnpack.load(_file(blob, bytes(4))).close()) < 16 * 1024 * 1024


def test_a_safetensors_header_denser_in_json_containers_than_any_listing_is_refused_before_parsing():
    header = b'{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":[' + b"{}," * 700_000 + b"{}]}}"
    data = struct.pack("<Q", len(header)) + header

    def parse() -> None:
        with pytest.raises(SafetensorsError, match="JSON objects and arrays"):
            parse_safetensors(data)

    assert peak_bytes(parse) < 8 * 1024 * 1024
