"""Seed 000 F: replica reassignment, the Reassignment Agent's INIT / IN_PROGRESS machine.

A request under ``/admin/partitions_reassigned`` names RAR, the partition's new replicas.
At INIT the controller sends LeaderAndISR to AR+RAR so the new replicas start fetching
(F 2.1); once every RAR member is in the ISR (F 3.2) it switches the partition to RAR.
Why it differs from the design where it does:

* **AR+RAR is written as the topic's assignment during the move**, so a RAR broker that
  restarts mid-reassignment finds itself assigned and keeps its copy (seed 000 E deletes
  unassigned partitions at startup).
* **The switch is one fenced multi** (F 3.2.2, 3.2.5, 3.2.6: new leaderAndISR, AR := RAR,
  request deleted) instead of a "controller lock" around three writes: the controller
  epoch check is the lock, and a multi cannot be left half done.  The new leader is a live
  RAR member of the ISR, with a new leader epoch; the ISR keeps only RAR members.
* **Then** LeaderAndISR to RAR (3.2.3) and StopReplica with delete to the replicas that left
  (3.2.4).  A controller failover restarts every pending request at INIT (seed 000 D 7).
* The agent wakes on every admin event and on a timer (``reassign_interval_s``; the design's
  "a certain amount of time has passed").
"""

from __future__ import annotations

import contextlib

from kazoo.exceptions import NoNodeError

from impl.node import zk as zkl
from impl.node.controller.broker_failure import Decision
from impl.node.controller.context import IN_PROGRESS, INIT, Key
from impl.node.controller.requests import ControlRequestSender
from traces import events


def reassignment_switch(rar: list[int], current: zkl.LeaderAndIsr, electable: set[int]) -> Decision | None:
    """Seed 000 F 3.2: once every RAR member is in the ISR, the partition switches to RAR --
    led by the current leader if it is a live RAR member, else by the first live RAR member
    (all of them are in the ISR: a clean election) -- with the ISR's RAR members as its ISR.
    ``None``: not caught up yet, or no RAR member is alive to lead."""
    if not set(rar) <= set(current.isr):
        return None
    live_rar_isr = [b for b in rar if b in current.isr and b in electable]
    if not live_rar_isr:
        return None
    leader = current.leader if current.leader in live_rar_isr else live_rar_isr[0]
    return Decision(leader, tuple(sorted(b for b in current.isr if b in rar)))


class Reassignment(ControlRequestSender):
    """Seed 000 F: take requests in at INIT, bootstrap RAR, switch AR to RAR once caught up."""

    def _reassign_requests(self) -> dict[Key, list[int]]:
        """Seed 000 F 1: every pending request, partition -> RAR."""
        out = {}
        for t in self._children(zkl.REASSIGN):
            for p in self._children(f"{zkl.REASSIGN}/{t}"):
                with contextlib.suppress(NoNodeError, ValueError):
                    data, _ = self.zk.get(f"{zkl.REASSIGN}/{t}/{p}")
                    out[(t, int(p))] = [int(b) for b in zkl.decode(data)]
        return out

    def _on_partitions_reassigned(self) -> None:
        """Seed 000 F on_partitions_reassigned and add_reassigned_partitions: every request
        under the PartitionReassignment path not yet tracked enters at INIT (F 1.1.1), then
        the agent wakes up (F 1.1.2)."""
        for key, rar in self._reassign_requests().items():
            if key not in self.reassigning:
                self.reassigning[key] = {"state": INIT, "rar": rar}
                self.recorder.emit(events.reassignment(topic=key[0], partition=key[1], state=INIT, rar=rar,
                                                       ar=self.assignments.get(key[0], {}).get(key[1])))
        self._reassignment_wakeup()

    def _reassignment_wakeup(self) -> None:
        """Seed 000 F, the Reassignment Agent's on_wakeup()."""
        for key, info in list(self.reassigning.items()):
            t, p = key
            rar: list[int] = info["rar"]
            ar = self.assignments.get(t, {}).get(p)
            if ar is None:
                del self.reassigning[key]
                self._drop_admin(zkl.REASSIGN, t, str(p))
                continue
            if info["state"] == INIT:
                # 2.1: start bootstrapping the new replicas (AR+RAR is recorded as the
                # topic's assignment meanwhile, so a restarting RAR broker keeps its copy)
                union = ar + [b for b in rar if b not in ar]
                if union != ar:
                    self._set_assignment(t, p, union)
                states = self._read_states([key])
                for b in union:
                    self._send_leader_and_isr(b, [key], states, reassigning=True)
                info["state"] = IN_PROGRESS
                self.recorder.emit(events.reassignment(topic=t, partition=p, state=IN_PROGRESS, rar=rar, ar=ar))
                continue
            cur = self._read_states([key])[key]  # 3.1
            if cur is None:
                continue
            st, version = cur
            switch = reassignment_switch(rar, st, self._electable())
            if switch is None:  # 3.2: not caught up yet, or no RAR member can lead
                continue
            leader = switch.leader
            new = zkl.LeaderAndIsr(leader, st.leader_epoch + 1, switch.isr, self.epoch)
            old_replicas = self._replicas(key)
            _, tstat = self.zk.get(zkl.topic_path(t))
            parts = dict(self.assignments[t])
            parts[p] = list(rar)
            txn = self._txn()  # 3.2.2, 3.2.5, 3.2.6 in one fenced multi
            txn.set_data(zkl.leader_and_isr_path(t, p), new.to_json(), version=version)
            txn.set_data(zkl.topic_path(t), zkl.encode(
                {"partitions": {str(q): r for q, r in sorted(parts.items())}}), version=tstat.version)
            txn.delete(f"{zkl.REASSIGN}/{t}/{p}")
            try:
                results = self._commit(txn)
            except zkl.TransactionFailed:
                self._read_assignments()
                continue
            self.assignments[t] = parts
            del self.reassigning[key]
            stat = results[1]
            self._emit_elect(t, p, new, stat.version, stat.mzxid, "reassign")
            states = {key: (new, stat.version)}
            self.states[key] = (new, stat.version)
            for b in rar:  # 3.2.3
                self._send_leader_and_isr(b, [key], states, reassigning=True)
            gone = [b for b in old_replicas if b not in rar]
            self._stop_replicas({b: [key] for b in gone}, delete=True)  # 3.2.4
            self._drop_admin(zkl.REASSIGN, t)
            self.recorder.emit(events.reassignment(topic=t, partition=p, state="DONE", rar=rar, removed=gone,
                                                   leader=leader, leader_epoch=new.leader_epoch))
            self._send_update_metadata()

    def _set_assignment(self, t: str, p: int, replicas: list[int]) -> None:
        """Write one partition's assigned replicas into its topic's znode (fenced)."""
        _, stat = self.zk.get(zkl.topic_path(t))
        parts = dict(self.assignments[t])
        parts[p] = list(replicas)
        txn = self._txn()
        txn.set_data(zkl.topic_path(t), zkl.encode(
            {"partitions": {str(q): r for q, r in sorted(parts.items())}}), version=stat.version)
        self._commit(txn)
        self.assignments[t] = parts
