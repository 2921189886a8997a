"""The import-time checks of the spec tables, on the real files and on deliberately bad copies."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from statemeta.errors import SpecError
from statemeta.tables import (
    LIFECYCLE,
    ROLES,
    Role,
    TaskEvent,
    TaskStatus,
    load_lifecycle,
    load_roles,
    read_spec,
    spec_dir,
)

Doc = dict[str, Any]
LIFECYCLE_DOC = read_spec(spec_dir() / "lifecycle.toml")
ROLES_DOC = read_spec(spec_dir() / "roles.toml")


def _row(doc: Doc, source: str, event: str) -> dict[str, Any]:
    (row,) = [r for r in doc["transition"] if r["from"] == source and r["event"] == event]
    return row


def test_the_spec_directory_is_the_repository_one() -> None:
    assert spec_dir() == Path(__file__).resolve().parents[2] / "spec"


def test_the_real_tables_cover_every_pair() -> None:
    assert len(LIFECYCLE.rows) + len(LIFECYCLE.rejected) == len(TaskStatus) * len(TaskEvent) == 80
    assert LIFECYCLE.initial is TaskStatus.UNINIT
    assert len(ROLES.rows) == 9
    assert ROLES.initial is Role.UNINIT


def test_loading_the_same_document_twice_gives_equal_tables() -> None:
    assert load_lifecycle(copy.deepcopy(LIFECYCLE_DOC)) == LIFECYCLE
    assert load_roles(copy.deepcopy(ROLES_DOC)) == ROLES


def _unknown_to(doc: Doc) -> None:
    _row(doc, "ready", "pause")["to"] = "paused"


def _unknown_event(doc: Doc) -> None:
    _row(doc, "ready", "pause")["event"] = "suspend"


def _unknown_key(doc: Doc) -> None:
    _row(doc, "uninit", "init")["two_phse"] = True


def _missing_pair(doc: Doc) -> None:
    doc["rejected"]["halt"].remove("stop")


def _row_and_rejection(doc: Doc) -> None:
    doc["rejected"]["halt"].append("ready")


def _duplicate_row(doc: Doc) -> None:
    doc["transition"].append(dict(_row(doc, "ready", "halt")))


def _duplicate_value(doc: Doc) -> None:
    doc["status"][1]["value"] = 0


def _value_differs_from_code(doc: Doc) -> None:
    doc["event"][9]["value"] = 11


def _missing_status(doc: Doc) -> None:
    del doc["status"][7]


def _unreachable_ck(doc: Doc) -> None:
    doc["transition"].remove(_row(doc, "ready", "gen_checkpoint"))
    doc["rejected"]["gen_checkpoint"].append("ready")


def _attached_and_two_phase(doc: Doc) -> None:
    _row(doc, "uninit", "init")["attach"] = "ready"


def _attached_without_a_row_to_fire(doc: Doc) -> None:
    _row(doc, "ck", "pause")["attach"] = "scan_history"
    # (scan_history, pause) exists, so make it lead elsewhere than the attached row says
    _row(doc, "scan_history", "pause")["to"] = "stop"


def _bad_predicate(doc: Doc) -> None:
    doc["predicates"]["should_stop"] = ["stop", "dropped"]


BAD_LIFECYCLES: list[tuple[Callable[[Doc], None], list[str]]] = [
    (_unknown_to, ["[[transition]] #10", "'ready'", "'pause'", "unknown TaskStatus 'paused'"]),
    (_unknown_event, ["[[transition]] #10", "unknown TaskEvent 'suspend'"]),
    (_unknown_key, ["[[transition]] #1", "two_phse"]),
    (_missing_pair, ["status 'stop' x event 'halt'", "neither"]),
    (_row_and_rejection, ["[rejected] 'halt'", "'ready' is also a transition row"]),
    (_duplicate_row, ["[[transition]] #34", "duplicate (from, event)"]),
    (_duplicate_value, ["[[status]] #2 ('dropping')", "value 0 already used by 'ready'"]),
    (_value_differs_from_code, ["[[event]] #10 ('dropping')", "TaskEvent.DROPPING = 10"]),
    (_missing_status, ["[[status]]", "no row for ck"]),
    (_unreachable_ck, ["'ck'", "not reachable from 'uninit'"]),
    (_attached_and_two_phase, ["[[transition]] #1", "attached or two-phase"]),
    (_attached_without_a_row_to_fire, ["[[transition]] #12", "plain row ('scan_history'"]),
    (_bad_predicate, ["[predicates] 'should_stop'", "'dropped'"]),
]


@pytest.mark.parametrize(
    ("spoil", "fragments"), BAD_LIFECYCLES, ids=[f.__name__ for f, _ in BAD_LIFECYCLES]
)
def test_a_bad_lifecycle_table_names_the_file_and_row(
    spoil: Callable[[Doc], None], fragments: list[str]
) -> None:
    doc = copy.deepcopy(LIFECYCLE_DOC)
    spoil(doc)
    with pytest.raises(SpecError) as raised:
        load_lifecycle(doc, "bad/lifecycle.toml")
    message = str(raised.value)
    assert message.startswith("bad/lifecycle.toml: ")
    for fragment in fragments:
        assert fragment in message


def _role_pair_missing(doc: Doc) -> None:
    del doc["transition"][4]


def _unknown_role(doc: Doc) -> None:
    doc["transition"][0]["to"] = "candidate"


def _effect_not_boolean(doc: Doc) -> None:
    doc["transition"][0]["start_heartbeat"] = "yes"


def _follower_unreachable(doc: Doc) -> None:
    for row in doc["transition"]:
        if row["to"] == "follower" and row["from"] != "follower":
            row["to"] = "uninit"


BAD_ROLES: list[tuple[Callable[[Doc], None], list[str]]] = [
    (_role_pair_missing, ["role 'leader' x event 'become_follower'", "no [[transition]] row"]),
    (_unknown_role, ["[[transition]] #1", "unknown Role 'candidate'"]),
    (_effect_not_boolean, ["[[transition]] #1", "'start_heartbeat' must be true or false"]),
    (_follower_unreachable, ["'follower'", "not reachable from 'uninit'"]),
]


@pytest.mark.parametrize(("spoil", "fragments"), BAD_ROLES, ids=[f.__name__ for f, _ in BAD_ROLES])
def test_a_bad_role_table_names_the_file_and_row(
    spoil: Callable[[Doc], None], fragments: list[str]
) -> None:
    doc = copy.deepcopy(ROLES_DOC)
    spoil(doc)
    with pytest.raises(SpecError) as raised:
        load_roles(doc, "bad/roles.toml")
    message = str(raised.value)
    assert message.startswith("bad/roles.toml: ")
    for fragment in fragments:
        assert fragment in message


def test_a_toml_syntax_error_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "lifecycle.toml"
    path.write_text("[[status]\nname = 'ready'\n", encoding="utf-8")
    with pytest.raises(SpecError, match=r"lifecycle\.toml: cannot read"):
        read_spec(path)
