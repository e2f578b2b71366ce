"""Burn's rules for the ``.bpk`` extension of the paths it reads and writes."""

from __future__ import annotations

import os
from pathlib import Path

PathLike = str | os.PathLike[str]


def has_extension(path: Path) -> bool:
    """Rust's ``Path::extension().is_some()``: a dot after the first character of the name.

    Unlike Python's ``suffix``, ``"trail."`` has an (empty) extension and ``".hidden"`` has none.
    """
    name = path.name
    return "." in name[1:] if name not in ("", ".", "..") else False


def resolve_read_path(path: PathLike) -> str:
    """Burn's reader rule: an extensionless path that does not exist gets ``.bpk`` appended.

    As Rust does it: the existence test is of the text as given (``"model/"`` names a directory,
    not the file ``model``), and a path without a file name (``""``, ``"a/.."``) is left as it
    is, so opening it fails as opening it does. A path ending in a name with an extension, what
    is nearly always given, is returned without building a ``Path``, whose parsing is a
    measurable part of opening a small file in a process whose caches have gone cold.
    """
    text = os.fspath(path)
    if not isinstance(text, str):
        raise TypeError(f"a path to read must be text, not {type(text).__name__}")
    tail = text.rpartition("/")[2]
    if os.name == "posix" and tail not in ("", ".", ".."):  # then it is the name Path(text).name gives
        named = "." in tail[1:]
    else:
        named = has_extension(Path(text))
    if not named and not os.path.exists(text):  # False, not an error, for a name too long or holding NUL
        p = Path(text)
        if p.name not in ("", ".."):  # Rust's set_extension leaves a path without a file name as it is
            return str(p.with_name(p.name + ".bpk"))
    return text


def resolve_write_path(path: PathLike) -> Path:
    """Burn's writer rule: append ``.bpk`` when the path has no extension (Rust semantics)."""
    p = Path(path)
    if p.name in ("", ".."):  # Rust's file_name() is None: nothing appended, and creating it fails
        return p
    return p if has_extension(p) else p.with_name(p.name + ".bpk")
