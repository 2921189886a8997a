"""Mermaid and Graphviz diagrams and row tables for docs/, generated from the spec tables.

Each machine is drawn from one list of edges (``lifecycle_edges``, ``roles_edges``: one per
table row), which the Mermaid and the dot renderings share (``statemeta spec --mermaid`` /
``--dot`` print them; ``statemeta report`` draws its heatmaps from the same rows).

Generated text sits in the docs between ``<!-- generated:NAME -->`` and
``<!-- end generated:NAME -->``; ``refresh_docs`` finds (and rewrites) stale files, and a test
keeps the committed docs in step with the tables.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import attrs

from statemeta.errors import SpecError
from statemeta.tables import LIFECYCLE, ROLES, Role, RoleRow, TaskStatus, TransitionRow

__all__ = [
    "GENERATED",
    "Edge",
    "lifecycle_dot",
    "lifecycle_edges",
    "lifecycle_mermaid",
    "lifecycle_rows_markdown",
    "refresh_docs",
    "regenerate",
    "roles_dot",
    "roles_edges",
    "roles_mermaid",
    "roles_rows_markdown",
]


def _label(row: TransitionRow) -> str:
    name = row.event.name.lower()
    if row.two_phase:
        return f"{name} (two-phase)"
    if row.attach is not None:
        return f"{name} (queued until {row.attach.name.lower()})"
    return name


@attrs.frozen
class Edge:
    """One table row as a diagram's edge: state names in lower case, the row's label."""

    source: str
    target: str
    label: str


def lifecycle_edges() -> list[Edge]:
    """The lifecycle table's rows as edges, in table order."""
    return [
        Edge(r.from_status.name.lower(), r.to_status.name.lower(), _label(r))
        for r in LIFECYCLE.rows
    ]


def lifecycle_mermaid() -> str:
    """The lifecycle table as a mermaid state diagram, one edge per row."""
    lines = ["```mermaid", "stateDiagram-v2"]
    lines += [f'    state "{s.display} ({s.value})" as {s.name.lower()}' for s in TaskStatus]
    lines.append(f"    [*] --> {LIFECYCLE.initial.name.lower()}")
    lines += [f"    {e.source} --> {e.target}: {e.label}" for e in lifecycle_edges()]
    lines.append("```")
    return "\n".join(lines)


def _dot(name: str, initial: str, states: dict[str, str], edges: list[Edge]) -> str:
    """A Graphviz digraph: one node per state (``states``: name -> label), an entry arrow."""
    lines = [f"digraph {name} {{", "    rankdir=LR;", "    node [shape=box, style=rounded];",
             '    start [shape=point, label=""];']
    lines += [f'    {state} [label="{label}"];' for state, label in states.items()]
    lines.append(f"    start -> {initial};")
    lines += [f'    {e.source} -> {e.target} [label="{e.label}"];' for e in edges]
    lines.append("}")
    return "\n".join(lines)


def lifecycle_dot() -> str:
    """The lifecycle table as a Graphviz digraph, one edge per row."""
    states = {s.name.lower(): f"{s.display} ({s.value})" for s in TaskStatus}
    return _dot("lifecycle", LIFECYCLE.initial.name.lower(), states, lifecycle_edges())


def lifecycle_rows_markdown() -> str:
    """The lifecycle rows as a markdown table, in table order."""
    lines = ["| from | event | to | attach (waits for) | two-phase |", "|---|---|---|---|---|"]
    for r in LIFECYCLE.rows:
        attach = r.attach.name.lower() if r.attach is not None else ""
        lines.append(
            f"| {r.from_status.name.lower()} | {r.event.name.lower()} | {r.to_status.name.lower()}"
            f" | {attach} | {'yes' if r.two_phase else ''} |"
        )
    return "\n".join(lines)


def _effects(row: RoleRow) -> list[str]:
    flags = {
        "start_heartbeat": row.start_heartbeat,
        "stop_heartbeat": row.stop_heartbeat,
        "send_before_close": row.send_before_close,
    }
    return [name for name, on in flags.items() if on]


def roles_edges() -> list[Edge]:
    """The role table's rows as edges, in table order; a label names the row's effects."""
    return [
        Edge(r.from_role.name.lower(), r.to_role.name.lower(),
             " / ".join([r.event.name.lower(), *_effects(r)]))
        for r in ROLES.rows
    ]


def roles_mermaid() -> str:
    """The role table as a mermaid state diagram; edge labels name the effects."""
    lines = ["```mermaid", "stateDiagram-v2", f"    [*] --> {ROLES.initial.name.lower()}"]
    lines += [f"    {e.source} --> {e.target}: {e.label}" for e in roles_edges()]
    lines.append("```")
    return "\n".join(lines)


def roles_dot() -> str:
    """The role table as a Graphviz digraph; edge labels name the effects."""
    states = {r.name.lower(): f"{r.name.lower()} ({r.value})" for r in Role}
    return _dot("roles", ROLES.initial.name.lower(), states, roles_edges())


def roles_rows_markdown() -> str:
    """The role rows as a markdown table, in table order."""
    lines = ["| from | event | to | effects |", "|---|---|---|---|"]
    lines += [
        f"| {r.from_role.name.lower()} | {r.event.name.lower()} | {r.to_role.name.lower()}"
        f" | {', '.join(_effects(r))} |"
        for r in ROLES.rows
    ]
    return "\n".join(lines)


GENERATED: dict[str, dict[str, Callable[[], str]]] = {
    "lifecycle.md": {
        "lifecycle-diagram": lifecycle_mermaid,
        "lifecycle-rows": lifecycle_rows_markdown,
    },
    "roles.md": {"roles-diagram": roles_mermaid, "roles-rows": roles_rows_markdown},
}
"""Generated sections: doc file name (in docs/) -> section name -> renderer."""


def regenerate(text: str, sections: dict[str, Callable[[], str]], where: str) -> str:
    """``text`` with every named section between its markers replaced by a fresh rendering."""
    for name, render in sections.items():
        begin, end = f"<!-- generated:{name} -->", f"<!-- end generated:{name} -->"
        head, found, rest = text.partition(begin)
        _, found_end, tail = rest.partition(end)
        if not found or not found_end:
            raise SpecError(f"{where}: no {begin} ... {end} markers")
        text = f"{head}{begin}\n{render()}\n{end}{tail}"
    return text


def refresh_docs(docs_dir: Path, *, write: bool) -> list[str]:
    """The doc files whose generated sections are stale; with ``write``, refreshes them."""
    stale = []
    for file_name, sections in GENERATED.items():
        path = docs_dir / file_name
        text = path.read_text(encoding="utf-8")
        fresh = regenerate(text, sections, str(path))
        if fresh != text:
            stale.append(str(path))
            if write:
                path.write_text(fresh, encoding="utf-8")
    return stale
