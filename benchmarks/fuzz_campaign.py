"""Fuzz campaign: every reader against mutated files, judged by the resource contract.

Readers: burnpack (``load`` from bytes and from a file, ``legacy_ok``, ``strict``, every tensor's
``numpy()``, and ``burnpack inspect`` for some inputs), PyTorch (``read_pytorch`` and
``read_pytorch_object`` on zip, legacy and tar layouts), safetensors (``parse_safetensors``,
``read_safetensors``) and npz (``read_npz``), plus ``read_tensors``' format detection; side
files (mutated JSON as a shard index, ``retention.json``, a writer spec, ``dump --batch``
requests, and text as Burn's ``Loss.log``); and ``http``: a mutated pack served by a hostile
server on 127.0.0.1 (lying sizes, bodies longer, shorter or endless, ranges ignored, a dripping
body, odd statuses), read through ``burnpack.remote`` with a 0.25 s deadline per request;
``shards``: Hugging Face model folders (``*.index.json`` plus safetensors or ``torch.save``
shards, or a single ``model.safetensors``) read through ``read_tensors`` (detected, named by
index, or with the format given) and ``convert``, every tensor materialised; ``dcp``:
``torch.distributed.checkpoint`` folders made with ``dcp.save`` (mutated ``.metadata`` pickles
and ``.distcp`` records) read through ``read_dcp`` (every tensor materialised),
``read_dcp_object``, ``read_tensors`` and ``convert``. A folder input is a stored zip of its
files: a mutation changes one file's bytes, renames, drops or copies a file, or adds a file of
another format (a ``.metadata`` pickle beside shards, an index beside DCP files).

The oracle is the documented resource contract (docs/bounds.md). For an input of n
bytes, each reader must

* return or raise an exception from the burnpack tree (a class defined in a ``burnpack``
  module); anything else is a failure (``foreign``);
* use at most ``TIME_BASE`` + ``TIME_PER_MB`` × n/MB seconds of CPU (``over_time``; an input
  running ``TIME_KILL_FACTOR`` × that long is interrupted);
* stay within ``MEMORY_BASE`` + ``MEMORY_FACTOR`` × n bytes of address space above what the
  process had before the input (enforced with ``RLIMIT_AS``, so an attempt to allocate more
  raises ``MemoryError``; a ``MemoryError`` anywhere in the exception chain is ``over_memory``,
  even when the reader turned it into a burnpack error).

Input ``i`` of a campaign is generated from ``(seed, i)`` alone, so any failure is replayed with
``--replay i`` (same seed corpus required: the corpus digest is recorded). Workers take blocks of
``len(READERS)`` consecutive indices (one input per reader) in turn. The result JSON (inputs per reader, failures, version, commit,
corpus digest) is what ``benchmarks/results/fuzz_campaign.json`` holds.

    python benchmarks/fuzz_campaign.py --seconds 60 --workers 2 --json out.json
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import hashlib
import io
import json
import multiprocessing
import os
import platform
import random
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import burnpack  # noqa: E402
import burnpack.cli.main  # noqa: E402
from burnpack import Tensor, Writer  # noqa: E402
from burnpack.interop.formats import read_npz  # noqa: E402
from burnpack.interop.registry import read_tensors  # noqa: E402
from burnpack.interop.pytorch import read_pytorch, read_pytorch_object  # noqa: E402
from burnpack.interop.safetensors import parse_safetensors, read_safetensors, serialize_safetensors  # noqa: E402
from burnpack.records import Checkpoints, burn_valid_losses  # noqa: E402
from burnpack.core.spec import load_spec, spec_from_pack, writer_from_spec  # noqa: E402

MB = 1_000_000
TIME_BASE = 0.5
TIME_PER_MB = 1.0
TIME_KILL_FACTOR = 10
MEMORY_BASE = 64 * 1024 * 1024
MEMORY_FACTOR = 16
READERS = ("bpk", "pytorch", "safetensors", "npz", "sidefile", "http", "shards", "dcp")
SUFFIXES = {
    "bpk": ".bpk", "pytorch": ".pt", "safetensors": ".safetensors", "npz": ".npz", "sidefile": ".json", "http": ".bpk",
    "shards": ".zip", "dcp": ".zip",
}  # fmt: skip
FOLDER_READERS = ("shards", "dcp")  # an input is a stored zip of the folder's files
_FIXED_DATE = (2020, 1, 1, 0, 0, 0)


# -- seed corpus --------------------------------------------------------------------------------
def _bpk_seeds() -> list[bytes]:
    rng = np.random.default_rng(0)
    seeds = [
        burnpack.save_bytes({"w": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.ones(3, np.int64)}),
        Writer(
            [
                Tensor.from_numpy("a.weight", rng.standard_normal((4, 4)).astype(np.float16), param_id=3),
                Tensor.from_numpy("mask", np.array([True, False, True])),
                Tensor.from_numpy("idx", np.arange(5, dtype=np.uint32)),
            ],
            metadata={"format": "burnpack", "note": "fuzz"},
            scalars={"epoch": 3, "lr": 0.5, "done": True},
        ).to_bytes(),
        burnpack.save_bytes({}),
        burnpack.save_bytes({f"t{i}": np.full(i + 1, i, np.int8) for i in range(12)}),
    ]
    vectors = REPO / "conformance" / "vectors"
    for path in sorted(vectors.rglob("*.bpk")):
        if path.stat().st_size <= 64 * 1024:
            seeds.append(path.read_bytes())
    return seeds


def _zip(members: list[tuple[str, bytes, int]]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names are one of the mutations
        for name, data, compression in members:
            info = zipfile.ZipInfo(name, _FIXED_DATE)
            info.compress_type = compression
            archive.writestr(info, data)
    return out.getvalue()


def _pytorch_seeds() -> list[bytes]:
    seeds: list[bytes] = []
    try:
        import torch
    except ImportError:  # pragma: no cover - the torch extra is absent
        torch = None
    if torch is not None:
        gen = torch.Generator().manual_seed(0)
        state = {
            "w": torch.randn(3, 4, generator=gen),
            "w_t": torch.randn(4, 3, generator=gen).t(),
            "b": torch.arange(4, dtype=torch.int64),
            "nested": {"h": torch.zeros(2, dtype=torch.float16), "flag": torch.tensor([True, False])},
            "step": 7,
        }
        state["shared"] = state["w"][1:]
        for zipped in (True, False):
            out = io.BytesIO()
            torch.save(state, out, _use_new_zipfile_serialization=zipped)
            seeds.append(out.getvalue())
    fixtures = Path(os.environ.get("BURNPACK_SHARED", REPO.parent / "shared")) / "fixtures" / "pytorch"
    for path in sorted(fixtures.rglob("*")):
        if path.suffix in (".pt", ".pth", ".tar", ".bin") and path.stat().st_size <= 64 * 1024:
            seeds.append(path.read_bytes())
    if not seeds:  # without torch or fixtures: a minimal zip checkpoint holding an empty dict
        seeds.append(_zip([("archive/data.pkl", b"\x80\x02}q\x00.", zipfile.ZIP_STORED)]))
    return seeds


def _safetensors_seeds() -> list[bytes]:
    return [
        serialize_safetensors({"w": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.zeros(2, np.int16)}, {"k": "v"}),
        serialize_safetensors({"m": np.array([True, False])}),
        serialize_safetensors({}),
    ]


def _npy(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array)
    return out.getvalue()


def _npz_seeds() -> list[bytes]:
    arrays = {"a.npy": _npy(np.arange(6, dtype=np.int32).reshape(2, 3)), "b.npy": _npy(np.asfortranarray(np.eye(3)))}
    meta = _npy(np.array(json.dumps({"metadata": {"k": "v"}, "dtypes": {"a": "I32"}})))
    return [
        _zip([(name, data, zipfile.ZIP_STORED) for name, data in arrays.items()]),
        _zip([(name, data, zipfile.ZIP_DEFLATED) for name, data in arrays.items()] + [("__metadata__.npy", meta, zipfile.ZIP_DEFLATED)]),
        _zip([("x.npy", _npy(np.zeros(0, np.uint8)), zipfile.ZIP_STORED)]),
    ]


def _sidefile_seeds() -> list[bytes]:
    with burnpack.load(_bpk_seeds()[1]) as pack:
        spec = spec_from_pack(pack)
    index = {"metadata": {"total_size": 8}, "weight_map": {"w": "a.safetensors", "b": "a.safetensors"}}
    retention = {"format": "burnpack-checkpoint-retention/1", "epochs": [{"epoch": 1, "valid_loss": 0.5}, {"epoch": 2, "valid_loss": 0.25, "best_epoch": 1}, {"epoch": 3}]}
    return [
        json.dumps(index, indent=2).encode(),
        json.dumps(retention, indent=1).encode(),
        json.dumps(spec).encode(),
        b'{"path": "absent.bpk", "level": "strict"}\n{"path": "x.bpk"}\nplain.bpk\n',
        b"0.5,10\n0.25,20\n1.5\n0.75,final\n",
    ]


def _http_seeds() -> list[bytes]:
    return _bpk_seeds()[:4]


def _folder(files: dict[str, bytes]) -> bytes:
    return _zip([(name, data, zipfile.ZIP_STORED) for name, data in files.items()])


def _index(weight_map: dict[str, str], total: int) -> bytes:
    return json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}, indent=2).encode()


def _shard_seeds() -> list[bytes]:
    first = serialize_safetensors({"w": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.zeros(2, np.int16)}, {"format": "pt"})
    second = serialize_safetensors({"m": np.array([True, False]), "h": np.ones((2, 2), np.float16)})
    names = ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors")
    weight_map = {"w": names[0], "b": names[0], "m": names[1], "h": names[1]}
    seeds = [
        _folder({"model.safetensors.index.json": _index(weight_map, 40), names[0]: first, names[1]: second}),
        _folder({"model.safetensors": first, "config.json": b'{"model_type": "fuzz"}'}),
        _folder({"weights.index.json": _index({"w": "a.safetensors", "b": "a.safetensors"}, 28), "a.safetensors": first}),
    ]
    try:
        import torch
    except ImportError:  # pragma: no cover - the torch extra is absent
        return seeds
    shards = []
    for state in ({"w": torch.arange(6, dtype=torch.float32).reshape(2, 3)}, {"b": torch.ones(3, dtype=torch.int64), "step": 3}):
        out = io.BytesIO()
        torch.save(state, out)
        shards.append(out.getvalue())
    bins = ("pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin")
    seeds.append(_folder({"pytorch_model.bin.index.json": _index({"w": bins[0], "b": bins[1]}, 48), bins[0]: shards[0], bins[1]: shards[1]}))
    return seeds


def _dcp_seeds() -> list[bytes]:
    """Folders written by torch's ``dcp.save`` (its ``.metadata`` made reproducible: the
    ``StorageMeta`` names a fixed checkpoint id and save id instead of the scratch folder)."""
    try:
        import torch
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.metadata import StorageMeta
    except ImportError:  # pragma: no cover - the torch extra is absent: a metadata pickle alone
        return [_folder({".metadata": b"\x80\x02}q\x00.", "__0_0.distcp": b""})]
    import pickle

    states: list[dict[str, Any]] = [
        {
            "w": torch.arange(6, dtype=torch.float32).reshape(2, 3), "b": torch.ones(3, dtype=torch.int64),
            "h": torch.zeros(2, 2, dtype=torch.bfloat16), "mask": torch.tensor([True, False]), "step": 7,
        },
        {
            "model": {"fc": {"weight": torch.eye(3, dtype=torch.float16), "bias": torch.arange(3, dtype=torch.int8)}},
            "optim": {"state": {0: {"exp_avg": torch.ones(3), "step": torch.tensor(2.0)}}, "param_groups": [{"lr": 0.1, "params": [0]}]},
            "names": ["a", "b"],
        },
        {"x": torch.tensor(1.5, dtype=torch.float64), "u": torch.arange(4, dtype=torch.uint8), "empty": torch.zeros(2, 0, 3)},
    ]  # fmt: skip
    seeds = []
    with tempfile.TemporaryDirectory(prefix="bpk-fuzz-dcp-") as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for number, state in enumerate(states):
            folder = Path(tmp) / str(number)
            dcp.save(state, checkpoint_id=folder, no_dist=True)
            metadata = pickle.loads((folder / ".metadata").read_bytes())  # our own dcp.save output
            metadata.storage_meta = StorageMeta(checkpoint_id=Path("checkpoint"), save_id="fuzz", load_id=None)
            files = {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name != ".metadata"}
            seeds.append(_folder({".metadata": pickle.dumps(metadata, protocol=2), **files}))
    return seeds


def seed_corpus() -> dict[str, list[bytes]]:
    return {
        "bpk": _bpk_seeds(), "pytorch": _pytorch_seeds(), "safetensors": _safetensors_seeds(), "npz": _npz_seeds(),
        "sidefile": _sidefile_seeds(), "http": _http_seeds(), "shards": _shard_seeds(), "dcp": _dcp_seeds(),
    }  # fmt: skip


def corpus_digest(corpus: dict[str, list[bytes]]) -> str:
    digest = hashlib.sha256()
    for reader in READERS:
        for seed in corpus[reader]:
            digest.update(hashlib.sha256(seed).digest())
    return digest.hexdigest()


# -- mutations ----------------------------------------------------------------------------------
_INTERESTING = [0, 1, 0x7F, 0x80, 0xFF, 0x7FFF, 0x8000, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 1 << 32, (1 << 63) - 1, (1 << 64) - 1]
# CBOR heads worth inserting: tags (bignum, decimal fraction, rational, shared references, an
# unknown tag), indefinite lengths, breaks, huge lengths, floats.
_CBOR_SNIPPETS = [
    b"\xc2", b"\xc3", b"\xc4\x82", b"\xd8\x1e\x82", b"\xd8\x1c", b"\xd8\x1d\x00", b"\xd9\x03\xe8", b"\xdb" + b"\xff" * 8,
    b"\x9f", b"\xbf", b"\x5f", b"\x7f", b"\xff", b"\x9b" + b"\xff" * 8, b"\xbb\x00\x00\x00\x01\x00\x00\x00\x00",
    b"\xfb\x7f\xf8\x00\x00\x00\x00\x00\x01", b"\xf9\x7c\x00", b"\xf7", b"\xf6",
]
# Pickle opcodes worth inserting: memo puts and gets, extension codes, frames, big lengths.
_PICKLE_SNIPPETS = [
    b"r\xff\xff\xff\x7f", b"q\xff", b"j\xff\xff\xff\x7f", b"h\x00", b"\x94", b"\x82\x01", b"\x83\x01\x00",
    b"\x84\x01\x00\x00\x00", b"\x95" + b"\xff" * 8, b"\x8e" + b"\xff" * 8, b"B\xff\xff\xff\x7f", b"(", b"t", b"u",
    b"}", b"]", b"e", b"0", b"2", b"R", b"b", b"\x93", b"c__builtin__\neval\n",
]


# JSON worth inserting: deep and dense nesting, escapes, constants, huge numbers.
_JSON_SNIPPETS = [
    b"[" * 200, b'{"k":' * 200, b"[]," * 50, b"{}", b'"', b"\\", b"\\u0000", b"\\ud800", b"NaN", b"-Infinity", b"1e999",
    b"99999999999999999999", b"]", b"}", b",", b":", b"null", b'"path"', b'"epochs"', b'"weight_map"', b'"tensors"', b"\n",
]


def _mutate_bytes(data: bytes, rng: random.Random, snippets: list[bytes]) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3, 5))):
        op = rng.randrange(9)
        pos = rng.randrange(len(buf) + 1)
        if op == 0 and buf:  # flip bits
            pos = min(pos, len(buf) - 1)
            buf[pos] ^= 1 << rng.randrange(8)
        elif op == 1 and buf:  # interesting byte
            pos = min(pos, len(buf) - 1)
            buf[pos] = rng.choice((0, 1, 0x7F, 0x80, 0xFF, 0x18, 0x1B, 0x9F, 0xBF))
        elif op == 2:  # interesting integer, either byte order
            width = rng.choice((1, 2, 4, 8))
            value = rng.choice(_INTERESTING) & ((1 << (8 * width)) - 1)
            raw = value.to_bytes(width, rng.choice(("little", "big")))
            buf[pos : pos + width] = raw
        elif op == 3:  # insert a format snippet
            buf[pos:pos] = rng.choice(snippets)
        elif op == 4 and buf:  # delete a range
            buf[pos : pos + rng.randrange(1, 17)] = b""
        elif op == 5 and buf:  # duplicate a range
            start = rng.randrange(len(buf))
            chunk = buf[start : start + rng.randrange(1, 65)]
            buf[pos:pos] = chunk * rng.choice((1, 2, 8))
        elif op == 6:  # random bytes
            buf[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 9)))
        elif op == 7 and buf:  # truncate
            del buf[rng.randrange(len(buf)) :]
        elif op == 8 and buf:  # overwrite with a copy of another place
            start = rng.randrange(len(buf))
            chunk = buf[start : start + rng.randrange(1, 33)]
            buf[pos : pos + len(chunk)] = chunk
    return bytes(buf)


def _mutate_zip(data: bytes, rng: random.Random, snippets: list[bytes]) -> bytes:
    """Mutate one member's content and rebuild the archive (reaching the pickle or .npy parser)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = [(info.filename, archive.read(info), info.compress_type) for info in archive.infolist()]
    except Exception:  # a damaged seed (after an earlier splice): mutate its bytes instead
        return _mutate_bytes(data, rng, snippets)
    if not members:
        return _mutate_bytes(data, rng, snippets)
    index = rng.randrange(len(members))
    name, content, compression = members[index]
    choice = rng.randrange(4)
    if choice == 0:
        name = _mutate_bytes(name.encode(), rng, [b"/", b".npy", b"data.pkl", b".."]).decode("utf-8", "replace") or "x"
    elif choice == 1:
        compression = rng.choice((zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED))
    else:
        content = _mutate_bytes(content, rng, snippets)
    members[index] = (name, content, compression)
    if rng.random() < 0.1:
        members.append(members[rng.randrange(len(members))])
    try:
        return _zip(members)
    except Exception:
        return _mutate_bytes(data, rng, snippets)


def _mutate_tar(data: bytes, rng: random.Random, snippets: list[bytes]) -> bytes:
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as archive:
            members = [(m, archive.extractfile(m).read() if m.isfile() else b"") for m in archive.getmembers()]
    except Exception:
        return _mutate_bytes(data, rng, snippets)
    if not members:
        return _mutate_bytes(data, rng, snippets)
    index = rng.randrange(len(members))
    info, content = members[index]
    members[index] = (info, _mutate_bytes(content, rng, snippets))
    out = io.BytesIO()
    try:
        with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as archive:
            for member, body in members:
                member.size = len(body)
                member.mtime = 0
                archive.addfile(member, io.BytesIO(body))
    except Exception:
        return _mutate_bytes(data, rng, snippets)
    return out.getvalue()


def _mutate_bpk_metadata(data: bytes, rng: random.Random) -> bytes:
    """Mutate inside the CBOR metadata and fix the header's length (or not)."""
    if len(data) < 10 or data[:4] != b"NRUB":
        return _mutate_bytes(data, rng, _CBOR_SNIPPETS)
    (size,) = struct.unpack_from("<I", data, 6)
    blob, rest = data[10 : 10 + size], data[10 + size :]
    blob = _mutate_bytes(blob, rng, _CBOR_SNIPPETS)
    new_size = len(blob) if rng.random() < 0.9 else rng.choice(_INTERESTING) & 0xFFFFFFFF
    return data[:6] + struct.pack("<I", new_size) + blob + rest


# Names a folder mutation copies a file to: another format's marker beside this one, a second
# index, another rank's records, a file of the weight map's.
_FOLDER_NAMES = [
    ".metadata", "model.safetensors.index.json", "pytorch_model.bin.index.json", "model.safetensors", "pytorch_model.bin",
    "other.index.json", "__1_0.distcp", "__0_0.distcp", "model-00001-of-00002.safetensors", "a.safetensors",
]
# Shard names worth putting into an index: traversal, absolute, empty, the index itself.
_SHARD_NAMES = ["../a.safetensors", "/etc/passwd", "", ".", "..", "model.safetensors.index.json", "a/b.safetensors", "x.bin", ".metadata"]


def _folder_files(data: bytes) -> list[tuple[str, bytes]]:
    """The files of a folder input (a damaged archive is one index file holding its bytes)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return [(info.filename, archive.read(info)) for info in archive.infolist()]
    except Exception:
        return [("model.safetensors.index.json", data)]


def _mutate_index(content: bytes, rng: random.Random) -> bytes:
    """A structural change of a shard index: a shard name replaced, a name added or dropped."""
    try:
        index = json.loads(content)
        weight_map = index["weight_map"]
        names = list(weight_map)
    except Exception:
        return _mutate_bytes(content, rng, _JSON_SNIPPETS)
    choice = rng.randrange(3)
    if choice == 0 and names:
        weight_map[rng.choice(names)] = rng.choice(_SHARD_NAMES + list(weight_map.values()))
    elif choice == 1:
        weight_map[rng.choice(("extra", "", "w", "a" * 300))] = rng.choice(list(weight_map.values()) or _SHARD_NAMES)
    elif names:
        del weight_map[rng.choice(names)]
    return json.dumps(index).encode()


_PICKLE_INTS = {b"I", b"J", b"K", b"M", b"\x8a"}  # INT, BININT, BININT1, BININT2, LONG1
_BIG_INTS = [-1, 1 << 31, 1 << 40, (1 << 60) - 1, 1 << 60, 1 << 63, 1 << 64, 1 << 80]
# Nested lists 1100 deep: EMPTY_LIST pushed 1100 times, each appended to the one below.
_DEEP_PICKLE = b"]" * 1100 + b"a" * 1099


def _mutate_pickle_int(content: bytes, rng: random.Random) -> bytes:
    """One int of a pickle (an offset, a length, a size, a dimension) replaced by an interesting
    one, written as LONG1; the pickle is only parsed into opcodes (nothing is loaded)."""
    import pickletools

    try:
        spots = [(pos, op.code) for op, _, pos in pickletools.genops(content) if op.code.encode("latin-1") in _PICKLE_INTS]
    except Exception:
        spots = []
    if not spots:
        return _mutate_bytes(content, rng, _PICKLE_SNIPPETS + [_DEEP_PICKLE])
    pos, code = rng.choice(spots)
    end = content.index(b"\n", pos) + 1 if code == "I" else pos + 1 + {"J": 4, "K": 1, "M": 2}.get(code, 1 + content[pos + 1])
    value = rng.choice(_BIG_INTS if rng.random() < 0.5 else _INTERESTING)
    value = value + rng.choice((-1, 0, 0, 1)) if value > 0 else value
    raw = value.to_bytes((value.bit_length() + 8) // 8, "little", signed=True)
    return content[:pos] + b"\x8a" + bytes([len(raw)]) + raw + content[end:]


def _mutate_folder(data: bytes, rng: random.Random) -> bytes:
    """Mutate a folder input: one file's bytes (by its format), a name, a file dropped or copied."""
    files = _folder_files(data)
    op = rng.randrange(20)
    if not files or op < 13:
        if not files:
            files = [("model.safetensors.index.json", b"")]
        index = rng.randrange(len(files))
        name, content = files[index]
        if name.endswith(".json"):
            content = _mutate_index(content, rng) if rng.random() < 0.3 else _mutate_bytes(content, rng, _JSON_SNIPPETS)
        elif name.endswith(".safetensors"):
            content = _mutate_bytes(content, rng, _JSON_SNIPPETS)
        elif name.endswith(".bin") and content[:4] == b"PK\x03\x04" and rng.random() < 0.7:
            content = _mutate_zip(content, rng, _PICKLE_SNIPPETS)
        elif name == ".metadata" and rng.random() < 0.4:
            content = _mutate_pickle_int(content, rng)
        else:  # .metadata pickles and .distcp records (torch.save archives end to end)
            content = _mutate_bytes(content, rng, _PICKLE_SNIPPETS + [_DEEP_PICKLE])
        files[index] = (name, content)
    elif op < 15:
        index = rng.randrange(len(files))
        name, content = files[index]
        files[index] = (_mutate_bytes(name.encode(), rng, [b".", b"/", b"..", b".json", b".distcp"]).decode("utf-8", "replace"), content)
    elif op < 17:
        del files[rng.randrange(len(files))]
    else:
        files.append((rng.choice(_FOLDER_NAMES), rng.choice(files)[1]))
    return _folder(dict(files))


def generate(corpus: dict[str, list[bytes]], seed: int, index: int) -> tuple[str, bytes]:
    """Input ``index`` of the campaign: its reader and its bytes (deterministic)."""
    rng = random.Random(f"{seed}:{index}")
    reader = READERS[index % len(READERS)]
    seeds = corpus[reader]
    data = rng.choice(seeds)
    if reader in FOLDER_READERS:
        for _ in range(rng.choice((1, 1, 2, 3))):
            data = _mutate_folder(data, rng)
        return reader, data
    if rng.random() < 0.05 and len(seeds) > 1:  # splice two seeds
        other = rng.choice(seeds)
        cut = rng.randrange(len(data) + 1)
        data = data[:cut] + other[rng.randrange(len(other) + 1) :]
    for _ in range(rng.choice((1, 1, 2, 3))):
        if reader in ("bpk", "http"):
            data = _mutate_bpk_metadata(data, rng) if rng.random() < 0.6 else _mutate_bytes(data, rng, _CBOR_SNIPPETS)
        elif reader == "sidefile":
            data = _mutate_bytes(data, rng, _JSON_SNIPPETS)
        elif data[:4] == b"PK\x03\x04" and rng.random() < 0.7:
            data = _mutate_zip(data, rng, _PICKLE_SNIPPETS if reader == "pytorch" else [b"\x93NUMPY", b"(", b"'shape'"])
        elif data[257:262] == b"ustar" and rng.random() < 0.7:
            data = _mutate_tar(data, rng, _PICKLE_SNIPPETS)
        else:
            data = _mutate_bytes(data, rng, _PICKLE_SNIPPETS if reader == "pytorch" else _CBOR_SNIPPETS)
    return reader, data


# -- readers --------------------------------------------------------------------------------------
def _read_bpk(data: bytes, path: Path, rng: random.Random) -> None:
    mode = rng.randrange(64)  # the CLI's argument parsing costs more than most reads
    if mode == 0:
        path.write_bytes(data)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            burnpack.cli.main.main(["inspect", str(path)])
        return
    source: Any = data
    if mode == 1:
        path.write_bytes(data)
        source = path
    with burnpack.load(source, legacy_ok=mode == 2, strict=mode == 3) as pack:
        pack.numpy()
        for view in pack.tensors():
            view.numpy()


def _read_pytorch(data: bytes, path: Path, rng: random.Random) -> None:
    path.write_bytes(data)
    mode = rng.randrange(3)
    if mode == 0:
        read_pytorch_object(path)
    elif mode == 1:
        read_tensors(path).numpy()
    else:
        read_pytorch(path)


def _read_safetensors(data: bytes, path: Path, rng: random.Random) -> None:
    if rng.random() < 0.2:
        path.write_bytes(data)
        read_safetensors(path)
    else:
        parse_safetensors(data)


def _read_npz(data: bytes, path: Path, rng: random.Random) -> None:
    path.write_bytes(data)
    if rng.random() < 0.3:
        read_tensors(path).numpy()
    else:
        read_npz(path).numpy()


def _read_sidefile(data: bytes, path: Path, rng: random.Random) -> None:
    """The bytes as one side file, chosen by ``rng``: shard index, retention record, writer spec,
    ``dump --batch`` requests or Burn's ``Loss.log``."""
    from burnpack.cli.batch import serve

    folder = path.parent / "side"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    surface = rng.randrange(5)
    if surface == 0:
        (folder / "a.safetensors").write_bytes(serialize_safetensors({"w": np.zeros(1, np.float32), "b": np.ones(1, np.float32)}))
        (folder / "model.safetensors.index.json").write_bytes(data)
        read_tensors(folder, "safetensors-shards").close()
    elif surface == 1:
        (folder / "checkpoint").mkdir()
        (folder / "checkpoint" / "retention.json").write_bytes(data)
        Checkpoints(folder)
    elif surface == 2:
        path.write_bytes(data)
        writer_from_spec(load_spec(path)).to_bytes()
    elif surface == 3:
        with contextlib.chdir(folder):  # relative request paths stay in the scratch folder
            serve(io.StringIO(data.decode("utf-8", "replace")), io.StringIO(), max_line=4096)
    else:
        (folder / "valid" / "epoch-1").mkdir(parents=True)
        (folder / "valid" / "epoch-1" / "Loss.log").write_bytes(data)
        burn_valid_losses(folder)


def _unpack_folder(data: bytes, path: Path) -> Path:
    """The folder input written out as files (names made plain file names in the folder)."""
    folder = path.parent / "folder"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    for name, content in _folder_files(data):
        plain = re.sub(r"[/\\\0]", "_", name)[:80]  # at most 240 bytes: a legal file name
        if plain not in ("", ".", ".."):
            (folder / plain).write_bytes(content)
    return folder


def _materialise(tset: Any) -> None:
    with tset:
        for entry in tset.entries:
            entry.numpy()


def _read_shards(data: bytes, path: Path, rng: random.Random) -> None:
    """A Hugging Face model folder: detected, named by an index file, or with its format given;
    or converted to a ``.bpk``."""
    folder = _unpack_folder(data, path)
    mode = rng.randrange(5)
    if mode == 0:
        from burnpack.interop.converter import convert

        convert(folder, path.parent / "out.bpk", overwrite=True)
    elif mode == 1:
        indexes = sorted(folder.glob("*.index.json"))
        _materialise(read_tensors(indexes[0] if indexes else folder))
    elif mode == 2:
        _materialise(read_tensors(folder, rng.choice(("safetensors-shards", "pytorch-shards"))))
    else:
        _materialise(read_tensors(folder))


def _read_dcp_folder(data: bytes, path: Path, rng: random.Random) -> None:
    """A DCP folder through ``read_dcp`` (every tensor materialised), ``read_dcp_object``,
    ``read_tensors`` (detected or as ``dcp``) or ``convert``."""
    from burnpack.interop.dcp import read_dcp, read_dcp_object

    folder = _unpack_folder(data, path)
    mode = rng.randrange(6)
    if mode == 0:
        from burnpack.interop.converter import convert

        convert(folder, path.parent / "out.bpk", overwrite=True, from_format="dcp")
    elif mode == 1:
        read_dcp_object(folder)
    elif mode == 2:
        _materialise(read_tensors(folder))
    elif mode == 3:
        _materialise(read_tensors(folder, "dcp"))
    else:
        _materialise(read_dcp(folder))


class HostileServer:
    """One HTTP/1.0 server thread on 127.0.0.1 serving ``data`` at ``/input.bpk`` the way ``mode``
    says. Every loop that sends is bounded (bytes and time) and stops when the client hangs up."""

    MODES = ("ok", "ok", "lying_size", "overlong", "endless", "short", "norange", "drip", "status")

    def __init__(self) -> None:
        self.data = b""
        self.mode = "ok"
        self.rng = random.Random(0)
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"
            timeout = 2

            def log_message(self, *args: object) -> None:
                pass

            def do_HEAD(self) -> None:
                size = len(server.data)
                if server.mode == "lying_size":
                    size = server.rng.choice((0, 1, size - 1, size + 1, 2 * size, 1 << 40))
                self.send_response(200)
                self.send_header("Content-Length", str(max(size, 0)))
                self.end_headers()

            def do_GET(self) -> None:
                try:
                    self._get()
                except (BrokenPipeError, ConnectionResetError, TimeoutError):
                    pass

            def _get(self) -> None:
                data, mode, rng = server.data, server.mode, server.rng
                if mode == "status":
                    self.send_response(rng.choice((200, 204, 301, 302, 404, 416, 500, 503)))
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                match = None if mode == "norange" else _RANGE.fullmatch(self.headers.get("Range") or "")
                start = int(match[1]) if match else 0
                end = min(int(match[2]) + 1, len(data)) if match and match[2] else len(data)
                body = data[start:end]
                self.send_response(206 if match else 200)
                if mode not in ("endless", "overlong"):
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if mode == "endless":
                    for _ in range(64):  # 4 MiB at most
                        self.wfile.write(b"\0" * (1 << 16))
                elif mode == "overlong":
                    self.wfile.write(body + bytes(rng.randrange(1, 1 << 16)))
                elif mode == "short":
                    self.wfile.write(body[: rng.randrange(len(body) + 1)])
                elif mode == "drip":
                    stop = time.monotonic() + 0.5
                    for i in range(len(body)):
                        if time.monotonic() > stop:
                            break
                        self.wfile.write(body[i : i + 1])
                        self.wfile.flush()
                        time.sleep(0.005)
                else:
                    self.wfile.write(body)

        self._server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        host, port = self._server.server_address[:2]
        self.url = f"http://{host}:{port}/input.bpk"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


_RANGE = re.compile(r"bytes=(\d+)-(\d*)")
_SERVER: HostileServer | None = None


def _hostile_server() -> HostileServer:
    """The process's hostile server, started (and its client warmed up) outside any input's limits."""
    global _SERVER
    if _SERVER is None:
        _SERVER = HostileServer()
        _SERVER.data = burnpack.save_bytes({"w": np.zeros(2, np.float32)})
        burnpack.load(_SERVER.url).numpy()  # fsspec's loop thread and session exist before the first input
    return _SERVER


def _read_http(data: bytes, path: Path, rng: random.Random) -> None:
    from burnpack.remote import FsspecSource

    server = _hostile_server()
    server.data, server.mode, server.rng = data, rng.choice(HostileServer.MODES), rng
    with burnpack.load(FsspecSource(server.url, deadline=0.25, idle_timeout=0.25)) as pack:
        pack.numpy()
        for view in pack.tensors():
            view.numpy()


_READ: dict[str, Callable[[bytes, Path, random.Random], None]] = {
    "bpk": _read_bpk,
    "pytorch": _read_pytorch,
    "safetensors": _read_safetensors,
    "npz": _read_npz,
    "sidefile": _read_sidefile,
    "http": _read_http,
    "shards": _read_shards,
    "dcp": _read_dcp_folder,
}


def _warm_up(corpus: dict[str, list[bytes]], scratch: Path) -> None:
    """Read every folder seed once outside any input's limits (lazy imports, first mappings)."""
    _hostile_server()
    for reader in FOLDER_READERS:
        for seed in corpus[reader]:
            for mode in range(6):
                with contextlib.suppress(Exception):
                    _READ[reader](seed, scratch / "warm", random.Random(mode))


# -- the oracle -----------------------------------------------------------------------------------
class _Interrupted(BaseException):
    """Raised by the CPU-time alarm: the input ran far past its time bound."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Interrupted


def _address_space() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * resource.getpagesize()


def _in_burnpack_tree(exc: BaseException) -> bool:
    return type(exc).__module__.split(".")[0] == "burnpack"


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def time_bound(size: int) -> float:
    return TIME_BASE + TIME_PER_MB * size / MB


def memory_bound(size: int) -> int:
    return MEMORY_BASE + MEMORY_FACTOR * size


def judge(reader: str, data: bytes, path: Path, rng: random.Random, read: Callable[..., None] | None = None) -> tuple[str, str] | None:
    """Run one reader on one input under the contract; ``(kind, detail)`` of a violation, or None."""
    read = read or _READ[reader]
    bound = time_bound(len(data))
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (_address_space() + memory_bound(len(data)), hard))
    signal.setitimer(signal.ITIMER_PROF, bound * TIME_KILL_FACTOR)
    start = time.process_time()
    verdict: tuple[str, str] | None = None
    try:
        try:
            read(data, path, rng)
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
            resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
    except _Interrupted:
        verdict = ("over_time", f"interrupted after {bound * TIME_KILL_FACTOR:.1f} s of CPU")
    except BaseException as exc:  # noqa: BLE001 - judging every exception is the point
        chain = _chain(exc)
        if any(isinstance(link, MemoryError) for link in chain):
            verdict = ("over_memory", f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}"[:500])
        elif not _in_burnpack_tree(exc):
            verdict = ("foreign", f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}"[:500])
    elapsed = time.process_time() - start
    if verdict is None and elapsed > bound:
        verdict = ("over_time", f"{elapsed:.2f} s of CPU, bound {bound:.2f} s")
    return verdict


# -- campaign -------------------------------------------------------------------------------------
def _scratch_dir() -> str:
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()


def _worker(args: tuple[int, int, int, float, int | None, str, str]) -> dict[str, Any]:
    worker, workers, seed, deadline, limit, failures_dir, progress = args
    warnings.simplefilter("ignore")
    signal.signal(signal.SIGPROF, _on_alarm)
    corpus = seed_corpus()
    counts = dict.fromkeys(READERS, 0)
    kinds = {"foreign": 0, "over_time": 0, "over_memory": 0}
    failures: list[dict[str, Any]] = []
    cpu = time.process_time()
    with tempfile.TemporaryDirectory(dir=_scratch_dir(), prefix="bpk-fuzz-") as tmp:
        _warm_up(corpus, Path(tmp))
        step = 0
        while True:
            # Blocks of one input per reader, dealt round-robin: every worker gets every reader.
            index = (step // len(READERS)) * len(READERS) * workers + worker * len(READERS) + step % len(READERS)
            step += 1
            if time.time() >= deadline or (limit is not None and index >= limit):
                break
            reader, data = generate(corpus, seed, index)
            suffix = SUFFIXES[reader]
            verdict = judge(reader, data, Path(tmp) / f"input{suffix}", random.Random(f"read:{seed}:{index}"))
            counts[reader] += 1
            if verdict is not None:
                kinds[verdict[0]] += 1
                digest = hashlib.sha256(data).hexdigest()
                if len(failures) < 200:
                    failures.append({"index": index, "reader": reader, "kind": verdict[0], "detail": verdict[1], "sha256": digest, "size": len(data)})
                if failures_dir:
                    Path(failures_dir, f"{index}-{reader}{suffix}").write_bytes(data)
            if progress and sum(counts.values()) % 20_000 == 0:
                with open(progress, "a") as log:
                    log.write(f"{time.strftime('%H:%M:%S')} worker {worker}: {sum(counts.values())} inputs, {sum(kinds.values())} failures\n")
    return {"counts": counts, "kinds": kinds, "failures": failures, "cpu_seconds": time.process_time() - cpu}


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run_campaign(
    *, seconds: float, workers: int, seed: int, limit: int | None = None, failures_dir: str = "", progress: str = ""
) -> dict[str, Any]:
    corpus = seed_corpus()
    commit, dirty = _git("rev-parse", "HEAD"), bool(_git("status", "--porcelain", "--untracked-files=no", "--", "burnpack"))
    started = time.time()
    deadline = started + seconds
    jobs = [(w, workers, seed, deadline, limit, failures_dir, progress) for w in range(workers)]
    if workers == 1:
        parts = [_worker(jobs[0])]
    else:
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            parts = pool.map(_worker, jobs)
    counts = {reader: sum(p["counts"][reader] for p in parts) for reader in READERS}
    kinds = {kind: sum(p["kinds"][kind] for p in parts) for kind in ("foreign", "over_time", "over_memory")}
    return {
        "tool": "benchmarks/fuzz_campaign.py",
        "burnpack_version": getattr(burnpack, "__version__", "unknown"),
        "commit": commit,
        "tree_dirty": dirty,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "seed": seed,
        "workers": workers,
        "seconds_requested": seconds,
        "wall_seconds": round(time.time() - started, 1),
        "cpu_seconds": round(sum(p["cpu_seconds"] for p in parts), 1),
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "corpus": {"digest": corpus_digest(corpus), "seeds": {r: len(corpus[r]) for r in READERS}},
        "contract": {
            "time_seconds": f"{TIME_BASE} + {TIME_PER_MB} per MB of input (process CPU time)",
            "memory_bytes": f"{MEMORY_BASE} + {MEMORY_FACTOR} x input bytes of address space above the pre-input size",
            "exceptions": "only classes defined in burnpack modules",
        },
        "inputs": sum(counts.values()),
        "inputs_per_reader": counts,
        "failures_by_kind": kinds,
        "failures": sum(kinds.values()),
        "failure_samples": sorted((f for p in parts for f in p["failures"]), key=lambda f: f["index"])[:200],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="wall-clock budget of the campaign")
    parser.add_argument("--workers", type=int, default=2, help="parallel worker processes")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--limit", type=int, help="stop after this many inputs in total")
    parser.add_argument("--json", type=Path, help="write the result here")
    parser.add_argument("--failures-dir", default="", help="save every failing input here")
    parser.add_argument("--progress", default="", help="append a line per worker every 20,000 inputs to this file")
    parser.add_argument("--replay", type=int, help="rerun one input index in this process and print its verdict")
    args = parser.parse_args(argv)
    if args.replay is not None:
        signal.signal(signal.SIGPROF, _on_alarm)
        corpus = seed_corpus()
        reader, data = generate(corpus, args.seed, args.replay)
        with tempfile.TemporaryDirectory() as tmp:
            _warm_up(corpus, Path(tmp))
            verdict = judge(reader, data, Path(tmp) / "input", random.Random(f"read:{args.seed}:{args.replay}"))
        print(json.dumps({"index": args.replay, "reader": reader, "size": len(data), "verdict": verdict}))
        return 0 if verdict is None else 1
    result = run_campaign(
        seconds=args.seconds, workers=args.workers, seed=args.seed, limit=args.limit, failures_dir=args.failures_dir, progress=args.progress
    )
    text = json.dumps(result, indent=1)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n")
    summary = {k: result[k] for k in ("inputs", "inputs_per_reader", "failures_by_kind", "wall_seconds")}
    print(json.dumps(summary))
    return 0 if result["failures"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
