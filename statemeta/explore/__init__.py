"""The bounded exhaustive explorer: BFS over the reference's states (docs/formal-checking.md)."""

from statemeta.explore.bounds import Bounds
from statemeta.explore.search import Counterexample, Exploration, Stats, explore

__all__ = ["Bounds", "Counterexample", "Exploration", "Stats", "explore"]
