"""The pytest plugin: ``pytest --statemeta-sut "CMD"`` runs the conformance check as one test.

The run is sized by the Hypothesis profile in use (``max_examples``, ``stateful_step_count``,
``derandomize``) unless ``--statemeta-examples`` / ``--statemeta-steps`` say otherwise; a
failure shows the trace as a table and writes it to ``--statemeta-trace-out``. For Python
implementations, ``conformance_test(factory)`` turns a factory of in-process adapters into a
test function (``test_my_meta = conformance_test(MyAdapter, level=2)``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from statemeta.cli_args import command_line, int_in, output_file, positive_int, seconds
from statemeta.errors import SutError
from statemeta.harness.adapter import Adapter
from statemeta.harness.check import CheckReport, run_check
from statemeta.harness.operations import LEVELS
from statemeta.harness.subprocess_adapter import SubprocessAdapter
from statemeta.harness.trace import format_trace, write_trace
from statemeta.semantics import Semantics

__all__ = [
    "ConformanceItem",
    "conformance_test",
    "pytest_addoption",
    "pytest_collection_modifyitems",
]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("statemeta", "conformance of an implementation to statemeta")
    group.addoption(
        "--statemeta-sut",
        type=command_line,
        metavar="CMD",
        help="check this implementation's command",
    )
    group.addoption(
        "--statemeta-level", type=int_in(min(LEVELS), max(LEVELS)), default=2, choices=LEVELS,
        help="default: 2",
    )
    group.addoption(
        "--statemeta-semantics",
        default=Semantics.INTENDED.value,
        choices=[s.value for s in Semantics],
        help="the reference's semantics (default: %(default)s)",
    )
    group.addoption("--statemeta-timeout", type=seconds, default=5.0, help="seconds per response")
    group.addoption(
        "--statemeta-examples", type=positive_int, help="default: the profile's max_examples"
    )
    group.addoption(
        "--statemeta-steps", type=positive_int, help="default: the profile's step count"
    )
    group.addoption(
        "--statemeta-trace-out",
        type=output_file,
        default=Path("statemeta-trace.json"),
        help="where a failure's trace goes (default: %(default)s)",
    )


def _settings(examples: int | None = None, steps: int | None = None) -> settings:
    """The profile in use, with what a conformance run needs (no deadline, one failure)."""
    sized = settings(
        settings.default,
        deadline=None,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
    )
    if examples is not None:
        sized = settings(sized, max_examples=examples)
    if steps is not None:
        sized = settings(sized, stateful_step_count=steps)
    return sized


def _fail(report: CheckReport, trace_out: Path | None) -> None:
    if report.trace is None:
        return
    where = ""
    if trace_out is not None:
        write_trace(report.trace, trace_out)
        where = f"\ntrace written to {trace_out}"
    pytest.fail(f"not conformant:\n{format_trace(report.trace)}{where}", pytrace=False)


class ConformanceItem(pytest.Item):
    """The conformance run of ``--statemeta-sut`` as a test."""

    def __init__(self, *, command: str, level: int, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.command = command
        self.level = level

    def runtest(self) -> None:
        option = self.config.option
        with SubprocessAdapter(self.command, timeout=option.statemeta_timeout) as sut:
            try:
                levels = sut.hello()["levels"]
            except SutError as error:
                pytest.fail(f"could not run: {error}", pytrace=False)
            if self.level not in levels:
                pytest.fail(f"could not run: it supports levels {levels}", pytrace=False)
            report = run_check(
                sut,
                level=self.level,
                hypothesis_settings=_settings(option.statemeta_examples, option.statemeta_steps),
                sut_label=self.command,
                semantics=option.statemeta_semantics,
            )
        _fail(report, option.statemeta_trace_out)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"statemeta conformance of {self.command!r} at level {self.level}"


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    command = config.getoption("statemeta_sut")
    if command:
        level = config.getoption("statemeta_level")
        items.append(
            ConformanceItem.from_parent(
                session, name=f"statemeta-conformance[level-{level}]", command=command, level=level
            )
        )


def conformance_test(
    factory: Callable[[], Adapter],
    *,
    level: int = 2,
    examples: int | None = None,
    steps: int | None = None,
    semantics: Semantics | str = Semantics.INTENDED,
) -> Callable[[], None]:
    """A test function that checks the adapter ``factory`` makes against the reference (in
    ``semantics``), sized by the Hypothesis profile in use (or ``examples`` / ``steps``); a
    failure shows the shrunk trace."""

    def test() -> None:
        sut = factory()
        name = str(sut.hello().get("name", type(sut).__name__))
        sized = _settings(examples, steps)
        report = run_check(
            sut, level=level, hypothesis_settings=sized, sut_label=name, semantics=semantics
        )
        _fail(report, None)

    test.__doc__ = f"conformance of {getattr(factory, '__name__', factory)!r} at level {level}"
    return test
