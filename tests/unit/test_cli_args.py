"""Every command-line value is checked before a command runs: exit 2, one line, no traceback."""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.__main__ import main as bench_main
from statemeta import cli_args
from statemeta.cli import main as statemeta_main
from statemeta.harness.serve import main as serve_main

ROOT = Path(__file__).resolve().parents[2]
SERVE = f"{sys.executable} -m statemeta.serve"
"""A working implementation: a refused value must be refused before it is ever started."""

MAINS: dict[str, Callable[[list[str]], int]] = {
    "statemeta": statemeta_main,
    "python -m statemeta.serve": serve_main,
    "python -m benchmarks": bench_main,
}

CASES: list[tuple[str, str, str]] = [
    # (program and arguments, "{tmp}" standing for an empty directory; the subcommand that
    # refuses, "" for the program itself;
    # what the line names). Each would run small if it were not refused (a regression must
    # fail the test, not fork a million workers or run every benchmark).
    ("statemeta check --sut ''", "check", "argument --sut"),
    ("statemeta check --sut '   '", "check", "argument --sut"),
    ("statemeta check --sut '\"unclosed'", "check", "argument --sut"),
    ("statemeta check", "check", "--sut"),
    *[
        (f"statemeta check --sut SERVE --examples 1 --steps 1 --timeout={value}", "check",
         "argument --timeout")
        for value in ("nan", "inf", "-inf", "0", "-1", "1e300", "1e309", "abc", "")
    ],
    ("statemeta check --sut SERVE --examples 0", "check", "argument --examples"),
    *[
        (f"statemeta check --sut SERVE --examples 1 --steps 1 --trace-out {path}", "check",
         "argument --trace-out")
        for path in ("x" * 300, "{tmp}/" + "x" * 300 + "/t.json")
    ],
    ("statemeta explore --quiet --max-depth 1 --trace-dir " + "d" * 300, "explore",
     "argument --trace-dir"),
    *[
        (f"statemeta check --sut SERVE --examples 1 --steps={shlex.quote(value)}", "check",
         "argument --steps")
        for value in ("+5", " 5", "5 ", "1_000", "\u0665", "1" * 26, "1000000001", "--", "")
    ],
    *[  # every number is ASCII decimal digits, below a stated maximum
        (f"statemeta check --sut SERVE --examples 1 --steps 1 {option}={shlex.quote(value)}",
         "check", f"argument {option}")
        for option, values in (
            ("--seed", ("+5", " 5", "1_000", "\u0665", "1" * 26, str(2**64), "-1")),
            ("--timeout", ("+5", " 5", "5 ", "1_0", "\u0665", "0x10", "--")),
            ("--level", ("+2", " 2", "\u0662", "2.0")),
        )
        for value in values
    ],
    *[
        (f"statemeta explore --quiet --max-depth 1 --stream-tasks={shlex.quote(value)}",
         "explore", "argument --stream-tasks")
        for value in ("+1", " 1", "\u0661")
    ],
    ("statemeta campaign --quiet --examples 1 --steps 1 --seed 1_0", "campaign",
     "argument --seed"),
    *[
        (f"statemeta explore --quiet --max-depth 1 --{flag} {2**64}", "explore",
         f"argument --{flag}")
        for flag in ("faults", "reopens", "clock-advances")
    ],
    ("statemeta check --sut SERVE --steps -1", "check", "argument --steps"),
    ("statemeta check --sut SERVE --level 4", "check", "argument --level"),
    ("statemeta check --sut SERVE --seed x", "check", "argument --seed"),
    ("statemeta check --sut SERVE --examples 1 --steps 1 --trace-out {tmp}/no/t.json", "check",
     "argument --trace-out"),
    ("statemeta check --sut SERVE --examples 1 --steps 1 --trace-out {tmp}", "check",
     "argument --trace-out"),
    ("statemeta replay {tmp}/t.json --timeout nan", "replay", "argument --timeout"),
    ("statemeta replay {tmp}/t.json --sut ''", "replay", "argument --sut"),
    ("statemeta replay {tmp}/missing.json --sut SERVE", "replay", "could not run: trace"),
    *[
        (f"statemeta explore --quiet --max-depth 1 --{flag} -1", "explore", f"argument --{flag}")
        for flag in (
            "role-changes", "start-rounds", "reopens", "faults", "clock-advances"
        )
    ],
    ("statemeta explore --quiet --max-depth -1", "explore", "argument --max-depth"),
    ("statemeta explore --quiet --max-depth 1 --stream-tasks 3", "explore",
     "argument --stream-tasks"),
    ("statemeta explore --quiet --max-depth 1 --workers 0", "explore", "argument --workers"),
    ("statemeta explore --quiet --max-depth 1 --workers 65", "explore", "argument --workers"),
    ("statemeta explore --quiet --max-depth 1 --variant nope", "explore", "argument --variant"),
    *[
        (f"statemeta explore --quiet --max-depth 1 --cluster '{address}'", "explore",
         "argument --cluster")
        for address in ("", "localhost", "localhost:0", "localhost:65536", "tcp://:8786",
                        "http://localhost:8786", "a b:1")
    ],
    ("statemeta verify --quiet --max-depth 1 --examples 1 --steps 1 --cluster x", "verify",
     "argument --cluster"),
    ("statemeta explore --quiet --max-depth 1 --sut ''", "explore", "argument --sut"),
    ("statemeta explore --quiet --max-depth 1 --sut SERVE --depth -1", "explore",
     "argument --depth"),
    ("statemeta explore --quiet --max-depth 1 --trace {tmp}/no/x.json", "explore",
     "argument --trace"),
    ("statemeta verify --quiet --max-depth 1 --examples 0 --steps 1", "verify",
     "argument --examples"),
    ("statemeta verify --quiet --max-depth 1 --examples 1 --steps -1", "verify",
     "argument --steps"),
    ("statemeta verify --quiet --max-depth -1 --examples 1 --steps 1", "verify",
     "argument --max-depth"),
    ("statemeta verify --quiet --max-depth 1 --examples 1 --steps 1 --workers 0", "verify",
     "argument --workers"),
    ("statemeta campaign --quiet --examples 0 --steps 1", "campaign", "argument --examples"),
    ("statemeta campaign --quiet --examples 1 --steps 0", "campaign", "argument --steps"),
    ("statemeta campaign --quiet --examples 1 --steps 1 --seed 1.5", "campaign",
     "argument --seed"),
    ("statemeta campaign --quiet --examples 1 --steps 1 --backend nope", "campaign",
     "argument --backend"),
    ("statemeta decode nope", "decode", "argument layout"),
    ("statemeta decode hb {tmp}/missing.hex", "decode", "argument file"),
    ("statemeta decode hb {tmp}", "decode", "argument file"),
    ("statemeta decode hb /dev/null b", "", "unrecognized arguments"),
    ("statemeta spec --docs {tmp}/missing", "spec", "argument --docs"),
    ("statemeta spec --json --write-docs", "spec", "not allowed with"),
    ("statemeta demo extra", "", "unrecognized arguments"),
    ("statemeta bench --quick --only lifecycle --json {tmp}/no/out.json", "bench",
     "argument --json"),
    ("statemeta bench --only nope", "bench", "argument --only"),
    *[
        (f"statemeta bench --only lifecycle --repeats={value}", "bench", "argument --repeats")
        for value in ("0", "101", "+3", "3.0")
    ],
    ("statemeta nope", "", "argument COMMAND"),
    ("statemeta", "", "COMMAND"),
    ("python -m statemeta.serve --variant nope", "", "argument --variant"),
    ("python -m statemeta.serve --bogus", "", "unrecognized arguments"),
    ("python -m benchmarks --quick --only lifecycle --json {tmp}/no/out.json", "",
     "argument --json"),
]


def _split(case: str, tmp: Path) -> tuple[str, list[str]]:
    for program in MAINS:
        if case == program or case.startswith(program + " "):
            words = shlex.split(case[len(program) :].replace("{tmp}", str(tmp)))
            return program, [SERVE if word == "SERVE" else word for word in words]
    raise AssertionError(case)


@pytest.mark.parametrize(("case", "command", "names"), CASES, ids=[c[0] for c in CASES])
def test_a_meaningless_value_exits_2_with_one_line(
    case: str, command: str, names: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program, argv = _split(case, tmp_path)
    with pytest.raises(SystemExit) as exited:
        code = MAINS[program](argv)
        raise SystemExit(code)  # a command that ran: its own exit code
    out, err = capsys.readouterr()
    assert exited.value.code == 2, (out, err)
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert names in err, err
    prefix = f"{program} {command}" if command else program
    kind = "could not run: " if names.startswith("could not run") else "error: "
    assert err.startswith(f"{prefix}: {kind}"), err


def test_a_refusal_from_the_installed_command_is_one_line_and_nothing_runs(
    tmp_path: Path,
) -> None:
    """The issue's reproducers, as a user runs them (a real process, its real stderr)."""
    for argv in (
        ["check", "--sut", "", "--timeout", "nan"],
        ["check", "--sut", SERVE, "--timeout", "inf"],
        ["check", "--sut", SERVE, "--timeout", "0", "--trace-out", str(tmp_path / "t.json")],
        ["explore", "--max-depth", "-1"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "statemeta", *argv],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=60,
            check=False,
        )
        assert (done.returncode, done.stdout) == (2, ""), (argv, done.stderr)
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert done.stderr.startswith(f"statemeta {argv[0]}: error: argument "), done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("parse", "text", "value"),
    [
        (cli_args.positive_int, "1", 1),
        (cli_args.positive_int, "12", 12),
        (cli_args.nonnegative_int, "0", 0),
        (cli_args.int_in(1, cli_args.MAX_WORKERS), "64", 64),
        (cli_args.seconds, "0.001", 0.001),
        (cli_args.seconds, "86400", 86400.0),
        (cli_args.seconds, "1.5e2", 150.0),
        (cli_args.seconds, ".5", 0.5),
        (cli_args.seconds, "2.", 2.0),
        (cli_args.seed, "0", 0),
        (cli_args.seed, str(2**64 - 1), 2**64 - 1),
        (cli_args.command_line, "python -m statemeta.serve", "python -m statemeta.serve"),
        (cli_args.command_line, "'my impl' --flag", "'my impl' --flag"),
        (cli_args.input_file, "-", "-"),
        (cli_args.input_file, "/dev/null", "/dev/null"),
        (cli_args.cluster_address, "tcp://10.0.0.5:8786", "tcp://10.0.0.5:8786"),
        (cli_args.cluster_address, "scheduler.example:8786", "scheduler.example:8786"),
        (cli_args.cluster_address, "tls://[::1]:65535", "tls://[::1]:65535"),
    ],
)
def test_a_meaningful_value_is_taken(
    parse: Callable[[str], object], text: str, value: object
) -> None:
    assert parse(text) == value


def test_paths_are_taken_where_they_can_be_used(tmp_path: Path) -> None:
    assert cli_args.output_file(str(tmp_path / "t.json")) == tmp_path / "t.json"
    assert cli_args.existing_directory(str(tmp_path)) == tmp_path
    (tmp_path / "in.hex").write_text("00")
    assert cli_args.input_file(str(tmp_path / "in.hex")) == str(tmp_path / "in.hex")


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "0", "-0.5", "1e16", "x", ""])
def test_seconds_refuses_what_no_timer_can_wait(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"in \(0, 86400\]"):
        cli_args.seconds(text)


def test_a_refusal_is_one_line_even_when_the_message_is_not(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = cli_args.Parser(prog="prog")
    parser.add_argument("--choice", choices=["a\nb"])
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["--choice", "c\nd"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("prog: error: argument --choice")


def test_options_may_follow_or_precede_an_optional_positional() -> None:
    parser = cli_args.Parser(prog="prog", intermixed=True)
    parser.add_argument("layout")
    parser.add_argument("file", nargs="?", default="-")
    parser.add_argument("--json", action="store_true")
    expected = argparse.Namespace(layout="hb", file="F", json=True)
    for argv in (["hb", "--json", "F"], ["hb", "F", "--json"], ["--json", "hb", "F"]):
        assert parser.parse_args(argv) == expected
    assert parser.parse_args(["hb", "--json"]) == argparse.Namespace(
        layout="hb", file="-", json=True
    )


def test_the_refusals_shown_in_docs_cli_md_are_real(capsys: pytest.CaptureFixture[str]) -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    shown = re.findall(r"^\$ (statemeta .*)\n(statemeta .*)$", text, re.M)
    assert len(shown) == 2
    for command, line in shown:
        with pytest.raises(SystemExit) as exited:
            statemeta_main(shlex.split(command)[1:])
        assert exited.value.code == 2
        assert capsys.readouterr().err == line + "\n"
