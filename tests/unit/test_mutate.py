"""statemeta mutate: the mutator, the in-memory copy, and a fixed, seeded sample of the analysis."""

from __future__ import annotations

import ast
import json
import sys
from collections import defaultdict

import pytest

from statemeta.cli import main
from statemeta.harness.mutants import Mutant, module_path, mutants_of, mutated_tree
from statemeta.harness.mutate import (
    MODULES,
    MutantAdapter,
    analyse,
    first_kill,
    load_listed,
    run_mutant,
    select_mutants,
)
from statemeta.harness.shadow import SHADOW, ImportGraph, Shadow
from statemeta.meta import heartbeat

CI_MODULES = ("statemeta.meta.launch", "statemeta.meta.restart", "statemeta.meta.start_round")
CI_SAMPLE = 5
CI_SEED = 33
"""The CI sample: 5 mutants of the start round, the launch and the restart, at run_check's
defaults: 2 killed by the directed phase, 2 equivalent, 1 open (each survivor costs the random
phase; measured 162 s with two workers on two cores shared with a second mutate run)."""

FAMILIES = {
    "flip": "compare", "boundary": "compare", "and": "boolop", "or": "boolop",
    "not": "not", "const+1": "constant", "const-1": "constant", "true": "constant",
    "false": "constant", "del": "statement", "return": "statement",
}


def _family(operator: str) -> str:
    return FAMILIES[operator] if operator in FAMILIES else FAMILIES[operator.split("-")[0]]


def _mutant(module: str, text: str, operator: str) -> Mutant:
    """The mutant ``operator`` of the line of ``module`` that holds ``text``."""
    lines = module_path(module).read_text().splitlines()
    line = next(i for i, t in enumerate(lines, 1) if text in t)
    return next(m for m in mutants_of(module) if m.line == line and m.operator == operator)


def test_every_operator_makes_mutants_that_compile_and_show_their_line() -> None:
    by_operator: dict[str, list[Mutant]] = defaultdict(list)
    for module in MODULES:
        for mutant in mutants_of(module):
            by_operator[mutant.operator].append(mutant)
    assert {_family(op) for op in by_operator} == {
        "compare", "boolop", "not", "constant", "statement"}
    for mutants in by_operator.values():
        for mutant in mutants[:1]:
            source = module_path(mutant.module).read_text()
            tree = mutated_tree(source, mutant)
            compile(tree, mutant.module, "exec")
            assert ast.unparse(tree) != ast.unparse(ast.parse(source)), mutant.id
            diff = mutant.diff(source).splitlines()
            assert diff[3] == "-" + source.splitlines()[mutant.line - 1], mutant.id
            assert diff[-1].startswith("+") and diff[-1][1:] not in diff[3:-1], mutant.id


def test_mutant_ids_are_unique() -> None:
    ids = [m.id for m in select_mutants()]
    assert len(ids) == len(set(ids))


def test_a_copy_of_an_unmutated_module_conforms_and_leaves_the_package_alone() -> None:
    """No false kill: the copy machinery alone changes nothing the check sees."""
    module = "statemeta.meta.heartbeat"
    tree = ast.parse(module_path(module).read_text())
    with Shadow(ImportGraph(), module, tree, {}) as copy:
        sut = MutantAdapter(copy.load("statemeta.harness.reference"),
                            copy.load("statemeta.harness.operations"), "unmutated")
        assert type(sut.inner).__module__.startswith(SHADOW)
        assert first_kill(sut, (2,), 0, random_phase=False) is None
    assert not [name for name in sys.modules if name.startswith(SHADOW)]


def test_a_known_killing_mutant_is_killed_by_the_directed_phase() -> None:
    """One heartbeat every 26 ticks instead of 25 (the spec's 5 s period broken)."""
    mutant = _mutant("statemeta.meta.heartbeat", "META_HB_SEND_IDLE_COUNTER = 25", "const+1")
    result = run_mutant(mutant, seed=0, equivalents={}, random_phase=False)
    assert (result.status, result.phase) == ("killed", "directed"), result
    assert heartbeat.META_HB_SEND_IDLE_COUNTER == 25  # the package itself is not mutated
    assert not [name for name in sys.modules if name.startswith(SHADOW)]


def test_a_listed_equivalent_mutant_is_reported_equivalent() -> None:
    mutant = _mutant("statemeta.meta.core", "state.ids.append(tid)", "del-call")
    listed = load_listed().equivalent
    assert mutant.id in listed
    result = run_mutant(mutant, seed=0, equivalents=listed, random_phase=False)
    assert result.status == "equivalent"
    assert result.detail == listed[mutant.id]


def test_every_listed_mutant_is_a_mutant_of_today() -> None:
    listed = load_listed()
    ids = {m.id for m in select_mutants()}
    assert set(listed.equivalent) <= ids
    assert set(listed.open) <= ids


def test_the_ci_sample_kills_every_mutant_not_listed() -> None:
    """A listed mutant killed (its entry is stale) or a survivor not listed fails."""
    listed = load_listed()
    sample = select_mutants(CI_MODULES, sample=CI_SAMPLE, seed=CI_SEED)
    report = analyse(sample, seed=CI_SEED, workers=2, equivalents=listed.equivalent)
    assert len(report.results) == CI_SAMPLE
    for result in report.results:
        if result.status == "killed":
            assert result.id not in listed.equivalent and result.id not in listed.open, result
        assert result.status != "error", result
    survivors = {r.id for r in report.survivors()}
    assert survivors <= set(listed.open), survivors - set(listed.open)


def test_the_command_prints_a_json_report(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["mutate", "--module", "statemeta.meta.launch", "--sample", "1", "--seed", "1",
                 "--directed-only", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == (1 if doc["counts"]["survived"] else 0)
    assert doc["counts"]["mutants"] == 1 and doc["seed"] == 1
    (mutant,) = doc["mutants"]
    assert mutant["module"] == "statemeta.meta.launch"
    assert mutant["diff"].startswith("--- a/statemeta/meta/launch.py")


def test_the_command_refuses_an_unknown_module(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["mutate", "--module", "statemeta.cli"])
    assert ended.value.code == 2
    assert "--module" in capsys.readouterr().err
