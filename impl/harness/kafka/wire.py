"""The one Kafka request the harness sends a real broker: CreateTopics (API key 19), v2.

Kafka's own wire format (not the project's, :mod:`impl.node.wire`): a 4-byte size, then
request header v1 (api_key, api_version, correlation_id, client_id) and the body, every
integer big-endian, a string an int16 length and UTF-8 bytes, an array an int32 count.
v2 is the newest version before the flexible (tagged-field) encoding; every 3.9 broker
accepts it.  In ZooKeeper mode only the controller creates topics (others answer
NOT_CONTROLLER), so the caller sends it to the controller.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Sequence

CREATE_TOPICS = 19
CREATE_TOPICS_VERSION = 2
NONE = 0
TOPIC_ALREADY_EXISTS = 36
NOT_CONTROLLER = 41
INVALID_REPLICATION_FACTOR = 38
ERROR_NAMES = {NONE: "NONE", TOPIC_ALREADY_EXISTS: "TOPIC_ALREADY_EXISTS",
               NOT_CONTROLLER: "NOT_CONTROLLER", INVALID_REPLICATION_FACTOR: "INVALID_REPLICATION_FACTOR",
               37: "INVALID_PARTITIONS", 17: "INVALID_TOPIC_EXCEPTION"}


class KafkaRequestError(RuntimeError):
    def __init__(self, code: int, message: str | None) -> None:
        super().__init__(f"{ERROR_NAMES.get(code, f'error {code}')}: {message or ''}".rstrip(": "))
        self.code = code


def _string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def create_topics_request(topic: str, partitions: int, replication_factor: int,
                          correlation_id: int = 1, timeout_ms: int = 10_000,
                          assignment: Sequence[Sequence[int]] | None = None) -> bytes:
    """The framed request: one topic, no configs, not validate-only.  Without ``assignment``
    Kafka chooses the brokers; with it, partition p's replicas are ``assignment[p]`` in that
    order -- the first is the preferred replica, the leader Kafka elects at creation -- and
    the request carries -1 as its partition count and replication factor, as Kafka requires."""
    header = struct.pack(">hhi", CREATE_TOPICS, CREATE_TOPICS_VERSION, correlation_id) + \
        _string("epochal-harness")
    if assignment is None:
        counts, assignments = struct.pack(">ihi", partitions, replication_factor, 0), b""
    else:
        counts = struct.pack(">ihi", -1, -1, len(assignment))
        assignments = b"".join(struct.pack(">ii", p, len(replicas)) + struct.pack(f">{len(replicas)}i", *replicas)
                               for p, replicas in enumerate(assignment))
    body = (struct.pack(">i", 1) + _string(topic) + counts + assignments
            + struct.pack(">i", 0) + struct.pack(">i?", timeout_ms, False))
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def parse_create_topics_response(payload: bytes) -> dict[str, tuple[int, str | None]]:
    """topic -> (error_code, error_message) from a response's payload (size prefix removed)."""
    _, _throttle, count = struct.unpack_from(">iii", payload, 0)
    pos, out = 12, {}
    for _ in range(count):
        (n,) = struct.unpack_from(">h", payload, pos)
        name = payload[pos + 2:pos + 2 + n].decode()
        pos += 2 + n
        code, m = struct.unpack_from(">hh", payload, pos)
        pos += 4
        message = None if m < 0 else payload[pos:pos + m].decode()
        pos += max(m, 0)
        out[name] = (code, message)
    return out


def create_topic(host: str, port: int, topic: str, partitions: int, replication_factor: int,
                 timeout: float = 15.0, assignment: Sequence[Sequence[int]] | None = None) -> None:
    """Ask the broker at host:port (the controller) to create ``topic``; raises
    :class:`KafkaRequestError` with Kafka's error code unless it did (or it existed)."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(create_topics_request(topic, partitions, replication_factor, assignment=assignment))
        (size,) = struct.unpack(">i", _read(sock, 4))
        result = parse_create_topics_response(_read(sock, size))
    code, message = result.get(topic, (-1, "no answer for the topic"))
    if code not in (NONE, TOPIC_ALREADY_EXISTS):
        raise KafkaRequestError(code, message)


def _read(sock: socket.socket, n: int) -> bytes:
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(n - got)
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)
