"""The broker process: ``python -m impl.node.broker --broker-id N --port P --zookeeper H:P ...``.

:class:`Broker` is the seed 000 sections put together -- C (:mod:`.control`), E
(:mod:`.startup`), G (:mod:`.replication_leader`, :mod:`.replication_follower`), client
requests (:mod:`.clients`, with the idempotent producer's :mod:`.producers` and a failed log
directory's :mod:`.log_dir`; Kafka's own clients on a second port, :mod:`.kafka_listener`) and controlled shutdown (:mod:`.shutdown`) -- with the asyncio TCP
server that reads the binary protocol of :mod:`impl.node.wire` and dispatches each request to
its section.  It also runs a :class:`impl.node.controller.Controller`, which campaigns for
``/controller`` (seed 002) and talks to this broker over TCP like to any other.

Threads: the asyncio loop (main thread) owns every replica; blocking ZooKeeper calls from it
go to the default executor, and kazoo's threads only enqueue work.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import traceback
from typing import Any

from impl.node.admin import ADMIN_APIS, AdminError
from impl.node.auth.session import SASL_APIS, Answer, session_principal
from impl.node.broker.control import ControlRequests
from impl.node.broker.core import RequestError
from impl.node.broker.kafka_listener import KafkaClients
from impl.node.broker.replication_leader import ReplicationLeader
from impl.node.broker.shutdown import Shutdown
from impl.node.broker.startup import Startup
from impl.node.config import BrokerConfig
from impl.node.envelope import UNKNOWN_ORIGIN, Origin, origin_of
from impl.node.layout import make_private
from impl.node.tracing import HARNESS_NODE, observe_node
from impl.node.wire import (
    API_VERSIONS,
    ApiKey,
    ErrorCode,
    ProtocolError,
    decode_request_body,
    decode_request_header,
    encode_response,
    read_frame,
)


class Broker(ControlRequests, Startup, ReplicationLeader, KafkaClients, Shutdown):
    """One broker: the sections' rules over one state (:class:`.core.BrokerCore`), served."""

    def __init__(self, config: BrokerConfig) -> None:
        super().__init__(config)
        # ZooKeeper session changes go to Startup._on_zk_state, which tells the controller
        # (so it is listened to once the controller exists)
        self.zk.add_listener(self._on_zk_state)

    async def serve(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.loop.set_exception_handler(self._loop_error)  # rate-limited, not one per connection
        self.load_local_replicas()
        server = await asyncio.start_server(self._connection, self.config.host, self.config.port,
                                            **self.security.server_kwargs())  # TLS, if on
        servers = [server]
        if self.config.kafka_port:  # Kafka's clients (kafka_listener), same TLS and SASL
            servers.append(await asyncio.start_server(
                self._kafka_connection, self.config.host, self.config.kafka_port,
                **self.security.server_kwargs()))
        self._startup_transitions(await self.loop.run_in_executor(None, self.register))
        self._control_ready.set()
        await self.loop.run_in_executor(None, self.admin.start)
        self.controller.start()
        checker = asyncio.create_task(self._isr_checker())
        propagation = asyncio.create_task(self._isr_change_propagation())
        hw_checkpointer = asyncio.create_task(self._hw_checkpointer())
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            self.loop.add_signal_handler(sig, stop.set)
        self.loop.add_signal_handler(signal.SIGCONT, self._on_resumed)
        kafka = f", Kafka on {self.config.kafka_port}" if self.config.kafka_port else ""
        print(f"broker {self.id} listening on {self.config.host}:{self.config.port}{kafka}",
              flush=True)
        await stop.wait()
        self.stopping = True
        # stop fetching first: a follower that kept fetching could be put back into an ISR
        # by its leader after the controlled shutdown took it out, and then stop inside it
        for task in self._fetchers.values():
            task.cancel()
        self.shutdown_completed = await self._controlled_shutdown()
        checker.cancel()
        propagation.cancel()
        hw_checkpointer.cancel()
        if self._group_ticker is not None:  # impl.node.broker.kafka_groups
            self._group_ticker.cancel()
        for s in servers:
            s.close()
        for r in self.replicas.values():
            r.stop_fetcher()
            r.log.close()
        self.controller.stop()
        self.security.summary()  # what the rate-limited log lines held back
        await self.loop.run_in_executor(None, self.zk.stop)
        self.zk.close()
        self.recorder.close()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Requests are answered in order, except replica fetches, which long-poll: those run
        concurrently so that one connection can carry every partition a follower fetches
        (at most ``max_inflight_fetches`` at once: beyond, the next frame waits to be read).

        Every frame first passes the connection's session (impl.node.auth.session): over the
        connection cap the connection is closed at once; before authentication only the
        SASL exchange is answered; a request its principal may not send is refused."""
        session = self.security.admit(writer.get_extra_info("peername"))
        if session is None:  # over the connection cap (impl.node.auth.connections)
            with contextlib.suppress(Exception):
                writer.close()
            return
        write_lock = asyncio.Lock()
        tasks: set[asyncio.Task[None]] = set()
        slots = asyncio.Semaphore(self.config.max_inflight_fetches)

        async def answer(api: ApiKey, body: dict[str, Any], cid: int, version: int = 0) -> None:
            error, rbody = ErrorCode.NONE, {}
            try:
                result = await self.handle(api, body, version,
                                           origin_of(cid, session.peer, session_principal(session)))
                if result is None:  # acks=0 produce: no response at all
                    return
                rbody = result
            except RequestError as exc:
                error, rbody = exc.code, dict(exc.body, message=str(exc))
            except (KeyError, TypeError, ValueError) as exc:
                error, rbody = ErrorCode.INVALID_REQUEST, {"message": f"bad request: {exc!r}"}
            except asyncio.CancelledError:
                return
            except Exception as exc:  # noqa: BLE001 - answer, keep serving
                if self.security.log.log("handler_error", f"{api.name}: {exc!r}"):
                    traceback.print_exc()
                error, rbody = ErrorCode.UNKNOWN_SERVER_ERROR, {"message": repr(exc)}
            try:
                frame = encode_response(cid, self.recorder.tick(), error, rbody, api, body)
            except (KeyError, TypeError, ValueError) as exc:  # a handler's answer Kafka cannot carry
                self.security.log.log("handler_error", f"{api.name} answer: {exc!r}")
                frame = encode_response(cid, self.recorder.tick(), ErrorCode.UNKNOWN_SERVER_ERROR,
                                        {"message": repr(exc)}, api, body)
            async with write_lock:
                writer.write(frame)
                await writer.drain()
            throttle_ms = int(rbody.get("throttle_time_ms", 0) or 0) if api in ADMIN_APIS else 0
            if throttle_ms > 0:
                # seed 001: mute a throttled client's connection -- read nothing more from
                # it for throttle_time_ms (a forwarding broker's connection carries
                # Envelopes, which are never muted: the forwarding broker mutes its own
                # client's connection when it relays)
                await asyncio.sleep(throttle_ms / 1000)

        try:
            while True:
                try:
                    async with asyncio.timeout(session.read_timeout()):  # no task per frame
                        payload = await read_frame(reader, session.frame_limit(self.config.max_frame))
                except TimeoutError:
                    session.timed_out()
                    return
                except ProtocolError as exc:
                    writer.write(encode_response(-1, self.recorder.tick(), exc.code,
                                                 {"message": str(exc)}))
                    await writer.drain()
                    return
                if payload is None:
                    return
                try:
                    header = decode_request_header(payload)
                    api_key, version, cid, clock = header
                except ProtocolError as exc:
                    writer.write(encode_response(-1, 0, exc.code, {"message": str(exc)}))
                    await writer.drain()
                    return
                early = session.screen_header(f"api key {api_key}", api_key in SASL_APIS)
                if early is not None:  # not authenticated: the body stays undecoded
                    writer.write(encode_response(cid, 0, early.error, early.body, api_key))
                    await writer.drain()
                    return
                try:
                    api = ApiKey(api_key)
                    if version > API_VERSIONS[api] or version < 0:
                        raise RequestError(ErrorCode.UNSUPPORTED_VERSION)
                    body = decode_request_body(payload, header)
                except ValueError:
                    writer.write(encode_response(cid, 0, ErrorCode.INVALID_REQUEST,
                                                 {"message": f"unknown api key {api_key}"}))
                    await writer.drain()
                    return
                except ProtocolError as exc:
                    writer.write(encode_response(cid, 0, exc.code, {"message": str(exc)}, api_key))
                    await writer.drain()
                    return
                except RequestError as exc:
                    writer.write(encode_response(cid, 0, exc.code, {"message": str(exc)}, api_key))
                    await writer.drain()
                    continue
                screened = session.screen(api, body)  # authentication, then who may send what
                if isinstance(screened, Answer):  # answered here: never reaches a handler
                    async with write_lock:
                        writer.write(encode_response(cid, 0, screened.error, screened.body, api, body))
                        await writer.drain()
                    if screened.close:
                        return
                    continue
                body = screened
                self.recorder.observe(clock)
                if api in (ApiKey.FETCH, ApiKey.OFFSETS_FOR_LEADER_EPOCH) and \
                        int(body.get("replica_id", -1)) >= 0:
                    await slots.acquire()
                    task = asyncio.create_task(answer(api, body, cid))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                    task.add_done_callback(lambda _t: slots.release())
                else:
                    await answer(api, body, cid, version)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            pass  # the broker is shutting down
        finally:
            self.security.release(session)
            for task in tasks:
                task.cancel()
            with contextlib.suppress(Exception):
                writer.close()

    async def handle(self, api: ApiKey, body: dict[str, Any], version: int = 0,
                     origin: Origin = UNKNOWN_ORIGIN) -> dict[str, Any] | None:
        if api in ADMIN_APIS or api == ApiKey.ENVELOPE:
            # impl.node.admin: on the controller, forwarded, or NOT_CONTROLLER
            try:
                if api == ApiKey.ENVELOPE:
                    return await self.admin.handle_envelope(body, self.security.insecure)
                return await self.admin.handle(api, version, body, origin)
            except AdminError as exc:
                raise RequestError(exc.code, str(exc), {
                    "throttle_time_ms": exc.throttle_ms,
                    "controller_id": self.admin.controller_id}) from None
        handlers = {
            ApiKey.LEADER_AND_ISR: self.on_leader_and_isr,
            ApiKey.STOP_REPLICA: self.on_stop_replica,
            ApiKey.UPDATE_METADATA: self.on_update_metadata,
            ApiKey.FETCH: self.on_fetch,
            ApiKey.OFFSETS_FOR_LEADER_EPOCH: self.on_offsets_for_leader_epoch,
            ApiKey.PRODUCE: self.on_produce,
            ApiKey.INIT_PRODUCER_ID: self.on_init_producer_id,
            ApiKey.METADATA: self.on_metadata,
            ApiKey.CONTROLLED_SHUTDOWN: self.on_controlled_shutdown,
        }
        return await handlers[api](body)

    async def on_fetch(self, body: dict[str, Any]) -> dict[str, Any]:
        """A replica fetch lists partitions (seed 000 G, :mod:`.replication_leader`); a
        consumer fetch names one (:mod:`.clients`)."""
        if "partitions" in body:
            return await self._replica_fetch(body)
        topic, partition = str(body["topic"]), int(body["partition"])
        if int(body.get("replica_id", -1)) >= 0:
            raise RequestError(ErrorCode.INVALID_REQUEST, "replica fetches list partitions")
        max_records = max(0, min(int(body.get("max_records", 500)), 5000))
        max_wait = max(0, min(int(body.get("max_wait_ms", 0)), 5000)) / 1000
        r = self._leader(topic, partition)
        max_bytes = int(body.get("max_bytes", self.config.fetch_max_bytes))
        return await self._consumer_fetch(r, int(body["fetch_offset"]), max_records, max_wait,
                                          max_bytes)

    def _loop_error(self, _loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """An error no task handled (e.g. accept() out of file descriptors): one
        rate-limited line, not a traceback per connection."""
        exc = context.get("exception")
        self.security.log.log("event_loop", f"{context.get('message', '')} {exc!r}".strip())

    def _on_resumed(self) -> None:
        """SIGCONT: we were frozen.  The harness recorded broker_resume before waking us;
        take its clock so our next steps order after it (a Lamport receive)."""
        with contextlib.suppress(Exception):
            observe_node(self.recorder, self.config.data_dir, HARNESS_NODE)



def main(argv: list[str] | None = None) -> int:
    config = BrokerConfig.from_argv(argv)
    make_private()  # its logs, checkpoints, traces and audit log: 0600 in 0700 directories
    try:
        broker = Broker(config)
        asyncio.run(broker.serve())
    except KeyboardInterrupt:
        pass
    except RuntimeError as exc:  # e.g. could not register before the deadline: one line
        print(f"broker {config.broker_id}: {exc}", file=sys.stderr)
        return 2
    # 0: stopped after a completed controlled shutdown; 3: stopped without one (see
    # Shutdown._controlled_shutdown) -- LocalCluster records the latter as a crash
    return 0 if broker.shutdown_completed else 3
