"""The coverage report of an exploration: table rows taken, rows not reached (and why), and
the size and speed of the search; as JSON for machines and as text for people."""

from __future__ import annotations

from typing import Any

from statemeta import invariants
from statemeta.explore.search import Exploration, Violation
from statemeta.explore.state import FINGERPRINT_BITS, collision_probability
from statemeta.lifecycle import LIFECYCLE_ROWS
from statemeta.roles import ROLE_ROWS
from statemeta.tables import Role


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


def report(result: Exploration) -> dict[str, Any]:
    """The report as a JSON value."""
    bounds = result.bounds
    lifecycle_taken = result.coverage.lifecycle_rows
    taken = []
    missed = []
    for row in LIFECYCLE_ROWS:
        if lifecycle_taken[row]:
            taken.append({"row": row.label, "times": lifecycle_taken[row]})
        elif row.from_status not in result.statuses:
            missed.append({
                "row": row.label,
                "reason": f"no task is ever {row.from_status.name} within the bounds",
            })
        else:
            missed.append({
                "row": row.label,
                "reason": f"{row.from_status.name} is reached, but not with {row.event.name} "
                f"applied within {bounds.max_depth} operations",
            })
    role_taken = result.coverage.role_rows
    roles_seen = {r[0] for r in role_taken} | {r[2] for r in role_taken} | {Role.UNINIT}
    role_rows = []
    role_missed = []
    for r in ROLE_ROWS:
        key = (r.from_role, r.event, r.to_role)
        if role_taken[key]:
            role_rows.append({"row": r.label, "times": role_taken[key]})
        else:
            reason = (
                f"{r.from_role.name} is never reached within the bounds"
                if r.from_role not in roles_seen
                else f"not taken within {bounds.max_depth} operations and "
                f"{bounds.role_changes} role changes"
            )
            role_missed.append({"row": r.label, "reason": reason})
    stats = result.stats
    counterexample = result.counterexample
    return {
        "bounds": bounds.to_json(),
        "semantics": result.semantics.value,
        "variant": result.variant,
        "all_violations": result.all_violations,
        "symmetry": result.symmetry,
        "complete": result.complete,
        "states": stats.states,
        "transitions": stats.transitions,
        "mirrored_transitions": stats.mirrored,
        "partial_order": result.partial_order,
        "sleeping_transitions": stats.slept,
        "fingerprint_bits": FINGERPRINT_BITS,
        "collision_probability": collision_probability(stats.states),
        "workers": result.workers,
        "cluster": result.cluster,
        "depth": stats.depth,
        "states_per_depth": stats.per_depth,
        "seconds": round(stats.seconds, 3),
        "states_per_second": round(stats.states_per_second, 1),
        "transitions_per_second": round(stats.transitions / stats.seconds, 1)
        if stats.seconds
        else 0.0,
        "invariants": list(invariant_ids()),
        "lifecycle_rows": {
            "total": len(LIFECYCLE_ROWS),
            "taken": taken,
            "not_reached": missed,
        },
        "role_rows": {"total": len(ROLE_ROWS), "taken": role_rows, "not_reached": role_missed},
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
    lifecycle = doc["lifecycle_rows"]
    roles = doc["role_rows"]
    lines = [
        f"explored {doc['states']} distinct states, {doc['transitions']} transitions, "
        f"depth {doc['depth']}, in {doc['seconds']:.1f} s ({doc['states_per_second']:.0f} "
        f"states/s, {doc['transitions_per_second']:.0f} transitions/s)"
        + (" with symmetry reduction" if doc["symmetry"] else ""),
        f"states first found per depth: {doc['states_per_depth']}",
        f"transitions not run as mirrors of symmetric ones: {doc['mirrored_transitions']}"
        + (f"; not run by partial-order reduction: {doc['sleeping_transitions']}"
           if doc["partial_order"] else "")
        + f"; worker processes: {doc['workers']}"
        + (f" (on the cluster at {doc['cluster']})" if doc["cluster"] else ""),
        f"seen set: {doc['fingerprint_bits']}-bit fingerprints (probability that two states "
        f"shared one: {doc['collision_probability']:.1e})",
        f"bounds: {doc['bounds']}",
        f"invariants checked in every state: {len(doc['invariants'])} "
        f"({', '.join(doc['invariants'])})",
        f"lifecycle rows taken: {len(lifecycle['taken'])}/{lifecycle['total']}",
    ]
    lines += [f"  not reached: {m['row']}: {m['reason']}" for m in lifecycle["not_reached"]]
    lines.append(f"role rows taken: {len(roles['taken'])}/{roles['total']}")
    lines += [f"  not reached: {m['row']}: {m['reason']}" for m in roles["not_reached"]]
    lines.append(f"semantics: {doc['semantics']}" + (
        f", variant {doc['variant']}" if doc["variant"] else ""))
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
