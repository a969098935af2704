"""The broker RPC protocol: binary, versioned, length-prefixed frames with typed error codes.

Seed 000 gives the requests (LeaderAndISRRequest, StopReplicaRequest, ReplicaFetchRequest)
as a request-type id, a version id and typed fields.  Every frame here is::

    request  := u32 length | i16 api_key | i16 api_version | i32 correlation_id | i64 clock | body
    response := u32 length | i32 correlation_id | i64 clock | i16 error_code | body

``clock`` is the sender's Lamport clock (traces).  ``body`` is one value in a small typed
binary encoding (tag byte, then: i64 ints, f64 floats, u32-length-prefixed UTF-8 strings and
byte strings, u32-counted lists and string-keyed maps); a request body is always a map.  A
frame longer than ``MAX_FRAME`` or a body that does not decode is answered with an error
(``MESSAGE_TOO_LARGE`` / ``CORRUPT_MESSAGE``) and the connection is closed; nothing in this
module raises anything but :class:`ProtocolError` on bad input.
"""

from __future__ import annotations

import asyncio
import enum
import socket
import struct
from typing import Any

from impl.node import faults

MAX_FRAME = 8 * 1024 * 1024
MAX_DEPTH = 32

_U32 = struct.Struct(">I")
_REQ_HEADER = struct.Struct(">hhiq")
_RESP_HEADER = struct.Struct(">iqh")


class ApiKey(enum.IntEnum):
    PRODUCE = 0
    FETCH = 1
    METADATA = 3
    LEADER_AND_ISR = 4
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    CONTROLLED_SHUTDOWN = 7
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    OFFSETS_FOR_LEADER_EPOCH = 23
    CREATE_PARTITIONS = 37
    ELECT_PREFERRED = 43
    REASSIGN_PARTITIONS = 45
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    REMOVE_PARTITIONS = 100


# Seed 004 (KIP-590): the admin writes' version at which a request must be sent to the
# controller (and, seed 001, at which THROTTLING_QUOTA_EXCEEDED may be answered).  A broker
# forwards an older-version request to the controller *as this version*; a request at this
# version is never forwarded, so nothing is forwarded twice.
CONTROLLER_VERSIONS: dict[ApiKey, int] = {
    ApiKey.CREATE_TOPICS: 1, ApiKey.DELETE_TOPICS: 1, ApiKey.CREATE_PARTITIONS: 1,
    ApiKey.REMOVE_PARTITIONS: 1, ApiKey.REASSIGN_PARTITIONS: 1, ApiKey.ELECT_PREFERRED: 1,
    ApiKey.ALTER_CLIENT_QUOTAS: 1,
}

# highest version each API speaks: the admin writes above at their controller version,
# everything else at version 0
API_VERSIONS: dict[ApiKey, int] = {**dict.fromkeys(ApiKey, 0), **CONTROLLER_VERSIONS}


class ErrorCode(enum.IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    NOT_LEADER = 6
    REQUEST_TIMED_OUT = 7
    MESSAGE_TOO_LARGE = 10
    STALE_CONTROLLER_EPOCH = 11
    RECORD_TOO_LARGE = 18  # a value above max.message.bytes (impl.node.limits)
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    STALE_BROKER_EPOCH = 77
    INVALID_REPLICA_ASSIGNMENT = 39
    BROKER_NOT_AVAILABLE = 8
    THROTTLING_QUOTA_EXCEEDED = 89  # seed 001: per topic, to new-version clients only
    INCONSISTENT_TOPIC_ID = 103  # KIP-516: the request names an older incarnation of the topic


def error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"ERROR_{code}"


class ProtocolError(Exception):
    """Bad bytes on the wire; ``code`` is the error to answer with."""

    def __init__(self, message: str, code: ErrorCode = ErrorCode.CORRUPT_MESSAGE) -> None:
        super().__init__(message)
        self.code = code


class RpcError(Exception):
    """A response carried a non-zero error code."""

    def __init__(self, code: int, message: str = "", body: dict[str, Any] | None = None) -> None:
        super().__init__(message or error_name(code))
        self.code = code
        self.body = body or {}  # the error response's body (throttle_time_ms, controller_id)


# -- the typed value encoding ---------------------------------------------------------------

_NONE, _FALSE, _TRUE, _INT, _STR, _BYTES, _LIST, _MAP, _FLOAT = range(9)
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")


def encode_value(value: Any) -> bytes:
    out = bytearray()
    _enc(value, out, 0)
    return bytes(out)


def _enc(v: Any, out: bytearray, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise ValueError("value nested too deeply")
    if v is None:
        out.append(_NONE)
    elif v is True:
        out.append(_TRUE)
    elif v is False:
        out.append(_FALSE)
    elif isinstance(v, int):
        out.append(_INT)
        out += _I64.pack(v)
    elif isinstance(v, float):
        out.append(_FLOAT)
        out += _F64.pack(v)
    elif isinstance(v, str):
        b = v.encode()
        out.append(_STR)
        out += _U32.pack(len(b)) + b
    elif isinstance(v, bytes | bytearray | memoryview):
        b = bytes(v)
        out.append(_BYTES)
        out += _U32.pack(len(b)) + b
    elif isinstance(v, list | tuple | set | frozenset):
        items = sorted(v) if isinstance(v, set | frozenset) else v
        out.append(_LIST)
        out += _U32.pack(len(items))
        for item in items:
            _enc(item, out, depth + 1)
    elif isinstance(v, dict):
        out.append(_MAP)
        out += _U32.pack(len(v))
        for k, item in v.items():
            kb = str(k).encode()
            out += _U32.pack(len(kb)) + kb
            _enc(item, out, depth + 1)
    else:
        raise TypeError(f"cannot encode {type(v).__name__}")


def decode_value(data: bytes) -> Any:
    value, pos = _dec(memoryview(data), 0, 0)
    if pos != len(data):
        raise ProtocolError(f"{len(data) - pos} trailing bytes")
    return value


def _need(buf: memoryview, pos: int, n: int) -> None:
    if n < 0 or pos + n > len(buf):
        raise ProtocolError("truncated value")


def _dec(buf: memoryview, pos: int, depth: int) -> tuple[Any, int]:
    if depth > MAX_DEPTH:
        raise ProtocolError("value nested too deeply")
    _need(buf, pos, 1)
    tag = buf[pos]
    pos += 1
    if tag == _NONE:
        return None, pos
    if tag == _TRUE:
        return True, pos
    if tag == _FALSE:
        return False, pos
    if tag == _INT:
        _need(buf, pos, 8)
        return _I64.unpack_from(buf, pos)[0], pos + 8
    if tag == _FLOAT:
        _need(buf, pos, 8)
        return _F64.unpack_from(buf, pos)[0], pos + 8
    if tag in (_STR, _BYTES):
        _need(buf, pos, 4)
        n = _U32.unpack_from(buf, pos)[0]
        pos += 4
        _need(buf, pos, n)
        raw = bytes(buf[pos:pos + n])
        if tag == _BYTES:
            return raw, pos + n
        try:
            return raw.decode(), pos + n
        except UnicodeDecodeError as exc:
            raise ProtocolError("invalid UTF-8 string") from exc
    if tag in (_LIST, _MAP):
        _need(buf, pos, 4)
        n = _U32.unpack_from(buf, pos)[0]
        pos += 4
        if n > len(buf) - pos:  # every item takes at least one byte
            raise ProtocolError("count larger than the frame")
        if tag == _LIST:
            items = []
            for _ in range(n):
                item, pos = _dec(buf, pos, depth + 1)
                items.append(item)
            return items, pos
        mapping: dict[str, Any] = {}
        for _ in range(n):
            _need(buf, pos, 4)
            kn = _U32.unpack_from(buf, pos)[0]
            pos += 4
            _need(buf, pos, kn)
            try:
                key = bytes(buf[pos:pos + kn]).decode()
            except UnicodeDecodeError as exc:
                raise ProtocolError("invalid UTF-8 key") from exc
            pos += kn
            mapping[key], pos = _dec(buf, pos, depth + 1)
        return mapping, pos
    raise ProtocolError(f"unknown value tag {tag}")


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
    return _U32.pack(len(header) + len(encoded)) + header, encoded


def encode_request(api_key: int, api_version: int, correlation_id: int, clock: int,
                   body: dict[str, Any] | EncodedBody) -> bytes:
    prefix, encoded = request_frame_parts(api_key, api_version, correlation_id, clock, body)
    return prefix + encoded


def encode_response(correlation_id: int, clock: int, error: int, body: dict[str, Any]) -> bytes:
    payload = _RESP_HEADER.pack(correlation_id, clock, error) + encode_value(body)
    return _U32.pack(len(payload)) + payload


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


async def read_frame(reader: asyncio.StreamReader, max_frame: int = MAX_FRAME) -> bytes | None:
    """One frame's payload, or None at a clean end of stream; ProtocolError if oversized."""
    try:
        head = await reader.readexactly(4)
    except asyncio.IncompleteReadError as exc:
        if exc.partial:
            raise ProtocolError("truncated frame length") from exc
        return None
    (length,) = _U32.unpack(head)
    if length > max_frame:
        raise ProtocolError(f"frame of {length} bytes exceeds {max_frame}", ErrorCode.MESSAGE_TOO_LARGE)
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError as exc:
        raise ProtocolError("truncated frame") from exc


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < n:
        data = sock.recv(n - len(chunks))
        if not data:
            raise ConnectionError("connection closed by peer")
        chunks += data
    return bytes(chunks)


class BlockingConnection:
    """A synchronous client connection (used by the controller's channels and the clients)."""

    def __init__(self, host: str, port: int, timeout: float = 5.0) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        faults.gate(host, port)  # a partitioned link refuses (no-op outside broker processes)
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._cid = 0

    def send(self, api: ApiKey, body: dict[str, Any] | EncodedBody, clock: int = 0,
             expect_response: bool = True, timeout: float | None = None,
             version: int | None = None) -> tuple[int, int, dict[str, Any]]:
        """Send one request (at ``version``, default the newest); returns (error_code,
        remote clock, body).  Older versions are what older clients send (seed 004)."""
        faults.before_request(self.host, self.port)
        self._cid += 1
        cid = self._cid
        self.sock.settimeout(timeout or self.timeout)
        v = API_VERSIONS[api] if version is None else version
        prefix, encoded = request_frame_parts(api, v, cid, clock, body)
        if isinstance(body, EncodedBody):  # shared bytes: two writes rather than one copy
            self.sock.sendall(prefix)
            self.sock.sendall(encoded)
        else:
            self.sock.sendall(prefix + encoded)
        if not expect_response:
            return ErrorCode.NONE, 0, {}
        while True:
            (length,) = _U32.unpack(_recv_exact(self.sock, 4))
            if length > MAX_FRAME:
                raise ProtocolError("response too large")
            rcid, rclock, error, rbody = decode_response(_recv_exact(self.sock, length))
            if rcid == cid:
                return error, rclock, rbody
            if rcid == -1:
                return error, rclock, rbody

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


class AsyncConnection:
    """A multiplexed asyncio client connection: many requests in flight, matched to their
    responses by correlation id (one connection per leader serves all of a follower's
    replica fetchers for that leader, as Kafka's ReplicaFetcherThread does)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self._cid = 0
        self._pending: dict[int, asyncio.Future[tuple[int, int, dict[str, Any]]]] = {}
        self._reader_task = asyncio.get_running_loop().create_task(self._read_loop())
        self.closed = False
        self.peer: tuple[str, int] | None = None  # set by open(): the fault layer's key

    @classmethod
    async def open(cls, host: str, port: int, timeout: float = 3.0) -> AsyncConnection:
        faults.gate(host, port)
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
        conn = cls(reader, writer)
        conn.peer = (host, port)
        return conn

    async def _read_loop(self) -> None:
        error: BaseException = ConnectionError("connection closed by peer")
        try:
            while True:
                payload = await read_frame(self.reader)
                if payload is None:
                    break
                rcid, rclock, err, rbody = decode_response(payload)
                fut = self._pending.pop(rcid, None)
                if fut is not None and not fut.done():
                    fut.set_result((err, rclock, rbody))
        except asyncio.CancelledError:
            error = ConnectionError("connection closed")
        except (OSError, ProtocolError) as exc:
            error = ConnectionError(str(exc))
        finally:
            self.closed = True
            for fut in self._pending.values():
                if not fut.done():
                    fut.set_exception(error)
            self._pending.clear()

    async def request(self, api: ApiKey, body: dict[str, Any], clock: int,
                      timeout: float, version: int | None = None
                      ) -> tuple[int, int, dict[str, Any]]:
        if self.closed:
            raise ConnectionError("connection closed")
        if self.peer is not None:
            await faults.before_request_async(*self.peer)
        self._cid += 1
        cid = self._cid
        fut: asyncio.Future[tuple[int, int, dict[str, Any]]] = \
            asyncio.get_running_loop().create_future()
        self._pending[cid] = fut
        try:
            self.writer.write(encode_request(api, API_VERSIONS[api] if version is None
                                             else version, cid, clock, body))
            await self.writer.drain()
            return await asyncio.wait_for(fut, timeout)
        finally:
            self._pending.pop(cid, None)

    def close(self) -> None:
        self.closed = True
        self._reader_task.cancel()
        try:
            self.writer.close()
        except Exception:  # noqa: BLE001 - closing a broken transport
            pass
