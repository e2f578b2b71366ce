"""What a format is: an object that carries its behaviour.

A :class:`Format` says how its files are recognized (``sniff``, from a :class:`Probe`), read and
written, what they can hold, which independent library reads them for ``diff``
(``crosscheck``), how its shards are named (``shard_name``) and what a conversion to it should
report. Callers ask the object and never branch on a format's name; the table of formats
(:mod:`burnpack.interop.registry`) holds the built-in ones and the ones registered at run time.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from ..codec._generated.metadata import BoolStore
from ..core.source import open_regular
from ..errors import ConversionError, cause
from .limits import DEFAULT_LIMITS, ReadLimits

if TYPE_CHECKING:  # types only: the command line imports this table without numpy
    from ..core.source import Folder
    from ._io import PageReleaser
    from .tensors import TensorSet

__all__ = ["HOLDABLE", "Format", "Probe", "Progress", "ReadOptions", "WriteOptions"]

Progress = Callable[[int], None]

_HOLDABLE = ("param ids", "scalars", "metadata", "Flex32", "Bool stores")
HOLDABLE = frozenset(_HOLDABLE)
"""What a container may hold besides tensor elements (``Format.holds``)."""


def _noop(_: int) -> None:
    pass


@dataclass(frozen=True)
class ReadOptions:
    """What a reader may be asked: the Burn bool store for foreign bools, a top-level key,
    whether a ``.bpk`` from an older Burn is read as its writer meant it, and the caps it reads
    within (``limits``; ``lifted``: the caps the caller gave, each refused by a format that does
    not use it); ``pages``: the page releaser shared by the shards of one folder; ``folder``: the
closed folder a file read on behalf of a folder must lie in (a shard)."""

    bool_store: str | BoolStore = BoolStore.U8
    top_level_key: str | None = None
    legacy_ok: bool = False
    limits: ReadLimits = DEFAULT_LIMITS
    lifted: frozenset[str] = frozenset()
    pages: PageReleaser | None = None
    folder: Folder | None = None


@dataclass(frozen=True)
class WriteOptions:
    """What a writer may be asked; a format lists the ones it uses in ``Format.write_options``
    (any other one given is refused: it would change nothing)."""

    overwrite: bool = False
    progress: Progress = _noop
    compress: bool = False
    max_shard_size: int | None = None
    npz_metadata: bool = False


class Probe:
    """What sniffing may look at: a file's first bytes and size (a zip's member names on request),
    or a folder's file names. Everything is read once, and only when a sniff asks."""

    HEAD = 512

    def __init__(self, path: Path, head: bytes | None = None, size: int | None = None) -> None:
        self.path = path
        self.local = head is None  # else the head of a remote file or of bytes: no zip listing
        self.is_dir = self.local and path.is_dir()
        self._head, self._size = head, size
        self._names: frozenset[str] | None = None
        self._zip: list[str] | None = None

    def _read_head(self) -> tuple[bytes, int]:
        if self._head is None or self._size is None:
            if self.is_dir:
                self._head, self._size = b"", 0
            else:
                with open_regular(self.path) as f:
                    self._head = f.read(self.HEAD)
                    self._size = os.fstat(f.fileno()).st_size
        return self._head, self._size

    @property
    def head(self) -> bytes:
        return self._read_head()[0]

    @property
    def size(self) -> int:
        return self._read_head()[1]

    @property
    def names(self) -> frozenset[str]:
        """The names of the regular files in a folder (empty for a file)."""
        if self._names is None:
            if not self.is_dir:
                self._names = frozenset()
            else:
                with os.scandir(self.path) as entries:
                    self._names = frozenset(e.name for e in entries if e.is_file())
        return self._names

    def zip_names(self) -> list[str]:
        """A zip archive's member names ([] when the file is not a local zip)."""
        if self._zip is None:
            self._zip = []
            if self.head[:4] in (b"PK\x03\x04", b"PK\x05\x06") and self.local and not self.is_dir:
                import zipfile

                from .archive import ZIP_ERRORS

                try:
                    with zipfile.ZipFile(self.path) as archive:
                        self._zip = archive.namelist()
                except ZIP_ERRORS as exc:
                    raise ConversionError(f"{self.path}: broken zip archive: {cause(exc)}") from None
        return self._zip


Reader: TypeAlias = Callable[[Path, ReadOptions], "TensorSet"]
Writer: TypeAlias = Callable[["TensorSet", Path, WriteOptions], Path]
BufferReader: TypeAlias = Callable[[memoryview, ReadOptions], "TensorSet"]
IndependentReader: TypeAlias = Callable[[Path, ReadOptions], "tuple[TensorSet, str] | None"]
Notes: TypeAlias = Callable[["TensorSet", WriteOptions], list[str]]


@dataclass(frozen=True)
class Format:
    """One format: names, recognition, reader, writer, capabilities and the behaviour commands ask
    of it.

    Args:
        name: The format's name (``--from``/``--to``).
        read: Its reader.
        write: Its writer, if it can be written.
        aliases: Other names it answers to.
        extensions: Lower-case name endings (``.safetensors``; ``.safetensors.index.json``).
        sniff: Whether a probe of the content is this format.
        description: One line for the format table.
        directory: Read from (and written to) a folder.
        sharded: A folder of shards.
        family: For a folder of shards, the file format the shards are.
        shard_name: For a file format, how its shards are named.
        needs_torch: ``"read"`` and/or ``"write"``: what needs the ``[torch]`` extra.
        executes_code: Reading runs code from the file: convert only trusted files.
        remote: How a URL is read: ``"ranges"``, ``"fetched"``, or ``""`` (not at all).
        alone: Detected only when no other format matches.
        rank: Between several formats that match, the lowest rank wins.
        write_options: The ``WriteOptions`` beyond overwrite and progress its writer uses.
        holds: What an output holds besides tensor elements (of ``HOLDABLE``).
        quantized: An output holds QFloat tensors as they are.
        stamped: An output's metadata gets the producer's stamp.
        native: Burn's own container, which ``load`` opens.
        noun: What a report calls an output of this format.
        aliases_tensors: One tensor may stand under several names, stored once.
        limits: The caps of ``ReadLimits`` its reader uses.
        read_buffer: Its reader of bytes in memory, if it has one.
        crosscheck: Its independent reader for ``diff``, if it has one.
        notes: What a conversion to it reports about how it stores elements.
    """

    name: str
    read: Reader
    write: Writer | None = None
    aliases: tuple[str, ...] = ()
    extensions: tuple[str, ...] = ()
    """Lower-case name endings (``.safetensors``; ``.safetensors.index.json`` for an index file)."""
    sniff: Callable[[Probe], bool] | None = None
    description: str = ""
    directory: bool = False
    """Read from (and written to) a folder."""
    sharded: bool = False
    family: str | None = None
    """A folder of shards: the file format the shards are (``--from``/``--to`` of it on a folder)."""
    shard_name: str | None = None
    """A file format: how its shards are named (huggingface_hub's ``filename_pattern``: ``{suffix}``
    is ``-00001-of-00003``, or empty for one file); its index is that name + ``.index.json``."""
    needs_torch: tuple[str, ...] = ()
    """``"read"`` and/or ``"write"``: what needs the ``[torch]`` extra."""
    executes_code: bool = False
    """Reading runs code from the file (a pickle read by torch): convert only trusted files."""
    remote: str = ""
    """How a URL is read: ``"ranges"`` (range requests), ``"fetched"`` (to a scratch file first), or not at all."""
    alone: bool = False
    """Detected only when no other format matches (otherwise only when asked for by name)."""
    rank: int = 0
    """Between several formats that match, the lowest rank wins; a tie is ambiguous."""
    write_options: frozenset[str] = field(default_factory=frozenset)
    """The ``WriteOptions`` beyond overwrite and progress this writer uses."""
    holds: frozenset[str] = field(default_factory=frozenset)
    """What an output holds besides tensor elements (of ``HOLDABLE``); a conversion reports the rest as dropped."""
    quantized: bool = False
    """An output holds QFloat tensors as they are (others need them dequantized)."""
    stamped: bool = False
    """An output's metadata map gets the producer's stamp (``producer``, ``version``, ``format``)."""
    native: bool = False
    """Burn's own container: ``load`` opens it as a ``Pack`` (the pack commands read it in place;
    a path without an extension is written as one, with ``.bpk`` appended)."""
    noun: str = ""
    """What a report calls an output of this format ("a state dict"; default: the name)."""
    aliases_tensors: bool = False
    """One tensor may stand under several names (tied weights), stored once; elsewhere each name
    gets its copy, and a conversion reports it."""
    limits: tuple[str, ...] = ()
    """The caps of ``limits.ReadLimits`` its reader uses (a caller may lift only those)."""
    read_buffer: BufferReader | None = None
    """Reads the format from bytes in memory (``read_tensors(b"...")``), when it can."""
    crosscheck: IndependentReader | None = None
    """Reads a file with the format's own library, which shares no code with ``read`` (``diff``
    compares a conversion against it); None, or None returned: no such library is installed."""
    notes: Notes | None = None
    """What a conversion to it reports about the elements it stores otherwise (Flex32 as F32,
    ...); None: the rule of ``holds`` (``Flex32``, ``Bool stores``)."""

    @property
    def names(self) -> tuple[str, ...]:
        """The format's name and its aliases."""
        return (self.name, *self.aliases)

    @property
    def label(self) -> str:
        """``safetensors file``, ``dcp folder``: what the format is called in a message."""
        return f"{self.name} {'folder' if self.directory else 'file'}"

    def lacks(self) -> list[str]:
        """What of ``HOLDABLE`` this format has no place for (param ids and scalars first).

        Returns:
            The kinds of information an output of this format drops.
        """
        return [kind for kind in _HOLDABLE if kind not in self.holds]

    def capabilities(self) -> list[str]:
        """The capabilities as the documented format table lists them.

        Returns:
            One phrase per capability.
        """
        caps = ["folder"] if self.directory else []
        caps += ["sharded"] if self.sharded else []
        caps += [f"torch to {' and '.join(self.needs_torch)}"] if self.needs_torch else []
        caps += ["runs pickled code"] if self.executes_code else []
        caps += [f"URL ({self.remote})"] if self.remote else []
        caps += ["detected only alone"] if self.alone else []
        return caps
