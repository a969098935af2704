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
import ssl
import struct
from typing import Any, NamedTuple

from impl.node import faults
from impl.node.auth import credentials as auth_credentials
from impl.node.auth import scram

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
    SASL_HANDSHAKE = 17  # issue 22: authentication (impl.node.auth), before any other request
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    INIT_PRODUCER_ID = 22  # KIP-98: an idempotent producer's id (impl.node.producer_state)
    OFFSETS_FOR_LEADER_EPOCH = 23
    SASL_AUTHENTICATE = 36
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
    CLUSTER_AUTHORIZATION_FAILED = 31  # this principal may not send this request (impl.node.auth.rules)
    UNSUPPORTED_SASL_MECHANISM = 33
    ILLEGAL_SASL_STATE = 34  # a request before authentication, or authentication off (--insecure)
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_PARTITIONS = 37
    INVALID_REPLICATION_FACTOR = 38
    NOT_CONTROLLER = 41
    INVALID_REQUEST = 42
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45  # KIP-98: a batch after a gap in its producer's sequence
    DUPLICATE_SEQUENCE_NUMBER = 46  # KIP-98: a batch appended before, too long ago to say where
    KAFKA_STORAGE_ERROR = 56  # the log could not be written (ENOSPC, EIO): it is offline
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    STALE_BROKER_EPOCH = 77
    INVALID_REPLICA_ASSIGNMENT = 39
    SASL_AUTHENTICATION_FAILED = 58
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


KEYED_RECORD = b"\xffK"
"""The first bytes of a record value that carries a key (docs/wire.md §4.1).  No UTF-8 text
starts with 0xff, so a value produced as text never reads as keyed."""


def keyed_record(value: bytes, key: bytes | None) -> bytes:
    """The record value a producer sends: ``value`` itself when there is no key (and it does
    not start with ``KEYED_RECORD``), else ``KEYED_RECORD`` and the encoding of ``[key,
    value]``.  Brokers store, replicate and serve it as any value; only clients look inside,
    so the log format and replication are those of unkeyed records."""
    if key is None and not value.startswith(KEYED_RECORD):
        return value
    return KEYED_RECORD + encode_value([key, value])


def record_key(stored: bytes) -> tuple[bytes | None, bytes]:
    """``(key, value)`` of a record value as fetched (key None: it has none).  A value that
    starts with the marker but does not decode as ``[key, value]`` is shown as written."""
    if not stored.startswith(KEYED_RECORD):
        return None, stored
    try:
        key, value = decode_value(stored[len(KEYED_RECORD):])
    except (ProtocolError, ValueError, TypeError):
        return None, stored
    if not isinstance(value, bytes) or not (key is None or isinstance(key, bytes)):
        return None, stored
    return key, value


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


class AuthenticationError(ConnectionError):
    """The broker refused our credentials, or could not prove it knows the cluster's
    secret: the connection is closed (a connection error, so retry loops treat it as one)."""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(f"authentication failed: {error_name(code)}" + (f": {message}" if message else ""))
        self.code = code


def _check_auth(error: int, body: dict[str, Any]) -> str:
    """An authentication answer's SCRAM message, or AuthenticationError."""
    if error != ErrorCode.NONE:
        raise AuthenticationError(error, str(body.get("message", "")))
    raw = body.get("auth_bytes", b"")
    return raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)


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

    def __init__(self, host: str, port: int, timeout: float = 5.0,
                 credentials: auth_credentials.Credentials | None = None,
                 anonymous: bool = False, user: str | None = None,
                 tls: ssl.SSLContext | None = None) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        faults.gate(host, port)  # a partitioned link refuses (no-op outside broker processes)
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        tls = tls or auth_credentials.resolve_tls(host, port)
        if tls is not None:  # a TLS cluster (impl.node.auth.tls)
            try:
                self.sock = tls.wrap_socket(self.sock, server_hostname=host)
            except BaseException:
                self.sock.close()
                raise
        self._cid = 0
        self.principal: str | None = None
        creds = None if anonymous else credentials or auth_credentials.resolve(host, port, user)
        if creds is not None:
            try:
                self._authenticate(creds)
            except BaseException:
                self.close()
                raise

    def _authenticate(self, creds: auth_credentials.Credentials) -> None:
        """SaslHandshake, then the SCRAM exchange (:mod:`impl.node.auth.scram`)."""
        _check_auth(*self.send(ApiKey.SASL_HANDSHAKE, {"mechanism": scram.MECHANISM})[::2])
        flow = scram.client_exchange(creds)
        message = next(flow)
        while True:
            error, _, body = self.send(ApiKey.SASL_AUTHENTICATE, {"auth_bytes": message.encode()})
            try:
                message = flow.send(_check_auth(error, body))
            except StopIteration:
                break
            except scram.AuthenticationFailed as exc:
                raise AuthenticationError(ErrorCode.SASL_AUTHENTICATION_FAILED, str(exc)) from None
        self.principal = creds.user

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
    async def open(cls, host: str, port: int, timeout: float = 3.0,
                   credentials: auth_credentials.Credentials | None = None,
                   anonymous: bool = False) -> AsyncConnection:
        faults.gate(host, port)
        tls = auth_credentials.resolve_tls(host, port)
        reader, writer = await asyncio.wait_for(asyncio.open_connection(
            host, port, **({"ssl": tls, "server_hostname": host} if tls is not None else {})), timeout)
        conn = cls(reader, writer)
        conn.peer = (host, port)
        creds = None if anonymous else credentials or auth_credentials.resolve(host, port)
        if creds is not None:
            try:
                await conn._authenticate(creds, timeout)
            except BaseException:
                conn.close()
                raise
        return conn

    async def _authenticate(self, creds: auth_credentials.Credentials, timeout: float) -> None:
        """As :meth:`BlockingConnection._authenticate`."""
        error, _, body = await self.request(ApiKey.SASL_HANDSHAKE, {"mechanism": scram.MECHANISM},
                                            0, timeout)
        _check_auth(error, body)
        flow = scram.client_exchange(creds)
        message = next(flow)
        while True:
            error, _, body = await self.request(ApiKey.SASL_AUTHENTICATE,
                                                {"auth_bytes": message.encode()}, 0, timeout)
            try:
                message = flow.send(_check_auth(error, body))
            except StopIteration:
                break
            except scram.AuthenticationFailed as exc:
                raise AuthenticationError(ErrorCode.SASL_AUTHENTICATION_FAILED, str(exc)) from None

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


# -- the fields of every API (docs/wire.md section 5) ----------------------------------------
# Declarative: what each request and response body holds, as the brokers, the controller and
# the clients encode it.  A nested field is named by its path -- ``partitions[].topic`` is the
# ``topic`` of every map in the list ``partitions``, ``principal.user`` a key of the map
# ``principal``; a ``map<...>`` keyed by ids or names is one field.  ``docs/wire.md`` lists
# exactly these tables and ``tests/impl/test_wire_doc.py`` holds the two together, and holds
# real requests and answers of a running cluster to them.


class Field(NamedTuple):
    """One field of a request or response body (a key of the body's map)."""

    name: str  # a path: ``key``, ``list[].key``, ``map.key``
    type: str  # int, bool, string, bytes/string, float, map, list<...>, map<K, V>
    required: bool  # whether a sender always includes it (in every version it applies to)
    meaning: str


class Message(NamedTuple):
    """The body of one API's request and of its success response.  An error response's body
    is ``ERROR_BODY`` instead (whatever the API)."""

    request: tuple[Field, ...]
    response: tuple[Field, ...]


_F = Field
_CONTROL = (  # every control request: the controller's fencing fields (seed 002, seed 003)
    _F("controller_id", "int", True, "the sending controller's broker id"),
    _F("controller_epoch", "int", True, "the sending controller's epoch (seed 002): older than the broker's is refused"),
    _F("max_broker_epoch", "int", False, "seed 003 format: the largest broker epoch the controller has read; a "
       "broker registered after it refuses the request (STALE_BROKER_EPOCH)"),
    _F("broker_epoch", "int", False, "KIP-380 format, instead of max_broker_epoch: the recipient's broker epoch"),
)
_PRINCIPAL = (  # every admin request (seed 001: the principal the quota is charged to)
    _F("user", "string", False, "the client's user: the authenticated one's name, or absent (issue 22)"),
    _F("client_id", "string", False, "the client's id"),
)
_FORWARDED = (  # added by a broker forwarding an old-version admin request (seed 004, KIP-590)
    _F("forwarded_by", "int", False, "forwarded requests only: the forwarding broker's id"),
    _F("forward_id", "string", False, "forwarded requests only: a unique id of the forwarded request (audit log)"),
    _F("original_version", "int", False, "forwarded requests only: the version the client sent (decides the quota's "
       "strictness)"),
    _F("principal", "map", False, "forwarded requests only: the original client's principal"),
    _F("principal.user", "string", False, "the original client's user"),
    _F("principal.client_id", "string", False, "the original client's id"),
)
_ADMIN = (*_PRINCIPAL, *_FORWARDED)
_TOPIC_RESULT = (  # one topic's outcome in a version-1 admin answer
    _F("topics[].topic", "string", True, "the topic"),
    _F("topics[].error", "int", True, "this topic's error code (0: none)"),
    _F("topics[].message", "string", False, "the error, in words"),
    _F("topics[].throttle_time_ms", "int", False, "with THROTTLING_QUOTA_EXCEEDED: how long to wait"),
)
_THROTTLE = _F("throttle_time_ms", "int", True, "seed 001: how long the client must wait before its next request")

ERROR_BODY: tuple[Field, ...] = (
    _F("message", "string", True, "the error, in words"),
    _F("throttle_time_ms", "int", False, "admin APIs: the throttle time (seed 001)"),
    _F("controller_id", "int", False, "admin APIs: the controller this broker knows (NOT_CONTROLLER: resend there)"),
    _F("leader", "int", False, "NOT_LEADER: the leader this broker knows"),
    _F("leader_epoch", "int", False, "FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH: this broker's leader epoch"),
    _F("leo", "int", False, "OFFSET_OUT_OF_RANGE: the log end offset"),
    _F("hw", "int", False, "OFFSET_OUT_OF_RANGE: the high watermark"),
)
"""The body of every response whose header carries a non-zero error code."""

MESSAGES: dict[ApiKey, Message] = {
    ApiKey.PRODUCE: Message(
        request=(
            _F("topic", "string", True, "the topic"),
            _F("partition", "int", True, "the partition (this broker must lead it)"),
            _F("values", "list<bytes/string>", True, "the records' values, appended in order (at least one); a "
               "record with a key is one value, encoded as §4.1 says"),
            _F("acks", "int", False, "-1 (default): answer once committed; 1: once appended; 0: no response at all"),
            _F("timeout_ms", "int", False, "acks=-1: how long to wait for the commit (default 5000)"),
            _F("producer_id", "int", False, "KIP-98: the idempotent producer's id (from INIT_PRODUCER_ID; -1 or "
               "absent: not idempotent)"),
            _F("base_sequence", "int", False, "KIP-98, with producer_id: the first value's sequence number in the "
               "producer's stream for this partition (the others follow by one); a retry resends the same"),
        ),
        response=(
            _F("base_offset", "int", True, "offset of the first value appended"),
            _F("leader_epoch", "int", True, "the leader epoch they were appended in"),
            _F("duplicate", "bool", False, "KIP-98: true if the batch had been appended before (nothing was "
               "appended now; base_offset is where it was, -1 if too long ago to say)"),
        ),
    ),
    ApiKey.FETCH: Message(
        request=(
            _F("replica_id", "int", False, "the fetching follower's broker id; -1 or absent: a consumer"),
            _F("broker_epoch", "int", False, "replica fetch, KIP-903: the follower's broker epoch (the czxid of its "
               "registration), which the leader records in its handle_fetch event (absent: not recorded)"),
            _F("topic", "string", False, "consumer fetch: the topic"),
            _F("partition", "int", False, "consumer fetch: the partition"),
            _F("fetch_offset", "int", False, "consumer fetch: the offset to read from"),
            _F("max_records", "int", False, "at most this many records (default 500, at most 5000)"),
            _F("max_wait_ms", "int", False, "long poll: wait up to this long for something to read (at most 5000)"),
            _F("max_bytes", "int", False, "at most this many bytes of values (the first record always whole, KIP-74)"),
            _F("partition_max_bytes", "int", False, "replica fetch: at most this many bytes per partition"),
            _F("partitions", "list<map>", False, "replica fetch: one entry per partition the follower fetches"),
            _F("partitions[].topic", "string", True, "the topic"),
            _F("partitions[].partition", "int", True, "the partition"),
            _F("partitions[].fetch_offset", "int", True, "the follower's LEO"),
            _F("partitions[].hw", "int", False, "the follower's HW: the leader answers at once when its own differs"),
            _F("partitions[].leader_epoch", "int", False, "KIP-320: the follower's leader epoch, fenced by the leader (-1: "
               "not checked)"),
            _F("partitions[].topic_id", "int", False, "KIP-516: the follower's incarnation of the topic (0: unknown)"),
        ),
        response=(
            _F("records", "list<[int, int, bytes]>", False, "consumer fetch: [offset, leader_epoch, value] each, below the HW"),
            _F("hw", "int", False, "consumer fetch: the high watermark"),
            _F("leo", "int", False, "consumer fetch: the log end offset"),
            _F("leader_epoch", "int", False, "consumer fetch: the leader's epoch"),
            _F("partitions", "list<map>", False, "replica fetch: one entry per partition asked for"),
            _F("partitions[].topic", "string", True, "the topic"),
            _F("partitions[].partition", "int", True, "the partition"),
            _F("partitions[].error", "int", True, "this partition's error code (0: none)"),
            _F("partitions[].producers", "list<[int, int, int]>", False, "KIP-98: [offset, producer_id, sequence] of "
               "each record in records an idempotent producer wrote (absent: none)"),
            _F("partitions[].records", "list<[int, int, bytes]>", False, "[offset, leader_epoch, value] each, from "
               "fetch_offset"),
            _F("partitions[].hw", "int", False, "the leader's high watermark (with OFFSET_OUT_OF_RANGE too)"),
            _F("partitions[].leo", "int", False, "the leader's log end offset (with OFFSET_OUT_OF_RANGE too)"),
            _F("partitions[].leader_epoch", "int", False, "the leader's epoch (with FENCED_LEADER_EPOCH / "
               "UNKNOWN_LEADER_EPOCH too)"),
            _F("partitions[].topic_id", "int", False, "the leader's incarnation of the topic"),
            _F("partitions[].leader", "int", False, "with NOT_LEADER: the leader this broker knows"),
        ),
    ),
    ApiKey.METADATA: Message(
        request=(),
        response=(
            _F("brokers", "map<string, [string, int]>", True, "live brokers: id -> [host, port]"),
            _F("topics", "map<string, map<string, map>>", True, "topic -> partition -> {leader, leader_epoch, isr, "
               "replicas}"),
            _F("controller_id", "int", False, "the active controller (from /controller; -1: none known)"),
            _F("controller_epoch", "int", False, "the controller epoch of the last UpdateMetadata"),
        ),
    ),
    ApiKey.LEADER_AND_ISR: Message(
        request=(
            *_CONTROL,
            _F("init", "bool", False, "the INIT request of a new controller (seed 000 D): replicas it does not name "
               "are deleted"),
            _F("partitions", "list<map>", True, "one entry per partition state (seed 000 C)"),
            _F("partitions[].topic", "string", True, "the topic"),
            _F("partitions[].partition", "int", True, "the partition"),
            _F("partitions[].leader", "int", True, "the leader (-1: none)"),
            _F("partitions[].leader_epoch", "int", True, "the leader epoch"),
            _F("partitions[].isr", "list<int>", True, "the in-sync replicas"),
            _F("partitions[].replicas", "list<int>", True, "the assigned replicas (AR)"),
            _F("partitions[].zk_version", "int", True, "zkVersion of the partition state znode"),
            _F("partitions[].topic_id", "int", False, "KIP-516: the topic's incarnation (0: unknown, not checked)"),
            _F("leaders", "map<string, [string, int]>", False, "the leaders' endpoints: id -> [host, port]"),
        ),
        response=(
            _F("partitions", "list<[string, int, int]>", True, "[topic, partition, error] of every entry refused "
               "(FENCED_LEADER_EPOCH, INCONSISTENT_TOPIC_ID); accepted ones are not listed"),
        ),
    ),
    ApiKey.STOP_REPLICA: Message(
        request=(
            *_CONTROL,
            _F("delete", "bool", False, "also delete the logs"),
            _F("partitions", "list<[string, int, int]>", True, "[topic, partition, topic_id] each (topic_id may be "
               "left out: not checked)"),
        ),
        response=(),
    ),
    ApiKey.UPDATE_METADATA: Message(
        request=(
            *_CONTROL,
            _F("brokers", "map<string, [string, int]>", True, "live brokers: id -> [host, port]"),
            _F("topics", "map<string, map<string, map>>", True, "topic -> partition -> {leader, leader_epoch, isr, "
               "replicas}"),
            _F("partial", "bool", False, "only these partitions changed: merge them into the cache"),
        ),
        response=(),
    ),
    ApiKey.CONTROLLED_SHUTDOWN: Message(
        request=(
            _F("broker_id", "int", True, "the broker that is stopping"),
            _F("broker_epoch", "int", True, "its broker epoch (KIP-380): a stale incarnation is refused"),
        ),
        response=(
            _F("remaining_leaderships", "list<[string, int]>", True, "[topic, partition] it still leads"),
            _F("remaining_isr", "list<[string, int]>", True, "[topic, partition] whose ISR it could not leave"),
        ),
    ),
    ApiKey.SASL_HANDSHAKE: Message(
        request=(
            _F("mechanism", "string", True, "the SASL mechanism the client will use (SCRAM-SHA-256)"),
        ),
        response=(
            _F("mechanisms", "list<string>", True, "the mechanisms this broker accepts"),
        ),
    ),
    ApiKey.SASL_AUTHENTICATE: Message(
        request=(
            _F("auth_bytes", "bytes", True, "the client's next SCRAM message (client-first, then client-final)"),
        ),
        response=(
            _F("auth_bytes", "bytes", True, "the broker's SCRAM answer (server-first, then server-final)"),
            _F("principal", "string", False, "with server-final: the principal authenticated"),
        ),
    ),
    ApiKey.CREATE_TOPICS: Message(
        request=(
            *_ADMIN,
            _F("validate_only", "bool", False, "check, charge nothing, write nothing"),
            _F("topics", "list<map>", False, "version 1: the topics to create"),
            _F("topics[].topic", "string", True, "the topic's name"),
            _F("topics[].partitions", "int", False, "how many partitions (without assignment)"),
            _F("topics[].replication_factor", "int", False, "how many replicas each (without assignment)"),
            _F("topics[].assignment", "map<string, list<int>>", False, "partition -> replicas, chosen by the client"),
            _F("topic", "string", False, "version 0: the one topic"),
            _F("partitions", "int", False, "version 0"),
            _F("replication_factor", "int", False, "version 0"),
            _F("assignment", "map<string, list<int>>", False, "version 0"),
        ),
        response=(
            _F("throttle_time_ms", "int", True, _THROTTLE.meaning),
            _F("topics", "list<map>", False, "version 1: one result per topic"),
            *_TOPIC_RESULT,
            _F("topics[].assignment", "map<string, list<int>>", False, "the assignment written"),
            _F("topic", "string", False, "version 0: the topic"),
            _F("assignment", "map<string, list<int>>", False, "version 0: the assignment written"),
        ),
    ),
    ApiKey.DELETE_TOPICS: Message(
        request=(
            *_ADMIN,
            _F("topics", "list<string>", False, "version 1: the topics to delete"),
            _F("topic", "string", False, "version 0: the one topic"),
        ),
        response=(
            _F("throttle_time_ms", "int", True, _THROTTLE.meaning),
            _F("topics", "list<map>", False, "version 1: one result per topic"),
            *_TOPIC_RESULT,
            _F("topic", "string", False, "version 0: the topic"),
        ),
    ),
    ApiKey.CREATE_PARTITIONS: Message(
        request=(
            *_ADMIN,
            _F("validate_only", "bool", False, "check, charge nothing, write nothing"),
            _F("topics", "list<map>", False, "version 1: the topics to grow"),
            _F("topics[].topic", "string", True, "the topic"),
            _F("topics[].count", "int", True, "the new total number of partitions"),
            _F("topics[].assignments", "list<list<int>>", False, "the replicas of each partition added, in id "
               "order, the first listed preferred (Kafka's assignments); absent: the controller assigns them"),
            _F("topic", "string", False, "version 0: the one topic"),
            _F("count", "int", False, "version 0: the new total number of partitions"),
        ),
        response=(
            _F("throttle_time_ms", "int", True, _THROTTLE.meaning),
            _F("topics", "list<map>", False, "version 1: one result per topic"),
            *_TOPIC_RESULT,
            _F("topics[].added", "map<string, list<int>>", False, "partition -> replicas of the partitions added"),
            _F("topic", "string", False, "version 0: the topic"),
            _F("added", "map<string, list<int>>", False, "version 0: the partitions added"),
        ),
    ),
    ApiKey.ELECT_PREFERRED: Message(
        request=(
            *_ADMIN,
            _F("topic", "string", True, "the topic"),
            _F("partition", "int", True, "the partition whose preferred replica (first of AR) should lead"),
        ),
        response=(),
    ),
    ApiKey.REASSIGN_PARTITIONS: Message(
        request=(
            *_ADMIN,
            _F("topic", "string", True, "the topic"),
            _F("partition", "int", True, "the partition"),
            _F("replicas", "list<int>", True, "the reassigned replicas (RAR, seed 000 F)"),
        ),
        response=(
            _F("topic", "string", True, "the topic"),
            _F("partition", "int", True, "the partition"),
        ),
    ),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: Message(
        request=tuple(_PRINCIPAL),
        response=(
            _F("quotas", "list<map>", True, "every stored quota"),
            _F("quotas[].user", "string", False, "the entity's user (null: the default entry)"),
            _F("quotas[].client_id", "string", False, "the entity's client id (null: the default entry)"),
            _F("quotas[].controller_mutation_rate", "float", True, "partition mutations per second (seed 001)"),
            _F("metrics", "map", True, "on the controller: per principal, its rate, tokens and throttle time"),
            _F("controller_id", "int", True, "the controller this broker knows"),
            _F("from_controller", "bool", True, "whether this broker is the controller (metrics are only there)"),
        ),
    ),
    ApiKey.ALTER_CLIENT_QUOTAS: Message(
        request=(
            *_ADMIN,
            _F("validate_only", "bool", False, "check, write nothing"),
            _F("entries", "list<map>", True, "the quotas to set"),
            _F("entries[].user", "string", False, "the entity's user (null: the default entry)"),
            _F("entries[].client_id", "string", False, "the entity's client id (null: the default entry)"),
            _F("entries[].rate", "float", False, "partition mutations per second; null removes the quota"),
        ),
        response=(
            _F("altered", "int", True, "how many entries were set or removed"),
        ),
    ),
    ApiKey.INIT_PRODUCER_ID: Message(
        request=(
            _F("client_id", "string", False, "the producer's client id (informational)"),
        ),
        response=(
            _F("producer_id", "int", True, "a producer id no other producer of this cluster has (from a block the "
               "broker reserved in ZooKeeper)"),
            _F("producer_epoch", "int", True, "always 0 (no transactions)"),
        ),
    ),
    ApiKey.OFFSETS_FOR_LEADER_EPOCH: Message(
        request=(
            _F("topic", "string", True, "the topic"),
            _F("partition", "int", True, "the partition"),
            _F("leader_epoch", "int", True, "the epoch whose end offset the follower asks for (its latest)"),
            _F("current_leader_epoch", "int", False, "KIP-320: the follower's current leader epoch, fenced by the leader"),
            _F("replica_id", "int", False, "the asking follower's broker id"),
            _F("topic_id", "int", False, "KIP-516: the follower's incarnation of the topic (0: unknown)"),
        ),
        response=(
            _F("leader_epoch", "int", True, "the largest epoch <= the one asked for that the leader has"),
            _F("end_offset", "int", True, "where that epoch ends in the leader's log (KIP-101/279)"),
        ),
    ),
    ApiKey.REMOVE_PARTITIONS: Message(
        request=(
            *_ADMIN,
            _F("topic", "string", True, "the topic"),
            _F("partitions", "list<int>", True, "the partitions to remove (seed 000 H)"),
        ),
        response=(
            _F("topic", "string", True, "the topic"),
            _F("throttle_time_ms", "int", True, _THROTTLE.meaning),
        ),
    ),
}
"""Every API's request and success-response fields."""

_NESTED = ("map", "list<map>")


def undeclared_fields(fields: tuple[Field, ...], body: dict[str, Any]) -> list[str]:
    """The paths in ``body`` that ``fields`` does not declare, and the declared required ones
    it lacks (``missing: <path>``): nested maps are walked only where a field's type is
    ``map`` or ``list<map>``; a required nested field is checked in every map present."""
    declared = {f.name: f for f in fields}
    out: list[str] = []

    def walk(value: dict[str, Any], prefix: str) -> None:
        for key, v in value.items():
            path = prefix + key
            spec = declared.get(path)
            if spec is None:
                out.append(path)
            elif spec.type == "map" and isinstance(v, dict):
                walk(v, path + ".")
            elif spec.type == "list<map>" and isinstance(v, list):
                for item in v:
                    if isinstance(item, dict):
                        walk(item, path + "[].")
        for f in fields:
            parent, _, leaf = f.name.rpartition(".")
            if f.required and (parent + "." if parent else "") == prefix and leaf not in value:
                out.append(f"missing: {f.name}")

    walk(body, "")
    return sorted(set(out))
