"""``statemeta check --keep-going``: masks, and the catalogue of every distinct divergence.

One run maps every way an implementation differs instead of stopping at the first. Each
divergence is named by where it shows (``Mask``): the operation, and ``at``, one of

| ``at`` | what is no longer compared for that operation once masked |
|---|---|
| ``result`` | the operation's result |
| ``view.<keys>`` | the view at that key path, list indices dropped: ``view.tasks.status`` |
| ``invariant:<id>`` | that view invariant of spec/invariants.md on the implementation's view |
| ``durable`` | the durable model on the implementation's committed records |

The operation ``start`` names the views right after the protocol's ``start``, before any
operation. A run finds a divergence, shrinks it, writes its trace, masks it and searches on;
a divergence a mask covers is not reported again, and a view difference that an earlier step
made and this step left as it was is not this step's (statemeta.harness.machine). Each entry
names the switches of spec/divergences.toml that explain it (statemeta.harness.explain), and
the catalogue groups the entries by them. The machine and the traces import ``Mask``; the
check command fills the ``Catalogue``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import attrs

from statemeta.harness.differences import compact
from statemeta.harness.normalize import Json

__all__ = ["NO_MASKS", "START", "Catalogue", "Entry", "Mask", "key_path", "numbered_path"]

START = "start"
"""The operation name of a difference in the views before the first operation."""

_INDEX = re.compile(r"\[\d+\]")


def key_path(path: str) -> str:
    """A view difference's path without its list indices: every element is one divergence."""
    return _INDEX.sub("", path)


@attrs.frozen(order=True)
class Mask:
    """Where a divergence shows: ``at`` (see the module's table) after operation ``op``."""

    op: str
    at: str

    def to_json(self) -> dict[str, str]:
        return {"op": self.op, "at": self.at}


NO_MASKS: frozenset[Mask] = frozenset()


@attrs.frozen
class Entry:
    """One distinct divergence: where, the values first seen there, its shortest trace."""

    mask: Mask
    kind: str
    """The trace's failure kind (result, view, invariant, durable)."""
    reference: Json
    sut: Json
    trace: Path
    steps: int
    """The operations of the (shrunk) trace."""
    explained_by: tuple[str, ...] = ()
    """The smallest set of switches whose flip makes the trace pass (statemeta.harness.explain);
    empty: none explains it."""

    def to_json(self) -> dict[str, Any]:
        return {
            **self.mask.to_json(),
            "kind": self.kind,
            "reference": self.reference,
            "sut": self.sut,
            "trace": str(self.trace),
            "steps": self.steps,
            "explained_by": list(self.explained_by),
        }


@attrs.define
class Catalogue:
    """The divergences a run found, in the order found; their masks are what it skips."""

    entries: list[Entry] = attrs.field(factory=list)

    @property
    def masks(self) -> frozenset[Mask]:
        return frozenset(e.mask for e in self.entries)

    def to_json(self) -> list[dict[str, Any]]:
        return [e.to_json() for e in self.entries]

    def lines(self) -> list[str]:
        """The catalogue for people: one line per divergence, its trace on the next."""
        if not self.entries:
            return ["catalogue: no divergence"]
        out = [f"catalogue: {len(self.entries)} distinct divergence(s)"]
        for number, e in enumerate(self.entries, 1):
            out.append(
                f"  {number}. {e.mask.op} {e.mask.at}: reference {compact(e.reference)}, "
                f"implementation {compact(e.sut)}"
            )
            explained = ", ".join(e.explained_by) or "unexplained"
            out.append(f"     {e.trace} ({e.steps} steps); explained by: {explained}")
        return out + self._groups()

    def _groups(self) -> list[str]:
        """The entries grouped by the switches that explain them, the unexplained last."""
        groups: dict[str, list[int]] = {}
        for number, e in enumerate(self.entries, 1):
            groups.setdefault(" + ".join(e.explained_by) or "unexplained", []).append(number)
        unexplained = groups.pop("unexplained", None)
        listed = [*sorted(groups.items()), *([("unexplained", unexplained)] if unexplained else [])]
        return ["by switch:"] + [
            f"  {name}: {', '.join(map(str, numbers))}" for name, numbers in listed
        ]


def numbered_path(path: Path, number: int) -> Path:
    """The trace file of the ``number``-th divergence, beside ``path`` (``t.json`` ->
    ``t-1.json``): one file each, distinct from a stopping run's."""
    return path.with_name(f"{path.stem}-{number}{path.suffix}")
