"""Two semantics, one model: TDengine exactly as it is at the seed (``SEED``) or as intended.

Every difference between the two is one ``Switch`` (spec/divergences.toml), and the code that
behaves differently asks its ``Profile`` which way that one switch goes, in one place. A
profile is the set of switches that take the seed's behaviour: ``SEED`` takes all of them,
``INTENDED`` none; a test may build any other set to look at one switch alone.
"""

from __future__ import annotations

import enum

import attrs

from statemeta.arguments import member_of
from statemeta.tables import DIVERGENCES, Divergence, Switch

__all__ = ["Profile", "Semantics", "Switch", "as_profile"]


class Semantics(enum.Enum):
    """Which behaviour the reference follows where the seed and the intended semantics differ."""

    INTENDED = "intended"
    """DESIGN.md section 4: every invariant holds (the default)."""
    SEED = "seed"
    """TDengine at the seed commit, bug for bug (within the model: spec/divergences.md)."""

    @classmethod
    def of(cls, value: Semantics | str) -> Semantics:
        """``value`` as a Semantics; the strings "seed" and "intended" are accepted."""
        return member_of(cls, value, "semantics")

    @property
    def profile(self) -> Profile:
        return _PROFILES[self]


@attrs.frozen
class Profile:
    """The switches that take the seed's behaviour."""

    seed_switches: frozenset[Switch]

    def seed(self, switch: Switch) -> bool:
        """Whether ``switch`` takes the seed's behaviour."""
        return switch in self.seed_switches

    @property
    def semantics(self) -> Semantics | None:
        """The named semantics this profile is, or None for a mix."""
        return next((s for s, p in _PROFILES.items() if p == self), None)

    @classmethod
    def only(cls, *switches: Switch) -> Profile:
        """The intended semantics, but for ``switches``."""
        return cls(frozenset(switches))

    def flipped(self, switches: frozenset[Switch]) -> Profile:
        """This profile with ``switches`` going the other way (``check --keep-going`` asks
        which switches explain a divergence)."""
        return Profile(self.seed_switches ^ switches)

    @staticmethod
    def divergence(switch: Switch) -> Divergence:
        """The row of spec/divergences.toml for ``switch``."""
        return DIVERGENCES.row(switch)


_PROFILES: dict[Semantics, Profile] = {
    Semantics.INTENDED: Profile(frozenset()),
    Semantics.SEED: Profile(frozenset(Switch)),
}


def as_profile(value: Semantics | str | Profile) -> Profile:
    """The profile of a semantics (or of its name), or ``value`` itself."""
    if isinstance(value, Profile):
        return value
    return Semantics.of(value).profile
