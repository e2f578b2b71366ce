"""``burnpack-conformance`` as a command: version, progress, pipes, interruptions, extras, fuzz storage."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import burnpack
from conformance import cli

CONFORMANCE = str(Path(sys.executable).parent / "burnpack-conformance")


def test_version_is_printed(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out == f"burnpack-conformance {burnpack.__version__}\n"


def test_run_shows_n_of_m_progress_on_stderr(capsys):
    assert cli.main(["run", "--self-test", "--select", "dtype/f32*", "--jobs", "1", "--progress", "always", "--verbose"]) == 0
    err = capsys.readouterr().err.splitlines()
    total = int(err[0].split("/")[1].split("]")[0])
    assert err[0].startswith("[1/") and any(line.startswith(f"[{total}/{total}]") for line in err)
    assert err[-1] == f"vectors: done ({total})"


def test_a_closed_pipe_ends_quietly():
    result = subprocess.run(f"{CONFORMANCE} list | head -1", shell=True, capture_output=True, text=True)
    assert result.stdout.startswith("reader ") and result.stderr == ""


def test_ctrl_c_is_one_line_and_exit_130(capsys, monkeypatch):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_list", interrupted)
    assert cli.main(["list"]) == 130
    assert capsys.readouterr().err == "burnpack-conformance: interrupted\n"


def test_a_missing_fuzz_engine_names_what_to_install(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "atheris", None)
    assert cli.main(["fuzz", "--engine", "atheris", "--seconds", "1"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == "burnpack-conformance: atheris is not installed: pip install atheris (or use --engine hypothesis)"


def test_fuzz_keeps_hypothesis_storage_out_of_the_current_directory(tmp_path, monkeypatch):
    import hypothesis.configuration

    homes = []
    real = hypothesis.configuration.set_hypothesis_home_dir
    monkeypatch.setattr(hypothesis.configuration, "set_hypothesis_home_dir", lambda d: (homes.append(d), real(d)))
    monkeypatch.chdir(tmp_path)
    assert cli.main(["fuzz", "--engine", "hypothesis", "--seconds", "1", "--max-examples", "1", "--seed", "1"]) == 0
    assert list(tmp_path.iterdir()) == [] and homes[-1] is None  # restored afterwards
    assert homes[0] is not None and not Path(homes[0]).is_relative_to(tmp_path) and not Path(homes[0]).exists()
    assert cli.main(["fuzz", "--engine", "hypothesis", "--seconds", "1", "--max-examples", "1", "--seed", "1",
                     "--hypothesis-dir", str(tmp_path / "db")]) == 0  # fmt: skip
    assert homes[-2] == tmp_path / "db"


def test_a_missing_hypothesis_names_the_extra(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, "hypothesis", None)
    monkeypatch.setitem(sys.modules, "atheris", None)
    assert cli.main(["fuzz", "--seconds", "1"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == "burnpack-conformance: hypothesis is not installed: pip install 'burnpack[test]'"


def test_exclude_leaves_out_the_vectors_it_matches(capsys):
    assert cli.main(["list", "--select", "dtype/*", "--exclude", "dtype/f*", "--exclude", "*bool*"]) == 0
    ids = [line.split()[1] for line in capsys.readouterr().out.splitlines()]
    assert ids and all(i.startswith("dtype/") and not i.startswith("dtype/f") and "bool" not in i for i in ids)
    assert cli.main(["list", "--exclude", "*"]) == 0 and capsys.readouterr().out == ""


@pytest.mark.parametrize("command", ["run", "list"])
@pytest.mark.parametrize("flag", ["--select", "--exclude"])
def test_a_glob_that_matches_no_vector_is_a_usage_error(capsys, command, flag):
    extra = ["--self-test"] if command == "run" else []
    assert cli.main([command, *extra, "--select", "dtype/*", flag, "dtpye/*"]) == 2
    assert capsys.readouterr().err == f"burnpack-conformance: {flag} 'dtpye/*' matches no vector id or category\n"
