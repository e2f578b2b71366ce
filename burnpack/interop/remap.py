"""Renaming and selecting tensors the way burn-store does (``keyremapper.rs``, ``filter.rs``).

* :class:`KeyRemapper` — an ordered list of ``(regex, replacement)`` rules; each rule rewrites
  every match in the result of the previous one (Rust's ``replace_all``). Replacements accept
  Burn's syntax (``$1``, ``${name}``, ``$$``) and Python's (``\\1``, ``\\g<name>``) alike.
* :class:`PathFilter` — keeps a tensor when any exact path, regex (searched anywhere, like Rust's
  ``Regex::is_match``) or predicate ``(path, module_type)`` matches.
* :func:`map_indices_contiguous` — renumbers numeric path segments per prefix to ``0..n-1``
  (``fc.0, fc.2, fc.4`` → ``fc.0, fc.1, fc.2``), as PyTorch ``nn.Sequential`` gaps need.
* :func:`strip_enum_variants` / :func:`insert_enum_variants` — Burn names an enum module's
  active variant as a path segment (``conv.DwsConv.dconv.weight``); PyTorch does not
  (``conv.dconv.weight``).

Patterns are RE2's (:mod:`burnpack.core.patterns`): linear-time, with the syntax of Burn's regex crate.
Deliberate differences from Burn: an invalid regex raises instead of being silently dropped,
and a reference to a group the pattern does not have is an error only in Python syntax (Burn's
``$9`` for a missing group expands to nothing, and so does ours).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ..errors import OptionError
from ..core.patterns import Pattern, check_text, compile_pattern

__all__ = [
    "KeyRemapper",
    "PathFilter",
    "RemapRule",
    "insert_enum_variants",
    "is_enum_variant_segment",
    "map_indices_contiguous",
    "parse_rule",
    "strip_enum_variants",
]

_CAP_LETTER = re.compile(r"[0-9A-Za-z_]+")


def _python_twin(compiled: Pattern) -> re.Pattern[str]:
    """A Python pattern with the groups (numbers and names) of ``compiled``, to check a Python
    replacement template against (RE2 reads templates only when it expands them)."""
    names = {index: name for name, index in compiled.groupindex.items() if name.isidentifier()}
    return re.compile("".join(f"(?P<{names[i]}>)" if i in names else "()" for i in range(1, compiled.groups + 1)))


def _expander(compiled: Pattern, replacement: str) -> Callable[[Any], str]:
    """A match → text function for ``replacement`` in Burn's or Python's syntax.

    Burn (Rust ``regex``): ``$$`` is a dollar; ``${name}`` or ``$name`` (``name`` = the longest
    run of ``[0-9A-Za-z_]``, so ``$1a`` means group ``1a``) is a group by number or name, and a
    group that does not exist or did not take part expands to nothing; a ``$`` not followed by
    a name is literal. Python: ``\\1``..``\\99``, ``\\g<name>``, ``\\g<1>`` and the usual
    backslash escapes, as ``re.sub`` reads them.
    """
    parts: list[str | tuple[str, Any]] = []  # literal text, ("group", key) or ("python", template)
    literal: list[str] = []
    i = 0
    n = len(replacement)
    while i < n:
        ch = replacement[i]
        if ch == "$":
            if i + 1 < n and replacement[i + 1] == "$":
                literal.append("$")
                i += 2
                continue
            name = None
            end = i + 1
            if i + 1 < n and replacement[i + 1] == "{":
                close = replacement.find("}", i + 2)
                if close != -1 and close > i + 2:
                    name, end = replacement[i + 2 : close], close + 1
            else:
                m = _CAP_LETTER.match(replacement, i + 1)
                if m:
                    name, end = m.group(), m.end()
            if name is None:
                literal.append("$")
                i += 1
                continue
            if literal:
                parts.append("".join(literal))
                literal = []
            key: int | str = int(name) if name.isdigit() else name
            parts.append(("group", key))
            i = end
            continue
        if ch == "\\":
            # A Python escape: take the longest chunk without "$" and let re expand it.
            j = i
            chunk = []
            while j < n and replacement[j] != "$":
                chunk.append(replacement[j])
                j += 1
            if literal:
                parts.append("".join(literal))
                literal = []
            template = "".join(chunk)
            try:
                _python_twin(compiled).sub(template, "")  # re parses the template eagerly: bad groups fail here
            except (re.error, IndexError) as exc:
                raise OptionError(f"invalid replacement {replacement!r}: {exc}") from None
            parts.append(("python", template))
            i = j
            continue
        literal.append(ch)
        i += 1
    if literal:
        parts.append("".join(literal))
    groups = compiled.groups
    names = compiled.groupindex

    def expand(match: Any) -> str:
        out = []
        for part in parts:
            if isinstance(part, str):
                out.append(part)
            elif part[0] == "group":
                key = part[1]
                if isinstance(key, int):
                    value = match.group(key) if key <= groups else None
                else:
                    value = match.group(key) if key in names else None
                out.append(value or "")
            else:
                out.append(match.expand(part[1]))
        return "".join(out)

    return expand


@dataclass(frozen=True)
class RemapRule:
    """One ``pattern → replacement`` rule, compiled."""

    pattern: str
    replacement: str
    regex: Pattern = field(repr=False, compare=False)
    expand: Callable[[Any], str] = field(repr=False, compare=False)

    @classmethod
    def compile(cls, pattern: str, replacement: str) -> RemapRule:
        regex = compile_pattern(pattern, "remap regex")
        return cls(pattern, replacement, regex, _expander(regex, check_text(replacement, "remap replacement")))

    def apply(self, name: str) -> str:
        return self.regex.sub(self.expand, name)

    def __str__(self) -> str:
        return f"{self.pattern!r} -> {self.replacement!r}"


def parse_rule(text: str) -> tuple[str, str]:
    """``"PATTERN=REPLACEMENT"`` (the CLI's ``--remap``); the first ``=`` that is not part of a
    ``(?P=name)`` back-reference or a lookaround splits it. ``PATTERN=>REPLACEMENT`` also works."""
    if "=>" in text:
        pattern, _, replacement = text.partition("=>")
        return pattern, replacement
    depth = 0
    for i, ch in enumerate(text):
        if ch == "\\":
            continue
        if ch == "(" and (i == 0 or text[i - 1] != "\\"):
            depth += 1
        elif ch == ")" and (i == 0 or text[i - 1] != "\\"):
            depth = max(0, depth - 1)
        elif ch == "=" and depth == 0:
            return text[:i], text[i + 1 :]
    if "=" in text:  # unbalanced parentheses: the pattern is what is wrong, and compiling it says so
        pattern, _, replacement = text.partition("=")
        return pattern, replacement
    raise OptionError(f"remap rule {text!r} is not PATTERN=REPLACEMENT")


class KeyRemapper:
    """Burn's ``KeyRemapper``: rules applied in order, each to the previous one's result.

    Args:
        rules: ``(pattern, replacement)`` pairs (Rust regex syntax, ``$1`` groups), or a mapping of them.
    """

    def __init__(self, rules: Iterable[tuple[str, str] | RemapRule] | Mapping[str, str] = ()) -> None:
        if isinstance(rules, Mapping):
            rules = rules.items()
        self.rules: list[RemapRule] = [
            r if isinstance(r, RemapRule) else RemapRule.compile(*r) for r in rules
        ]

    def add_pattern(self, pattern: str, replacement: str) -> KeyRemapper:
        """A copy with one more rule (Burn's ``add_pattern``).

        Args:
            pattern: The regular expression (Rust's syntax).
            replacement: Its replacement (``$1``, ``${name}`` groups).

        Returns:
            The new remapper.

        Raises:
            InvalidPattern: The pattern is not one Burn's regex syntax accepts.
        """
        return KeyRemapper([*self.rules, RemapRule.compile(pattern, replacement)])

    def __bool__(self) -> bool:
        return bool(self.rules)

    def __len__(self) -> int:
        return len(self.rules)

    def __repr__(self) -> str:
        return f"KeyRemapper([{', '.join(map(str, self.rules))}])"

    def remap(self, name: str) -> str:
        """``name`` after every rule.

        Args:
            name: A tensor name.

        Returns:
            The new name.
        """
        for rule in self.rules:
            name = rule.apply(name)
        return name

    def remap_all(self, names: Iterable[str]) -> tuple[dict[str, str], list[RemapRule]]:
        """Every name after every rule, and the rules that changed nothing.

        Args:
            names: The tensor names.

        Returns:
            ``({old: new}, rules that matched no name)``.
        """
        used = [False] * len(self.rules)
        out = {}
        for old in names:
            new = old
            for i, rule in enumerate(self.rules):
                if rule.regex.search(new):
                    used[i] = True
                    new = rule.apply(new)
            out[old] = new
        return out, [rule for rule, hit in zip(self.rules, used) if not hit]


Predicate = Callable[[str, str], bool]
FilterSpec: TypeAlias = "PathFilter | str | Predicate | Iterable[str | Predicate] | None"
"""What the converters take as a path filter (``filter``, ``exclude``): see :meth:`PathFilter.coerce`."""


class PathFilter:
    """Burn's ``PathFilter``: a tensor passes when any exact path, regex or predicate matches.

    A filter with no criteria matches nothing, ``all()`` everything.

    Args:
        paths: Exact paths.
        regexes: Regular expressions, searched (unanchored, as Rust's ``is_match``).
        predicates: Called with the tensor's path and its module type (``"Struct:Linear"`` or
            ``""`` when unknown).
        match_all: Match every path.
    """

    def __init__(
        self,
        paths: Iterable[str] = (),
        regexes: Iterable[str] = (),
        predicates: Iterable[Predicate] = (),
        *,
        match_all: bool = False,
    ) -> None:
        self.paths = list(paths)
        self.regexes = []
        for pattern in regexes:
            self.regexes.append(compile_pattern(pattern, "filter regex"))
        self.predicates = list(predicates)
        self.match_all = match_all
        self._path_set = set(self.paths)

    @classmethod
    def all(cls) -> PathFilter:
        """Burn's ``PathFilter::all``: a filter every path passes.

        Returns:
            The filter.
        """
        return cls(match_all=True)

    def with_full_path(self, path: str) -> PathFilter:
        """A copy that also passes ``path``.

        Args:
            path: An exact path.

        Returns:
            The new filter.
        """
        return PathFilter([*self.paths, path], [r.pattern for r in self.regexes], self.predicates, match_all=self.match_all)

    def with_regex(self, pattern: str) -> PathFilter:
        """A copy that also passes paths matching ``pattern``.

        Args:
            pattern: A regular expression (Rust's syntax), searched.

        Returns:
            The new filter.

        Raises:
            InvalidPattern: The pattern is not one Burn's regex syntax accepts.
        """
        return PathFilter(self.paths, [*(r.pattern for r in self.regexes), pattern], self.predicates, match_all=self.match_all)

    def with_predicate(self, predicate: Predicate) -> PathFilter:
        """A copy that also passes the paths ``predicate`` accepts.

        Args:
            predicate: Called with the path and the module type.

        Returns:
            The new filter.
        """
        return PathFilter(self.paths, [r.pattern for r in self.regexes], [*self.predicates, predicate], match_all=self.match_all)

    def is_empty(self) -> bool:
        """Whether the filter has no criteria (and so matches nothing).

        Returns:
            True when empty.
        """
        return not (self.paths or self.regexes or self.predicates or self.match_all)

    def __repr__(self) -> str:
        parts = [f"paths={self.paths}"] if self.paths else []
        if self.regexes:
            parts.append(f"regexes={[r.pattern for r in self.regexes]}")
        if self.predicates:
            parts.append(f"{len(self.predicates)} predicate(s)")
        if self.match_all:
            parts.append("all")
        return f"PathFilter({', '.join(parts)})"

    def matches(self, path: str, module_type: str | None = None) -> bool:
        """Whether a tensor passes.

        Args:
            path: The tensor's path.
            module_type: Its module's type, for predicates.

        Returns:
            True when any criterion matches.
        """
        if self.match_all or path in self._path_set:
            return True
        if any(r.search(path) for r in self.regexes):
            return True
        return any(bool(p(path, module_type or "")) for p in self.predicates)

    @classmethod
    def coerce(cls, value: FilterSpec) -> PathFilter | None:
        """A filter from what the converters accept.

        Args:
            value: ``None``, a ``PathFilter``, a regex string, a predicate, or a list mixing regexes
                and predicates.

        Returns:
            The filter, or None for None.

        Raises:
            InvalidPattern: A regex is not one Burn's regex syntax accepts.
        """
        if value is None or isinstance(value, PathFilter):
            return value
        if isinstance(value, str):
            return cls(regexes=[value])
        if callable(value):
            return cls(predicates=[value])
        regexes: list[str] = []
        predicates: list[Predicate] = []
        for item in value:
            if callable(item):
                predicates.append(item)
            else:
                regexes.append(item)
        return cls(regexes=regexes, predicates=predicates)


def _rust_usize(segment: str) -> int | None:
    """``segment.parse::<usize>()``: optional ``+``, ASCII digits, no overflow."""
    digits = segment[1:] if segment.startswith("+") else segment
    if not digits or not digits.isascii() or not digits.isdigit():
        return None
    value = int(digits)
    return value if value < 1 << 64 else None


def map_indices_contiguous(names: Sequence[str]) -> dict[str, str]:
    """Burn's ``map_indices_contiguous``: every numeric segment renumbered among the indices seen
    after the same *original* prefix, in increasing order.

    ``fc.0, fc.2, fc.4`` → ``fc.0, fc.1, fc.2``; ``a.1.b.3`` and ``a.1.b.7`` → ``a.0.b.0`` and
    ``a.0.b.1``.

    Args:
        names: Every tensor name.

    Returns:
        ``{old: new}`` for every name.
    """
    index_maps: dict[str, set[int]] = {}
    split = [name.split(".") for name in names]
    for parts in split:
        for i, part in enumerate(parts):
            index = _rust_usize(part)
            if index is not None:
                prefix = ".".join(parts[:i]) + "." if i else ""
                index_maps.setdefault(prefix, set()).add(index)
    renumber = {prefix: {old: new for new, old in enumerate(sorted(seen))} for prefix, seen in index_maps.items()}
    out = {}
    for name, parts in zip(names, split):
        result = []
        for i, part in enumerate(parts):
            index = _rust_usize(part)
            if index is not None:
                prefix = ".".join(parts[:i]) + "." if i else ""
                result.append(str(renumber[prefix][index]))
            else:
                result.append(part)
        out[name] = ".".join(result)
    return out


def is_enum_variant_segment(segment: str) -> bool:
    """Rust's naming convention: variants are UpperCamelCase, fields snake_case."""
    return bool(segment) and segment[0].isascii() and segment[0].isupper()


def strip_enum_variants(name: str, variants: Mapping[str, str] | None = None) -> str:
    """``name`` without its enum-variant segments (``conv.DwsConv.dconv.weight`` →
    ``conv.dconv.weight``), as Burn builds paths with ``skip_enum_variants``.

    Args:
        name: A tensor name.
        variants: The module path of each enum field → its variant (``{"conv": "DwsConv"}``);
            without it a segment is taken as a variant when it starts with an uppercase letter,
            which is how Rust names variants and how neither Rust fields nor PyTorch attributes
            are named. The last segment (the parameter itself) is never dropped.

    Returns:
        The name without variants.
    """
    parts = name.split(".")
    kept: list[str] = []
    original: list[str] = []
    for i, part in enumerate(parts):
        here = ".".join(original)
        last = i == len(parts) - 1
        if not last and (
            (variants is not None and variants.get(here) == part)
            or (variants is None and is_enum_variant_segment(part))
        ):
            original.append(part)
            continue
        original.append(part)
        kept.append(part)
    return ".".join(kept)


def insert_enum_variants(name: str, variants: Mapping[str, str]) -> str:
    """The reverse of ``strip_enum_variants``: ``{"conv": "DwsConv"}`` turns ``conv.dconv.weight``
    into ``conv.DwsConv.dconv.weight``.

    Args:
        name: A tensor name without variants.
        variants: Module path (without variants) → variant; nested enums are matched outermost first.

    Returns:
        The name with its variant segments.
    """
    if not variants:
        return name
    parts = name.split(".")
    out: list[str] = []
    plain: list[str] = []
    for i, part in enumerate(parts):
        out.append(part)
        plain.append(part)
        variant = variants.get(".".join(plain))
        if variant is not None and i < len(parts) - 1:
            out.append(variant)
    return ".".join(out)
