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


def resolve_read_path(path: PathLike) -> Path:
    """Burn's reader rule: an extensionless path that does not exist gets ``.bpk`` appended."""
    p = Path(path)
    if not has_extension(p) and not os.path.exists(p):  # False, not an error, for a name too long or holding NUL
        return p.with_name(p.name + ".bpk")
    return p


def resolve_write_path(path: PathLike) -> Path:
    """Burn's writer rule: append ``.bpk`` when the path has no extension (Rust semantics)."""
    p = Path(path)
    if p.name in ("", ".."):  # Rust's file_name() is None: nothing appended, and creating it fails
        return p
    return p if has_extension(p) else p.with_name(p.name + ".bpk")
