"""The command line reports a user's failures in one line and lets a bug keep its traceback.

A ``BurnpackError``, an ``OSError`` or a usage error is one line ``burnpack: PATH: Kind: message``;
any other exception raised inside a command (a ``ValueError`` or ``KeyError`` from burnpack's own
code) is a bug and is not dressed up as a problem with the input.
"""

from __future__ import annotations

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
    assert err.startswith(f"burnpack: ConversionError: {cut}: safetensors cannot read it: ") and err.count("\n") == 1
