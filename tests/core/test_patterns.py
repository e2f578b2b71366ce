"""User regular expressions match in linear time (RE2, as Burn's Rust regex crate), with Burn's
syntax and the Python spellings that mean one thing."""

from __future__ import annotations

import contextlib
import signal

import numpy as np
import pytest

from burnpack.interop.converter import convert
from burnpack.interop.remap import KeyRemapper, PathFilter
from burnpack.core.patterns import compile_pattern
from burnpack.errors import InvalidPattern

LONG_NAME = ".".join(["layer"] * 700) + ".bias"  # 4 KB: a backtracking engine needs minutes for the patterns below


@contextlib.contextmanager
def cpu_budget(seconds: float):
    """Stop a runaway match after ``seconds`` of CPU (a linear one needs a millionth of that)."""

    def stop(signum, frame):
        raise AssertionError(f"still matching after {seconds} s of CPU: the engine backtracks")

    previous = signal.signal(signal.SIGPROF, stop)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def test_a_filter_that_backtracks_in_python_matches_a_long_name_in_linear_time():
    with cpu_budget(20):
        assert PathFilter(regexes=[r"(.*)\.(.*)\.bias"]).matches(LONG_NAME)
        assert not PathFilter(regexes=[r"(.*)\.(.*)\.weight$"]).matches(LONG_NAME)


def test_a_remap_rule_that_backtracks_in_python_rewrites_a_long_name_in_linear_time():
    with cpu_budget(20):
        assert KeyRemapper([(r"^(.*)\.(.*)\.bias$", "$2.b")]).remap(LONG_NAME) == "layer.b"


def test_convert_filters_a_long_name_in_linear_time(tmp_path):
    with cpu_budget(20):
        convert({LONG_NAME: np.zeros(2, np.float32), "fc.weight": np.ones(2, np.float32)}, tmp_path / "o.safetensors", filter=r"(.*)\.(.*)\.bias")
    from safetensors.numpy import load_file

    assert list(load_file(tmp_path / "o.safetensors")) == [LONG_NAME]


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (r"(a)\1", "backreferences are not supported"),
        (r"(?P<x>a)(?P=x)", "backreferences are not supported"),
        (r"a(?=b)", "lookaround"),
        (r"(?<!a)b", "lookaround"),
    ],
)
def test_what_only_a_backtracking_engine_can_match_is_refused_naming_why(pattern, reason):
    with pytest.raises(InvalidPattern, match=reason) as caught:
        compile_pattern(pattern)
    assert isinstance(caught.value, ValueError) and caught.value.pattern == pattern


def test_python_and_rust_named_groups_both_work():
    assert KeyRemapper([(r"(?P<a>\w+)\.w$", r"\g<a>.x")]).remap("fc.w") == "fc.x"
    assert KeyRemapper([(r"(?<a>\w+)\.w$", "${a}.x")]).remap("fc.w") == "fc.x"


def test_pythons_end_of_text_escape_is_read_as_end_of_text():
    regex = compile_pattern(r"bias\Z")
    assert regex.search("fc.bias") and not regex.search("fc.bias\n")


def test_a_python_replacement_naming_a_missing_group_is_refused_when_the_rule_is_made():
    with pytest.raises(ValueError, match="invalid replacement"):
        KeyRemapper([("(a)", r"\g<nope>")])


@pytest.mark.parametrize("option", ["--filter", "--exclude", "--remap"])
def test_a_pattern_byte_that_is_not_utf8_is_an_invalid_pattern_not_a_traceback(tmp_path, option):
    # The command line receives such a byte as a lone surrogate (Python's surrogateescape).
    import os
    import subprocess
    import sys

    import burnpack

    burnpack.save({"fc.weight": np.ones(2, np.float32)}, tmp_path / "m.bpk")
    pattern = os.fsencode("fc\udcff") + (b"=x" if option == "--remap" else b"")
    done = subprocess.run(
        [sys.executable, "-m", "burnpack", "convert", os.fsencode(tmp_path / "m.bpk"), os.fsencode(tmp_path / "o.bpk"), option.encode(), pattern],
        capture_output=True,
    )
    assert done.returncode != 0 and b"Traceback" not in done.stderr
    assert b"is not text (a lone surrogate" in done.stderr


def test_a_replacement_that_is_not_text_is_refused_when_the_rule_is_made():
    with pytest.raises(InvalidPattern, match="invalid remap replacement") as caught:
        KeyRemapper([("fc", "x\udcff")])
    assert caught.value.pattern == "x\udcff"
