"""The controllable network: a relay in front of every broker, owned by the harness.

In harness mode each broker registers a relay's port as its address (``BrokerConfig.
advertised_port``), so every connection another broker opens to it -- the controller's
channel, a follower's fetcher -- goes through the relay, over real TCP on 127.0.0.1.
Clients that read the metadata do too; the relay passes their traffic straight through.

The relay reads whole frames (``impl.node.wire``'s framing: the messages it classifies
are Kafka's -- LeaderAndIsr, StopReplica, UpdateMetadata, Fetch, OffsetForLeaderEpoch, read
through :mod:`impl.node.kafka.translate` -- and each answer is read as the request it
answers, by correlation id) and classifies each one.  A frame at a version other than the
one Epochal's brokers send -- a Kafka broker's -- is read by :mod:`impl.harness.frames.kafka`
instead, at its own version, so the relay can stand between any brokers that speak Kafka's
protocol; a frame neither reads is passed on unclassified, never dropped:

* requests: ``leader_and_isr``, ``stop_replica``, ``update_metadata`` (from the controller,
  ``src`` is its id), ``fetch_request`` (from a follower, ``src`` is its ``replica_id``),
  ``epoch_lookup`` (OffsetsForLeaderEpoch), and ``client`` for the rest;
* responses, named after their request: ``fetch_response``, ``epoch_lookup_response``,
  ``control_response``, ``client_response``.

Frames of the kinds in ``hold`` are held -- the model's messages in flight -- until the
harness acts on them by id: :meth:`Relay.release` delivers one (in any order: frames of
different connections are independent, as the model's messages are), :meth:`Relay.duplicate`
delivers a copy and lets the original wait (the copy's answer is swallowed, so the sender
sees one answer), :meth:`Relay.drop` discards one.  A message lost on a TCP connection shows
as the connection breaking, so dropping a frame also closes its connection: the sender sees
what it would see if the message were lost, and its retry rules apply.

A held frame outlives its sender: a controller that dies after sending a LeaderAndISR has
still sent it, and releasing it delivers it (the model keeps every request ever sent).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from impl.harness.frames import kafka as kafka_frames
from impl.node.wire import (
    ApiKey,
    ProtocolError,
    decode_request_body,
    decode_request_header,
    decode_response,
    read_frame,
)

_U32 = struct.Struct(">I")
_CID = struct.Struct(">i")  # the correlation id that starts every response
_HEAD = struct.Struct(">hhi")  # api key, version, correlation id: Epochal's frames and Kafka's

REQUEST_KINDS = {ApiKey.LEADER_AND_ISR: "leader_and_isr", ApiKey.STOP_REPLICA: "stop_replica",
                 ApiKey.UPDATE_METADATA: "update_metadata", ApiKey.FETCH: "fetch_request",
                 ApiKey.OFFSETS_FOR_LEADER_EPOCH: "epoch_lookup"}
RESPONSE_KINDS = {"fetch_request": "fetch_response", "epoch_lookup": "epoch_lookup_response",
                  "leader_and_isr": "control_response", "stop_replica": "control_response",
                  "update_metadata": "control_response", "client": "client_response"}
MODEL_MESSAGES = frozenset({"leader_and_isr", "stop_replica", "fetch_request", "fetch_response"})
"""The kinds that are the model's messages in flight: what ``epochal drive`` holds."""


@dataclass
class Frame:
    """One frame the relay has read: what it is, and what became of it."""

    id: int
    conn: int  # the relayed connection it travels on
    kind: str
    src: int | None  # the sending broker, where the frame names it
    dst: int | None  # the receiving broker
    correlation_id: int
    summary: dict[str, Any]
    data: bytes  # the whole frame, length prefix included
    state: str = "passed"  # passed, held, released, dropped
    copies: int = 0  # duplicates delivered

    def describe(self) -> str:
        who = f"{self.src if self.src is not None else '?'}->{self.dst if self.dst is not None else '?'}"
        return f"#{self.id} {self.kind} {who} {self.summary}"


def summarize(kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """The fields of a frame a driver matches on (and a report shows)."""
    if kind == "leader_and_isr":
        return {"controller_epoch": body.get("controller_epoch"), "init": bool(body.get("init")),
                "partitions": [{k: e.get(k) for k in ("topic", "partition", "leader", "leader_epoch",
                                                      "isr", "zk_version")}
                               for e in body.get("partitions", [])]}
    if kind == "stop_replica":
        return {"controller_epoch": body.get("controller_epoch"), "delete": bool(body.get("delete")),
                "partitions": [list(p)[:2] for p in body.get("partitions", [])]}
    if kind == "fetch_request":
        return {"replica_id": body.get("replica_id"),
                "partitions": [{k: q.get(k) for k in ("topic", "partition", "fetch_offset", "leader_epoch")}
                               for q in body.get("partitions", [])]}
    if kind == "fetch_response":
        return {"partitions": [{"topic": q.get("topic"), "partition": q.get("partition"),
                                "error": q.get("error"), "hw": q.get("hw"),
                                "records": len(q.get("records") or [])}
                               for q in body.get("partitions", [])]}
    if kind == "epoch_lookup":
        return {k: body.get(k) for k in ("topic", "partition", "leader_epoch", "replica_id")}
    if kind == "epoch_lookup_response":
        return {k: body.get(k) for k in ("leader_epoch", "end_offset")}
    if kind == "control_response" and body.get("partitions"):  # a LeaderAndISR's [topic, partition, error]
        return {"partitions": [list(x) for x in body["partitions"]]}
    return {}


@dataclass
class _Conn:
    id: int
    dst: int
    client: asyncio.StreamWriter  # towards the connecting peer
    server: asyncio.StreamWriter  # towards the broker
    # cid -> (kind, src, api key, version: None when read as Epochal's): how to read the answer
    requests: dict[int, tuple[str, int | None, int, int | None]] = field(default_factory=dict)
    swallow: dict[int, int] = field(default_factory=dict)  # cid -> answers to duplicates to drop
    closed: bool = False
    server_ended: bool = False  # the broker's side ended while answers were held for the client


class Relay:
    """One listener per broker on 127.0.0.1, served by one asyncio loop on its own thread.
    Every method is called from the harness's thread."""

    def __init__(self, targets: dict[int, tuple[str, int]], hold: frozenset[str] = frozenset(),
                 host: str = "127.0.0.1", ports: dict[int, int] | None = None) -> None:
        self.targets = dict(targets)
        self.host = host
        self.hold = frozenset(hold)
        self.ports: dict[int, int] = dict(ports or {})
        self.frames: list[Frame] = []
        self.topic_ids: kafka_frames.TopicIds = {}  # a Kafka broker's topic ids, from its LeaderAndIsr
        self._ids = itertools.count(1)
        self._conn_ids = itertools.count(1)
        self._conns: dict[int, _Conn] = {}
        self._cond = threading.Condition()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="relay")
        self._servers: list[asyncio.base_events.Server] = []

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> Relay:
        self._thread.start()
        for b in sorted(self.targets):
            self._call(self._listen(b))
        return self

    async def _listen(self, broker: int) -> None:
        server = await asyncio.start_server(
            lambda r, w: self._accept(broker, r, w), self.host, self.ports.get(broker, 0))
        self.ports[broker] = int(server.sockets[0].getsockname()[1])
        self._servers.append(server)

    def stop(self) -> None:
        if not self._thread.is_alive():
            return

        async def close() -> None:
            for s in self._servers:
                s.close()
            for c in list(self._conns.values()):
                self._close(c)

        with contextlib.suppress(Exception):
            self._call(close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def __enter__(self) -> Relay:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _call(self, coro: Any, timeout: float = 10.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    # -- the harness's commands -------------------------------------------------------------
    def set_hold(self, kinds: frozenset[str] | set[str]) -> None:
        """Hold frames of these kinds from now on (frames already held stay held)."""
        self.hold = frozenset(kinds)

    def held(self, kind: str | None = None, src: int | None = None, dst: int | None = None,
             match: Callable[[Frame], bool] | None = None) -> list[Frame]:
        """The frames held now, oldest first, filtered by kind, sender, receiver and ``match``."""
        with self._cond:
            return [f for f in self.frames if f.state == "held"
                    and (kind is None or f.kind == kind) and (src is None or f.src == src)
                    and (dst is None or f.dst == dst) and (match is None or match(f))]

    def wait_held(self, kind: str | None = None, src: int | None = None, dst: int | None = None,
                  match: Callable[[Frame], bool] | None = None, timeout: float = 10.0) -> Frame | None:
        """The oldest held frame that fits, waiting up to ``timeout`` seconds for one."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = self.held(kind, src, dst, match)
                if found:
                    return found[0]
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(min(left, 0.05))

    def release(self, frame_id: int) -> Frame:
        """Deliver a held frame to its receiver."""
        return self._call(self._act(frame_id, "release"))

    def duplicate(self, frame_id: int) -> Frame:
        """Deliver a copy of a held frame (the original stays held), or deliver a released
        request again (the model's messages may arrive twice); the copy's answer is
        swallowed, so the sender sees one."""
        return self._call(self._act(frame_id, "duplicate"))

    def drop(self, frame_id: int) -> Frame:
        """Discard a held frame, and break its connection (how a lost message shows on TCP)."""
        return self._call(self._act(frame_id, "drop"))

    async def _act(self, frame_id: int, what: str) -> Frame:
        with self._cond:
            f = next((x for x in self.frames if x.id == frame_id), None)
        again = what == "duplicate" and f is not None and f.state == "released" and f.kind in REQUEST_KINDS.values()
        if f is None or (f.state != "held" and not again):
            raise KeyError(f"frame {frame_id} is not held")
        c = self._conns.get(f.conn)
        request = f.kind in REQUEST_KINDS.values() or f.kind == "client"
        if what == "drop":
            f.state = "dropped"
            if c is not None:
                self._close(c)
        else:
            if c is None or c.closed:
                raise ConnectionError(f"frame {frame_id}'s connection is closed")
            writer = c.server if request else c.client
            if what == "duplicate":
                f.copies += 1
                if request:
                    c.swallow[f.correlation_id] = c.swallow.get(f.correlation_id, 0) + 1
            else:
                f.state = "released"
            writer.write(f.data)
            with contextlib.suppress(ConnectionError, OSError):
                await writer.drain()
            if c.server_ended and not request and \
                    not any(x.state == "held" and x.conn == c.id for x in self.frames):
                # the answering broker is gone: once its last answer is delivered, the
                # connection breaks, as TCP's would -- left open, the client's next request
                # on it went to nobody and waited for an answer for ever
                self._close(c)
        with self._cond:
            self._cond.notify_all()
        return f

    # -- relaying ---------------------------------------------------------------------------
    async def _accept(self, broker: int, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        host, port = self.targets[broker]
        try:
            sreader, swriter = await asyncio.open_connection(host, port)
        except OSError:  # the broker is down: so is the connection to it
            writer.close()
            return
        c = _Conn(next(self._conn_ids), broker, writer, swriter)
        self._conns[c.id] = c
        await asyncio.gather(self._pump(c, reader, request=True),
                             self._pump(c, sreader, request=False), return_exceptions=True)
        self._close(c)
        self._conns.pop(c.id, None)

    def _close(self, c: _Conn) -> None:
        c.closed = True
        for w in (c.client, c.server):
            with contextlib.suppress(Exception):
                w.close()

    async def _pump(self, c: _Conn, reader: asyncio.StreamReader, request: bool) -> None:
        try:
            while True:
                payload = await read_frame(reader)
                if payload is None:
                    break
                frame = self._classify(c, payload, request)
                if frame is None:  # the answer to a duplicate: the sender expects one answer
                    continue
                if frame.kind in self.hold:
                    frame.state = "held"
                with self._cond:  # recorded before it is passed on: a test may look at once
                    self.frames.append(frame)
                    self._cond.notify_all()
                if frame.state != "held":
                    (c.server if request else c.client).write(frame.data)
                    await (c.server if request else c.client).drain()
        except (ConnectionError, OSError, ProtocolError, asyncio.IncompleteReadError):
            pass
        finally:
            # one side ended: end the other, unless frames are held for it (they may still
            # be released: a message outlives its sender)
            other = c.server if request else c.client
            if not any(f.state == "held" and f.conn == c.id for f in self.frames):
                with contextlib.suppress(Exception):
                    other.close()
            elif not request:
                c.server_ended = True

    def _classify(self, c: _Conn, payload: bytes, request: bool) -> Frame | None:
        data = _U32.pack(len(payload)) + payload
        if request:
            if len(payload) < _HEAD.size:
                raise ProtocolError("frame shorter than a request header")
            kind, src, summary, version = self._read_request(payload)
            api, _, cid = _HEAD.unpack_from(payload)
            c.requests[cid] = (kind, src, api, version)
            return Frame(next(self._ids), c.id, kind, src, c.dst, cid, summary, data)
        if len(payload) < _CID.size:
            raise ProtocolError("frame shorter than a correlation id")
        (cid,) = _CID.unpack_from(payload)
        if c.swallow.get(cid, 0) > 0:
            c.swallow[cid] -= 1
            return None
        req_kind, req_src, api, version = c.requests.pop(cid, ("client", None, -1, None))
        kind = RESPONSE_KINDS.get(req_kind, "client_response")
        return Frame(next(self._ids), c.id, kind, c.dst, req_src, cid,
                     self._read_response(payload, kind, api, version), data)

    def _read_request(self, payload: bytes) -> tuple[str, int | None, dict[str, Any], int | None]:
        """(kind, sender, summary, the version its answer is read at: None, Epochal's)."""
        try:
            header = decode_request_header(payload)
            kind = REQUEST_KINDS.get(header[0], "client")
            body = decode_request_body(payload, header) if kind != "client" else {}
        except ProtocolError:  # not at Epochal's version: a Kafka broker's
            return self._read_kafka_request(payload)
        src: int | None = None
        if kind == "fetch_request" or kind == "epoch_lookup":
            rid = body.get("replica_id", -1)
            if not isinstance(rid, int) or rid < 0:
                kind = "client"  # a consumer's fetch
            else:
                src = rid
        elif kind != "client":
            cid_ = body.get("controller_id")
            src = cid_ if isinstance(cid_, int) else None
        return kind, src, summarize(kind, body), None

    def _read_kafka_request(self, payload: bytes) -> tuple[str, int | None, dict[str, Any], int | None]:
        api, version, _ = _HEAD.unpack_from(payload)
        kind = REQUEST_KINDS.get(api, "client")
        if kind == "client":
            return kind, None, {}, version
        try:
            found = kafka_frames.summarize_request(
                api, kafka_frames.decode_request(payload, kafka_frames.decode_request_header(payload)),
                self.topic_ids)
        except Exception as exc:  # noqa: BLE001 - kio's reader raises several kinds; passed on as is
            return "client", None, {"decode_error": f"{type(exc).__name__}: {exc}"}, version
        if found is None:  # a consumer's fetch or epoch lookup
            return "client", None, {}, version
        src = found.pop("src", None)
        if kind == "stop_replica":  # the driver matches on the request's delete, as Epochal's
            found["delete"] = any(p.get("delete") for p in found.get("partitions", []))
        return kind, src if isinstance(src, int) and src >= 0 else None, found, version

    def _read_response(self, payload: bytes, kind: str, api: int, version: int | None) -> dict[str, Any]:
        """The summary of an answer, read as its request was; one that does not read is
        passed on with its ``decode_error``."""
        try:
            if version is None:
                _, _, error, body = decode_response(payload, api if api >= 0 else None)
                summary = summarize(kind, body)
            elif kind == "client_response":
                return {}
            else:
                summary = kafka_frames.summarize_response(
                    api, kafka_frames.decode_response(payload, api, version), self.topic_ids)
                error = summary.pop("error", 0)
        except Exception as exc:  # noqa: BLE001 - forwarded whatever it holds
            return {"decode_error": f"{type(exc).__name__}: {exc}"}
        if error:
            summary["error"] = error
        return summary
