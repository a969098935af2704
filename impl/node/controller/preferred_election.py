"""Preferred-replica election (later Kafka, on seed 000 A's election).

Seed 000's topic path says "the first replica is the preferred replica".  After failures,
leadership drifts away from it; a request under ``/admin/preferred_replica_election`` moves
it back -- only when the preferred replica is alive and in the ISR, so the move never loses
a committed record.  The ISR stays as it is; the leader changes with a new leader epoch, by
the same conditional write as seed 000 A 3.3.
"""

from __future__ import annotations

import contextlib

from impl.node import zk as zkl
from impl.node.controller.broker_failure import BrokerFailure, Decision
from impl.node.controller.context import Key


def preferred_choice(assigned: list[int], current: zkl.LeaderAndIsr, live: set[int]) -> Decision | None:
    """The preferred (first assigned) replica leads, with the ISR unchanged, if it is not the
    leader already and is a live ISR member; else nothing changes."""
    if assigned and assigned[0] != current.leader and assigned[0] in current.isr and assigned[0] in live:
        return Decision(assigned[0], current.isr)
    return None


class PreferredElection(BrokerFailure):
    """Move leadership back to each requested partition's preferred (first assigned) replica."""

    def _on_preferred(self) -> None:
        """Handle every pending preferred-replica election request, then drop them."""
        requests = [(t, int(p)) for t in self._children(zkl.PREFERRED)
                    for p in self._children(f"{zkl.PREFERRED}/{t}") if p.isdigit()]
        if not requests:
            return
        live = self._electable()

        def decide(key: Key, st: zkl.LeaderAndIsr) -> Decision | None:
            return preferred_choice(self.assignments.get(key[0], {}).get(key[1], []), st, live)

        keys = [k for k in requests if k[1] in self.assignments.get(k[0], {})]
        # the same ISR with a new leader still needs a write: force it past the no-op filter
        for key in keys:
            cur = self._read_states([key])[key]
            if cur is None:
                continue
            st, version = cur
            d = decide(key, st)
            if d is None:
                continue
            new = zkl.LeaderAndIsr(d.leader, st.leader_epoch + 1, st.isr, self.epoch)
            with contextlib.suppress(zkl.TransactionFailed):
                written, _ = self._write_states([(key, new, version, False)], "preferred")
                states = {k: (n, v) for k, n, v in written}
                for b in self._replicas(key):
                    self._send_leader_and_isr(b, [key], states)
        for t, p in requests:
            self._drop_admin(zkl.PREFERRED, t, str(p))
        self._send_update_metadata()
