"""Hugging Face sharded checkpoints: a folder (or its ``*.index.json``) in, HF-style shards out.

Reading checks the index against the shards (every listed tensor is in its shard, no shard holds
an unlisted one) and streams: each tensor is a lazy view of its memory-mapped shard, and the
pages of a tensor are released from this process once the next one (of any shard) is taken, so
converting to one ``.bpk`` holds about one tensor at a time, not the model; tensors written
unchanged into a ``.bpk`` file are copied from the shards in the kernel (their ``file_range``).
A snapshot folder with a single ``model.safetensors`` / ``pytorch_model.bin`` is read as that
file.

Writing (``max_shard_size``) splits as ``huggingface_hub.split_torch_state_dict_into_shards``
does: greedy filling in data order, a tensor larger than the limit in a shard of its own,
``model-00001-of-0000N.safetensors`` names, and ``model.safetensors.index.json`` with
``{"metadata": {"total_size": ...}, "weight_map": {...}}``; one shard is plain ``model.safetensors``.
Which files the shards are (read and written by that file format, named by its ``shard_name``:
``model{suffix}.safetensors``, ``pytorch_model{suffix}.bin``) is the shard folder format's
``family`` in the format table (:mod:`burnpack.interop.registry`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from ..core.sidefile import parse_json, read_side_file
from ..core.source import Folder
from ._io import PageReleaser, atomic_output
from ..core.atomic import atomic_folder
from ..errors import ConversionError, DestinationExists, OptionError, OutputExistsError, SafetensorsError, excerpt, excerpts
from .format import Format, ReadOptions, WriteOptions
from .tensors import Entry, TensorSet

__all__ = ["find_sharded", "holds_shards", "parse_size", "read_sharded", "split_into_shards", "write_sharded"]

_SIZE_UNITS = {"TB": 10**12, "GB": 10**9, "MB": 10**6, "KB": 10**3}  # huggingface_hub's (decimal)


def _pattern(family: Format) -> str:
    if family.shard_name is None:
        raise ConversionError(f"{family.name} has no shards (sharded formats: a file format with a shard name)")
    return family.shard_name


def _single(family: Format) -> str:
    """The name of one file holding every tensor (``model.safetensors``)."""
    return _pattern(family).format(suffix="")


def _index_end(family: Format) -> str:
    """How the index of this family's shards ends (``.safetensors.index.json``)."""
    return Path(_pattern(family)).suffix + ".index.json"


def holds_shards(path: Path, names: frozenset[str] | None, family: Format, families: Sequence[Format], *, generic: bool = False) -> bool:
    """Whether a model folder holds the index or single weights file of ``family`` (one of the
    shard ``families``), or an ``*.index.json`` path is its index; ``names``: the folder's file
    names when known. ``generic``: an index named after no family counts as this one's."""
    folder = names is not None
    if names is None:
        if not path.is_file():
            return False
        names = frozenset({path.name})

    def holds(f: Format) -> bool:
        return (folder and _single(f) in names) or any(n.endswith(_index_end(f)) for n in names)

    if holds(family):
        return True
    known = tuple(_index_end(f) for f in families)
    return generic and not any(holds(f) for f in families) and any(n.endswith(".index.json") and not n.endswith(known) for n in names)


def find_sharded(path: str | os.PathLike[str], family: Format, families: Sequence[Format]) -> Path | None:
    """The index (or single weights file) of ``family``'s shards a model folder or ``*.index.json``
    path stands for (an index of another of the ``families`` does not count); None when ``path``
    is neither."""
    p = Path(path)
    if p.is_file() and p.name.endswith(".index.json"):
        return p
    if not p.is_dir():
        return None
    single = _single(family)
    for name in (single + ".index.json", single):
        if (p / name).is_file():
            return p / name
    other = tuple(_index_end(f) for f in families if f != family)
    indexes = [i for i in sorted(p.glob("*.index.json")) if not i.name.endswith(other)]
    if len(indexes) == 1:
        return indexes[0]
    raise ConversionError(
        f"{p}: no {single}.index.json or single {single} here"
        + (f" (several indexes: {[i.name for i in indexes]}; pass one)" if indexes else "")
    )


def read_sharded(path: str | os.PathLike[str], family: Format, families: Sequence[Format], options: ReadOptions) -> TensorSet:
    """The tensors of a sharded checkpoint of ``family`` (read by its reader), shard by shard in
    file order, checked against its index.

    The index is read as a side file: a regular file of at most ``limits.max_index_bytes`` (64 MiB
    by default; an index lists names, far less for any real model), parsed with the JSON checks;
    each shard within the caps of ``options.limits``. The folder is closed
    (:class:`~burnpack.core.source.Folder`): every shard, and the index or single file found in a
    folder, must lie inside it (in a Hugging Face cache, inside the snapshot's repository).
    """
    found = find_sharded(path, family, families)
    if found is None:
        raise ConversionError(f"{path}: not a model folder or an *.index.json file")
    folder = Folder(found.parent)
    found_in = None if found == Path(path) else folder  # an index named by the caller is theirs to name
    if not found.name.endswith(".index.json"):
        return family.read(found, replace(options, folder=found_in))
    weight_map = _weight_map(found, options.limits.max_index_bytes, found_in)
    shards: dict[str, list[str]] = {}
    for name, shard in weight_map.items():
        shards.setdefault(shard, []).append(name)
    entries: list[Entry] = []
    closers: list[Callable[[], None]] = []
    metadata: dict[str, str] = {}
    skipped: dict[str, str] = {}  # what shards hold besides tensors
    shard_options = replace(options, pages=PageReleaser(), folder=folder)
    try:
        for shard, listed in shards.items():
            shard_path = found.parent / shard
            if not shard_path.is_file():
                raise ConversionError(f"{found}: shard {excerpt(shard)} is listed but does not exist")
            try:
                tset = family.read(shard_path, shard_options)
            except SafetensorsError as exc:  # its message names no file
                raise ConversionError(f"{found.parent}: shard {excerpt(shard)}: {exc}") from None
            metadata = metadata or tset.metadata
            shard_entries = tset.entries
            skipped.update(tset.skipped)
            closers.append(tset.close)
            held = {e.name for e in shard_entries}
            absent = [name for name in listed if name not in held]
            if absent:
                raise ConversionError(f"{found}: shard {excerpt(shard)} does not hold {len(absent)} tensor(s) the index lists there: {excerpts(absent)}")
            unlisted = sorted(held - set(listed))
            if unlisted:
                raise ConversionError(f"{found}: shard {excerpt(shard)} holds {len(unlisted)} tensor(s) the index does not list there: {excerpts(unlisted)}")
            entries.extend(shard_entries)
    except BaseException:
        for close in closers:
            close()
        raise
    return TensorSet(entries, metadata, format=family.name, top_level_key=options.top_level_key, closers=closers, skipped=skipped)


def _weight_map(index: Path, max_bytes: int, folder: Folder | None) -> dict[str, str]:
    parsed = parse_json(read_side_file(index, max_bytes=max_bytes, lift="max_index_bytes", folder=folder), ConversionError, str(index))
    weight_map = parsed.get("weight_map") if isinstance(parsed, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()):
        raise ConversionError(f"{index}: needs a \"weight_map\" object of tensor name -> shard file name")
    for shard in set(weight_map.values()):
        if not shard or Path(shard).is_absolute() or Path(shard).name != shard or shard in (".", ".."):
            raise ConversionError(f"{index}: shard {excerpt(shard)} is not a file name in the checkpoint folder")
    return weight_map


# -- writing ------------------------------------------------------------------------------------
def parse_size(size: str | int) -> int:
    """``"5GB"`` → 5_000_000_000 (huggingface_hub's units: TB, GB, MB, KB, decimal), a plain byte
    count (``"1000000"``, an int), as huggingface_hub takes them."""
    if isinstance(size, int) and not isinstance(size, bool):
        value = size
    else:
        match = re.fullmatch(r"\s*(?:([0-9]+)|([0-9]*\.?[0-9]+)\s*([KMGT]B))\s*", str(size), re.I)
        if match is None:
            raise OptionError(f"max shard size {size!r} is not a byte count or a number with a unit of KB, MB, GB or TB (e.g. 5GB)")
        value = int(match[1]) if match[1] is not None else int(float(match[2]) * _SIZE_UNITS[match[3].upper()])
    if value <= 0:
        raise OptionError(f"max shard size {size!r} must be positive")
    return value


def split_into_shards(sizes: list[tuple[str, int]], max_shard_size: int) -> list[list[str]]:
    """Names grouped into shards, as ``huggingface_hub`` splits a state dict."""
    shards: list[list[str]] = []
    current: list[str] = []
    current_size = 0
    for name, size in sizes:
        if size > max_shard_size:
            shards.append([name])
            continue
        if current_size + size > max_shard_size:
            shards.append(current)
            current, current_size = [], 0
        current.append(name)
        current_size += size
    if current:
        shards.append(current)
    return shards


def write_sharded(tset: TensorSet, folder: Path, max_shard_size: int, family: Format, options: WriteOptions = WriteOptions()) -> list[Path]:
    """HF-style shards of ``family`` (written by its writer, named by its ``shard_name``) plus their
    index in ``folder`` (created if missing, other files in it kept); returns the files written.
    They are built beside the folder's other files and put in place together
    (:func:`~burnpack.core.atomic.atomic_folder`): an interrupted write leaves nothing. Shards of
    an earlier save in ``folder`` (the same file names' pattern) are replaced, and those the new
    save does not have removed, only with ``overwrite``."""
    pattern = _pattern(family)
    if family.write is None:
        raise ConversionError(f"{family.name} is read, not written")
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ConversionError(f"{folder}: sharded output goes to a folder, and this is a file")
    sizes = [(e.name, _written_size(e)) for e in tset.entries]
    groups = split_into_shards(sizes, max_shard_size)
    if len(groups) <= 1:
        names = [pattern.format(suffix="")]
    else:
        names = [pattern.format(suffix=f"-{i + 1:05d}-of-{len(groups):05d}") for i in range(len(groups))]
    index_name = pattern.format(suffix="") + ".index.json"
    is_shard = _shard_file_pattern(pattern).fullmatch
    if not options.overwrite and folder.is_dir():
        earlier = sorted(n for n in os.listdir(folder) if is_shard(n))
        if earlier:
            raise OutputExistsError(folder / earlier[0], "exists (shards of an earlier save); pass overwrite=True to replace them")
    by_name = {e.name: e for e in tset.entries}
    shard_metadata = {**tset.metadata, "format": "pt"}
    shard_options = WriteOptions(progress=options.progress)
    try:
        with atomic_folder(folder, replace=options.overwrite, merge=True, obsolete=lambda n: is_shard(n) is not None) as scratch:
            for group, name in zip(groups or [[]], names):  # a tie may span shards: each name its copy, as reported
                shard = TensorSet([by_name[n].replace(tie=None) for n in group], dict(shard_metadata), format=tset.format)
                family.write(shard, scratch / name, shard_options)
            if len(groups) > 1:
                index = {
                    "metadata": {"total_size": sum(size for _, size in sizes)},
                    "weight_map": {n: names[i] for i, group in enumerate(groups) for n in group},
                }
                with atomic_output(scratch / index_name) as stream:
                    stream.write(json.dumps(index, indent=2).encode())
    except DestinationExists as exc:
        raise OutputExistsError(folder, f"gained shard files while converting ({exc}); nothing was replaced") from None
    return [folder / n for n in names] + ([folder / index_name] if len(groups) > 1 else [])


def _shard_file_pattern(pattern: str) -> re.Pattern[str]:
    """The names a save with the file name ``pattern`` writes: the single file, numbered shards, the index."""
    head, _, tail = pattern.partition("{suffix}")
    return re.compile(re.escape(head) + r"(?:-[0-9]+-of-[0-9]+)?" + re.escape(tail) + r"(?:\.index\.json)?")


def _written_size(entry: Entry) -> int:
    """The bytes a tensor takes in a shard: every Bool store is written as 1-byte bools."""
    return entry.numel if entry.dtype.is_bool else entry.byte_len
