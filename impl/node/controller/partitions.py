"""Seed 000 H: adding partitions to, and removing partitions from, an existing topic.

* **Add** (on_partitions_add): init_leaders for the new partitions (as a new topic's, B),
  update the topic's assignment and delete the PartitionAdd requests -- all in one fenced
  multi rather than the design's three steps, so a controller that fails half-way cannot
  leave a partition with a leader but no assignment, or an assignment but no leader.  A
  requested id below the topic's fresh id (``zk.fresh_partition_id``: one the topic has or
  once had) is dropped.
* **Remove** (on_partitions_remove): StopReplica with delete to the affected brokers first,
  then the partitions' znodes, the new assignment, the topic's next fresh id
  (``zk.next_partition_path``) and the PartitionRemove requests in one fenced multi.  A
  request for a topic that no longer exists, or for partitions it does not have, is dropped.

Partition ids are never reused, as in the model (``model.actions.partitions``): the topic id
is the topic's, so a broker that was down through a removal and is named in a new partition
of the same id would keep its old log and serve the removed partition's records.  The next
fresh id lives in ZooKeeper, so a controller that takes over hands out the same ids.
"""

from __future__ import annotations

import contextlib
from typing import Any

from kazoo.exceptions import NoNodeError

from impl.node import zk as zkl
from impl.node.controller.context import Key
from impl.node.controller.topics import Topics
from traces import events


class PartitionChanges(Topics):
    """Seed 000 H: partitions added (with leaders, as in B) and removed (StopReplica first)."""

    def _on_partitions_add(self) -> None:
        """Seed 000 H: init_leaders, delete the PartitionAdd path and update the topic path --
        here all in one fenced multi, so a crash cannot leave half of it done."""
        for t in self._children(zkl.PARTITIONS_ADD):
            data, stat = (None, None)
            with contextlib.suppress(NoNodeError):
                data, stat = self.zk.get(zkl.topic_path(t))
            requested = {}
            for p in self._children(f"{zkl.PARTITIONS_ADD}/{t}"):
                with contextlib.suppress(NoNodeError, ValueError):
                    raw, _ = self.zk.get(f"{zkl.PARTITIONS_ADD}/{t}/{p}")
                    requested[int(p)] = [int(b) for b in zkl.decode(raw)]
            if data is None or stat is None or t not in self.assignments:
                for p in requested:
                    self._drop_admin(zkl.PARTITIONS_ADD, t, str(p))
                self._drop_admin(zkl.PARTITIONS_ADD, t)
                continue
            fresh = zkl.fresh_partition_id(self.zk, t, self.assignments[t])
            new = {p: r for p, r in requested.items() if p >= fresh}  # never an id the topic had
            if not new:
                for p in requested:
                    self._drop_admin(zkl.PARTITIONS_ADD, t, str(p))
                continue
            merged = {**self.assignments[t], **new}
            self.assignments[t] = merged

            def extra(txn: Any, t: str = t, merged: dict[int, list[int]] = merged,
                      version: int = stat.version, requested: dict[int, Any] = requested) -> None:
                txn.set_data(zkl.topic_path(t), zkl.encode(
                    {"partitions": {str(p): r for p, r in sorted(merged.items())}}), version=version)
                for p in requested:
                    txn.delete(f"{zkl.PARTITIONS_ADD}/{t}/{p}")

            try:
                self._init_leaders([(t, p) for p in sorted(new)], extra)
            except zkl.TransactionFailed:
                self._read_assignments()
                continue
            self._drop_admin(zkl.PARTITIONS_ADD, t)
            self.recorder.emit(events.partitions_added(informational={
                "topic": t, "partitions": {str(p): r for p, r in new.items()}}))

    def _on_partitions_remove(self) -> None:
        """Seed 000 H on_partitions_remove (see the module docstring)."""
        for t in self._children(zkl.PARTITIONS_REMOVE):
            parts = [int(p) for p in self._children(f"{zkl.PARTITIONS_REMOVE}/{t}") if p.isdigit()]
            current = self.assignments.get(t)
            if not current:
                for p in parts:
                    self._drop_admin(zkl.PARTITIONS_REMOVE, t, str(p))
                self._drop_admin(zkl.PARTITIONS_REMOVE, t)
                continue
            parts = [p for p in parts if p in current]
            per_broker: dict[int, list[Key]] = {}
            for p in parts:
                for b in self._replicas((t, p)):
                    per_broker.setdefault(b, []).append((t, p))
            self._stop_replicas(per_broker, delete=True)  # H remove 2
            remaining = {p: r for p, r in current.items() if p not in parts}
            _, stat = self.zk.get(zkl.topic_path(t))
            txn = self._txn()
            for p in parts:
                with contextlib.suppress(NoNodeError):
                    if self.zk.exists(zkl.leader_and_isr_path(t, p)):
                        txn.delete(zkl.leader_and_isr_path(t, p))
                    txn.delete(zkl.partition_path(t, p))
            txn.set_data(zkl.topic_path(t), zkl.encode(
                {"partitions": {str(p): r for p, r in sorted(remaining.items())}}),
                version=stat.version)
            fresh = str(zkl.fresh_partition_id(self.zk, t, current)).encode()  # H: ids not reused
            if self.zk.exists(zkl.next_partition_path(t)):
                txn.set_data(zkl.next_partition_path(t), fresh)
            else:
                txn.create(zkl.next_partition_path(t), fresh)
            for p in self._children(f"{zkl.PARTITIONS_REMOVE}/{t}"):
                txn.delete(f"{zkl.PARTITIONS_REMOVE}/{t}/{p}")
            try:
                self._commit(txn)
            except zkl.TransactionFailed:
                self._read_assignments()
                continue
            self.assignments[t] = remaining
            for p in parts:
                self.reassigning.pop((t, p), None)
            self._drop_admin(zkl.PARTITIONS_REMOVE, t)
            self.recorder.emit(events.partitions_removed(topic=t, partitions=parts))
            self._send_update_metadata()
