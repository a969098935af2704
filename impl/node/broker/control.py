"""Seed 000 C: the broker acts on the controller's requests (LeaderAndISR, StopReplica), and
keeps the cluster metadata UpdateMetadata brings (seed 004).

* **LeaderAndISR** (on_LeaderAndISRCommand): start each named replica not yet present, then
  become leader or follower as told.  An entry whose leader epoch is older than the replica's
  is refused (``stale_leader_epoch``; the design's optimisation note: a broker "only follows
  a leadership change command if its epoc is larger than the current epoc"), so a delayed
  request cannot undo a newer decision; so is one in the replica's epoch naming another
  leader or ISR (two brokers must never lead one partition in one epoch).  An entry
  repeating the current decision (INIT after a failover, a reassignment's AR+RAR) changes
  nothing but the assigned replicas (:func:`impl.node.fencing.leader_and_isr_verdict`).
  With the INIT flag, every local partition the controller did not name is deleted (C.3).
* **StopReplica**: stop the replica, and delete its log when asked (topic deletion, a
  partition removed, a reassignment's old replicas).
* **Topic identity** (question 5, :mod:`impl.node.topic_identity`): each entry names the
  incarnation of its topic.  An entry of an older incarnation than the local log is refused
  (``stale_topic_id``); a local log of an older incarnation than the entry is deleted first,
  and the entry applied to a fresh replica.  A StopReplica of an older incarnation does
  nothing.
* **Fencing** (:mod:`impl.node.fencing`).  Every control request is read whole first, then
  checked: a request from an older controller epoch is refused (seed 002: a deposed
  controller must not be obeyed), and one computed before this broker's current
  registration is refused by broker epoch (seed 003: the request was meant for an earlier
  incarnation; the field is mandatory).  A request from a broker ZooKeeper does not name
  as the controller of its epoch is refused (``CLUSTER_AUTHORIZATION_FAILED``; docs/security.md:
  any broker's principal may name itself controller, only one is).  Only then is a newer
  controller epoch taken: a malformed request, or a made-up epoch, raises nothing.  A control request also waits until the
  startup recovery (seed 000 E) is applied, so it cannot be recorded before the
  ``broker_restart`` it depends on.
* **The HW checkpoint thread** startReplica starts is one task for all replicas.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any, NoReturn

from kazoo.exceptions import NoNodeError

from impl.node import zk as zkl
from impl.node.broker.core import RequestError
from impl.node.broker.replication_follower import ReplicationFollower
from impl.node.controller.failover import controller_holder
from impl.node.fencing import (
    Claim,
    ControlHeader,
    ControllerTerm,
    Verdict,
    control_refusal,
    controller_claim,
    controller_term,
    leader_and_isr_verdict,
    zookeeper_claim_refusal,
)
from impl.node.log import PartitionLog
from impl.node.replica import PartitionState
from impl.node.topic_identity import UNKNOWN, Incarnation, compare
from impl.node.wire import ErrorCode
from traces import events


def _metadata_topics(raw: Any) -> dict[str, dict[str, dict[str, Any]]]:
    """An UpdateMetadata's partitions, checked field by field before anything is taken from
    the request (``ValueError`` / ``KeyError`` / ``TypeError``: answered INVALID_REQUEST)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for topic, parts in dict(raw).items():
        out[str(topic)] = {str(int(p)): {**dict(info), "leader": int(info["leader"]),
                                         "leader_epoch": int(info["leader_epoch"]),
                                         "isr": [int(b) for b in info["isr"]],
                                         "replicas": [int(b) for b in info["replicas"]]}
                           for p, info in dict(parts).items()}
    return out


def _stop_replica_item(item: Any) -> tuple[str, int, int]:
    """A StopReplica partition, ``[topic, partition, topic_id]`` (no id: not checked)."""
    if not isinstance(item, list) or len(item) not in (2, 3):
        raise ValueError(f"a StopReplica partition is [topic, partition, topic_id], not {item!r}")
    return str(item[0]), int(item[1]), int(item[2]) if len(item) > 2 else UNKNOWN


class ControlRequests(ReplicationFollower):
    """Seed 000 C and the metadata cache: what a broker does with the controller's requests."""

    async def _fence_control(self, header: ControlHeader, kind: str,
                             entries: list[PartitionState]) -> None:
        """Refuse a control request (LeaderAndISR, StopReplica, UpdateMetadata) that a newer
        decision has overtaken, or that the controller did not send:

        * Seed 002: a request from an older controller epoch is refused.
        * Seed 003: the request carries the cluster-wide ``max_broker_epoch`` the controller
          had read (or, in the older KIP-380 format, this broker's ``broker_epoch``).  If our
          own registration is newer (e0 -> e1 -> e2: we re-registered after the controller
          read the brokers), the request was meant for an earlier incarnation of us.
        * The sender must be the controller ZooKeeper names at the request's epoch
          (:func:`impl.node.fencing.controller_claim`): settled by the cached term, or else
          by one read of ZooKeeper before anything changes.  The authentication rule has
          already made ``controller_id`` the sender's own broker id.

        Called only once the whole request has been read: nothing a request says is taken
        (:meth:`_adopt_controller_epoch`) before it is known to be well formed."""
        self._refuse_if_stale(header, kind, entries)
        claim = controller_claim(header, self.controller_term)
        if claim is Claim.CONFIRMED:
            return
        if claim is Claim.NOT_CONTROLLER:
            self._refuse_claim(header, kind, "not_controller", ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        term = await self._zk(self._controller_term_in_zookeeper)
        refusal = zookeeper_claim_refusal(header, term)
        if refusal is not None:
            self._refuse_claim(header, kind, *refusal)
        assert term is not None  # a claim is confirmed only by a term
        if self.controller_term is None or term.controller_epoch > self.controller_term.controller_epoch:
            self.controller_term = term
        # another request may have moved the epoch meanwhile: :meth:`_deciding` checks again

    @contextlib.contextmanager
    def _deciding(self, header: ControlHeader, kind: str,
                  entries: list[PartitionState]) -> Iterator[None]:
        """A request's effects and their events, under ``control_lock`` after one more
        staleness check: an election this broker's controller wins meanwhile (on a ZooKeeper
        thread) then falls either before the check, which refuses the deposed controller's
        request, or after the effects, as the model orders them."""
        with self.control_lock:
            self._refuse_if_stale(header, kind, entries)
            self._adopt_controller_epoch(header)
            yield

    def _refuse_if_stale(self, header: ControlHeader, kind: str,
                         entries: list[PartitionState]) -> None:
        """Seeds 002 and 003 (:func:`impl.node.fencing.control_refusal`), recorded as the model's
        refusals."""
        refusal = control_refusal(header, self.controller_epoch, self.broker_epoch)
        if refusal is None:
            return
        reason, code = refusal
        # a request meant for an earlier registration says which: the judge rebuilds it
        # from the event (without it, a request meant for the current one)
        meant_for = {"max_broker_epoch": header.broker_epoch} if reason == "stale_broker_epoch" else {}
        if kind == "leader_and_isr":
            for st in entries:
                self.recorder.emit(events.reject_leader_and_isr(
                    topic=st.topic, partition=st.partition, reason=reason, leader_epoch=st.leader_epoch,
                    controller_epoch=header.controller_epoch, **meant_for))
        self._reject(header, kind, reason)
        raise RequestError(code, reason)

    def _refuse_claim(self, header: ControlHeader, kind: str, reason: str, code: ErrorCode) -> NoReturn:
        """A claim of controllership the cached term or ZooKeeper does not confirm.  Not a
        step of the model (which trusts every sender): recorded as a rejected request and
        logged, like the authentication rule's refusals, and nothing else is touched."""
        self._reject(header, kind, reason)
        self.security.log.log("request_refused", (
            f"{kind} claiming controller {header.controller_id} at controller epoch "
            f"{header.controller_epoch} refused ({code.name}): {reason} (confirmed: "
            f"{self.controller_term})"))
        raise RequestError(code, reason)

    def _reject(self, header: ControlHeader, kind: str, reason: str) -> None:
        self.recorder.emit(events.request_rejected(informational={
            "api": kind, "reason": reason, "controller_epoch": header.controller_epoch,
            "known_controller_epoch": self.controller_epoch, "max_broker_epoch": header.broker_epoch,
            "broker_epoch": self.broker_epoch}))

    def _controller_term_in_zookeeper(self) -> ControllerTerm | None:
        """The term ``/controller`` and ``/controller_epoch`` name now (blocking: call off the
        loop).  Reads that straddle an election name none, so they are taken once more."""
        for _ in range(2):
            try:
                raw, estat = self.zk.get(zkl.CONTROLLER_EPOCH)
                data, cstat = self.zk.get(zkl.CONTROLLER)
            except NoNodeError:
                return None
            term = controller_term(controller_holder(data), cstat.czxid, raw, estat.mzxid)
            if term is not None:
                return term
        return None

    def _adopt_controller_epoch(self, header: ControlHeader) -> None:
        """Seed 002: a request from a newer controller epoch tells this broker a new controller
        exists.  Taken only from a request that is well formed and not fenced: a malformed
        one must not raise the epoch, or the real controller would be refused from then on."""
        if header.controller_epoch > self.controller_epoch and header.controller_id is not None:
            self.metadata["controller_id"] = header.controller_id
            self.metadata["controller_epoch"] = header.controller_epoch
        self.controller_epoch = header.controller_epoch

    async def on_leader_and_isr(self, body: dict[str, Any]) -> dict[str, Any]:
        """Seed 000 C on_LeaderAndISRCommand (see the module docstring)."""
        await self._control_ready.wait()  # see BrokerCore.__init__
        header = ControlHeader.from_wire(body)
        cepoch = header.controller_epoch
        entries = [PartitionState.from_wire(e, cepoch) for e in body["partitions"]]
        leaders = {int(bid): (str(host), int(port))
                   for bid, (host, port) in dict(body.get("leaders", {})).items()}
        init = bool(body.get("init"))
        await self._fence_control(header, "leader_and_isr", entries)
        with self._deciding(header, "leader_and_isr", entries):
            self.endpoints.update(leaders)
            results = []
            for st in entries:
                if self.id not in st.replicas:
                    continue
                # 2.0 startReplica, of the incarnation the request names (question 5)
                r, current = self.replica_of_incarnation(st.topic, st.partition, st.topic_id)
                if not current:
                    r.emit(events.reject_leader_and_isr, reason="stale_topic_id", leader_epoch=st.leader_epoch,
                           controller_epoch=cepoch)
                    results.append([st.topic, st.partition, int(ErrorCode.INCONSISTENT_TOPIC_ID)])
                    continue
                verdict = leader_and_isr_verdict(r, st)
                if verdict is Verdict.REFUSE:
                    # an older epoch, or this epoch with another leader or ISR: seed 000 follows
                    # only a larger epoch (the model's "stale leader epoch" covers both)
                    r.emit(events.reject_leader_and_isr, reason="stale_leader_epoch", leader_epoch=st.leader_epoch,
                           controller_epoch=cepoch)
                    results.append([st.topic, st.partition, int(ErrorCode.FENCED_LEADER_EPOCH)])
                    continue
                if verdict is Verdict.REPEAT:
                    # the same decision again (INIT after failover, reassignment's AR+RAR): no
                    # transition; only the assigned replicas may have grown, the ISR moved on
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
            if init:
                # C.3: with INIT, delete every local partition the controller did not mention
                keep = {(st.topic, st.partition) for st in entries}
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
                d = self.config.files.partition(*key).path
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
        self.recorder.emit(events.stop_replica(topic=key[0], partition=key[1], delete=delete, reason=reason))

    async def on_stop_replica(self, body: dict[str, Any]) -> dict[str, Any]:
        await self._control_ready.wait()  # see BrokerCore.__init__
        header = ControlHeader.from_wire(body)
        delete = bool(body.get("delete"))
        parts = [_stop_replica_item(item) for item in body["partitions"]]
        await self._fence_control(header, "stop_replica", [])
        with self._deciding(header, "stop_replica", []):
            for topic, partition, topic_id in parts:
                self._stop_replica((topic, partition), delete, "stop_replica", topic_id)
            return {}

    async def on_update_metadata(self, body: dict[str, Any]) -> dict[str, Any]:
        await self._control_ready.wait()  # see BrokerCore.__init__
        header = ControlHeader.from_wire(body)
        controller_id = int(body["controller_id"])
        brokers = {str(int(b)): [str(host), int(port)]
                   for b, (host, port) in dict(body["brokers"]).items()}
        topics = _metadata_topics(body["topics"])
        await self._fence_control(header, "update_metadata", [])
        with self._deciding(header, "update_metadata", []):
            if body.get("partial"):  # only some partitions changed: merge them into what we have
                merged = {t: dict(parts) for t, parts in self.metadata["topics"].items()}
                for t, parts in topics.items():
                    merged.setdefault(t, {}).update(parts)
                topics = merged
            self.metadata = {"brokers": brokers, "topics": topics, "controller_id": controller_id,
                             "controller_epoch": header.controller_epoch}
            for bid, (host, port) in brokers.items():
                self.endpoints[int(bid)] = (host, port)
            self.recorder.emit(events.update_metadata(informational={
                "controller_epoch": header.controller_epoch,
                "brokers": sorted(int(b) for b in brokers),
                "topics": sorted(body["topics"])}))
            return {}

    async def on_metadata(self, body: dict[str, Any]) -> dict[str, Any]:
        # the active controller as /controller says now (seed 002), which may be newer than
        # the last UpdateMetadata: clients send admin requests there (seed 004)
        if self.admin.controller_id >= 0:
            return {**self.metadata, "controller_id": self.admin.controller_id}
        return self.metadata

    async def _hw_checkpointer(self) -> None:
        """Seed 000 C startReplica: "start the HW checkpoint thread for r" (one for all).
        It also runs the time half of the flush policy (``flush_ms``, impl.node.log) for
        logs that took no append since their interval ran out, and retention (off unless
        ``retention_bytes`` / ``retention_ms`` are set)."""
        while True:
            await asyncio.sleep(0.5)
            for r in list(self.replicas.values()):
                with contextlib.suppress(OSError):
                    r.log.checkpoint_hw()
                    r.log.maybe_flush()
                    r.log.apply_retention()
