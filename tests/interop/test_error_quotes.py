"""What an error says about a hostile archive or pickle: short escaped excerpts of it, in the
message and in the whole traceback a caller sees (chained causes included), never the file's bytes
(docs/bounds.md, "Errors never quote file contents")."""

from __future__ import annotations

import io
import struct
import traceback
import zipfile
import zlib
from pathlib import Path

import pytest

from burnpack.errors import BurnpackError
from burnpack.interop.dcp import read_dcp
from burnpack.interop.formats import read_npz
from burnpack.interop.pytorch import read_pytorch

SECRET = "SECRET-" * 3000
"""What a file holds that no error may quote: any 200 characters of it are more than an excerpt."""


def assert_quoted_as_an_excerpt_at_most(error: BaseException) -> None:
    whole = "".join(traceback.format_exception(error))
    assert SECRET[:200] not in whole, whole[:3000]
    assert len(str(error)) < 1000


def renamed_local_header(archive: bytes, name: bytes) -> bytes:
    """``archive`` (one member) with its local header naming ``name``: zipfile's error quotes both names."""
    raw = bytearray(archive)
    old = struct.unpack_from("<H", raw, 26)[0]
    raw[26:28] = struct.pack("<H", len(name))
    raw[30 : 30 + old] = name
    directory = raw.find(b"PK\x01\x02")
    struct.pack_into("<I", raw, raw.find(b"PK\x05\x06") + 16, directory)
    return bytes(raw)


def one_member_zip(name: str, data: bytes) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(name, data)
    return out.getvalue()


def bad_crc(archive: bytes) -> bytes:
    raw = bytearray(archive)
    for header, at in ((b"PK\x03\x04", 14), (b"PK\x01\x02", 16)):
        where = raw.find(header) + at
        raw[where : where + 4] = struct.pack("<I", zlib.crc32(b"other"))
    return bytes(raw)


def pickle_quoting(text: str) -> bytes:
    """A protocol-2 STRING opcode without quotes: pickletools' error quotes its whole argument."""
    return b"\x80\x02S" + text.encode() + b"\n."


def read_twice_npz(path: Path) -> object:
    """``burnpack diff``'s second reading of an ``.npz``: with its format's own library (numpy.load)."""
    from burnpack.interop.format import ReadOptions
    from burnpack.interop.registry import get_format

    return get_format("npz").crosscheck(path, ReadOptions())


HOSTILE = {
    "a .pt whose zip header names another member": (
        "m.pt", lambda: renamed_local_header(one_member_zip("archive/data.pkl", b"\x80\x02}."), SECRET.encode()), read_pytorch, "BadZipFile"),
    "an .npz whose zip header names another member": (
        "a.npz", lambda: renamed_local_header(one_member_zip("x.npy", b"\x93NUMPY"), SECRET.encode()), read_npz, "BadZipFile"),
    "the same .npz read by numpy.load": (
        "a.npz", lambda: renamed_local_header(one_member_zip("x.npy", b"\x93NUMPY"), SECRET.encode()), read_twice_npz, "numpy.load cannot read it"),
    "a .pt zip member of a long name": (
        "m.pt", lambda: bad_crc(one_member_zip(SECRET + "/data.pkl", b"\x80\x02}.")), read_pytorch, "CRC"),
    "a .pt of a malformed pickle": (
        "m.pt", lambda: one_member_zip("archive/data.pkl", pickle_quoting(SECRET)), read_pytorch, "malformed pickle"),
}  # fmt: skip


@pytest.mark.parametrize(("name", "content", "read", "match"), HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_archive_or_pickle_is_quoted_as_an_excerpt_in_the_whole_traceback(tmp_path: Path, name: str, content, read, match: str) -> None:
    (tmp_path / name).write_bytes(content())
    with pytest.raises(BurnpackError, match=match) as caught:
        read(tmp_path / name)
    assert_quoted_as_an_excerpt_at_most(caught.value)


def test_a_malformed_dcp_metadata_is_quoted_as_an_excerpt_in_the_whole_traceback(tmp_path: Path) -> None:
    (tmp_path / "ck").mkdir()
    (tmp_path / "ck" / ".metadata").write_bytes(pickle_quoting(SECRET))
    with pytest.raises(BurnpackError, match="cannot read its metadata") as caught:
        read_dcp(tmp_path / "ck")
    assert_quoted_as_an_excerpt_at_most(caught.value)


def test_an_npz_member_of_a_structured_dtype_is_named_by_an_excerpt_of_its_dtype(tmp_path: Path) -> None:
    import numpy as np

    fields = [(f"{SECRET[:60]}{i}", "<f4") for i in range(100)]  # a .npy header holds up to 10,000 bytes
    np.savez(tmp_path / "a.npz", x=np.zeros(1, dtype=fields))
    with pytest.raises(BurnpackError, match="raw dtype") as caught:
        read_npz(tmp_path / "a.npz")
    assert_quoted_as_an_excerpt_at_most(caught.value)

