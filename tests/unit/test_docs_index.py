"""docs/index.md: every command the tour shows prints what the tour says; every link resolves.

Each ``$ COMMAND`` line of the tour is followed by its output as pasted. The test runs every
such command (the ones it knows how to run; an unknown one fails the test, so a new command in
the tour must come with its comparison) and compares line by line: a line ``...`` stands for
lines left out, timings (``1.3 s``, ``524 steps/s``) and progress lines (``  ... 204 examples``)
are compared by form, not by value. The benchmark table is compared by form too (it takes
minutes): its header, legend and summary are the ones ``python -m benchmarks`` prints, its
modules are the benchmarks in their order, and every verdict follows from the figures shown.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from benchmarks.__main__ import LEGEND
from benchmarks._table import FIGURES, WIDTH, parse_goal
from statemeta.cli import main
from statemeta.cli_bench import BENCHMARKS

ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs" / "index.md"
VENV_PYTHON = ".venv/bin/python"
"""How the tour names the environment's interpreter; the test runs its own."""

TIMING = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e-?\d+)? (s|steps/s|states/s|transitions/s)\b")
WORKERS = re.compile(r"worker processes: \d+")
"""explore's default: two workers where the machine has two cores, else one."""
PROGRESS = re.compile(r"  \.\.\. \d+ examples, \d+ steps \(.*\)$")
"""A check's progress line: how many depends on how fast the machine is."""


def _block(name: str) -> str:
    (body,) = re.findall(
        rf"<!-- tour:{name} -->\n```\w*\n(.*?)```\n<!-- /tour:{name} -->", DOC.read_text(), re.S
    )
    return str(body)


def _shown() -> list[tuple[str, list[str]]]:
    """Every ``$ COMMAND`` of the tour's code blocks with the lines that follow it."""
    shown: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```\w*\n(.*?)```", DOC.read_text(), re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                shown.append((line[2:], []))
            elif shown and block.lstrip().startswith("$ "):
                shown[-1][1].append(line)
    return shown


def _form(line: str) -> str:
    """The line with what depends on the machine (timings, its number of cores) as ``#``."""
    line = WORKERS.sub("worker processes: #", line.replace(sys.executable, VENV_PYTHON))
    return TIMING.sub(r"# \1", line)


def _matches(expected: list[str], actual: list[str]) -> bool:
    """``expected`` is ``actual`` where each ``...`` line stands for any lines (none too)."""
    pattern = "".join(
        r"(?:.*\n)*?" if line == "..." else re.escape(_form(line)) + r"\n" for line in expected
    )
    return re.fullmatch(pattern, "".join(_form(line) + "\n" for line in actual)) is not None


def _hex(vector: str) -> str:
    return str(json.loads((ROOT / "spec" / "vectors" / vector).read_text())["hex"]) + "\n"


def _decode(data: str, tmp: Path) -> list[str]:
    source = tmp / "input.hex"
    source.write_text(data)
    return ["decode", "hb", str(source)]


def _commands(tmp: Path) -> dict[str, Callable[[], list[str]]]:
    """What the test runs for each command the tour shows: the argv of statemeta's main."""
    (check_seed,) = [
        re.findall(r"seed (\d+)$", lines[0])[0]
        for command, lines in _shown() if command.startswith("statemeta check ")
    ]
    return {
        "statemeta demo": lambda: ["demo"],
        "statemeta spec --json | head": lambda: ["spec", "--json"],
        "statemeta inspect tour-meta": lambda: ["inspect", "tour-meta"],
        "jq -r .hex spec/vectors/heartbeat_1.json | statemeta decode hb": lambda: _decode(
            _hex("heartbeat_1.json"), tmp
        ),
        "jq -r .hex spec/vectors/heartbeat_1.json | head -c 60 | statemeta decode hb": lambda: (
            _decode(_hex("heartbeat_1.json")[:60], tmp)
        ),
        f'statemeta check --sut "{VENV_PYTHON} -m statemeta.serve" --level 3 --examples 20': (
            lambda: ["check", "--sut", f"{sys.executable} -m statemeta.serve", "--level", "3",
                     "--examples", "20", "--seed", check_seed]
        ),
        "statemeta explore --stream-tasks 1 --no-fill-history --max-depth 3 --quiet": lambda: [
            "explore", "--stream-tasks", "1", "--no-fill-history", "--max-depth", "3", "--quiet"
        ],
    }


BENCH = "python -m benchmarks --quick "
"""How the tour's benchmark command begins (the rest: which modules, and --json FILE)."""


def test_the_tour_snippet_prints_what_the_doc_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(_block("library"), str(DOC), "exec"), {})
    assert printed.getvalue() == _block("library-output")


def test_every_command_of_the_tour_prints_what_the_doc_shows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(_block("library"), str(DOC), "exec"), {})  # tour-meta, for inspect
    commands = _commands(tmp_path)
    shown = [(command, lines) for command, lines in _shown() if not command.startswith(BENCH)]
    assert sorted(command for command, _ in shown) == sorted(commands)
    for command, expected in shown:
        main(commands[command]())
        out, err = capsys.readouterr()
        actual = (out + err).splitlines()
        if command.endswith("| head"):
            actual = actual[:10]
        actual = [line for line in actual if not PROGRESS.match(line)]
        expected = [line for line in expected if not PROGRESS.match(line)]
        assert _matches(expected, actual), f"$ {command}\n" + "\n".join(actual)


def _bench_block() -> list[str]:
    (lines,) = [lines for command, lines in _shown() if command.startswith(BENCH)]
    return lines


def test_the_tour_benchmark_table_has_the_form_python_m_benchmarks_prints() -> None:
    lines = _bench_block()
    assert lines[0] == "module: measure vs baseline"
    assert lines[1].split() == list(FIGURES)
    assert max(len(line) for line in lines) <= WIDTH
    legend = LEGEND.splitlines()
    end = lines.index(legend[0])
    assert lines[end : end + len(legend)] == legend
    summary = lines[end + len(legend)]
    assert re.fullmatch(r"\d+ modules, 3 runs each, in [\d.]+ s --quick", summary), summary
    (command,) = [command for command, _ in _shown() if command.startswith(BENCH)]
    assert lines[end + len(legend) + 1] == f"wrote {command.split('--json ')[1].split()[0]}"
    table = [line for line in lines[2 : end - 1] if line != "..."]
    modules = [line.split(":")[0] for line in table if not line.startswith(" ")]
    order = list(dict.fromkeys(modules))
    assert set(order) <= set(BENCHMARKS)
    assert order == sorted(order, key=BENCHMARKS.index)
    only = command.split("--only ")[1].split(" --")[0].split() if "--only " in command else []
    assert order == (only or list(BENCHMARKS))


FIGURE_LINE = re.compile(
    r"  (?P<value>[\d,.]+) (?P<unit>\S.*?)\s{2,}(?P<spread>±\d+%|-)\s+(?P<baseline>[\d,.e-]+|-)"
    r"\s+(?P<ratio>[\d,.e-]+x|-)\s+(?P<goal>\S.*?)\s{2,}(?P<verdict>.+)"
)


def test_every_verdict_of_the_tour_follows_from_its_figures() -> None:
    figures = [m for m in map(FIGURE_LINE.fullmatch, _bench_block()[2:]) if m is not None]
    assert len(figures) >= 8
    for figure in figures:
        goal = parse_goal(figure["goal"], figure["unit"])
        if goal is None:
            assert figure["verdict"] == "info", figure.group(0)
            continue
        measured = figure["ratio"].rstrip("x") if goal.on_ratio else figure["value"]
        met = {"<=": float.__le__, ">=": float.__ge__, "<": float.__lt__, ">": float.__gt__}[
            goal.op
        ](float(measured.replace(",", "")), goal.bound)
        verdict, runs = figure["verdict"].rsplit(" ", 1)
        k, n = map(int, runs.split("/"))
        # the median meets the goal unless fewer than half the runs do; all or none is sure
        assert verdict == ("met" if k == n else "not met" if k == 0 else "unsure"), figure[0]
        assert met == (k > n // 2) or verdict == "unsure", figure.group(0)


def test_every_relative_link_resolves() -> None:
    links = re.findall(r"\]\(([^)#]+)\)", DOC.read_text())
    relative = [link for link in links if "://" not in link]
    assert len(relative) >= 15
    assert [link for link in relative if not (DOC.parent / link).exists()] == []


def test_every_page_is_linked() -> None:
    linked = {
        (DOC.parent / link).resolve() for link in re.findall(r"\]\(([^)#]+)\)", DOC.read_text())
    }
    root = DOC.parents[1]
    pages = {*root.glob("docs/*.md"), *root.glob("spec/*.md"), *root.glob("spec/*.toml")}
    assert sorted(str(p) for p in pages - linked - {DOC}) == []
