"""A partition reassignment in Kafka's logs, as the model's steps (seed 000 F).

Kafka 3.9's ZooKeeper-mode controller moves a partition to its target replicas (KIP-455's
``onPartitionReassignment``) in phases, each in its logs:

* it writes the assignment ``/brokers/topics/<t>`` as target + original, naming the replicas
  being added and removed (controller.log: ``Successfully updated assignment of partition T-P
  to ReplicaAssignment(replicas=2,3,1, addingReplicas=3, removingReplicas=1)``), then -- when
  the target is not yet in the ISR -- bumps the leader epoch for the same leader and ISR and
  sends LeaderAndIsr to every replica old and new (state-change.log: ``Sent LeaderAndIsr
  request (Leader:1,ISR:1,2,...,LeaderEpoch:1,ZkVersion:1,...) with new replica assignment
  ... for partition being reassigned T-P``): the model's ``reassign_start``, one
  ``reassignment`` event (IN_PROGRESS) at the assignment's write;
* once the target is in the ISR (controller.log: ``Target replicas ... have all caught up
  with the leader for reassigning partition T-P``; at once, with no such line, for a target
  the ISR already holds: a shrink, a reordering) the next write of the partition state is
  the move's completion: a new leader from the target if the leader is removed (``Changed
  partition T-P from OnlinePartition to OnlinePartition``), else the leader's epoch bumped
  again (the ``Sent LeaderAndIsr ... being reassigned`` line, no replica being added or
  removed) -- the model's ``reassign_complete`` (``elect_leader``, reason ``reassign``);
* each removed replica in the ISR is taken out of it, a write of its own (``... after
  removing replica R from the ISR as part of transition to OfflineReplica``: an
  ``elect_leader`` of the adapter's usual reading), and sent StopReplica without delete, then
  with delete: the broker's receipt of the second (state-change.log: ``Received StopReplica
  request StopReplicaPartitionState(partitionIndex=0, leaderEpoch=3, deletePartition=true)``)
  is the model's ``stop_replica`` of the one request the model sends (its replica deleted);
* the assignment is written as the target alone: the move is over.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from conformance.kafka.ordering import fetching_replica
from conformance.kafka.patterns import Line, ints, topic_partition
from traces import events

Key = tuple[str, int]
Steps = list[tuple[int, int, Line]]
LEADERS_OWN = "data-plane-kafka-request-handler"
"""The thread a leader writes its own ISR change on (IBP 2.6: while handling the fetch)."""


@dataclass
class Reassignments:
    """The partitions being reassigned, as the controller's lines show them."""

    target: dict[Key, list[int]] = field(default_factory=dict)  # in progress: the target replicas
    removed: dict[Key, set[int]] = field(default_factory=dict)  # the replicas a move took away
    completing: set[Key] = field(default_factory=set)  # target in the ISR: the next write completes

    def started(self, key: Key, replicas: list[int], removing: list[int], assigned: list[int]) -> list[int] | None:
        """The target of a reassignment this assignment write starts, or None: a write while
        one is in progress, or of an assignment that moved nothing."""
        if key in self.target or not assigned or replicas == assigned:
            return None
        self.target[key] = [b for b in replicas if b not in removing]
        self.removed[key] = set(assigned) - set(self.target[key])
        return self.target[key]

    def finished(self, key: Key, adding: list[int], removing: list[int]) -> bool:
        """Whether this assignment write ends the move in progress (nothing added or removed)."""
        if key not in self.target or adding or removing:
            return False
        del self.target[key]
        self.completing.discard(key)
        return True

    def completes(self, key: Key) -> bool:
        """Whether a partition state write now is the move's completion (taken once)."""
        if key not in self.completing:
            return False
        self.completing.discard(key)
        return True


class ReassignmentLines:
    """The adapter's handlers of a reassignment's lines (``conformance.kafka.adapter``)."""

    moves: Reassignments
    assigned: dict[Key, list[int]]
    known_isr: dict[Key, list[int]]
    known_version: dict[Key, int]
    out: Any

    if TYPE_CHECKING:  # the adapter's own (``conformance.kafka.adapter._Adapter``)
        def _elect(self, controller: int, ts: float, tp: str, leader: int, epoch: int, isr: list[int],
                   version: int, cepoch: int, reason: str) -> None: ...

        def replica(self, topic: str, partition: int, broker: int) -> Any: ...

    def _assignment_updated(self, broker: int, ts: float, f: dict[str, Any]) -> None:
        key = topic_partition(f["tp"])
        replicas, adding, removing = ints(f["replicas"]), ints(f["adding"]), ints(f["removing"])
        before = self.assigned.get(key, [])
        target = self.moves.started(key, replicas, removing, before)
        if target is not None:
            if set(target) <= set(self.known_isr.get(key, ())):
                self.moves.completing.add(key)  # in the ISR already: Kafka completes at once
            self.out.add(ts, broker, events.reassignment(
                topic=key[0], partition=key[1], zxid=0, state="IN_PROGRESS", rar=sorted(target), ar=sorted(before)), 0)
        elif self.moves.finished(key, adding, removing):
            self.out.add(ts, broker, events.reassignment(
                topic=key[0], partition=key[1], state="DONE", rar=sorted(replicas),
                removed=sorted(self.moves.removed.get(key, ()))), 0)
        self.assigned[key] = replicas

    def _reassign_caught_up(self, broker: int, ts: float, f: dict[str, Any]) -> None:
        self.moves.completing.add(topic_partition(f["tp"]))

    def _reassign_epoch(self, broker: int, ts: float, f: dict[str, Any]) -> None:
        """The leader's epoch bumped for a partition being reassigned: part of the start (replicas
        still being added or removed; the ``reassignment`` event before it), or the completion."""
        key = topic_partition(f["tp"])
        if self.moves.completes(key):
            self._elect(int(f["controller"]), ts, f["tp"], int(f["leader"]), int(f["epoch"]), ints(f["isr"]),
                        int(f["version"]), int(f["cepoch"]), "reassign")
        else:
            self.known_version[key] = int(f["version"])

    def _stop_replica_received(self, broker: int, ts: float, f: dict[str, Any]) -> None:
        """A removed replica's StopReplica with delete (the one without, sent just before it in
        the same controller step, only stopped what this deletes)."""
        topic, p = topic_partition(f["tp"])
        if f["delete"] != "true" or broker not in self.moves.removed.get((topic, p), ()):
            return
        r = self.replica(topic, p, broker)
        del r.log[:]
        r.hw, r.leader, r.leader_epoch, r.isr = 0, -1, -1, []
        r.fetch_offset.clear()
        self.out.add(ts, broker, events.stop_replica(topic=topic, partition=p, delete=True, reason="stop_replica"))


def expansions_before_caught_up(steps: Steps) -> Steps:
    """``steps`` with the ISR expansion that let a reassignment's target catch up placed
    before the controller's line saying so.  Under IBP 2.6 the leader writes the expansion
    itself, in ZooKeeper, while it handles the new replica's fetch, and logs it once the write
    is done (``ISR updated to 1,2,3``) -- the controller, notified of the write, can log
    ``Target replicas ... have all caught up`` first, in an earlier millisecond, and the
    fetch's read is rebuilt from its durations later still.  The fetch that was under way at
    the controller's line (started before it) and its expansion go just before it."""
    out = list(steps)
    for _, _, caught in steps:
        if caught.name != "reassign_caught_up":
            continue
        key, target, t = topic_partition(caught.fields["tp"]), set(ints(caught.fields["target"])), caught.ts
        grown = next((i for i, (_, _, x) in enumerate(out) if x.name == "isr_updated" and x.ts > t
                      and x.thread.startswith(LEADERS_OWN) and topic_partition(x.fields["tp"]) == key
                      and target <= set(ints(x.fields["isr"]))), None)
        if grown is None:
            continue
        leader = out[grown][0]
        read = next((i for i, (b, _, x) in enumerate(out) if b == leader and x.fields.get("read") and x.ts > t
                     and fetching_replica(x.fields["request"]) in target
                     and x.ts - x.fields["request"]["localTimeMs"] / 1000 < t), None)
        if read is None:
            continue
        for i, before in ((read, 2e-6), (grown, 1e-6)):
            b, pos, x = out[i]
            out[i] = (b, pos, x._replace(ts=t - before))
    return out
