"""Admin requests: handled by the controller only (seed 004, KIP-590), under the
controller-mutation quota (seed 001, KIP-599).

Routing, per request version (``impl.node.wire.CONTROLLER_VERSIONS`` gives the bumped version):

* **new version, this broker is the active controller** -- handled here, by the writes of
  :mod:`impl.node.admin_writes`.  Each ZooKeeper write is one multi that first checks
  ``/controller_epoch``'s version, so a controller that has just been replaced cannot write
  anything (it answers NOT_CONTROLLER instead).
* **new version, not the controller** -- NOT_CONTROLLER (41) with the ``controller_id`` this
  broker knows; the client rediscovers the controller from metadata and resends.
* **old version** -- forwarded to the controller inside Kafka's Envelope (ApiKey 58,
  :mod:`impl.node.envelope`): the client's request as it came, with the original principal
  in the Envelope (``request_principal``) and ``forward_id`` / ``original_version`` in the
  forwarded request's tag; the controller answers it in the old format and the answer is
  relayed.  Only an Envelope is handled as forwarded, and what arrives in one is handled by
  the controller or refused (NOT_CONTROLLER), never forwarded again: if it reaches a broker
  that lost the election meanwhile it gets NOT_CONTROLLER, and the *forwarding* broker
  retries against the controller it discovers next (only while the request was provably
  not delivered: NOT_CONTROLLER, or no connection).  If the controller connection drops
  after the request was sent, the outcome is unknown and the client gets REQUEST_TIMED_OUT
  rather than a second, blind attempt.

Each broker caches the active controller id from ``/controller`` (seed 002, a DataWatch that
sees its deletion and data changes) and puts it in the metadata it serves.

Quota (seed 001): a request is worth the partitions it creates, adds or deletes, charged to
its principal (``user``, ``client_id``; for a forwarded request, the Envelope's principal).
New-version clients get THROTTLING_QUOTA_EXCEEDED (89) per topic with ``throttle_time_ms``;
old clients are always accepted and told ``throttle_time_ms`` -- and the broker that answers
them mutes their connection for that long (it reads nothing more from it; see
``impl.node.broker.server.Broker._connection``), which is what bounds their rate.
``validate_only`` requests are exempt.  Quotas live in ZooKeeper under ``/config/quotas``
(``impl.node.quota.entity_path``), written only by the controller; every broker watches
``/config/quotas`` (its data is a change counter bumped in the same multi as every
alteration) and reloads them.

Every admin request handled, forwarded or refused is appended to the broker's audit log
``<data-dir>/broker-N/admin-audit.jsonl`` (KIP-590 attaches the principal "for controller
audit log purpose"); tests read it to prove each request was forwarded at most once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import uuid
from typing import Any

from kazoo.exceptions import NoNodeError

from impl.node import zk as zkl
from impl.node.admin_writes import (
    QUOTAS,
    RATE,
    AdminError,
    AdminHost,
    AdminWrites,
    NotController,
    read_quotas,
)
from impl.node.auth.credentials import Principal
from impl.node.auth.rules import Refusal, authorize
from impl.node.envelope import UNKNOWN_ORIGIN, Forwarded, Origin, answer, read_answer, unwrap, wrap
from impl.node.layout import DataDir
from impl.node.quota import ANONYMOUS
from impl.node.wire import (
    CONTROLLER_VERSIONS,
    ApiKey,
    AsyncConnection,
    ErrorCode,
    ProtocolError,
    error_name,
)

ADMIN_APIS = frozenset(CONTROLLER_VERSIONS) | {ApiKey.DESCRIBE_CLIENT_QUOTAS}
FORWARD_TIMEOUT_S = 15.0


def principal_of(body: dict[str, Any], forwarded: Forwarded | None = None) -> tuple[str, str]:
    """The request's principal: its ``user`` (checked against the connection's principal,
    or for a forwarded request the Envelope's, by :mod:`impl.node.auth.rules`: a client's is
    its own name, the operator may name anyone); a forwarded request that names none (a
    Kafka broker's) is the Envelope's.  The client id is the request's own."""
    user = body.get("user") or (forwarded.user if forwarded is not None else None)
    return str(user or ANONYMOUS), str(body.get("client_id") or "")


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


class AdminService(AdminWrites):
    """One per broker: routes admin requests (see the module docstring), holds the cached
    controller id and, on the active controller, the quota manager.  Handlers run on the
    broker's event loop; ZooKeeper calls go to its executor."""

    def __init__(self, broker: AdminHost) -> None:
        super().__init__(broker)
        self.controller_id = -1  # the active controller, cached from /controller (seed 002)
        self._controller_changed: asyncio.Event | None = None
        self._audit_path = DataDir.of(broker.config.data_dir).broker(self.id).admin_audit
        self._audit_lock = threading.Lock()

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

    def audit(self, event: str, **fields: Any) -> None:
        line = json.dumps({"ts": time.time(), "broker": self.id, "event": event, **fields},
                          sort_keys=True)
        with self._audit_lock, open(self._audit_path, "a") as f:
            f.write(line + "\n")

    @property
    def is_controller(self) -> bool:
        return bool(self.broker.controller.active)

    async def handle(self, api: ApiKey, version: int, body: dict[str, Any],
                     origin: Origin = UNKNOWN_ORIGIN) -> dict[str, Any]:
        """A client's admin request (``origin``: where it came from, which a forwarded
        request keeps)."""
        if api == ApiKey.DESCRIBE_CLIENT_QUOTAS:
            return await self._describe_quotas(body)
        if version < CONTROLLER_VERSIONS[api] and not self.is_controller:
            return await self._forward(api, version, body, origin)
        return await self._here(api, version, body, None)

    async def _here(self, api: ApiKey, version: int, body: dict[str, Any],
                    forwarded: Forwarded | None) -> dict[str, Any]:
        """Handled on this broker if it is the active controller, else NOT_CONTROLLER; the
        answer in the request's version's format."""
        new = CONTROLLER_VERSIONS[api]
        user, client = principal_of(body, forwarded)
        original = forwarded.original_version if forwarded is not None else \
            int(body.get("original_version", version))
        hops = _hops(forwarded)
        self._require_controller(api, version, user, client, hops)
        # a client of the old version is lenient-throttled, wherever it was forwarded from
        resp = await self._on_controller(api, to_controller_format(api, body), user, client,
                                         strict=original >= new)
        self.audit("handled", api=api.name, version=version, **hops,
                   original_version=original, user=user, client_id=client,
                   throttle_time_ms=int(resp.get("throttle_time_ms", 0)),
                   errors=_errors_of(resp))
        return resp if version >= new else to_old_format(api, resp)

    def _require_controller(self, api: ApiKey, version: int, user: str, client: str,
                            hops: dict[str, Any]) -> None:
        """NOT_CONTROLLER (audited) unless this broker is the active controller."""
        if self.is_controller:
            return
        self.audit("not_controller", api=api.name, version=version, **hops,
                   user=user, client_id=client, controller_id=self.controller_id)
        raise AdminError(ErrorCode.NOT_CONTROLLER,
                         f"broker {self.id} is not the controller "
                         f"(controller: {self.controller_id})")

    async def handle_envelope(self, envelope: dict[str, Any], insecure: bool) -> dict[str, Any]:
        """An Envelope from a forwarding broker (its sender authorized already,
        :mod:`impl.node.auth.rules`): the forwarded request, authorized as its original
        principal's (unless the cluster runs ``insecure``) and handled here -- never
        forwarded again.  A request that cannot be read, or a controller that is not the
        active one, is the Envelope's error (AdminError); everything else is the forwarded
        request's answer."""
        try:
            inner = unwrap(envelope)
        except ProtocolError as exc:
            raise AdminError(exc.code, str(exc)) from None
        # as Kafka's: a controller that is not the active one refuses the Envelope before it
        # looks further into the request inside (the audit names the request all the same)
        self._require_controller(inner.api, inner.version,
                                 *principal_of(inner.body, inner.forwarded), _hops(inner.forwarded))
        body: dict[str, Any] | Refusal = inner.body
        if not insecure:
            body = authorize(Principal(inner.forwarded.user), inner.api, inner.body)
        error, rbody = ErrorCode.NONE, {}
        try:
            if isinstance(body, Refusal):
                raise AdminError(body.code, body.reason)
            rbody = await self._here(inner.api, inner.version, body, inner.forwarded)
        except AdminError as exc:
            if exc.code == ErrorCode.NOT_CONTROLLER:  # the Envelope's: nothing was applied
                raise
            error, rbody = exc.code, {"message": str(exc), "throttle_time_ms": exc.throttle_ms,
                                      "controller_id": self.controller_id}
        except (KeyError, TypeError, ValueError) as exc:
            error, rbody = ErrorCode.INVALID_REQUEST, {"message": f"bad request: {exc!r}"}
        return answer(inner, self.broker.recorder.tick(), error, rbody)

    async def _forward(self, api: ApiKey, version: int, body: dict[str, Any],
                       origin: Origin) -> dict[str, Any]:
        """Send an old-version request on to the controller, once, in an Envelope."""
        user, client = principal_of(body)
        forward_id = uuid.uuid4().hex
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
                return await self._here(api, version, body, Forwarded(
                    forwarded_by=None, user=user, forward_id=forward_id,
                    original_version=version))
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
            envelope = wrap(api, version, body, user, origin, self.broker.recorder.tick(),
                            self.id, forward_id)
            resp = await self._send_to_controller(api, envelope, target, remaining, forward_id,
                                                  attempt)
            if resp is not None:
                return resp
            # not delivered, or refused with NOT_CONTROLLER -- so not applied: wait for the
            # next controller (or a second, so a re-elected same id is tried again)
            await self._await_controller_change(min(1.0, max(0.0, deadline - time.monotonic())))
            await self._refresh_controller_id()

    async def _send_to_controller(self, api: ApiKey, envelope: dict[str, Any], target: int,
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
                ApiKey.ENVELOPE, envelope, self.broker.recorder.tick(), timeout=max(timeout, 1.0))
            self.broker.recorder.observe(clock)
        except (OSError, TimeoutError, ConnectionError) as exc:
            self.audit("forward_unknown", api=api.name, forward_id=forward_id, target=target,
                       attempt=attempt, reason=repr(exc))
            raise AdminError(ErrorCode.REQUEST_TIMED_OUT,
                             f"lost controller {target} after forwarding; the outcome is "
                             "unknown, check before retrying") from None
        finally:
            conn.close()
        if error == ErrorCode.NOT_CONTROLLER:
            return None  # refused as a whole: nothing applied
        if error != ErrorCode.NONE:
            # as Kafka's forwarding broker: an Envelope refused is the cluster's fault (a
            # misconfigured broker), not the client's -- it gets UNKNOWN_SERVER_ERROR
            raise AdminError(ErrorCode.UNKNOWN_SERVER_ERROR,
                             f"controller {target} refused the forwarded request's Envelope: "
                             f"{error_name(error)}: {resp.get('message', '')}")
        try:
            clock, error, resp = read_answer(api, resp)
        except ProtocolError as exc:
            raise AdminError(ErrorCode.UNKNOWN_SERVER_ERROR,
                             f"controller {target}'s answer does not decode: {exc}") from None
        self.broker.recorder.observe(clock)
        if error == ErrorCode.NOT_CONTROLLER:
            return None  # the controller lost its office before applying anything
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

    async def _describe_quotas(self, body: dict[str, Any]) -> dict[str, Any]:
        quotas = await self.broker._zk(lambda: read_quotas(self.zk))
        out = [{"user": u, "client_id": c, RATE: q} for (u, c), q in sorted(
            quotas.items(), key=lambda kv: (kv[0][0] or "", kv[0][1] or ""))]
        with self._quota_lock:
            metrics = self.quotas.describe_metrics() if self.is_controller else {}
        return {"quotas": out, "metrics": metrics, "controller_id": self.controller_id,
                "from_controller": self.is_controller}


def _hops(forwarded: Forwarded | None) -> dict[str, Any]:
    """What the audit log records of a request's forwarding (None: not forwarded)."""
    return {"forward_id": forwarded.forward_id if forwarded else None,
            "forwarded_by": forwarded.forwarded_by if forwarded else None}


def _errors_of(resp: dict[str, Any]) -> list[int]:
    return [int(t.get("error", 0)) for t in resp.get("topics", [])]


__all__ = ["ADMIN_APIS", "AdminError", "AdminHost", "AdminService", "NotController", "principal_of",
           "to_controller_format", "to_old_format"]
