"""Seed 000 C: the broker acts on the controller's requests (LeaderAndISR, StopReplica), and
keeps the cluster metadata UpdateMetadata brings (seed 004).

* **LeaderAndISR** (on_LeaderAndISRCommand): start each named replica not yet present, then
  become leader or follower as told.  An entry whose leader epoch is older than the replica's
  is refused (``stale_leader_epoch``; the design's optimisation note: a broker "only follows
  a leadership change command if its epoc is larger than the current epoc"), so a delayed
  request cannot undo a newer decision; an entry repeating the current decision (INIT after
  a failover, a reassignment's AR+RAR) changes nothing but the assigned replicas.  With the
  INIT flag, every local partition the controller did not name is deleted (C.3).
* **StopReplica**: stop the replica, and delete its log when asked (topic deletion, a
  partition removed, a reassignment's old replicas).
* **Topic identity** (question 5, :mod:`impl.node.topic_identity`): each entry names the
  incarnation of its topic.  An entry of an older incarnation than the local log is refused
  (``stale_topic_id``); a local log of an older incarnation than the entry is deleted first,
  and the entry applied to a fresh replica.  A StopReplica of an older incarnation does
  nothing.
* **Fencing.** Every control request is checked first: a request from an older controller
  epoch is refused (seed 002: a deposed controller must not be obeyed), and one computed
  before this broker's current registration is refused by broker epoch (seed 003: the
  request was meant for an earlier incarnation).  A control request also waits until the
  startup recovery (seed 000 E) is applied, so it cannot be recorded before the
  ``broker_restart`` it depends on.
* **The HW checkpoint thread** startReplica starts is one task for all replicas.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from impl.node.broker.core import RequestError
from impl.node.broker.replication_follower import ReplicationFollower
from impl.node.log import PartitionLog
from impl.node.replica import NONE, PartitionState
from impl.node.topic_identity import UNKNOWN, Incarnation, compare
from impl.node.wire import ErrorCode


class ControlRequests(ReplicationFollower):
    """Seed 000 C and the metadata cache: what a broker does with the controller's requests."""

    def _check_control(self, body: dict[str, Any], kind: str, entries: list[dict[str, Any]]) -> None:
        """Fence a control request (LeaderAndISR, StopReplica, UpdateMetadata).

        * Seed 002: a request from an older controller epoch is refused; one from a newer
          epoch tells this broker a new controller exists.
        * Seed 003: the request carries the cluster-wide ``max_broker_epoch`` the controller
          had read (or, in the older KIP-380 format, this broker's ``broker_epoch``).  If our
          own registration is newer (e0 -> e1 -> e2: we re-registered after the controller
          read the brokers), the request was meant for an earlier incarnation of us.
        """
        cepoch = int(body["controller_epoch"])
        # the newer format's max broker epoch, else the KIP-380 per-broker epoch
        seen = int(body.get("max_broker_epoch", body.get("broker_epoch", -1)))
        reason = None
        if cepoch < self.controller_epoch:
            reason, code = "stale_controller_epoch", ErrorCode.STALE_CONTROLLER_EPOCH
        elif -1 < seen < self.broker_epoch:
            reason, code = "stale_broker_epoch", ErrorCode.STALE_BROKER_EPOCH
        if reason is None:
            if cepoch > self.controller_epoch and "controller_id" in body:
                self.metadata["controller_id"] = int(body["controller_id"])
                self.metadata["controller_epoch"] = cepoch
            self.controller_epoch = cepoch
            return
        for e in entries:
            if kind == "leader_and_isr":
                self.recorder.emit("reject_leader_and_isr", topic=e["topic"],
                                   partition=int(e["partition"]),
                                   params={"reason": reason, "leader_epoch": int(e["leader_epoch"]),
                                           "controller_epoch": cepoch})
        self.recorder.emit("request_rejected", params={"api": kind, "reason": reason,
                                                       "controller_epoch": cepoch,
                                                       "known_controller_epoch": self.controller_epoch,
                                                       "max_broker_epoch": seen,
                                                       "broker_epoch": self.broker_epoch})
        raise RequestError(code, reason)

    async def on_leader_and_isr(self, body: dict[str, Any]) -> dict[str, Any]:
        """Seed 000 C on_LeaderAndISRCommand (see the module docstring)."""
        await self._control_ready.wait()  # see BrokerCore.__init__
        entries = list(body["partitions"])
        self._check_control(body, "leader_and_isr", entries)
        for bid, (host, port) in dict(body.get("leaders", {})).items():
            self.endpoints[int(bid)] = (str(host), int(port))
        cepoch = int(body["controller_epoch"])
        results = []
        for e in entries:
            st = PartitionState.from_wire(e, cepoch)
            if self.id not in st.replicas:
                continue
            # 2.0 startReplica, of the incarnation the request names (question 5)
            r, current = self.replica_of_incarnation(st.topic, st.partition, st.topic_id)
            if not current:
                r.emit("reject_leader_and_isr", {"reason": "stale_topic_id",
                                                 "leader_epoch": st.leader_epoch,
                                                 "controller_epoch": cepoch})
                results.append([st.topic, st.partition, int(ErrorCode.INCONSISTENT_TOPIC_ID)])
                continue
            if st.leader_epoch < r.leader_epoch:
                r.emit("reject_leader_and_isr", {"reason": "stale_leader_epoch",
                                                 "leader_epoch": st.leader_epoch,
                                                 "controller_epoch": cepoch})
                results.append([st.topic, st.partition, int(ErrorCode.FENCED_LEADER_EPOCH)])
                continue
            if st.leader_epoch == r.leader_epoch and r.role != NONE and r.leader == st.leader:
                # the same decision again (INIT after failover, reassignment's AR+RAR): no
                # transition; only the assigned replicas may have grown
                r.replicas = list(st.replicas)
                if st.zk_version > r.zk_version:
                    r.zk_version, r.isr = st.zk_version, set(st.isr)
                results.append([st.topic, st.partition, 0])
                continue
            if st.leader == self.id:
                r.become_leader(st)
            else:
                r.become_follower(st, self.rule)
                if st.leader >= 0:
                    self._ensure_fetcher(st.leader)
            results.append([st.topic, st.partition, 0])
        if body.get("init"):
            # C.3: with INIT, delete every local partition the controller did not mention
            keep = {(str(e["topic"]), int(e["partition"])) for e in entries}
            for key in [k for k in self.replicas if k not in keep]:
                self._stop_replica(key, delete=True, reason="not_in_init")
        return {"partitions": results}

    def _stop_replica(self, key: tuple[str, int], delete: bool, reason: str,
                      topic_id: int = UNKNOWN) -> None:
        """Seed 000 C stopReplica: stop fetching and, with ``delete``, remove the log.  A
        request naming an older incarnation of the topic than the local log's (``topic_id``,
        :mod:`impl.node.topic_identity`) does nothing: it cannot delete a re-created topic."""
        r = self.replicas.get(key)
        if r is None:
            if delete:  # nothing open, but a directory may exist
                d = self.config.log_dir / f"{key[0]}-{key[1]}"
                if d.exists():
                    log = PartitionLog.open(d)
                    if compare(topic_id, log.topic_id, log.leo > 0) is not Incarnation.STALE_REQUEST:
                        log.delete()
            return
        if compare(topic_id, r.log.topic_id, r.log.leo > 0) is Incarnation.STALE_REQUEST:
            return
        r.stop()
        if delete:
            r.log.delete()
            del self.replicas[key]
        self.recorder.emit("stop_replica", topic=key[0], partition=key[1],
                           params={"delete": delete, "reason": reason})

    async def on_stop_replica(self, body: dict[str, Any]) -> dict[str, Any]:
        await self._control_ready.wait()  # see BrokerCore.__init__
        self._check_control(body, "stop_replica", [])
        for item in body["partitions"]:  # [topic, partition, topic_id]; no id: not checked
            topic_id = int(item[2]) if len(item) > 2 else UNKNOWN
            self._stop_replica((str(item[0]), int(item[1])), bool(body.get("delete")),
                               "stop_replica", topic_id)
        return {}

    async def on_update_metadata(self, body: dict[str, Any]) -> dict[str, Any]:
        await self._control_ready.wait()  # see BrokerCore.__init__
        self._check_control(body, "update_metadata", [])
        topics = body["topics"]
        if body.get("partial"):  # only some partitions changed: merge them into what we have
            merged = {t: dict(parts) for t, parts in self.metadata["topics"].items()}
            for t, parts in topics.items():
                merged.setdefault(t, {}).update(parts)
            topics = merged
        self.metadata = {"brokers": body["brokers"], "topics": topics,
                         "controller_id": int(body["controller_id"]),
                         "controller_epoch": int(body["controller_epoch"])}
        for bid, (host, port) in dict(body["brokers"]).items():
            self.endpoints[int(bid)] = (str(host), int(port))
        self.recorder.emit("update_metadata", params={
            "controller_epoch": int(body["controller_epoch"]),
            "brokers": sorted(int(b) for b in body["brokers"]),
            "topics": sorted(body["topics"])})
        return {}

    async def on_metadata(self, body: dict[str, Any]) -> dict[str, Any]:
        # the active controller as /controller says now (seed 002), which may be newer than
        # the last UpdateMetadata: clients send admin requests there (seed 004)
        if self.admin.controller_id >= 0:
            return {**self.metadata, "controller_id": self.admin.controller_id}
        return self.metadata

    async def _hw_checkpointer(self) -> None:
        """Seed 000 C startReplica: "start the HW checkpoint thread for r" (one for all)."""
        while True:
            await asyncio.sleep(0.5)
            for r in list(self.replicas.values()):
                with contextlib.suppress(OSError):
                    r.log.checkpoint_hw()
