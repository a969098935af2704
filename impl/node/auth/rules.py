"""Which authenticated principal may send which request: one rule per kind of request.

Each forged request a broker must refuse claims an identity in its body -- a follower id in a
fetch, a controller id and epoch in a control request, a user in an admin request, a
forwarding broker in a forwarded one.  The rule is the same for all of them: **a body may
name only the identity its connection authenticated as.**

* ``LEADER_AND_ISR``, ``STOP_REPLICA``, ``UPDATE_METADATA`` -- only from ``broker-N`` with
  ``controller_id`` = N: the controller runs inside broker N and signs in as it.  Every
  broker may name itself, so the broker then obeys the request only if ZooKeeper names N
  the controller at the request's epoch (:func:`impl.node.fencing.controller_claim`, which
  needs the broker's state and ZooKeeper, so it is not a rule of this pure module).
* a replica fetch (``FETCH`` with ``partitions`` or ``replica_id`` >= 0) and a follower's
  ``OFFSETS_FOR_LEADER_EPOCH`` -- only from ``broker-F`` with ``replica_id`` = F: only the
  follower's own fetch moves the leader's view of its LEO, and so the HW.  The leader then
  serves it only for partitions whose assignment holds F (:func:`impl.node.fencing.fetch_refusal`).
* ``CONTROLLED_SHUTDOWN`` -- only from ``broker-B`` with ``broker_id`` = B.
* ``ENVELOPE`` (a forwarded admin request, KIP-590) -- only from a broker, and with
  ``forwarded_by`` = N only from ``broker-N``: only a broker relays a client's principal
  (Kafka asks for CLUSTER_ACTION).  The request inside is then authorized as its original
  principal's, by these same rules (:meth:`impl.node.admin.AdminService.handle_envelope`).
* an admin request that claims to be forwarded (``forwarded_by``, ``principal``,
  ``forward_id``, ``original_version``) outside an Envelope -- refused: only an Envelope is
  handled as forwarded.
* an admin request's ``user`` -- a client's own name or nothing; it is set to the
  authenticated name, so the quota is charged to who sent it.
* ``ALTER_CLIENT_QUOTAS`` -- not from a client: a throttled user could otherwise raise its
  own quota (Kafka asks for ALTER_CONFIGS on the cluster).  A forwarded one comes from a
  broker, which took it from the operator, since a client's is refused where it arrives.
* everything else (produce, consumer fetch, metadata, admin) -- any authenticated principal.

The operator (the cluster's ``super.users``) passes every rule.  The rules are pure:
:func:`authorize` returns the body to act on, or a :class:`Refusal`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from impl.node.auth.credentials import Kind, Principal
from impl.node.codes import CONTROLLER_VERSIONS, ApiKey, ErrorCode

CONTROL_APIS = frozenset({ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA})
ADMIN_APIS = frozenset(CONTROLLER_VERSIONS) | {ApiKey.DESCRIBE_CLIENT_QUOTAS}
# what a forwarded request claimed in its body before forwarding moved into ENVELOPE (the last
# two still ride inside one, in the forwarded request's tag)
FORWARD_FIELDS = ("forwarded_by", "principal", "forward_id", "original_version")


@dataclass(frozen=True)
class Refusal:
    code: ErrorCode
    reason: str


def _claims(principal: Principal, field: str, value: Any) -> Refusal | None:
    """None if ``principal`` is the broker a body's ``field`` = ``value`` names."""
    if principal.kind is Kind.OPERATOR:
        return None
    try:
        claimed = int(value)
    except (TypeError, ValueError):
        return Refusal(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, f"{field} {value!r} is not a broker id")
    if principal.broker_id is None or principal.broker_id != claimed:
        return Refusal(ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                       f"{principal} may not send a request with {field}={claimed}")
    return None


def is_replica_request(api: ApiKey, body: dict[str, Any]) -> bool:
    """A follower's fetch or epoch lookup, by what the body claims."""
    if api == ApiKey.FETCH:
        return "partitions" in body or _int(body.get("replica_id", -1)) >= 0
    return api == ApiKey.OFFSETS_FOR_LEADER_EPOCH and _int(body.get("replica_id", -1)) >= 0


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0  # not -1: a malformed id claims something, and is checked as a claim


def _envelope(principal: Principal, body: dict[str, Any]) -> dict[str, Any] | Refusal:
    """An Envelope's sender: a broker naming itself as ``forwarded_by`` (absent: it is
    filled in), or the operator."""
    if "forwarded_by" in body:
        return _claims(principal, "forwarded_by", body["forwarded_by"]) or body
    if principal.kind is Kind.CLIENT:
        return Refusal(ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                       f"{principal} may not send an Envelope (only brokers forward requests)")
    return {**body, "forwarded_by": principal.broker_id}


def authorize(principal: Principal, api: ApiKey, body: dict[str, Any]) -> dict[str, Any] | Refusal:
    """The body to act on, or why ``principal`` may not send it."""
    if api in CONTROL_APIS:
        return _claims(principal, "controller_id", body.get("controller_id")) or body
    if api == ApiKey.CONTROLLED_SHUTDOWN:
        return _claims(principal, "broker_id", body.get("broker_id")) or body
    if is_replica_request(api, body):
        return _claims(principal, "replica_id", body.get("replica_id")) or body
    if api == ApiKey.ENVELOPE:
        return _envelope(principal, body)
    if api in ADMIN_APIS:
        claimed = [f for f in FORWARD_FIELDS if f in body]
        if claimed and principal.kind is not Kind.OPERATOR:
            return Refusal(ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                           f"{principal} may not send {', '.join(claimed)} outside an Envelope "
                           "(only an Envelope is handled as forwarded)")
        if principal.kind is Kind.CLIENT:
            if api == ApiKey.ALTER_CLIENT_QUOTAS:
                return Refusal(ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                               f"{principal} may not alter quotas (the operator may)")
            user = body.get("user")
            if user is not None and user != principal.name:
                return Refusal(ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                               f"{principal} may not act as user {user!r}")
            return {**body, "user": principal.name}
    return body
