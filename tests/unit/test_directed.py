"""The coverage model and the directed phase (issue 18).

- the classes are data that cover every operation and every row of the spec's tables;
- the shipped corpus is what the explorer and the focused searches compute now (stale: fail);
- every broken variant is caught by the directed phase alone, at every level where its broken
  code can show, with the same trace on every seed, and the explorer finds no shorter
  counterexample within the corpus's bounds;
- a default check reaches every class reachable within the bounds, and says so;
- the explorer counts a close_reopen's CLOSE row once.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections import Counter
from pathlib import Path

import attrs
import pytest
from hypothesis import settings

from statemeta.cli import main
from statemeta.errors import MisuseError
from statemeta.explore.bounds import Bounds
from statemeta.explore.search import explore
from statemeta.harness.check import check_settings, run_check, unchecked_reference
from statemeta.harness.coverage_model import (
    FAMILIES,
    ROLE_CLASSES,
    ROW_CLASSES,
    classify,
    families_table,
    family_of,
    row_class,
)
from statemeta.harness.directed import (
    CORPUS_BOUNDS,
    CoverageReport,
    build_corpus,
    corpus_file,
    corpus_text,
    counting_reference,
    load_corpus,
    run_directed,
)
from statemeta.harness.operations import LEVELS, OP_SPECS, Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.variants import VARIANTS
from statemeta.lifecycle import LIFECYCLE_ROWS
from statemeta.meta import StreamMeta
from statemeta.roles import ROLE_ROWS, Role, RoleEvent
from statemeta.semantics import Semantics

SERVE = f"{sys.executable} -m statemeta.serve"


def test_every_operation_has_a_family_beyond_the_table_rows() -> None:
    covered = {op for f in FAMILIES if f.name not in ("row", "role") for op in f.ops}
    assert covered == set(OP_SPECS)
    assert all(f.ops <= set(OP_SPECS) for f in FAMILIES)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("semantics", list(Semantics))
def test_each_class_is_shown_only_by_operations_whose_row_lists_its_family(
    level: int, semantics: Semantics
) -> None:
    """The coverage column agrees with the reference: the class a corpus path reaches last
    is shown by its last operation, whose row lists the class's family (or the family
    follows from the table: rows, roles, outcome, result)."""
    for cls, path in load_corpus(level, semantics).paths.items():
        family = family_of(cls)
        if family.name in ("row", "role"):
            continue
        assert path[-1].name in family.ops, (cls, path[-1])


def test_a_heartbeat_from_an_operation_whose_row_does_not_list_the_family_is_refused() -> None:
    """classify guards the coverage column: a heartbeat class is never counted for an
    operation the column does not list (a table that forgot one fails loudly)."""
    reference = ReferenceAdapter()
    reference.start(2)
    op = Op.of("register", task="s1")
    before = reference._before(op)
    with pytest.raises(MisuseError, match="register sent a heartbeat"):
        classify(op, before, {"ok": True, "heartbeats": ["00"]})


def test_the_coverage_page_shows_the_families_and_the_corpus_as_they_are() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "coverage.md").read_text()
    (section,) = re.findall(
        r"<!-- coverage:families -->\n(.*?)<!-- /coverage:families -->", doc, re.S)
    assert section == families_table()
    for level in LEVELS:
        for semantics in Semantics:
            corpus = load_corpus(level, semantics)
            row = f"| {level} | {semantics.value} | {len(corpus.paths)} | {len(corpus.runs())} |"
            assert row in doc, row


def test_the_row_classes_are_the_spec_tables() -> None:
    assert len(set(ROW_CLASSES)) == len(LIFECYCLE_ROWS)
    assert len(set(ROLE_CLASSES)) == len(ROLE_ROWS)
    assert {family_of(c).name for c in ROW_CLASSES} == {"row"}
    assert {family_of(c).name for c in ROLE_CLASSES} == {"role"}


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("semantics", list(Semantics))
def test_every_corpus_class_belongs_to_a_family_and_its_path_reaches_it(
    level: int, semantics: Semantics
) -> None:
    corpus = load_corpus(level, semantics)
    assert corpus.level == level and corpus.semantics is semantics
    for cls in corpus.paths:
        family_of(cls)  # KeyError: a class of no family
    # replay a sample of paths on a counting reference: each reaches its class
    for cls, path in list(corpus.paths.items())[::25]:
        reached: Counter[str] = Counter()
        adapter = counting_reference(
            functools.partial(ReferenceAdapter, semantics=semantics), reached)()
        adapter.start(level)
        for op in path:
            adapter.call(op)
        assert cls in reached, (cls, path)


@pytest.mark.slow
@pytest.mark.parametrize("level", LEVELS)
def test_the_shipped_corpus_is_fresh(level: int) -> None:
    """Regenerate with: python -m statemeta.harness.directed --write."""
    for semantics in Semantics:
        fresh = corpus_text(build_corpus(level, semantics, workers=1))
        assert corpus_file(level, semantics).read_text() == fresh, (
            f"the L{level}-{semantics.value} corpus is stale: python -m "
            "statemeta.harness.directed --write")


def _levels(variant: str) -> tuple[int, ...]:
    """Where the variant's broken code can show: a lifecycle's at every level, a meta's at
    levels 2 and 3, but a write that fails needs level 3's store faults."""
    if VARIANTS[variant].meta_class.lifecycle_class is not StreamMeta.lifecycle_class:
        return (1, 2, 3)
    return (3,) if variant == "memory_before_write" else (2, 3)


CASES = [(v, level) for v in sorted(VARIANTS) for level in _levels(v)]


def _explorer_finds_shorter(variant: str, level: int, length: int) -> list[Op] | None:
    """A counterexample the explorer finds within the corpus's bounds in fewer than
    ``length`` operations, if any (level 1 has no explorer: None)."""
    if level == 1 or length <= 1:
        return None
    bounds = CORPUS_BOUNDS[level]
    bounds = attrs.evolve(bounds, max_depth=min(length - 1, bounds.max_depth))
    found = explore(bounds, variant=variant, workers=1).counterexample
    return None if found is None else list(found.ops)


def _check(variant: str, level: int, seed_value: int, examples: int = 100) -> tuple[
    list[Op], int, int
]:
    report = run_check(
        ReferenceAdapter(variant, check_invariants=False),
        level=level,
        hypothesis_settings=settings(check_settings(examples, 50)),
        sut_label=f"variant {variant}",
        seed_value=seed_value,
    )
    assert report.trace is not None, f"{variant} at level {level} not caught"
    return list(report.trace.ops), report.examples, report.directed


@pytest.mark.parametrize(("variant", "level"), CASES)
def test_every_variant_is_caught_in_the_directed_phase_at_its_shortest_length(
    variant: str, level: int
) -> None:
    ops, examples, directed = _check(variant, level, seed_value=0)
    assert examples == directed > 0  # no random example ran
    again, _, _ = _check(variant, level, seed_value=2**31 + 12345)
    assert again == ops  # the same trace on every seed
    assert _explorer_finds_shorter(variant, level, len(ops)) is None, ops


def test_the_directed_phase_passes_the_reference_in_both_semantics() -> None:
    for semantics in Semantics:
        for level in LEVELS:
            result = run_directed(
                load_corpus(level, semantics),
                sut=ReferenceAdapter(check_invariants=False, semantics=semantics),
                reference=unchecked_reference(semantics),
            )
            assert result.divergence is None
            assert result.runs == len(load_corpus(level, semantics).runs())


def test_a_default_check_reaches_every_class_within_the_bounds(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["check", "--sut", SERVE, "--level", "3", "--seed", "5", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    doc = json.loads(captured.out)
    coverage = doc["coverage"]
    assert coverage["reached_reachable"] == coverage["reachable"] == len(
        load_corpus(3, "intended").paths)
    assert not [c for c, why in coverage["missed"].items() if "not hit yet" in why]
    assert doc["directed"] == len(load_corpus(3, "intended").runs())
    assert "coverage: " in captured.err and "classes reachable within the bounds" in captured.err


def test_without_the_directed_phase_check_reports_what_random_examples_missed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["check", "--sut", SERVE, "--level", "3", "--seed", "5", "--examples", "2",
                 "--steps", "5", "--no-directed", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["directed"] == 0
    coverage = doc["coverage"]
    assert coverage["reached_reachable"] < coverage["reachable"]
    assert any("not hit yet" in why for why in coverage["missed"].values())


def test_the_explorer_counts_a_close_once() -> None:
    bounds = Bounds(stream_tasks=1, fill_history=False, role_changes=0, start_rounds=0,
                    reopens=1, faults=0, clock_advances=0, max_depth=1)
    found = explore(bounds, symmetry=False)
    assert found.coverage.role_rows[Role.UNINIT, RoleEvent.CLOSE, Role.UNINIT] == 1


def test_check_json_counts_each_class_reached(capsys: pytest.CaptureFixture[str]) -> None:
    """``coverage.classes``: how often each class was reached (statemeta report's heatmaps),
    every table row either counted there or missed with why."""
    code = main(["check", "--sut", SERVE, "--level", "2", "--seed", "5", "--examples", "2",
                 "--steps", "5", "--no-directed", "--json"])
    coverage = json.loads(capsys.readouterr().out)["coverage"]
    assert code == 0
    classes = coverage["classes"]
    assert len(classes) == coverage["reached"] > 0
    assert all(isinstance(n, int) and n > 0 for n in classes.values())
    for row in (*ROW_CLASSES, *ROLE_CLASSES):
        assert (row in classes) != (row in coverage["missed"]), row


@pytest.mark.parametrize("level", LEVELS)
def test_role_rows_are_missed_only_at_levels_that_have_roles(level: int) -> None:
    """Level 1 drives one task's lifecycle: it has no role to change, so none is missed."""
    missed = CoverageReport(Counter(), load_corpus(level, "intended")).missed
    assert any(c.startswith("role:") for c in missed) is (level > 1)



def test_level_1_counts_the_attached_rows_its_directed_phase_queues(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An attached row (CK -PAUSE-> PAUSE waits for READY) is taken when its event is queued:
    level 1's corpora hold a path to each, and a level-1 check prints no missed line."""
    attached = {row_class(r) for r in LIFECYCLE_ROWS if r.attach is not None}
    for semantics in Semantics:
        assert attached <= set(load_corpus(1, semantics).paths), semantics
    code = main(["check", "--sut", SERVE, "--level", "1", "--seed", "5", "--examples", "1"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "coverage: " in captured.out and "missed:" not in captured.out
