"""Frames: a u32 length, a request or response header, and an encoded body."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

from impl.node.codes import MAX_FRAME, U32, ErrorCode, ProtocolError
from impl.node.wire.values import decode_value, encode_value

_REQ_HEADER = struct.Struct(">hhiq")
_RESP_HEADER = struct.Struct(">iqh")

# -- frames ---------------------------------------------------------------------------------

class EncodedBody(bytes):
    """A request body already encoded with :func:`encode_value`.  The controller encodes one
    UpdateMetadata payload per metadata change and hands this same object to every broker's
    channel (seed 003), so its memory does not grow with the number of brokers."""


def request_frame_parts(api_key: int, api_version: int, correlation_id: int, clock: int,
                        body: dict[str, Any] | EncodedBody) -> tuple[bytes, bytes]:
    """A request frame as (length + header, body): a pre-encoded body is written as it is,
    never copied into a per-recipient buffer."""
    encoded = body if isinstance(body, EncodedBody) else encode_value(body)
    header = _REQ_HEADER.pack(api_key, api_version, correlation_id, clock)
    return U32.pack(len(header) + len(encoded)) + header, encoded


def encode_request(api_key: int, api_version: int, correlation_id: int, clock: int,
                   body: dict[str, Any] | EncodedBody) -> bytes:
    prefix, encoded = request_frame_parts(api_key, api_version, correlation_id, clock, body)
    return prefix + encoded


def encode_response(correlation_id: int, clock: int, error: int, body: dict[str, Any]) -> bytes:
    payload = _RESP_HEADER.pack(correlation_id, clock, error) + encode_value(body)
    return U32.pack(len(payload)) + payload


def decode_request_header(payload: bytes) -> tuple[int, int, int, int]:
    if len(payload) < _REQ_HEADER.size:
        raise ProtocolError("frame shorter than the request header", ErrorCode.INVALID_REQUEST)
    return _REQ_HEADER.unpack_from(payload, 0)


def decode_request_body(payload: bytes) -> dict[str, Any]:
    body = decode_value(payload[_REQ_HEADER.size:])
    if not isinstance(body, dict):
        raise ProtocolError("request body is not a map", ErrorCode.INVALID_REQUEST)
    return body


def decode_response(payload: bytes) -> tuple[int, int, int, dict[str, Any]]:
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
