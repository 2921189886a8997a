"""Mermaid diagrams and row tables for docs/, generated from the spec tables.

Generated text sits in the docs between ``<!-- generated:NAME -->`` and
``<!-- end generated:NAME -->``; ``refresh_docs`` finds (and rewrites) stale files, and a test
keeps the committed docs in step with the tables.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from statemeta.errors import SpecError
from statemeta.tables import LIFECYCLE, ROLES, RoleRow, TaskStatus, TransitionRow

__all__ = [
    "GENERATED",
    "lifecycle_mermaid",
    "lifecycle_rows_markdown",
    "refresh_docs",
    "regenerate",
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


def lifecycle_mermaid() -> str:
    """The lifecycle table as a mermaid state diagram, one edge per row."""
    lines = ["```mermaid", "stateDiagram-v2"]
    lines += [f'    state "{s.display} ({s.value})" as {s.name.lower()}' for s in TaskStatus]
    lines.append(f"    [*] --> {LIFECYCLE.initial.name.lower()}")
    lines += [
        f"    {r.from_status.name.lower()} --> {r.to_status.name.lower()}: {_label(r)}"
        for r in LIFECYCLE.rows
    ]
    lines.append("```")
    return "\n".join(lines)


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


def roles_mermaid() -> str:
    """The role table as a mermaid state diagram; edge labels name the effects."""
    lines = ["```mermaid", "stateDiagram-v2", f"    [*] --> {ROLES.initial.name.lower()}"]
    for r in ROLES.rows:
        label = " / ".join([r.event.name.lower(), *_effects(r)])
        lines.append(f"    {r.from_role.name.lower()} --> {r.to_role.name.lower()}: {label}")
    lines.append("```")
    return "\n".join(lines)


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
