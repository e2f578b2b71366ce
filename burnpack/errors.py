"""Every exception class of burnpack, in one module that imports nothing of burnpack.

The container's classes mirror the variants of Burn's ``burn_pack::Error`` (base.rs:315-348) so a caller can
tell exactly which check a file failed, as Burn would report it. ``payload`` is Burn's own
message text where Burn has one; ``str(error)`` adds where the problem is (tensor, byte offset).
Below them come the other layers' errors — the record layer (Burn's ``RecordError``), the foreign
formats and conversions — all ``BurnpackError``s too, and the two that are not: the CBOR decoder's
``CborError`` (turned into a burnpack error before a caller sees it) and the command line's
``CommandError``. The command line reports ``BurnpackError``, ``OSError`` and
``CommandError`` as one line; any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import builtins
import contextlib
import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Generic, TypeVar

Report = TypeVar("Report")
"""The report an error carries (a conversion's, a record load's): its type is the raising layer's,
which this module, below every layer, does not name."""


class BurnpackError(Exception):
    """Base class: anything wrong with a burnpack file, its content or a write request.

    Subclasses also derive from the standard exception a Python caller would catch for the same
    problem: ``TensorNotFound`` is a ``KeyError``, ``IoError`` an ``OSError``, the checks on a
    file's content ``ValueError``s.
    """

    variant: str = "BurnpackError"

    def __init__(self, payload: str | None = None, *, where: str | None = None) -> None:
        self.payload = payload
        self.where = where
        text = payload if payload is not None else self.default_message
        super().__init__(f"{text} ({where})" if where else text)

    default_message = "burnpack error"

    def __str__(self) -> str:
        # The message as given: KeyError would quote it, OSError would rebuild it from errno.
        return BaseException.__str__(self)

    @property
    def display(self) -> str:
        """Burn's ``Display`` rendering of this error (``"Validation error: ..."``)."""
        return _DISPLAY[self.variant].format(self.payload)


class InvalidHeader(BurnpackError, ValueError):
    """The 10-byte header is missing or shorter than the metadata it announces."""

    variant = "InvalidHeader"
    default_message = "invalid header: the file is too short for its header or metadata"


class InvalidMagicNumber(BurnpackError, ValueError):
    """The file does not start with Burn's magic number, the u32 0x4255524E ("BURN" read as a
    big-endian number) written little-endian: the bytes ``NRUB``."""

    variant = "InvalidMagicNumber"
    default_message = "invalid magic number: not a burnpack file (expected the u32 0x4255524E little-endian: bytes 4e 52 55 42 'NRUB')"


class InvalidVersion(BurnpackError, ValueError):
    """The header's format version is newer than this implementation understands."""

    variant = "InvalidVersion"
    default_message = "unsupported format version"


class MetadataSerializationError(BurnpackError, ValueError):
    """The metadata could not be encoded (e.g. a name that is not valid Unicode)."""

    variant = "MetadataSerializationError"


class MetadataDeserializationError(BurnpackError, ValueError):
    """The CBOR metadata does not decode to burnpack's metadata structure."""

    variant = "MetadataDeserializationError"


class ValidationError(BurnpackError, ValueError):
    """A size, count, offset or name violates burnpack's rules."""

    variant = "ValidationError"


class IoError(BurnpackError, OSError):
    """Reading or writing the underlying file failed, or a deferred tensor source failed.

    Raised for an operating-system error it keeps ``errno``, ``strerror`` and ``filename`` and is
    also the matching ``OSError`` subclass (a missing file is a ``FileNotFoundError``).
    """

    variant = "IoError"

    @classmethod
    def from_os_error(cls, exc: OSError, *, where: str | None = None, context: str | None = None) -> IoError:
        """Burn's ``Io`` error for ``exc`` (``"<strerror> (os error <errno>)"``), typed like it.

        Args:
            exc: The operating system's error.
            where: The place the message names (a path), if any.
            context: Burn's prefix naming the operation and path (``"cannot create '<path>'"``); with
                it the message is ``"<context>: <strerror> (os error <errno>)"`` and names no other place.

        Returns:
            The error: a ``FileNotFoundError``, ``PermissionError``, … as ``exc`` was.
        """
        if exc.errno is None:
            error = cls(str(exc) if context is None else f"{context}: {exc}", where=where)
        else:
            filename = exc.filename
            if where is None and filename is not None and context is None:
                where = str(filename)
            text = f"{exc.strerror} (os error {exc.errno})"
            error = _OS_ERROR_CLASSES.get(type(exc), cls)(text if context is None else f"{context}: {text}", where=where)
            error.errno, error.strerror, error.filename = exc.errno, exc.strerror, filename
        return error


class TensorNotFound(BurnpackError, KeyError):
    """No tensor of that name is in the pack."""

    variant = "TensorNotFound"


class TensorBytesSizeMismatch(BurnpackError, ValueError):
    """A deferred tensor source produced a different number of bytes than it declared."""

    variant = "TensorBytesSizeMismatch"


class LegacyFormatError(ValidationError):
    """The file was written by an older Burn whose layout or encoding current Burn misreads."""

    variant = "ValidationError"


def _os_error_classes() -> dict[type[OSError], type[IoError]]:
    """One ``IoError`` subclass per standard ``OSError`` subclass (``IoError.FileNotFoundError``...)."""
    table: dict[type[OSError], type[IoError]] = {}
    for name in dir(builtins):
        base = getattr(builtins, name)
        if isinstance(base, type) and issubclass(base, OSError) and base is not OSError and name == base.__name__:
            cls = type(name, (IoError, base), {"__doc__": f"An ``IoError`` that is also a ``{name}``.", "__module__": __name__})
            cls.__qualname__ = f"IoError.{name}"
            setattr(IoError, name, cls)
            table[base] = cls
    return table


_OS_ERROR_CLASSES = _os_error_classes()


class QuantizationError(ValidationError):
    """A QFloat tensor cannot be quantized or dequantized as asked (a ``ValueError``, as every ``ValidationError``)."""

    variant = "ValidationError"


class UnsupportedQuantization(QuantizationError):
    """The scheme is valid but its values cannot be recovered from the file alone (Lookup, UE8M0,
    fp8/fp4 values, an old release's ambiguous layout); the message says why."""


class InvalidQuantizedData(QuantizationError):
    """A QFloat tensor's bytes do not fit its scheme and shape (e.g. the wrong length)."""


class ConversionError(BurnpackError):
    """A conversion cannot be done as asked (unsupported dtype, unknown format, ...)."""


class OptionError(BurnpackError, ValueError):
    """An option is malformed or misused, whichever function takes it (``load``'s ``decoder=``, a
    limit that is not a non-negative int, ``compiled=True`` without the kernel, a regex that does
    not compile, an unknown adapter or module type): a usage error, exit status 2 on the command
    line."""

    exit_code = 2


class OutputExistsError(ConversionError, FileExistsError):
    """The output exists and ``overwrite`` was not given (``filename`` is the output)."""

    def __init__(self, path: str | os.PathLike[str], detail: str = "exists; pass overwrite=True to replace it") -> None:
        super().__init__(f"{path} {detail}")
        self.filename = str(path)

    def __str__(self) -> str:
        return str(self.args[0])


class UnmatchedOptionError(ConversionError, ValueError, Generic[Report]):
    """Options that changed nothing — a silent no-op would produce a wrong model without a hint.

    ``unmatched`` lists ``(option, value, why)`` with Python option names (``adapter``,
    ``type_rules``...); ``report`` is the conversion report so far
    (``burnpack.interop.ConversionReport``). Pass ``allow_unmatched=True``
    (``--allow-unmatched``) to convert anyway."""

    def __init__(self, unmatched: Sequence[tuple[str, str, str]], report: Report) -> None:
        self.unmatched = list(unmatched)
        self.report = report
        lines = [f"{option}={value!r}: {why}" if value else f"{option}: {why}" for option, value, why in self.unmatched]
        super().__init__("options that change nothing: " + "; ".join(lines) + " (allow_unmatched=True to go on)")


class UnknownModuleType(OptionError):
    """A module type that is neither Burn's nor a torch class name (a typo would silently leave
    weights untransposed). Custom modules are spelled ``Struct:Name`` / ``Enum:Name``;
    ``suggestion`` is the closest known name, if any."""

    def __init__(self, name: str, option: str, known: Iterable[str], suggestion: str | None) -> None:
        self.suggestion = suggestion
        hint = f" (did you mean {suggestion!r}?)" if suggestion else ""
        super().__init__(
            f"unknown {option} {name!r}{hint}; known types: {', '.join(known)} (torch class names such as "
            "BatchNorm2d work too; a custom module is Struct:Name)"
        )
        self.name = name


class AmbiguousFormatError(ConversionError, ValueError):
    """A source several formats recognize equally well; ``candidates`` names them."""

    def __init__(self, source: str, candidates: list[str]) -> None:
        self.candidates = candidates
        super().__init__(f"{source}: ambiguous: it is {' and '.join(candidates)}; pass the format (--from) to choose")


EXCERPT_CHARS = 64
"""The most characters of a file's text an error message quotes."""


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """Text a file holds (a tensor name, a key, a shard file name), as an error message quotes it.

    Only text the format itself defines as text is quoted, never other bytes of a file.

    Args:
        text: The text.
        limit: The most characters quoted.

    Returns:
        The text ``repr``-quoted (controls, bidi overrides and lone surrogates escaped), cut to
        ``limit`` characters with the full length said when longer.
    """
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"


def excerpts(texts: Sequence[str], count: int = 10) -> str:
    """The first ``count`` of several texts a file holds (names, keys), each an ``excerpt``,
    and how many more there are.

    Args:
        texts: The texts, in the order a message lists them.
        count: The most texts quoted.

    Returns:
        The quoted texts joined by commas, with ``and N more`` when some were left out.
    """
    more = f" and {len(texts) - count:,} more" if len(texts) > count else ""
    return ", ".join(map(excerpt, texts[:count])) + more


def shown(value: object) -> str:
    """A value read from a file, as an error names it: never a container's whole content.

    Args:
        value: The value (decoded JSON, a pickle's object, ...).

    Returns:
        Text as an ``excerpt``; a bool, a number or None as itself (every integer a reader
        takes from a file has at most 309 digits); anything else by its type (``a dict``).
    """
    if isinstance(value, str):
        return excerpt(value)
    if value is None or type(value) in (bool, int, float):
        return repr(value)
    return f"a {type(value).__name__}"


def cause(exc: BaseException) -> str:
    """What another library's exception says, as a message quotes it: zipfile quotes member names
    and header bytes, pickletools an opcode's whole argument, so only an excerpt is kept. Raise
    the message's error ``from None``: a chained cause would show all of it in the traceback.

    Args:
        exc: The other library's exception.

    Returns:
        Its type's name and an ``excerpt`` of its message (``BadZipFile: 'Bad CRC-32 ...'``).
    """
    return f"{type(exc).__name__}: {excerpt(str(exc), 2 * EXCERPT_CHARS)}"


class PyTorchReadError(BurnpackError, ValueError):
    """The file is not a checkpoint this reader can load: truncated, corrupt or unsupported."""


class UnsafePickleError(PyTorchReadError):
    """The pickle names a global outside the allowlist, so loading it could run arbitrary code."""

    def __init__(self, global_name: str) -> None:
        super().__init__(
            f"refused pickle global {excerpt(global_name, 2 * EXCERPT_CHARS)}: only tensor rebuild functions, storage "
            "types and plain containers are allowed (a full-model save must be re-saved as a "
            "state_dict; anything else may be malicious)"
        )
        self.global_name = global_name


class SafetensorsError(BurnpackError, ValueError):
    """The bytes are not a valid safetensors file, or the tensors cannot be written as one."""


class SpecError(BurnpackError, ValueError):
    """A JSON pack spec is malformed (not JSON, a missing field, a wrong type)."""


class InvalidPattern(BurnpackError, ValueError):
    """A user regular expression RE2 (and so Burn's ``regex`` crate's syntax) does not accept;
    ``pattern`` and ``reason`` (RE2's, with a hint for Python-only syntax) are kept."""

    def __init__(self, pattern: str, reason: str, what: str = "regex") -> None:
        super().__init__(f"invalid {what} {pattern!r}: {reason}")
        self.pattern = pattern
        self.reason = reason


# --------------------------------------------------------------------------------------------
# The record layer: Burn's ``RecordError``
# --------------------------------------------------------------------------------------------
# Burn's ``RecordError`` has two variants (burn-core ``store/mod.rs``): ``Io(String)`` wraps a
# ``burn_pack::Error`` and ``Validation(String)`` reports a load that did not fit the module. Here
# an ``Io`` error *is* the format-layer exception (``InvalidMagicNumber``, ``IoError``, ...), raised
# unchanged, and ``Validation`` is ``RecordValidationError``. Burn panics in a few places where
# a Python caller deserves an exception (an optimizer tensor without ``param_id``, a cast a value
# does not survive, a state tensor whose rank contradicts ``__rank``); those are the other
# ``RecordError`` subclasses.
class RecordError(BurnpackError):
    """Base class of every record-layer error (a ``BurnpackError``)."""

    variant = "RecordError"
    default_message = "record error"

    @property
    def display(self) -> str:
        """Burn's ``Display`` of the matching ``RecordError`` (or the plain message)."""
        return self.payload if self.payload is not None else self.default_message


class RecordValidationError(RecordError, Generic[Report]):
    """Burn's ``RecordError::Validation``: a record did not fit its target.

    ``payload`` is Burn's exact text (``"Missing tensors: [\\"fc.bias\\"]"``, ``"Unused tensors:
    [...]"`` or ``"Apply errors: [...]"``), ``kind`` says which check failed (``"apply"``,
    ``"missing"``, ``"unused"``) and ``report`` holds everything the load found
    (``burnpack.records.ApplyReport``); ``hints`` ("did you mean" lines for missing paths, which
    the record layer composes from it) follow the payload in ``str(error)``.
    """

    variant = "Validation"

    def __init__(self, payload: str, *, kind: str, report: Report | None = None, hints: Sequence[str] = ()) -> None:
        self.kind = kind
        self.report = report
        super().__init__(payload)
        if hints:
            self.args = (payload + "\n" + "\n".join(hints),)

    @property
    def display(self) -> str:
        """The error as Burn displays it: ``"Record validation error: <payload>"``."""
        return f"Record validation error: {self.payload}"


class MissingParamIdError(RecordError):
    """An optimizer record tensor has no ``param_id`` (Burn panics on load)."""

    variant = "MissingParamId"
    default_message = "Optimizer record tensors should carry a parameter id."


class StateRankError(RecordError):
    """A state tensor's rank differs from its parameter's ``__rank`` (Burn panics on load)."""

    variant = "StateRank"


class RecordCastError(RecordError):
    """A value cannot be represented in the dtype a load casts it to (Burn panics)."""

    variant = "Cast"


class SchedulerLayoutError(RecordError, ValueError):
    """A scheduler record's keys are not a layout Burn's learning-rate schedulers write, so no
    scheduler tree can be inferred from them."""

    variant = "SchedulerLayout"


class CheckpointRetentionError(IoError):
    """``retention.json`` exists but cannot be read back; retention would go wrong silently."""


def io_display(error: BaseException) -> str:
    """How Burn would show ``error`` as a ``RecordError``: ``"Record I/O error: ..."`` for format errors.

    Args:
        error: The error.

    Returns:
        The display line.
    """
    if isinstance(error, RecordError):
        return error.display
    if isinstance(error, BurnpackError):
        return f"Record I/O error: {error.display}"
    return str(error)


# --------------------------------------------------------------------------------------------
# Not ``BurnpackError``s
# --------------------------------------------------------------------------------------------
class DestinationExists(FileExistsError):
    """``replace=False`` and the destination appeared while the scratch file was being written."""


class CborError(Exception):
    """A ciborium ``de::Error``; ``str()`` is its Debug rendering, as Burn reports it. The metadata
    decoder turns it into a ``MetadataDeserializationError``; a caller never sees it."""

    def __init__(self, text: str, offset: int | None = None) -> None:
        super().__init__(text)
        self.offset = offset


class CommandError(Exception):
    """A command-line failure reported as ``burnpack: PATH: Kind: message`` with exit status
    ``code`` (2 for usage errors): an output the command refuses, a flag it cannot use."""

    def __init__(self, path: str | os.PathLike[str] | None, kind: str, message: str, *, code: int = 1) -> None:
        super().__init__(message)
        self.path = None if path is None else str(path)
        self.kind = kind
        self.message = message
        self.code = code


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the command is (``burnpack.cli.main`` turns the signal into it) so
    that it unwinds and cleans up as for Ctrl-C."""


def interrupt_behind(exc: BaseException) -> KeyboardInterrupt | None:
    """The interrupt (Ctrl-C, ``Terminated``) during whose unwinding ``exc`` was raised, if any: a
    library's cleanup that fails then (torch's zip writer: "unexpected pos") hides it.

    Args:
        exc: The exception raised.

    Returns:
        The interrupt, or None.
    """
    seen: set[int] = set()
    context = exc.__context__
    while context is not None and id(context) not in seen:
        if isinstance(context, KeyboardInterrupt):
            return context
        seen.add(id(context))
        context = context.__context__
    return None


class LegacyFormatWarning(UserWarning):
    """A file that current Burn reads differently from how its writer meant it."""


_DISPLAY = {
    "BurnpackError": "{}",
    "InvalidHeader": "Invalid header: insufficient bytes",
    "InvalidMagicNumber": "Invalid magic number",
    "InvalidVersion": "Unsupported version",
    "MetadataSerializationError": "Metadata serialization error: {}",
    "MetadataDeserializationError": "Metadata deserialization error: {}",
    "IoError": "I/O error: {}",
    "TensorNotFound": "Tensor not found: {}",
    "TensorBytesSizeMismatch": "Tensor bytes size mismatch: {}",
    "ValidationError": "Validation error: {}",
}

ERROR_CLASSES: dict[str, type[BurnpackError]] = {
    cls.variant: cls
    for cls in (
        InvalidHeader,
        InvalidMagicNumber,
        InvalidVersion,
        MetadataSerializationError,
        MetadataDeserializationError,
        ValidationError,
        IoError,
        TensorNotFound,
        TensorBytesSizeMismatch,
    )
}
"""Burn's error variant names → our exception classes."""


@contextlib.contextmanager
def blame(path: str | os.PathLike[str]) -> Iterator[None]:
    """A context in which failures are about ``path`` unless they already name a file.

    Args:
        path: The file the block works on.

    Returns:
        The context manager.
    """
    try:
        yield
    except Exception as exc:
        if getattr(exc, "burnpack_path", None) is None:
            exc.burnpack_path = str(path)  # type: ignore[attr-defined]
        raise
