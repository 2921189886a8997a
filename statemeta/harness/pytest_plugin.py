"""The pytest plugin's test: ``pytest --statemeta-sut "CMD"`` runs the conformance check as one
test, ``statemeta::conformance[level N]`` (the options and the hook that adds it are in the
tiny entry-point module statemeta_pytest, which imports this one only when the option is given).

The run is sized by the Hypothesis profile in use (``max_examples``, ``stateful_step_count``,
``derandomize``) unless ``--statemeta-examples`` / ``--statemeta-steps`` say otherwise; a
failure shows the trace as a table, writes it to ``--statemeta-trace-out`` and prints the
``statemeta replay`` line that runs it again. For Python implementations,
``conformance_test(factory)`` turns a factory of in-process adapters into a test function
(``test_my_meta = conformance_test(MyAdapter, level=2)``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from statemeta.errors import SutError
from statemeta.harness.adapter import Adapter
from statemeta.harness.check import CheckReport, run_check
from statemeta.harness.subprocess_adapter import SubprocessAdapter
from statemeta.harness.trace import format_trace, replay_command, write_trace
from statemeta.semantics import Semantics

__all__ = ["ConformanceItem", "conformance_test"]


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


def _fail(report: CheckReport, written: tuple[Path, str, str] | None) -> None:
    """A failure with the trace; ``written``: (file, command, semantics) the trace is written
    to and the replay line runs."""
    if report.trace is None:
        return
    where = ""
    if written is not None:
        trace_out, command, semantics = written
        write_trace(report.trace, trace_out)
        where = (f"\ntrace written to {trace_out}\n"
                 f"replay it: {replay_command(trace_out, command, semantics)}")
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
        _fail(report, (option.statemeta_trace_out, self.command, option.statemeta_semantics))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"statemeta conformance of {self.command!r} at level {self.level}"


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
