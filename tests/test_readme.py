"""Every code block of README.md and of the pages under docs/ runs, so the documentation cannot
drift from the code; the README links every page, and every link between them resolves.

How blocks are run, page by page (follow this when you add one):

* ```` ```python ```` — run as a script by a fresh interpreter (this venv's), in a new empty
  scratch directory: the block creates whatever it loads. It passes when it exits 0.
* ```` ```console ```` — a shell session: each line starting with ``$ `` is a command (run by
  bash in the scratch directory, this venv's ``bin`` first on ``PATH``, so ``burnpack`` is the
  checkout's); the lines after it, up to the next ``$ ``, are its expected output (stdout and
  stderr together), compared line by line after stripping trailing spaces. In an expected line,
  ``...`` matches any text; a line that is only ``...`` matches any number of lines (timings,
  paths). A command's exit status does not matter unless the block shows nothing after it —
  then it must succeed.
* ```` ```sh ```` / ```` ```bash ```` — run by bash in the scratch directory; must exit 0.
* Any other fence (``text``, none) is not code and is not run.
* ``<!-- readme-test: skip REASON -->`` on the line before a block skips it (a reason is
  required: e.g. the set-up commands, which ``.ci/run`` runs itself).
* ``<!-- readme-test: same-dir -->`` on the line before a block runs it in the scratch directory
  of the block before it on the same page, e.g. a console session showing what the Python block
  above wrote (a page's first block starts afresh).
* ``<!-- readme-test: needs MODULE -->`` skips the block (and the same-dir blocks after it) when
  MODULE cannot be imported — for optional extras such as ``torch``; CI installs them all.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
RUN = {"python": "python", "py": "python", "console": "console", "sh": "sh", "bash": "sh", "shell": "sh"}
MARKER = re.compile(r"<!--\s*readme-test:\s*(?P<what>skip|same-dir|needs)\b\s*(?P<reason>.*?)\s*-->")
TIMEOUT = 300


@dataclass
class Block:
    page: str  # the file, relative to the repository: README.md, docs/….md
    line: int  # 1-based line of the opening fence
    kind: str  # python, console, sh
    text: str
    skip: str | None = None  # the reason
    same_dir: bool = False
    needs: str | None = None  # a module the block imports

    @property
    def where(self) -> str:
        return f"{self.page} line {self.line}"


def readme_blocks(text: str, page: str = "README.md") -> list[Block]:
    """The runnable fenced blocks, with their markers."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^(`{3,})\s*([\w+-]*)", lines[i])
        if not fence:
            i += 1
            continue
        ticks, lang = fence.group(1), fence.group(2).lower()
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith(ticks) and not lines[j].strip(ticks)), len(lines))
        marker = MARKER.search(lines[i - 1]) if i > 0 else None
        if lang in RUN:
            block = Block(page, i + 1, RUN[lang], "\n".join(lines[i + 1 : end]) + "\n")
            if marker and marker["what"] == "skip":
                block.skip = marker["reason"]
            block.same_dir = bool(marker and marker["what"] == "same-dir")
            block.needs = marker["reason"] if marker and marker["what"] == "needs" else None
            blocks.append(block)
        i = end + 1
    return blocks


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("PYTHONPATH", None)
    env["COLUMNS"] = "120"
    return env


def _matches(expected: list[str], actual: list[str]) -> bool:
    """Expected lines against actual ones; ``...`` in a line is any text, alone any lines."""
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head == "...":
        return any(_matches(rest, actual[k:]) for k in range(len(actual) + 1))
    if not actual:
        return False
    pattern = ".*".join(re.escape(part) for part in head.split("..."))
    return re.fullmatch(pattern, actual[0]) is not None and _matches(rest, actual[1:])


def _sessions(text: str) -> list[tuple[str, list[str]]]:
    """A console block as (command, expected output lines)."""
    out: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], []))
        elif out:
            out[-1][1].append(line.rstrip())
    return out


def run_block(block: Block, directory: Path) -> None:
    env = _environment()
    if block.kind == "python":
        script = directory / f"readme_block_{block.line}.py"
        script.write_text(block.text, encoding="utf-8")
        result = subprocess.run([sys.executable, script.name], cwd=directory, env=env, capture_output=True, text=True, timeout=TIMEOUT)
        script.unlink()
        assert result.returncode == 0, f"{block.where}: the Python block failed:\n{result.stderr}"
        return
    if block.kind == "sh":
        result = subprocess.run(["bash", "-e", "-c", block.text], cwd=directory, env=env, capture_output=True, text=True, timeout=TIMEOUT)
        assert result.returncode == 0, f"{block.where}: the sh block failed:\n{result.stdout}{result.stderr}"
        return
    for command, expected in _sessions(block.text):
        while expected and not expected[-1]:
            expected.pop()
        result = subprocess.run(["bash", "-c", command], cwd=directory, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, timeout=TIMEOUT)  # fmt: skip
        actual = [line.rstrip() for line in result.stdout.rstrip("\n").splitlines()] if result.stdout.strip() else []
        if not expected:
            assert result.returncode == 0, f"{block.where}: `{command}` failed:\n{result.stdout}"
        assert _matches(expected, actual), (
            f"{block.where}: `{command}` printed\n" + "\n".join(actual) + f"\n\nbut {block.page} shows\n" + "\n".join(expected)
        )


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


BLOCKS = [block for page in PAGES for block in readme_blocks(page.read_text(encoding="utf-8"), _name(page))]


def test_the_pages_have_runnable_blocks_and_every_skip_gives_a_reason():
    assert any(b.kind == "python" for b in BLOCKS if b.page == "README.md")
    assert any(b.kind == "python" for b in BLOCKS) and any(b.kind == "console" for b in BLOCKS)
    assert all(b.skip for b in BLOCKS if b.skip is not None), "a readme-test: skip marker needs a reason"


@pytest.mark.parametrize("page", [_name(p) for p in PAGES])
def test_a_page_does_not_continue_another_pages_scratch_directory(page):
    blocks = [b for b in BLOCKS if b.page == page]
    assert not blocks or not blocks[0].same_dir, f"{blocks[0].where}: the first block of a page cannot be same-dir"


@pytest.fixture(scope="module")
def scratch_dirs(tmp_path_factory):
    return {}


@pytest.mark.parametrize("index", range(len(BLOCKS)), ids=[f"{b.page.replace('/', '-')}-line{b.line}-{b.kind}" for b in BLOCKS])
def test_readme_block_runs_as_shown(index, scratch_dirs, tmp_path_factory):
    block = BLOCKS[index]
    if block.skip:
        pytest.skip(f"{block.where}: {block.skip}")
    start = max(i for i in range(index + 1) if not BLOCKS[i].same_dir)
    for needed in {b.needs for b in BLOCKS[start : index + 1] if b.needs}:
        pytest.importorskip(needed, reason=f"{block.where} needs {needed}")
    if block.same_dir:
        if index - 1 not in scratch_dirs:  # run alone (-k): replay the blocks it continues
            start = max(i for i in range(index) if not BLOCKS[i].same_dir)
            scratch_dirs[index - 1] = tmp_path_factory.mktemp(f"readme-{BLOCKS[start].line}")
            for i in range(start, index):
                run_block(BLOCKS[i], scratch_dirs[index - 1])
        directory = scratch_dirs[index - 1]
    else:
        directory = tmp_path_factory.mktemp(f"readme-{block.line}")
    run_block(block, directory)
    scratch_dirs[index] = directory


def test_the_matcher_understands_ellipses():
    assert _matches(["a ... c", "..."], ["a b c", "x", "y"])
    assert not _matches(["a ... c"], ["a b d"])
    assert _matches(["x", "...", "z"], ["x", "z"])
    assert readme_blocks("<!-- readme-test: skip needs a GPU -->\n```python\nx\n```\n")[0].skip == "needs a GPU"


# ---------------------------------------------------------------------------- links between the pages
LINK = re.compile(r"!?\[[^\]]*\]\((?P<target>[^)\s]+)\)")


def _unfenced(text: str) -> str:
    return re.sub(r"^(`{3,}).*?^\1\s*$", "", text, flags=re.S | re.M)


def _links(page: Path) -> list[str]:
    """The relative link targets of a page (web addresses left out), outside code."""
    prose = re.sub(r"`[^`\n]*`", "", _unfenced(page.read_text(encoding="utf-8")))
    targets = [m["target"] for m in LINK.finditer(prose)]
    return [t for t in targets if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]


def _anchors(page: Path) -> set[str]:
    """The heading anchors GitHub gives a page: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ (.*)$", _unfenced(page.read_text(encoding="utf-8")), re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_every_relative_link_of_a_page_names_a_file_and_heading_that_exist(page):
    for target in _links(page):
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{_name(page)}: {target} does not exist"
        if anchor and linked.suffix == ".md":
            assert anchor in _anchors(linked), f"{_name(page)}: {target}: no such heading"


def test_the_readme_links_every_docs_page():
    linked = {(ROOT / target.partition("#")[0]).resolve() for target in _links(README)}
    assert [_name(p) for p in PAGES[1:] if p.resolve() not in linked] == []


def test_docs_holds_only_pages_and_what_they_show():
    shown = {(page.parent / target.partition("#")[0]).resolve() for page in PAGES for target in _links(page)}
    # the site's build hooks, which mkdocs.yml names (``hooks:`` entries)
    shown |= {(ROOT / hook).resolve() for hook in re.findall(r"^  - (docs/\S+\.py)$", (ROOT / "mkdocs.yml").read_text(), re.M)}
    stray = [_name(f) for f in sorted(DOCS.rglob("*")) if f.is_file() and f.resolve() not in shown and "__pycache__" not in f.parts]
    assert stray == [], "docs/ holds only the pages the README links, the files a page shows and mkdocs.yml's hooks"


# -- what the examples may import --------------------------------------------------------------------
def _distribution_modules() -> dict[str, str]:
    """Installed top-level module → its distribution's normalized name."""
    from importlib.metadata import packages_distributions

    return {module: re.sub(r"[-_.]+", "-", dists[0]).lower() for module, dists in packages_distributions().items()}


def _declared() -> tuple[set[str], dict[str, set[str]]]:
    """The normalized distribution names of ``dependencies`` and of each user-facing extra
    (``[test]`` is the test suite's, not an example's)."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]

    def names(requirements: list[str]) -> set[str]:
        return {re.sub(r"[-_.]+", "-", re.match(r"[A-Za-z0-9_.-]+", r)[0]).lower() for r in requirements}  # type: ignore[index]

    extras = {extra: names(reqs) for extra, reqs in project["optional-dependencies"].items() if extra != "test"}
    return names(project["dependencies"]), extras


def _imports(block: Block) -> set[str]:
    """The top-level modules a block imports (its Python, or the ``python -c`` of its commands)."""
    code = block.text if block.kind == "python" else "\n".join(re.findall(r"python3? -c \"([^\"]*)\"", block.text))
    found = set()
    for m in re.finditer(r"(?:^|;)\s*(?:from\s+([\w.]+)\s+import|import\s+([\w., ]+))", code, re.M):
        modules = [m[1]] if m[1] else [n.strip().split(" as ")[0] for n in m[2].split(",")]
        found |= {name.split(".")[0] for name in modules if name.strip()}
    return found - set(sys.stdlib_module_names) - {"burnpack"}


def test_examples_import_only_declared_dependencies_and_mark_an_extras():
    core, extras = _declared()
    distribution = _distribution_modules()
    wrong = []
    for block in BLOCKS:
        for module in sorted(_imports(block)):
            dist = distribution.get(module, module)
            extra = next((name for name, dists in extras.items() if dist in dists), None)
            if dist in core:
                continue
            if extra is None:
                wrong.append(f"{block.where}: imports {module}, which no dependency or extra of burnpack installs")
            elif block.needs != module:
                wrong.append(f"{block.where}: imports {module} (the [{extra}] extra) without <!-- readme-test: needs {module} -->")
    assert wrong == []


def test_the_api_page_names_every_public_name_of_burnpack():
    import burnpack

    page = (DOCS / "api.md").read_text()
    assert [name for name in sorted(burnpack.__all__) if not re.search(rf"`[^`]*\b{name}\b[^`]*`", page)] == []
