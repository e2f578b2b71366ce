"""mkdocs hooks for the documentation site (``mkdocs.yml``): the home page and the docstring check.

* The home page is the README and the changelog page CHANGELOG.md (one source each): the README's
  links into ``docs/`` become the site's own, and the pages' links back to the README lead home.
* Every name ``burnpack`` exports is on a reference page.
* Every public object the reference renders must carry a Google-style docstring (no Sphinx
  roles) that documents each parameter (``Args:``), what it returns (``Returns:`` / ``Yields:``)
  and each exception its body raises (``Raises:``). A gap is logged as a warning, so ``mkdocs build --strict`` fails on
  it, as it does on a broken link or a ``:::`` naming no object.

What counts as public: every object a reference page (``docs/reference/*.md``) names with
``:::``, and for a module its exported members (``__all__``, else the public names it defines);
for a class, its public methods and properties. Exception classes document what they mean, not
their constructors, which only burnpack calls.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import griffe

log = logging.getLogger("mkdocs.plugins.burnpack")
ROOT = Path(__file__).resolve().parent.parent
DIRECTIVE = re.compile(r"^:::\s+([\w.]+)", re.MULTILINE)
SPHINX_ROLE = re.compile(r":[a-z]+:`[^`]*`")


# ------------------------------------------------------------------------------ the home page
def home_page(readme: str) -> str:
    """The README as the site's home page: links into ``docs/`` made relative to it."""
    return re.sub(r"\]\(CHANGELOG\.md", "](changelog.md", re.sub(r"\]\(docs/", "](", readme))


def on_files(files: Any, config: Any) -> Any:
    """Adds the home page and the changelog, from the README and CHANGELOG.md."""
    from mkdocs.structure.files import File

    files.append(File.generated(config, "index.md", content=home_page((ROOT / "README.md").read_text(encoding="utf-8"))))
    files.append(File.generated(config, "changelog.md", content=(ROOT / "CHANGELOG.md").read_text(encoding="utf-8")))
    return files


LIST_ITEM = re.compile(r"^(?:[-*+]|\d+\.) ")
IMAGE = re.compile(r"(?<!\[)!\[([^\]]*)\]\(([^)\s]+)\)")


def github_lists(markdown: str) -> str:
    """A blank line before a list that follows other text: GitHub (CommonMark) lets a list
    interrupt a paragraph, Python-Markdown does not, and would run the items into it."""
    out: list[str] = []
    fence = None
    for line in markdown.splitlines():
        marker = re.match(r"^\s*(`{3,}|~{3,})", line)
        if marker and (fence is None or marker.group(1).startswith(fence)):
            fence = None if fence else marker.group(1)
        elif fence is None and LIST_ITEM.match(line) and out and out[-1].strip() and not LIST_ITEM.match(out[-1]):
            out.append("")
        out.append(line)
    return "\n".join(out) + "\n"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Links from a page to the README and the changelog lead to their pages on the site;
    lists are read as GitHub reads them; an image links to itself at full size."""
    markdown = re.sub(r"\]\(\.\./README\.md", "](index.md", markdown)
    markdown = re.sub(r"\]\(\.\./CHANGELOG\.md", "](changelog.md", markdown)
    return IMAGE.sub(r"[![\1](\2)](\2)", github_lists(markdown))


# ------------------------------------------------------------------------------ lazy exports
class LazyExports(griffe.Extension):
    """Lets griffe see the names a package exports through ``burnpack.core._lazy.lazy_exports``: its
    ``_EXPORTS`` table (module → names) becomes aliases and, when ``__all__`` is not a literal,
    the exports. The table stays the one list of what a package exports. A public path that
    re-exports a module (``burnpack.quant`` of ``burnpack.core.quant``) exports what it does."""

    def on_module_members(self, *, mod: griffe.Module, **kwargs: Any) -> None:
        table = mod.members.get("_EXPORTS")
        if not isinstance(table, griffe.Attribute) or table.value is None:
            return
        exports: list[str] = []
        for relative, names in ast.literal_eval(str(table.value)).items():
            dots = len(relative) - len(relative.lstrip("."))
            base = mod.path.split(".")[: len(mod.path.split(".")) - dots + 1]
            target = ".".join([*base, relative.lstrip(".")])
            for name in names:
                exports.append(name)
                if name not in mod.members:
                    mod.set_member(name, griffe.Alias(name, f"{target}.{name}", parent=mod))
        if not mod.exports:
            mod.exports = sorted(exports)

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """A public path that re-exports a module (``burnpack.quant``: ``from .core.quant import *``
        and its ``__all__``) exports what that module does."""
        for mod in _modules(pkg):
            names = mod.members.get("__all__")
            if mod.exports is None and isinstance(names, griffe.Alias):
                source = pkg.modules_collection.get_member(names.target_path.rsplit(".", 1)[0])
                mod.exports = list(source.exports or [])


def _modules(mod: griffe.Module) -> Iterator[griffe.Module]:
    yield mod
    for member in mod.members.values():
        if isinstance(member, griffe.Module):
            yield from _modules(member)


def load_package() -> griffe.Module:
    """burnpack as the reference sees it (with its lazy exports)."""
    return griffe.load("burnpack", search_paths=[str(ROOT)], resolve_aliases=True, resolve_external=False,
                       extensions=griffe.load_extensions(LazyExports))


# ------------------------------------------------------------------------------ the docstring check
@dataclass(frozen=True)
class Gap:
    """One public object whose docstring lacks something."""

    path: str
    what: str

    def __str__(self) -> str:
        return f"{self.path}: {self.what}"


def public_objects(package: griffe.Module, names: list[str]) -> Iterator[griffe.Object]:
    """The objects named (dotted paths), their exported members, and their classes' public
    methods and properties, each once."""
    seen: set[str] = set()

    def walk(obj: griffe.Object | griffe.Alias) -> Iterator[griffe.Object]:
        target = obj.final_target if isinstance(obj, griffe.Alias) else obj
        if target.path in seen:
            return
        seen.add(target.path)
        yield target
        if isinstance(target, griffe.Module):
            exported = target.exports
            members = [target[str(n)] for n in exported] if exported is not None else [
                m for n, m in target.members.items() if not n.startswith("_") and not m.is_alias and not m.is_module]
            for member in members:
                yield from walk(member)
        elif isinstance(target, griffe.Class):
            for name, member in target.members.items():
                if name.startswith("_") or member.is_alias:
                    continue
                if member.is_function or (member.is_attribute and "property" in member.labels):
                    yield from walk(member)

    for name in names:
        relative = name.removeprefix(package.name).lstrip(".")
        yield from walk(package[relative] if relative else package)


def sections(obj: griffe.Object) -> dict[str, list[Any]]:
    """The parsed Google-style sections of ``obj``'s docstring, by kind."""
    assert obj.docstring is not None
    found: dict[str, list[Any]] = {}
    for section in obj.docstring.parse("google", warn_unknown_params=False, warn_missing_types=False):
        found.setdefault(section.kind.value, []).extend(section.value if isinstance(section.value, list) else [section.value])
    return found


def raised_names(func: griffe.Function) -> set[str]:
    """The exception classes ``func``'s own body raises by name (``raise Name(...)``, ``raise
    Name``), not those of nested functions, nor a re-raise of a caught exception."""
    if func.filepath is None or func.lineno is None or func.endlineno is None or isinstance(func.filepath, list):
        return set()
    lines = Path(func.filepath).read_text(encoding="utf-8").splitlines()[func.lineno - 1 : func.endlineno]
    source = "\n".join(lines)
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    try:
        tree = ast.parse("\n".join(line[indent:] for line in source.splitlines()))
    except SyntaxError:
        return set()
    names: set[str] = set()
    caught: set[str] = set()

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)) and not top:
                continue
            if isinstance(child, ast.ExceptHandler) and child.name:
                caught.add(child.name)
            if isinstance(child, ast.Raise) and child.exc is not None:
                exc = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                name = exc.attr if isinstance(exc, ast.Attribute) else exc.id if isinstance(exc, ast.Name) else None
                if name and name not in caught and name[:1].isupper():
                    names.add(name)
            visit(child, False)

    visit(tree, True)
    return names


def runtime_class(module: str, name: str) -> type | None:
    """The class ``name`` as module ``module`` sees it at run time (None when it is not one)."""
    try:
        namespace = vars(importlib.import_module(module))
    except ImportError:
        return None
    found = namespace.get(name, getattr(builtins, name, None))
    if found is None:
        errors = importlib.import_module("burnpack.errors")
        found = getattr(errors, name, None)
    return found if isinstance(found, type) else None


def covered(raised: type | None, listed: list[type | None], name: str, listed_names: list[str]) -> bool:
    """Whether a raised class is documented: by its name, or by a listed base class."""
    if name in listed_names:
        return True
    return raised is not None and any(base is not None and issubclass(raised, base) for base in listed)


def _is_exception(cls: griffe.Class) -> bool:
    found = runtime_class(cls.module.path, cls.name)
    return found is not None and issubclass(found, BaseException)


def _parameters(func: griffe.Function) -> list[str]:
    names = [p.name for p in func.parameters]
    return names[1:] if names and names[0] in ("self", "cls") and "staticmethod" not in func.labels else names


def _documented(found: dict[str, list[Any]], *kinds: str) -> set[str]:
    return {item.name.lstrip("*") for kind in kinds for item in found.get(kind, [])}


def check(package: griffe.Module, names: list[str]) -> list[Gap]:
    """Every gap in the docstrings of the public objects reached from ``names``."""
    gaps: list[Gap] = []
    for obj in public_objects(package, names):
        if not obj.docstring or not obj.docstring.value.strip():
            gaps.append(Gap(obj.path, "no docstring"))
            continue
        role = SPHINX_ROLE.search(obj.docstring.value)
        if role:
            gaps.append(Gap(obj.path, f"a Sphinx role, {role.group(0)}, in a Google-style docstring: write ``name``"))
        found = sections(obj)
        if isinstance(obj, griffe.Class):
            init = obj.members.get("__init__") or obj.members.get("__new__")
            if _is_exception(obj) or not isinstance(init, griffe.Function):
                continue
            # a field with its own docstring (``x: int`` then ``"""..."""``) is documented there
            fields = {n for n, m in obj.members.items() if m.is_attribute and not m.is_alias and m.docstring}
            documented = _documented(found, "parameters", "attributes") | fields
            missing = [p.lstrip("*") for p in _parameters(init) if p.lstrip("*") not in documented]
            if missing:
                gaps.append(Gap(obj.path, f"constructor parameters not under Args: {', '.join(missing)}"))
            unknown = sorted(_documented(found, "parameters") - {p.lstrip("*") for p in _parameters(init)})
            if unknown:
                gaps.append(Gap(obj.path, f"Args names what the constructor does not take: {', '.join(unknown)}"))
        elif isinstance(obj, griffe.Function) and "property" not in obj.labels:
            missing = [p.lstrip("*") for p in _parameters(obj) if p.lstrip("*") not in _documented(found, "parameters", "other parameters")]
            if missing:
                gaps.append(Gap(obj.path, f"parameters not under Args: {', '.join(missing)}"))
            unknown = sorted(_documented(found, "parameters") - {p.lstrip("*") for p in _parameters(obj)})
            if unknown:
                gaps.append(Gap(obj.path, f"Args names what the signature does not take: {', '.join(unknown)}"))
            returns = str(obj.returns) if obj.returns is not None else "None"
            if returns not in ("None", "NoReturn", "Never") and "returns" not in found and "yields" not in found:
                gaps.append(Gap(obj.path, f"returns {returns}, but has no Returns section"))
            raised = raised_names(obj)
            if raised:
                module = obj.module.path
                listed_names = [str(item.annotation) for item in found.get("raises", [])]
                listed = [runtime_class(module, n.split(".")[-1]) for n in listed_names]
                undocumented = sorted(n for n in raised if not covered(runtime_class(module, n), listed, n, listed_names))
                if undocumented:
                    gaps.append(Gap(obj.path, f"raises {', '.join(undocumented)}, not under Raises"))
    return gaps


def reference_names(docs: Path) -> list[str]:
    """Every object the reference pages name with ``:::``."""
    return [m[1] for page in sorted((docs / "reference").glob("*.md")) for m in DIRECTIVE.finditer(page.read_text(encoding="utf-8"))]


def unreferenced(package: griffe.Module, names: list[str]) -> list[str]:
    """The names ``burnpack`` exports that no reference page shows."""
    shown = {obj.path for obj in public_objects(package, names)}
    exported = [str(n) for n in package.exports or []]
    return [n for n in exported if package[n].final_target.path not in shown]


def on_pre_build(config: Any) -> None:
    """Logs every docstring gap, and every export no reference page shows, as a warning (a
    failure under ``--strict``)."""
    package = load_package()
    names = reference_names(Path(config["docs_dir"]))
    for name in unreferenced(package, names):
        log.warning("reference: burnpack.%s is on no page of docs/reference/", name)
    for gap in check(package, names):
        log.warning("docstring: %s", gap)
