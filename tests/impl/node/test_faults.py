"""The RPC transport's fault layer (impl.node.faults): partitioned links refuse, slow links delay,
on connections already open as well as new ones; and a broker's ZooKeeper session can be
expired from outside through the credentials it publishes."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from impl.node import faults
from impl.node.auth.credentials import ClusterSecret
from impl.node.faults import FaultLayer, FaultPlan, expire_session, publish_session, write_plan
from impl.node.wire import (
    ApiKey,
    AsyncConnection,
    BlockingConnection,
    ErrorCode,
    decode_request_header,
    encode_response,
)
from impl.node.zk import EmbeddedZooKeeper, connect


class _Responder:
    """A tiny server answering every request frame with an empty success response."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    @staticmethod
    def _serve(conn: socket.socket) -> None:
        with conn:
            while True:
                head = conn.recv(4)
                if len(head) < 4:
                    return
                n = int.from_bytes(head, "big")
                payload = b""
                while len(payload) < n:
                    chunk = conn.recv(n - len(payload))
                    if not chunk:
                        return
                    payload += chunk
                api, _v, cid, _clock = decode_request_header(payload)
                conn.sendall(encode_response(cid, 0, ErrorCode.NONE, {}, api))

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def responder() -> Iterator[_Responder]:
    r = _Responder()
    yield r
    r.close()


@pytest.fixture
def as_broker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test process plays broker 0 of a cluster whose data dir is ``tmp_path``."""
    monkeypatch.setattr(faults, "_layer", None)
    faults.install(tmp_path, 0)
    return tmp_path


def test_plan_round_trips_through_its_file_format() -> None:
    plan = FaultPlan({0: ("127.0.0.1", 9000), 1: ("127.0.0.1", 9001)}).with_partition(1, 0) \
        .with_delay(0, 1, 0.5)
    again = FaultPlan.from_json(plan.to_json())
    assert again == plan
    assert again.blocked(0, 1) and again.blocked(1, 0)
    assert again.delay(0, 1) == 0.5 and again.delay(1, 0) == 0.0
    assert again.healed() == FaultPlan(plan.endpoints)


def test_partition_refuses_both_directions_and_spares_other_links(tmp_path: Path) -> None:
    eps = {0: ("127.0.0.1", 9000), 1: ("127.0.0.1", 9001), 2: ("127.0.0.1", 9002)}
    write_plan(tmp_path, FaultPlan(eps).with_partition(0, 1))
    layers = {b: FaultLayer(faults.faults_path(tmp_path), b) for b in eps}
    with pytest.raises(ConnectionRefusedError):
        layers[0].gate("127.0.0.1", 9001)
    with pytest.raises(ConnectionRefusedError):
        layers[1].gate("127.0.0.1", 9000)
    assert layers[0].gate("127.0.0.1", 9002) == 0.0
    assert layers[2].gate("127.0.0.1", 9000) == 0.0
    assert layers[0].gate("127.0.0.1", 12345) == 0.0  # not a broker (a client): untouched


def test_a_rewritten_plan_takes_effect_and_healing_restores_the_link(tmp_path: Path) -> None:
    eps = {0: ("127.0.0.1", 9000), 1: ("127.0.0.1", 9001)}
    layer = FaultLayer(faults.faults_path(tmp_path), 0)
    assert layer.gate("127.0.0.1", 9001) == 0.0  # no file at all: no faults
    write_plan(tmp_path, FaultPlan(eps).with_partition(0, 1))
    with pytest.raises(ConnectionRefusedError):
        layer.gate("127.0.0.1", 9001)
    write_plan(tmp_path, FaultPlan(eps).with_delay(0, 1, 0.25))
    assert layer.gate("127.0.0.1", 9001) == 0.25
    write_plan(tmp_path, FaultPlan(eps))
    assert layer.gate("127.0.0.1", 9001) == 0.0


def test_partitioned_link_refuses_new_and_open_blocking_connections(
        as_broker: Path, responder: _Responder) -> None:
    eps = {0: ("127.0.0.1", 1), 1: ("127.0.0.1", responder.port)}
    write_plan(as_broker, FaultPlan(eps))
    conn = BlockingConnection("127.0.0.1", responder.port, timeout=2)
    assert conn.send(ApiKey.METADATA, {})[0] == ErrorCode.NONE
    write_plan(as_broker, FaultPlan(eps).with_partition(0, 1))
    with pytest.raises(ConnectionRefusedError):
        conn.send(ApiKey.METADATA, {})  # the connection already open
    with pytest.raises(ConnectionRefusedError):
        BlockingConnection("127.0.0.1", responder.port, timeout=2)  # and a new one
    write_plan(as_broker, FaultPlan(eps))
    assert conn.send(ApiKey.METADATA, {})[0] == ErrorCode.NONE
    conn.close()


def test_slow_link_delays_every_request_by_its_delay(as_broker: Path, responder: _Responder) -> None:
    eps = {0: ("127.0.0.1", 1), 1: ("127.0.0.1", responder.port)}
    write_plan(as_broker, FaultPlan(eps))
    conn = BlockingConnection("127.0.0.1", responder.port, timeout=2)
    t0 = time.perf_counter()
    conn.send(ApiKey.METADATA, {})
    fast = time.perf_counter() - t0
    write_plan(as_broker, FaultPlan(eps).with_delay(0, 1, 0.4))
    t0 = time.perf_counter()
    for _ in range(2):
        conn.send(ApiKey.METADATA, {})
    slow = time.perf_counter() - t0
    conn.close()
    assert fast < 0.2
    assert slow >= 0.8


def test_async_fetcher_connections_obey_the_same_plan(as_broker: Path, responder: _Responder) -> None:
    eps = {0: ("127.0.0.1", 1), 1: ("127.0.0.1", responder.port)}

    async def scenario() -> tuple[float, bool, bool]:
        write_plan(as_broker, FaultPlan(eps).with_delay(0, 1, 0.3))
        conn = await AsyncConnection.open("127.0.0.1", responder.port)
        t0 = time.perf_counter()
        await conn.request(ApiKey.FETCH, {"replica_id": 1, "partitions": []}, 0, timeout=3)
        delayed = time.perf_counter() - t0
        write_plan(as_broker, FaultPlan(eps).with_partition(0, 1))
        refused_open = refused_new = False
        try:
            await conn.request(ApiKey.FETCH, {"replica_id": 1, "partitions": []}, 0, timeout=3)
        except ConnectionRefusedError:
            refused_open = True
        try:
            await AsyncConnection.open("127.0.0.1", responder.port)
        except ConnectionRefusedError:
            refused_new = True
        conn.close()
        return delayed, refused_open, refused_new

    delayed, refused_open, refused_new = asyncio.run(scenario())
    assert delayed >= 0.3
    assert refused_open and refused_new


def test_outside_a_broker_process_nothing_is_refused(tmp_path: Path, responder: _Responder,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Clients and the harness never install the layer: a plan cutting every link between
    brokers leaves them untouched."""
    monkeypatch.setattr(faults, "_layer", None)
    write_plan(tmp_path, FaultPlan({0: ("127.0.0.1", 1), 1: ("127.0.0.1", responder.port)})
               .with_partition(0, 1))
    conn = BlockingConnection("127.0.0.1", responder.port, timeout=2)
    assert conn.send(ApiKey.METADATA, {})[0] == ErrorCode.NONE
    conn.close()


@pytest.mark.integration
def test_expire_session_ends_a_live_clients_session(zookeeper: EmbeddedZooKeeper,
                                                     zookeeper_key: bytes, tmp_path: Path) -> None:
    """The published credentials let a second client close the session: the victim's
    ephemeral node vanishes although the victim never stopped.  The fault signs in with
    the secret of the data directory (ZooKeeper admits nobody else)."""
    ClusterSecret.path(tmp_path).parent.mkdir(mode=0o700)
    ClusterSecret.path(tmp_path).write_text(zookeeper_key.hex() + "\n")
    victim = connect(zookeeper.hosts, session_timeout=10, acl=zookeeper.acl)
    observer = connect(zookeeper.hosts, acl=zookeeper.acl)
    try:
        path = f"/expire-test-{time.time_ns()}"
        victim.create(path, b"", ephemeral=True)
        (tmp_path / "broker-3").mkdir()
        own_id = victim.client_id[0]
        publish_session(tmp_path, 3, victim.client_id)
        assert expire_session(zookeeper.hosts, tmp_path, 3) == own_id
        deadline = time.monotonic() + 5
        while observer.exists(path) is not None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert observer.exists(path) is None
    finally:
        for c in (victim, observer):
            c.stop()
            c.close()
