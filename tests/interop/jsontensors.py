"""A toy format in one module: tensors as JSON text, with everything a format carries — a sniff,
a reader and a writer, an independent reader for ``diff`` (``json.loads`` into plain lists), a
shard name and notes on what it stores otherwise. ``FORMAT`` is the one entry a test registers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from burnpack.interop.format import Format, Probe, ReadOptions, WriteOptions
from burnpack.interop.tensors import Entry, TensorSet

MAGIC = b'{"jsontensors"'


def sniff(probe: Probe) -> bool:
    return probe.head.startswith(MAGIC)


def read(path: Path, options: ReadOptions) -> TensorSet:
    doc = json.loads(path.read_text())
    entries = [Entry.from_numpy(name, np.array(t["data"], t["dtype"]).reshape(t["shape"])) for name, t in doc["tensors"].items()]
    return TensorSet(entries, doc.get("metadata", {}), format="jsontensors")


def write(tset: TensorSet, path: Path, options: WriteOptions) -> Path:
    tensors = {}
    for entry in tset.entries:
        array = entry.numpy()
        tensors[entry.name] = {"dtype": str(array.dtype), "shape": list(array.shape), "data": array.reshape(-1).tolist()}
    path.write_text(json.dumps({"jsontensors": 1, "metadata": tset.metadata, "tensors": tensors}))
    options.progress(path.stat().st_size)
    return path


def read_with_json(path: Path, options: ReadOptions) -> tuple[TensorSet, str]:
    """The independent reading: the JSON document as plain lists, shaped by hand."""
    doc = json.loads(path.read_bytes().decode())
    entries = []
    for name, t in doc["tensors"].items():
        flat = np.asarray(t["data"], dtype=np.dtype(t["dtype"]))
        entries.append(Entry.from_numpy(name, flat.reshape(tuple(t["shape"]))))
    return TensorSet(entries, dict(doc["metadata"]), format="jsontensors"), "json.loads"


def notes(tset: TensorSet, options: WriteOptions) -> list[str]:
    return [f"{e.name}: written as decimal text" for e in tset.entries if e.dtype.variant in ("F32", "F64")]


FORMAT = Format(
    "jsontensors", read, write, ("jt",), (".jt",), sniff, "tensors as JSON text (a test format)", remote="fetched",
    holds=frozenset({"metadata"}), shard_name="tensors{suffix}.jt", crosscheck=read_with_json, notes=notes,
)  # fmt: skip
