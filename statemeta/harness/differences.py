"""Where two JSON values differ, said so a person can read it.

One walk serves every report (a divergence's detail, a printed trace): dicts key by key, lists
element by element (the first differing element, or where the shorter one ends), and a
heartbeat, which travels as hex, decoded on both sides into its fields, so that a difference
reads ``heartbeats[0].entries[1].checkpoint_failed: reference 1, implementation 0`` instead of
two long hex strings.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import attrs

from statemeta.codec import decode_hb
from statemeta.errors import StatemetaError
from statemeta.harness.normalize import Json

__all__ = ["Difference", "compact", "differences", "first_difference", "located"]

@attrs.frozen
class Difference:
    """One place two values differ: its path, both sides' values there (None on the side
    without the key), the line saying so."""

    path: str
    reference: Json
    sut: Json
    text: str


def differences(reference: Json, sut: Json, path: str = "") -> Iterator[str]:
    """Each place the two values differ, as ``path: reference X, implementation Y``."""
    return (found.text for found in located(reference, sut, path))


def first_difference(reference: Json, sut: Json, path: str = "") -> str | None:
    """The first place the two values differ (None: equal)."""
    return next(differences(reference, sut, path), None)


def located(reference: Json, sut: Json, path: str = "") -> Iterator[Difference]:
    """Each place the two values differ, with its path and both values (``differences``'s
    lines, for a caller that keys on where: ``statemeta check --keep-going``'s masks)."""
    if isinstance(reference, dict) and isinstance(sut, dict):
        for key in sorted(set(reference) | set(sut), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in sut:
                text = f"{where}: only the reference has it ({compact(reference[key])})"
                yield Difference(where, reference[key], None, text)
            elif key not in reference:
                text = f"{where}: only the implementation has it ({compact(sut[key])})"
                yield Difference(where, None, sut[key], text)
            else:
                yield from located(reference[key], sut[key], where)
    elif isinstance(reference, list) and isinstance(sut, list):
        yield from _list_differences(reference, sut, path)
    elif reference != sut:
        decoded = _heartbeats(reference, sut, path)
        if decoded is not None:
            yield from located(*decoded, path)
        else:
            where = path or "(value)"
            text = f"{where}: reference {compact(reference)}, implementation {compact(sut)}"
            yield Difference(where, reference, sut, text)


def _list_differences(
    reference: list[Json], sut: list[Json], path: str
) -> Iterator[Difference]:
    for index, (left, right) in enumerate(zip(reference, sut, strict=False)):
        if left != right:
            yield from located(left, right, f"{path}[{index}]")
            if len(reference) == len(sut):
                continue
            return  # lengths differ too: what follows is shifted, the first place says it
    if len(reference) != len(sut):
        shorter = min(len(reference), len(sut))
        longer, side = (reference, "reference") if len(reference) > len(sut) else (sut, "sut")
        who = "the reference" if side == "reference" else "the implementation"
        where = path or "(list)"
        text = (
            f"{where}: {len(reference)} elements in the reference, {len(sut)} in the "
            f"implementation; only {who} has [{shorter}] = {compact(longer[shorter])}"
        )
        yield Difference(where, reference, sut, text)


def _heartbeats(reference: Json, sut: Json, path: str) -> tuple[Json, Json] | None:
    """Both sides' heartbeat messages as field dicts, when ``path`` names a heartbeat and both
    decode; else None (then the raw values are shown)."""
    named = ".heartbeats[" in f".{path}"
    if not (named and isinstance(reference, str) and isinstance(sut, str)):
        return None
    try:
        return _fields(reference), _fields(sut)
    except (ValueError, StatemetaError):
        return None


def _fields(hex_payload: str) -> Json:
    return _plain(attrs.asdict(decode_hb(bytes.fromhex(hex_payload)), recurse=True))


def _plain(value: Json) -> Json:
    """attrs.asdict's tuples as lists, so that lists of entries compare element by element."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def compact(value: object, limit: int = 60) -> str:
    """``value`` as one short line of JSON."""
    text = json.dumps(value, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 3] + "..."
