"""The package's layers read top-down, and no module or package imports itself back through others.

``schema → errors → codec → core → records → interop → view → cli`` (``LAYERS``), and inside each
layer its ranks (``RANKS``): every import statement in the
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

LAYERS = (
    ("errors", ("burnpack.errors",)),
    ("codec", ("burnpack._kernels", "burnpack._cbor", "burnpack._cskip", "burnpack._generated")),
    ("core", ("burnpack._cquant", "burnpack.core", "burnpack.dtypes", "burnpack.remote", "burnpack.quant", "burnpack.torch", "burnpack._lazy")),
    ("records", ("burnpack.records",)),
    ("interop", ("burnpack.interop",)),
    ("view", ("burnpack.view",)),
    ("cli", ("burnpack.cli", "burnpack.__main__")),
)
"""Bottom to top, each with the modules and packages it holds: ``burnpack.errors``, every exception
class, is below all the code that raises them; the codec (the CBOR primitives and the code
generated from ``schema/``) below the container; ``burnpack.dtypes``, ``burnpack.remote``,
``burnpack.quant`` and ``burnpack.torch`` are public modules of the container kept beside the facade
(users import them by those names). The facade
``burnpack`` itself belongs to no layer: it imports the rest only on first use."""

RANKS: dict[str, tuple[tuple[str, ...], ...]] = {
    "errors": (("errors",),),
    "codec": (
        ("_generated.layout", "_generated.types", "_cskip", "_kernels"),  # the schema's facts and types; the compiled skip kernel; the kernels' rule
        ("_cbor",),  # the CBOR primitives
        ("_generated.codec", "_generated"),  # the generated codec, written in those primitives
    ),
    "core": (
        ("_cquant", "core._ctable"),  # the compiled kernels of dequantizing and of the table scan (optional)
        # support: bytes in and out, and the helpers every layer uses
        ("core", "_lazy", "core.paths", "core.source", "remote", "core.sidefile", "core.atomic",
         "core.patterns", "core.display", "core.progress"),
        # the data model: what a file holds
        ("core._cencode",),  # the compiled metadata encoder (optional)
        ("dtypes", "core.frameworks", "core.metadata", "core.legacy", "core.table", "core.tensor",
         "core.slices", "core.strict", "quant"),
        ("core.plan",),  # the one read plan
        ("core.reader", "core.writer"),
        ("core.dump", "core.diff", "core.spec", "torch"),  # tools over whole packs
    ),
    "records": (
        ("records._cast", "records._common", "records.tree", "records._torch", "records.state"),
        ("records.module", "records.optimizer", "records.scheduler"),  # one record each
        ("records.checkpoint", "records.detect"),  # over the three records
        ("records",),  # the lazy facade
    ),
    "interop": (
        # tensors in transit and Burn's transformations of them
        ("interop.limits", "interop.tensors", "interop._io", "interop.archive", "interop.remap", "interop.adapters",
         "interop.quantizing", "interop.layout_base", "interop.layout_leaf", "interop.layout_recurrent",
         "interop.layout_attention", "interop.layout_transformer", "interop.layouts"),  # modules' layouts, one registry
        ("interop.pytorch", "interop.safetensors", "interop.torch_live", "interop.dcp"),  # one format each
        ("interop.formats", "interop.sharded", "interop.registry", "interop.crosscheck",
         "interop.inputs"),  # every format, by name, extension or content
        ("interop.converter", "interop.loader"),  # conversions
        ("interop.checkpoint.state", "interop.checkpoint.model", "interop.checkpoint.optimizer",
         "interop.checkpoint.scheduler", "interop.checkpoint.stored", "interop.checkpoint"),  # training checkpoints
        ("interop",),  # the lazy facade
    ),
    "view": (
        ("view._cstats",),  # the compiled statistics kernel (optional)
        ("view.page", "view.stats"),
        ("view.report",),
        ("view",),
    ),
    "cli": (
        ("cli.common", "cli.batch"),  # the error style, the output rule, the batch protocol
        ("cli.diff", "cli.inspect", "cli.pack", "cli.view", "cli.records", "cli.interop"),  # one command each
        ("cli.files",),  # the commands over many files
        ("cli.main", "cli", "__main__"),
    ),
}
"""Inside a layer, a module imports only modules of its own rank or below (no circles: see
``test_no_module_imports_itself_back_through_others``). Names are relative to ``burnpack``."""


def layer_of(module: str) -> str | None:
    """The layer of a burnpack module (None: the package facade or another package)."""
    for name, members in LAYERS:
        if any(module == member or module.startswith(member + ".") for member in members):
            return name
    return None


def rank_of(module: str) -> int | None:
    """The rank of a burnpack module inside its layer (None: a layer without ranks, or unranked)."""
    layer = layer_of(module)
    short = module.removeprefix("burnpack.")
    for rank, members in enumerate(RANKS.get(layer or "", ())):
        if short in members:
            return rank
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


def extensions() -> set[str]:
    """Dotted names of the C extension modules, by their sources (``.c``): they import none of ours."""
    return {".".join(path.relative_to(ROOT).with_suffix("").parts) for package in PACKAGES for path in (ROOT / package).rglob("*.c")}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(sub) for sub in ast.walk(node))
    return skipped


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom, known: set[str]) -> list[str]:
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
    graph: dict[str, set[str]] = {name: set() for name in extensions()}
    importable = set(known) | set(graph)
    for module, (path, is_package) in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = _type_checking_nodes(tree)
        deps: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skipped:
                for target in _targets(module, is_package, node, importable):
                    while target not in importable and "." in target:
                        target = target.rsplit(".", 1)[0]
                    if target in importable and target != module:
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


def package_of(module: str, is_package: bool) -> str:
    """The unit of the package-level check: a module's folder. A module directly in ``burnpack/``
    is a unit of its own, except those of the codec, one unit (``_cbor`` is its hand-written half,
    beside ``_generated/`` because the generator owns that folder), and the core's public modules
    (``quant``, ``torch``, and ``_lazy``), which belong to ``burnpack.core``."""
    if layer_of(module) == "codec":
        return "codec"
    if layer_of(module) == "core" and module.count(".") == 1:
        return "burnpack.core"
    if is_package or module.count(".") <= 1:
        return module
    return module.rsplit(".", 1)[0]


def test_no_package_imports_itself_back_through_others(graph):
    is_package = {module: package for module, (_, package) in modules().items()} | dict.fromkeys(extensions(), False)
    packages: dict[str, set[str]] = {}
    for module, deps in graph.items():
        own = package_of(module, is_package[module])
        packages.setdefault(own, set()).update({package_of(dep, is_package[dep]) for dep in deps} - {own})
    assert cycles(packages) == []


def test_no_layer_imports_a_higher_one(graph):
    order = [name for name, _ in LAYERS]
    upward = []
    for module, deps in graph.items():
        own = layer_of(module)
        if own is None:
            continue
        for dep in deps:
            theirs = layer_of(dep)
            if theirs is not None and order.index(theirs) > order.index(own):
                upward.append(f"{module} ({own}) imports {dep} ({theirs})")
    assert upward == []


def test_every_burnpack_module_but_the_facade_has_a_layer_and_a_rank_in_it(graph):
    unplaced = [m for m in graph if m.startswith("burnpack.") and (layer_of(m) is None or rank_of(m) is None)]
    assert unplaced == []


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


def test_the_generated_code_imports_nothing_hand_written_but_its_cbor_primitives_and_the_errors(graph):
    for module, deps in graph.items():
        if layer_of(module) == "codec":
            assert {dep for dep in deps if layer_of(dep) not in ("codec", "errors")} == set(), module


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


def test_the_check_finds_a_cycle_and_places_modules_in_layers_and_ranks():
    assert cycles({"a": {"b"}, "b": {"a"}, "c": set()}) == [["a", "b"]]
    assert layer_of("burnpack.records.module") == "records" and layer_of("burnpack.core.reader") == "core"
    assert layer_of("burnpack.errors") == "errors" and layer_of("burnpack._cbor") == "codec"
    assert layer_of("burnpack._generated.codec") == "codec" and layer_of("burnpack.cli.interop") == "cli"
    assert layer_of("burnpack.quant") == "core" and layer_of("burnpack") is None
    assert layer_of("burnpack.view.stats") == "view" and layer_of("burnpack.cli") == "cli"
    assert rank_of("burnpack.core.source") < rank_of("burnpack.core.plan") < rank_of("burnpack.core.reader")
    assert rank_of("burnpack.core.reader") == rank_of("burnpack.core.writer")
    assert rank_of("burnpack.core.unknown") is None
    assert package_of("burnpack.core.reader", False) == "burnpack.core" and package_of("burnpack.quant", False) == "burnpack.core"
    assert package_of("burnpack._cbor", False) == package_of("burnpack._generated.codec", False) == "codec"


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
