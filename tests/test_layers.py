"""The package's layers read top-down, and no module or package imports itself back through others.

``errors → codec → core → records → interop → view → cli → the public faces`` (``LAYERS``, one
package each), and inside each layer its ranks (``RANKS``). The import graph models what Python
does: every import statement counts wherever it stands (module level, inside a function, under
``if TYPE_CHECKING:`` — a type the module names is a dependency too — and in a ``.pyi`` stub);
importing ``a.b.c`` runs the ``__init__`` of ``a.b`` first (and of ``a``), unless the importer is
inside it already; and a call given a module's dotted name as a string
(``importlib.import_module("burnpack.core._cquant")``, ``load_kernel(...)``) imports it. So neither a
cycle nor an upward import can creep back in, and no module is placed by an exception to a rule.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("burnpack", "conformance")

LAYERS = (
    ("errors", "burnpack.errors"),
    ("codec", "burnpack.codec"),
    ("core", "burnpack.core"),
    ("records", "burnpack.records"),
    ("interop", "burnpack.interop"),
    ("view", "burnpack.view"),
    ("cli", "burnpack.cli"),
    ("public", "burnpack"),
)
"""Bottom to top, each with the package (or module) that holds it: ``burnpack.errors``, every
public exception class, is below all the code that raises them; the codec (the CBOR runtime and
the code generated from ``schema/``) below the container; on top, the public faces: the facade
``burnpack`` and the modules beside it (``burnpack.quant``, ``burnpack.dtypes``,
``burnpack.remote``, ``burnpack.torch``: re-exports of the container; ``burnpack.__main__``). A
module's layer is that of the longest of these names it falls under."""

RANKS: dict[str, tuple[tuple[str, ...], ...]] = {
    "errors": (("errors",),),
    "codec": (
        # the schema's facts; the compiled skip kernel; the kernels' rule
        ("codec", "codec._generated", "codec._generated.layout", "codec._cskip", "codec._kernels"),
        ("codec._cbor",),  # the CBOR runtime
        ("codec._generated.metadata",),  # the generated types and codec, written in that runtime
    ),
    "core": (
        ("core._cquant", "core._ctable"),  # the compiled kernels (optional)
        # support: bytes in and out, and the helpers every layer uses
        ("core", "core._lazy", "core.paths", "core.source", "core.remote", "core.sidefile", "core.atomic",
         "core.patterns", "core.display", "core.progress", "core.limits"),
        # the data model: what a file holds
        ("core.dtypes", "core.frameworks", "core.metadata", "core.legacy", "core.table", "core.tensor",
         "core.slices", "core.strict", "core.quant"),
        ("core.plan",),  # the one read plan
        ("core.reader", "core.writer"),
        ("core.dump", "core.diff", "core.spec", "core.torch"),  # tools over whole packs
    ),
    "records": (
        ("records._cast", "records._common", "records.tree", "records._torch", "records.state"),
        ("records.module", "records.optimizer", "records.scheduler"),  # one record each
        ("records.checkpoint", "records.detect"),  # over the three records
        ("records",),  # the lazy facade
    ),
    "interop": (
        # tensors in transit and Burn's transformations of them
        ("interop.limits", "interop.format", "interop.tensors", "interop._io", "interop.archive", "interop.remap",
         "interop.adapters", "interop.quantizing", "interop.layout_base", "interop.layout_leaf", "interop.layout_recurrent",
         "interop.layout_attention", "interop.layout_transformer", "interop.layouts"),  # modules' layouts, one registry
        ("interop.pytorch", "interop.safetensors", "interop.torch_live", "interop.dcp"),  # one format each
        ("interop.formats", "interop.sharded", "interop.registry", "interop.crosscheck",
         "interop.inputs"),  # every format, by name, extension or content
        ("interop.converter", "interop.loader"),  # conversions
        ("interop.checkpoint", "interop.checkpoint.state", "interop.checkpoint.model", "interop.checkpoint.optimizer",
         "interop.checkpoint.scheduler", "interop.checkpoint.stored"),  # training checkpoints
        ("interop",),  # the lazy facade
    ),
    "view": (
        ("view._cstats",),  # the compiled statistics kernel (optional)
        ("view.page", "view.stats"),
        ("view.report",),
        ("view",),
    ),
    "cli": (
        ("cli", "cli.common", "cli.batch"),  # the error style, the output rule, the batch protocol
        ("cli.diff", "cli.inspect", "cli.pack", "cli.view", "cli.records", "cli.interop"),  # one command each
        ("cli.files",),  # the commands over many files
        ("cli.main",),
    ),
    "public": (("quant", "dtypes", "remote", "torch", "", "__main__"),),
}  # fmt: skip
"""Inside a layer, a module imports only modules of its own rank or below (no circles: see
``test_no_module_imports_itself_back_through_others``). Names are relative to ``burnpack``
(``""`` is the facade); a package's ``__init__`` is ranked by its package's name, above what it
imports (a lazy facade's imports are those its type declarations name)."""


# --------------------------------------------------------------------------------------------
# The import graph
# --------------------------------------------------------------------------------------------
def modules(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, tuple[list[Path], bool]]:
    """Dotted module name → (its source files: ``.py`` and ``.pyi``, whether it is a package)."""
    found: dict[str, tuple[list[Path], bool]] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py*")):
            if path.suffix not in (".py", ".pyi"):
                continue
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            name = ".".join(parts[:-1] if is_package else parts)
            found.setdefault(name, ([], is_package))[0].append(path)
    return found


def extensions(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> set[str]:
    """Dotted names of the C extension modules, by their sources (``.c``): they import none of ours."""
    return {".".join(path.relative_to(root).with_suffix("").parts) for package in packages for path in (root / package).rglob("*.c")}


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _imported(module: str, is_package: bool, node: ast.AST, known: set[str]) -> list[str]:
    """The modules an import statement or a call names (before their packages are added)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = module.split(".") if is_package else module.split(".")[:-1]
        base = base[: len(base) - node.level + 1] if node.level else []
        target = ".".join([*base, *([node.module] if node.module else [])])
        submodules = [f"{target}.{alias.name}" if target else alias.name for alias in node.names]
        return [target, *(name for name in submodules if name in known)]
    if isinstance(node, ast.Call):  # a module's dotted name given to a call imports it
        return [arg.value for arg in node.args if isinstance(arg, ast.Constant) and arg.value in known]
    return []


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    """Module → the project's modules that importing it runs (statements anywhere in its code)."""
    known = modules(root, packages)
    graph: dict[str, set[str]] = {name: set() for name in extensions(root, packages)}
    importable = set(known) | set(graph)
    for module, (paths, is_package) in known.items():
        inside = {module, *_ancestors(module)}  # packages already running when this module runs
        deps: set[str] = set()
        for path in paths:
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                for target in _imported(module, is_package, node, importable):
                    while target not in importable and "." in target:  # a name, not a module: its module
                        target = target.rsplit(".", 1)[0]
                    if target in importable:
                        deps.update(m for m in (*_ancestors(target), target) if m in importable and m not in inside)
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
        for dep in sorted(graph.get(node, ())):
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


def package_graph(graph: dict[str, set[str]], is_package: dict[str, bool]) -> dict[str, set[str]]:
    """The graph between folders: a module stands for its folder; a package's ``__init__`` is a
    unit of its own (``pkg/__init__``: a facade may re-export what its folder and subfolders
    define); a module at the top of the tree (``burnpack.errors``) is a unit of its own, as the
    top folder is the whole tree."""

    def folder(module: str) -> str:
        if is_package.get(module):
            return module + "/__init__"
        return module if module.count(".") <= 1 else module.rsplit(".", 1)[0]

    folders: dict[str, set[str]] = {}
    for module, deps in graph.items():
        own = folder(module)
        folders.setdefault(own, set()).update({folder(dep) for dep in deps} - {own})
    return folders


def layer_of(module: str) -> str | None:
    """The layer of a burnpack module: the longest ``LAYERS`` name it falls under (None: another package)."""
    matches = [(len(prefix), name) for name, prefix in LAYERS if module == prefix or module.startswith(prefix + ".")]
    return max(matches)[1] if matches else None


def rank_of(module: str) -> int | None:
    """The rank of a burnpack module inside its layer (None: unranked)."""
    short = "" if module == "burnpack" else module.removeprefix("burnpack.")
    for rank, members in enumerate(RANKS.get(layer_of(module) or "", ())):
        if short in members:
            return rank
    return None


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


# --------------------------------------------------------------------------------------------
# The rules
# --------------------------------------------------------------------------------------------
def test_no_module_imports_itself_back_through_others(graph):
    assert cycles(graph) == []


def test_no_package_imports_itself_back_through_others(graph):
    is_package = {module: package for module, (_, package) in modules().items()}
    assert cycles(package_graph(graph, is_package)) == []


def test_no_layer_imports_a_higher_one(graph):
    order = [name for name, _ in LAYERS]
    upward = []
    for module, deps in graph.items():
        own = layer_of(module)
        for dep in deps:
            theirs = layer_of(dep)
            if own is not None and theirs is not None and order.index(theirs) > order.index(own):
                upward.append(f"{module} ({own}) imports {dep} ({theirs})")
    assert upward == []


def test_every_burnpack_module_has_a_layer_and_a_rank_in_it(graph):
    unplaced = [m for m in graph if m.split(".")[0] == "burnpack" and rank_of(m) is None]
    assert unplaced == []


def test_every_ranked_name_is_a_module():
    ranked = {("burnpack." + short).rstrip(".") for ranks in RANKS.values() for members in ranks for short in members}
    assert ranked - set(modules()) - extensions() == set()


def test_inside_a_layer_no_module_imports_a_higher_rank(graph):
    upward = []
    for module, deps in graph.items():
        own = rank_of(module)
        for dep in deps:
            if own is not None and layer_of(dep) == layer_of(module) and (rank_of(dep) or 0) > own:
                upward.append(f"{module} (rank {own}) imports {dep} (rank {rank_of(dep)})")
    assert upward == []


def test_reader_and_writer_do_not_import_each_other(graph):
    assert "burnpack.core.reader" not in graph["burnpack.core.writer"]
    assert "burnpack.core.writer" not in graph["burnpack.core.reader"]


def test_the_generated_code_imports_only_the_cbor_runtime_and_itself(graph):
    for module, deps in graph.items():
        if module.startswith("burnpack.codec._generated"):
            assert {dep for dep in deps if not dep.startswith("burnpack.codec._generated")} <= {"burnpack.codec._cbor"}, module


def test_the_errors_module_imports_nothing_of_burnpack(graph):
    assert graph["burnpack.errors"] == set()


def test_every_public_exception_class_is_defined_in_the_errors_module():
    """A private module (``burnpack.codec._cbor``) may keep a control-flow exception to itself."""
    defined = []
    for module, (paths, _) in modules().items():
        if module == "burnpack.errors" or layer_of(module) is None or any(part.startswith("_") for part in module.split(".")):
            continue
        for path in paths:
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                    bases = {ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases}
                    if any(base.endswith(("Error", "Exception", "Warning", "Exists")) for base in bases):
                        defined.append(f"{module}.{node.name}")
    assert defined == []


# --------------------------------------------------------------------------------------------
# The model, on small trees
# --------------------------------------------------------------------------------------------
def _tree(tmp_path: Path, files: dict[str, str]) -> dict[str, set[str]]:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return import_graph(tmp_path, ("pkg",))


def test_the_model_runs_a_package_init_before_the_module_imported_from_it(tmp_path):
    """The cycle that once hid here: ``_cbor`` imports ``_generated.layout``, which runs
    ``_generated/__init__``, which imported the generated codec, which imports ``_cbor``."""
    graph = _tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/_cbor.py": "from ._generated.layout import MAX\n",
        "pkg/_generated/__init__.py": "from . import codec\n",
        "pkg/_generated/layout.py": "MAX = 1\n",
        "pkg/_generated/codec.py": "from .._cbor import encode\n",
    })  # fmt: skip
    assert graph["pkg._cbor"] == {"pkg._generated", "pkg._generated.layout"}
    assert cycles(graph) == [["pkg._cbor", "pkg._generated", "pkg._generated.codec"]]


def test_the_model_counts_type_checking_function_level_and_stub_imports_and_named_modules(tmp_path):
    graph = _tree(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/__init__.pyi": "from .c import C as C\n",
        "pkg/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n",
        "pkg/b.py": "def f():\n    from . import c\n",
        "pkg/c.py": "import importlib\nkernel = importlib.import_module('pkg.d')\n",
        "pkg/d.py": "",
    })  # fmt: skip
    assert graph["pkg.a"] == {"pkg.b"} and graph["pkg.b"] == {"pkg.c"} and graph["pkg.c"] == {"pkg.d"}
    assert graph["pkg"] == {"pkg.c"}  # the stub's import, and no edge back to itself


def test_the_model_runs_no_init_the_importer_is_inside(tmp_path):
    graph = _tree(tmp_path, {"pkg/__init__.py": "from .sub import x\n", "pkg/sub/__init__.py": "", "pkg/sub/x.py": "from .. import y\n", "pkg/y.py": ""})
    assert graph["pkg.sub.x"] == {"pkg.y"} and cycles(graph) == []


def test_layers_and_ranks_place_modules_by_their_package():
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
    assert layer_of("burnpack.records.module") == "records" and layer_of("burnpack.core.reader") == "core"
    assert layer_of("burnpack.errors") == "errors" and layer_of("burnpack.codec._cbor") == "codec"
    assert layer_of("burnpack.quant") == layer_of("burnpack") == "public" and layer_of("conformance.runner") is None
    assert rank_of("burnpack.core.source") < rank_of("burnpack.core.plan") < rank_of("burnpack.core.reader")
    assert rank_of("burnpack.core.reader") == rank_of("burnpack.core.writer")
    assert rank_of("burnpack.core.unknown") is None
    is_package = {"burnpack.core": True, "burnpack.core.reader": False, "burnpack.errors": False, "burnpack.interop.checkpoint.model": False}
    graph = {"burnpack.core.reader": {"burnpack.errors"}, "burnpack.interop.checkpoint.model": {"burnpack.core.reader"}, "burnpack.core": {"burnpack.core.reader"}}
    assert package_graph(graph, is_package) == {
        "burnpack.core": {"burnpack.errors"},
        "burnpack.interop.checkpoint": {"burnpack.core"},
        "burnpack.core/__init__": {"burnpack.core"},
    }


# --------------------------------------------------------------------------------------------
# Dependencies
# --------------------------------------------------------------------------------------------
def _third_party_imports(package: str) -> dict[str, set[str]]:
    """Top-level third-party module → where the modules of ``package`` import it."""
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
