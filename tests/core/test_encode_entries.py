"""``encode_entries``, the writer's encoder of the metadata's tensors map from columns.

It must give the bytes of the per-entry encoder (``encode_TensorDescriptor_entry``), whose output
the Burn fixtures pin: the same entries in the same order, integers in CBOR's shortest form.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from burnpack import DType, Tensor, Writer
from burnpack.codec._generated.metadata import BoolStore, TensorDescriptor_layout, encode_TensorDescriptor_entry
from burnpack.core import metadata
from burnpack.errors import MetadataSerializationError
from tests.conftest import python_calls

U64 = st.integers(0, 2**64 - 1) | st.sampled_from([0, 23, 24, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**64 - 1])
DTYPES = [DType.F32, DType.F16, DType.BF16, DType.I64, DType.U8, DType.Bool(BoolStore.U8), DType.F64]


@st.composite
def tensor_tables(draw: st.DrawFn) -> list[tuple[str, DType, tuple[int, ...], int, int, int | None]]:
    """Rows of (name, dtype, shape, start, end, param id); param ids all None or each optional."""
    names = draw(st.lists(st.text(st.characters(exclude_categories=("Cs",)), max_size=40), max_size=40, unique=True))
    with_ids = draw(st.booleans())
    return [
        (name, draw(st.sampled_from(DTYPES)), tuple(draw(st.lists(U64, max_size=4))), draw(U64), draw(U64),
         draw(st.none() | U64) if with_ids else None)
        for name in names
    ]


def encode(rows: list[tuple[str, DType, tuple[int, ...], int, int, int | None]]) -> bytes:
    ids = [row[5] for row in rows]
    return metadata.encode_entries(
        [row[0] for row in rows],
        [TensorDescriptor_layout(dtype, shape, pid is not None) for _, dtype, shape, _, _, pid in rows],
        np.array([row[3] for row in rows], np.uint64),
        np.array([row[4] for row in rows], np.uint64),
        ids if any(pid is not None for pid in ids) else None,
    )


@settings(max_examples=300, deadline=None)
@given(rows=tensor_tables())
def test_a_tensor_table_is_encoded_as_the_per_entry_encoder_does(rows):
    expected = b"".join(encode_TensorDescriptor_entry(name, dtype, shape, (start, end), pid) for name, dtype, shape, start, end, pid in rows)
    assert encode(rows) == expected


@pytest.mark.parametrize("offset", range(1, 8))
def test_offset_columns_at_any_alignment_are_read(offset):
    """The offset columns may sit at any address (a caller's buffer)."""
    rows = [(f"t{i}", DType.F32, (i,), 256 * i, 256 * i + 4 * i, None) for i in range(40)]
    names, layouts = [row[0] for row in rows], [TensorDescriptor_layout(row[1], row[2], False) for row in rows]

    def column(values: list[int]) -> np.ndarray:
        return np.frombuffer(memoryview(bytearray(offset) + np.array(values, np.uint64).tobytes())[offset:], np.uint64)

    shifted = metadata.encode_entries(names, layouts, column([r[3] for r in rows]), column([r[4] for r in rows]), None)
    assert shifted == encode(rows)


def test_columns_of_different_lengths_are_refused():
    with pytest.raises(ValueError):
        metadata.encode_entries(["a", "b"], [b"", b""], np.zeros(2, np.uint64), np.zeros(1, np.uint64), None)


def test_a_name_that_is_not_valid_unicode_is_a_metadata_serialization_error():
    with pytest.raises(MetadataSerializationError, match="cannot encode metadata"):
        metadata.encode_metadata_columns(["\ud800"], [b""], np.zeros(1, np.uint64), np.zeros(1, np.uint64), None, {}, {})


def test_planning_many_tensors_makes_a_few_python_calls_per_tensor():
    """The columns are sorted and laid out by numpy; a tensor costs its entry's encoding and the
    few calls that read it (about 9 each: 13 before the columns)."""
    tensors = [Tensor.from_numpy(f"layers.{i}.bias", np.full(i % 5 + 1, i, np.float32)) for i in range(5_000)]
    writer = Writer(tensors)
    assert python_calls(writer.plan) < 10 * len(tensors)

