"""The command line reports a user's failures in one line and lets a bug keep its traceback.

A ``BurnpackError``, an ``OSError`` or a usage error is one line ``burnpack: PATH: Kind: message``;
any other exception raised inside a command (a ``ValueError`` or ``KeyError`` from burnpack's own
code) is a bug and is not dressed up as a problem with the input.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import burnpack
import burnpack.core.reader
from burnpack.cli.main import main
from burnpack.interop.safetensors import serialize_safetensors


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "model.bpk"
    burnpack.save({"w": np.ones((2, 3), np.float32)}, path)
    return path


def _load_raising(exc: BaseException):
    """A stand-in for the reader's ``_open`` (called by ``load``): patching ``load`` itself would
    leave the stand-in bound in any module first imported while it is in place."""

    def open_(*args, **kwargs):
        raise exc

    return open_


@pytest.mark.parametrize("internal", [ValueError("an internal check failed"), KeyError("internal-key")])
def test_an_internal_value_error_or_key_error_in_a_command_is_a_traceback_not_a_user_error(model, monkeypatch, capsys, internal):
    monkeypatch.setattr(burnpack.core.reader, "_open", _load_raising(internal))
    with pytest.raises(type(internal)) as info:
        main(["inspect", str(model)])
    assert info.value is internal
    assert "burnpack:" not in capsys.readouterr().err


def test_a_burnpack_error_raised_at_the_same_place_is_one_line(model, monkeypatch, capsys):
    monkeypatch.setattr(burnpack.core.reader, "_open", _load_raising(burnpack.ValidationError("bad tensor")))
    assert main(["inspect", str(model)]) == 1
    assert capsys.readouterr().err == f"burnpack: {model}: ValidationError: bad tensor\n"


def test_an_os_error_raised_at_the_same_place_is_one_line(model, monkeypatch, capsys):
    monkeypatch.setattr(burnpack.core.reader, "_open", _load_raising(PermissionError(13, "Permission denied", str(model))))
    assert main(["inspect", str(model)]) == 1
    assert capsys.readouterr().err == f"burnpack: {model}: PermissionError: permission denied\n"


def test_a_missing_optional_dependency_names_its_extra(model, monkeypatch, capsys):
    monkeypatch.setattr(burnpack.core.reader, "_open", _load_raising(ModuleNotFoundError("No module named 'torch'", name="torch")))
    assert main(["inspect", str(model)]) == 1
    assert capsys.readouterr().err == "burnpack: torch is not installed: pip install 'burnpack[torch]'\n"


@pytest.mark.parametrize("missing", ["fsspec", "aiohttp"])
@pytest.mark.parametrize("command", [["inspect"], ["validate"], ["dump"], ["view"], ["convert", "-q"], ["diff"]])
def test_a_url_without_the_remote_extra_is_one_line_naming_it(tmp_path, monkeypatch, capsys, missing, command):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setitem(sys.modules, missing, None)  # as an install without it: importing it fails
    argv = [*command, "http://127.0.0.1:9/model.bpk"] + {"convert": ["out.bpk"], "diff": ["http://127.0.0.1:9/b.bpk"]}.get(command[0], [])
    assert main(argv) == 1
    assert capsys.readouterr().err == f"burnpack: {missing} is not installed: pip install 'burnpack[remote]'\n"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("module", "install"),
    [("torch", "'burnpack[torch]'"), ("fsspec", "'burnpack[remote]'"), ("aiohttp", "'burnpack[remote]'"), ("s3fs", "'burnpack[remote]'"),
     ("safetensors", "'burnpack[crosscheck]'"), ("gcsfs", "gcsfs"), ("huggingface_hub", "huggingface_hub")],
)  # fmt: skip
def test_every_missing_optional_dependency_is_one_line_naming_what_installs_it(model, monkeypatch, capsys, module, install):
    try:  # as fsspec reports a backend it lacks: its own ImportError, raised from the missing module's
        raise ModuleNotFoundError(f"No module named {module!r}", name=module)
    except ImportError as exc:
        try:
            raise ImportError(f"Install {module} to access that storage") from exc
        except ImportError as wrapped:
            error = wrapped
    monkeypatch.setattr(burnpack.core.reader, "_open", _load_raising(error))
    assert main(["inspect", str(model)]) == 1
    assert capsys.readouterr().err == f"burnpack: {module} is not installed: pip install {install}\n"


def test_an_import_error_that_is_no_optional_dependency_is_a_traceback(model, monkeypatch, capsys):
    broken = ImportError("cannot import name 'helper' from 'burnpack.core.reader'", name="burnpack.core.reader")
    monkeypatch.setattr(burnpack.core.reader, "_open", _load_raising(broken))
    with pytest.raises(ImportError):
        main(["inspect", str(model)])
    assert "burnpack:" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--block", "32"], "UsageError: --block applies only with --quantize"),
        (["--quantize", "q8s", "--dequantize"], "UsageError: --quantize and --dequantize exclude each other"),
        (["--quantize", "q8s", "--block", "x"], "UsageError: --block 'x' is not N or NxM"),
        (["--adapter", "cast=i32"], "OptionError: cast target must be a float dtype (F64, F32, Flex32, F16 or BF16), got I32"),
        (["--adapter", "cast=f7"], "OptionError: unknown dtype 'f7'"),
    ],
)
def test_conflicting_or_malformed_convert_flags_are_usage_errors(model, tmp_path, capsys, flags, message):
    output = tmp_path / "out.bpk"
    assert main(["convert", str(model), str(output), *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"burnpack: {message}") and err.count("\n") == 1
    assert not output.exists()


def test_diff_of_a_file_the_safetensors_library_refuses_is_one_line_naming_the_library(tmp_path, capsys):
    pytest.importorskip("safetensors")
    good = tmp_path / "good.safetensors"
    good.write_bytes(serialize_safetensors({"w": np.ones(3, np.float32)}))
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(good.read_bytes()[:-4])
    assert main(["diff", str(cut), str(good)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"burnpack: {cut}: ConversionError: safetensors cannot read it: ") and err.count("\n") == 1
