"""``python -m statemeta.serve [--concurrent] [--variant NAME] [--observe KEYS] [--results
OP=FORM,...] [--sets KEYS] [--blocks OPS]``: the reference behind the harness protocol.

Reads one JSON request per line on stdin, writes one JSON response per line on stdout, until
stdin ends (docs/harness-protocol.md). Behind it is a ReferenceAdapter, at every level; with
``--variant`` one of the deliberately broken variants, so the harness can show it catches them
through the protocol; with ``--observe`` / ``--outcomes`` it declares and reports only part of
its view (protocol 2), with ``--results`` it gives only part of those operations' results
(``{"ok": null}`` for a value it withholds, as a call returning a code would), with ``--sets``
it sends those keys sorted rather than in member order, with ``--blocks`` it answers those
operations ``{"blocked": true}`` where the seed's C waits (statemeta.harness.blocking), so the
harness's handling of
declarations is tested on the reference itself. The served meta does not check its own
invariants: the harness checks them on the view, as it does for any implementation. Protocol
errors are answered with a code of ERROR_CODES and the server goes on; an unexpected exception
is answered ``internal`` and its traceback goes to stderr. The seed reference's undefined
behaviour (statemeta.errors.UndefinedBehaviour) is answered ``fault``, as the compiled C's
sanitizer finding is, and the instance is gone. With ``--concurrent``, the
thread-safe facade over the reference (or a locking variant) serves many clients at once: the
handshake declares ``"concurrent": true``; an operation request that names its ``client`` is
handed to a pool of ``WORKERS`` threads and answered when it is done, so responses come in any
order (each names its request's id); each client's handles are its own (FacadeAdapter). A
request without a client (hello, start, stop, view, or an operation that names none) waits until
every request in flight is answered, then is answered in turn: the harness sends those only when
no call is running.

The protocol document's tables are generated from ERROR_CODES, OP_SPECS, the task pool, the
observable keys and the invariants' reads (``python -m statemeta.serve --write-doc``; a test
keeps the committed doc current). ``python -m statemeta.serve`` is the public command: the
entry module statemeta/serve.py runs ``main`` here.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import traceback
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TextIO

from statemeta.cli_args import Parser, add_semantics, view_keys
from statemeta.diagrams import regenerate
from statemeta.errors import MisuseError, UndefinedBehaviour
from statemeta.harness.adapter import PROTOCOL_VERSION, PROTOCOL_VERSIONS
from statemeta.harness.blocking import BLOCKED, BLOCKING
from statemeta.harness.callers import rules_markdown
from statemeta.harness.facade_target import FacadeAdapter
from statemeta.harness.locking_variants import LOCKING_VARIANTS
from statemeta.harness.normalize import Json
from statemeta.harness.observation import (
    COARSE_FORMS,
    IDENTITY,
    OBJECT_FIELDS,
    OUTCOMES,
    RESULT_FORMS,
    SET_KEYS,
    VIEW_KEYS,
    Observation,
)
from statemeta.harness.operations import DOMAINS, LEVELS, OP_SPECS, TASK_POOL, Op, ops_at
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.subprocess_adapter import pool_json
from statemeta.harness.variants import VARIANTS
from statemeta.invariants import VIEW_INVARIANTS
from statemeta.semantics import Semantics

__all__ = [
    "ERROR_CODES",
    "PROTOCOL_DOC",
    "WORKERS",
    "ConcurrentServer",
    "ProtocolError",
    "Server",
    "main",
    "refresh_protocol_doc",
]

ERROR_CODES: dict[str, str] = {
    "bad_request": 'the line is not a JSON object with an integer "id", an "op" string and an '
    '"args" object',
    "unsupported_protocol": "hello named a protocol version the implementation does not speak",
    "unsupported_level": "start named a level the implementation did not list in hello",
    "not_started": "an operation or view before start (or after stop)",
    "unknown_op": "no such operation at the started level",
    "bad_args": "the arguments do not fit the operation (names, values outside their domain)",
    "internal": "the implementation failed unexpectedly: a bug, which the message describes",
    "fault": "the call hit undefined behaviour or a fatal internal error (a sanitizer's report, "
    "a failed assertion): the message is the finding; the instance is gone (the next start "
    "makes a new one). The run fails with a failure of kind fault",
}
"""Every protocol error code, and when an implementation answers it."""

PROTOCOL_DOC = Path(__file__).resolve().parents[2] / "docs" / "harness-protocol.md"


class ProtocolError(Exception):
    """A request the server refuses: answered ``{"id", "error": {"code", "message"}}``."""

    def __init__(self, code: str, message: str) -> None:
        assert code in ERROR_CODES
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")


class Server:
    """One implementation behind the protocol: turns request lines into response lines.

    ``declares``: the ``results`` and ``sets`` fields its hello adds (none: it gives every
    result in full and every list in the reference's order)."""

    def __init__(self, adapter: ReferenceAdapter, declares: dict[str, Json] | None = None) -> None:
        self.adapter = adapter
        self.declares = declares or {}
        self.level = 0
        """The started level (0: no instance)."""
        self.observation: Observation | None = None
        """What ``declares`` withholds at the started level (None: nothing)."""

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
            return self._hello(args.get("protocol"))
        if op == "start":
            level = args.get("level")
            levels = self.adapter.hello()["levels"]
            if level not in LEVELS or not isinstance(levels, list) or level not in levels:
                raise ProtocolError("unsupported_level", f"level {level!r}; levels are {levels}")
            assert isinstance(level, int)
            self.adapter.start(level)
            self.level = level
            if self.declares:
                self.observation = Observation.of_hello(self._hello(PROTOCOL_VERSION), level)
            return None
        if op == "stop":
            self.adapter.stop()
            self.level = 0
            return None
        if self.level == 0:
            raise ProtocolError("not_started", f"{op} before start")
        if op == "view":
            view = self.adapter.view()
            return view if self.observation is None else self.observation.view_of(view)
        if op not in {spec.name for spec in ops_at(self.level)}:
            raise ProtocolError("unknown_op", f"no operation {op!r} at level {self.level}")
        try:
            parsed = Op.from_json({"op": op, "args": args})
        except MisuseError as error:
            raise ProtocolError("bad_args", str(error)) from error
        try:
            result = self.adapter.call(parsed)
        except UndefinedBehaviour as error:  # the seed's process would be gone: so is this one
            self.adapter.stop()
            self.level = 0
            raise ProtocolError("fault", f"the seed reference: {error}") from error
        if self.observation is None:
            return result
        given = self.observation.result_of(parsed, result)
        return given if given.keys() & {"ok", "error", BLOCKED} else {"ok": None, **given}

    def _hello(self, protocol: Json) -> Json:
        """Protocol 2; protocol 1 too unless it declares observations (1 cannot say them)."""
        hello = {**self.adapter.hello(), **self.declares}
        if protocol == PROTOCOL_VERSION:
            return hello
        if protocol not in PROTOCOL_VERSIONS:
            raise ProtocolError("unsupported_protocol", f"speaks protocols {PROTOCOL_VERSIONS}")
        if self.adapter.observed is not None or self.declares:
            raise ProtocolError(
                "unsupported_protocol",
                f"speaks protocol {PROTOCOL_VERSION} only: it declares what it observes",
            )
        return {**hello, "protocol": protocol}

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


# -- many clients at once -----------------------------------------------------------------------

WORKERS = 8
"""Threads that run the clients' requests."""


class ConcurrentServer(Server):
    """A Server whose operation requests run on a thread pool, each as its client."""

    adapter: FacadeAdapter

    def __init__(self, adapter: FacadeAdapter) -> None:
        super().__init__(adapter)
        self._out = threading.Lock()

    def serve(self, lines: Iterable[str], out: TextIO) -> None:
        """Answers every non-blank line; a client's request on the pool, the rest in turn."""
        in_flight: set[Future[None]] = set()
        with ThreadPoolExecutor(WORKERS, thread_name_prefix="statemeta-client") as pool:
            for line in lines:
                if not line.strip():
                    continue
                client = _client(line)
                if client is None:
                    wait(in_flight)
                    in_flight.clear()
                    self._write(out, self.respond(line))
                    continue
                in_flight = {f for f in in_flight if not f.done()}
                in_flight.add(pool.submit(self._as_client, client, line, out))
            wait(in_flight)

    def _as_client(self, client: int, line: str, out: TextIO) -> None:
        self.adapter.as_client(client)
        self._write(out, self.respond(line))

    def _write(self, out: TextIO, response: dict[str, Json]) -> None:
        text = json.dumps(response, separators=(",", ":")) + "\n"
        with self._out:
            out.write(text)
            out.flush()


def _client(line: str) -> int | None:
    """The client a request names (None: none, or not a request Server.respond would run)."""
    try:
        request = json.loads(line)
    except ValueError:
        return None
    if not isinstance(request, dict) or request.get("op") in {"hello", "start", "stop", "view"}:
        return None
    client = request.get("client")
    if isinstance(client, bool) or not isinstance(client, int) or client < 0:
        return None
    return client


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


def _observable_markdown() -> str:
    rows = [
        "| level | top-level keys (`view`) | task keys (`tasks`) | always held |",
        "|---|---|---|---|",
    ]
    Keys = tuple[tuple[str, ...], tuple[str, ...]]
    same: dict[tuple[Keys, Keys], list[int]] = {}
    for level, keys in VIEW_KEYS.items():
        same.setdefault((keys, IDENTITY[level]), []).append(level)
    for ((view, tasks), (identity_view, identity_tasks)), levels in same.items():
        dotted = [f"{k}.{f}" for k in view for f in OBJECT_FIELDS.get(k, ())]
        rows.append(
            f"| {', '.join(map(str, levels))} | {_codes(view)}"
            f"{'; one field of an object: ' + _codes(dotted) if dotted else ''} "
            f"| {_codes([*tasks, *COARSE_FORMS])} | {_codes([*identity_view, *identity_tasks])} |"
        )
    rows += ["", "| coarse form | of | what it keeps |", "|---|---|---|"]
    rows.extend(f"| `{name}` | `{key}` | {doc} |" for name, (key, doc, _) in COARSE_FORMS.items())
    rows += ["", "| `outcomes` | compared |", "|---|---|"]
    rows.extend(f"| `{name}` | {doc} |" for name, doc in OUTCOMES.items())
    return "\n".join(rows)


def _invariant_reads_markdown() -> str:
    rows = ["| invariant (spec/invariants.md) | the view keys it reads |", "|---|---|"]
    rows.extend(f"| `{name}` | {_codes(reads)} |" for name, _check, reads in VIEW_INVARIANTS)
    return "\n".join(rows)


def _codes(names: Iterable[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _variants_markdown() -> str:
    return "\n".join(f"- `{v.name}`: {v.doc}" for v in VARIANTS.values())


def _blocking_markdown() -> str:
    rows = [f"| `{op}` | {b.waits_in} | {b.when} |" for op, b in BLOCKING.items()]
    return "\n".join(["| operation | where the C waits | the seed waits when |",
                      "|---|---|---|", *rows])


def _locking_variants_markdown() -> str:
    return "\n".join(f"- `{v.name}`: {v.doc}" for v in LOCKING_VARIANTS.values())


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
    "protocol-observable": _observable_markdown,
    "protocol-invariant-reads": _invariant_reads_markdown,
    "protocol-locking-variants": _locking_variants_markdown,
    "protocol-blocking": _blocking_markdown,
    "protocol-callers": rules_markdown,
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
    parser.add_argument(
        "--variant",
        choices=sorted(VARIANTS | LOCKING_VARIANTS),
        metavar="NAME",
        help="serve this broken variant (with --concurrent: a locking variant): "
        + ", ".join(sorted(VARIANTS | LOCKING_VARIANTS)),
    )
    parser.add_argument(
        "--concurrent",
        action="store_true",
        help="serve the thread-safe facade to many clients at once (requests on a pool of "
        "threads, answered in any order)",
    )
    add_semantics(parser, default=Semantics.INTENDED.value)
    parser.add_argument(
        "--observe",
        type=view_keys,
        metavar="KEY,KEY,...",
        help="declare and report only these view keys, at each level that has them (protocol "
        "2; default: every key)",
    )
    parser.add_argument(
        "--outcomes", choices=sorted(OUTCOMES), default="full", help="default: %(default)s"
    )
    parser.add_argument(
        "--results",
        type=_result_forms,
        metavar="OP=FORM,...",
        help="give only part of these operations' results (FORM: "
        + ", ".join(RESULT_FORMS) + "; protocol 2)",
    )
    parser.add_argument(
        "--sets",
        type=_set_keys,
        metavar="KEY,...",
        help="declare these keys sets and send them sorted: " + ", ".join(SET_KEYS),
    )
    parser.add_argument(
        "--blocks",
        type=_blocking_ops,
        metavar="OP,...",
        help="declare these operations blocking and answer them {\"blocked\": true} where the "
        "seed waits: " + ", ".join(BLOCKING),
    )
    parser.add_argument(
        "--write-doc", action="store_true", help="refresh the tables in docs/harness-protocol.md"
    )
    parser.add_argument(
        "--doc",
        type=Path,
        metavar="FILE",
        default=PROTOCOL_DOC,
        help="the document --write-doc refreshes (default: a source checkout's; an installed "
        "statemeta has none)",
    )
    args = parser.parse_args(argv)
    if args.write_doc:
        if not args.doc.is_file():
            parser.error(f"--write-doc: no document at {args.doc}: pass --doc FILE")
        stale = refresh_protocol_doc(args.doc, write=True)
        print(f"{'rewrote' if stale else 'up to date'}: {args.doc}")
        return 0
    wanted = LOCKING_VARIANTS if args.concurrent else VARIANTS
    if args.variant is not None and args.variant not in wanted:
        parser.error(
            f"--variant {args.variant} is not a {'locking ' if args.concurrent else ''}variant "
            f"(with{'' if args.concurrent else 'out'} --concurrent: {sorted(wanted)})"
        )
    declares: dict[str, Json] = {}
    if args.results:
        declares["results"] = args.results
    if args.sets:
        declares["sets"] = args.sets
    if args.blocks:
        declares["blocks"] = args.blocks
    if args.concurrent:
        if args.observe is not None or args.outcomes != "full" or declares:
            parser.error(
                "--observe, --outcomes, --results, --sets and --blocks are for one client: not "
                "with --concurrent"
            )
        facade = FacadeAdapter(args.variant, semantics=args.semantics)
        ConcurrentServer(facade).serve(sys.stdin, sys.stdout)
        return 0
    adapter = ReferenceAdapter(
        args.variant,
        check_invariants=False,
        semantics=args.semantics,
        observe=args.observe,
        outcomes=args.outcomes,
    )
    Server(adapter, declares).serve(sys.stdin, sys.stdout)
    return 0


def _result_forms(text: str) -> dict[str, str]:
    """An argparse type: ``OP=FORM,...`` (``--results``), each checked as hello's is."""
    pairs = [item.strip().partition("=") for item in text.split(",") if item.strip()]
    forms = {op.strip(): form.strip() for op, _, form in pairs}
    try:
        Observation.of_hello({"protocol": PROTOCOL_VERSION, "results": forms}, 1)
    except MisuseError as e:
        raise argparse.ArgumentTypeError(f"{text!r}: {e}") from e
    return forms


def _set_keys(text: str) -> list[str]:
    """An argparse type: keys of SET_KEYS (``--sets``)."""
    keys = [key.strip() for key in text.split(",") if key.strip()]
    try:
        Observation.of_hello({"protocol": PROTOCOL_VERSION, "sets": keys}, 1)
    except MisuseError as e:
        raise argparse.ArgumentTypeError(f"{text!r}: {e}") from e
    return keys


def _blocking_ops(text: str) -> list[str]:
    """An argparse type: operations of BLOCKING (``--blocks``)."""
    ops = [op for op in text.split(",") if op]
    try:
        Observation.of_hello({"protocol": PROTOCOL_VERSION, "blocks": ops}, 1)
    except MisuseError as e:
        raise argparse.ArgumentTypeError(f"{text!r}: {e}") from e
    return ops
