"""Seed 000 B: creating and deleting topics.

* **Creation** (on_topic_change, init_leaders): the controller reads the assignment of the
  new topics only -- the others' it knows -- and creates each new partition's leaderAndISR
  with a live AR member as leader and all live AR members in the ISR (B init_leaders 1.1).
  The znodes are created in one fenced multi, so a controller that lost its term creates
  none of them; then LeaderAndISR goes to the replicas and a partial UpdateMetadata to all.
* **Deletion**: the design sends StopReplica when a topic disappears from ZooKeeper.  Here a
  deletion is requested under ``/admin/delete_topics`` and the controller does it -- StopReplica
  with delete to every replica, then the topic's znodes and the request removed in one
  fenced multi -- so no broker keeps serving a topic whose znodes are gone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from kazoo.exceptions import NoNodeError

from impl.node import zk as zkl
from impl.node.controller.broker_failure import Decision
from impl.node.controller.context import Key
from impl.node.controller.requests import ControlRequestSender
from traces import events


class Topics(ControlRequestSender):
    """Seed 000 B: new topics get leaders; requested deletions stop and delete the replicas."""

    def _on_topic_change(self) -> None:
        """Seed 000 B: read the assignment of the new topics only (the others' are known)."""
        before = self.known_topics
        now = set(self.zk.get_children(zkl.TOPICS))
        self._read_assignments(now - before)
        for t in before - now:
            self.assignments.pop(t, None)
        self._prune_states()
        self.known_topics = set(self.assignments)
        new = self.known_topics - before
        gone = before - self.known_topics
        if gone:
            self._send_update_metadata()
        if new:
            states = self._read_states([(t, p) for t in new for p in self.assignments[t]])
            missing = [k for k, v in states.items() if v is None]
            if missing:
                self._init_leaders(missing)
            for t in sorted(new):
                self.recorder.emit(events.topic_created(informational={
                    "topic": t, "partitions": {str(p): r for p, r in self.assignments[t].items()}}))

    def _init_decision(self, replicas: list[int]) -> Decision:
        """Seed 000 B init_leaders 1.1: a live AR member leads, all live AR in the ISR."""
        electable = self._electable()
        live_ar = [b for b in replicas if b in electable]
        if not live_ar:
            return Decision(-1, tuple(sorted(replicas)))
        return Decision(live_ar[0], tuple(sorted(live_ar)))

    def _init_leaders(self, keys: list[Key], txn_extra: Callable[[Any], None] | None = None,
                      reason: str = "init") -> dict[Key, Any]:
        """Create the leaderAndISR znodes of new partitions in one fenced multi, then send."""
        txn = self._txn()
        if txn_extra:
            txn_extra(txn)
        plans = {}
        for t, p in keys:
            d = self._init_decision(self._replicas((t, p)))
            new = zkl.LeaderAndIsr(d.leader, 0, d.isr, self.epoch)
            if not self.zk.exists(zkl.partition_path(t, p)):
                txn.create(zkl.partition_path(t, p), b"")
            txn.create(zkl.leader_and_isr_path(t, p), new.to_json())
            plans[(t, p)] = new
        self._commit(txn)
        states: dict[Key, Any] = {}
        for (t, p), new in plans.items():
            stat = self.zk.exists(zkl.leader_and_isr_path(t, p))
            if stat is None:
                continue
            states[(t, p)] = self.states[(t, p)] = (new, stat.version)
            self._emit_elect(t, p, new, stat.version, stat.czxid, reason)
        targets: dict[int, list[Key]] = {}
        for k in states:
            for b in self._replicas(k):
                targets.setdefault(b, []).append(k)
        for b, ks in targets.items():
            self._send_leader_and_isr(b, ks, states)
        self._send_update_metadata(states, partial=True)
        return states

    def _delete_topic(self, topic: str) -> None:
        """A deletion requested under ``/admin/delete_topics`` (see the module docstring)."""
        admin = f"{zkl.DELETE_TOPICS}/{topic}"
        parts = self.assignments.get(topic)
        if parts is None:
            with contextlib.suppress(NoNodeError):
                self.zk.delete(admin)
            return
        per_broker: dict[int, list[Key]] = {}
        for p in parts:
            for b in self._replicas((topic, p)):
                per_broker.setdefault(b, []).append((topic, p))
        self._stop_replicas(per_broker, delete=True)  # seed 000 B 2
        txn = self._txn()
        for child in self.zk.get_children(zkl.topic_path(topic)):
            for grandchild in self.zk.get_children(f"{zkl.topic_path(topic)}/{child}"):
                txn.delete(f"{zkl.topic_path(topic)}/{child}/{grandchild}")
            txn.delete(f"{zkl.topic_path(topic)}/{child}")
        txn.delete(zkl.topic_path(topic))
        txn.delete(admin)
        self._commit(txn)
        # the multi's zxid, as the pzxid of /brokers/topics it changed: it orders the
        # deletion before a broker's later registration, which the model's StopReplica
        # (to the live replicas only) depends on (a topic created since would give a later
        # zxid, still after every write the deletion followed)
        stat = self.zk.exists(zkl.TOPICS)
        del self.assignments[topic]
        self.topic_ids.pop(topic, None)
        self.known_topics.discard(topic)
        for key in [k for k in self.reassigning if k[0] == topic]:
            del self.reassigning[key]
        self.recorder.emit(events.topic_deleted(topic=topic, partitions=sorted(parts),
                                                zxid=stat.pzxid if stat is not None else None))
        self._send_update_metadata()
