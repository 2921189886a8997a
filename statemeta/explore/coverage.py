"""The coverage report of an exploration: table rows taken, rows not reached (and why), and
the size and speed of the search; as JSON for machines and as text for people."""

from __future__ import annotations

from collections import Counter
from typing import Any

from statemeta import invariants
from statemeta.explore.search import Exploration, Violation
from statemeta.explore.state import FINGERPRINT_BITS, collision_probability
from statemeta.harness.callers import Callers
from statemeta.harness.coverage_model import rows_json, rows_lines
from statemeta.tables import Role, RoleEvent, RoleRow, TaskStatus, TransitionRow


def invariant_ids() -> tuple[str, ...]:
    """The catalogue of spec/invariants.md: every function of statemeta.invariants whose
    docstring starts with its own id."""
    ids = []
    for name in invariants.__all__:
        doc = getattr(getattr(invariants, name), "__doc__", None) or ""
        invariant_id = name.replace("_", "-")
        if doc.startswith(f"{invariant_id}:"):
            ids.append(invariant_id)
    return tuple(ids)


def rows_of(*results: Exploration) -> dict[str, Any]:
    """The table rows the searches took between them (``rows_json``'s shape), each row not
    reached with why: for one search, the report's; for several, ``verify``'s."""
    depths = "/".join(str(r.bounds.max_depth) for r in results)
    changes = "/".join(str(r.bounds.role_changes) for r in results)
    lifecycle: Counter[TransitionRow] = Counter()
    roles: Counter[tuple[Role, RoleEvent, Role]] = Counter()
    statuses: set[TaskStatus] = set()
    for result in results:
        lifecycle.update(result.coverage.lifecycle_rows)
        roles.update(result.coverage.role_rows)
        statuses |= result.statuses
    roles_seen = {r[0] for r in roles} | {r[2] for r in roles} | {Role.UNINIT}

    def why_lifecycle(row: TransitionRow) -> str:
        if row.from_status not in statuses:
            return f"no task is ever {row.from_status.name} within the bounds"
        return (f"{row.from_status.name} is reached, but not with {row.event.name} "
                f"applied within {depths} operations")

    def why_role(row: RoleRow) -> str:
        if row.from_role not in roles_seen:
            return f"{row.from_role.name} is never reached within the bounds"
        return f"not taken within {depths} operations and {changes} role changes"

    return rows_json(lifecycle, roles, why_lifecycle, why_role)


def report(result: Exploration) -> dict[str, Any]:
    """The report as a JSON value."""
    bounds = result.bounds
    rows = rows_of(result)
    stats = result.stats
    counterexample = result.counterexample
    return {
        "bounds": bounds.to_json(),
        "semantics": result.semantics.value,
        "callers": result.callers.value,
        "variant": result.variant,
        "all_violations": result.all_violations,
        "symmetry": result.symmetry,
        "complete": result.complete,
        "states": stats.states,
        "transitions": stats.transitions,
        "mirrored_transitions": stats.mirrored,
        "refused_transitions": stats.refused,
        "fingerprint_bits": FINGERPRINT_BITS,
        "collision_probability": collision_probability(stats.states),
        "workers": result.workers,
        "cluster": result.cluster,
        "depth": stats.depth,
        "states_per_depth": stats.per_depth,
        "seconds": round(stats.seconds, 3),
        "step_seconds": round(stats.step_seconds, 3),
        "states_per_second": round(stats.states_per_second, 1),
        "transitions_per_second": round(stats.transitions / stats.seconds, 1)
        if stats.seconds
        else 0.0,
        "invariants": list(invariant_ids()),
        **rows,
        "counterexample": None
        if counterexample is None
        else {
            "kind": counterexample.kind,
            "detail": counterexample.detail,
            "length": len(counterexample.steps),
            "ops": [repr(op) for op in counterexample.ops],
        },
        "violations": [violation_json(v) for v in result.violations],
    }


def violation_json(violation: Violation) -> dict[str, Any]:
    """One distinct violation (the CLI adds the path of its trace file)."""
    cex = violation.counterexample
    return {
        "invariant": violation.invariant,
        "operation": violation.operation,
        "length": len(cex.steps),
        "kind": cex.kind,
        "detail": cex.detail,
        "ops": [repr(op) for op in cex.ops],
    }


def format_report(doc: dict[str, Any]) -> str:
    """The report for people."""
    lines = [
        f"explored {doc['states']} distinct states, {doc['transitions']} transitions, "
        f"depth {doc['depth']}, in {doc['seconds']:.1f} s ({doc['states_per_second']:.0f} "
        f"states/s, {doc['transitions_per_second']:.0f} transitions/s)"
        + (" with symmetry reduction" if doc["symmetry"] else ""),
        f"of which running the operations on the reference: {doc['step_seconds']:.1f} s "
        "(summed over workers: what the states cost with no key, copy or search)",
        f"states first found per depth: {doc['states_per_depth']}",
        f"transitions not run as mirrors of symmetric ones: {doc['mirrored_transitions']}"
        f"; as refusals on unmapped tasks: {doc['refused_transitions']}"
        + f"; worker processes: {doc['workers']}"
        + (f" (on the cluster at {doc['cluster']})" if doc["cluster"] else ""),
        f"seen set: {doc['fingerprint_bits']}-bit fingerprints (probability that two states "
        f"shared one: {doc['collision_probability']:.1e})",
        f"bounds: {doc['bounds']}",
        f"invariants checked in every state: {len(doc['invariants'])} "
        f"({', '.join(doc['invariants'])})",
        *rows_lines(doc),
    ]
    lines.append(f"semantics: {doc['semantics']}" + (
        f", variant {doc['variant']}" if doc["variant"] else "")
        + (f", callers {doc['callers']}" if doc["callers"] != Callers.DIRECT.value else ""))
    cex = doc["counterexample"]
    if cex is None:
        lines.append("no invariant fails" + ("" if doc["complete"] else " (search incomplete)"))
    elif not doc["all_violations"]:
        lines.append(f"FAILED ({cex['kind']}) after {cex['length']} steps: {cex['detail']}")
        lines += [f"  {i + 1}. {op}" for i, op in enumerate(cex["ops"])]
    else:
        violations = doc["violations"]
        lines.append(
            f"FAILED: {len(violations)} distinct violations (invariant, operation), each with "
            "a shortest trace:"
        )
        for v in violations:
            lines.append(f"  {v['invariant']} by {v['operation']}, {v['length']} steps: "
                         f"{v['detail']}")
            lines += [f"    {i + 1}. {op}" for i, op in enumerate(v["ops"])]
    return "\n".join(lines)
