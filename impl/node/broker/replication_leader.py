"""Seed 000 G at the leader: on_ReplicaFetchRequest and maybe_change_ISR.

On each replica fetch the leader records the follower's LEO, maybe changes the ISR, sets
``hw = min LEO of the ISR`` and answers with records and its HW.  Why each piece is as it is:

* **Each partition's record-LEO / advance-HW / answer is one step**, done without yielding
  the event loop, after waiting out any ISR write in flight: the model's ``handle_fetch`` is
  one action, and a trace in which another request's step lands between a HW move and its
  event could not be replayed against it.
* **An ISR change is a conditional write of the leaderAndISR znode** on the zk_version the
  leader was last given.  Seed 000 question 3 rests on it: a leader the controller has
  replaced finds the version moved, cannot shrink the ISR, so cannot commit alone -- it steps
  down (``isr_update_failed``) instead.
* **One ISR write at a time, one follower per write** (shrink), each recorded before the next
  is sent: concurrent writes would be recorded in thread order rather than ZooKeeper's zxid
  order, and a trace whose order contradicts its zxids cannot be ordered causally.
* **The ISR check is a timer** (every quarter of ``replica.lag.time.max.ms``): seed 000 asks
  how to notice a follower that stopped fetching ("???"); a periodic check answers it without
  a delayed request per produce.
* **ISR changes are announced to the controller in batches** (a sequential znode under
  ``/isr_change_notification`` per period), as Kafka does, so it can refresh the metadata
  brokers serve (seed 004's UpdateMetadata) without a ZooKeeper watch per partition.
* **A fetch is refused, and its offset not counted, unless it names this leader's epoch
  (KIP-320) and this incarnation of the topic** (KIP-516, :mod:`impl.node.fencing`): a
  re-created topic's epochs start again, so a fetch sent before the deletion would pass the
  epoch fence alone, and counting its offset would commit a record no follower holds.
* **Responses are bounded in bytes** (KIP-74, :mod:`impl.node.limits`): per partition and
  in all, except that the first record of the first partition with any is sent whole --
  a record count alone let catch-up responses outgrow the frame, and the follower stalled.
* **Fetches long-poll** (``max_wait_ms``): with nothing new to say the leader answers when a
  partition changes, not at once, so an idle cluster is not a busy loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
import traceback
from typing import Any

from kazoo.exceptions import BadVersionError, NoNodeError

from impl.node import limits
from impl.node import zk as zkl
from impl.node.broker.core import BrokerCore, RequestError, records_to_wire
from impl.node.fencing import epoch_lookup_refusal, fetch_refusal
from impl.node.producer_state import NO_PRODUCER
from impl.node.replica import LEADER, Replica
from impl.node.step_gate import permit_name
from impl.node.topic_identity import UNKNOWN
from impl.node.tracing import records_digest
from impl.node.truncation import leader_epoch_answer
from impl.node.wire import ErrorCode
from traces import events


class ReplicationLeader(BrokerCore):
    """Seed 000 G, leader side: answer replica fetches, keep the HW and the ISR."""

    async def on_offsets_for_leader_epoch(self, body: dict[str, Any]) -> dict[str, Any]:
        """KIP-101/279: where a leader epoch ends in this leader's log (the follower's
        truncation point under ``kip320``; see :mod:`impl.node.truncation`)."""
        r = self._leader(str(body["topic"]), int(body["partition"]))
        refused = epoch_lookup_refusal(r, int(body.get("current_leader_epoch", -1)),
                                       int(body.get("topic_id", UNKNOWN)))
        if refused is not None:
            raise RequestError(refused)
        found, end = leader_epoch_answer(r.log.epochs, r.leo, r.leader_epoch,
                                         int(body["leader_epoch"]))
        return {"leader_epoch": found, "end_offset": end}

    async def _replica_fetch(self, body: dict[str, Any]) -> dict[str, Any]:
        """Seed 000 G on_ReplicaFetchRequest, for every partition a follower fetches from us:
        record the follower's LEO, maybe expand the ISR, advance HW = min LEO of the ISR,
        answer with records and the HW.  With nothing to say it long-polls (max_wait_ms)."""
        follower = int(body["replica_id"])
        # KIP-903: the incarnation of the follower that sent it (optional on the wire), in
        # the handle_fetch event, so that the trace's order puts the answer to a previous
        # incarnation's request before the follower's restart (conformance.spark.order)
        sender = {"follower_broker_epoch": int(body["broker_epoch"])} if "broker_epoch" in body else {}
        max_records = max(0, min(int(body.get("max_records", 500)), 5000))
        max_wait = max(0, min(int(body.get("max_wait_ms", 0)), 5000)) / 1000
        # Wait out ISR writes in flight first (see Replica.begin_isr_write), then record
        # every partition without yielding: each one's record-LEO / advance-HW / answer must
        # be one step, with no other request's step between its HW move and its event.
        while True:
            writing = [r for q in body["partitions"]
                       if (r := self.replicas.get((str(q["topic"]), int(q["partition"])))) is not None
                       and r.isr_write is not None]
            if not writing:
                break
            await writing[0].isr_settled()
        now = time.monotonic()
        items = []
        for q in body["partitions"]:
            key = (str(q["topic"]), int(q["partition"]))
            offset, fenced = int(q["fetch_offset"]), int(q.get("leader_epoch", -1))
            item: dict[str, Any] = {"topic": key[0], "partition": key[1], "offset": offset,
                                    "known_hw": int(q.get("hw", -1)), "fenced": fenced,
                                    "topic_id": int(q.get("topic_id", UNKNOWN)),
                                    "follower": follower, "changed": False}
            items.append(item)
            r = self.replicas.get(key)
            if self._fetch_error(r, item) is not None or r is None:
                continue  # refused: the follower's offset is not counted
            item["epoch"] = r.leader_epoch
            leo_changed = r.record_follower_fetch(follower, offset, now)
            if r.can_join_isr(follower, self.rule == "kip320") and not self.step_gate.on:
                # (in harness step mode the expansion waits for its permit: _isr_steps)
                self._spawn_isr_update(r, set(r.isr) | {follower}, follower, "expand_isr")
            hw_changed = r.maybe_advance_hw()
            if hw_changed:
                r.notify()
            item["changed"] = leo_changed or hw_changed

        def ready() -> bool:
            for it in items:
                r = self.replicas.get((it["topic"], it["partition"]))
                if it["changed"] or r is None or self._fetch_error(r, it) is not None or r.leader_epoch != it.get("epoch") or r.hw != it["known_hw"] \
                        or it["offset"] < r.leo:
                    return True
            return False

        if max_wait and not ready():
            with contextlib.suppress(TimeoutError):
                deadline = time.monotonic() + max_wait
                while not ready() and time.monotonic() < deadline:
                    await asyncio.wait_for(self._changed_any.wait(), deadline - time.monotonic())
        out = []
        # KIP-74: at most the response's and each partition's byte limits, but the first
        # record of the first partition that has any is returned whole (impl.node.limits)
        budget = full = min(int(body.get("max_bytes", self.config.fetch_max_bytes)),
                            self.config.fetch_max_bytes)
        per_partition = min(int(body.get("partition_max_bytes", self.config.fetch_partition_max_bytes)),
                            self.config.fetch_partition_max_bytes)
        for it in items:
            r = self.replicas.get((it["topic"], it["partition"]))
            err = self._fetch_error(r, it)
            if err is not None or r is None:
                code, extra = err or (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, {})
                out.append({"topic": it["topic"], "partition": it["partition"],
                            "error": int(code), **extra})
                continue
            records = limits.within(r.log.read(it["offset"], max_records),
                                    min(per_partition, budget), budget == full)
            budget -= sum(limits.record_size(x.value) for x in records)
            if records or it["changed"] or r.hw != it["known_hw"]:
                r.emit(events.handle_fetch, follower=follower, fetch_offset=it["offset"],
                       leader_epoch=r.leader_epoch, leader_hw=r.hw, records=records_digest(records),
                       error=None, **sender, post={"hw": r.hw, "leo": r.leo, "isr": sorted(r.isr)})
            answer = {"topic": it["topic"], "partition": it["partition"], "error": 0,
                      "records": records_to_wire(records), "hw": r.hw, "leo": r.leo,
                      "leader_epoch": r.leader_epoch, "topic_id": r.log.topic_id or UNKNOWN}
            producers = [[x.offset, x.producer_id, x.sequence] for x in records
                         if x.producer_id != NO_PRODUCER]
            if producers:  # KIP-98: the follower keeps them, so its log knows every batch
                answer["producers"] = producers
            out.append(answer)
        return {"partitions": out}

    @staticmethod
    def _fetch_error(r: Replica | None,
                     item: dict[str, Any]) -> tuple[ErrorCode, dict[str, Any]] | None:
        """Whether one partition of a replica fetch is refused (:func:`impl.node.fencing.fetch_refusal`:
        not the leader, a follower outside the assignment, another incarnation of the topic,
        another leader epoch, an offset outside the log)."""
        return fetch_refusal(r, item["offset"], item["fenced"], item["topic_id"], follower=item["follower"])

    async def _isr_checker(self) -> None:
        """maybe_change_ISR's shrink half, on a timer: take out one follower that lags
        by time or by messages (see the module docstring)."""
        lag_s = self.config.replica_lag_time_ms / 1000
        if self.step_gate.on:
            await self._isr_steps(lag_s)
            return
        while True:
            await asyncio.sleep(max(0.05, lag_s / 4))
            now = time.monotonic()
            for r in list(self.replicas.values()):
                if r.role != LEADER or r.isr_update_in_flight:
                    continue
                lagging = r.out_of_sync_followers(now, lag_s, self.config.replica_lag_max_messages)
                if lagging:
                    # one follower per conditional write, as the model's shrink_isr: the
                    # next check (a quarter of the lag time later) takes the next one
                    out = min(lagging)
                    self._spawn_isr_update(r, set(r.isr) - {out}, out, "shrink_isr")

    async def _isr_steps(self, lag_s: float) -> None:
        """maybe_change_ISR in harness step mode (:mod:`impl.node.step_gate`): a follower
        leaves the ISR when a ``shrink_isr:F`` permit names it and it is out of sync with
        the lag time taken as passed (the model's shrink_isr has no clock); it joins when an
        ``expand_isr:F`` permit names it and it may (not at the fetch itself).  An
        ``isr_write_as_is`` permit, with neither change to make, has the leader attempt its
        conditional write of the ISR as it stands: the model's ``isr_update_failed`` lets a
        leader whose zk_version is behind fail its write whether or not it had a change to
        propose, and this is how the harness makes it try."""
        kip320 = self.rule == "kip320"
        while True:
            await asyncio.sleep(0.005)
            for r in list(self.replicas.values()):
                if r.role != LEADER or r.isr_update_in_flight:
                    continue
                lagging = r.out_of_sync_followers(time.monotonic() + lag_s + 1, lag_s,
                                                  self.config.replica_lag_max_messages)
                shrink = next((f for f in sorted(lagging)
                               if self.step_gate.take(permit_name("shrink_isr", f))), None)
                if shrink is not None:
                    self._spawn_isr_update(r, set(r.isr) - {shrink}, shrink, "shrink_isr")
                    continue
                expand = next((f for f in sorted(r.replicas) if f != self.id and r.can_join_isr(f, kip320)
                               and self.step_gate.take(permit_name("expand_isr", f))), None)
                if expand is not None:
                    self._spawn_isr_update(r, set(r.isr) | {expand}, expand, "expand_isr")
                elif self.step_gate.take("isr_write_as_is"):
                    self._spawn_isr_update(r, set(r.isr), None, "isr_write_as_is")

    def _spawn_isr_update(self, r: Replica, new_isr: set[int], follower: int | None, kind: str) -> None:
        if r.isr_update_in_flight:
            return
        write = r.begin_isr_write()
        asyncio.create_task(self._update_isr(r, new_isr, follower, kind, write, r.leader_epoch))

    async def _update_isr(self, r: Replica, new_isr: set[int], follower: int | None, kind: str,
                          write: asyncio.Event, epoch: int) -> None:
        """One ISR write at a time, each recorded before the next is sent: concurrent writes
        (two partitions) would be recorded in thread order, not in ZooKeeper's zxid order,
        and a trace whose order contradicts its zxids cannot be ordered causally.

        ``new_isr`` was decided in leader epoch ``epoch``.  A write that waited for the lock
        while the controller made this broker leader again in a newer epoch is dropped: the
        new epoch's ISR is the controller's, and applying the old decision to it (written on
        the new zk_version, so ZooKeeper takes it) removed a follower the new ISR no longer
        held -- a shrink the model does not allow.  The next check decides again."""
        try:
            async with self._isr_write_lock:
                if r.role == LEADER and r.leader_epoch == epoch:
                    await self._write_isr(r, new_isr, follower, kind)
        finally:
            r.end_isr_write(write)

    async def _write_isr(self, r: Replica, new_isr: set[int], follower: int | None, kind: str) -> None:
        """Seed 000 G maybe_change_ISR's conditional write: ``kind`` is ``shrink_isr`` or
        ``expand_isr`` (of ``follower``), or in harness step mode ``isr_write_as_is`` (the ISR as it
        stands, :meth:`_isr_steps`), which records nothing when it succeeds -- it is there to
        fail."""
        epoch, expected = r.leader_epoch, r.zk_version
        state = zkl.LeaderAndIsr(self.id, epoch, tuple(sorted(new_isr)), r.controller_epoch)
        path = zkl.leader_and_isr_path(r.topic, r.partition)
        assert self.loop is not None
        try:
            stat = await self.loop.run_in_executor(
                None, lambda: self.zk.set(path, state.to_json(), version=expected))
        except (BadVersionError, NoNodeError):
            # the write that moved the znode on is what this step observed: its zxid orders
            # the failure after it (the controller's write may carry a larger clock)
            moved = await self.loop.run_in_executor(None, lambda: self.zk.exists(path))
            if r.role == LEADER and r.leader_epoch == epoch:
                r.emit(events.isr_update_failed, expected_zk_version=expected,
                       informational={"isr": sorted(new_isr)}, zxid=moved.mzxid if moved is not None else None)
                r.step_down()
            return
        except Exception:  # noqa: BLE001 - ZK unavailable: retry at the next check
            traceback.print_exc()
            return
        if r.role != LEADER or r.leader_epoch != epoch:
            return
        r.isr = set(new_isr)
        r.zk_version = stat.version
        if kind == "isr_write_as_is":  # the harness's attempt succeeded: the model's step did not happen
            return
        r.maybe_advance_hw()  # part of the same step (seed 000 G maybe_change_ISR)
        r.emit(events.CONSTRUCTORS[kind], follower=follower, isr=sorted(new_isr), zk_version=stat.version,
               post={"hw": r.hw, "leo": r.leo, "isr": sorted(r.isr)}, zxid=stat.mzxid)
        r.notify()
        self._isr_changes.add((r.topic, r.partition))

    async def _isr_change_propagation(self) -> None:
        """Tell the controller about our ISR changes, batched: one sequential znode under
        /isr_change_notification per period, listing every partition changed in it."""
        assert self.loop is not None
        while True:
            await asyncio.sleep(0.2)
            if not self._isr_changes:
                continue
            batch, self._isr_changes = sorted(self._isr_changes), set()
            data = zkl.encode([list(k) for k in batch])
            try:
                await self.loop.run_in_executor(None, functools.partial(
                    self.zk.create, f"{zkl.ISR_CHANGE}/change-", data, sequence=True))
            except Exception:  # noqa: BLE001 - ZK unavailable: try again next period
                self._isr_changes.update(batch)
