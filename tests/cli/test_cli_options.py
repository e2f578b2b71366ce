"""The command line's options: written in full or refused with the closest spelling, ``-q`` /
``--json`` / ``--progress`` the same in every command, help for every argument, and the summary
line of a writing command naming the file it wrote (after Burn's extension rule)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

import burnpack
from burnpack.cli.main import _parser, main


def _commands() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser, by the words that call it (``checkpoint inspect`` too)."""
    out: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            out[" ".join(words)] = parser
        for sub in subs:
            for name, child in sub.choices.items():
                walk(child, (*words, name))

    walk(_parser(), ())
    return out


COMMANDS = _commands()
WRITING = ("repack", "pack", "convert", "convert-checkpoint")


def _long_options(parser: argparse.ArgumentParser) -> list[str]:
    return [o for a in parser._actions for o in a.option_strings if o.startswith("--") and o != "--help"]


def _positionals(parser: argparse.ArgumentParser) -> list[str]:
    return ["x" for a in parser._actions if not a.option_strings and a.nargs != "?"]


def _usage_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_no_option_is_taken_from_its_abbreviation(command, capsys):
    parser = COMMANDS[command]
    options = _long_options(parser)
    for option in options:
        short = option[:-1]
        if short in options or len(short) < 3:
            continue
        err = _usage_error([*command.split(), short, *_positionals(parser)], capsys)
        assert f"unrecognized arguments: {short}" in err, (command, option)


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["inspect", "--tre", "m.bpk"], "unrecognized arguments: --tre (did you mean --tree?)"),
        (["convert", "a.bpk", "b.bpk", "--overwrit"], "unrecognized arguments: --overwrit (did you mean --overwrite?)"),
        (["checkpoint", "inspect", "--jsn", "dir"], "unrecognized arguments: --jsn (did you mean --json?)"),
        (["repack", "a.bpk", "b.bpk", "--progres=never"], "(did you mean --progress?)"),
        (["inpsect", "m.bpk"], "invalid choice: 'inpsect'"),
    ],
)
def test_a_mistyped_option_or_command_is_answered_with_the_closest_one(argv, hint, capsys):
    err = _usage_error(argv, capsys)
    assert hint in err
    if argv[0] == "inpsect":
        assert err.rstrip().endswith("(did you mean 'inspect'?)")
    else:  # the usage shown is the command's own
        assert f"usage: burnpack {argv[0]}" in err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_quiet_and_json_are_in_every_command_with_one_meaning(command, capsys):
    parser = COMMANDS[command]
    actions = {o: a for a in parser._actions for o in a.option_strings}
    quiet = {c: {o: a for a in p._actions for o in a.option_strings}["--quiet"].help for c, p in COMMANDS.items()}
    assert actions["-q"] is actions["--quiet"] and len(set(quiet.values())) == 1
    assert "--json" in actions
    err = _usage_error([*command.split(), "-q", "--json", *_positionals(parser)], capsys)
    assert "not allowed with argument" in err


READING = ("inspect", "dump", "validate", "diff", "view")
"""The commands that read tensor bytes in bulk (inspect --stats, validate --deep, view without --no-stats)."""


def test_progress_is_in_every_command_that_reads_or_writes_tensors_with_one_meaning():
    progress = {}
    for command in (*WRITING, *READING):
        action = next(a for a in COMMANDS[command]._actions if "--progress" in a.option_strings)
        progress[command] = (action.help, tuple(action.choices), action.default)
    assert len(set(progress.values())) == 1, progress


def test_the_commands_without_progress_read_no_tensor_bytes_and_the_docs_say_so():
    assert {c for c, p in COMMANDS.items() if "--progress" not in _long_options(p)} == {"checkpoint inspect"}
    docs = " ".join((Path(__file__).parents[2] / "docs" / "cli.md").read_text().split())
    assert "`checkpoint inspect` has no `--progress`" in docs


@pytest.fixture
def big_enough(tmp_path, monkeypatch) -> dict[str, str]:
    """Two packs of 4 KiB of tensor data each, one value apart, and a checkpoint directory of two epochs."""
    monkeypatch.chdir(tmp_path)
    weights = np.arange(1024, dtype=np.float32)
    burnpack.save({"w": weights}, "a.bpk")
    burnpack.save({"w": weights + (weights == 7)}, "b.bpk")
    from burnpack.records import Checkpoints, ModuleRecord

    for epoch in (1, 2):
        Checkpoints.at("run").save_epoch(epoch, model=ModuleRecord.from_module({"w": weights * epoch}))
    return {"a": "a.bpk", "b": "b.bpk", "run": "run"}


@pytest.mark.parametrize(
    ("argv", "lines"),
    [
        (["inspect", "--stats", "a.bpk"], ["statistics: done (4.0 KiB)"]),
        (["dump", "a.bpk"], ["hashing: done (4.0 KiB)"]),
        (["validate", "--deep", "a.bpk"], ["checking: done (4.0 KiB)"]),
        (["diff", "a.bpk", "b.bpk"], ["comparing: done (8.0 KiB)"]),
        (["view", "a.bpk", "-o", "a.html"], ["statistics: done (4.0 KiB)"]),
        (["view", "a.bpk", "b.bpk", "-o", "ab.html"], ["comparing: done (8.0 KiB)", "norms: done (0 B)", "statistics: done (4.0 KiB)"]),
        (["view", "run", "-o", "run.html"], ["comparing epochs: done (8.0 KiB)", "statistics: done (4.0 KiB)"]),
    ],
)
def test_progress_always_shows_the_bytes_a_reading_command_reads(big_enough, capsys, argv, lines):
    assert main([argv[0], "--progress", "always", *argv[1:]]) in (0, 1)  # diff: 1, the packs differ
    shown = [line for line in capsys.readouterr().err.splitlines() if ": done (" in line]
    assert shown == lines


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["inspect", "a.bpk"], "--progress changes nothing here: inspect reads tensor bytes only with --stats"),
        (["validate", "a.bpk"], "--progress changes nothing here: validate reads tensor bytes only with --deep"),
        (["view", "--no-stats", "a.bpk", "-o", "x.html"], "--progress changes nothing here: view --no-stats reads no tensor bytes"),
        (["dump", "--batch"], "--progress changes nothing here: dump --batch answers a program, one JSON line per request, and shows no progress"),
    ],
)
def test_progress_where_nothing_is_read_is_a_usage_error(big_enough, capsys, argv, why):
    for setting in ("auto", "always", "never"):
        assert main([argv[0], "--progress", setting, *argv[1:]]) == 2
        assert capsys.readouterr().err == f"burnpack: UsageError: {why}\n"


@pytest.mark.parametrize("option", ["--tree", "--json"])
def test_inspect_stats_with_a_view_that_shows_none_is_a_usage_error(big_enough, capsys, option):
    assert main(["inspect", "--stats", option, "a.bpk"]) == 2
    assert "--stats adds min/max/mean columns to the table" in capsys.readouterr().err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_argument_of_every_command_says_what_it_takes(command):
    missing = [a.dest for a in COMMANDS[command]._actions if not a.help and a.dest != "help"]
    assert missing == []


def test_convert_checkpoint_help_says_which_directories_are_which_direction():
    text = COMMANDS["convert-checkpoint"].format_help()
    assert "a directory means Burn" not in text
    assert "a file or a DCP folder is PyTorch" in " ".join(text.split())


# -- every command with -q and with --json, for real ----------------------------------------------
@pytest.fixture
def files(tmp_path, monkeypatch) -> dict[str, str]:
    monkeypatch.chdir(tmp_path)
    burnpack.save({"w": np.ones((2, 3), np.float32)}, "model.bpk", metadata={"producer": "test"})
    Path("spec.json").write_text(json.dumps({"tensors": [{"name": "w", "dtype": "F32", "shape": [1], "data_hex": "0000803f"}]}))
    from burnpack.records import Checkpoints, ModuleRecord

    Checkpoints.at("checkpoint").save_epoch(1, model=ModuleRecord.from_module({"w": np.ones(2, np.float32)}))
    return {"model": "model.bpk", "spec": "spec.json", "checkpoint": "checkpoint"}


def _runs(files: dict[str, str], n: int) -> dict[str, list[str]]:
    """A successful call of every command (outputs named after ``n``: each call writes anew)."""
    return {
        "inspect": [files["model"]], "dump": [files["model"]], "validate": [files["model"]],
        "repack": [files["model"], f"repacked{n}.bpk"], "pack": [files["spec"], f"packed{n}.bpk"],
        "diff": [files["model"], files["model"]], "view": [files["model"], "-o", f"page{n}.html"],
        "checkpoint inspect": [files["checkpoint"]], "convert": [files["model"], f"converted{n}.safetensors"],
    }  # fmt: skip


def test_quiet_prints_nothing_and_json_one_object_in_every_command(files, capsys):
    runs = _runs(files, 1)
    assert set(runs) == set(COMMANDS) - {"convert-checkpoint"}  # which needs torch: its own test
    for command, args in runs.items():
        assert main([*command.split(), "-q", *args]) == 0, command
        assert capsys.readouterr().out == "", command
    for command, args in _runs(files, 2).items():
        assert main([*command.split(), "--json", *args]) == 0, command
        assert isinstance(json.loads(capsys.readouterr().out), dict), command


def test_convert_checkpoint_quiet_json_and_progress(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(2, 3)  # not square: a square weight's type is not inferred (docs/modules.md)
    state = tmp_path / "state.pt"
    torch.save({"model": model.state_dict(), "epoch": 2}, state)
    assert main(["convert-checkpoint", "-q", str(state), str(tmp_path / "a")]) == 0
    assert capsys.readouterr().out == ""
    assert main(["convert-checkpoint", "--json", str(state), str(tmp_path / "b")]) == 0
    assert json.loads(capsys.readouterr().out)["epoch"] == 2
    assert main(["convert-checkpoint", "--progress", "always", "-q", str(state), str(tmp_path / "c")]) == 0
    assert capsys.readouterr().err.splitlines()[-1].startswith("writing: done")


# -- outputs: Burn's extension rule, and the summary names the file written -----------------------
@pytest.mark.parametrize(
    ("command", "source"),
    [("repack", "model"), ("pack", "spec"), ("convert", "model")],
)
def test_an_output_without_extension_gets_bpk_and_the_summary_names_it(files, capsys, command, source):
    assert main([command, files[source], "out"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert Path("out.bpk").is_file() and not Path("out").exists()
    assert "out.bpk" in first.split() or "out.bpk (burnpack):" in first


def test_a_name_ending_in_a_dot_has_an_extension_as_burn_says_and_is_written_as_is(files, capsys):
    assert main(["repack", files["model"], "trail."]) == 0
    assert capsys.readouterr().out.startswith("wrote trail. (")
    assert Path("trail.").is_file()
    assert main(["convert", files["model"], ".hidden", "-q"]) == 0
    assert Path(".hidden.bpk").is_file()
