"""Packs at URLs through fsspec: an HTTP server with Range support and an S3 endpoint (moto),
both on 127.0.0.1 and started by the tests. Requests and bytes fetched are counted."""

from __future__ import annotations

import json

import numpy as np
import pytest

import burnpack

pytest.importorskip("fsspec")
aiohttp = pytest.importorskip("aiohttp")

TENSORS = {f"t{i:02d}": np.full((64, 64), i, dtype=np.float32) for i in range(24)}  # 16 KiB each
DATA = burnpack.save_bytes(TENSORS, metadata={"producer": "test"})


def _serve(server, data: bytes = DATA, path: str = "/model.bpk") -> str:
    server.files[path] = data
    return server.url(path)


def test_opening_a_url_makes_one_size_request_and_one_range_request(http_server):
    url = _serve(http_server)
    pack = burnpack.load(url)
    methods = [method for method, _, _ in http_server.requests]
    assert methods == ["HEAD", "GET"]
    assert http_server.range_requests[0][2] == "bytes=0-65535"
    assert pack.names == sorted(TENSORS)


def test_metadata_over_64_kib_costs_one_more_range_request(http_server):
    big = burnpack.save_bytes({"w": np.ones(4, np.float32)}, metadata={"blob": "x" * 100_000})
    pack = burnpack.load(_serve(http_server, big))
    assert len(http_server.range_requests) == 2
    assert pack.metadata["blob"] == "x" * 100_000


def test_a_tensor_read_fetches_exactly_its_range(http_server):
    pack = burnpack.load(_serve(http_server))
    http_server.reset_counts()
    view = pack["t20"]
    assert np.array_equal(view.numpy(), TENSORS["t20"])
    start = pack.data_section_start + view.data_offsets[0]
    assert http_server.range_requests == [("GET", "/model.bpk", f"bytes={start}-{start + view.byte_len - 1}")]
    assert http_server.bytes_sent == view.byte_len


def test_a_row_slice_of_a_remote_tensor_is_one_small_request(http_server):
    pack = burnpack.load(_serve(http_server))
    http_server.reset_counts()
    assert np.array_equal(pack["t21"].slice[10:12], TENSORS["t21"][10:12])
    assert len(http_server.range_requests) == 1 and http_server.bytes_sent == 2 * 64 * 4


def test_remote_numpy_fetches_everything_in_one_coalesced_request(http_server):
    pack = burnpack.load(_serve(http_server))
    http_server.reset_counts()
    _same_arrays = pack.numpy()
    assert len(http_server.range_requests) == 1
    assert http_server.bytes_sent <= len(DATA)
    assert all(np.array_equal(_same_arrays[n], a) for n, a in TENSORS.items())


def _blocks_of_one_tensor(monkeypatch) -> None:
    """Blocks of at most one 16 KiB tensor: a bulk read of ``DATA`` is 24 requests."""
    monkeypatch.setattr(burnpack.core.remote, "PARALLEL_BLOCK", 16 << 10)
    monkeypatch.setattr(burnpack.core.remote, "BULK_GAP", 0)


def test_a_bulk_read_over_http_keeps_several_requests_in_flight(http_server, monkeypatch):
    _blocks_of_one_tensor(monkeypatch)
    pack = burnpack.load(_serve(http_server))
    http_server.mode, http_server.stall = "slow", 0.2  # every GET waits: the client's next ones arrive meanwhile
    http_server.reset_counts()
    arrays = pack.numpy()
    assert len(http_server.range_requests) == len(TENSORS)
    assert http_server.most_in_flight == burnpack.core.remote.PARALLEL_REQUESTS
    assert all(np.array_equal(arrays[n], a) for n, a in TENSORS.items())


@pytest.mark.parametrize("mode", ["error", "short"])
def test_a_failing_request_of_a_parallel_bulk_read_is_an_io_error(http_server, monkeypatch, mode):
    _blocks_of_one_tensor(monkeypatch)
    pack = burnpack.load(_serve(http_server))
    http_server.mode = mode
    with pytest.raises(burnpack.IoError):
        pack.numpy()


def test_arrays_of_a_remote_bulk_read_are_writable_memory_of_their_own(http_server, monkeypatch):
    _blocks_of_one_tensor(monkeypatch)
    arrays = burnpack.load(_serve(http_server)).numpy()
    arrays["t01"][0, 0] = -1.0
    assert arrays["t01"][0, 0] == -1.0 and arrays["t02"][0, 0] == 2.0


def test_remote_torch_tensors_are_read_in_coalesced_requests(http_server):
    torch = pytest.importorskip("torch")
    pack = burnpack.load(_serve(http_server), framework="pt")
    http_server.reset_counts()
    tensors = pack.torch()
    assert len(http_server.range_requests) == 1
    assert torch.equal(tensors["t03"], torch.full((64, 64), 3.0))


def test_a_missing_url_is_an_io_error(http_server):
    with pytest.raises(burnpack.IoError, match="not found"):
        burnpack.load(http_server.url("/nothing.bpk"))


def test_a_server_error_is_an_io_error(http_server):
    url = _serve(http_server)
    http_server.mode = "error"
    with pytest.raises(burnpack.IoError, match="500|Internal Server Error"):
        burnpack.load(url)


def test_a_stalled_server_times_out_with_an_io_error(http_server):
    url = _serve(http_server)
    http_server.mode = "slow"
    options = {"client_kwargs": {"timeout": aiohttp.ClientTimeout(sock_read=0.3)}}
    with pytest.raises(burnpack.IoError, match="Timeout"):
        burnpack.load(url, storage_options=options)
    assert len(http_server.range_requests) == 1  # no retry loop


def test_a_short_response_is_an_io_error(http_server):
    pack = burnpack.load(_serve(http_server))
    http_server.mode = "short"
    with pytest.raises(burnpack.IoError):
        pack["t05"].numpy()


def test_a_file_shorter_than_the_server_claims_is_an_io_error(http_server):
    pack = burnpack.load(_serve(http_server))
    http_server.mode = "truncated"
    with pytest.raises(burnpack.IoError, match="short read"):
        pack["t23"].numpy()


# -- S3 (moto server) ------------------------------------------------------------------------
@pytest.fixture
def s3_options(s3_endpoint, monkeypatch):
    pytest.importorskip("s3fs")
    return {"key": "testing", "secret": "testing", "client_kwargs": {"endpoint_url": s3_endpoint, "region_name": "us-east-1"}}


@pytest.fixture
def s3_url(s3_options):
    boto3 = pytest.importorskip("boto3")
    client = boto3.client(
        "s3", aws_access_key_id="testing", aws_secret_access_key="testing", **s3_options["client_kwargs"]
    )
    client.create_bucket(Bucket="packs")
    client.put_object(Bucket="packs", Key="model.bpk", Body=DATA)
    return "s3://packs/model.bpk"


@pytest.fixture
def s3_fetches(monkeypatch):
    import s3fs

    fetched: list[tuple[int, int]] = []
    original = s3fs.core.S3FileSystem._cat_file

    async def counting(self, path, version_id=None, start=None, end=None):
        data = await original(self, path, version_id=version_id, start=start, end=end)
        fetched.append((start, len(data)))
        return data

    monkeypatch.setattr(s3fs.core.S3FileSystem, "_cat_file", counting)
    return fetched


def test_s3_open_reads_one_range_and_a_tensor_reads_its_own(s3_url, s3_options, s3_fetches):
    pack = burnpack.load(s3_url, storage_options=s3_options)
    assert s3_fetches == [(0, 65536)]
    view = pack["t07"]
    assert np.array_equal(view.numpy(), TENSORS["t07"])
    assert s3_fetches[1:] == [(pack.data_section_start + view.data_offsets[0], view.byte_len)]


def test_s3_numpy_is_one_coalesced_request(s3_url, s3_options, s3_fetches):
    pack = burnpack.load(s3_url, storage_options=s3_options)
    s3_fetches.clear()
    arrays = pack.numpy()
    assert len(s3_fetches) == 1 and all(np.array_equal(arrays[n], a) for n, a in TENSORS.items())


def test_a_missing_s3_object_is_an_io_error(s3_url, s3_options):
    with pytest.raises(burnpack.IoError):
        burnpack.load("s3://packs/absent.bpk", storage_options=s3_options)


# -- command line --------------------------------------------------------------------------------
def test_inspect_and_convert_take_a_url(http_server, tmp_path):
    from burnpack.cli.main import main

    url = _serve(http_server)
    assert main(["inspect", url]) == 0
    out = tmp_path / "model.safetensors"
    assert main(["convert", url, str(out)]) == 0
    from safetensors.numpy import load_file

    assert all(np.array_equal(load_file(out)[n], a) for n, a in TENSORS.items())


def test_a_server_without_range_support_is_an_io_error_not_a_whole_download(http_server):
    url = _serve(http_server)
    http_server.mode = "norange"
    pack = burnpack.load(url)  # the first block is the start of the file: still right
    assert pack.names == sorted(TENSORS)
    with pytest.raises(burnpack.IoError, match="range requests"):
        pack["t10"].numpy()


def test_a_remote_column_slice_is_one_coalesced_request(http_server):
    pack = burnpack.load(_serve(http_server))
    http_server.reset_counts()
    assert np.array_equal(pack["t02"].slice[:, 5], TENSORS["t02"][:, 5])
    assert len(http_server.range_requests) == 1 and http_server.bytes_sent <= pack["t02"].byte_len


# -- every format convert reads, from a URL (through the format registry) ---------------------------
def _safetensors_bytes() -> bytes:
    from safetensors.numpy import save

    return save(TENSORS)


def _npz_bytes() -> bytes:
    import io

    buffer = io.BytesIO()
    np.savez(buffer, **TENSORS)
    return buffer.getvalue()


def _assert_pack_is_tensors(path) -> None:
    with burnpack.load(path) as pack:
        assert pack.names == sorted(TENSORS) and all(np.array_equal(pack[n].numpy(), a) for n, a in TENSORS.items())


@pytest.mark.parametrize("name, data", [("model.safetensors", _safetensors_bytes), ("model.npz", _npz_bytes)])
def test_convert_reads_a_url_of_any_file_format(http_server, tmp_path, name, data):
    from burnpack.interop import convert

    report = convert(_serve(http_server, data(), f"/{name}"), tmp_path / "out.bpk")
    assert report.source_format == name.rsplit(".", 1)[1]
    _assert_pack_is_tensors(tmp_path / "out.bpk")


def test_convert_reads_a_pytorch_url(http_server, tmp_path):
    torch = pytest.importorskip("torch")
    import io

    buffer = io.BytesIO()
    torch.save({n: torch.from_numpy(a) for n, a in TENSORS.items()}, buffer)
    from burnpack.cli.main import main

    assert main(["convert", _serve(http_server, buffer.getvalue(), "/weights"), str(tmp_path / "out.bpk"), "-q"]) == 0
    _assert_pack_is_tensors(tmp_path / "out.bpk")


def test_diff_takes_urls_of_any_format(http_server, tmp_path, capsys):
    from burnpack.cli.main import main

    burnpack.save(TENSORS, tmp_path / "local.bpk", metadata={"producer": "test"})
    assert main(["diff", _serve(http_server), str(tmp_path / "local.bpk")]) == 0
    st_url = _serve(http_server, _safetensors_bytes(), "/model.safetensors")
    assert main(["diff", st_url, str(tmp_path / "local.bpk")]) == 0  # only who wrote them differs
    assert main(["diff", "--provenance", st_url, str(tmp_path / "local.bpk")]) == 1
    assert "0 tensor differences, 0 metadata differences, 0 scalar differences, 1 provenance difference" in capsys.readouterr().out


def test_diff_names_a_missing_url_as_given(http_server, tmp_path, capsys):
    from burnpack.cli.main import main

    url = http_server.url("/absent.bpk")
    burnpack.save(TENSORS, tmp_path / "local.bpk")
    assert main(["diff", url, str(tmp_path / "local.bpk")]) == 2
    err = capsys.readouterr().err
    assert url in err and "http:/1" not in err


def test_inspect_lists_a_safetensors_url(http_server, capsys):
    from burnpack.cli.main import main

    url = _serve(http_server, _safetensors_bytes(), "/model.safetensors")
    assert main(["inspect", url]) == 0
    out = capsys.readouterr().out
    assert out.startswith("format: safetensors file; no place for param ids")
    assert all(f"\n{name}  " in out for name in TENSORS)


def test_inspect_json_of_an_npz_url_lists_its_tensors(http_server, capsys):
    from burnpack.cli.main import main

    url = _serve(http_server, _npz_bytes(), "/model.npz")
    assert main(["inspect", "--json", url]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["format"] == "npz" and sorted(t["name"] for t in report["tensors"]) == sorted(TENSORS)


def test_an_error_in_a_fetched_url_names_the_url_not_a_scratch_file(http_server, tmp_path):
    import io
    import zipfile

    from burnpack.interop import ConversionError, convert

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("w.npy", b"\x93NUMPY broken")
    url = _serve(http_server, buffer.getvalue(), "/bad.npz")
    with pytest.raises(ConversionError) as error:
        convert(url, tmp_path / "out.bpk")
    assert url in str(error.value) and "burnpack-url-" not in str(error.value)


def test_a_folder_format_is_not_read_from_a_url(http_server, tmp_path):
    from burnpack.interop import ConversionError, convert

    with pytest.raises(ConversionError, match="not read from a URL"):
        convert(_serve(http_server), tmp_path / "out.bpk", from_format="safetensors-shards")


def test_a_server_without_range_support_gets_our_advice_for_any_format(http_server, tmp_path):
    from burnpack.interop import convert

    url = _serve(http_server, _safetensors_bytes(), "/model.safetensors")  # 384 KiB: more than the first block
    http_server.mode = "norange"
    with pytest.raises(burnpack.IoError, match="does not answer range requests.*download the file"):
        convert(url, tmp_path / "out.bpk")
    assert not (tmp_path / "out.bpk").exists()


# -- hostile servers -----------------------------------------------------------------------------
def test_an_endless_partial_response_is_an_io_error_after_the_bytes_asked_for(http_server):
    pack = burnpack.load(_serve(http_server))
    http_server.mode = "endless"
    http_server.reset_counts()
    with pytest.raises(burnpack.IoError, match="more than the 16384 bytes asked for"):
        pack["t05"].numpy()
    assert http_server.bytes_sent < http_server.endless_limit // 4  # the client hung up: no whole download


def test_a_dripping_server_is_an_io_error_at_the_deadline(http_server):
    from burnpack.core.remote import FsspecSource

    pack = burnpack.load(FsspecSource(_serve(http_server), deadline=0.5))
    http_server.mode = "drip"
    http_server.reset_counts()
    with pytest.raises(burnpack.IoError, match="within the 0.5 s deadline"):
        pack["t05"].numpy()
    assert http_server.bytes_sent < http_server.drip_limit  # given up before the server gave up


def test_an_asynchronous_backend_request_is_cancelled_at_the_deadline():
    import asyncio

    from fsspec.asyn import AsyncFileSystem
    from fsspec.registry import register_implementation

    from burnpack.core.remote import FsspecSource

    cancelled: list[bool] = []

    class Stalling(AsyncFileSystem):  # answers the size, then never sends a byte of a range
        protocol = "stalling"

        async def _info(self, path, **kwargs):
            return {"name": path, "size": len(DATA), "type": "file"}

        async def _cat_file(self, path, start=None, end=None, **kwargs):
            if start == 0:
                return DATA[start:end]
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.append(True)
                raise

    register_implementation("stalling", Stalling, clobber=True)
    pack = burnpack.load(FsspecSource("stalling://model.bpk", deadline=0.25))
    with pytest.raises(burnpack.IoError, match="within the 0.25 s deadline"):
        pack["t05"].numpy()
    assert cancelled == [True]  # the request itself was cancelled, not only our wait for it


def test_request_limits_must_be_positive():
    from burnpack.core.remote import FsspecSource

    with pytest.raises(ValueError, match="positive"):
        FsspecSource("http://127.0.0.1:9/x.bpk", deadline=0)


def test_a_closed_remote_source_reads_nothing_more(http_server):
    from burnpack.core.remote import FsspecSource

    source = FsspecSource(_serve(http_server))
    source.close()
    http_server.reset_counts()
    with pytest.raises(burnpack.IoError, match="closed"):
        source.read(100_000, 10)
    assert http_server.requests == []
