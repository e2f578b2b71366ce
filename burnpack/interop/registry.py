"""The one table of formats: what each is called, how it is recognized, read and written.

Every command and function that reads or writes a format (``convert``, ``diff``, ``inspect``'s
advice, ``--from``/``--to``, shard folders, URLs, the documented format list) asks this table. A
format is a :class:`~burnpack.interop.format.Format`, an object that carries its behaviour: its
name and aliases, its file extensions, a ``sniff`` that recognizes it from a ``Probe`` (a file's
first bytes, a folder's file names), a ``read`` and a ``write``, its independent reader for
``diff``, its shard name, and its capabilities (what it holds, a folder, sharded, needs torch,
runs pickled code, readable from a URL). Nothing outside the table branches on a format's name.
Adding a format is one module (its reader and writer) plus one entry: :func:`register` at run
time, or a line in ``BUILTIN``.

How a source's format is chosen (:func:`choose`):

1. An explicit format (``from_format``, ``--from``) always wins. Given a folder, a file format
   means the folder of its shards (``--from safetensors`` on a Hugging Face model folder).
2. Otherwise every format's ``sniff`` is asked. A format marked ``alone`` (DCP: a folder is not a
   DCP checkpoint because it holds a ``.metadata`` file) is chosen only when no other format
   matches. Of the rest, the lowest ``rank`` wins (a folder with both safetensors and ``.bin``
   shards is read as safetensors, as ``transformers`` prefers); candidates of the same rank are
   ambiguous and refused, naming them.
3. A file nothing recognizes is taken by its extension; else it is refused.

A URL is read the same way: ``.bpk`` by range requests, other file formats fetched into a scratch
file first (then sniffed and read as a local file); folder formats are not read from URLs.
"""

from __future__ import annotations

import contextlib
import os
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from ..codec._generated.layout import MAGIC_BYTES
from ..codec._generated.metadata import BoolStore
from ..core.paths import has_extension, resolve_read_path
from ..core.remote import is_url
from ..errors import AmbiguousFormatError, ConversionError
from .format import HOLDABLE, Format, Probe, Progress, Reader, ReadOptions, Writer, WriteOptions, _noop
from .limits import DCP_LIMITS, PICKLE_LIMITS, ZIP_LIMITS, ReadCaps, ReadLimits, refuse_unused

if TYPE_CHECKING:
    from ..core.remote import FsspecSource
    from .tensors import TensorSet

__all__ = [
    "choices",
    "Format",
    "Probe",
    "ReadOptions",
    "WriteOptions",
    "choose",
    "detect",
    "detect_format",
    "format_table",
    "formats",
    "from_extension",
    "get_format",
    "native_format",
    "read_tensors",
    "register",
    "resolve_output",
    "unregister",
    "write_tensors",
]



# --------------------------------------------------------------------------------------------
# The built-in formats: sniffs, readers and writers (imported when used)
# --------------------------------------------------------------------------------------------
def _sniff_burnpack(probe: Probe) -> bool:
    return probe.head[: len(MAGIC_BYTES)] == MAGIC_BYTES


def _sniff_safetensors(probe: Probe) -> bool:
    head = probe.head
    if len(head) < 9:
        return False
    (n,) = struct.unpack_from("<Q", head)
    return 0 < n <= probe.size - 8 and head[8:9] == b"{"


def _sniff_pytorch(probe: Probe) -> bool:
    head = probe.head
    if any(n == "data.pkl" or n.endswith("/data.pkl") for n in probe.zip_names()):
        return True
    return (len(head) >= 262 and head[257:262] == b"ustar") or head[:1] == b"\x80"  # a tar; a legacy pickle stream


def _sniff_npz(probe: Probe) -> bool:
    names = probe.zip_names()
    return bool(names) and all(n.endswith(".npy") for n in names)


def _shard_families() -> list[Format]:
    """The file formats whose shards a folder may hold (those with a shard name)."""
    return [f for f in _TABLE.values() if f.shard_name is not None]


def _shard_sniff(family: str, generic: bool) -> Callable[[Probe], bool]:
    """A model folder holding this family's index or single weights file (or such an index file)."""

    def sniff(probe: Probe) -> bool:
        if not probe.is_dir and not probe.path.name.endswith(".index.json"):
            return False  # a file that is no index: no need to import the shard reader to say so
        from .sharded import holds_shards

        names = probe.names if probe.is_dir else None
        return holds_shards(probe.path, names, get_format(family), _shard_families(), generic=generic)

    return sniff


def _sniff_dcp(probe: Probe) -> bool:
    if not probe.is_dir:
        return False  # a file: the DCP reader is not imported to say so
    from .dcp import is_dcp

    return is_dcp(probe.path)


def _read_burnpack(path: Path | memoryview, o: ReadOptions) -> TensorSet:
    from .formats import read_burnpack

    return read_burnpack(path, legacy_ok=o.legacy_ok)


def _read_safetensors(path: Path, o: ReadOptions) -> TensorSet:
    from .formats import read_safetensors_file

    return read_safetensors_file(path, bool_store=o.bool_store, pages=o.pages, folder=o.folder)


def _read_safetensors_buffer(buffer: memoryview, o: ReadOptions) -> TensorSet:
    from .formats import read_safetensors_buffer

    return read_safetensors_buffer(buffer, bool_store=o.bool_store)


def _read_pytorch(path: Path, o: ReadOptions) -> TensorSet:
    from .formats import read_pytorch_file

    return read_pytorch_file(path, top_level_key=o.top_level_key, bool_store=o.bool_store, limits=o.limits, folder=o.folder)


def _read_npz(path: Path, o: ReadOptions) -> TensorSet:
    from .formats import read_npz

    return read_npz(path, bool_store=o.bool_store, limits=o.limits)


def _shard_reader(family: str) -> Reader:
    def read(path: Path, o: ReadOptions) -> TensorSet:
        from .sharded import read_sharded

        return read_sharded(path, get_format(family), _shard_families(), o)

    return read


def _read_dcp(path: Path, o: ReadOptions) -> TensorSet:
    from .dcp import read_dcp

    return read_dcp(path, bool_store=o.bool_store, top_level_key=o.top_level_key, limits=o.limits)


def _write_burnpack(tset: TensorSet, path: Path, o: WriteOptions) -> Path:
    from .formats import write_burnpack

    return write_burnpack(tset, path, overwrite=o.overwrite, progress=o.progress)


def _write_safetensors(tset: TensorSet, path: Path, o: WriteOptions) -> Path:
    from .formats import write_safetensors_file

    return write_safetensors_file(tset, path, overwrite=o.overwrite, progress=o.progress)


def _write_pytorch(tset: TensorSet, path: Path, o: WriteOptions) -> Path:
    from .torch_live import write_pytorch

    return write_pytorch(tset, path, overwrite=o.overwrite, progress=o.progress)


def _write_npz(tset: TensorSet, path: Path, o: WriteOptions) -> Path:
    from .formats import write_npz

    return write_npz(tset, path, overwrite=o.overwrite, compress=o.compress, progress=o.progress, metadata=o.npz_metadata)


def _notes_npz(tset: TensorSet, o: WriteOptions) -> list[str]:
    from .formats import npz_notes

    return npz_notes(tset, o.npz_metadata)


def _shard_writer(family: str) -> Writer:
    def write(tset: TensorSet, path: Path, o: WriteOptions) -> Path:
        from .sharded import write_sharded

        assert o.max_shard_size is not None  # resolve_output asks for it
        write_sharded(tset, path, o.max_shard_size, get_format(family), o)
        return path

    return write


def _write_dcp(tset: TensorSet, path: Path, o: WriteOptions) -> Path:
    from .dcp import write_dcp

    return write_dcp(tset, path, overwrite=o.overwrite, progress=o.progress)


def _independently(reader: str) -> Callable[[Path, ReadOptions], tuple[TensorSet, str] | None]:
    """``crosscheck``'s reader of that name: the format's own library (imported when used)."""

    def read(path: Path, o: ReadOptions) -> tuple[TensorSet, str] | None:
        from . import crosscheck

        return getattr(crosscheck, reader)(path, o.bool_store)  # type: ignore[no-any-return]

    return read


BUILTIN = (
    Format("burnpack", _read_burnpack, _write_burnpack, ("bpk", "burn"), (".bpk",), _sniff_burnpack,
           "Burn's container: zero-copy, ids, metadata and scalars kept", remote="ranges", holds=HOLDABLE,
           quantized=True, stamped=True, native=True, read_buffer=_read_burnpack),
    Format("safetensors", _read_safetensors, _write_safetensors, ("st",), (".safetensors", ".sft"), _sniff_safetensors,
           "validated and memory-mapped; the safetensors library's exact layout", remote="fetched",
           holds=frozenset({"metadata"}), stamped=True, shard_name="model{suffix}.safetensors",
           read_buffer=_read_safetensors_buffer, crosscheck=_independently("with_safetensors")),
    Format("pytorch", _read_pytorch, _write_pytorch, ("pt", "pth", "torch"), (".pt", ".pth", ".bin", ".ckpt", ".tar"),
           _sniff_pytorch, "torch.save files, read without torch and without running pickled code",
           needs_torch=("write",), remote="fetched", rank=1, noun="a state dict", limits=PICKLE_LIMITS,
           shard_name="pytorch_model{suffix}.bin", crosscheck=_independently("with_torch_load"), aliases_tensors=True),  # its one-byte pickle check yields to safetensors' header
    Format("npz", _read_npz, _write_npz, ("numpy",), (".npz",), _sniff_npz, "numpy.load without pickle",
           remote="fetched", write_options=frozenset({"compress", "npz_metadata"}), limits=ZIP_LIMITS,
           holds=frozenset({"metadata", "Flex32", "Bool stores"}),  # with npz_metadata (its notes say what went where)
           notes=_notes_npz, crosscheck=_independently("with_numpy_load")),
    Format("safetensors-shards", _shard_reader("safetensors"), _shard_writer("safetensors"), ("hf",),
           (".safetensors.index.json",), _shard_sniff("safetensors", generic=True),
           "a Hugging Face model folder: model.safetensors.index.json and its shards, or model.safetensors",
           directory=True, sharded=True, family="safetensors", write_options=frozenset({"max_shard_size"}),
           holds=frozenset({"metadata"}), limits=("max_index_bytes",)),
    Format("pytorch-shards", _shard_reader("pytorch"), _shard_writer("pytorch"), ("hf-bin",), (".bin.index.json",),
           _shard_sniff("pytorch", generic=False),
           "a Hugging Face model folder: pytorch_model.bin.index.json and its shards, or pytorch_model.bin",
           directory=True, sharded=True, family="pytorch", needs_torch=("write",), rank=1,
           write_options=frozenset({"max_shard_size"}), noun="a state dict", limits=("max_index_bytes", *PICKLE_LIMITS)),
    Format("dcp", _read_dcp, _write_dcp, ("distcp",), (), _sniff_dcp, "a torch.distributed.checkpoint folder: .metadata and .distcp files",
           directory=True, needs_torch=("write",), alone=True, rank=2, noun="a DCP checkpoint",
           limits=DCP_LIMITS),
)  # fmt: skip
"""The built-in formats, in the order ``formats()`` lists them."""

_TABLE: dict[str, Format] = {f.name: f for f in BUILTIN}


def register(fmt: Format) -> Format:
    """Add a format; its name and aliases must be new. Returns it."""
    if any(name != name.strip().lower() or not name for name in fmt.names):
        raise ValueError(f"format names are lower case: {list(fmt.names)}")
    taken = {name for f in _TABLE.values() for name in f.names}
    clash = [name for name in fmt.names if name in taken]
    if clash:
        raise ValueError(f"format name(s) {clash} are taken")
    _TABLE[fmt.name] = fmt
    return fmt


def unregister(name: str) -> None:
    """Remove a format added with :func:`register` (built-in formats stay)."""
    if any(f.name == name for f in BUILTIN):
        raise ValueError(f"{name!r} is a built-in format")
    _TABLE.pop(name, None)


def formats() -> list[Format]:
    """Every format, in the table's order."""
    return list(_TABLE.values())


def choices() -> list[str]:
    """Every name and alias a format can be given by (``--from``/``--to``)."""
    return [name for f in _TABLE.values() for name in f.names]


def get_format(name: str | Format) -> Format:
    """The format of a name or alias (case-insensitive)."""
    if isinstance(name, Format):
        return name
    wanted = name.strip().lower()
    for f in _TABLE.values():
        if wanted in f.names:
            return f
    raise ConversionError(f"unknown format {name!r}; expected one of {', '.join(_TABLE)}")


def from_extension(path: str | os.PathLike[str], *, files_only: bool = False) -> Format | None:
    """The format whose extension ends the name (the longest that does; ``files_only``: of the
    formats that are files, not folders)."""
    name = Path(path).name.lower()
    best: tuple[int, Format] | None = None
    for f in _TABLE.values():
        if files_only and f.directory:
            continue
        for ext in f.extensions:
            if name.endswith(ext) and len(name) > len(ext) and (best is None or len(ext) > best[0]):
                best = (len(ext), f)
    return None if best is None else best[1]


# --------------------------------------------------------------------------------------------
# Detection
# --------------------------------------------------------------------------------------------
def _pick(candidates: list[Format], where: str) -> Format | None:
    if len(candidates) > 1:
        candidates = [f for f in candidates if not f.alone] or candidates
    if not candidates:
        return None
    best = min(f.rank for f in candidates)
    tied = [f for f in candidates if f.rank == best]
    if len(tied) > 1:
        raise AmbiguousFormatError(where, [f.name for f in tied])
    return tied[0]


def detect(source: str | os.PathLike[str], *, probe: Probe | None = None) -> Format:
    """The format of an existing file or folder by its content (see the module docstring)."""
    if is_url(source) and probe is None:
        return _detect_url(source)
    probe = probe or Probe(Path(source))
    found = _pick([f for f in _TABLE.values() if f.sniff is not None and f.sniff(probe)], str(source))
    if found is not None:
        return found
    if not probe.is_dir:
        guess = from_extension(probe.path)
        if guess is not None:
            return guess
    if probe.is_dir:
        looked = "; ".join(f"{f.name}: {f.description}" for f in _TABLE.values() if f.directory)
        raise ConversionError(f"{source}: cannot tell the format of this folder (looked for {looked}); pass the format")
    raise ConversionError(f"{source}: cannot tell the format from its content; pass the format (one of {', '.join(_TABLE)})")


def detect_format(source: str | os.PathLike[str]) -> str:
    """The format a file or folder is, from its content (then its name).

    Args:
        source: A path.

    Returns:
        The format's name.

    Raises:
        ConversionError: No format, or more than one, fits.
    """
    return detect(source).name


def choose(source: str | os.PathLike[str], explicit: str | Format | None = None) -> Format:
    """The format a source is read as: ``explicit`` when given (a file format given a folder
    means the folder of its shards), else :func:`detect`'s."""
    if explicit is None:
        return detect(source)
    fmt = get_format(explicit)
    if not fmt.directory and not is_url(source) and os.path.isdir(source):
        shards = _shards_of(fmt.name)
        if shards is None:
            raise ConversionError(f"{source}: a folder; {fmt.name} is read from a file")
        return shards
    return fmt


def native_format() -> Format:
    """Burn's own container (the format ``load`` opens): the format of an output path without an
    extension, and of Burn's records."""
    return next(f for f in _TABLE.values() if f.native)


def _shards_of(family: str) -> Format | None:
    """The folder format of shards of the file format ``family``."""
    return next((f for f in _TABLE.values() if f.sharded and f.family == family), None)


def _url_name(url: str) -> str:
    return url.split("?", 1)[0].split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]


def _detect_url(url: str) -> Format:
    """A URL's format from its first bytes (no zip listing: then its extension decides)."""
    fmt, source = probe_url(url)
    source.close()
    return fmt


def probe_url(url: str) -> tuple[Format, FsspecSource]:
    """A URL's format and its source, left open: the first block the probe fetched stays cached
    in it, so a ``.bpk`` opened from it (``load(source)``) costs no second request."""
    from ..core.remote import FsspecSource

    source = FsspecSource(url)
    try:
        head = source.read(0, min(Probe.HEAD, source.size))
        return detect(url, probe=Probe(Path(_url_name(url) or "remote"), head, source.size)), source
    except BaseException:
        source.close()
        raise


# --------------------------------------------------------------------------------------------
# Reading and writing
# --------------------------------------------------------------------------------------------
def read_tensors(
    source: Any,
    format: str | Format | None = None,
    *,
    top_level_key: str | None = None,
    bool_store: str | BoolStore = BoolStore.U8,
    legacy_ok: bool = False,
    **caps: Unpack[ReadCaps],
) -> TensorSet:
    """Read any supported source into a ``TensorSet``.

    Args:
        source: A path or URL of any format in the table, bytes (burnpack or safetensors), a
            ``{name: array}`` mapping, a torch ``state_dict`` or ``nn.Module``, or a ``TensorSet``
            (returned as is).
        format: The format; by default from the content.
        top_level_key: The entry of a PyTorch checkpoint dict to read (``"state_dict"``).
        bool_store: How Bool tensors of the source are typed when it does not say.
        legacy_ok: Read a .bpk from an older Burn as its writer meant it.
        **caps: Lift the bounds the source's reader keeps (``max_pickle_depth``,
            ``max_view_expansion``, ``max_inflate_bytes``, ``max_inflate_ratio``,
            ``max_index_bytes``, ``max_metadata_bytes``).

    Returns:
        The tensors, lazily loaded, with the source's metadata and scalars.

    Raises:
        OptionError: A cap the format's reader does not use, or an option that does not apply.
        ConversionError: The source cannot be read (its format's error).
    """
    from .tensors import TensorSet

    limits = ReadLimits.of(caps)
    if isinstance(source, TensorSet):
        refuse_unused(frozenset(caps), (), "tensors already read")
        return source
    options = ReadOptions(bool_store=bool_store, top_level_key=top_level_key, legacy_ok=legacy_ok, limits=limits,
                          lifted=frozenset(caps))  # fmt: skip
    if is_url(source):
        return _read_url(source, None if format is None else get_format(format), options)
    if isinstance(source, (str, os.PathLike)):
        asked = None if format is None else get_format(format)
        path = Path(resolve_read_path(source) if asked is None or asked.native else source)
        return _read(choose(path, asked), path, options)
    refuse_unused(frozenset(caps), (), "tensors in memory")
    if isinstance(source, (bytes, bytearray, memoryview)):
        buffer = memoryview(source)
        fmt = _detect_buffer(buffer) if format is None else get_format(format)
        if fmt.read_buffer is None:
            raise ConversionError(f"{fmt.name} is not read from bytes (formats read from bytes: {', '.join(_buffer_formats())})")
        return fmt.read_buffer(buffer, options)
    from .formats import read_in_memory

    return read_in_memory(source, top_level_key=top_level_key, bool_store=bool_store)


def _buffer_formats() -> list[str]:
    return [f.name for f in _TABLE.values() if f.read_buffer is not None]


def _detect_buffer(buffer: memoryview) -> Format:
    """The format of bytes in memory, by the sniffs of the formats read from bytes; bytes none
    of them recognizes are read as the last of those (safetensors), whose reader says why not."""
    readable = [f for f in _TABLE.values() if f.read_buffer is not None]
    probe = Probe(Path("<bytes>"), bytes(buffer[: Probe.HEAD]), len(buffer))
    return _pick([f for f in readable if f.sniff is not None and f.sniff(probe)], f"<{len(buffer)} bytes>") or readable[-1]


def _read(fmt: Format, path: Path, options: ReadOptions) -> TensorSet:
    """``fmt``'s reader, once the caps the caller lifted are known to be ones it uses."""
    refuse_unused(options.lifted, fmt.limits, f"a {fmt.label}")
    return fmt.read(path, options)


def _read_url(url: str, asked: Format | None, options: ReadOptions) -> TensorSet:
    fmt = asked or from_extension(_url_name(url), files_only=True)
    if fmt is not None and not fmt.remote:
        raise ConversionError(f"{url}: {fmt.name} is not read from a URL (a URL names one file)")
    if fmt is not None and fmt.remote == "ranges":
        return _read(fmt, url, options)  # type: ignore[arg-type]  # a reader that takes URLs
    if fmt is None:
        with contextlib.suppress(ConversionError):  # then the fetched file's content decides
            fmt = _detect_url(url)
        if fmt is not None and fmt.remote == "ranges":
            return _read(fmt, url, options)  # type: ignore[arg-type]
    with _fetched(url) as scratch:
        local = choose(scratch, asked) if asked is not None else detect(scratch)
        try:
            return _read(local, scratch, options)
        except Exception as exc:  # the message names the URL, not the scratch file
            exc.args = tuple(a.replace(str(scratch), url) if isinstance(a, str) else a for a in exc.args)
            raise


_FETCH_BLOCK = 8 << 20


@contextlib.contextmanager
def _fetched(url: str) -> Iterator[Path]:
    """The file at ``url`` in a scratch file (removed on leaving; open readers keep their view)."""
    import tempfile

    from ..core.remote import FsspecSource

    source = FsspecSource(url)
    suffix = "".join(Path(_url_name(url)).suffixes[-3:])
    fd, name = tempfile.mkstemp(prefix="burnpack-url-", suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as out:
            for offset in range(0, source.size, _FETCH_BLOCK):
                out.write(source.read(offset, min(_FETCH_BLOCK, source.size - offset)))
        source.close()
        yield Path(name)
    finally:
        source.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)


def resolve_output(
    path: str | os.PathLike[str], format: str | Format | None, *, max_shard_size: int | None = None
) -> tuple[Path, Format]:
    """The path and format an output is written as: ``format``, else the extension's, else
    burnpack with ``.bpk`` appended when the path has none (Burn's writer rule). With
    ``max_shard_size``, the folder of shards of that file format (of the first format with shards,
    safetensors, by default)."""
    path = Path(path)
    asked = None if format is None else get_format(format)
    if max_shard_size is not None:
        family = asked.family if asked is not None and asked.sharded else (asked or _shard_families()[0]).name
        shards = _shards_of(family or "")
        if shards is None:
            raise ConversionError(f"--max-shard-size writes {' or '.join(f.family or '' for f in _TABLE.values() if f.sharded)} shards, not {family}")
        return path, shards
    if asked is not None and asked.directory:
        if "max_shard_size" in asked.write_options:
            raise ConversionError(f"{path}: {asked.name} output needs a maximum shard size (max_shard_size, --max-shard-size)")
        return path, asked
    by_extension = from_extension(path, files_only=True)
    if asked is not None and by_extension is not None and asked != by_extension:
        error = ConversionError(f"{path}: the extension {path.suffix!r} says {by_extension.name} but to_format says {asked.name}")
        error.exit_code = 2  # type: ignore[attr-defined]
        raise error
    fmt = asked or by_extension
    if fmt is None:
        if has_extension(path):
            raise ConversionError(f"{path}: cannot tell the output format from {path.suffix!r}; pass the format")
        fmt = native_format()
    if fmt.native and not has_extension(path):
        path = path.with_name(path.name + fmt.extensions[0])
    if fmt.write is None:
        raise ConversionError(f"{path}: {fmt.name} is read, not written")
    return path, fmt


def write_tensors(
    tset: TensorSet,
    path: str | os.PathLike[str],
    format: str | Format | None = None,
    *,
    overwrite: bool = False,
    progress: Progress = _noop,
    compress: bool = False,
    max_shard_size: int | None = None,
    npz_metadata: bool = False,
) -> Path:
    """Write ``tset`` to ``path`` in ``format``, replacing the file atomically.

    Args:
        tset: The tensors.
        path: The output path.
        format: The format; by default from the extension.
        overwrite: Replace an existing output.
        progress: Fed the bytes written.
        compress: Compress an ``.npz`` output.
        max_shard_size: The largest shard of a shard folder, in bytes.
        npz_metadata: Give an ``.npz`` output a ``__metadata__`` member.

    Returns:
        The path written.

    Raises:
        ConversionError: The format cannot be written, or an option would not change it.
        OutputExistsError: The output exists and ``overwrite`` is False.
    """
    path, fmt = resolve_output(path, format, max_shard_size=max_shard_size)
    options = (("compress", compress), ("max_shard_size", max_shard_size), ("npz_metadata", npz_metadata))
    given = {name for name, value in options if value}
    unused = sorted(given - fmt.write_options)
    if unused:
        raise ConversionError(f"{path}: {', '.join(unused)} does not apply to {fmt.name} output")
    assert fmt.write is not None  # resolve_output refuses read-only formats
    return fmt.write(tset, path, WriteOptions(overwrite, progress, compress, max_shard_size, npz_metadata))


def format_table() -> str:
    """The list of formats in docs/conversions.md (a test keeps the two equal)."""
    rows = ["| format | also called | extensions | capabilities |", "|---|---|---|---|"]
    for f in _TABLE.values():
        ext = ", ".join(f"`{e}`" for e in f.extensions) or "-"
        rows.append(f"| `{f.name}` | {', '.join(f.aliases) or '-'} | {ext} | {', '.join(f.capabilities()) or '-'} |")
    return "\n".join(rows)
