"""The package's layers read top-down, and no module imports itself back through others.

``schema → errors → _generated → container → records → interop → cli``: every import statement in the
installed packages (module level and inside functions; ``if TYPE_CHECKING:`` blocks excepted,
since they never run) is parsed with ``ast``, so neither a cycle nor an upward import can creep
back in unnoticed.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("burnpack", "conformance")

LAYERS = ("errors", "_generated", "container", "records", "interop", "cli")
"""Bottom to top: ``burnpack.errors``, every exception class, is below all the code that raises them."""

CLI_MODULES = {"burnpack.cli.main", "burnpack.__main__", "burnpack.cli.batch", "burnpack.cli.records", "burnpack.cli.interop"}
CLI_PACKAGES = ("burnpack.cli", "burnpack.view")
"""Packages that are command-line consumers of the layers below as a whole."""
LOW_LEVEL = {"burnpack._generated", "burnpack._cbor"}
"""The generated codec and the CBOR primitives it is written in."""


def layer_of(module: str) -> str | None:
    """The layer of a burnpack module (None: the package facade or another package)."""
    if module == "burnpack.errors":
        return "errors"
    if module in CLI_MODULES or any(module == p or module.startswith(p + ".") for p in CLI_PACKAGES):
        return "cli"
    if any(module == low or module.startswith(low + ".") for low in LOW_LEVEL):
        return "_generated"
    for layer in ("records", "interop"):
        if module.startswith(f"burnpack.{layer}"):
            return layer
    if module.startswith("burnpack.core") or (module.startswith("burnpack.") and module.count(".") == 1):
        return "container"
    return None


def modules() -> dict[str, tuple[Path, bool]]:
    """Dotted module name → (file, is a package)."""
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(sub) for sub in ast.walk(node))
    return skipped


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom, known: dict) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - node.level + 1] if node.level else []
    target = ".".join([*base, *([node.module] if node.module else [])])
    names = [f"{target}.{alias.name}" if target else alias.name for alias in node.names]
    return [name if name in known else target for name in names]


def import_graph() -> dict[str, set[str]]:
    """Module → the in-package modules it imports (at any level of its code)."""
    known = modules()
    graph: dict[str, set[str]] = {}
    for module, (path, is_package) in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = _type_checking_nodes(tree)
        deps: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skipped:
                for target in _targets(module, is_package, node, known):
                    while target not in known and "." in target:
                        target = target.rsplit(".", 1)[0]
                    if target in known and target != module:
                        deps.add(target)
        graph[module] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for dep in sorted(graph[node]):
            if dep not in index:
                visit(dep)
                low[node] = min(low[node], low[dep])
            elif dep in on_stack:
                low[node] = min(low[node], index[dep])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_no_module_imports_itself_back_through_others(graph):
    assert cycles(graph) == []


def test_no_layer_imports_a_higher_one(graph):
    upward = []
    for module, deps in graph.items():
        own = layer_of(module)
        if own is None:
            continue
        for dep in deps:
            theirs = layer_of(dep)
            if theirs is not None and LAYERS.index(theirs) > LAYERS.index(own):
                upward.append(f"{module} ({own}) imports {dep} ({theirs})")
    assert upward == []


def test_reader_and_writer_do_not_import_each_other(graph):
    assert "burnpack.core.reader" not in graph["burnpack.core.writer"]
    assert "burnpack.core.writer" not in graph["burnpack.core.reader"]


def test_the_generated_code_imports_nothing_hand_written_but_its_cbor_primitives_and_the_errors(graph):
    for module, deps in graph.items():
        if layer_of(module) == "_generated":
            assert {dep for dep in deps if layer_of(dep) not in ("_generated", "errors")} == set(), module


def test_the_errors_module_imports_nothing_of_burnpack(graph):
    assert graph["burnpack.errors"] == set()


def test_every_exception_class_is_defined_in_the_errors_module():
    defined = []
    for module, (path, _) in modules().items():
        if module == "burnpack.errors" or not module.startswith("burnpack."):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = {ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases}
                if any(base.endswith(("Error", "Exception", "Warning", "Exists")) for base in bases):
                    defined.append(f"{module}.{node.name}")
    assert defined == []


def test_the_check_finds_a_cycle_and_an_upward_import():
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
    assert layer_of("burnpack.records.module") == "records" and layer_of("burnpack.core.reader") == "container"
    assert layer_of("burnpack.errors") == "errors" and layer_of("burnpack._cbor") == "_generated"
    assert layer_of("burnpack._generated.codec") == "_generated" and layer_of("burnpack.cli.interop") == "cli"
    assert layer_of("burnpack.cli.inspect") == "cli" and layer_of("burnpack.cli") == "cli"
    assert layer_of("burnpack.view") == "cli" and layer_of("burnpack.view.stats") == "cli"


def _third_party_imports(package: str) -> dict[str, set[str]]:
    """Top-level third-party module → the modules of ``package`` that import it, and where."""
    import sys

    found: dict[str, set[str]] = {}
    for path in (ROOT / package).rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module_level = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top != package:
                    where = "module" if id(node) in module_level else "function"
                    found.setdefault(top, set()).add(where)
    return found


def test_installed_burnpack_imports_only_its_declared_dependencies():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    import_names = {"google_re2": "re2"}  # distributions whose module is named otherwise
    declared = {dep.split(">")[0].split("=")[0].split("[")[0].strip().replace("-", "_") for dep in project["dependencies"]}
    declared = {import_names.get(name, name) for name in declared}
    extras = project["optional-dependencies"]
    optional = {dep.split("=")[0].split(">")[0].strip() for extra in ("torch", "remote", "crosscheck") for dep in extras[extra]}
    imports = _third_party_imports("burnpack")
    assert set(imports) - declared - optional == set()
    assert declared <= set(imports), "a runtime dependency nothing imports belongs in an extra"
    for name in optional:  # torch, fsspec...: imported only inside the functions that need them
        assert imports.get(name, set()) <= {"function"}, name
