"""Client connections: blocking (the controller's channels, the clients) and multiplexed
asyncio (replica fetchers), each authenticating with SCRAM before its first request when the
cluster has a keyring, so that a broker knows who sent each request (docs/security.md)."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Generator
from typing import Any

from impl.node import faults
from impl.node.auth import credentials as auth_credentials
from impl.node.auth import scram
from impl.node.codes import (
    API_VERSIONS,
    ApiKey,
    ErrorCode,
    ProtocolError,
    error_name,
)
from impl.node.wire.frames import (
    EncodedBody,
    decode_response,
    encode_request,
    frame_length,
    read_frame,
    request_frame_parts,
)


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


def _next_message(flow: Generator[str, str, None], error: int, body: dict[str, Any]) -> str | None:
    """The client's next SCRAM message after the broker's answer, or None when the exchange
    is done (the broker proved it knows the cluster's secret); AuthenticationError when the
    broker refused, or its proof does not verify."""
    try:
        return flow.send(_check_auth(error, body))
    except StopIteration:
        return None
    except scram.AuthenticationFailed as exc:
        raise AuthenticationError(ErrorCode.SASL_AUTHENTICATION_FAILED, str(exc)) from None


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
        message: str | None = next(flow)
        while message is not None:
            error, _, body = self.send(ApiKey.SASL_AUTHENTICATE, {"auth_bytes": message.encode()})
            message = _next_message(flow, error, body)
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
            length = frame_length(_recv_exact(self.sock, 4))
            rcid, rclock, error, rbody = decode_response(_recv_exact(self.sock, length), api)
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
        self._apis: dict[int, ApiKey] = {}  # what each request in flight asked: how to read its answer
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
        message: str | None = next(flow)
        while message is not None:
            error, _, body = await self.request(ApiKey.SASL_AUTHENTICATE,
                                                {"auth_bytes": message.encode()}, 0, timeout)
            message = _next_message(flow, error, body)

    async def _read_loop(self) -> None:
        error: BaseException = ConnectionError("connection closed by peer")
        try:
            while True:
                payload = await read_frame(self.reader)
                if payload is None:
                    break
                rcid = int.from_bytes(payload[:4], "big", signed=True) if len(payload) >= 4 else -1
                rcid, rclock, err, rbody = decode_response(payload, self._apis.get(rcid))
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
        self._apis[cid] = api
        try:
            self.writer.write(encode_request(api, API_VERSIONS[api] if version is None
                                             else version, cid, clock, body))
            await self.writer.drain()
            return await asyncio.wait_for(fut, timeout)
        finally:
            self._pending.pop(cid, None)
            self._apis.pop(cid, None)

    def close(self) -> None:
        self.closed = True
        self._reader_task.cancel()
        try:
            self.writer.close()
        except Exception:  # noqa: BLE001 - closing a broken transport
            pass
