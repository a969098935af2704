"""Control requests to one broker in channel order (``model.actions.commands.waits_in_channel``).

Kafka's controller sends each broker its requests through one queue and one sender thread
(``ControllerChannelManager``), drops the queue with the broker's registration and sends
nothing to a broker that has none.  Before the model kept that order, a StopReplica and a
LeaderAndISR to one broker could swap, and two searches broke ``committed_durable`` by runs
no FIFO channel can give: ``kip320 --reassignments 2`` (a stale LeaderAndISR taken after the
StopReplica sent behind it) and ``kip320 --reassignments 1 --deletions 1`` (a reassignment's
StopReplica taken after the re-created topic's LeaderAndISR sent behind it).  These tests
replay both runs up to the swap and show it refused, and the two configurations hold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from model.actions import Step
from model.config import named
from model.registry import apply
from model.state import FETCH_REQUEST, FETCH_RESPONSE, LEADER, NONE, initial
from properties.checkers.bfs import SearchOptions
from properties.checkers.native import check_native
from tests.model.test_reassignment import _step
from tests.pinned import pinned

if TYPE_CHECKING:
    from model.state import LeaderAndIsr, State, StopReplica

TWO_MOVES = named("kip320", reassignments=2)
MOVE_AND_DELETE = named("kip320", reassignments=1, deletions=1)


def _refused(s: State, cfg, name: str, *args) -> bool:
    return apply(s, cfg, Step(name, args)) is None


def _lai(s: State, to: int, epoch: int, topic_id: int = 0) -> LeaderAndIsr:
    return next(m for m in s.leader_and_isr if (m.to, m.leader_epoch, m.topic_id) == (to, epoch, topic_id))


def _stop(s: State, to: int) -> StopReplica:
    return next(m for m in s.stop_replica if m.to == to)


def _fetch_round(s: State, cfg, f: int) -> State:
    s = _step(s, cfg, "send_fetch", f, 0)
    s = _step(s, cfg, "handle_fetch", next(m for m in s.fetches if m.kind == FETCH_REQUEST))
    return s


def _moved_twice() -> State:
    """The first run's prefix: a@1 committed on both brokers; a move to {0,1} completes
    (LeaderAndISR of epoch 2 to both, broker 1 takes it), then a move to {1} completes
    (LeaderAndISR of epoch 3 to 1, StopReplica of epoch 3 to 0) -- broker 0 has not taken
    its LeaderAndISR of epoch 2 yet."""
    cfg = TWO_MOVES
    s = _step(initial(cfg), cfg, "produce", 0, 0)
    s = _fetch_round(s, cfg, 1)
    s = _step(s, cfg, "receive_fetch", next(m for m in s.fetches if m.kind == FETCH_RESPONSE))
    s = _fetch_round(s, cfg, 1)
    s = _step(s, cfg, "reassign_start", 0, 0, (0, 1))
    s = _step(s, cfg, "reassign_complete", 0, 0, 0)
    s = _step(s, cfg, "become_follower", _lai(s, 1, 2))
    s = _step(s, cfg, "reassign_start", 0, 0, (1,))
    return _step(s, cfg, "reassign_complete", 0, 0, 1)


def test_a_stop_replica_waits_behind_the_leader_and_isr_sent_before_it():
    cfg, s = TWO_MOVES, _moved_twice()
    stop, earlier = _stop(s, 0), _lai(s, 0, 2)
    assert stop.leader_epoch == 3
    assert _refused(s, cfg, "stop_replica", stop)  # the swap the counterexample took
    s = _step(s, cfg, "become_leader", earlier)  # the channel's order: epoch 2 first
    s = _step(s, cfg, "stop_replica", stop)
    assert s.brokers[0].replicas[0].role == NONE and s.brokers[0].replicas[0].leader_epoch == 2
    # the request taken before the StopReplica cannot bring back a leader with an empty log
    assert _refused(s, cfg, "become_leader", earlier)


def _moved_then_recreated() -> State:
    """The second run's prefix: a move to {1} completes (StopReplica to 0), broker 1 dies,
    the topic is deleted and created again on {0} (LeaderAndISR of topic id 1 to 0)."""
    cfg = MOVE_AND_DELETE
    s = _step(initial(cfg), cfg, "reassign_start", 0, 0, (1,))
    s = _step(s, cfg, "reassign_complete", 0, 0, 1)
    s = _step(s, cfg, "broker_crash", 1)
    s = _step(s, cfg, "delete_topic", 0, 0)
    return _step(s, cfg, "create_topic", 0, 0, (0,), 0)


def test_a_leader_and_isr_waits_behind_the_stop_replica_sent_before_it():
    cfg, s = MOVE_AND_DELETE, _moved_then_recreated()
    stop, later = _stop(s, 0), _lai(s, 0, 1, topic_id=1)
    assert (stop.topic_id, stop.delete) == (0, True)
    assert _refused(s, cfg, "become_leader", later)
    s = _step(s, cfg, "stop_replica", stop)  # the old incarnation's replica goes first
    s = _step(s, cfg, "become_leader", later)
    s = _step(s, cfg, "produce", 0, 0)
    r = s.brokers[0].replicas[0]
    assert (r.role, r.topic_id, len(r.log), r.hw) == (LEADER, 1, 1, 1)
    assert not s.stop_replica  # nothing left that could delete the new incarnation


def test_stop_replica_goes_to_live_removed_replicas_and_dies_with_the_process():
    cfg = TWO_MOVES
    down = _step(initial(cfg), cfg, "broker_crash", 1)
    down = _step(down, cfg, "reassign_start", 0, 0, (0,))
    down = _step(down, cfg, "reassign_complete", 0, 0, 0)
    assert down.zk.partitions[0].ar == (0,) and not down.stop_replica  # no channel to a broker down
    s = _step(initial(cfg), cfg, "reassign_start", 0, 0, (1,))
    s = _step(s, cfg, "reassign_complete", 0, 0, 1)
    assert [m.to for m in s.stop_replica] == [0]
    assert not _step(s, cfg, "broker_crash", 0).stop_replica  # its channel goes with its registration


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize(("cfg", "row"), [
    (named("kip320", reassignments=2, records=1), "reassignments 2, one record"),
    (named("kip320", reassignments=1, deletions=1, records=1), "reassignments 1, deletions 1, one record"),
])
def test_both_configurations_that_broke_by_a_swap_now_hold(cfg, row):
    """The two searches that found the swaps, at one record (the record both counterexamples
    lose), exhausted by the compiled search: every property holds."""
    r = check_native(cfg, SearchOptions())
    assert r.holds, r.violation and r.violation.text()
    assert r.states == pinned("kip320", row, "states")
