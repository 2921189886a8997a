"""The statemeta command: demo, spec, and what every subcommand shares."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import statemeta
from statemeta import StreamMeta, StreamTask, cli
from statemeta.cli import EXIT_BROKEN_PIPE, SUBCOMMANDS, main
from statemeta.diagrams import GENERATED

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_spec_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {
        "statuses",
        "events",
        "transitions",
        "roles",
        "role_events",
        "role_transitions",
    }
    assert {"name": "scan_history", "value": 4} in doc["statuses"]
    assert {"name": "gen_checkpoint", "value": 5} in doc["events"]
    assert {"name": "leader", "value": 2} in doc["roles"]
    assert len(doc["transitions"]) == 33
    assert doc["transitions"][0] == {
        "from": "uninit",
        "event": "init",
        "to": "ready",
        "attach": None,
        "two_phase": True,
    }
    attached = {"from": "ck", "event": "pause", "to": "pause", "attach": "ready"}
    assert {**attached, "two_phase": False} in doc["transitions"]
    assert len(doc["role_transitions"]) == 9
    assert all(set(r) >= {"from", "event", "to"} for r in doc["role_transitions"])


def test_spec_text_lists_both_tables(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["spec"]) == 0
    out = capsys.readouterr().out
    assert "| ck | halt | halt | ready |  |" in out
    assert "| leader | become_follower | follower |" in out


def test_demo_walks_one_task(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) <= 40
    text = "\n".join(lines)
    for fragment in (
        "handle(init)             started  status=uninit active=init",
        "handle(pause)            pending  status=ck waiting=pause@ready",
        "    ready -> pause  (waiting pause)",
        "rejected status=stop code=0x80004103",
    ):
        assert fragment in text


def test_check_docs_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, sections in GENERATED.items():
        markers = "".join(f"<!-- generated:{s} -->\n<!-- end generated:{s} -->\n" for s in sections)
        (tmp_path / name).write_text(markers, encoding="utf-8")
    assert main(["spec", "--check-docs", "--docs", str(tmp_path)]) == 1
    assert main(["spec", "--write-docs", "--docs", str(tmp_path)]) == 0
    assert main(["spec", "--check-docs", "--docs", str(tmp_path)]) == 0
    assert "stale:" in capsys.readouterr().out


def test_every_subcommand_has_help() -> None:
    assert set(SUBCOMMANDS) >= {"demo", "spec"}
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0


def test_python_dash_m_runs_the_command() -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "statemeta", "spec", "--json"],
        capture_output=True,
        text=True,
        cwd=root,
        check=False,
        env={"PYTHONPATH": str(root), "PATH": ""},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["statuses"][0] == {"name": "ready", "value": 0}


def test_a_reader_that_goes_away_ends_the_command_quietly(tmp_path: Path) -> None:
    """``statemeta inspect PATH --json | head -1``: no traceback, the exit code of SIGPIPE."""
    meta = StreamMeta.open(tmp_path / "meta", vg_id=2)
    for n in range(1, 301):  # more JSON than a pipe buffers
        meta.register(StreamTask(stream_id=0x51, task_id=n), ver=5)
    meta.close()
    root = Path(__file__).resolve().parents[2]
    child = subprocess.Popen(
        [sys.executable, "-m", "statemeta", "inspect", str(tmp_path / "meta"), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": ""},
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # before the child writes: every write finds no reader
    stderr = child.stderr.read()
    assert child.wait(timeout=60) == EXIT_BROKEN_PIPE
    assert stderr == b""


def _edges(text: str, arrow: str) -> list[tuple[str, str]]:
    """The (source, target) pairs of a diagram's edge lines (``a --> b: ...`` or ``a -> b ...``)."""
    found = []
    for line in text.splitlines():
        head, sep, _ = line.strip().partition(f" {arrow} ")
        if sep and head not in {"[*]", "start"}:
            found.append((head, _.split()[0].rstrip(":;")))
    return found


@pytest.mark.parametrize(("flag", "arrow"), [("--mermaid", "-->"), ("--dot", "->")])
def test_spec_draws_every_row_of_both_tables(
    flag: str, arrow: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both machines, one edge per table row in table order, from the tables themselves."""
    from statemeta.lifecycle import LIFECYCLE_ROWS
    from statemeta.roles import ROLE_ROWS

    assert main(["spec", flag]) == 0
    out = capsys.readouterr().out
    expected = [(r.from_status.name.lower(), r.to_status.name.lower()) for r in LIFECYCLE_ROWS]
    expected += [(r.from_role.name.lower(), r.to_role.name.lower()) for r in ROLE_ROWS]
    assert _edges(out, arrow) == expected
    if flag == "--dot":
        assert out.count("digraph ") == 2 and out.count("{") == out.count("}")
        assert 'uninit -> ready [label="init (two-phase)"];' in out
    else:
        assert out.count("```mermaid") == 2
        assert "leader --> follower: become_follower / stop_heartbeat / send_before_close" in out


def test_spec_modes_exclude_each_other(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["spec", "--mermaid", "--dot"])
    assert stopped.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"statemeta {statemeta.__version__}"


@pytest.mark.parametrize("mode", ["--check-docs", "--write-docs"])
def test_doc_commands_without_a_docs_directory_refuse_in_one_line(
    mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An installed wheel has no docs/ beside the package: its default is missing."""
    monkeypatch.setattr(cli, "_REPO_DOCS", tmp_path / "site-packages" / "docs")
    assert main(["spec", mode]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("statemeta spec: error: no docs directory at ")
    assert "--docs DIR" in err


@pytest.mark.parametrize("command", [["explore"], ["check", "--sut", "x"]])
def test_usage_lines_fit_a_terminal(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    usage = capsys.readouterr().out.split("\n\n")[0]
    assert max(len(line) for line in usage.splitlines()) <= 100


@pytest.mark.parametrize("asked", [False, True])
def test_a_campaign_leaves_no_hypothesis_directory_where_it_runs(
    asked: bool, tmp_path: Path
) -> None:
    """Hypothesis's files go to the user's cache, or where HYPOTHESIS_STORAGE_DIRECTORY asks."""
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_STORAGE_DIRECTORY"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    if asked:
        env["HYPOTHESIS_STORAGE_DIRECTORY"] = str(tmp_path / "asked")
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "statemeta", "campaign", "--examples", "2", "--steps", "3"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert list(work.iterdir()) == []
    used = tmp_path / "asked" if asked else tmp_path / "cache" / "statemeta" / "hypothesis"
    assert used.is_dir()
