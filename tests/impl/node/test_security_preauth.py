"""Nothing before authentication but authentication, on both listeners (docs/security.md, 4).

Frames up to the 8 MiB limit were once read and their bodies decoded before the
authentication check: 120 such connections took a broker to about 1 GB.  Now, until the
SASL exchange succeeded, a frame longer than ``PRE_AUTH_MAX_FRAME`` is refused from its
length prefix, and a request that is not part of the exchange is refused on its header,
its body never decoded.
"""

from __future__ import annotations

import socket
import struct
import time
from pathlib import Path
from typing import Any

import pytest
from impl_testing import wait_until

from impl.node.codes import MAX_FRAME, PRE_AUTH_MAX_FRAME
from impl.node.kafka.translate import decode_request_header as kafka_header
from impl.node.wire import API_VERSIONS, ApiKey, ErrorCode, decode_response, encode_request

pytestmark = pytest.mark.integration

ANNOUNCED = MAX_FRAME  # what the probe's frames announced: 8 MiB, once accepted before authentication


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for pid {pid}")


def _read_reply(s: socket.socket) -> bytes | None:
    """One frame's payload, or None if the connection was closed without one."""
    head = s.recv(4, socket.MSG_WAITALL)
    if len(head) < 4:
        return None
    return s.recv(int.from_bytes(head, "big"), socket.MSG_WAITALL)


def _closed(s: socket.socket) -> bool:
    try:
        return s.recv(1) == b""
    except OSError:
        return True


def _kafka_produce(body: bytes) -> bytes:
    """A Kafka Produce v3 request frame (request header v1, client id "probe")."""
    payload = struct.pack(">hhih", 0, 3, 7, 5) + b"probe" + body
    return struct.pack(">i", len(payload)) + payload


# Produce v3: no transactional id, acks=1, timeout 1000 ms, no topics
VALID_PRODUCE = struct.pack(">hhii", -1, 1, 1000, 0)
UNDECODABLE = b"\xff" * 64


def test_a_pre_auth_frame_announcing_8_mib_is_refused_from_its_length(make_cluster: Any) -> None:
    """100 connections each announce an 8 MiB frame and push what the socket takes of its
    body: each is answered MESSAGE_TOO_LARGE at once (the broker did not wait for the body),
    and the broker's memory stays flat."""
    c = make_cluster(1)
    pid = c.procs[0].pid
    rss_before = _rss_kib(pid)
    conns = []
    for _ in range(100):
        s = socket.create_connection(c.endpoint(0), timeout=5.0)
        s.sendall(struct.pack(">I", ANNOUNCED) + struct.pack(">hhiq", int(ApiKey.PRODUCE), 0, 1, 0))
        conns.append(s)
    try:
        for s in conns:
            reply = _read_reply(s)
            assert reply is not None
            _, _, error, body = decode_response(reply)
            assert error == ErrorCode.MESSAGE_TOO_LARGE, body
            assert str(PRE_AUTH_MAX_FRAME) in body["message"]
            s.setblocking(False)
            try:  # the body the frame announced: nobody reads it
                s.send(b"\x00" * (1 << 20))
            except OSError:
                pass
            s.setblocking(True)
            s.settimeout(5.0)
            assert _closed(s)
    finally:
        for s in conns:
            s.close()
    assert _rss_kib(pid) - rss_before < 32 * 1024  # 100 x 8 MiB would be 800 MiB


def kafka_header_size(payload: bytes) -> int:
    return kafka_header(payload)[5]


def test_a_pre_auth_produce_is_refused_on_its_header_alone(make_cluster: Any) -> None:
    """A Produce before authentication gets the same refusal whether its body decodes or
    not: the body is never decoded (it once was, before the check)."""
    c = make_cluster(1)
    answers = []
    sent = {"topic": "t", "partition": 0, "acks": 1, "values": ["x"]}
    for body in (sent, None):
        frame = encode_request(int(ApiKey.PRODUCE), API_VERSIONS[ApiKey.PRODUCE], 9, 0, sent)
        if body is None:  # the same header, a body no decoder accepts
            header = frame[4:4 + kafka_header_size(frame[4:])]
            payload = header + UNDECODABLE
            frame = struct.pack(">I", len(payload)) + payload
        with socket.create_connection(c.endpoint(0), timeout=5.0) as s:
            s.sendall(frame)
            reply = _read_reply(s)
            assert reply is not None
            answers.append(decode_response(reply, ApiKey.PRODUCE)[2:])
            assert _closed(s)
    assert answers[0] == answers[1]
    assert answers[0][0] == ErrorCode.ILLEGAL_SASL_STATE


def test_the_kafka_listener_refuses_pre_auth_frames_from_their_length_and_header(
        make_cluster: Any) -> None:
    c = make_cluster(1)
    kafka = ("127.0.0.1", c.configs[0].kafka_port)
    started = time.monotonic()
    with socket.create_connection(kafka, timeout=5.0) as s:  # 8 MiB announced, none sent
        s.sendall(struct.pack(">i", ANNOUNCED) + struct.pack(">hhi", 0, 3, 1))
        assert _read_reply(s) is None
    assert time.monotonic() - started < 3.0  # closed at once, not at the authentication timeout
    for body in (VALID_PRODUCE, UNDECODABLE):
        with socket.create_connection(kafka, timeout=5.0) as s:
            s.sendall(_kafka_produce(body))
            assert _read_reply(s) is None  # Kafka closes an unauthenticated request unanswered
    out = c.data_dir / "broker-0" / "broker.out"
    refusals = wait_until(lambda: [line for line in out.read_text(errors="replace").splitlines()
                                   if "refused before its body was read" in line], 10.0,
                          "the refusal's log line")
    assert "Kafka api key 0" in refusals[0]
    assert "Traceback" not in out.read_text(errors="replace")

