"""What a state's identity is made of.

The explorer's state key (statemeta/explore/state.py) reads every attrs field of the meta's
records, so a field added to a record is part of the key without an edit there. A field that
is not part of a state's identity says so where it is declared, with the reason, as
``attrs.field(metadata={OUTSIDE_KEY: "why"})``: a name the key reads other things through, a
hook, or a value recorded that no operation reads.
"""

from __future__ import annotations

from typing import Any

import attrs

OUTSIDE_KEY = "statemeta.outside_key"
"""The metadata entry of a field the state key leaves out; its value says why."""


ABSOLUTE_TIME = "absolute time: the key holds timers as delays from now, and no operation reads it"
COUNTS_ONLY = "counts only: no operation reads it"
REGISTRATION = (
    "a registration number only names a registration: the key holds what a handle or timer "
    "names (the live entry, a detached one by rank), not the number"
)


def key_fields(cls: type[Any]) -> tuple[str, ...]:
    """The names of ``cls``'s fields that are part of a state's identity, in declared order."""
    return tuple(f.name for f in attrs.fields(cls) if OUTSIDE_KEY not in f.metadata)


def outside_key(cls: type[Any]) -> dict[str, str]:
    """Each field of ``cls`` left out of the key, with the reason it gives."""
    return {f.name: f.metadata[OUTSIDE_KEY] for f in attrs.fields(cls) if OUTSIDE_KEY in f.metadata}
