"""What every part of the broker shares: its replicas, its epochs, what it knows of the cluster.

Seed 000 keeps a broker's state in two places, its ``Replica`` objects and ZooKeeper; this
module holds the first and the broker's handle on the second.  The sections (C, E, G) are
mixins over :class:`BrokerCore`, so each rule reads in one place while they all share one
asyncio loop -- the loop owns every :class:`impl.node.replica.Replica`, and a single owner
is what keeps each protocol step (record a LEO, move the HW, emit the event) indivisible.

Fields grouped by the section that writes them:

* ``broker_epoch`` -- the czxid of ``/brokers/ids/N`` (seed 003), set at registration (E);
* ``controller_epoch``, ``metadata``, ``endpoints`` -- from control requests (C, seed 002/004);
* ``controller_term`` -- the (controller id, epoch) ZooKeeper last confirmed to C;
* ``_fetchers`` and the fetch connections -- the ReplicaFetcherThreads (G, follower side);
* ``_isr_changes`` and ``_isr_write_lock`` -- the leader's ISR writes (G, maybe_change_ISR).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from impl.node import faults
from impl.node import zk as zkl
from impl.node.admin import AdminService
from impl.node.auth.session import BrokerSecurity
from impl.node.config import BrokerConfig
from impl.node.controller import Controller
from impl.node.fencing import ControllerTerm
from impl.node.log import PartitionLog, Record
from impl.node.replica import LEADER, Replica
from impl.node.step_gate import StepGate
from impl.node.topic_identity import UNKNOWN, Incarnation, compare
from impl.node.tracing import HarnessClock, open_recorder
from impl.node.truncation import normalise_rule
from impl.node.wire import AsyncConnection, ErrorCode
from traces import events


class RequestError(Exception):
    """A request answered with an error code (and, in ``body``, what the client needs next)."""

    def __init__(self, code: ErrorCode, message: str = "", body: dict[str, Any] | None = None):
        super().__init__(message or code.name)
        self.code, self.body = code, body or {}


def records_to_wire(records: list[Record]) -> list[list[Any]]:
    """Records as a fetch response carries them: ``[offset, leader_epoch, value]``."""
    return [[r.offset, r.leader_epoch, r.value] for r in records]



class BrokerCore:
    """The broker's state and its ZooKeeper session; :class:`impl.node.broker.Broker` adds
    the sections' behaviour."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.id = config.broker_id
        self.rule = normalise_rule(config.truncation)
        faults.install(config.data_dir, self.id)  # partitions / slow links a harness injects
        self.step_gate = StepGate(config.data_dir, self.id, config.harness_step_mode)
        self.recorder = open_recorder(config.data_dir, config.run_id, self.id,
                                      config.trace_file_bytes, config.trace_files)
        self.recorder.observe_first = HarnessClock(config.data_dir, config.run_id)
        self.replicas: dict[tuple[str, int], Replica] = {}
        self.broker_epoch = -1
        self.controller_epoch = -1
        self.controller_term: ControllerTerm | None = None  # impl.node.fencing.controller_claim
        self.endpoints: dict[int, tuple[str, int]] = {}
        self.metadata: dict[str, Any] = {"brokers": {}, "topics": {}, "controller_id": -1,
                                         "controller_epoch": -1}
        self.loop: asyncio.AbstractEventLoop | None = None
        self.security = BrokerSecurity(config)  # who may send what, and how many connections (impl.node.auth)
        self.security.install()
        self.zk = zkl.connect(config.zookeeper, session_timeout=config.zk_session_timeout_s,
                              acl=self.security.zk_acl)
        zkl.ensure_layout(self.zk, self.security.zk_acl)
        self._session_lost = False  # see Startup._on_zk_state
        self.controller = Controller(self)
        self.admin = AdminService(self)  # admin requests: controller-only, quota (seeds 001/004)
        self.stopping = False
        self.shutdown_completed = False  # set by the controlled shutdown at SIGTERM
        self._changed_any = asyncio.Event()
        self._isr_changes: set[tuple[str, int]] = set()
        self._fetchers: dict[int, asyncio.Task[None]] = {}
        self._fetch_conns: dict[int, AsyncConnection] = {}
        self._fetch_conn_addr: dict[int, tuple[str, int]] = {}
        self._fetch_conn_locks: dict[int, asyncio.Lock] = {}
        self._isr_write_lock = asyncio.Lock()
        # Control requests wait until this incarnation's registration is recorded and its
        # startup recovery applied (seed 000 E): the controller reacts to the registration at
        # once, and a LeaderAndISR handled first would be recorded before the broker_restart
        # it depends on (Kafka likewise opens request processing only after startup).
        self._control_ready = asyncio.Event()
        # The controller wins its election on a ZooKeeper thread while this broker's loop
        # applies control requests: the last staleness check of a request, its effects and
        # their events run under this lock, and so does taking a won election's epoch with
        # its controller_elect event.  Else a request of the deposed controller checked just
        # before the election would be applied, and recorded, just after it.
        self.control_lock = threading.Lock()


    def on_controller_elected(self, controller_epoch: int,
                              announce: Callable[[], None] = lambda: None) -> None:
        """Seed 002: the broker whose controller has just won the election at
        ``controller_epoch`` knows that epoch from then on, as every broker does once a
        request of the new controller reaches it.  Without this, a request of the deposed
        controller still in flight to this very broker would be taken after the election
        (the model's ``controller_elect`` sets the winner's known epoch in the same step).
        ``announce`` records the election in that same step (under ``control_lock``)."""
        with self.control_lock:
            if controller_epoch > self.controller_epoch:
                self.controller_epoch = controller_epoch
                self.metadata["controller_id"] = self.id
                self.metadata["controller_epoch"] = controller_epoch
            if self.controller_term is None or controller_epoch > self.controller_term.controller_epoch:
                self.controller_term = ControllerTerm(self.id, controller_epoch)
            announce()
    def replica(self, topic: str, partition: int, create: bool = False) -> Replica:
        """This broker's replica of a partition; ``create`` opens it (seed 000 C
        startReplica: "create the partition directory locally, if not present")."""
        key = (topic, partition)
        r = self.replicas.get(key)
        if r is None:
            if not create:
                raise RequestError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            log = self.open_log(self.config.files.partition(topic, partition).path)
            r = self.replicas[key] = Replica(topic, partition, self.id, log, self.recorder,
                                             on_change=self._data_changed)
        return r

    def open_log(self, directory: Path) -> PartitionLog:
        """A partition's log with this broker's segment size, flush policy and retention
        (impl.node.log)."""
        return PartitionLog.open(directory, self.config.segment_bytes, self.config.flush_messages,
                                 self.config.flush_ms, self.config.retention_bytes,
                                 self.config.retention_ms)

    def replica_of_incarnation(self, topic: str, partition: int,
                               topic_id: int) -> tuple[Replica, bool]:
        """The replica of the incarnation ``topic_id`` names (:mod:`impl.node.topic_identity`),
        opened as :meth:`replica` does; the flag is False when the request is from an older
        incarnation than the local log (the caller refuses it; the replica is returned only
        to record that).

        A local log of an older incarnation -- the topic was deleted while this broker was
        down and re-created under the same name -- is deleted and its replica forgotten (its
        leader epoch included: the new incarnation's epochs start over), and a fresh replica
        takes its place.  Kept, it would pass for the new incarnation's log, since epoch-based
        truncation cannot tell two incarnations' epoch 0 apart."""
        r = self.replica(topic, partition, create=True)
        verdict = compare(topic_id, r.log.topic_id, r.log.leo > 0)
        if verdict is Incarnation.STALE_REQUEST:
            return r, False
        if verdict is Incarnation.STALE_LOG:
            r.stop()
            r.log.delete()
            del self.replicas[(topic, partition)]
            self.recorder.emit(events.stop_replica(topic=topic, partition=partition, delete=True,
                                                   reason="stale_topic_id"))
            r = self.replica(topic, partition, create=True)
        if topic_id != UNKNOWN and r.log.topic_id != topic_id:
            r.log.set_topic_id(topic_id)
        return r, True

    def _leader(self, topic: str, partition: int) -> Replica:
        """The replica, if this broker leads it; else NOT_LEADER naming the leader it knows."""
        r = self.replica(topic, partition)
        if r.role != LEADER:
            raise RequestError(ErrorCode.NOT_LEADER, body={"leader": r.leader})
        return r

    def _data_changed(self) -> None:
        """Some partition appended, moved its HW or changed role: wake long-polling fetches."""
        self._changed_any.set()
        self._changed_any = asyncio.Event()

    def _endpoint_from_zk(self, broker: int) -> tuple[str, int]:
        """A broker's host and port from its registration (blocking: call off the loop)."""
        data, _ = self.zk.get(zkl.broker_path(broker))
        d = zkl.decode(data)
        return str(d["host"]), int(d["port"])

    async def _zk(self, fn: Any) -> Any:
        """Run a blocking ZooKeeper call on the default executor, off the event loop."""
        assert self.loop is not None
        return await self.loop.run_in_executor(None, fn)
