"""The documentation site builds strictly, shows what it promises, and its docstring check
finds every kind of gap (docs/hooks.py, mkdocs.yml; docs/install.md says how it is checked)."""

from __future__ import annotations

import html
import inspect
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import burnpack

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs"))
hooks = pytest.importorskip("hooks", reason="the docs extra is not installed (pip install -e '.[docs]')")
import griffe  # noqa: E402 - the docs extra, checked just above


def mkdocs(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600, env={"NO_MKDOCS_2_WARNING": "1", "PATH": str(Path(sys.executable).parent)})  # fmt: skip


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    result = mkdocs("--site-dir", str(out))
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return out


def text_of(page: Path) -> str:
    """The page's text, as it reads (markup removed; highlighted code joined up again)."""
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))


def test_the_site_builds_in_strict_mode_without_a_warning(site: Path) -> None:
    assert (site / "index.html").is_file() and (site / "reference" / "reading" / "index.html").is_file()


def test_the_reference_documents_every_keyword_of_load(site: Path) -> None:
    raw = (site / "reference" / "reading" / "index.html").read_text(encoding="utf-8")
    load = raw[raw.index('id="burnpack.load"') : raw.index('id="burnpack.Pack"')]
    for name in inspect.signature(burnpack.load).parameters:  # a row of the Parameters table each
        assert re.search(rf"<code>{name}</code>", load), name
    assert "Returns:" in text_of(site / "reference" / "reading" / "index.html") and "Raises:" in load


@pytest.mark.parametrize("module", ["quant", "dtypes", "remote", "torch"])
def test_a_public_path_that_re_exports_a_module_documents_each_of_its_names(site: Path, module: str) -> None:
    raw = (site / "reference" / module / "index.html").read_text(encoding="utf-8")
    for name in getattr(burnpack, module).__all__:  # ``burnpack.torch.load_file``, not the module it lives in
        assert f'id="burnpack.{module}.{name}"' in raw, name


def test_the_home_page_is_the_readme_with_the_site_s_links(site: Path) -> None:
    home = (site / "index.html").read_text(encoding="utf-8")
    assert "The Python reference implementation of" in html.unescape(home)
    assert 'href="install/' in home and 'href="api/' in home and "docs/" not in re.findall(r'href="([^"]+)"', home)


def test_the_view_screenshots_and_the_gallery_are_on_the_site(site: Path) -> None:
    view = (site / "view" / "index.html").read_text(encoding="utf-8")
    for shot in ("view-overview.png", "view-tensor.png", "view-checkpoint.png", "view-diff.png"):
        assert f'src="../{shot}"' in view and (site / shot).is_file()
    gallery = text_of(site / "gallery" / "index.html")
    assert "burnpack inspect model.bpk" in gallery and r"name\twith\x1b[31m escapes\u202e" in gallery


def test_a_list_after_a_paragraph_is_read_as_github_reads_it() -> None:
    assert hooks.github_lists("Text:\n- one\n- two\n```\nx\n- not a list\n```\n") == "Text:\n\n- one\n- two\n```\nx\n- not a list\n```\n"


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nSee [the missing page](missing.md).\n", encoding="utf-8")
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    config = config[: config.index("hooks:")] + config[config.index("validation:") : config.index("theme:")]
    (tmp_path / "mkdocs.yml").write_text(config + "nav:\n  - Home: index.md\n", encoding="utf-8")
    result = mkdocs(cwd=tmp_path)
    assert result.returncode != 0 and "missing.md" in result.stdout + result.stderr


# ----------------------------------------------------------------------------------- the docstring check
SAMPLE = '''
"""A package the check is tried on."""

__all__ = ["Good", "bare", "no_args", "no_returns", "no_raises", "wrong_arg", "Undocumented", "Config", "sphinx"]


class Good:
    """Documented.

    Args:
        size: How big.
    """

    def __init__(self, size: int) -> None:
        self.size = size

    def grow(self, by: int) -> int:
        """Grow.

        Args:
            by: How much.

        Returns:
            The new size.

        Raises:
            ValueError: ``by`` is negative.
        """
        if by < 0:
            raise ValueError(by)
        return self.size + by

    def _private(self) -> None:
        pass


def bare() -> None:
    pass


def no_args(x: int) -> None:
    """Takes x."""


def no_returns() -> int:
    """Gives a number."""
    return 1


def no_raises(x: int) -> None:
    """Checks x.

    Args:
        x: A number.
    """
    if x < 0:
        raise KeyError(x)


def wrong_arg(x: int) -> None:
    """Takes x.

    Args:
        x: A number.
        y: Not a parameter.
    """


def sphinx() -> None:
    """Like :func:`bare`."""


class Undocumented:
    def method(self) -> None:
        """A method."""


class Config:
    """A configuration.

    Args:
        name: Its name.
    """

    def __init__(self, name: str, level: int) -> None:
        self.name = name
'''


def test_the_docstring_check_finds_each_kind_of_gap(tmp_path: Path) -> None:
    package = tmp_path / "sample_pkg"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent(SAMPLE), encoding="utf-8")
    loaded = griffe.load("sample_pkg", search_paths=[str(tmp_path)])
    gaps = sorted(str(g) for g in hooks.check(loaded, ["sample_pkg"]))
    assert gaps == [
        "sample_pkg.Config: constructor parameters not under Args: level",
        "sample_pkg.Undocumented: no docstring",
        "sample_pkg.bare: no docstring",
        "sample_pkg.no_args: parameters not under Args: x",
        "sample_pkg.no_raises: raises KeyError, not under Raises",
        "sample_pkg.no_returns: returns int, but has no Returns section",
        "sample_pkg.sphinx: a Sphinx role, :func:`bare`, in a Google-style docstring: write ``name``",
        "sample_pkg.wrong_arg: Args names what the signature does not take: y",
    ]


def test_every_name_burnpack_exports_is_on_a_reference_page() -> None:
    package = hooks.load_package()
    assert hooks.unreferenced(package, hooks.reference_names(ROOT / "docs")) == []
