"""The command line starts at once: it imports what a command needs when it needs it (counted in
modules, not timed; ``benchmarks/startup_bench.py`` times it), and Ctrl-C while it loads is one
line and exit status 130."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import burnpack


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    script = textwrap.dedent(code) + "\nimport sys\nloaded = sorted(sys.modules)\nimport json\nprint(json.dumps(loaded))\n"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True)
    return set(json.loads(result.stdout.splitlines()[-1]))


def _modules_after_inspect(path) -> set[str]:
    """The modules a fresh interpreter holds after ``burnpack inspect PATH``."""
    return _modules_after(
        f"""
        import contextlib, io
        from burnpack.cli.main import main
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["inspect", {str(path)!r}]) == 0
        """
    )


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.bpk"
    burnpack.save({"w": np.ones((2, 3), np.float32)}, path, metadata={"producer": "test"}, scalars={"epoch": 3})
    return path


def test_importing_the_command_line_imports_neither_numpy_nor_ml_dtypes_nor_torch():
    loaded = _modules_after("import burnpack.cli.main")
    assert not {"numpy", "ml_dtypes", "torch"} & loaded
    assert not any(m.startswith(("burnpack.core.reader", "burnpack.core.writer", "burnpack.records.", "burnpack.interop.converter")) for m in loaded - {"burnpack.cli.records"})


def test_version_imports_no_numpy():
    loaded = _modules_after(
        """
        import contextlib, io
        from burnpack.cli.main import main
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
            main(["--version"])
        """
    )
    assert "numpy" not in loaded and "ml_dtypes" not in loaded


def test_inspect_of_a_float32_pack_imports_neither_ml_dtypes_nor_the_writer(small):
    loaded = _modules_after_inspect(small)
    assert "numpy" in loaded
    assert not {"ml_dtypes", "torch", "burnpack.core.writer", "burnpack.core.atomic", "burnpack.interop.converter"} & loaded


# What only some commands or inputs need: remote reads (asyncio brings ssl and sockets), the
# table of formats (a .bpk is recognized by its first bytes), JSON, archives, scratch files, a
# web browser, hashing, the suggestions of a usage error, shutil (argparse's width).
NOT_AT_START = {"asyncio", "ssl", "socket", "json", "zipfile", "tempfile", "webbrowser", "hashlib", "difflib", "shutil",
                "burnpack.interop.registry", "burnpack.interop.formats", "burnpack.core.atomic"}  # fmt: skip


def test_inspect_of_a_small_pack_imports_only_what_it_uses(small):
    loaded = _modules_after_inspect(small)
    assert NOT_AT_START & loaded == set()


# What listing a pack of plain dtypes does not use: the QFloat codec and its compiled kernel,
# slicing, and dataclasses (a dataclass compiles its methods when its module is imported).
NOT_FOR_A_PLAIN_PACK = {"burnpack.quant", "burnpack.core.quant", "burnpack.core._cquant", "burnpack.core.slices", "dataclasses"}


def test_inspect_of_a_pack_without_qfloat_tensors_imports_no_qfloat_codec(small):
    loaded = _modules_after_inspect(small)
    assert NOT_FOR_A_PLAIN_PACK & loaded == set()


def test_inspect_of_a_qfloat_pack_imports_the_codec_it_needs(tmp_path):
    from burnpack.quant import parse_scheme, quantize

    path = tmp_path / "q.bpk"
    burnpack.save({"w": quantize(np.linspace(-1, 1, 64, dtype=np.float32), parse_scheme("q8s", block=32))}, path)
    loaded = _modules_after(
        f"""
        import contextlib, io
        from burnpack.cli.main import main
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["inspect", "--stats", {str(path)!r}]) == 0
        assert "QFloat(Q8S block 32 F32)" in out.getvalue(), out.getvalue()
        """
    )
    assert "burnpack.core.quant" in loaded


def test_version_imports_only_what_it_uses():
    loaded = _modules_after(
        """
        import contextlib, io
        from burnpack.cli.main import main
        with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
            main(["--version"])
        """
    )
    assert NOT_AT_START & loaded == set()


def test_a_start_builds_the_options_of_the_command_it_runs_only():
    from burnpack.cli.main import CommandParser, _parser

    parser = _parser(["-v", "inspect", "model.bpk"])
    commands = next(a for a in parser._actions if a.dest == "command")
    built = sorted(name for name, p in commands.choices.items() if isinstance(p, CommandParser))
    assert built == ["inspect"]
    assert [a.dest for a in commands._choices_actions] == list(commands.choices)  # every command still listed


def test_a_bf16_array_imports_ml_dtypes_when_it_is_made(tmp_path):
    import ml_dtypes

    path = tmp_path / "bf16.bpk"
    burnpack.save({"w": np.ones(3, ml_dtypes.bfloat16)}, path)
    loaded = _modules_after(
        f"""
        import burnpack
        with burnpack.load({str(path)!r}) as pack:
            names = pack.names
        import sys
        assert "ml_dtypes" not in sys.modules  # opening and listing make no array
        with burnpack.load({str(path)!r}) as pack:
            assert pack["w"].numpy().dtype.name == "bfloat16"
        """
    )
    assert "ml_dtypes" in loaded


def _interrupted_while_importing(module: str, *argv: str) -> subprocess.CompletedProcess[str]:
    """``python -m burnpack ARGV`` with Ctrl-C arriving as ``module`` is imported."""
    script = textwrap.dedent(
        f"""
        import runpy, sys

        class CtrlC:
            def find_spec(self, name, path=None, target=None):
                if name == {module!r}:
                    raise KeyboardInterrupt
                return None

        sys.meta_path.insert(0, CtrlC())
        sys.argv = ["burnpack", *{list(argv)!r}]
        runpy.run_module("burnpack", run_name="__main__", alter_sys=True)
        """
    )
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)


def test_ctrl_c_while_the_command_line_loads_exits_130_without_a_traceback():
    result = _interrupted_while_importing("burnpack.cli.common", "--version")
    assert (result.returncode, result.stderr) == (130, "burnpack: interrupted\n")


def test_ctrl_c_while_a_command_imports_its_modules_exits_130_without_a_traceback(small):
    result = _interrupted_while_importing("numpy", "inspect", str(small))
    assert (result.returncode, result.stderr) == (130, "burnpack: interrupted\n")
