"""The restart path (shared reference §8.3): streamMetaClear and streamMetaResetStartInfo.

A vnode that restarts its stream tasks while it stays leader runs Clear -> LoadAllTasks ->
StartAllTasks with the same stage: ``clear`` forgets the tasks in memory but keeps what belongs
to the node (role, stage, the heartbeat chain and its tick counter, the before-close flag, the
open transaction), so the reload starts from the store and the node goes on heartbeating.
Both operations behave the same in both semantics, but for the open start round that ``clear``
leaves without a member in memory (M7, spec/divergences.md).
"""

from __future__ import annotations

from statemeta.meta.registry import MetaRegistry


class MetaRestart(MetaRegistry):
    """clear and reset_start_info, mixed into the core."""

    def clear(self) -> None:
        """streamMetaClear: every task leaves memory; the store is not touched.

        Each mapped task gives back the meta's reference and its trigger timer's (its timers
        are cancelled); a task still acquired is detached until its last release. The list,
        the map and both counters are emptied. An open start round has no member in memory
        any more: it completes here with the results it has, as when its last pending member
        is unregistered; the seed (M7) keeps it open (``taskStarting``) with its results
        emptied, for the restart's ``start_all`` to supersede. Tasks removed here are not
        "removed": their records stay stored.
        """
        state = self.state
        for entry in state.entries.values():
            self._let_go(entry)
        state.ids.clear()
        state.entries.clear()
        state.stream_count = 0
        state.paused_count = 0
        state.loaded = False  # the stored tasks are not in memory until the next load_all
        self._complete_round_if_done()  # no member is mapped: the reference's round completes
        if state.start.round is not None:  # the seed's, kept open (M7): its sets emptied
            state.start.round.ready.clear()
            state.start.round.failed.clear()

    def reset_start_info(self) -> None:
        """streamMetaResetStartInfo: the open start round (``taskStarting``) is dropped with
        its results, uncompleted: no callback runs, and later results are not recorded."""
        self.state.start.round = None
