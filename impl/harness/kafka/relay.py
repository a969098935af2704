"""A Kafka-protocol relay in front of each real Kafka broker: the inter-broker messages
Kafka's logs leave out, recorded in the order they travel.

Each broker listens on its own port and *advertises* its relay's (``advertised.listeners``),
so every connection another broker opens to it -- the controller's channel, a follower's
replica fetcher, a leader's AlterPartition channel -- and every client that read the
metadata goes through the relay, over TCP on 127.0.0.1.  The relay forwards the bytes
unchanged and in order, whole frames at a time; on the side it splits each direction into
Kafka frames (an i32 size and the payload), decodes each request's header (API key,
version, correlation id, client id) and remembers, per connection, each correlation id's
API and version, which is what the answer needs to be decoded.

The inter-broker messages -- LeaderAndIsr, StopReplica, UpdateMetadata (from the
controller), Fetch and OffsetForLeaderEpoch from a replica (``replica_id`` >= 0),
AlterPartition -- and their answers are appended, before they are passed on, to
``<log-dir>/broker-N.jsonl`` (N: the broker the relay is in front of) with the fields a
trace adapter reads (:mod:`impl.harness.frames.kafka`).  Clients'
traffic is forwarded and not logged.  A frame the relay cannot decode is logged with its
``decode_error`` and forwarded as it is; a stream that is not Kafka framing (a size below
zero or above :data:`MAX_FRAME`) is forwarded raw from there on.

On command (:meth:`KafkaRelay.hold`) the relay *holds* the requests of one API from one
broker to another -- a follower's Fetch to its leader, a controller's LeaderAndIsr -- after
logging them, and passes them on only when released (:meth:`KafkaRelay.release`):
``epochal drive --engine kafka`` (:mod:`.drive`) makes a follower fall behind so.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, TypeVar

from impl.harness.frames.kafka import (  # the decoding, shared with the drive relay
    API_NAMES,
    TopicIds,
    decode_request,
    decode_request_header,
    decode_response,
    response_correlation_id,
    summarize_request,
    summarize_response,
)

_SIZE = struct.Struct(">i")
T = TypeVar("T")
MAX_FRAME = 256 * 1024 * 1024
"""A frame size above this is not Kafka's (a broker's socket.request.max.bytes is 100 MB)."""


class FrameError(ValueError):
    """A size prefix no Kafka frame has."""


class FrameSplitter:
    """Whole frames, size prefix included, out of a byte stream fed in arbitrary chunks."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        self._buffer += data
        frames = []
        while len(self._buffer) >= _SIZE.size:
            (size,) = _SIZE.unpack_from(self._buffer)
            if not 0 <= size <= MAX_FRAME:
                raise FrameError(f"frame size {size}")
            end = _SIZE.size + size
            if len(self._buffer) < end:
                break
            frames.append(bytes(self._buffer[:end]))
            del self._buffer[:end]
        return frames

    def rest(self) -> bytes:
        """The bytes fed but not yet returned in a frame (and forget them)."""
        rest = bytes(self._buffer)
        self._buffer.clear()
        return rest


# -- forwarding -----------------------------------------------------------------------------
@dataclass
class _Connection:
    id: int
    broker: int
    pending: dict[int, tuple[int, int, bool]] = field(default_factory=dict)
    """correlation id -> (api key, version, whether the request was logged)"""


Hold = tuple[int, str, int]
"""What the relay holds: (the broker it is in front of, the API's name, the sending broker
or :data:`ANY`)."""
ANY = -1
"""A hold of requests from whichever broker sends them (a controller not elected yet)."""


class KafkaRelay:
    """A relay in front of each broker added, all served by one asyncio loop on a thread of
    its own; a broker's relay outlives the broker (a connection to a dead broker is refused
    by closing it, as the broker's port would).  Methods are called from the harness's thread."""

    def __init__(self, log_dir: str | Path, host: str = "127.0.0.1") -> None:
        self.log_dir = Path(log_dir)
        self.host = host
        self.ports: dict[int, int] = {}  # broker -> the relay's port, the one it advertises
        self.targets: dict[int, int] = {}  # broker -> the broker's own port
        self.topic_ids: TopicIds = {}
        self._logs: dict[int, TextIO] = {}
        self._seq = itertools.count(1)
        self._connection_ids = itertools.count(1)
        self._writers: set[asyncio.StreamWriter] = set()
        self._servers: list[asyncio.Server] = []
        self._holds: set[Hold] = set()
        self._held: dict[Hold, list[tuple[asyncio.StreamWriter, bytes]]] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True, name="kafka-relay")

    def log_path(self, broker: int) -> Path:
        return self.log_dir / f"broker-{broker}.jsonl"

    def start(self) -> KafkaRelay:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._thread.start()
        return self

    def add(self, broker: int, target_port: int, port: int = 0) -> int:
        """Listen for ``broker`` (on ``port``, 0: any free one) and relay to
        ``target_port``; returns the relay's port."""
        self.targets[broker] = target_port
        self._logs[broker] = open(self.log_path(broker), "a")  # noqa: SIM115 - closed by stop()
        return int(asyncio.run_coroutine_threadsafe(self._listen(broker, port), self._loop).result(10))

    async def _listen(self, broker: int, port: int) -> int:
        server = await asyncio.start_server(lambda r, w: self._accept(broker, r, w), self.host, port)
        self._servers.append(server)
        self.ports[broker] = int(server.sockets[0].getsockname()[1])
        return self.ports[broker]

    def stop(self) -> None:
        if not self._thread.is_alive():
            return

        async def close() -> None:
            for server in self._servers:
                server.close()
            for writer in list(self._writers):
                writer.close()

        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        for log in self._logs.values():
            log.close()

    # -- holding -------------------------------------------------------------------------
    def hold(self, broker: int, api: str, src: int = ANY) -> None:
        """From now on keep ``api`` requests from broker ``src`` to ``broker`` (logged, not passed on)."""
        self._call(lambda: self._holds.add((broker, api, src)))

    def release(self, broker: int, api: str, src: int = ANY) -> int:
        """Stop holding those requests and pass on the ones held, in order, on connections
        still open; returns how many were held."""
        def release() -> int:
            self._holds.discard((broker, api, src))
            held = self._held.pop((broker, api, src), [])
            for writer, frame in held:
                if not writer.is_closing():
                    writer.write(frame)
            return len(held)
        return self._call(release)

    def held(self, broker: int, api: str, src: int = ANY) -> int:
        """How many such requests the relay holds now."""
        return self._call(lambda: len(self._held.get((broker, api, src), [])))

    def _call(self, fn: Callable[[], T]) -> T:
        """``fn`` on the relay's loop (its state is the loop's alone)."""
        async def call() -> T:
            return fn()
        return asyncio.run_coroutine_threadsafe(call(), self._loop).result(10)

    def _holding(self, broker: int, entry: dict[str, Any]) -> Hold | None:
        if entry.get("direction") != "request":
            return None
        api = str(entry.get("api"))
        return next((k for k in ((broker, api, entry.get("src", ANY)), (broker, api, ANY)) if k in self._holds), None)

    async def _accept(self, broker: int, client_reader: asyncio.StreamReader,
                      client_writer: asyncio.StreamWriter) -> None:
        try:
            broker_reader, broker_writer = await asyncio.open_connection(self.host, self.targets[broker])
        except OSError:  # the broker is down: so is every connection to it
            client_writer.close()
            return
        connection = _Connection(next(self._connection_ids), broker)
        self._writers |= {client_writer, broker_writer}
        try:
            await asyncio.gather(self._pump(connection, client_reader, broker_writer, request=True),
                                 self._pump(connection, broker_reader, client_writer, request=False))
        finally:
            for writer in (client_writer, broker_writer):
                writer.close()
                self._writers.discard(writer)

    async def _pump(self, connection: _Connection, reader: asyncio.StreamReader,
                    writer: asyncio.StreamWriter, request: bool) -> None:
        """Forward one direction, a whole frame at a time, each observed before it is
        passed on; when either side ends, both do."""
        splitter: FrameSplitter | None = FrameSplitter()
        try:
            while data := await reader.read(1 << 16):
                if splitter is None:
                    writer.write(data)
                else:
                    try:
                        for frame in splitter.feed(data):
                            entry = self._observe(connection, frame[_SIZE.size:], request)
                            held = self._holding(connection.broker, entry)
                            if held is not None:
                                self._held.setdefault(held, []).append((writer, frame))
                            else:
                                writer.write(frame)
                    except FrameError as exc:
                        self._write(connection.broker, {"conn": connection.id, "decode_error": str(exc),
                                                        "direction": "request" if request else "response"})
                        writer.write(splitter.rest())
                        splitter = None  # not Kafka's framing: forwarded raw from here on
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    def _observe(self, connection: _Connection, payload: bytes, request: bool) -> dict[str, Any]:
        """Log the frame if it is an inter-broker message or the answer to one, and return
        what was read of it; never raises."""
        entry: dict[str, Any] = {"conn": connection.id, "direction": "request" if request else "response"}
        try:
            if request:
                header = decode_request_header(payload)
                entry.update(api_key=header.api_key, version=header.version,
                             correlation_id=header.correlation_id, client_id=header.client_id)
                connection.pending[header.correlation_id] = (header.api_key, header.version, False)
                if header.api_key not in API_NAMES:
                    return entry
                summary = summarize_request(header.api_key, decode_request(payload, header), self.topic_ids)
                if summary is None:
                    return entry
                connection.pending[header.correlation_id] = (header.api_key, header.version, True)
            else:
                correlation_id = response_correlation_id(payload)
                api_key, version, logged = connection.pending.pop(correlation_id, (-1, -1, False))
                if not logged:
                    return entry
                entry.update(api_key=api_key, version=version, correlation_id=correlation_id)
                summary = summarize_response(api_key, decode_response(payload, api_key, version), self.topic_ids)
            entry.update(api=API_NAMES[entry["api_key"]], **summary)
        except Exception as exc:  # noqa: BLE001 - a frame that does not decode is still forwarded
            entry["decode_error"] = f"{type(exc).__name__}: {exc}"
        self._write(connection.broker, entry)
        return entry

    def _write(self, broker: int, entry: dict[str, Any]) -> None:
        line = {"seq": next(self._seq), "time": time.time(), "broker": broker, **entry}
        log = self._logs[broker]
        log.write(json.dumps(line, default=str) + "\n")
        log.flush()


def read_log(path: str | Path) -> list[dict[str, Any]]:
    """A relay log's entries, in the order they were forwarded."""
    p = Path(path)
    return [json.loads(line) for line in p.read_text().splitlines() if line] if p.exists() else []
