"""The Kafka-protocol relay (impl/harness/kafka/relay.py) on frames built with kio: frame
splitting, request headers and bodies, answers decoded by the request they answer, what is
logged of each inter-broker message, and forwarding over TCP with bytes unchanged."""

from __future__ import annotations

import io
import socket
import struct
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kio.schema.fetch.v11 import request as fetch11
from kio.schema.fetch.v11 import response as fetch11_response
from kio.schema.fetch.v17 import request as fetch17
from kio.schema.fetch.v17 import response as fetch17_response
from kio.schema.request_header.v1 import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2 import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0 import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1 import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_writer

from impl.harness.frames import control
from impl.harness.kafka.relay import (
    FrameError,
    FrameSplitter,
    KafkaRelay,
    decode_request,
    decode_request_header,
    decode_response,
    read_log,
    summarize_request,
    summarize_response,
)
from impl.node.kafka.codec import build
from impl.node.kafka.records import fetched_batches


def frame(header: Any, body: Any) -> bytes:
    buf = io.BytesIO()
    entity_writer(type(header))(buf, header)
    entity_writer(type(body))(buf, body)
    return struct.pack(">i", len(buf.getvalue())) + buf.getvalue()


def request_frame(api_key: int, version: int, correlation_id: int, body: Any, client_id: str = "broker-2-fetcher-0") -> bytes:
    header_type = RequestHeaderV2 if type(body).__flexible__ else RequestHeaderV1
    return frame(build(header_type, request_api_key=api_key, request_api_version=version,
                       correlation_id=correlation_id, client_id=client_id), body)


def response_frame(correlation_id: int, body: Any) -> bytes:
    header_type = ResponseHeaderV1 if type(body).__flexible__ else ResponseHeaderV0
    return frame(header_type(correlation_id=correlation_id), body)


def fetch_v11(replica_id: int = 2, fetch_offset: int = 3) -> bytes:
    body = build(fetch11.FetchRequest, replica_id=replica_id, max_wait=500, min_bytes=1, max_bytes=1 << 20,
                 isolation_level=0, session_id=7, session_epoch=2, forgotten_topics_data=(), rack_id="",
                 topics=[{"topic": "orders", "partitions": [
                     {"partition": 0, "current_leader_epoch": 4, "fetch_offset": fetch_offset,
                      "log_start_offset": 0, "partition_max_bytes": 1 << 20}]}])
    return request_frame(1, 11, 41, body)


def fetch_v11_answer(correlation_id: int = 41) -> bytes:
    records = fetched_batches([[3, 4, b"v3"], [4, 4, b"v4"], [5, 5, b"v5"]])
    body = build(fetch11_response.FetchResponse, throttle_time=0, error_code=0, session_id=7, responses=[
        {"topic": "orders", "partitions": [
            {"partition_index": 0, "error_code": 0, "high_watermark": 5, "last_stable_offset": 5,
             "log_start_offset": 0, "aborted_transactions": None, "preferred_read_replica": -1,
             "records": records}]}])
    return response_frame(correlation_id, body)


LEADER_AND_ISR_STATE = {"partition_index": 0, "controller_epoch": 2, "leader": 3, "leader_epoch": 5,
                        "isr": [3, 1], "zk_version": 6, "replicas": [1, 2, 3], "adding_replicas": [],
                        "removing_replicas": [], "is_new": False, "leader_recovery_state": 0}


def leader_and_isr(version: int, topic_id: uuid.UUID | None = None) -> bytes:
    schema = control.request_schema(control.LEADER_AND_ISR, version)
    body = build(schema, controller_id=1, is_kraft_controller=False, controller_epoch=2, broker_epoch=99,
                 type=0, live_leaders=[{"broker_id": 3, "host_name": "127.0.0.1", "port": 9093}],
                 topic_states=[{"topic_name": "orders", "topic_id": topic_id,
                                "partition_states": [LEADER_AND_ISR_STATE]}])
    return request_frame(control.LEADER_AND_ISR, version, 9, body, client_id="1")


# -- frames -----------------------------------------------------------------------------------
def test_frames_are_split_whole_however_the_bytes_arrive() -> None:
    stream = fetch_v11() + leader_and_isr(4) + fetch_v11(fetch_offset=6)
    in_one = FrameSplitter().feed(stream)
    assert b"".join(in_one) == stream and len(in_one) == 3
    splitter = FrameSplitter()
    byte_by_byte = [f for i in range(len(stream)) for f in splitter.feed(stream[i:i + 1])]
    assert byte_by_byte == in_one and splitter.rest() == b""
    with pytest.raises(FrameError):
        FrameSplitter().feed(b"\xff\xff\xff\xf0rest")


# -- decoding ---------------------------------------------------------------------------------
def test_a_replica_fetch_and_its_answer() -> None:
    payload = fetch_v11()[4:]
    header = decode_request_header(payload)
    assert (header.api_key, header.version, header.correlation_id, header.client_id) == (1, 11, 41, "broker-2-fetcher-0")
    request = summarize_request(1, decode_request(payload, header), {})
    assert request == {"src": 2, "session_id": 7, "session_epoch": 2, "partitions": [
        {"topic": "orders", "partition": 0, "fetch_offset": 3, "current_leader_epoch": 4,
         "last_fetched_epoch": -1, "log_start_offset": 0}]}
    answer = summarize_response(1, decode_response(fetch_v11_answer()[4:], 1, 11), {})
    assert answer == {"error": 0, "session_id": 7, "partitions": [
        {"topic": "orders", "partition": 0, "error": 0, "high_watermark": 5, "log_start_offset": 0,
         "diverging_epoch": None, "records": 3, "last_offset": 5, "batch_leader_epochs": [4, 5]}]}


def test_a_consumer_fetch_is_not_an_inter_broker_message() -> None:
    payload = fetch_v11(replica_id=-1)[4:]
    assert summarize_request(1, decode_request(payload, decode_request_header(payload)), {}) is None


def test_a_flexible_fetch_names_topics_by_id_and_carries_the_diverging_epoch() -> None:
    topic_id = uuid.uuid4()
    body = build(fetch17.FetchRequest, replica_state={"replica_id": 3, "replica_epoch": 12}, max_wait=500,
                 min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
                 forgotten_topics_data=(), rack_id="", cluster_id=None,
                 topics=[{"topic_id": topic_id, "partitions": [
                     {"partition": 0, "current_leader_epoch": 6, "fetch_offset": 8, "last_fetched_epoch": 5,
                      "log_start_offset": 0, "partition_max_bytes": 1 << 20}]}])
    payload = request_frame(1, 17, 5, body)[4:]
    header = decode_request_header(payload)
    assert header.body_at is not None and header.client_id == "broker-2-fetcher-0"
    names = {topic_id: "orders"}
    request = summarize_request(1, decode_request(payload, header), names)
    assert request is not None and request["src"] == 3
    assert request["partitions"] == [{"topic": "orders", "topic_id": str(topic_id), "partition": 0,
                                      "fetch_offset": 8, "current_leader_epoch": 6,
                                      "last_fetched_epoch": 5, "log_start_offset": 0}]
    answer_body = build(fetch17_response.FetchResponse, throttle_time=0, error_code=0, session_id=0,
                        node_endpoints=(), responses=[{"topic_id": topic_id, "partitions": [
                            {"partition_index": 0, "error_code": 0, "high_watermark": 7, "last_stable_offset": 7,
                             "log_start_offset": 0, "diverging_epoch": {"epoch": 5, "end_offset": 7},
                             "aborted_transactions": None, "preferred_read_replica": -1, "records": b""}]}])
    answer = summarize_response(1, decode_response(response_frame(5, answer_body)[4:], 1, 17), names)
    (p,) = answer["partitions"]
    assert (p["topic"], p["high_watermark"], p["diverging_epoch"], p["records"]) == \
        ("orders", 7, {"epoch": 5, "end_offset": 7}, 0)


@pytest.mark.parametrize("version", [4, 7])
def test_leader_and_isr_its_partition_states_and_topic_ids(version: int) -> None:
    topic_id = uuid.uuid4()
    payload = leader_and_isr(version, topic_id)[4:]
    header = decode_request_header(payload)
    assert (header.api_key, header.version, header.client_id) == (4, version, "1")
    names: dict[uuid.UUID, str] = {}
    got = summarize_request(4, decode_request(payload, header), names)
    partition = {"topic": "orders", "partition": 0, "controller_epoch": 2, "leader": 3, "leader_epoch": 5,
                 "isr": [3, 1], "zk_version": 6, "replicas": [1, 2, 3]}
    assert got == {"src": 1, "controller_epoch": 2, "broker_epoch": 99, "partitions": [partition]}
    assert names == ({topic_id: "orders"} if version >= 5 else {})


# -- forwarding -------------------------------------------------------------------------------
def answer(request: bytes) -> bytes:
    """What the stand-in broker answers: LeaderAndIsr with no error, anything else with
    :func:`fetch_v11_answer`, under the request's correlation id."""
    api_key, version, correlation_id = struct.unpack_from(">hhi", request, 4)
    if api_key == control.LEADER_AND_ISR:
        return response_frame(correlation_id, build(control.response_schema(api_key, version), error_code=0,
                                                         partition_errors=[], topics=[]))
    return fetch_v11_answer(correlation_id)


@pytest.fixture
def broker() -> Iterator[tuple[int, list[bytes]]]:
    """A stand-in broker: answers each frame it reads (:func:`answer`), and keeps what it read."""
    server = socket.create_server(("127.0.0.1", 0))
    received: list[bytes] = []

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            splitter = FrameSplitter()
            while data := conn.recv(4096):
                for f in splitter.feed(data):
                    received.append(f)
                    conn.sendall(answer(f))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], received
    server.close()
    thread.join(5)


def read_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, "the relay closed the connection"
        data += chunk
    return data


def test_the_relay_forwards_bytes_unchanged_and_logs_in_order(tmp_path: Path,
                                                              broker: tuple[int, list[bytes]]) -> None:
    port, received = broker
    relay = KafkaRelay(tmp_path / "relay").start()
    try:
        relay_port = relay.add(2, port)
        header = struct.pack(">hhih", 1, 11, 77, 1) + b"x"
        undecodable = struct.pack(">i", len(header)) + header  # a Fetch request's header, no body
        sent = [leader_and_isr(7, uuid.uuid4()), fetch_v11(), undecodable, fetch_v11(replica_id=-1)]
        with socket.create_connection(("127.0.0.1", relay_port)) as client:
            for f in sent:
                client.sendall(f)
                assert read_exactly(client, len(answer(f))) == answer(f)
    finally:
        relay.stop()
    assert received == sent
    entries = read_log(relay.log_path(2))
    assert [(e["direction"], e.get("api"), e["correlation_id"] if "correlation_id" in e else None)
            for e in entries if "decode_error" not in e] == \
        [("request", "LeaderAndIsr", 9), ("response", "LeaderAndIsr", 9),
         ("request", "Fetch", 41), ("response", "Fetch", 41)]
    assert entries[0]["partitions"][0]["leader_epoch"] == 5 and entries[1]["error"] == 0
    assert entries[3]["partitions"][0]["high_watermark"] == 5
    assert [e["seq"] for e in entries] == sorted(e["seq"] for e in entries)
    (failed,) = [e for e in entries if "decode_error" in e]
    assert failed["correlation_id"] == 77 and failed["api_key"] == 1


@pytest.mark.parametrize("version", [6, 8])
def test_update_metadata_is_read_as_far_as_its_controller_epoch(version: int) -> None:
    fixed = struct.pack(">i", 1) + (b"\x00" if version >= 8 else b"") + struct.pack(">iq", 4, 99)
    header = RequestHeaderV2 if version >= 7 else RequestHeaderV1
    head = io.BytesIO()
    entity_writer(header)(head, build(header, request_api_key=6, request_api_version=version,
                                      correlation_id=3, client_id="1"))
    payload = head.getvalue() + fixed + b"\x00\x01\x02"  # the rest (topics, brokers) is not read
    body = decode_request(payload, decode_request_header(payload))
    assert summarize_request(6, body, {}) == {"src": 1, "controller_epoch": 4}


def test_a_held_fetch_waits_for_its_release_while_other_requests_pass(tmp_path: Path,
                                                                    broker: tuple[int, list[bytes]]) -> None:
    """What ``drive --engine kafka`` holds: follower 2's Fetch to broker 1 is logged and kept
    back; a LeaderAndIsr on the same connection passes; the release passes the Fetch on."""
    port, received = broker
    relay = KafkaRelay(tmp_path / "relay").start()
    try:
        relay_port = relay.add(1, port)
        relay.hold(1, "Fetch", 2)
        with socket.create_connection(("127.0.0.1", relay_port)) as client:
            client.sendall(fetch_v11(replica_id=2))
            control_request = leader_and_isr(7, uuid.uuid4())
            client.sendall(control_request)
            assert read_exactly(client, len(answer(control_request))) == answer(control_request)
            assert received == [control_request] and relay.held(1, "Fetch", 2) == 1
            assert relay.held(1, "Fetch", 3) == 0
            assert relay.release(1, "Fetch", 2) == 1
            assert read_exactly(client, len(answer(fetch_v11()))) == answer(fetch_v11())
            client.sendall(fetch_v11(replica_id=2))  # released: no longer held
            assert read_exactly(client, len(answer(fetch_v11()))) == answer(fetch_v11())
    finally:
        relay.stop()
    assert received == [control_request, fetch_v11(replica_id=2), fetch_v11(replica_id=2)]
    assert [e.get("api") for e in read_log(relay.log_path(1)) if e["direction"] == "request"] == \
        ["Fetch", "LeaderAndIsr", "Fetch"]


def test_a_hold_of_any_sender_keeps_back_every_controllers_leader_and_isr(tmp_path: Path,
                                                                         broker: tuple[int, list[bytes]]) -> None:
    port, received = broker
    relay = KafkaRelay(tmp_path / "relay").start()
    try:
        relay_port = relay.add(3, port)
        relay.hold(3, "LeaderAndIsr")  # the controller to come is not known yet
        request = leader_and_isr(7, uuid.uuid4())
        with socket.create_connection(("127.0.0.1", relay_port)) as client:
            client.sendall(request)
            deadline = time.monotonic() + 5
            while relay.held(3, "LeaderAndIsr") == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert relay.held(3, "LeaderAndIsr") == 1 and received == []
            assert relay.release(3, "LeaderAndIsr") == 1
            assert read_exactly(client, len(answer(request))) == answer(request)
    finally:
        relay.stop()
    assert received == [request]
