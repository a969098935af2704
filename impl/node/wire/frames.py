"""Frames: a u32 length, a request or response header, and a body.

An API that travels as Kafka's message (:mod:`impl.node.kafka.translate`,
:data:`impl.node.codes.KAFKA_VERSIONS`) has Kafka's request header v2 / response header v1,
the clock in the header's Epochal tag, and Kafka's body; every other API still has the
broker protocol's own header (with an i64 clock) and a typed-value body.  The first field
of a request, its API key, says which; a response is read as the request it answers."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

from impl.node.codes import MAX_FRAME, U32, ApiKey, ErrorCode, ProtocolError
from impl.node.kafka import translate as kafka
from impl.node.kafka.translate import EncodedBody, encode_body
from impl.node.wire.values import decode_value, encode_value

_REQ_HEADER = struct.Struct(">hhiq")
_RESP_HEADER = struct.Struct(">iqh")
_API_KEY = struct.Struct(">h")
_CID = struct.Struct(">i")

__all__ = ["EncodedBody", "encode_body"]

# -- frames ---------------------------------------------------------------------------------


def encoded_body(api: int, body: dict[str, Any]) -> EncodedBody:
    """A request body encoded once, to be sent as it is to many recipients."""
    return encode_body(ApiKey(api), body) if kafka.speaks_kafka(api) else EncodedBody(encode_value(body))


def decode_encoded_body(api: int, body: EncodedBody) -> dict[str, Any]:
    """What a pre-encoded body says, as its recipient reads it."""
    if kafka.speaks_kafka(api):
        return kafka.decode_encoded_body(ApiKey(api), body)
    value = decode_value(bytes(body))
    assert isinstance(value, dict)
    return value


def request_frame_parts(api_key: int, api_version: int, correlation_id: int, clock: int,
                        body: dict[str, Any] | EncodedBody) -> tuple[bytes, bytes]:
    """A request frame as (length + header, body): a pre-encoded body is written as it is,
    never copied into a per-recipient buffer."""
    if kafka.speaks_kafka(api_key):
        return kafka.request_frame_parts(api_key, api_version, correlation_id, clock, body)
    encoded = body if isinstance(body, EncodedBody) else encode_value(body)
    header = _REQ_HEADER.pack(api_key, api_version, correlation_id, clock)
    return U32.pack(len(header) + len(encoded)) + header, encoded


def encode_request(api_key: int, api_version: int, correlation_id: int, clock: int,
                   body: dict[str, Any] | EncodedBody) -> bytes:
    prefix, encoded = request_frame_parts(api_key, api_version, correlation_id, clock, body)
    return prefix + encoded


def encode_response(correlation_id: int, clock: int, error: int, body: dict[str, Any],
                    api: int | None = None, request: dict[str, Any] | None = None) -> bytes:
    """The answer to ``request``, of ``api`` (None: a frame whose API is unknown -- the
    broker protocol's header, correlation id -1)."""
    if kafka.speaks_kafka(api) and correlation_id != -1:
        return kafka.encode_response(ApiKey(api), correlation_id, clock, error, body,  # type: ignore[arg-type]
                                     request)
    payload = _RESP_HEADER.pack(correlation_id, clock, error) + encode_value(body)
    return U32.pack(len(payload)) + payload


def _api_key(payload: bytes) -> int | None:
    return _API_KEY.unpack_from(payload)[0] if len(payload) >= _API_KEY.size else None


class RequestHeader(tuple[int, int, int, int]):
    """(api key, version, correlation id, clock); for a Kafka message also everything its
    header held (``kafka``), so that reading the body does not read the header again."""

    kafka: kafka.RequestHeader | None = None


def decode_request_header(payload: bytes) -> RequestHeader:
    if kafka.speaks_kafka(_api_key(payload)):
        full = kafka.decode_request_header(payload)
        header = RequestHeader(full[:4])
        header.kafka = full
        return header
    if len(payload) < _REQ_HEADER.size:
        raise ProtocolError("frame shorter than the request header", ErrorCode.INVALID_REQUEST)
    return RequestHeader(_REQ_HEADER.unpack_from(payload, 0))


def decode_request_body(payload: bytes, header: RequestHeader | None = None) -> dict[str, Any]:
    """The body of a request frame (``header``: its header, already read)."""
    if kafka.speaks_kafka(_api_key(payload)):
        return kafka.decode_request_body(payload, header.kafka if header is not None else None)
    body = decode_value(payload[_REQ_HEADER.size:])
    if not isinstance(body, dict):
        raise ProtocolError("request body is not a map", ErrorCode.INVALID_REQUEST)
    return body


def decode_response(payload: bytes, api: int | None = None) -> tuple[int, int, int, dict[str, Any]]:
    """(correlation id, clock, error code, body) of the answer to a request of ``api``."""
    if kafka.speaks_kafka(api) and len(payload) >= _CID.size and _CID.unpack_from(payload)[0] != -1:
        return kafka.decode_response(payload, ApiKey(api))  # type: ignore[arg-type]
    if len(payload) < _RESP_HEADER.size:
        raise ProtocolError("frame shorter than the response header")
    cid, clock, error = _RESP_HEADER.unpack_from(payload, 0)
    body = decode_value(payload[_RESP_HEADER.size:])
    if not isinstance(body, dict):
        raise ProtocolError("response body is not a map")
    return cid, clock, error, body


def frame_length(head: bytes, max_frame: int = MAX_FRAME) -> int:
    """The payload length a frame's 4-byte prefix announces; ProtocolError
    (MESSAGE_TOO_LARGE) above ``max_frame``, before anything that large is read."""
    (length,) = U32.unpack(head)
    if length > max_frame:
        raise ProtocolError(f"frame of {length} bytes exceeds {max_frame}", ErrorCode.MESSAGE_TOO_LARGE)
    return length


async def read_frame(reader: asyncio.StreamReader, max_frame: int = MAX_FRAME) -> bytes | None:
    """One frame's payload, or None at a clean end of stream; ProtocolError if oversized."""
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise ProtocolError("truncated frame length") from exc
        return None
    length = frame_length(head, max_frame)
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError as exc:
        raise ProtocolError("truncated frame") from exc
