"""Admin requests on the active controller: the ZooKeeper writes, under the quota (seed 001).

Each admin request becomes a ZooKeeper write that the controller then acts on through its
own watches, exactly as an administrative tool's write would in seed 000: a topic created
under ``/brokers/topics`` (B), a deletion request under ``/admin/delete_topics``, partitions
requested under the PartitionAdd / PartitionRemove paths (H), a reassignment under the
PartitionReassignment path (F), a preferred-replica election request.  Why it is done so:

* **Every write is one multi that first checks ``/controller_epoch``'s version**
  (:meth:`AdminWrites._fenced_commit`), so a controller that has just been replaced writes
  nothing and answers NOT_CONTROLLER; on such a failure it resigns, as the controller
  thread does when its own fenced write fails, so an election runs again (seed 002).
* **The quota is charged per topic, before the write** (seed 001, KIP-599): a request is
  worth the partitions it creates, adds or deletes, charged to its principal.  A new
  client (``strict``) is refused with THROTTLING_QUOTA_EXCEEDED; an old client is always
  admitted and told how long to wait -- its connection is muted for that long.
  ``validate_only`` requests are checked but neither charged nor written.
* **Quotas live in ZooKeeper under ``/config/quotas``**, written only here; the data of
  ``/config/quotas`` is a change counter bumped in the same multi as every alteration, which
  every broker watches to reload them.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from typing import Any, Protocol

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from impl.node import zk as zkl
from impl.node.config import BrokerConfig
from impl.node.controller import Controller
from impl.node.quota import ControllerMutationQuotaManager, Entity, entity_path
from impl.node.quota import validate_entity_name as _validate_name
from impl.node.wire import ApiKey, ErrorCode
from traces.recorder import TraceRecorder

TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,200}$")
QUOTAS = "/config/quotas"
RATE = "controller_mutation_rate"


class AdminError(Exception):
    """One topic's (or the whole request's) error: a code and a one-line message."""

    def __init__(self, code: ErrorCode, message: str = "", throttle_ms: int = 0) -> None:
        super().__init__(message or code.name)
        self.code, self.throttle_ms = code, throttle_ms


class NotController(Exception):
    """This broker is not (or no longer) the active controller."""


class AdminHost(Protocol):
    """What admin handling needs of its broker (:class:`impl.node.broker.Broker`): its
    ZooKeeper session and executor, its controller thread (is it active, with which epoch),
    the endpoints it knows, its event loop and recorder.  Named here, not imported, so the
    broker can build an :class:`AdminService` without the two importing each other."""

    id: int
    zk: Any
    config: BrokerConfig
    recorder: TraceRecorder
    controller: Controller
    endpoints: dict[int, tuple[str, int]]
    loop: asyncio.AbstractEventLoop | None
    stopping: bool

    async def _zk(self, fn: Any) -> Any: ...

    def _endpoint_from_zk(self, broker: int) -> tuple[str, int]: ...


class AdminWrites:
    """The admin writes of the active controller, and the quota manager they charge.
    :class:`impl.node.admin.AdminService` adds the routing."""

    def __init__(self, broker: AdminHost) -> None:
        self.broker = broker
        self.zk = broker.zk
        self.id = broker.id
        self.quotas = ControllerMutationQuotaManager(
            samples=broker.config.controller_quota_window_num,
            window_s=broker.config.controller_quota_window_size_s)
        self._quota_lock = threading.Lock()
        self._alter_lock: asyncio.Lock | None = None  # made on the broker's loop (start)

    async def _on_controller(self, api: ApiKey, body: dict[str, Any], user: str, client: str,
                             strict: bool) -> dict[str, Any]:
        try:
            if api == ApiKey.CREATE_TOPICS:
                return await self._per_topic(body, user, client, strict, self._create_topic,
                                             [dict(t) for t in body["topics"]])
            if api == ApiKey.DELETE_TOPICS:
                return await self._per_topic(body, user, client, strict, self._delete_topic,
                                             [{"topic": str(t)} for t in body["topics"]])
            if api == ApiKey.CREATE_PARTITIONS:
                return await self._per_topic(body, user, client, strict, self._add_partitions,
                                             [dict(t) for t in body["topics"]])
            if api == ApiKey.ALTER_CLIENT_QUOTAS:
                return await self._alter_quotas(body)
            single = {ApiKey.REMOVE_PARTITIONS: self._remove_partitions,
                      ApiKey.REASSIGN_PARTITIONS: self._reassign,
                      ApiKey.ELECT_PREFERRED: self._elect_preferred}[api]
            return await self.broker._zk(lambda: single(body, user, client, strict))
        except NotController:
            raise AdminError(ErrorCode.NOT_CONTROLLER,
                             f"broker {self.id} is no longer the controller") from None

    async def _per_topic(self, body: dict[str, Any], user: str, client: str, strict: bool,
                         one: Any, items: list[dict[str, Any]]) -> dict[str, Any]:
        validate_only = bool(body.get("validate_only"))
        results, throttle = [], 0
        for item in items:
            try:
                out, t = await self.broker._zk(
                    lambda item=item: one(item, user, client, strict, validate_only))
                throttle = max(throttle, t)
                results.append({"topic": item["topic"], "error": 0, **out})
            except AdminError as exc:
                throttle = max(throttle, exc.throttle_ms)
                results.append({"topic": str(item.get("topic")), "error": int(exc.code),
                                "message": str(exc), "throttle_time_ms": exc.throttle_ms})
            except NotController:  # lost the election mid-request: this topic not applied
                results.append({"topic": str(item.get("topic")),
                                "error": int(ErrorCode.NOT_CONTROLLER),
                                "message": f"broker {self.id} is no longer the controller"})
            except (KeyError, TypeError, ValueError) as exc:
                results.append({"topic": str(item.get("topic")),
                                "error": int(ErrorCode.INVALID_REQUEST),
                                "message": f"bad request: missing or malformed field {exc}"})
        return {"topics": results, "throttle_time_ms": throttle}

    def _charge(self, user: str, client: str, mutations: int, strict: bool) -> int:
        """Seed 001: strict (new clients) raises THROTTLING_QUOTA_EXCEEDED; lenient (old
        clients) always admits and returns the throttle time."""
        with self._quota_lock:
            throttle = self.quotas.check(user, client, mutations, strict)
        if strict and throttle > 0:
            raise AdminError(ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                             f"controller mutation quota exceeded for user={user} "
                             f"client-id={client}; retry in {throttle / 1000:.1f}s", throttle)
        return throttle

    def _fenced_commit(self, txn_items: Any) -> list[Any]:
        """One multi: check /controller_epoch is still ours, then the admin write."""
        ctl = self.broker.controller
        if not ctl.active:
            raise NotController()
        txn = self.zk.transaction()
        txn.check(zkl.CONTROLLER_EPOCH, ctl.epoch_version)
        txn_items(txn)
        results = txn.commit()
        if results and isinstance(results[0], BadVersionError | NoNodeError):
            # /controller_epoch moved behind our back: we are a zombie controller.  Resign
            # as the controller thread does when its own fenced write fails, so an election
            # runs again (seed 002) instead of every admin request failing from now on.
            if ctl.active:
                ctl.events.put(("resign", "epoch_fenced"))
            raise NotController()
        return results

    def _live_brokers(self) -> list[int]:
        return sorted(int(b) for b in self.zk.get_children(zkl.BROKER_IDS))

    @staticmethod
    def _assign(live: list[int], first_partition: int, count: int, rf: int,
                start: int) -> dict[str, list[int]]:
        if rf < 1 or rf > len(live):
            raise AdminError(ErrorCode.INVALID_REPLICATION_FACTOR,
                             f"replication factor {rf} with {len(live)} live brokers")
        return {str(i): [live[(start + i + j) % len(live)] for j in range(rf)]
                for i in range(first_partition, first_partition + count)}

    def _read_assignment(self, topic: str) -> dict[str, list[int]]:
        try:
            data, _ = self.zk.get(zkl.topic_path(topic))
        except NoNodeError as exc:
            raise AdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no topic {topic}") from exc
        return dict(zkl.decode(data)["partitions"])

    def _create_topic(self, spec: dict[str, Any], user: str, client: str, strict: bool,
                      validate_only: bool) -> tuple[dict[str, Any], int]:
        topic = str(spec["topic"])
        if not TOPIC_NAME.match(topic):
            raise AdminError(ErrorCode.INVALID_REQUEST, f"invalid topic name {topic!r}")
        partitions, rf = int(spec.get("partitions", 1)), int(spec.get("replication_factor", 1))
        if spec.get("assignment"):
            assignment = {str(k): [int(b) for b in v] for k, v in spec["assignment"].items()}
        else:
            if partitions < 1 or partitions > 10000:
                raise AdminError(ErrorCode.INVALID_PARTITIONS, f"{partitions} partitions")
            live = self._live_brokers()
            assignment = self._assign(live, 0, partitions, rf, sum(topic.encode()) % max(1, len(live)))
        if self.zk.exists(zkl.topic_path(topic)):
            raise AdminError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {topic} exists")
        if self.zk.exists(f"{zkl.DELETE_TOPICS}/{topic}"):
            raise AdminError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {topic} is being deleted")
        if validate_only:
            return {"assignment": assignment}, 0
        throttle = self._charge(user, client, len(assignment), strict)
        results = self._fenced_commit(lambda txn: txn.create(
            zkl.topic_path(topic), zkl.encode({"partitions": assignment})))
        if any(isinstance(r, NodeExistsError) for r in results):
            raise AdminError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {topic} exists")
        _raise_failed(results)
        return {"assignment": assignment}, throttle

    def _delete_topic(self, spec: dict[str, Any], user: str, client: str, strict: bool,
                      validate_only: bool) -> tuple[dict[str, Any], int]:
        topic = str(spec["topic"])
        current = self._read_assignment(topic)
        if self.zk.exists(f"{zkl.DELETE_TOPICS}/{topic}"):
            return {}, 0  # already being deleted: nothing more to charge
        if validate_only:
            return {}, 0
        throttle = self._charge(user, client, len(current), strict)
        results = self._fenced_commit(lambda txn: txn.create(f"{zkl.DELETE_TOPICS}/{topic}", b""))
        if not any(isinstance(r, NodeExistsError) for r in results):
            _raise_failed(results)
        return {}, throttle

    def _add_partitions(self, spec: dict[str, Any], user: str, client: str, strict: bool,
                        validate_only: bool) -> tuple[dict[str, Any], int]:
        topic, total = str(spec["topic"]), int(spec["count"])
        current = self._read_assignment(topic)
        if total <= len(current):
            raise AdminError(ErrorCode.INVALID_PARTITIONS,
                             f"topic {topic} already has {len(current)} partitions")
        if total > 10000:
            raise AdminError(ErrorCode.INVALID_PARTITIONS, f"{total} partitions")
        first = zkl.fresh_partition_id(self.zk, topic, (int(p) for p in current))  # never a removed id
        if spec.get("assignments"):
            new = self._given_assignments(spec["assignments"], first, total - len(current))
        else:
            rf = len(next(iter(current.values())))
            live = self._live_brokers()
            new = self._assign(live, first, total - len(current), rf, sum(topic.encode()) % len(live))
        if self.zk.exists(f"{zkl.PARTITIONS_ADD}/{topic}"):
            raise AdminError(ErrorCode.INVALID_PARTITIONS, f"an add to {topic} is pending already")
        if validate_only:
            return {"added": new}, 0
        throttle = self._charge(user, client, len(new), strict)

        def items(txn: Any) -> None:
            txn.create(f"{zkl.PARTITIONS_ADD}/{topic}", b"")
            for p, reps in new.items():
                txn.create(f"{zkl.PARTITIONS_ADD}/{topic}/{p}", zkl.encode(reps))

        results = self._fenced_commit(items)
        if any(isinstance(r, BaseException) for r in results):
            raise AdminError(ErrorCode.INVALID_PARTITIONS, f"an add to {topic} is pending already")
        return {"added": new}, throttle

    @staticmethod
    def _given_assignments(given: Any, first: int, count: int) -> dict[str, list[int]]:
        """The administrator's replicas for the partitions added (Kafka's CreatePartitions
        ``assignments``): one non-empty list of distinct broker ids per new partition, in
        id order from the topic's fresh id.  As for a topic created with an assignment,
        the brokers need not be up: the controller makes the first live one listed lead."""
        if not isinstance(given, list) or len(given) != count:
            raise AdminError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"{count} partition(s) to add, {len(given) if isinstance(given, list) else 0} assigned")
        out: dict[str, list[int]] = {}
        for i, reps in enumerate(given):
            if not isinstance(reps, list) or not reps or len(set(reps)) != len(reps) \
                    or any(not isinstance(b, int) or b < 0 for b in reps):
                raise AdminError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                                 f"replicas {reps!r} must be distinct broker ids")
            out[str(first + i)] = [int(b) for b in reps]
        return out

    def _remove_partitions(self, body: dict[str, Any], user: str, client: str,
                           strict: bool) -> dict[str, Any]:
        """Seed 000 H: any partitions the topic has, its last one included -- the topic then
        stays with none, its ids used (``zk.next_partition_path``), as in the model
        (``model.actions.partitions.remove_partitions``); a later CreatePartitions adds one
        under a fresh id.  Refused: an empty list, a repeated id, an id the topic does not
        have, a removal of it already pending."""
        topic, parts = str(body["topic"]), [int(p) for p in body["partitions"]]
        current = self._read_assignment(topic)
        if not parts or len(set(parts)) != len(parts) or any(str(p) not in current for p in parts):
            raise AdminError(ErrorCode.INVALID_PARTITIONS, "cannot remove those partitions")
        throttle = self._charge(user, client, len(parts), strict)

        def items(txn: Any) -> None:
            if not self.zk.exists(f"{zkl.PARTITIONS_REMOVE}/{topic}"):
                txn.create(f"{zkl.PARTITIONS_REMOVE}/{topic}", b"")
            for p in parts:
                txn.create(f"{zkl.PARTITIONS_REMOVE}/{topic}/{p}", b"")

        results = self._fenced_commit(items)
        if any(isinstance(r, BaseException) for r in results):
            raise AdminError(ErrorCode.INVALID_PARTITIONS, "a removal of those is pending already")
        return {"topic": topic, "throttle_time_ms": throttle}

    def _reassign(self, body: dict[str, Any], user: str, client: str,
                  strict: bool) -> dict[str, Any]:
        topic, p = str(body["topic"]), int(body["partition"])
        replicas = [int(b) for b in body["replicas"]]
        current = self._read_assignment(topic)
        live = set(self._live_brokers())
        if str(p) not in current:
            raise AdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {topic}-{p}")
        if not replicas or len(set(replicas)) != len(replicas) or not set(replicas) <= live:
            raise AdminError(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                             f"replicas {replicas} must be distinct live brokers {sorted(live)}")

        def items(txn: Any) -> None:
            if not self.zk.exists(f"{zkl.REASSIGN}/{topic}"):
                txn.create(f"{zkl.REASSIGN}/{topic}", b"")
            txn.create(f"{zkl.REASSIGN}/{topic}/{p}", zkl.encode(replicas))

        if any(isinstance(r, BaseException) for r in self._fenced_commit(items)):
            raise AdminError(ErrorCode.INVALID_REQUEST, "a reassignment is in progress")
        return {"topic": topic, "partition": p}

    def _elect_preferred(self, body: dict[str, Any], user: str, client: str,
                         strict: bool) -> dict[str, Any]:
        topic, p = str(body["topic"]), int(body["partition"])
        self._read_assignment(topic)

        def items(txn: Any) -> None:
            if not self.zk.exists(f"{zkl.PREFERRED}/{topic}"):
                txn.create(f"{zkl.PREFERRED}/{topic}", b"")
            if not self.zk.exists(f"{zkl.PREFERRED}/{topic}/{p}"):
                txn.create(f"{zkl.PREFERRED}/{topic}/{p}", b"")

        self._fenced_commit(items)  # a request already pending is the same request
        return {}

    async def _alter_quotas(self, body: dict[str, Any]) -> dict[str, Any]:
        entries = []
        for e in body["entries"]:
            entity: Entity = (e.get("user"), e.get("client_id"))
            _validate_name(entity[0], "user")
            _validate_name(entity[1], "client id")
            if entity == (None, None):
                raise AdminError(ErrorCode.INVALID_REQUEST, "a quota needs a user, a client id or both")
            rate = e.get("rate")
            if rate is not None and not float(rate) > 0:
                raise AdminError(ErrorCode.INVALID_REQUEST,
                                 f"{RATE} must be a positive number, got {rate}")
            entries.append((entity, None if rate is None else float(rate)))
        if body.get("validate_only"):
            return {"altered": len(entries)}
        assert self._alter_lock is not None
        async with self._alter_lock:  # one alteration at a time: parents are created once
            await self.broker._zk(lambda: self._write_quotas(entries))
        await self.broker._zk(self.reload_quotas)
        return {"altered": len(entries)}

    def _write_quotas(self, entries: list[tuple[Entity, float | None]]) -> None:
        _, stat = self.zk.get(QUOTAS)
        planned: set[str] = set()

        def items(txn: Any) -> None:
            for entity, rate in entries:
                path = entity_path(QUOTAS, entity)
                parts = path[len(QUOTAS) + 1:].split("/")
                for i in range(1, len(parts) + 1):
                    sub = f"{QUOTAS}/{'/'.join(parts[:i])}"
                    if sub == path:
                        break
                    if sub not in planned and not self.zk.exists(sub):
                        txn.create(sub, b"")
                        planned.add(sub)
                data = zkl.encode({RATE: rate}) if rate is not None else b""
                if path in planned or self.zk.exists(path):
                    txn.set_data(path, data)
                else:
                    txn.create(path, data)
                    planned.add(path)
            counter = int((self.zk.get(QUOTAS)[0] or b"0").decode() or 0)
            txn.set_data(QUOTAS, str(counter + 1).encode(), version=stat.version)

        _raise_failed(self._fenced_commit(items))

    def reload_quotas(self) -> None:
        with self._quota_lock, contextlib.suppress(Exception):
            self.quotas.replace_all(read_quotas(self.zk))


def read_quotas(zk: Any) -> dict[Entity, float]:
    """Every controller_mutation_rate under /config/quotas."""
    out: dict[Entity, float] = {}

    def rate_at(path: str) -> float | None:
        try:
            data, _ = zk.get(path)
        except NoNodeError:
            return None
        d = zkl.decode(data) if data else None
        return float(d[RATE]) if isinstance(d, dict) and d.get(RATE) is not None else None

    def children(path: str) -> list[str]:
        try:
            return sorted(zk.get_children(path))
        except NoNodeError:
            return []

    for user in children(f"{QUOTAS}/users"):
        q = rate_at(f"{QUOTAS}/users/{user}")
        if q is not None:
            out[(user, None)] = q
        for client in children(f"{QUOTAS}/users/{user}/clients"):
            q = rate_at(f"{QUOTAS}/users/{user}/clients/{client}")
            if q is not None:
                out[(user, client)] = q
    for client in children(f"{QUOTAS}/clients"):
        q = rate_at(f"{QUOTAS}/clients/{client}")
        if q is not None:
            out[(None, client)] = q
    return out


def _raise_failed(results: list[Any]) -> None:
    errors = [r for r in results if isinstance(r, BaseException)]
    if errors:
        raise zkl.TransactionFailed(errors)
