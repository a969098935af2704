"""Admin requests: handled by the controller only (seed 004, KIP-590), under the
controller-mutation quota (seed 001, KIP-599).

Routing, per request version (``impl.node.wire.CONTROLLER_VERSIONS`` gives the bumped version):

* **new version, this broker is the active controller** -- handled here.  The ZooKeeper
  write is one multi that first checks ``/controller_epoch``'s version, so a controller that
  has just been replaced cannot write anything (it answers NOT_CONTROLLER instead).
* **new version, not the controller** -- NOT_CONTROLLER (41) with the ``controller_id`` this
  broker knows; the client rediscovers the controller from metadata and resends.
* **old version** -- forwarded to the controller *as the new version*, with the original
  principal attached (``principal``, ``forwarded_by``, ``forward_id``), and the answer is
  relayed in the old format.  A new-version request is never forwarded, so a forwarded
  request is never forwarded again: if it reaches a broker that lost the election meanwhile
  it gets NOT_CONTROLLER, and the *forwarding* broker retries against the controller it
  discovers next (only while the request was provably not delivered: NOT_CONTROLLER, or no
  connection).  If the controller connection drops after the request was sent, the outcome
  is unknown and the client gets REQUEST_TIMED_OUT rather than a second, blind attempt.

Each broker caches the active controller id from ``/controller`` (seed 002, a DataWatch that
sees its deletion and data changes) and puts it in the metadata it serves.

Quota (seed 001): a request is worth the partitions it creates, adds or deletes, charged to
its principal (``user``, ``client_id``; for a forwarded request, the original principal).
New-version clients get THROTTLING_QUOTA_EXCEEDED (89) per topic with ``throttle_time_ms``;
old clients are always accepted and told ``throttle_time_ms`` -- and the broker that answers
them mutes their connection for that long (it reads nothing more from it; see
``Broker._connection``), which is what bounds their rate.  ``validate_only`` requests are
exempt.  Quotas live in ZooKeeper under ``/config/quotas`` (``impl.node.quota.entity_path``),
written only by the controller; every broker watches ``/config/quotas`` (its data is a change
counter bumped in the same multi as every alteration) and reloads them.

Every admin request handled, forwarded or refused is appended to the broker's audit log
``<data-dir>/broker-N/admin-audit.jsonl`` (KIP-590 attaches the principal "for controller
audit log purpose"); tests read it to prove each request was forwarded at most once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from impl.node import zk as zkl
from impl.node.quota import ANONYMOUS, DEFAULT, ControllerMutationQuotaManager, Entity, entity_path
from impl.node.quota import validate_entity_name as _validate_name
from impl.node.wire import CONTROLLER_VERSIONS, ApiKey, AsyncConnection, ErrorCode

if TYPE_CHECKING:
    from impl.node.broker import Broker

TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,200}$")
QUOTAS = "/config/quotas"
RATE = "controller_mutation_rate"
ADMIN_APIS = frozenset(CONTROLLER_VERSIONS) | {ApiKey.DESCRIBE_CLIENT_QUOTAS}
FORWARD_TIMEOUT_S = 15.0


class AdminError(Exception):
    """One topic's (or the whole request's) error: a code and a one-line message."""

    def __init__(self, code: ErrorCode, message: str = "", throttle_ms: int = 0) -> None:
        super().__init__(message or code.name)
        self.code, self.throttle_ms = code, throttle_ms


class NotController(Exception):
    """This broker is not (or no longer) the active controller."""


def principal_of(body: dict[str, Any]) -> tuple[str, str]:
    """The request's principal; a forwarded request carries the original one."""
    p = body.get("principal") if body.get("forwarded_by") is not None else None
    src = p if isinstance(p, dict) else body
    return str(src.get("user") or ANONYMOUS), str(src.get("client_id") or "")


def to_controller_format(api: ApiKey, body: dict[str, Any]) -> dict[str, Any]:
    """An old-version body in the new version's shape (topics lists; the rest unchanged)."""
    keep = {k: body[k] for k in ("user", "client_id", "validate_only") if k in body}
    if api == ApiKey.CREATE_TOPICS and "topics" not in body:
        spec = {k: body[k] for k in ("topic", "partitions", "replication_factor", "assignment")
                if k in body}
        return {**keep, "topics": [spec]}
    if api == ApiKey.DELETE_TOPICS and "topics" not in body:
        return {**keep, "topics": [body["topic"]]}
    if api == ApiKey.CREATE_PARTITIONS and "topics" not in body:
        return {**keep, "topics": [{"topic": body["topic"], "count": body["count"]}]}
    return dict(body)


def to_old_format(api: ApiKey, resp: dict[str, Any]) -> dict[str, Any]:
    """A new-version answer for an old client: one topic, its error as the request's."""
    if api not in (ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS):
        return resp
    item = resp["topics"][0]
    throttle = int(resp.get("throttle_time_ms", 0))
    if int(item.get("error", 0)) != ErrorCode.NONE:
        raise AdminError(ErrorCode(int(item["error"])), str(item.get("message", "")), throttle)
    out = {k: v for k, v in item.items() if k not in ("error", "message")}
    return {**out, "throttle_time_ms": throttle}


class AdminService:
    """One per broker: routes admin requests (see the module docstring), holds the cached
    controller id and, on the active controller, the quota manager.  Handlers run on the
    broker's event loop; ZooKeeper calls go to its executor."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.zk = broker.zk
        self.id = broker.id
        self.quotas = ControllerMutationQuotaManager(
            samples=broker.config.controller_quota_window_num,
            window_s=broker.config.controller_quota_window_size_s)
        self.controller_id = -1  # the active controller, cached from /controller (seed 002)
        self._controller_changed: asyncio.Event | None = None
        self._quota_lock = threading.Lock()
        self._alter_lock: asyncio.Lock | None = None
        self._audit_path = Path(broker.config.data_dir) / f"broker-{self.id}" / "admin-audit.jsonl"
        self._audit_lock = threading.Lock()

    # -- watches ----------------------------------------------------------------------------
    def start(self) -> None:
        """From the broker's event loop, once registered."""
        self._controller_changed = asyncio.Event()
        self._alter_lock = asyncio.Lock()
        self.zk.ensure_path(QUOTAS)
        self.zk.DataWatch(zkl.CONTROLLER, self._on_controller_znode)
        self.zk.DataWatch(QUOTAS, self._on_quotas_changed)

    def _on_controller_znode(self, data: bytes | None, _stat: Any) -> bool:
        """kazoo thread: /controller was created, changed or deleted."""
        cid = -1
        with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
            cid = int(json.loads(data)["brokerid"]) if data else -1
        self.controller_id = cid
        loop, event = self.broker.loop, self._controller_changed
        if loop is not None and event is not None:
            with contextlib.suppress(RuntimeError):  # loop closed: we are stopping
                loop.call_soon_threadsafe(self._signal_controller_change)
        return not self.broker.stopping

    def _signal_controller_change(self) -> None:
        assert self._controller_changed is not None
        self._controller_changed.set()
        self._controller_changed = asyncio.Event()

    def _on_quotas_changed(self, _data: bytes | None, _stat: Any) -> bool:
        # never block a kazoo callback with synchronous reads: reload on a thread
        threading.Thread(target=self.reload_quotas, daemon=True, name="quota-reload").start()
        return not self.broker.stopping

    def reload_quotas(self) -> None:
        with self._quota_lock, contextlib.suppress(Exception):
            self.quotas.replace_all(read_quotas(self.zk))

    def audit(self, event: str, **fields: Any) -> None:
        line = json.dumps({"ts": time.time(), "broker": self.id, "event": event, **fields},
                          sort_keys=True)
        with self._audit_lock, open(self._audit_path, "a") as f:
            f.write(line + "\n")

    # -- routing (seed 004) -------------------------------------------------------------------
    @property
    def is_controller(self) -> bool:
        return bool(self.broker.controller.active)

    async def handle(self, api: ApiKey, version: int, body: dict[str, Any]) -> dict[str, Any]:
        if api == ApiKey.DESCRIBE_CLIENT_QUOTAS:
            return await self._describe_quotas(body)
        new = CONTROLLER_VERSIONS[api]
        user, client = principal_of(body)
        fwd = body.get("forwarded_by")
        if version >= new:
            if not self.is_controller:
                self.audit("not_controller", api=api.name, version=version,
                           forward_id=body.get("forward_id"), forwarded_by=fwd,
                           user=user, client_id=client, controller_id=self.controller_id)
                raise AdminError(ErrorCode.NOT_CONTROLLER,
                                 f"broker {self.id} is not the controller "
                                 f"(controller: {self.controller_id})")
            strict = int(body.get("original_version", version)) >= new
            resp = await self._on_controller(api, body, user, client, strict)
            self.audit("handled", api=api.name, version=version, forward_id=body.get("forward_id"),
                       forwarded_by=fwd, user=user, client_id=client,
                       throttle_time_ms=int(resp.get("throttle_time_ms", 0)),
                       errors=_errors_of(resp))
            return resp
        converted = to_controller_format(api, body)
        if self.is_controller:  # an old client that happened to reach the controller
            resp = await self._on_controller(api, converted, user, client, strict=False)
            self.audit("handled", api=api.name, version=version, forward_id=None,
                       forwarded_by=None, user=user, client_id=client,
                       throttle_time_ms=int(resp.get("throttle_time_ms", 0)),
                       errors=_errors_of(resp))
        else:
            resp = await self._forward(api, version, converted, user, client)
        return to_old_format(api, resp)

    async def _forward(self, api: ApiKey, version: int, body: dict[str, Any], user: str,
                       client: str) -> dict[str, Any]:
        """Send an old-version request on to the controller, once, as the new version."""
        forward_id = uuid.uuid4().hex
        fwd = dict(body, forwarded_by=self.id, forward_id=forward_id, original_version=version,
                   principal={"user": user, "client_id": client})
        deadline = time.monotonic() + FORWARD_TIMEOUT_S
        delay = self.broker.config.forward_delay_ms / 1000
        attempt = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AdminError(ErrorCode.REQUEST_TIMED_OUT,
                                 f"no controller accepted the forwarded request within "
                                 f"{FORWARD_TIMEOUT_S:g}s")
            if self.is_controller:  # we won an election while waiting: no hop at all
                resp = await self._on_controller(api, fwd, user, client, strict=False)
                self.audit("handled", api=api.name, version=version, forward_id=forward_id,
                           forwarded_by=None, user=user, client_id=client,
                           throttle_time_ms=int(resp.get("throttle_time_ms", 0)),
                           errors=_errors_of(resp))
                return resp
            target = self.controller_id
            if target < 0 or target == self.id:  # no controller known (an election is on)
                await self._await_controller_change(min(remaining, 0.5))
                if self.controller_id == target:
                    await self._refresh_controller_id()
                continue
            attempt += 1
            self.audit("forward", api=api.name, version=version, forward_id=forward_id,
                       target=target, attempt=attempt, user=user, client_id=client)
            if delay:  # test hook: an election may happen between discovery and sending
                await asyncio.sleep(delay)
            resp = await self._send_to_controller(api, fwd, target, remaining, forward_id, attempt)
            if resp is not None:
                return resp
            # not delivered, or refused with NOT_CONTROLLER -- so not applied: wait for the
            # next controller (or a second, so a re-elected same id is tried again)
            await self._await_controller_change(min(1.0, max(0.0, deadline - time.monotonic())))
            await self._refresh_controller_id()

    async def _send_to_controller(self, api: ApiKey, fwd: dict[str, Any], target: int,
                                  timeout: float, forward_id: str,
                                  attempt: int) -> dict[str, Any] | None:
        """One forwarding attempt: the controller's answer, or None when the request was
        certainly not applied (no connection, or NOT_CONTROLLER)."""
        try:
            addr = self.broker.endpoints.get(target)
            if addr is None:
                addr = await self.broker._zk(lambda: self.broker._endpoint_from_zk(target))
            conn = await AsyncConnection.open(*addr, timeout=3)
        except (OSError, TimeoutError, NoNodeError, ConnectionError):
            return None
        try:
            error, clock, resp = await conn.request(
                api, fwd, self.broker.recorder.tick(), timeout=max(timeout, 1.0),
                version=CONTROLLER_VERSIONS[api])
            self.broker.recorder.observe(clock)
        except (OSError, TimeoutError, ConnectionError) as exc:
            self.audit("forward_unknown", api=api.name, forward_id=forward_id, target=target,
                       attempt=attempt, reason=repr(exc))
            raise AdminError(ErrorCode.REQUEST_TIMED_OUT,
                             f"lost controller {target} after forwarding; the outcome is "
                             "unknown, check before retrying") from None
        finally:
            conn.close()
        topics = resp.get("topics") if error == ErrorCode.NONE else None
        if error == ErrorCode.NOT_CONTROLLER or (topics and all(
                int(t.get("error", 0)) == ErrorCode.NOT_CONTROLLER for t in topics)):
            return None  # refused as a whole or topic by topic: nothing applied
        if error != ErrorCode.NONE:
            raise AdminError(ErrorCode(error), str(resp.get("message", "")),
                             int(resp.get("throttle_time_ms", 0)))
        return resp

    async def _await_controller_change(self, timeout: float) -> None:
        event = self._controller_changed
        if event is None:
            await asyncio.sleep(timeout)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(event.wait(), timeout)

    async def _refresh_controller_id(self) -> None:
        def read() -> int:
            try:
                data, _ = self.zk.get(zkl.CONTROLLER)
                return int(json.loads(data)["brokerid"])
            except (NoNodeError, ValueError, KeyError, TypeError):
                return -1
        self.controller_id = await self.broker._zk(read)

    # -- on the controller ------------------------------------------------------------------
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
        rf = len(next(iter(current.values())))
        live = self._live_brokers()
        first = max(int(p) for p in current) + 1
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

    def _remove_partitions(self, body: dict[str, Any], user: str, client: str,
                           strict: bool) -> dict[str, Any]:
        topic, parts = str(body["topic"]), [int(p) for p in body["partitions"]]
        current = self._read_assignment(topic)
        if any(str(p) not in current for p in parts) or len(parts) >= len(current) or not parts:
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

    # -- quotas: alter (controller only) and describe -------------------------------------------
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

    async def _describe_quotas(self, body: dict[str, Any]) -> dict[str, Any]:
        quotas = await self.broker._zk(lambda: read_quotas(self.zk))
        out = [{"user": u, "client_id": c, RATE: q} for (u, c), q in sorted(
            quotas.items(), key=lambda kv: (kv[0][0] or "", kv[0][1] or ""))]
        with self._quota_lock:
            metrics = self.quotas.describe_metrics() if self.is_controller else {}
        return {"quotas": out, "metrics": metrics, "controller_id": self.controller_id,
                "from_controller": self.is_controller}


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


def _errors_of(resp: dict[str, Any]) -> list[int]:
    return [int(t.get("error", 0)) for t in resp.get("topics", [])]


__all__ = ["ADMIN_APIS", "AdminError", "AdminService", "DEFAULT", "read_quotas"]
