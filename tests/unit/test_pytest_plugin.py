"""The pytest plugin (``--statemeta-sut``, entry point statemeta_pytest) and the
conformance_test API."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import statemeta_pytest
from statemeta.harness.operations import LEVELS
from statemeta.harness.pytest_plugin import conformance_test
from statemeta.harness.reference import ReferenceAdapter
from statemeta.semantics import Semantics

SERVE = f"{sys.executable} -m statemeta.serve"


def _pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest in an empty directory: the plugin comes from the installed entry point
    (pytest11), and the conformance run is the only test."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            str(tmp_path),
            *args,
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
        timeout=300,
    )


def test_the_plugin_runs_the_conformance_check(tmp_path: Path) -> None:
    done = _pytest(
        tmp_path,
        "--statemeta-sut",
        SERVE,
        "--statemeta-level",
        "2",
        "--statemeta-examples",
        "5",
        "--statemeta-steps",
        "10",
        "-v",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "statemeta::conformance[level 2] PASSED" in done.stdout


def test_the_plugin_fails_with_the_trace(tmp_path: Path) -> None:
    done = _pytest(
        tmp_path,
        "--statemeta-sut",
        f"{SERVE} --variant stream_count_counts_fill_history",
        "--statemeta-level",
        "2",
        "--statemeta-examples",
        "100",
        "--statemeta-steps",
        "20",
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "not conformant" in done.stdout
    assert "register(task=" in done.stdout
    assert (tmp_path / "statemeta-trace.json").exists()
    replay = (f"replay it: statemeta replay statemeta-trace.json --sut '{SERVE} --variant "
              "stream_count_counts_fill_history' --semantics intended")
    assert replay in done.stdout


def test_the_plugin_reports_an_implementation_it_cannot_run(tmp_path: Path) -> None:
    done = _pytest(tmp_path, "--statemeta-sut", "statemeta-no-such-implementation")
    assert done.returncode == 1
    assert "could not run" in done.stdout


def test_without_the_option_the_plugin_adds_nothing(tmp_path: Path) -> None:
    done = _pytest(tmp_path)
    assert done.returncode == 5  # no tests collected
    assert "statemeta::conformance" not in done.stdout


_IMPORTS_STATEMETA = """
import sys

def test_imports() -> None:
    print("statemeta imported:", "statemeta" in sys.modules)
"""


@pytest.mark.parametrize(("options", "imported"), [((), False), (("--statemeta-level=1",), True)])
def test_the_plugin_imports_statemeta_only_when_one_of_its_options_is_given(
    tmp_path: Path, options: tuple[str, ...], imported: bool
) -> None:
    """pytest loads the entry point in every run: without its options that costs no import
    of the package (issue 32: 2.26 s against 1.26 s for a one-test project)."""
    (tmp_path / "test_one.py").write_text(_IMPORTS_STATEMETA)
    done = _pytest(tmp_path, "-s", *options)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"statemeta imported: {imported}" in done.stdout


def test_the_entry_points_levels_and_semantics_are_the_harnesss() -> None:
    assert statemeta_pytest.LEVELS == LEVELS
    assert tuple(s.value for s in Semantics) == statemeta_pytest.SEMANTICS


test_the_reference_conforms_in_process = conformance_test(
    lambda: ReferenceAdapter(check_invariants=False), level=2, examples=10, steps=20
)


def test_a_broken_variant_fails_its_conformance_test() -> None:
    test = conformance_test(
        lambda: ReferenceAdapter("stream_count_counts_fill_history", check_invariants=False),
        level=2,
        examples=100,
        steps=20,
    )
    with pytest.raises(pytest.fail.Exception, match=r"not conformant(.|\n)*register"):
        test()


test_the_seed_conforms_to_the_seed_in_process = conformance_test(
    lambda: ReferenceAdapter(check_invariants=False, semantics="seed"),
    level=1,
    examples=10,
    steps=20,
    semantics="seed",
)


def test_the_seed_fails_the_intended_conformance_test() -> None:
    test = conformance_test(
        lambda: ReferenceAdapter(check_invariants=False, semantics="seed"), level=1, examples=10
    )
    with pytest.raises(pytest.fail.Exception, match="intended semantics"):
        test()


@pytest.mark.parametrize(
    "option",
    [
        "--statemeta-sut=",
        "--statemeta-timeout=nan",
        "--statemeta-timeout=0",
        "--statemeta-examples=0",
        "--statemeta-steps=-1",
        "--statemeta-trace-out=no/such/dir/t.json",
    ],
)
def test_a_meaningless_option_is_a_usage_error_before_anything_runs(
    tmp_path: Path, option: str
) -> None:
    """The same rules as ``statemeta check`` (statemeta.cli_args), in pytest's usage error."""
    done = _pytest(tmp_path, f"--statemeta-sut={SERVE}", "--statemeta-examples=1", option)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert f"argument {option.split('=')[0]}: " in done.stderr
    assert "Traceback" not in done.stdout + done.stderr
