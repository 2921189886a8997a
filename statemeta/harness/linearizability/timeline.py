"""A history drawn as text: one lane per client, each operation an interval, and a report.

Columns are the distinct event times in order (not to scale): what matters for
linearizability is which operations overlap, not by how much. An operation is drawn
``[#3---]`` from the column of its invocation to that of its response; a pending one runs to
the right edge as ``[#3--->``. A legend below gives each operation's times, op and result.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from statemeta.harness.linearizability.checker import Outcome, Verdict
from statemeta.harness.linearizability.history import History

__all__ = ["format_verdict", "timeline"]


def timeline(
    history: History[Any, Any],
    only: Sequence[int] | None = None,
    *,
    until: float | None = None,
    describe: Callable[[Any], str] = repr,
) -> str:
    """The operations at ``only`` (default: all), named by their index in ``history``, as
    seen at time ``until`` (``History.select``: later calls left out, later responses unseen)."""
    indices = [
        index
        for index in sorted(range(len(history.operations)) if only is None else only)
        if until is None or history.operations[index].invoked <= until
    ]
    chosen = list(zip(indices, history.select(indices, until).operations, strict=True))
    times = sorted(
        {op.invoked for _, op in chosen}
        | {op.returned for _, op in chosen if op.returned is not None}
    )
    column = {time: position for position, time in enumerate(times)}
    width = max((len(f"#{index}") for index in indices), default=2) + 3  # "[#12] "
    length = (len(times) + 1) * width
    lanes: dict[int, list[str]] = {}
    for index, op in chosen:
        lane = lanes.setdefault(op.client, [" "] * length)
        start = column[op.invoked] * width
        end = length - 1 if op.returned is None else column[op.returned] * width + width - 2
        lane[start : end + 1] = "-" * (end + 1 - start)
        label = f"[#{index}"
        lane[start : start + len(label)] = label
        lane[end] = ">" if op.returned is None else "]"
    names = {client: f"client {client}" for client in lanes}
    margin = max((len(name) for name in names.values()), default=0)
    lines = [
        f"{names[client].rjust(margin)} |{''.join(lanes[client]).rstrip()}"
        for client in sorted(lanes)
    ]
    for index, op in chosen:
        when = f"[{op.invoked}, {'pending' if op.pending else op.returned}]"
        seen = "no response" if op.pending else f"-> {describe(op.result)}"
        lines.append(f"  #{index} client {op.client} {when}: {describe(op.op)} {seen}")
    return "\n".join(lines)


def format_verdict(
    verdict: Verdict,
    history: History[Any, Any],
    *,
    describe: Callable[[Any], str] = repr,
) -> str:
    """The verdict in words; on failure, the counterexample's timeline."""
    size = f"{len(history.operations)} operations, {verdict.partitions} partition(s)"
    if verdict.outcome is Outcome.LINEARIZABLE:
        order = " ".join(f"#{index}" for index in verdict.witness)
        return f"linearizable ({size}, {verdict.steps} steps): {order}"
    if verdict.outcome is Outcome.UNKNOWN:
        return f"unknown: the budget of {verdict.steps} steps ran out ({size})"
    clients = {history.operations[index].client for index in verdict.counterexample}
    seen = "" if verdict.failed_at is None else f" as seen at time {verdict.failed_at}"
    ways = " or ".join(
        ", ".join(f"#{index} -> {describe(result)}" for index, result in way)
        for way in verdict.possible
    )
    return (
        f"not linearizable ({size}); no order of these {len(verdict.counterexample)} "
        f"operations of {len(clients)} client(s){seen} gives the observed results"
        + (f"; possible: {ways}" if ways else "")
        + ":\n"
        + timeline(history, verdict.counterexample, until=verdict.failed_at, describe=describe)
    )
