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
``format="pytorch"`` writes ``torch.save`` shards named as the hub's ``pytorch_model{suffix}.bin``
pattern names them (``pytorch_model-00001-of-0000N.bin``, ``pytorch_model.bin.index.json``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

from .._generated.types import BoolStore
from ..core.sidefile import parse_json, read_side_file
from ..core.source import Folder
from ._io import atomic_output
from ..core.atomic import atomic_folder
from ..errors import ConversionError, DestinationExists, OptionError, OutputExistsError, SafetensorsError, excerpt, excerpts
from .limits import DEFAULT_LIMITS, ReadLimits
from .formats import PageReleaser, read_pytorch_file, read_safetensors_file, write_safetensors_file
from .tensors import Entry, TensorSet
from .torch_live import write_pytorch

__all__ = ["find_sharded", "parse_size", "read_sharded", "shard_families", "split_into_shards", "write_sharded"]

SHARD_PATTERNS = {"safetensors": "model{suffix}.safetensors", "pytorch": "pytorch_model{suffix}.bin"}
"""huggingface_hub's ``filename_pattern``s: ``{suffix}`` is ``-00001-of-00003``, or empty for one file."""
SINGLE_NAMES = tuple(pattern.format(suffix="") for pattern in SHARD_PATTERNS.values())
_SIZE_UNITS = {"TB": 10**12, "GB": 10**9, "MB": 10**6, "KB": 10**3}  # huggingface_hub's (decimal)


def shard_families(path: Path, names: frozenset[str] | None = None, *, generic: bool = False) -> list[str]:
    """The shard formats (``SHARD_PATTERNS`` keys) a model folder holds the index or single
    weights file of, or that an ``*.index.json`` path is the index of; ``names``: the folder's
    file names when known. ``generic``: an index named after neither counts as safetensors."""
    folder = names is not None
    if names is None:
        if not path.is_file():
            return []
        names = frozenset({path.name})
    found = []
    for family, pattern in SHARD_PATTERNS.items():
        index_end = Path(pattern).suffix + ".index.json"
        if (folder and pattern.format(suffix="") in names) or any(n.endswith(index_end) for n in names):
            found.append(family)
    known = tuple(Path(pattern).suffix + ".index.json" for pattern in SHARD_PATTERNS.values())
    if generic and not found and any(n.endswith(".index.json") and not n.endswith(known) for n in names):
        found.append("safetensors")
    return found


def find_sharded(path: str | os.PathLike[str], family: str | None = None) -> Path | None:
    """The index (or single weights file) a model folder or ``*.index.json`` path stands for
    (of the ``family`` shard format when given); None when ``path`` is neither."""
    p = Path(path)
    if p.is_file() and p.name.endswith(".index.json"):
        return p
    if not p.is_dir():
        return None
    patterns = [SHARD_PATTERNS[family]] if family is not None else list(SHARD_PATTERNS.values())
    singles = [pattern.format(suffix="") for pattern in patterns]
    for name in (*(single + ".index.json" for single in singles), *singles):
        if (p / name).is_file():
            return p / name
    indexes = sorted(p.glob("*.index.json"))
    if family is not None:
        other = tuple(Path(q).suffix + ".index.json" for f, q in SHARD_PATTERNS.items() if f != family)
        indexes = [i for i in indexes if not i.name.endswith(other)]
    if len(indexes) == 1:
        return indexes[0]
    raise ConversionError(
        f"{p}: no {' / '.join(s + '.index.json' for s in singles)} or single {' / '.join(singles)} here"
        + (f" (several indexes: {[i.name for i in indexes]}; pass one)" if indexes else "")
    )


def read_sharded(
    path: str | os.PathLike[str],
    *,
    bool_store: str | BoolStore = "U8",
    top_level_key: str | None = None,
    family: str | None = None,
    limits: ReadLimits = DEFAULT_LIMITS,
) -> TensorSet:
    """The tensors of a sharded checkpoint (of the ``family`` shard format when given), shard by
    shard in file order, checked against its index.

    The index is read as a side file: a regular file of at most ``limits.max_index_bytes`` (64 MiB
    by default; an index lists names, far less for any real model), parsed with the JSON checks;
    ``.bin`` shards within the pickle caps of ``limits``. The folder is closed
    (:class:`~burnpack.core.source.Folder`): every shard, and the index or single file found in a
    folder, must lie inside it (in a Hugging Face cache, inside the snapshot's repository).
    """
    found = find_sharded(path, family)
    if found is None:
        raise ConversionError(f"{path}: not a model folder or an *.index.json file")
    folder = Folder(found.parent)
    found_in = None if found == Path(path) else folder  # an index named by the caller is theirs to name
    if found.name == SINGLE_NAMES[0]:
        return read_safetensors_file(found, bool_store=bool_store, folder=found_in)
    if not found.name.endswith(".index.json"):
        return read_pytorch_file(found, top_level_key=top_level_key, bool_store=bool_store, limits=limits, folder=found_in)
    weight_map = _weight_map(found, limits.max_index_bytes, found_in)
    shards: dict[str, list[str]] = {}
    for name, shard in weight_map.items():
        shards.setdefault(shard, []).append(name)
    entries: list[Entry] = []
    closers: list[Callable[[], None]] = []
    metadata: dict[str, str] = {}
    skipped: dict[str, str] = {}  # what .bin shards hold besides tensors
    pages = PageReleaser()
    try:
        for shard, listed in shards.items():
            shard_path = found.parent / shard
            if not shard_path.is_file():
                raise ConversionError(f"{found}: shard {excerpt(shard)} is listed but does not exist")
            if shard.endswith(".safetensors"):
                try:
                    tset = read_safetensors_file(shard_path, bool_store=bool_store, pages=pages, folder=folder)
                except SafetensorsError as exc:
                    raise ConversionError(f"{found.parent}: shard {excerpt(shard)}: {exc}") from None
                metadata = metadata or tset.metadata
            else:
                tset = read_pytorch_file(shard_path, top_level_key=top_level_key, bool_store=bool_store, limits=limits, folder=folder)
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
    fmt = "safetensors" if found.name.endswith(".safetensors.index.json") else "pytorch"
    return TensorSet(entries, metadata, format=fmt, top_level_key=top_level_key, closers=closers, skipped=skipped)


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


def write_sharded(
    tset: TensorSet,
    folder: Path,
    max_shard_size: int,
    *,
    format: str = "safetensors",
    overwrite: bool = False,
    progress: Callable[[int], None] = lambda n: None,
) -> list[Path]:
    """HF-style shards plus their index in ``folder`` (created if missing, other files in it
    kept): safetensors files, or ``torch.save`` files for ``format="pytorch"``; returns the files
    written. They are built beside the folder's other files and put in place together
    (:func:`~burnpack.core.atomic.atomic_folder`): an interrupted write leaves nothing. Shards of
    an earlier save in ``folder`` (the same file names' pattern) are replaced, and those the new
    save does not have removed, only with ``overwrite``."""
    pattern = SHARD_PATTERNS.get(format)
    if pattern is None:
        raise ConversionError(f"sharded output is safetensors or pytorch, not {format}")
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
    if not overwrite and folder.is_dir():
        earlier = sorted(n for n in os.listdir(folder) if is_shard(n))
        if earlier:
            raise OutputExistsError(folder / earlier[0], "exists (shards of an earlier save); pass overwrite=True to replace them")
    by_name = {e.name: e for e in tset.entries}
    shard_metadata = {**tset.metadata, "format": "pt"}
    try:
        with atomic_folder(folder, replace=overwrite, merge=True, obsolete=lambda n: is_shard(n) is not None) as scratch:
            for group, name in zip(groups or [[]], names):  # a tie may span shards: each name its copy, as reported
                shard = TensorSet([by_name[n].replace(tie=None) for n in group], dict(shard_metadata), format=tset.format)
                if format == "pytorch":
                    write_pytorch(shard, scratch / name, progress=progress)
                else:
                    write_safetensors_file(shard, scratch / name, progress=progress)
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
