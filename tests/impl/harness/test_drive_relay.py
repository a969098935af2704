"""The harness's relay (impl.harness.relay): frames held, released in any order, duplicated
and dropped, over real TCP on 127.0.0.1 -- against a small echo server, no brokers; and a
Kafka broker's frames, at versions Epochal's brokers do not send, held by what they say."""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
import time
import uuid

import pytest

from impl.harness.relay import Relay
from impl.node.wire import (
    ApiKey,
    BlockingConnection,
    decode_request_body,
    decode_request_header,
    encode_response,
    read_frame,
)
from impl.node.zk import free_port
from tests.impl.harness.test_kafka_relay import fetch_v11, fetch_v11_answer, leader_and_isr


class EchoBroker:
    """Answers every request with its body and counts what it received."""

    def __init__(self) -> None:
        self.port = free_port()
        self.received: list[dict] = []
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while (payload := await read_frame(reader)) is not None:
                api, _, cid, _ = decode_request_header(payload)
                body = decode_request_body(payload)
                self.received.append(body)
                writer.write(encode_response(cid, 0, 0, body, api, body))
                await writer.drain()

        async def main() -> None:
            await asyncio.start_server(serve, "127.0.0.1", self.port)
            self.ready.set()

        self.loop.run_until_complete(main())
        self.loop.run_forever()

    def __enter__(self) -> EchoBroker:
        self.thread.start()
        self.ready.wait(5)
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)


def _send_async(port: int, api: ApiKey, body: dict) -> tuple[threading.Thread, list]:
    out: list = []

    def run() -> None:
        conn = BlockingConnection("127.0.0.1", port, timeout=10)
        try:
            out.append(conn.send(api, body))
        except OSError as exc:
            out.append(exc)
        finally:
            conn.close()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def test_held_frames_are_delivered_in_the_order_the_harness_chooses() -> None:
    with EchoBroker() as broker, Relay({1: ("127.0.0.1", broker.port)}, hold=frozenset({"leader_and_isr"})) as relay:
        port = relay.ports[1]
        t1, out1 = _send_async(port, ApiKey.LEADER_AND_ISR, {"controller_id": 0, "controller_epoch": 1, "partitions": [], "n": 1})
        first = relay.wait_held("leader_and_isr", dst=1)
        t2, out2 = _send_async(port, ApiKey.LEADER_AND_ISR, {"controller_id": 0, "controller_epoch": 2, "partitions": [], "n": 2})
        second = relay.wait_held("leader_and_isr", dst=1, match=lambda f: f.id != first.id)
        assert first is not None and second is not None
        assert broker.received == []  # both held: nothing reached the broker
        relay.release(second.id)
        t2.join(5)
        relay.release(first.id)
        t1.join(5)
        assert [b["n"] for b in broker.received] == [2, 1]
        assert out1[0][2]["n"] == 1 and out2[0][2]["n"] == 2
        assert first.src == 0 and first.summary["controller_epoch"] == 1


def test_a_duplicated_frame_reaches_the_broker_twice_and_its_sender_sees_one_answer() -> None:
    with EchoBroker() as broker, Relay({1: ("127.0.0.1", broker.port)}, hold=frozenset({"fetch_request"})) as relay:
        t, out = _send_async(relay.ports[1], ApiKey.FETCH, {"replica_id": 2, "partitions": []})
        f = relay.wait_held("fetch_request", src=2)
        assert f is not None
        relay.duplicate(f.id)
        relay.release(f.id)
        t.join(5)
        assert len(broker.received) == 2
        assert len(out) == 1 and out[0][2]["replica_id"] == 2
        assert [x.kind for x in relay.frames].count("fetch_response") == 1


def test_a_released_request_can_be_delivered_again() -> None:
    with EchoBroker() as broker, Relay({1: ("127.0.0.1", broker.port)}, hold=frozenset({"leader_and_isr"})) as relay:
        conn = BlockingConnection("127.0.0.1", relay.ports[1], timeout=10)  # the sender stays connected
        out: list = []
        t = threading.Thread(target=lambda: out.append(conn.send(ApiKey.LEADER_AND_ISR, {"controller_id": 0, "controller_epoch": 1, "partitions": []})))
        t.start()
        f = relay.wait_held("leader_and_isr")
        assert f is not None
        relay.release(f.id)
        t.join(5)
        relay.duplicate(f.id)
        deadline = time.monotonic() + 5
        while len(broker.received) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(broker.received) == 2 and len(out) == 1
        conn.close()


def test_a_dropped_frame_never_arrives_and_its_connection_breaks() -> None:
    with EchoBroker() as broker, Relay({1: ("127.0.0.1", broker.port)}, hold=frozenset({"stop_replica"})) as relay:
        t, out = _send_async(relay.ports[1], ApiKey.STOP_REPLICA, {"controller_id": 0, "controller_epoch": 1, "partitions": []})
        f = relay.wait_held("stop_replica")
        assert f is not None
        relay.drop(f.id)
        t.join(5)
        assert broker.received == []
        assert isinstance(out[0], OSError)
        with pytest.raises(KeyError):
            relay.release(f.id)


def test_frames_of_kinds_not_held_pass_straight_through() -> None:
    with EchoBroker() as broker, Relay({1: ("127.0.0.1", broker.port)}, hold=frozenset({"fetch_request"})) as relay:
        t, out = _send_async(relay.ports[1], ApiKey.METADATA, {})
        t.join(5)
        assert out and not isinstance(out[0], Exception)
        assert relay.held() == []
        assert [x.kind for x in relay.frames] == ["client", "client_response"]


# -- a Kafka broker's frames, at its own versions -----------------------------------------------

class KafkaFetchBroker:
    """Stands in for a Kafka 2.x broker: answers a Fetch v11 with three records, reads
    anything else without answering; keeps the frames it received."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.received: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            while head := conn.recv(4, socket.MSG_WAITALL):
                payload = conn.recv(struct.unpack(">i", head)[0], socket.MSG_WAITALL)
                self.received.append(head + payload)
                api, _, cid = struct.unpack_from(">hhi", payload)
                if api == 1:
                    conn.sendall(fetch_v11_answer(cid))


def test_a_kafka_brokers_messages_are_held_by_what_they_say_and_forwarded_unchanged() -> None:
    """Between Kafka brokers (LeaderAndIsr v5, a follower's Fetch v11 and its answer: not
    the versions Epochal's brokers send) the relay reads each frame at its own version,
    holds it by kind with the fields a driver matches on, and passes the bytes on as sent."""
    broker = KafkaFetchBroker()
    held = frozenset({"leader_and_isr", "fetch_request", "fetch_response"})
    with Relay({2: ("127.0.0.1", broker.port)}, hold=held) as relay, \
            socket.create_connection(("127.0.0.1", relay.ports[2]), timeout=10) as peer:
        control_frame, fetch = leader_and_isr(5, uuid.uuid4()), fetch_v11(replica_id=3)
        peer.sendall(control_frame + fetch)
        lai = relay.wait_held("leader_and_isr", src=1, dst=2)
        fr = relay.wait_held("fetch_request", src=3, dst=2)
        assert lai is not None and fr is not None and broker.received == []
        (p,) = lai.summary["partitions"]
        assert (lai.summary["controller_epoch"], p["topic"], p["leader"], p["leader_epoch"], p["isr"],
                p["zk_version"]) == (2, "orders", 3, 5, [3, 1], 6)
        assert fr.summary["partitions"][0]["fetch_offset"] == 3
        relay.release(fr.id)
        answer = relay.wait_held("fetch_response", src=2, dst=3)
        assert answer is not None and answer.summary["partitions"][0]["high_watermark"] == 5
        relay.release(answer.id)
        assert peer.recv(len(fetch_v11_answer()), socket.MSG_WAITALL) == fetch_v11_answer()
        relay.release(lai.id)
        deadline = time.monotonic() + 5
        while len(broker.received) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert broker.received == [fetch, control_frame]  # in the order released, as sent


# -- harness step mode's permits (impl.node.step_gate) ----------------------------------------------

def test_a_permit_is_for_one_broker_process_and_is_taken_once(tmp_path) -> None:
    import os

    from impl.node.step_gate import StepGate, grant

    gate = StepGate(tmp_path, 1, on=True)

    def takes() -> bool:
        try:
            asyncio.run(asyncio.wait_for(gate.wait("send_fetch"), 0.1))
        except TimeoutError:
            return False
        return True

    assert not takes()
    grant(tmp_path, 1, os.getpid() + 1, "send_fetch")  # another incarnation's permit
    assert not takes()
    grant(tmp_path, 1, os.getpid(), "send_fetch")
    assert takes() and not takes()
    gate.give_back("send_fetch")
    assert takes()
    grant(tmp_path, 1, os.getpid(), "shrink_isr", target=2)  # a permit that names its follower
    assert not gate.take("shrink_isr:1") and gate.take("shrink_isr:2") and not gate.take("shrink_isr:2")
    with pytest.raises(ValueError, match="unknown step gate"):
        grant(tmp_path, 1, os.getpid(), "fly")


def test_outside_step_mode_nothing_waits_for_a_permit(tmp_path) -> None:
    from impl.node.step_gate import StepGate

    gate = StepGate(tmp_path, 1, on=False)
    asyncio.run(asyncio.wait_for(gate.wait("send_fetch"), 0.1))
    assert gate.wait_blocking("elect_leader")
