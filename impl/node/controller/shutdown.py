"""Controlled shutdown (later Kafka): seed 000 A done before the broker stops, not after.

A stopping broker asks the controller to move its leaderships away and take it out of every
ISR it shares.  As Kafka 2.7 does it:

* **No election chooses a broker that asked to stop** -- this one or any other still
  registered (``shutting_down``, Kafka's ``shuttingDownBrokerIds``): the elections here use
  :func:`choose_leader` with all of them excluded and never uncleanly, and every other
  election uses :meth:`~impl.node.controller.context.ControllerContext._electable`.
* **The partitions it follows get StopReplica (no delete)**, and no more LeaderAndISR unless
  it leads: a follower told its new state would fetch again, and its leader would put it
  back into the ISR it has just left.
* **ZooKeeper is read first** rather than the context: "nothing to do" is a decision no
  conditional write would check, and a leader may have put the broker back into an ISR
  meanwhile.

The broker is told what remains; a partition whose ISR has no other live member cannot be
left, and for it the stop will be as abrupt as a crash.
A request from an earlier incarnation of the broker (an older broker epoch) is refused; the
epoch is mandatory, since a request without one could be any incarnation's (seed 003).
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import Any

from impl.node import zk as zkl
from impl.node.controller.broker_failure import BrokerFailure, Decision, choose_leader
from impl.node.controller.context import Key
from impl.node.wire import ErrorCode


def shutdown_choice(broker: int, assigned: list[int], current: zkl.LeaderAndIsr, live: set[int],
                    shutting_down: frozenset[int]) -> Decision | None:
    """One partition's decision when ``broker`` shuts down: nothing if it is not in the ISR
    or is its last member; else a clean :func:`choose_leader` that excludes every broker
    shutting down (``broker`` among them) -- nothing either, if no live ISR member remains."""
    if broker not in current.isr or len(current.isr) <= 1:
        return None
    d = choose_leader(assigned, current, live, False, exclude=shutting_down | {broker})
    return d if d.leader >= 0 else None


class ControlledShutdown(BrokerFailure):
    """Move leadership off, and the broker out of the ISRs, before a broker stops."""

    def _on_controlled_shutdown(self, arg: tuple[int, int, Future[dict[str, Any]]]) -> None:
        """Move leadership off a broker that is shutting down and take it out of every ISR."""
        broker, broker_epoch, fut = arg
        if broker not in self.live or self.live[broker][2] != broker_epoch:
            if not fut.done():
                fut.set_result({"error": int(ErrorCode.STALE_BROKER_EPOCH)})
            return
        self.shutting_down.add(broker)
        live = set(self.live)
        # every broker that asked to stop, not this one alone: an earlier one may not have
        # left yet, and electing it would only move the leadership once more
        excluded = frozenset(self.shutting_down)

        def decide(key: Key, st: zkl.LeaderAndIsr) -> Decision | None:
            return shutdown_choice(broker, self._replicas(key), st, live, excluded)

        # from ZooKeeper, not the context: "nothing to do" is a decision no conditional
        # write checks, and a leader may have put the broker back into an ISR meanwhile
        self._elect_partitions(self._all_keys(), decide, "controlled_shutdown", fresh=True)
        states = self._read_states(self._all_keys())
        # Kafka 2.7: the partitions it now follows get StopReplica (no delete), not
        # LeaderAndISR (see _send_leader_and_isr), so it stops fetching and its leaders do
        # not put it back into the ISRs it has just left
        followed = [k for k, cur in states.items()
                    if cur and cur[0].leader != broker and broker in self._replicas(k)]
        if followed:
            self._stop_replicas({broker: followed}, delete=False)
        remaining = [[t, p] for (t, p), cur in states.items() if cur and cur[0].leader == broker]
        # "remaining_isr": partitions whose ISR it is still in with others -- there was no
        # other live ISR member to take over, so it could not leave; for them its stop
        # will be as abrupt as a crash (the broker exits 3, the harness records a crash)
        stuck = [[t, p] for (t, p), cur in states.items()
                 if cur and broker in cur[0].isr and len(cur[0].isr) > 1]
        self._send_update_metadata(states)
        if not fut.done():
            fut.set_result({"remaining_leaderships": remaining, "remaining_isr": stuck})
