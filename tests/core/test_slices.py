"""``view.slice[...]`` returns exactly numpy's basic-indexing result and reads only the byte
ranges it needs: one read for a row range, one per row for a column."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import burnpack
from burnpack import BoolStore, DType, Tensor

from .test_reader import _file  # a pack around hand-written metadata

from .helpers import CountingSource, bytes_read

ARRAY = np.arange(4 * 5 * 6, dtype="<f4").reshape(4, 5, 6)
DATA = burnpack.save_bytes({"pad": np.zeros(3, np.uint8), "x": ARRAY})


def _counted() -> tuple[burnpack.Pack, CountingSource]:
    source = CountingSource(DATA)
    pack = burnpack.load(source)
    source.reads.clear()
    return pack, source


def _index(ndim: int) -> st.SearchStrategy:
    dim = st.one_of(
        st.integers(-4, 3),
        st.builds(slice, st.none() | st.integers(-7, 7), st.none() | st.integers(-7, 7), st.none() | st.sampled_from([1, 2, 3, -1, -2])),
    )
    return st.lists(dim, max_size=ndim).map(tuple) | st.lists(dim, max_size=ndim - 1).map(lambda xs: (*xs, Ellipsis))


@settings(max_examples=200, deadline=None)
@given(_index(3))
def test_slice_equals_numpy_basic_indexing_on_range_sources(index):
    pack, source = _counted()
    got = pack["x"].slice[index]
    want = ARRAY[index]
    assert got.shape == want.shape and np.array_equal(got, want)
    assert bytes_read(source) == want.nbytes  # never a byte more than the result


@settings(max_examples=100, deadline=None)
@given(_index(3))
def test_slice_equals_numpy_basic_indexing_on_memory(index):
    got = burnpack.load(DATA)["x"].slice[index]
    assert np.array_equal(got, ARRAY[index]) and got.shape == ARRAY[index].shape


def test_a_row_range_is_one_read():
    pack, source = _counted()
    pack["x"].slice[1:3]
    assert len(source.reads) == 1 and source.reads[0][1] == 2 * 5 * 6 * 4


def test_a_column_is_one_read_per_row():
    pack, source = _counted()
    column = pack["x"].slice[:, :, 3]
    assert np.array_equal(column, ARRAY[:, :, 3])
    assert len(source.reads) == 4 * 5 and {n for _, n in source.reads} == {4}


def test_a_whole_inner_block_under_an_index_is_one_read():
    pack, source = _counted()
    assert np.array_equal(pack["x"].slice[2, 1:4], ARRAY[2, 1:4])
    assert len(source.reads) == 1


def test_slice_of_a_file_is_an_owned_copy(tmp_path):
    path = burnpack.save({"x": ARRAY}, tmp_path / "x.bpk")
    with burnpack.load(path) as pack:
        part = pack["x"].slice[1]
        part[0, 0] = -1
        assert pack["x"].numpy()[1, 0, 0] == ARRAY[1, 0, 0]


def test_slice_keeps_bf16_and_bool_stores():
    bf = np.arange(6).astype(ml_dtypes.bfloat16).reshape(2, 3)
    data = burnpack.save_bytes([Tensor.from_numpy("bf", bf), Tensor("b", DType.Bool(BoolStore.U8), (4,), bytes([1, 0, 1, 1]))])
    pack = burnpack.load(CountingSource(data))
    assert pack["bf"].slice[:, 1].dtype == ml_dtypes.bfloat16 and pack["bf"].slice[:, 1].tolist() == [1, 4]
    assert pack["b"].slice[1:3].tolist() == [0, 1]


def test_slice_in_torch_framework_returns_torch():
    torch = pytest.importorskip("torch")
    pack = burnpack.load(CountingSource(DATA), framework="pt")
    part = pack.get_slice("x")[:, 2]
    assert isinstance(part, torch.Tensor) and np.array_equal(part.numpy(), ARRAY[:, 2])


def test_slice_index_errors_are_numpys():
    pack = burnpack.load(DATA)
    with pytest.raises(IndexError, match="out of bounds"):
        pack["x"].slice[4]
    with pytest.raises(IndexError, match="too many"):
        pack["x"].slice[0, 0, 0, 0]
    with pytest.raises(TypeError, match="ints, slices"):
        pack["x"].slice[[0, 1]]


def test_get_shape_is_the_whole_tensors():
    assert burnpack.load(DATA).get_slice("x").get_shape() == [4, 5, 6]


def test_a_short_read_is_an_io_error():
    class Short(CountingSource):
        def read(self, offset: int, length: int) -> bytes:
            data = super().read(offset, length)
            return data[:-1] if length > 100 else data

    with pytest.raises(burnpack.IoError, match="short read"):
        burnpack.load(Short(DATA))["x"].slice[0:2]


def test_a_shape_the_bytes_do_not_back_is_refused_before_slicing():
    data = _file({"tensors": {"x": {"dtype": "F32", "shape": [1 << 40, 1 << 20], "data_offsets": [0, 16]}}}, bytes(16))
    with pytest.raises(burnpack.ValidationError, match="holds 16 bytes"):
        burnpack.load(data)["x"].slice[:, 0]


def test_slicing_an_empty_tensor_with_a_huge_dimension_reads_nothing():
    data = burnpack.save_bytes([Tensor("e", DType.F32, (1 << 60, 0), b"")])
    pack = burnpack.load(CountingSource(data))
    assert pack["e"].slice[::2, :].shape == (1 << 59, 0)
