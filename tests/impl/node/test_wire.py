"""The binary protocol: value codec round trips, frames, and rejection of malformed input."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading

import pytest

from impl.node.wire import (
    MAX_FRAME,
    ApiKey,
    BlockingConnection,
    ErrorCode,
    ProtocolError,
    decode_request_body,
    decode_request_header,
    decode_response,
    decode_value,
    encode_request,
    encode_response,
    encode_value,
    read_frame,
)


@pytest.mark.parametrize("value", [
    None, True, False, 0, -1, 2**62, 1.5, "", "héllo", b"\x00\xff", [], [1, [2, [3]]],
    {"a": {"b": [b"x", None]}}, {"records": [[0, 1, b"v"]], "hw": 3},
])
def test_values_round_trip(value: object) -> None:
    assert decode_value(encode_value(value)) == value


def test_request_frame_round_trips_header_and_body() -> None:
    frame = encode_request(ApiKey.REMOVE_PARTITIONS, 0, 42, 7, {"topic": "t", "partition": 1})
    (length,) = struct.unpack(">I", frame[:4])
    payload = frame[4:]
    assert length == len(payload)
    assert decode_request_header(payload) == (ApiKey.REMOVE_PARTITIONS, 0, 42, 7)
    assert decode_request_body(payload) == {"topic": "t", "partition": 1}


def test_response_frame_carries_error_code_and_clock() -> None:
    payload = encode_response(9, 11, ErrorCode.NOT_LEADER, {"leader": 2})[4:]
    assert decode_response(payload) == (9, 11, ErrorCode.NOT_LEADER, {"leader": 2})


@pytest.mark.parametrize("garbage", [
    b"", b"\x09", b"\x04\x00\x00\x00\x10abc", b"\x06\x00\x00\x00\x00\xff",
    b"\x07\x7f\xff\xff\xff", b"\x04\x00\x00\x00\x02\xc3\x28", b"\x01\x00",
    b"\x06" + b"\x00\x00\x00\x01" * 40 + b"\x00",
])
def test_malformed_values_raise_protocol_error_only(garbage: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_value(garbage)


def test_nesting_deeper_than_the_limit_is_rejected() -> None:
    deep = b"\x06\x00\x00\x00\x01" * 100 + b"\x00"
    with pytest.raises(ProtocolError):
        decode_value(deep)


def test_non_map_request_body_is_invalid_request() -> None:
    payload = encode_request(ApiKey.REMOVE_PARTITIONS, 0, 1, 0, {})[4:]
    bad = payload[:16] + encode_value([1, 2])
    with pytest.raises(ProtocolError) as exc:
        decode_request_body(bad)
    assert exc.value.code == ErrorCode.INVALID_REQUEST


def test_oversized_frame_is_refused_before_reading_it() -> None:
    async def go() -> None:
        reader = asyncio.StreamReader()
        reader.feed_data(struct.pack(">I", 1 << 30))
        with pytest.raises(ProtocolError) as exc:
            await read_frame(reader, max_frame=1024)
        assert exc.value.code == ErrorCode.MESSAGE_TOO_LARGE

    asyncio.run(go())


def test_the_blocking_connection_refuses_an_oversized_answer_before_reading_it() -> None:
    """The controller's channels and the clients read answers through the same frame rule
    as the brokers' asyncio side: a length above MAX_FRAME is MESSAGE_TOO_LARGE at once."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)

        def answer() -> None:
            conn, _ = server.accept()
            with conn:
                conn.recv(1024)
                conn.sendall(struct.pack(">I", MAX_FRAME + 1))

        t = threading.Thread(target=answer, daemon=True)
        t.start()
        c = BlockingConnection("127.0.0.1", server.getsockname()[1], timeout=5.0, anonymous=True)
        try:
            with pytest.raises(ProtocolError) as exc:
                c.send(ApiKey.METADATA, {})
            assert exc.value.code == ErrorCode.MESSAGE_TOO_LARGE
        finally:
            c.close()
        t.join(5)


def test_truncated_frame_is_a_protocol_error_and_clean_eof_is_none() -> None:
    async def go() -> None:
        reader = asyncio.StreamReader()
        reader.feed_data(struct.pack(">I", 10) + b"abc")
        reader.feed_eof()
        with pytest.raises(ProtocolError):
            await read_frame(reader)
        empty = asyncio.StreamReader()
        empty.feed_eof()
        assert await read_frame(empty) is None

    asyncio.run(go())
