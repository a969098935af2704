"""Forwarding as Kafka's Envelope (ApiKey 58, KIP-590): what a broker wraps around the admin
request it forwards to the controller, and what the controller reads out of it.

As Kafka's ``ForwardingManager`` does, the forwarding broker sends the client's request as
it came -- its API, its version (Epochal's, in the tag: 0, the one that is forwarded), its
correlation id, its body -- as ``request_data``, the client's principal as Kafka's
``DefaultPrincipalData`` in ``request_principal`` and the client's address in
``client_host_address`` (:func:`wrap`).  What Kafka's Envelope has no field for rides in the
forwarded request's Epochal tag: ``forward_id`` (the audit log's id of this forwarding) and
``original_version`` (the version the client sent); and the forwarding broker's id in the
Envelope's own tag (``forwarded_by``).

The controller reads it as Kafka's ``EnvelopeUtils.handleEnvelopeRequest`` does
(:func:`unwrap`): a principal that does not decode is PRINCIPAL_DESERIALIZATION_FAILURE, a
client address that is no IP address INVALID_REQUEST, a forwarded request that does not
parse UNSUPPORTED_VERSION, and one that may not be forwarded -- anything but an admin write
of :data:`impl.node.codes.FORWARDABLE`, an Envelope above all -- INVALID_REQUEST.  Those are
the Envelope's own errors; the forwarded request's answer, errors included, is
``response_data``, in the forwarded request's own frame (:func:`answer`, :func:`read_answer`).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any, NamedTuple

from impl.node.codes import API_VERSIONS, FORWARDABLE, ApiKey, ErrorCode, ProtocolError
from impl.node.kafka.translate.envelope import principal_bytes, principal_name
from impl.node.wire import (
    decode_request_body,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
)

_LENGTH = 4  # the frame's length prefix, which Kafka's request_data / response_data leave out
# the forwarded request's tag fields that are forwarding's, not the request's
FORWARD_ID, ORIGINAL_VERSION = "forward_id", "original_version"
UNKNOWN_HOST = "0.0.0.0"


class Origin(NamedTuple):
    """Where a client's request came from: what a forwarded request keeps of it."""

    correlation_id: int = 0
    host: str = UNKNOWN_HOST
    principal: str | None = None  # who the connection authenticated as (None: no authentication)


def origin_of(correlation_id: int, peer: Any, principal: str | None) -> Origin:
    """The origin of a request read off a connection to ``peer`` (a socket address)."""
    host = str(peer[0]) if isinstance(peer, tuple) and peer else UNKNOWN_HOST
    return Origin(correlation_id, host, principal)


UNKNOWN_ORIGIN = Origin()  # a request not read off a connection (the Kafka listener's tools)


@dataclass(frozen=True)
class Forwarded:
    """What the controller knows of a request that came inside an Envelope."""

    forwarded_by: int | None  # the forwarding broker (None: the operator, or not said)
    user: str  # the original client's authenticated principal (request_principal)
    forward_id: str | None
    original_version: int


@dataclass(frozen=True)
class Unwrapped:
    """The forwarded request inside an Envelope."""

    api: ApiKey
    version: int
    correlation_id: int
    body: dict[str, Any]
    forwarded: Forwarded


def _address(host: str) -> bytes:
    try:
        return ipaddress.ip_address(host).packed
    except ValueError:
        return ipaddress.ip_address(UNKNOWN_HOST).packed


def wrap(api: ApiKey, version: int, body: dict[str, Any], user: str, origin: Origin,
         clock: int, forwarded_by: int, forward_id: str) -> dict[str, Any]:
    """The Envelope a broker sends the controller for the client's request ``body``: its
    principal the one the client's connection authenticated as, else (no authentication)
    ``user``, the one the request names."""
    inner = {**body, FORWARD_ID: forward_id, ORIGINAL_VERSION: version}
    return {"request_data": encode_request(api, version, origin.correlation_id, clock,
                                           inner)[_LENGTH:],
            "request_principal": principal_bytes(origin.principal or user),
            "client_host_address": _address(origin.host), "forwarded_by": forwarded_by}


def unwrap(envelope: dict[str, Any]) -> Unwrapped:
    """The forwarded request; ProtocolError with the Envelope's error (Kafka's) if it cannot
    be handled."""
    user = principal_name(envelope.get("request_principal"))
    if len(envelope.get("client_host_address") or b"") not in (4, 16):
        raise ProtocolError("client_host_address is not an IPv4 or IPv6 address",
                            ErrorCode.INVALID_REQUEST)
    data = bytes(envelope.get("request_data") or b"")
    try:
        header = decode_request_header(data)
    except ProtocolError as exc:
        raise ProtocolError(f"forwarded request header: {exc}", ErrorCode.UNSUPPORTED_VERSION) from None
    api_key, version, cid, _clock = header
    if api_key not in FORWARDABLE:
        name = ApiKey(api_key).name if api_key in ApiKey._value2member_map_ else f"api key {api_key}"
        raise ProtocolError(f"{name} may not be forwarded", ErrorCode.INVALID_REQUEST)
    api = ApiKey(api_key)
    if not 0 <= version <= API_VERSIONS[api]:
        raise ProtocolError(f"forwarded {api.name} v{version}", ErrorCode.UNSUPPORTED_VERSION)
    try:
        body = decode_request_body(data, header)
    except ProtocolError as exc:
        raise ProtocolError(f"forwarded {api.name}: {exc}", ErrorCode.UNSUPPORTED_VERSION) from None
    forward_id = body.pop(FORWARD_ID, None)
    original = body.pop(ORIGINAL_VERSION, version)
    by = envelope.get("forwarded_by")
    return Unwrapped(api, version, cid, body, Forwarded(
        forwarded_by=by if isinstance(by, int) else None, user=user,
        forward_id=None if forward_id is None else str(forward_id),
        original_version=original if isinstance(original, int) else version))


def answer(inner: Unwrapped, clock: int, error: int, body: dict[str, Any]) -> dict[str, Any]:
    """The Envelope's answer: the forwarded request's, in its own frame."""
    frame = encode_response(inner.correlation_id, clock, error, body, inner.api, inner.body)
    return {"response_data": frame[_LENGTH:]}


def read_answer(api: ApiKey, envelope_answer: dict[str, Any]) -> tuple[int, int, dict[str, Any]]:
    """(clock, error, body) of the forwarded request's answer inside an Envelope's."""
    data = envelope_answer.get("response_data")
    if not isinstance(data, bytes):
        raise ProtocolError("an Envelope answered without response_data")
    _cid, clock, error, body = decode_response(data, api)
    return clock, error, body


__all__ = ["FORWARD_ID", "ORIGINAL_VERSION", "UNKNOWN_ORIGIN", "Forwarded", "Origin", "Unwrapped", "answer", "origin_of",
           "read_answer", "unwrap", "wrap"]
