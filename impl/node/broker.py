"""A broker process: ``python -m impl.node.broker --broker-id N --port P --zookeeper H:P ...``.

It implements seed 000 sections C (acting on LeaderAndISR / StopReplica), E (startup), G
(replica fetching, HW, ISR maintenance) and question 7 (consumer reads between HW and LEO),
serves the binary protocol of :mod:`impl.node.wire` on an asyncio TCP server, registers
``/brokers/ids/N`` (its czxid is the broker epoch, seed 003) and runs a
:class:`impl.node.controller.Controller` that campaigns for ``/controller`` (seed 002).

Threads: the asyncio loop (main thread) owns every :class:`impl.node.replica.Replica`; blocking
ZooKeeper calls from it go to the default executor.  kazoo's threads only enqueue work.
The controller has its own thread and talks to this broker over TCP like to any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import signal
import sys
import threading
import time
import traceback
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from kazoo.client import KazooState
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from impl.node import faults
from impl.node import zk as zkl
from impl.node.admin import ADMIN_APIS, AdminError, AdminService
from impl.node.config import BrokerConfig
from impl.node.controller import Controller
from impl.node.log import PartitionLog, Record
from impl.node.replica import FOLLOWER, LEADER, NONE, PartitionState, Replica
from impl.node.tracing import HARNESS_NODE, HarnessClock, observe_node, open_recorder
from impl.node.truncation import epoch_truncation_point, normalise_rule
from impl.node.wire import (
    API_VERSIONS,
    ApiKey,
    AsyncConnection,
    BlockingConnection,
    ErrorCode,
    ProtocolError,
    decode_request_body,
    decode_request_header,
    encode_response,
    read_frame,
)


class RequestError(Exception):
    def __init__(self, code: ErrorCode, message: str = "", body: dict[str, Any] | None = None):
        super().__init__(message or code.name)
        self.code, self.body = code, body or {}


def _records_to_wire(records: list[Record]) -> list[list[Any]]:
    return [[r.offset, r.leader_epoch, r.value] for r in records]


class Broker:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.id = config.broker_id
        self.rule = normalise_rule(config.truncation)
        faults.install(config.data_dir, self.id)  # partitions / slow links a harness injects
        self.recorder = open_recorder(config.data_dir, config.run_id, self.id)
        self.recorder.observe_first = HarnessClock(config.data_dir, config.run_id)
        self.replicas: dict[tuple[str, int], Replica] = {}
        self.broker_epoch = -1
        self.controller_epoch = -1
        self.endpoints: dict[int, tuple[str, int]] = {}
        self.metadata: dict[str, Any] = {"brokers": {}, "topics": {}, "controller_id": -1,
                                         "controller_epoch": -1}
        self.loop: asyncio.AbstractEventLoop | None = None
        self.zk = zkl.connect(config.zookeeper, session_timeout=config.zk_session_timeout_s)
        zkl.ensure_layout(self.zk)
        self._session_lost = False
        self.zk.add_listener(self._on_zk_state)
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

    # -- ZooKeeper session ------------------------------------------------------------------
    def _on_zk_state(self, state: str) -> None:
        """kazoo thread: never block here."""
        if state in (KazooState.SUSPENDED, KazooState.LOST):
            self.controller.on_session_trouble(state)
            if state == KazooState.LOST:
                self._session_lost = True
        elif state == KazooState.CONNECTED:
            lost, self._session_lost = self._session_lost, False
            threading.Thread(target=self._after_reconnect, args=(lost,), daemon=True).start()

    def _after_reconnect(self, session_was_lost: bool) -> None:
        if self.stopping:
            return
        if session_was_lost:
            self._set_control_ready(False)
            try:
                self.register(reregister=True)
            except Exception:  # noqa: BLE001 - next reconnect retries
                traceback.print_exc()
            finally:
                self._set_control_ready(True)
        self.controller.on_reconnected()

    def _set_control_ready(self, ready: bool) -> None:
        """From a thread: open or close control-request processing, and wait until done."""
        if self.loop is None or self.loop.is_closed():
            return

        async def flip() -> None:
            (self._control_ready.set if ready else self._control_ready.clear)()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(flip(), self.loop).result(5)

    ATOMIC_STARTUP_LIMIT = 2000
    """Partitions whose state a registration checks in its transaction (see ``register``);
    beyond it the registration is a plain create followed by the read."""

    def register(self, reregister: bool = False) -> list[PartitionState]:
        """Create ``/brokers/ids/N`` (ephemeral); its czxid is the broker epoch (seed 003).
        Returns the leader and ISR of each partition assigned here as of the registration.

        Seed 000 E reads those states at startup, and the model takes registering and that
        read as one step (``broker_restart``).  Were they two, the controller could react to
        the registration in between -- elect this broker, say -- and the startup would
        silently adopt a decision its trace never shows arriving.  So the create is one
        ZooKeeper transaction with a version check of every state read first: if any moved
        meanwhile, nothing is created and the states are read again."""
        path = zkl.broker_path(self.id)
        value = zkl.encode({"host": self.config.host, "port": self.config.port, "version": 1})
        deadline = time.monotonic() + 4 * self.config.zk_session_timeout_s + 10
        while True:
            states = [] if reregister else self._assigned_states()  # a session renewed: no startup
            tx = self.zk.transaction()
            tx.create(path, value, ephemeral=True)
            if len(states) <= self.ATOMIC_STARTUP_LIMIT:
                for st in states:
                    tx.check(zkl.leader_and_isr_path(st.topic, st.partition), st.zk_version)
            results = tx.commit()
            if not any(isinstance(r, Exception) for r in results):
                break
            if time.monotonic() > deadline:
                why = ", ".join(type(r).__name__ for r in results if isinstance(r, Exception))
                raise RuntimeError(f"could not register in ZooKeeper before the deadline ({why})")
            if isinstance(results[0], NodeExistsError):
                time.sleep(0.2)  # a previous incarnation's session has not expired yet
            # else a partition state moved between the read and the create: read again
        if len(states) > self.ATOMIC_STARTUP_LIMIT:
            states = self._assigned_states()  # too many to check: the state after the create
        stat = self.zk.exists(path)
        assert stat is not None
        self.broker_epoch = stat.czxid
        faults.publish_session(self.config.data_dir, self.id, self.zk.client_id)
        kind = "broker_reregister" if reregister else "broker_restart"
        self.recorder.emit(kind, zxid=stat.czxid,
                           params={"broker": self.id, "broker_epoch": stat.czxid})
        return states

    # -- seed 000 E: startup ------------------------------------------------------------------
    def load_local_replicas(self) -> None:
        """Open every local log; delete partitions no longer assigned here (E.4, question 5)."""
        assigned: set[tuple[str, int]] = set()
        for topic in self.zk.get_children(zkl.TOPICS):
            data, _ = self.zk.get(zkl.topic_path(topic))
            parts = (zkl.decode(data) or {}).get("partitions", {})
            for p, reps in parts.items():
                if self.id in reps:
                    assigned.add((topic, int(p)))
        self.config.log_dir.mkdir(parents=True, exist_ok=True)
        for d in sorted(self.config.log_dir.iterdir()):
            topic, _, p = d.name.rpartition("-")
            if not d.is_dir() or not p.isdigit():
                continue
            key = (topic, int(p))
            log = PartitionLog.open(d, self.config.segment_bytes)
            if key not in assigned:
                log.delete()
                self.recorder.emit("stop_replica", topic=topic, partition=int(p),
                                   params={"delete": True, "reason": "not_assigned_at_startup"})
                continue
            self.replicas[key] = Replica(topic, int(p), self.id, log, self.recorder,
                                         on_change=self._data_changed)

    def _assigned_states(self) -> list[PartitionState]:
        """Seed 000 E 1-2: the assignment of every topic and the leader and ISR of each
        partition assigned to this broker, as ZooKeeper has them now."""
        out = []
        for topic in self.zk.get_children(zkl.TOPICS):
            try:
                data, _ = self.zk.get(zkl.topic_path(topic))
                parts = (zkl.decode(data) or {}).get("partitions", {})
            except NoNodeError:
                continue
            for p, reps in parts.items():
                if self.id not in reps:
                    continue
                try:
                    raw, stat = self.zk.get(zkl.leader_and_isr_path(topic, int(p)))
                except NoNodeError:
                    continue
                st = zkl.LeaderAndIsr.from_json(raw)
                out.append(PartitionState(topic, int(p), st.leader, st.leader_epoch,
                                          list(st.isr), [int(b) for b in reps], stat.version,
                                          st.controller_epoch))
        return out

    def _startup_transitions(self, states: list[PartitionState]) -> None:
        """Seed 000 E 3: start each assigned replica and become leader ("shouldn't happen in
        general") or follower as ZooKeeper says -- recorded as part of ``broker_restart``,
        like the model's action.  A LeaderAndISR that already arrived wins (higher epoch)."""
        for st in states:
            r = self.replica(st.topic, st.partition, create=True)
            if st.leader_epoch <= r.leader_epoch:
                continue
            if st.leader == self.id:
                r.become_leader(st, record=False)
            else:
                r.become_follower(st, self.rule, record=False)
                if st.leader >= 0:
                    self._ensure_fetcher(st.leader)

    def replica(self, topic: str, partition: int, create: bool = False) -> Replica:
        key = (topic, partition)
        r = self.replicas.get(key)
        if r is None:
            if not create:
                raise RequestError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            log = PartitionLog.open(self.config.log_dir / f"{topic}-{partition}",
                                    self.config.segment_bytes)
            r = self.replicas[key] = Replica(topic, partition, self.id, log, self.recorder,
                                             on_change=self._data_changed)
        return r

    # -- the server -----------------------------------------------------------------------------
    async def serve(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.load_local_replicas()
        server = await asyncio.start_server(self._connection, self.config.host, self.config.port)
        self._startup_transitions(await self.loop.run_in_executor(None, self.register))
        self._control_ready.set()
        await self.loop.run_in_executor(None, self.admin.start)
        self.controller.start()
        checker = asyncio.create_task(self._isr_checker())
        propagation = asyncio.create_task(self._isr_change_propagation())
        hw_checkpointer = asyncio.create_task(self._hw_checkpointer())
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.loop.add_signal_handler(sig, stop.set)
        self.loop.add_signal_handler(signal.SIGCONT, self._on_resumed)
        print(f"broker {self.id} listening on {self.config.host}:{self.config.port}", flush=True)
        await stop.wait()
        self.stopping = True
        # stop fetching first: a follower that kept fetching could be put back into an ISR
        # by its leader after the controlled shutdown took it out, and then stop inside it
        for task in self._fetchers.values():
            task.cancel()
        self.shutdown_completed = await self._controlled_shutdown()
        checker.cancel()
        propagation.cancel()
        hw_checkpointer.cancel()
        server.close()
        for r in self.replicas.values():
            r.stop_fetcher()
            r.log.close()
        self.controller.stop()
        await self.loop.run_in_executor(None, self.zk.stop)
        self.zk.close()
        self.recorder.close()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Requests are answered in order, except replica fetches, which long-poll: those run
        concurrently so that one connection can carry every partition a follower fetches."""
        write_lock = asyncio.Lock()
        tasks: set[asyncio.Task[None]] = set()

        async def answer(api: ApiKey, body: dict[str, Any], cid: int, version: int = 0) -> None:
            error, rbody = ErrorCode.NONE, {}
            try:
                result = await self.handle(api, body, version)
                if result is None:  # acks=0 produce: no response at all
                    return
                rbody = result
            except RequestError as exc:
                error, rbody = exc.code, dict(exc.body, message=str(exc))
            except (KeyError, TypeError, ValueError) as exc:
                error, rbody = ErrorCode.INVALID_REQUEST, {"message": f"bad request: {exc!r}"}
            except asyncio.CancelledError:
                return
            except Exception as exc:  # noqa: BLE001 - answer, keep serving
                traceback.print_exc()
                error, rbody = ErrorCode.UNKNOWN_SERVER_ERROR, {"message": repr(exc)}
            async with write_lock:
                writer.write(encode_response(cid, self.recorder.tick(), error, rbody))
                await writer.drain()
            throttle_ms = int(rbody.get("throttle_time_ms", 0) or 0) if api in ADMIN_APIS else 0
            if throttle_ms > 0 and body.get("forwarded_by") is None:
                # seed 001: mute a throttled client's connection -- read nothing more from
                # it for throttle_time_ms (a forwarding broker's connection is not muted: the
                # forwarding broker mutes its own client's connection when it relays)
                await asyncio.sleep(throttle_ms / 1000)

        try:
            while True:
                try:
                    payload = await read_frame(reader, self.config.max_frame)
                except ProtocolError as exc:
                    writer.write(encode_response(-1, self.recorder.tick(), exc.code,
                                                 {"message": str(exc)}))
                    await writer.drain()
                    return
                if payload is None:
                    return
                try:
                    api_key, version, cid, clock = decode_request_header(payload)
                except ProtocolError as exc:
                    writer.write(encode_response(-1, 0, exc.code, {"message": str(exc)}))
                    await writer.drain()
                    return
                try:
                    api = ApiKey(api_key)
                    if version > API_VERSIONS[api] or version < 0:
                        raise RequestError(ErrorCode.UNSUPPORTED_VERSION)
                    body = decode_request_body(payload)
                except ValueError:
                    writer.write(encode_response(cid, 0, ErrorCode.INVALID_REQUEST,
                                                 {"message": f"unknown api key {api_key}"}))
                    await writer.drain()
                    return
                except ProtocolError as exc:
                    writer.write(encode_response(cid, 0, exc.code, {"message": str(exc)}))
                    await writer.drain()
                    return
                except RequestError as exc:
                    writer.write(encode_response(cid, 0, exc.code, {"message": str(exc)}))
                    await writer.drain()
                    continue
                self.recorder.observe(clock)
                if api in (ApiKey.FETCH, ApiKey.OFFSETS_FOR_LEADER_EPOCH) and \
                        int(body.get("replica_id", -1)) >= 0:
                    task = asyncio.create_task(answer(api, body, cid))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                else:
                    await answer(api, body, cid, version)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass  # the broker is shutting down
        finally:
            for task in tasks:
                task.cancel()
            with contextlib.suppress(Exception):
                writer.close()

    async def handle(self, api: ApiKey, body: dict[str, Any],
                     version: int = 0) -> dict[str, Any] | None:
        if api in ADMIN_APIS:  # impl.node.admin: on the controller, forwarded, or NOT_CONTROLLER
            try:
                return await self.admin.handle(api, version, body)
            except AdminError as exc:
                raise RequestError(exc.code, str(exc), {
                    "throttle_time_ms": exc.throttle_ms,
                    "controller_id": self.admin.controller_id}) from None
        handlers = {
            ApiKey.LEADER_AND_ISR: self.on_leader_and_isr,
            ApiKey.STOP_REPLICA: self.on_stop_replica,
            ApiKey.UPDATE_METADATA: self.on_update_metadata,
            ApiKey.FETCH: self.on_fetch,
            ApiKey.OFFSETS_FOR_LEADER_EPOCH: self.on_offsets_for_leader_epoch,
            ApiKey.PRODUCE: self.on_produce,
            ApiKey.METADATA: self.on_metadata,
            ApiKey.CONTROLLED_SHUTDOWN: self.on_controlled_shutdown,
        }
        return await handlers[api](body)

    # -- seed 000 C: control requests --------------------------------------------------------
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
        await self._control_ready.wait()  # see __init__
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
            r = self.replica(st.topic, st.partition, create=True)  # 2.0 startReplica
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

    def _stop_replica(self, key: tuple[str, int], delete: bool, reason: str) -> None:
        r = self.replicas.get(key)
        if r is None:
            if delete:  # nothing open, but a directory may exist
                d = self.config.log_dir / f"{key[0]}-{key[1]}"
                if d.exists():
                    PartitionLog.open(d).delete()
            return
        r.stop()
        if delete:
            r.log.delete()
            del self.replicas[key]
        self.recorder.emit("stop_replica", topic=key[0], partition=key[1],
                           params={"delete": delete, "reason": reason})

    async def on_stop_replica(self, body: dict[str, Any]) -> dict[str, Any]:
        await self._control_ready.wait()  # see __init__
        self._check_control(body, "stop_replica", [])
        for t, p in body["partitions"]:
            self._stop_replica((str(t), int(p)), bool(body.get("delete")), "stop_replica")
        return {}

    async def on_update_metadata(self, body: dict[str, Any]) -> dict[str, Any]:
        await self._control_ready.wait()  # see __init__
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

    # -- seed 000 G: the leader side of replication ------------------------------------------
    def _leader(self, topic: str, partition: int) -> Replica:
        r = self.replica(topic, partition)
        if r.role != LEADER:
            raise RequestError(ErrorCode.NOT_LEADER, body={"leader": r.leader})
        return r

    async def on_offsets_for_leader_epoch(self, body: dict[str, Any]) -> dict[str, Any]:
        r = self._leader(str(body["topic"]), int(body["partition"]))
        current = int(body.get("current_leader_epoch", -1))
        if current >= 0 and current != r.leader_epoch:
            raise RequestError(ErrorCode.FENCED_LEADER_EPOCH if current < r.leader_epoch
                               else ErrorCode.UNKNOWN_LEADER_EPOCH)
        epoch = int(body["leader_epoch"])
        if epoch == r.leader_epoch:
            return {"leader_epoch": epoch, "end_offset": r.leo}
        found, end = r.log.epochs.end_offset_for(epoch, r.leo)
        return {"leader_epoch": found, "end_offset": end}

    def _data_changed(self) -> None:
        """Some partition appended, moved its HW or changed role: wake long-polling fetches."""
        self._changed_any.set()
        self._changed_any = asyncio.Event()

    async def on_fetch(self, body: dict[str, Any]) -> dict[str, Any]:
        if "partitions" in body:
            return await self._replica_fetch(body)
        topic, partition = str(body["topic"]), int(body["partition"])
        if int(body.get("replica_id", -1)) >= 0:
            raise RequestError(ErrorCode.INVALID_REQUEST, "replica fetches list partitions")
        max_records = max(0, min(int(body.get("max_records", 500)), 5000))
        max_wait = max(0, min(int(body.get("max_wait_ms", 0)), 5000)) / 1000
        r = self._leader(topic, partition)
        return await self._consumer_fetch(r, int(body["fetch_offset"]), max_records, max_wait)

    async def _replica_fetch(self, body: dict[str, Any]) -> dict[str, Any]:
        """Seed 000 G on_ReplicaFetchRequest, for every partition a follower fetches from us:
        record the follower's LEO, maybe expand the ISR, advance HW = min LEO of the ISR,
        answer with records and the HW.  With nothing to say it long-polls (max_wait_ms)."""
        follower = int(body["replica_id"])
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
                                    "changed": False}
            items.append(item)
            r = self.replicas.get(key)
            if self._fetch_error(r, offset, fenced) is not None or r is None:
                continue
            item["epoch"] = r.leader_epoch
            leo_changed = r.record_follower_fetch(follower, offset, now)
            if r.can_join_isr(follower, self.rule == "kip320"):
                self._spawn_isr_update(r, set(r.isr) | {follower}, follower, "expand_isr")
            hw_changed = r.maybe_advance_hw()
            if hw_changed:
                r.notify()
            item["changed"] = leo_changed or hw_changed

        def ready() -> bool:
            for it in items:
                r = self.replicas.get((it["topic"], it["partition"]))
                if it["changed"] or r is None or self._fetch_error(r, it["offset"], it["fenced"]) \
                        is not None or r.leader_epoch != it.get("epoch") or r.hw != it["known_hw"] \
                        or it["offset"] < r.leo:
                    return True
            return False

        if max_wait and not ready():
            with contextlib.suppress(TimeoutError):
                deadline = time.monotonic() + max_wait
                while not ready() and time.monotonic() < deadline:
                    await asyncio.wait_for(self._changed_any.wait(), deadline - time.monotonic())
        out = []
        for it in items:
            r = self.replicas.get((it["topic"], it["partition"]))
            err = self._fetch_error(r, it["offset"], it["fenced"])
            if err is not None or r is None:
                code, extra = err or (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, {})
                out.append({"topic": it["topic"], "partition": it["partition"],
                            "error": int(code), **extra})
                continue
            records = r.log.read(it["offset"], max_records)
            if records or it["changed"] or r.hw != it["known_hw"]:
                r.emit("handle_fetch", {"follower": follower, "fetch_offset": it["offset"],
                                        "leader_epoch": r.leader_epoch, "leader_hw": r.hw,
                                        "records": [[x.offset, x.leader_epoch,
                                                     x.value.decode("utf-8", "replace")]
                                                    for x in records],
                                        "error": None},
                       {"hw": r.hw, "leo": r.leo, "isr": sorted(r.isr)})
            out.append({"topic": it["topic"], "partition": it["partition"], "error": 0,
                        "records": _records_to_wire(records), "hw": r.hw, "leo": r.leo,
                        "leader_epoch": r.leader_epoch})
        return {"partitions": out}

    def _fetch_error(self, r: Replica | None, offset: int,
                     fenced: int) -> tuple[ErrorCode, dict[str, Any]] | None:
        if r is None:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, {}
        if r.role != LEADER:
            return ErrorCode.NOT_LEADER, {"leader": r.leader}
        if fenced >= 0 and fenced != r.leader_epoch:  # KIP-320 fencing
            return (ErrorCode.FENCED_LEADER_EPOCH if fenced < r.leader_epoch
                    else ErrorCode.UNKNOWN_LEADER_EPOCH), {"leader_epoch": r.leader_epoch}
        if offset > r.leo or offset < 0:
            return ErrorCode.OFFSET_OUT_OF_RANGE, {"leo": r.leo, "hw": r.hw}
        return None

    async def _consumer_fetch(self, r: Replica, offset: int, max_records: int,
                              max_wait: float) -> dict[str, Any]:
        """Question 7: empty between HW and LEO; OFFSET_OUT_OF_RANGE only beyond the LEO."""
        if offset > r.leo or offset < 0:
            raise RequestError(ErrorCode.OFFSET_OUT_OF_RANGE, body={"leo": r.leo, "hw": r.hw})
        if offset >= r.hw and max_wait:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(r.changed().wait(), max_wait)
        records = r.log.read(offset, max_records, upto=r.hw)
        if records:
            r.emit("consumer_fetch", {"fetch_offset": offset, "records": len(records)},
                   {"hw": r.hw, "leo": r.leo})
        return {"records": _records_to_wire(records), "hw": r.hw, "leo": r.leo,
                "leader_epoch": r.leader_epoch}

    async def on_produce(self, body: dict[str, Any]) -> dict[str, Any] | None:
        acks = int(body.get("acks", -1))
        r = self._leader(str(body["topic"]), int(body["partition"]))
        values = [bytes(v) if not isinstance(v, str) else v.encode() for v in body["values"]]
        if not values:
            raise RequestError(ErrorCode.INVALID_REQUEST, "no values")
        if r.isr_write is not None:
            await r.isr_settled()  # the ISR is being written: see Replica.begin_isr_write
            r = self._leader(str(body["topic"]), int(body["partition"]))
        if acks == -1 and len(r.isr) < self.config.min_insync_replicas:
            raise RequestError(ErrorCode.NOT_ENOUGH_REPLICAS,
                               f"ISR {sorted(r.isr)} smaller than min.insync.replicas "
                               f"{self.config.min_insync_replicas}")
        epoch = r.leader_epoch
        last = None
        for v in values:
            last = r.append(v)
        assert last is not None
        r.maybe_advance_hw()
        r.notify()
        base = last.offset - len(values) + 1
        if acks == 0:
            return None
        if acks == 1:
            return {"base_offset": base, "leader_epoch": epoch}
        deadline = time.monotonic() + max(0.0, int(body.get("timeout_ms", 5000)) / 1000)
        while True:
            if r.role != LEADER or r.leader_epoch != epoch:
                raise RequestError(ErrorCode.NOT_LEADER, "leadership lost before commit",
                                   body={"leader": r.leader})
            if r.hw > last.offset:
                if len(r.isr) < self.config.min_insync_replicas:
                    # committed by a shrunken ISR (the HW = min LEO of the ISR jumped when it
                    # shrank): acks=all promises min.insync.replicas copies -- Kafka answers so
                    raise RequestError(ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                                       f"committed with ISR {sorted(r.isr)}, fewer than "
                                       f"min.insync.replicas {self.config.min_insync_replicas}")
                return {"base_offset": base, "leader_epoch": epoch}
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise RequestError(ErrorCode.REQUEST_TIMED_OUT, "not committed in time")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(r.changed().wait(), remaining)

    # -- ISR maintenance through a conditional ZooKeeper update ------------------------------
    async def _hw_checkpointer(self) -> None:
        """Seed 000 C startReplica: "start the HW checkpoint thread for r" (one for all)."""
        while True:
            await asyncio.sleep(0.5)
            for r in list(self.replicas.values()):
                with contextlib.suppress(OSError):
                    r.log.checkpoint_hw()

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

    async def _isr_checker(self) -> None:
        lag_s = self.config.replica_lag_time_ms / 1000
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

    def _spawn_isr_update(self, r: Replica, new_isr: set[int], follower: int, kind: str) -> None:
        if r.isr_update_in_flight:
            return
        write = r.begin_isr_write()
        asyncio.create_task(self._update_isr(r, new_isr, follower, kind, write))

    async def _update_isr(self, r: Replica, new_isr: set[int], follower: int, kind: str,
                          write: asyncio.Event) -> None:
        """One ISR write at a time, each recorded before the next is sent: concurrent writes
        (two partitions) would be recorded in thread order, not in ZooKeeper's zxid order,
        and a trace whose order contradicts its zxids cannot be ordered causally."""
        try:
            async with self._isr_write_lock:
                await self._write_isr(r, new_isr, follower, kind)
        finally:
            r.end_isr_write(write)

    async def _write_isr(self, r: Replica, new_isr: set[int], follower: int, kind: str) -> None:
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
                r.emit("isr_update_failed", {"expected_zk_version": expected, "isr": sorted(new_isr)},
                       zxid=moved.mzxid if moved is not None else None)
                r.step_down()
            return
        except Exception:  # noqa: BLE001 - ZK unavailable: retry at the next check
            traceback.print_exc()
            return
        if r.role != LEADER or r.leader_epoch != epoch:
            return
        r.isr = set(new_isr)
        r.zk_version = stat.version
        r.maybe_advance_hw()  # part of the same step (seed 000 G maybe_change_ISR)
        r.emit(kind, {"follower": follower, "isr": sorted(new_isr), "zk_version": stat.version},
               {"hw": r.hw, "leo": r.leo, "isr": sorted(r.isr)}, zxid=stat.mzxid)
        r.notify()
        self._isr_changes.add((r.topic, r.partition))

    # -- seed 000 G: the follower's ReplicaFetcherThread -------------------------------------
    async def _leader_connection(self, leader: int) -> AsyncConnection:
        """The one connection to ``leader`` shared by all our fetchers from it."""
        host, port = self.endpoints[leader]
        conn = self._fetch_conns.get(leader)
        if conn is None or conn.closed or self._fetch_conn_addr.get(leader) != (host, port):
            if conn is not None:
                conn.close()
            lock = self._fetch_conn_locks.setdefault(leader, asyncio.Lock())
            async with lock:
                conn = self._fetch_conns.get(leader)
                if conn is None or conn.closed or self._fetch_conn_addr.get(leader) != (host, port):
                    conn = await AsyncConnection.open(host, port)
                    self._fetch_conns[leader] = conn
                    self._fetch_conn_addr[leader] = (host, port)
        return conn

    def _ensure_fetcher(self, leader: int) -> None:
        if self.stopping:
            return
        task = self._fetchers.get(leader)
        if task is None or task.done():
            self._fetchers[leader] = asyncio.create_task(self._fetcher(leader))

    async def _fetcher(self, leader: int) -> None:
        """Seed 000 G ReplicaFetcherThread: one per leader broker, fetching every partition
        this broker follows there in one request; appends, takes the leader's HW."""
        conn: AsyncConnection | None = None
        backoff = 0.05
        try:
            while not self.stopping:
                parts = [r for r in self.replicas.values()
                         if r.role == FOLLOWER and r.leader == leader]
                if not parts:
                    return
                try:
                    if conn is None or conn.closed:
                        conn = await self._leader_connection(leader)
                    lookups = [r for r in parts if r.needs_epoch_lookup]
                    if lookups:
                        await asyncio.gather(*(self._truncate_by_epoch(r, conn, leader, r.leader_epoch)
                                               for r in lookups))
                        continue
                    sent: dict[tuple[str, int], tuple[int, int]] = {}
                    reqs = []
                    for r in parts:
                        offset = r.leo
                        sent[(r.topic, r.partition)] = (r.leader_epoch, offset)
                        if r.last_sent_fetch != (offset, r.hw):
                            r.emit("send_fetch", {"leader": leader, "fetch_offset": offset,
                                                  "leader_epoch": r.leader_epoch},
                                   {"hw": r.hw, "leo": r.leo})
                            r.last_sent_fetch = (offset, r.hw)
                        reqs.append({"topic": r.topic, "partition": r.partition,
                                     "fetch_offset": offset, "hw": r.hw,
                                     "leader_epoch": r.leader_epoch if self.rule == "kip320" else -1})
                    error, clock, resp = await conn.request(
                        ApiKey.FETCH, {"replica_id": self.id, "partitions": reqs,
                                       "max_records": 1000,
                                       "max_wait_ms": self.config.fetch_max_wait_ms},
                        self.recorder.tick(), timeout=self.config.fetch_max_wait_ms / 1000 + 5)
                    self.recorder.observe(clock)
                    if error != ErrorCode.NONE:
                        raise ConnectionError(f"fetch refused: {error}")
                    stalled = True
                    for item in resp["partitions"]:
                        key = (str(item["topic"]), int(item["partition"]))
                        r = self.replicas.get(key)
                        if r is None or key not in sent or r.role != FOLLOWER or \
                                r.leader != leader or r.leader_epoch != sent[key][0]:
                            continue  # the replica changed while the request was in flight
                        code = int(item["error"])
                        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
                            await self._handle_out_of_range(r, leader, int(item.get("leo", 0)))
                        elif code == ErrorCode.NONE:
                            stalled = False
                            self._apply_fetched(r, leader, sent[key][1], item)
                        # NOT_LEADER / FENCED / UNKNOWN_LEADER_EPOCH: wait for the controller
                    if stalled:
                        await asyncio.sleep(backoff)
                        backoff = min(1.0, backoff * 2)
                    else:
                        backoff = 0.05
                except (OSError, ConnectionError, ProtocolError, TimeoutError, KeyError):
                    if conn is not None:
                        conn.close()
                        conn = None
                    await asyncio.sleep(backoff)
                    backoff = min(1.0, backoff * 2)
        except asyncio.CancelledError:
            pass
        finally:
            if self._fetchers.get(leader) is asyncio.current_task():
                del self._fetchers[leader]

    def _apply_fetched(self, r: Replica, leader: int, offset: int, resp: dict[str, Any]) -> None:
        records = [Record(int(o), int(e), bytes(v)) for o, e, v in resp["records"]]
        appended = []
        for rec in records:
            if rec.offset != r.leo:
                break
            r.log.append_replicated(rec)
            appended.append(rec)
        new_hw = min(int(resp["hw"]), r.leo)
        hw_changed = new_hw != r.hw
        if hw_changed:
            r.log.set_hw(new_hw)
        if appended or hw_changed:
            r.emit("receive_fetch", {
                "leader": leader, "fetch_offset": offset, "leader_epoch": r.leader_epoch,
                "records": [[x.offset, x.leader_epoch, x.value.decode("utf-8", "replace")]
                            for x in appended],
                "leader_hw": int(resp["hw"]), "error": None})
            r.notify()

    async def _truncate_by_epoch(self, r: Replica, conn: AsyncConnection, leader: int,
                                 epoch: int) -> None:
        """KIP-101/279/320: ask the leader where our latest epoch ends, truncate there."""
        requested = r.log.epochs.latest_epoch()
        if r.leo == 0 or requested < 0:
            r.needs_epoch_lookup = False
            return
        error, clock, resp = await conn.request(
            ApiKey.OFFSETS_FOR_LEADER_EPOCH,
            {"topic": r.topic, "partition": r.partition, "leader_epoch": requested,
             "current_leader_epoch": epoch, "replica_id": self.id},
            self.recorder.tick(), timeout=5)
        self.recorder.observe(clock)
        if r.role != FOLLOWER or r.leader_epoch != epoch:
            return
        if error != ErrorCode.NONE:
            await asyncio.sleep(0.1)
            return
        point = epoch_truncation_point(r.log.epochs, r.leo, requested,
                                       int(resp["leader_epoch"]), int(resp["end_offset"]))
        r.log.truncate_to(point)
        r.needs_epoch_lookup = False
        r.emit("truncate", {"leader": leader, "truncated_to": point,
                            "requested_epoch": requested,
                            "leader_epoch_found": int(resp["leader_epoch"]),
                            "leader_end_offset": int(resp["end_offset"])},
               {"hw": r.hw, "leo": r.leo, "log_end_epoch": r.log_end_epoch()})

    async def _handle_out_of_range(self, r: Replica, leader: int, leader_leo: int) -> None:
        if self.rule == "kip320":
            r.needs_epoch_lookup = True
            return
        point = min(leader_leo, r.leo)
        r.log.truncate_to(point)
        r.emit("truncate", {"leader": leader, "truncated_to": point},
               {"hw": r.hw, "leo": r.leo, "log_end_epoch": r.log_end_epoch()})

    # -- controlled shutdown ----------------------------------------------------------------
    async def on_controlled_shutdown(self, body: dict[str, Any]) -> dict[str, Any]:
        fut: Future[dict[str, Any]] = self.controller.request_controlled_shutdown(
            int(body["broker_id"]), int(body.get("broker_epoch", -1)))
        result = await asyncio.wait_for(asyncio.wrap_future(fut), 10)
        if "error" in result:
            raise RequestError(ErrorCode(result["error"]))
        return result

    async def _controlled_shutdown(self) -> bool:
        """Ask the controller to move our leaderships away before we stop (Ctrl-C / SIGTERM).
        True when it did: we lead nothing and the controller took us out of every ISR we
        share (its ``remaining_leaderships`` and ``remaining_isr`` are empty).  Otherwise
        the stop is, for the protocol, as abrupt as a crash -- the exit code says so (3),
        and the harness records it as one."""
        assert self.loop is not None

        def ask() -> bool:
            for _ in range(3):
                try:
                    data, _ = self.zk.get(zkl.CONTROLLER)
                    cid = int(zkl.decode(data)["brokerid"])
                    host, port = self.endpoints.get(cid) or self._endpoint_from_zk(cid)
                    conn = BlockingConnection(host, port, timeout=5)
                    try:
                        error, _, resp = conn.send(ApiKey.CONTROLLED_SHUTDOWN,
                                                {"broker_id": self.id,
                                                 "broker_epoch": self.broker_epoch},
                                                clock=self.recorder.tick())
                    finally:
                        conn.close()
                    if error == ErrorCode.NONE:
                        return not resp.get("remaining_leaderships") and not resp.get("remaining_isr")
                except Exception:  # noqa: BLE001 - best effort, then plain shutdown
                    pass
                time.sleep(0.3)
            return False

        try:
            return bool(await asyncio.wait_for(self.loop.run_in_executor(None, ask), 12))
        except Exception:  # noqa: BLE001 - no controller reachable: a plain (abrupt) stop
            return False

    def _on_resumed(self) -> None:
        """SIGCONT: we were frozen.  The harness recorded broker_resume before waking us;
        take its clock so our next steps order after it (a Lamport receive)."""
        with contextlib.suppress(Exception):
            observe_node(self.recorder, self.config.data_dir, HARNESS_NODE)

    def _endpoint_from_zk(self, broker: int) -> tuple[str, int]:
        data, _ = self.zk.get(zkl.broker_path(broker))
        d = zkl.decode(data)
        return str(d["host"]), int(d["port"])

    # -- admin requests: impl.node.admin.AdminService (controller-only writes, seeds 001/004) ---
    async def _zk(self, fn: Any) -> Any:
        assert self.loop is not None
        return await self.loop.run_in_executor(None, fn)

def main(argv: list[str] | None = None) -> int:
    config = BrokerConfig.from_argv(argv)
    broker = Broker(config)
    try:
        asyncio.run(broker.serve())
    except KeyboardInterrupt:
        pass
    except RuntimeError as exc:  # e.g. could not register before the deadline: one line
        print(f"broker {config.broker_id}: {exc}", file=sys.stderr)
        return 2
    # 0: stopped after a completed controlled shutdown; 3: stopped without one (see
    # Broker._controlled_shutdown) -- LocalCluster records the latter as a crash
    return 0 if broker.shutdown_completed else 3


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["Broker", "main", "Path"]
