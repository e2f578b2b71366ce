"""The one exception family every burnpack operation raises.

The classes mirror the variants of Burn's ``burn_pack::Error`` (base.rs:315-348) so a caller can
tell exactly which check a file failed, as Burn would report it. ``payload`` is Burn's own
message text where Burn has one; ``str(error)`` adds where the problem is (tensor, byte offset).
"""

from __future__ import annotations

import builtins
import os


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

        ``context`` is Burn's prefix naming the operation and path (``"cannot create '<path>'"``);
        with it the message is ``"<context>: <strerror> (os error <errno>)"`` and names no other place.
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


class OptionError(ConversionError, ValueError):
    """An option is malformed (a regex that does not compile, an unknown adapter or module type):
    a usage error, exit status 2 on the command line."""

    exit_code = 2


class OutputExistsError(ConversionError, FileExistsError):
    """The output exists and ``overwrite`` was not given (``filename`` is the output)."""

    def __init__(self, path: str | os.PathLike[str], detail: str = "exists; pass overwrite=True to replace it") -> None:
        super().__init__(f"{path} {detail}")
        self.filename = str(path)

    def __str__(self) -> str:
        return str(self.args[0])


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
