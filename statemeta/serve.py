"""``python -m statemeta.serve [--variant NAME]``: the reference behind the harness protocol.

Reads one JSON request per line on stdin, writes one JSON response per line on stdout, until
stdin ends (docs/harness-protocol.md). Behind it is a ReferenceAdapter, at every level; with
``--variant`` one of the deliberately broken variants, so the harness can show it catches
them through the protocol. The served meta does not check its own invariants: the harness
checks them on the view, as it does for any implementation. Protocol errors are answered with
a code of ERROR_CODES and the server goes on; an unexpected exception is answered ``internal``
and its traceback goes to stderr.

The protocol document's tables are generated from ERROR_CODES, OP_SPECS and the task pool
(``python -m statemeta.serve --write-doc``; a test keeps the committed doc current).
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO

from statemeta.cli_args import Parser, add_semantics
from statemeta.diagrams import regenerate
from statemeta.errors import MisuseError
from statemeta.harness.adapter import PROTOCOL_VERSION
from statemeta.harness.normalize import Json
from statemeta.harness.operations import DOMAINS, LEVELS, OP_SPECS, TASK_POOL, Op, ops_at
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.subprocess_adapter import pool_json
from statemeta.harness.variants import VARIANTS
from statemeta.semantics import Semantics

__all__ = ["ERROR_CODES", "PROTOCOL_DOC", "ProtocolError", "Server", "main", "refresh_protocol_doc"]

ERROR_CODES: dict[str, str] = {
    "bad_request": 'the line is not a JSON object with an integer "id", an "op" string and an '
    '"args" object',
    "unsupported_protocol": "hello named a protocol version the implementation does not speak",
    "unsupported_level": "start named a level the implementation did not list in hello",
    "not_started": "an operation or view before start (or after stop)",
    "unknown_op": "no such operation at the started level",
    "bad_args": "the arguments do not fit the operation (names, values outside their domain)",
    "internal": "the implementation failed unexpectedly: a bug, which the message describes",
}
"""Every protocol error code, and when an implementation answers it."""

PROTOCOL_DOC = Path(__file__).resolve().parent.parent / "docs" / "harness-protocol.md"


class ProtocolError(Exception):
    """A request the server refuses: answered ``{"id", "error": {"code", "message"}}``."""

    def __init__(self, code: str, message: str) -> None:
        assert code in ERROR_CODES
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


class Server:
    """One implementation behind the protocol: turns request lines into response lines."""

    def __init__(self, adapter: ReferenceAdapter) -> None:
        self.adapter = adapter
        self.level = 0
        """The started level (0: no instance)."""

    def respond(self, line: str) -> dict[str, Json]:
        """The response to one request line."""
        request_id: Json = None
        try:
            request = json.loads(line)
            if isinstance(request, dict):
                request_id = request.get("id")
            op, args = _parse(request)
            return {"id": request_id, "result": self._answer(op, args)}
        except ProtocolError as error:
            return {"id": request_id, "error": {"code": error.code, "message": error.message}}
        except ValueError as error:  # not JSON at all
            return {"id": None, "error": {"code": "bad_request", "message": f"not JSON: {error}"}}
        except Exception as error:
            traceback.print_exc(file=sys.stderr)
            message = f"{type(error).__name__}: {error}"
            return {"id": request_id, "error": {"code": "internal", "message": message}}

    def _answer(self, op: str, args: dict[str, Json]) -> Json:
        if op == "hello":
            if args.get("protocol") != PROTOCOL_VERSION:
                raise ProtocolError(
                    "unsupported_protocol", f"speaks protocol {PROTOCOL_VERSION} only"
                )
            return self.adapter.hello()
        if op == "start":
            level = args.get("level")
            if level not in LEVELS:
                raise ProtocolError("unsupported_level", f"level {level!r}; levels are {LEVELS}")
            assert isinstance(level, int)
            self.adapter.start(level)
            self.level = level
            return None
        if op == "stop":
            self.adapter.stop()
            self.level = 0
            return None
        if self.level == 0:
            raise ProtocolError("not_started", f"{op} before start")
        if op == "view":
            return self.adapter.view()
        if op not in {spec.name for spec in ops_at(self.level)}:
            raise ProtocolError("unknown_op", f"no operation {op!r} at level {self.level}")
        try:
            parsed = Op.from_json({"op": op, "args": args})
        except MisuseError as error:
            raise ProtocolError("bad_args", str(error)) from error
        return self.adapter.call(parsed)

    def serve(self, lines: Iterable[str], out: TextIO) -> None:
        """Answers every non-blank line, flushing each response."""
        for line in lines:
            if line.strip():
                out.write(json.dumps(self.respond(line), separators=(",", ":")) + "\n")
                out.flush()


def _parse(request: object) -> tuple[str, dict[str, Json]]:
    if (
        not isinstance(request, dict)
        or not isinstance(request.get("id"), int)
        or not isinstance(request.get("op"), str)
        or not isinstance(request.get("args", {}), dict)
    ):
        raise ProtocolError("bad_request", f"{json.dumps(request)[:200]}")
    return request["op"], request.get("args", {})


# -- the protocol document's tables --------------------------------------------------------------


def _ops_markdown() -> str:
    rows = [
        "| op | level | args | result (`ok` value) | never sent unless |",
        "|---|---|---|---|---|",
    ]
    for spec in OP_SPECS.values():
        args = ", ".join(f"`{p.name}`: {p.kind}" for p in spec.params) or "-"
        requires = "-" if spec.precondition is None else spec.precondition.doc
        rows.append(f"| `{spec.name}` | {spec.level} | {args} | {spec.doc} | {requires} |")
    return "\n".join(rows)


def _domains_markdown() -> str:
    rows = ["| kind | values |", "|---|---|"]
    for kind, domain in DOMAINS.items():
        rows.append(f"| {kind} | {', '.join(f'`{json.dumps(v)}`' for v in domain)} |")
    return "\n".join(rows)


def _pool_markdown() -> str:
    rows = [
        "| slot | id | fill_history | trigger_param | h_task_id | stream_task_id | dispatches "
        "| what it is |",
        "|---|---|---|---|---|---|---|---|",
    ]
    keys = ("id", "fill_history", "trigger_param", "h_task_id", "stream_task_id", "dispatches")
    for slot, wire in zip(TASK_POOL, pool_json(), strict=True):
        cells = [wire[k] for k in keys]
        rows.append(
            f"| `{slot.name}` | "
            + " | ".join(f"`{json.dumps(c)}`" for c in cells)
            + f" | {slot.doc} |"
        )
    return "\n".join(rows)


def _errors_markdown() -> str:
    rows = ["| code | when |", "|---|---|"]
    rows.extend(f"| `{code}` | {when} |" for code, when in ERROR_CODES.items())
    return "\n".join(rows)


def _variants_markdown() -> str:
    return "\n".join(f"- `{v.name}`: {v.doc}" for v in VARIANTS.values())


_EXAMPLE_REQUESTS: tuple[tuple[str, dict[str, Json]], ...] = (
    ("hello", {"protocol": PROTOCOL_VERSION}),
    ("start", {"level": 1, "pool": pool_json()}),
    ("handle", {"task": "s1", "event": "init"}),
    ("complete", {"task": "s1", "event": "init"}),
    ("handle", {"task": "s1", "event": "gen_checkpoint"}),
    ("handle", {"task": "s1", "event": "pause"}),
    ("handle", {"task": "s1", "event": "checkpoint_done"}),
    ("view", {}),
    ("restore", {"task": "s1"}),
    ("complete", {"task": "s2", "event": "pause"}),
    ("stop", {}),
    ("start", {"level": 2, "pool": pool_json()}),
    ("register", {"task": "s1"}),
    ("register", {"task": "s1"}),
    ("acquire", {"task": "s1"}),
    ("unregister", {"task": "s1"}),
    ("register", {"task": "s3"}),
    ("update_stage_role", {"stage": 1, "is_leader": True}),
    ("advance_clock", {"ms": 5_000}),
    ("handle_event", {"task": "s2", "event": "pause"}),
    ("view", {}),
    ("stop", {}),
)
"""The example session of the protocol document (run against the reference when rendered)."""


def _example_markdown() -> str:
    server = Server(ReferenceAdapter(check_invariants=False))
    lines = ["```"]
    for number, (op, args) in enumerate(_EXAMPLE_REQUESTS, 1):
        request = json.dumps({"id": number, "op": op, "args": args}, separators=(",", ":"))
        response = json.dumps(server.respond(request), separators=(",", ":"))
        lines.extend([f"> {request}", f"< {response}"])
    server.adapter.stop()
    return "\n".join([*lines, "```"])


_SECTIONS: dict[str, Callable[[], str]] = {
    "protocol-example": _example_markdown,
    "protocol-ops": _ops_markdown,
    "protocol-domains": _domains_markdown,
    "protocol-pool": _pool_markdown,
    "protocol-errors": _errors_markdown,
    "protocol-variants": _variants_markdown,
}


def refresh_protocol_doc(path: Path = PROTOCOL_DOC, *, write: bool) -> bool:
    """Whether the document's generated tables are stale; with ``write``, refreshes them."""
    text = path.read_text(encoding="utf-8")
    fresh = regenerate(text, _SECTIONS, str(path))
    if write and fresh != text:
        path.write_text(fresh, encoding="utf-8")
    return fresh != text


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        prog="python -m statemeta.serve",
        description="The reference (or a broken variant) behind the harness protocol, on "
        "stdin/stdout (docs/harness-protocol.md).",
    )
    parser.add_argument("--variant", choices=sorted(VARIANTS), help="serve this broken variant")
    add_semantics(parser, default=Semantics.INTENDED.value)
    parser.add_argument(
        "--write-doc", action="store_true", help="refresh the tables in docs/harness-protocol.md"
    )
    args = parser.parse_args(argv)
    if args.write_doc:
        stale = refresh_protocol_doc(write=True)
        print(f"{'rewrote' if stale else 'up to date'}: {PROTOCOL_DOC}")
        return 0
    adapter = ReferenceAdapter(args.variant, check_invariants=False, semantics=args.semantics)
    Server(adapter).serve(sys.stdin, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
