"""One read plan: every decoder tier gives the same ``Pack`` (docs/reading-levels.md).

The metadata can be decoded four ways — the columnar tensor table, the generated scanner, cbor2
with the generated validators, and the exact ciborium emulation (``load(..., decoder="exact")``) —
and every access path takes its byte ranges from one ``ReadPlan``. These tests open the same
bytes through each tier and compare what a caller sees: names, ``in``, ``get``, each tensor's
``numpy()`` and ``read()``, ``tensors()``, ``pack.numpy()`` and ``pack.torch()``, and every error
with its payload.
"""

from __future__ import annotations

import contextlib
import io
import re
import struct
import warnings
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import cbor2
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import burnpack
from burnpack import BurnpackError, Writer
from burnpack.codec._cbor import Fallback
from burnpack.codec._generated.layout import MAX_TENSOR_SIZE
from conformance import load_vectors
from tests.conftest import BURN_EXAMPLES, BURN_PACK_FIXTURES, fixture_params
from tests.strategies import packs

TIERS = ("table", "scanner", "fast", "exact")


@contextlib.contextmanager
def _tier(tier: str) -> Iterator[dict]:
    """Open with ``tier`` as the first decoder tried (each falls back to the next, as in ``load``)."""
    options = {"decoder": "exact"} if tier == "exact" else {}
    with contextlib.ExitStack() as stack:
        if tier in ("scanner", "fast"):
            stack.enter_context(mock.patch("burnpack.core.reader.scan_table", lambda blob: None))
        if tier == "fast":
            stack.enter_context(mock.patch("burnpack.core.metadata.scan_Metadata", mock.Mock(side_effect=Fallback)))
        yield options


def _outcome(func) -> tuple:
    try:
        return ("ok", func())
    except BurnpackError as exc:
        return ("error", type(exc).__name__, exc.payload, str(exc))
    except TypeError as exc:  # what torch has no dtype for (QFloat), as documented
        return ("error", type(exc).__name__, str(exc))


def _array(array: np.ndarray) -> tuple:
    return (array.dtype.str, array.shape, array.tobytes())


def _torch(tensor) -> tuple:
    return (str(tensor.dtype), tuple(tensor.shape), tensor.contiguous().reshape(-1).view(__import__("torch").uint8).numpy().tobytes())


PROBES = ["", "missing", "a\x00", 0, None, b"a", ("a",), ["a"], [], {"a": 1}]
PER_NAME = 48
"""Accessors asked one name at a time ask at most this many names of a pack: the first and last
16 and 16 spread between (the tiers decode the descriptors, compared whole below; a pack at
Burn's 100,000-tensor limit would otherwise take a third of the suite)."""


def sampled(names: list[str]) -> list[str]:
    if len(names) <= PER_NAME:
        return names
    step = (len(names) - 32) // 16
    return [*names[:16], *names[16 : len(names) - 16 : step][:16], *names[-16:]]


def _torch_tensors(pack: burnpack.Pack, names: list[str]) -> dict:
    """``pack.torch()``, or for a pack of more than ``PER_NAME`` tensors each sampled name's
    ``torch()`` (a torch tensor costs 15 µs to make, whatever its size: 1.5 s a read at Burn's
    limit; ``pack.numpy()``, compared whole, takes the same bulk path)."""
    if len(pack) <= PER_NAME:
        return pack.torch()
    return {name: pack[name].torch() for name in names}


def behaviour(data: bytes | Path | io.BytesIO, tier: str, *, reads: bool = True, **options) -> tuple:
    """What a caller of ``load`` sees, as comparable values (``reads=False``: what it decoded,
    without reading a tensor)."""
    with warnings.catch_warnings(record=True) as caught, _tier(tier) as forced:
        warnings.simplefilter("always")
        opened = _outcome(lambda: burnpack.load(data, **forced, **options))
        if opened[0] == "error":
            return opened, [str(w.message) for w in caught]
        pack = opened[1]
        every = list(pack)
        names = sampled(every)
        decoded = (every, len(pack), repr(pack.descriptors), repr(sorted(pack.metadata.items())), repr(sorted(pack.scalars.items())))
        if not reads:
            pack.close()
            return decoded, [str(w.message) for w in caught]
        seen = (
            *decoded,
            [probe in pack for probe in [*names, *PROBES]],
            [repr(pack.get(probe)) for probe in [*names, *PROBES]],
            [_outcome(lambda: _array(pack[name].numpy())) for name in names],
            [_outcome(lambda: pack[name].read()) for name in names],
            _outcome(lambda: [view.name for view in pack.tensors()]),
            _outcome(lambda: {name: _array(array) for name, array in pack.numpy().items()}),
            _outcome(lambda: {name: _torch(tensor) for name, tensor in _torch_tensors(pack, names).items()}),
        )
        pack.close()
        return seen, [str(w.message) for w in caught]


def _assert_tiers_agree(data: bytes | Path, **options) -> None:
    """Every tier decodes what the exact one does, and reading gives the same.

    Reading depends on the descriptors' container (the table tier's columns, or the dict every
    other tier gives, read by the same code) and on the source (a buffer or ranges), not on the
    tier that filled it; so a pack of more than ``PER_NAME`` tensors is read by the table and
    exact tiers only, from its file (bytes in memory are a buffer too), and decoded by all."""
    decoded = behaviour(data, "exact", reads=False, **options)
    large = decoded[0][0] != "error" and len(decoded[0][0]) > PER_NAME
    exact = None if large and not isinstance(data, Path) else behaviour(data, "exact", **options)
    for tier in TIERS[:-1]:
        if exact is None or (large and tier != "table"):
            assert behaviour(data, tier, reads=False, **options) == decoded, tier
        else:
            assert behaviour(data, tier, **options) == exact, tier


_VECTORS = [v for v in load_vectors().readers if v.problem is None]


@pytest.mark.parametrize("source", ["bytes", "file"])
@pytest.mark.parametrize("vector", _VECTORS, ids=[v.id for v in _VECTORS])
def test_every_decoder_tier_gives_the_same_pack_for_each_corpus_vector(vector, source, tmp_path):
    data = vector.data()
    if source == "bytes":
        _assert_tiers_agree(data)
    else:
        path = tmp_path / "v.bpk"
        path.write_bytes(data)
        _assert_tiers_agree(path)


def _burn_fixtures() -> list:
    return [pytest.param(p, id=p.name) for p in sorted(BURN_PACK_FIXTURES.glob("*.bpk"))] + [
        pytest.param(BURN_EXAMPLES / "mnist-model.bpk", id="mnist-model.bpk")
    ]


@pytest.mark.parametrize("path", fixture_params(BURN_PACK_FIXTURES, _burn_fixtures))
def test_every_decoder_tier_gives_the_same_pack_for_each_burn_fixture(path):
    _assert_tiers_agree(path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packs())
def test_every_decoder_tier_gives_the_same_pack_for_random_packs(spec):
    _assert_tiers_agree(Writer(spec.tensors, metadata=spec.metadata, scalars=spec.scalars).to_bytes())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(packs(max_tensors=3), st.data())
def test_every_decoder_tier_gives_the_same_pack_for_mutated_packs(spec, draw):
    data = bytearray(Writer(spec.tensors, metadata=spec.metadata, scalars=spec.scalars).to_bytes())
    metadata_end = min(len(data), 10 + struct.unpack_from("<I", data, 6)[0])
    for _ in range(draw.draw(st.integers(1, 4))):
        at = draw.draw(st.integers(10, max(10, metadata_end - 1)))
        if at < len(data):
            data[at] = draw.draw(st.integers(0, 255))
    _assert_tiers_agree(bytes(data))


def _pack(tensors: dict, data: bytes = b"", *, extra: dict | None = None) -> bytes:
    blob = cbor2.dumps({"tensors": tensors, "metadata": {}, **(extra or {})})
    head = b"NRUB" + struct.pack("<HI", 1, len(blob)) + blob
    return head + bytes(-len(head) % 256) + data


def _f32(count: int, start: int = 0) -> dict:
    return {"dtype": "F32", "shape": [count], "data_offsets": [start, start + 4 * count]}


@pytest.mark.parametrize(
    "tensors",
    [
        {"a": _f32(2), "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 4]}},  # end before start
        {"a": _f32(2), "b": _f32(2, 1 << 20)},  # past the file's end
        {"a": _f32(2), "b": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}},  # length and shape disagree
        {"a": _f32(2), "b": {"dtype": "F32", "shape": [1], "data_offsets": [2, 6]}},  # misaligned
        {"a": {"dtype": "F32", "shape": [1] * 65, "data_offsets": [0, 4]}},  # more dimensions than numpy holds
        {"a": {"dtype": "F32", "shape": [0, 2**62], "data_offsets": [0, 0]}},  # an empty huge shape
        {"a": {"dtype": {"Bool": "U8"}, "shape": [4], "data_offsets": [0, 4]}, "b": _f32(1, 4)},
    ],
    ids=["end_before_start", "past_end", "length_mismatch", "misaligned", "65_dims", "empty_huge", "bool_store"],
)
def test_every_decoder_tier_gives_the_same_pack_for_hostile_ranges(tensors):
    _assert_tiers_agree(_pack(tensors, bytes(64)))


@pytest.mark.parametrize("tier", TIERS)
def test_a_source_read_by_range_refuses_what_a_mapped_one_refuses(tier):
    data = _pack({"a": _f32(1), "b": {"dtype": "F32", "shape": [2], "data_offsets": [8, 4]}}, bytes(64))

    def reads(source) -> list:
        pack = _open(source, tier)
        return [_outcome(read) for read in (pack.numpy, pack.torch, pack.tensors, pack["b"].read)]

    mapped, by_range = reads(data), reads(io.BytesIO(data))  # by range: pack.numpy() is coalesced block reads
    assert by_range == mapped
    assert [outcome[:3] for outcome in by_range] == [("error", "ValidationError", "Tensor 'b' has corrupted offset data: end 260 < start 264")] * 4


def test_every_decoder_tier_gives_the_same_answer_to_a_list_in_pack():
    data = _pack({"a": _f32(1)}, bytes(4))
    assert {tier: (["a"] in _open(data, tier), [] in _open(data, tier)) for tier in TIERS} == dict.fromkeys(TIERS, (False, False))


def _open(data: bytes | io.BytesIO, tier: str) -> burnpack.Pack:
    with _tier(tier) as forced:
        return burnpack.load(data, **forced)


def _sparse_pack(path: Path, tensor_bytes: int) -> Path:
    """A pack of one F32 tensor of ``tensor_bytes`` bytes, the data a hole in a sparse file."""
    head = _pack({"big": _f32(tensor_bytes // 4)})
    with open(path, "wb") as file:
        file.write(head)
        file.truncate(len(head) + tensor_bytes)
    return path


@pytest.mark.parametrize("tier", TIERS)
def test_pack_numpy_refuses_an_11_gib_tensor_with_burns_max_tensor_size_error_on_every_tier(tier, tmp_path):
    path = _sparse_pack(tmp_path / "big.bpk", 11 << 30)
    with _tier(tier) as forced, burnpack.load(path, **forced) as pack:
        payload = f"Tensor 'big' size {11 << 30} exceeds maximum allowed size of {MAX_TENSOR_SIZE} bytes (potential DoS attack)"
        for read in (pack.numpy, pack.tensors, pack["big"].numpy, lambda: pack.get_slice("big")[:1]):
            with pytest.raises(burnpack.ValidationError) as info:
                read()
            assert info.value.payload == payload
            assert "max_tensor_size=" in str(info.value)


def test_max_tensor_size_lifts_burns_tensor_size_limit(tmp_path):
    path = _sparse_pack(tmp_path / "big.bpk", 11 << 30)
    with burnpack.load(path, max_tensor_size=12 << 30) as pack:
        assert pack.numpy()["big"].shape == ((11 << 30) // 4,)


@pytest.mark.parametrize("source", [bytes, io.BytesIO], ids=["bytes", "file_object"])
@pytest.mark.parametrize("tier", TIERS)
def test_a_lower_max_tensor_size_refuses_on_every_read_path(tier, source):
    data = _pack({"a": _f32(1), "b": _f32(64, 256)}, bytes(512))
    with _tier(tier) as forced:
        pack = burnpack.load(source(data), max_tensor_size=255, **forced)
    assert pack["a"].numpy().shape == (1,)
    for read in (pack.numpy, pack.torch, pack.tensors, pack["b"].numpy, pack["b"].read):
        with pytest.raises(burnpack.ValidationError, match=r"size 256 exceeds maximum allowed size of 255 bytes.*max_tensor_size="):
            read()


def test_max_tensors_lifts_burns_tensor_count_limit():
    data = _pack({"a": _f32(1), "b": _f32(1, 4), "c": _f32(1, 8)}, bytes(12))
    with pytest.raises(burnpack.ValidationError, match=r"File contains 3 tensors, exceeding maximum of 2 .*max_tensors="):
        burnpack.load(data, max_tensors=2)
    assert burnpack.load(data, max_tensors=3).names == ["a", "b", "c"]


def test_max_metadata_size_lifts_burns_metadata_size_limit():
    data = _pack({"a": _f32(1)}, bytes(4))
    size = struct.unpack_from("<I", data, 6)[0]
    with pytest.raises(burnpack.ValidationError, match=rf"Metadata size {size} exceeds maximum allowed size of {size - 1} bytes.*max_metadata_size="):
        burnpack.load(data, max_metadata_size=size - 1)
    assert burnpack.load(data, max_metadata_size=size).names == ["a"]


@pytest.mark.parametrize("limit", ["max_metadata_size", "max_tensors", "max_tensor_size"])
@pytest.mark.parametrize("value", [-1, 1.5, "10", True])
def test_a_limit_that_is_not_a_non_negative_int_is_refused(limit, value):
    with pytest.raises(ValueError, match=limit):
        burnpack.load(_pack({}), **{limit: value})


def test_decoder_takes_auto_or_exact_only():
    with pytest.raises(ValueError, match="decoder must be one of"):
        burnpack.load(_pack({}), decoder="fast")


def test_decoder_with_legacy_ok_is_refused_as_it_would_change_nothing():
    with pytest.raises(ValueError, match="legacy_ok"):
        burnpack.load(_pack({}), decoder="exact", legacy_ok=True)


def test_decoder_exact_decodes_with_the_exact_decoder_only():
    data = _pack({"a": _f32(1)}, bytes(4))
    with mock.patch("burnpack.core.reader.scan_table") as table, mock.patch("burnpack.core.metadata.scan_Metadata") as scanner:
        assert burnpack.load(data, decoder="exact").names == ["a"]
    table.assert_not_called()
    scanner.assert_not_called()


@pytest.mark.parametrize("tier", TIERS)
def test_empty_tensors_whose_data_section_starts_past_the_end_are_refused_as_into_tensors_refuses_them(tier):
    """Burn views each range with ``Bytes::view(start, end)``, which refuses ``end > len``: an empty
    range at the data section's start is past the end of a file cut before it (a 240 s differential
    run found the table tier accepting it)."""
    data = burnpack.save_bytes({"a": np.zeros(0, np.float32), "b": np.zeros((2, 0), np.uint8)})[:156]
    message = "Tensor 'a' data range 256..256 could not be viewed (source is 156 bytes)"
    with _tier(tier), burnpack.load(data) as pack:
        for read in (pack.tensors, pack.numpy, pack.torch):
            with pytest.raises(burnpack.ValidationError, match=re.escape(message)):
                read()
