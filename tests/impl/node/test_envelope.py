"""Forwarding as Kafka's Envelope (ApiKey 58, KIP-590; impl.node.envelope): what a forwarding
broker sends reads as Kafka's EnvelopeRequest and DefaultPrincipalData (kio), one Kafka
writes reads as Epochal's; an Envelope that may not be handled is refused with Kafka's
codes (an Envelope inside an Envelope above all); and a broker's forwarded request reaches
the controller wrapped in an Envelope, its answer relayed from inside the Envelope's."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from kio.schema.default_principal_data.v0.data import DefaultPrincipalData
from kio.schema.envelope.v0.request import EnvelopeRequest
from kio.serial import entity_reader, entity_writer

from impl.node.admin import AdminError, AdminService
from impl.node.config import BrokerConfig
from impl.node.envelope import Origin, Unwrapped, answer, read_answer, unwrap, wrap
from impl.node.kafka import SERVED
from impl.node.kafka.codec import UnsupportedRequest, decode_request
from impl.node.layout import DataDir
from impl.node.wire import (
    ApiKey,
    ErrorCode,
    ProtocolError,
    decode_request_body,
    decode_request_header,
    encode_request,
    encode_response,
    read_frame,
)

OLD = {"topic": "legacy", "partitions": 2, "replication_factor": 1, "user": "olduser",
       "client_id": "old-tool"}


def _envelope(**changes: Any) -> dict[str, Any]:
    return {**wrap(ApiKey.CREATE_TOPICS, 0, OLD, "olduser", Origin(42, "10.1.2.3"), 5,
                   forwarded_by=2, forward_id="f1"), **changes}


def test_the_envelope_is_kafkas_and_carries_the_clients_request_as_it_came() -> None:
    frame = encode_request(ApiKey.ENVELOPE, 0, 7, 9, _envelope())[4:]
    header = decode_request_header(frame)
    assert tuple(header) == (ApiKey.ENVELOPE, 0, 7, 9)
    # a Kafka reader: request header v2 (tagged fields skipped), then EnvelopeRequest v0
    pos = 8 + 2 + int.from_bytes(frame[8:10], "big")
    pos = header.kafka[5] if header.kafka is not None else pos
    envelope, size = entity_reader(EnvelopeRequest)(frame, pos)
    assert pos + size == len(frame)
    assert envelope.client_host_address == bytes([10, 1, 2, 3])
    # Kafka's DefaultKafkaPrincipalBuilder.serialize: the i16 version, then the data
    assert envelope.request_principal[:2] == b"\x00\x00"
    principal, _ = entity_reader(DefaultPrincipalData)(envelope.request_principal, 2)
    assert (principal.type_, principal.name, principal.token_authenticated) == ("User", "olduser", False)
    # the forwarded request: the client's API, version (0, in the tag), correlation id and
    # body, with forwarding's two fields in its tag
    inner = envelope.request_data
    assert tuple(decode_request_header(inner)) == (ApiKey.CREATE_TOPICS, 0, 42, 5)
    assert decode_request_body(inner) == {**OLD, "forward_id": "f1", "original_version": 0}
    assert decode_request_body(frame, header)["forwarded_by"] == 2
    # the principal is the one the client's connection authenticated as, where there is one
    # (the operator may name another user in the request, as on any connection)
    signed_in = wrap(ApiKey.CREATE_TOPICS, 0, OLD, "olduser", Origin(1, "::1", "operator"), 5, 2, "f2")
    assert unwrap(signed_in).forwarded.user == "operator" and len(signed_in["client_host_address"]) == 16


def test_an_envelope_kafka_writes_is_unwrapped() -> None:
    inner = encode_request(ApiKey.ALTER_CLIENT_QUOTAS, 1, 3, 0,
                           {"entries": [{"user": "u", "client_id": None, "rate": 2.0}]})[4:]
    principal = io.BytesIO()
    principal.write(b"\x00\x00")
    entity_writer(DefaultPrincipalData)(principal, DefaultPrincipalData(
        type_="User", name="admin", token_authenticated=False))
    body = io.BytesIO()
    entity_writer(EnvelopeRequest)(body, EnvelopeRequest(
        request_data=inner, request_principal=principal.getvalue(),
        client_host_address=bytes(16)))
    frame = encode_request(ApiKey.ENVELOPE, 0, 1, 0, {"request_data": inner,
                                                       "request_principal": principal.getvalue(),
                                                       "client_host_address": bytes(16)})[4:]
    assert frame.endswith(body.getvalue())
    got = unwrap(decode_request_body(frame))
    assert (got.api, got.version, got.correlation_id) == (ApiKey.ALTER_CLIENT_QUOTAS, 1, 3)
    assert got.body == {"entries": [{"user": "u", "client_id": None, "rate": 2.0}]}
    # no forwarding fields: Kafka's forwarding broker is not named, its version is the client's
    assert (got.forwarded.user, got.forwarded.forwarded_by, got.forwarded.forward_id,
            got.forwarded.original_version) == ("admin", None, None, 1)


def _refusal(envelope: dict[str, Any]) -> ErrorCode:
    with pytest.raises(ProtocolError) as exc:
        unwrap(envelope)
    return exc.value.code


def test_an_envelope_inside_an_envelope_is_refused() -> None:
    nested = encode_request(ApiKey.ENVELOPE, 0, 1, 0, _envelope())[4:]
    assert _refusal(_envelope(request_data=nested)) == ErrorCode.INVALID_REQUEST


def test_an_envelope_that_cannot_be_handled_is_refused_with_kafkas_codes() -> None:
    metadata = encode_request(ApiKey.METADATA, 9, 1, 0, {})[4:]  # not forwardable
    assert _refusal(_envelope(request_data=metadata)) == ErrorCode.INVALID_REQUEST
    quotas = encode_request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, 1, 0, {})[4:]  # read, not a write
    assert _refusal(_envelope(request_data=quotas)) == ErrorCode.INVALID_REQUEST
    inner = _envelope()["request_data"]
    assert _refusal(_envelope(request_data=inner[:-3])) == ErrorCode.UNSUPPORTED_VERSION
    assert _refusal(_envelope(request_data=b"\x00")) == ErrorCode.UNSUPPORTED_VERSION
    assert _refusal(_envelope(client_host_address=b"\x7f\x00\x01")) == ErrorCode.INVALID_REQUEST
    for principal in (None, b"", b"\x00\x01" + _envelope()["request_principal"][2:],
                      _envelope()["request_principal"] + b"x", b"\x00\x00\x06Group\x02g\x00\x00"):
        assert _refusal(_envelope(request_principal=principal)) == \
            ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE, principal


def test_the_answer_travels_in_the_forwarded_requests_own_frame() -> None:
    inner = unwrap(_envelope())
    ok = answer(inner, 11, 0, {"topic": "legacy", "assignment": {"0": [1], "1": [2]},
                               "throttle_time_ms": 300})
    assert ok["response_data"][:4] == (42).to_bytes(4, "big")  # the client's correlation id
    assert read_answer(ApiKey.CREATE_TOPICS, ok) == (11, 0, {
        "topic": "legacy", "assignment": {"0": [1], "1": [2]}, "throttle_time_ms": 300})
    refused = answer(inner, 12, ErrorCode.TOPIC_ALREADY_EXISTS, {"message": "exists",
                                                                "throttle_time_ms": 0})
    clock, error, body = read_answer(ApiKey.CREATE_TOPICS, refused)
    assert (clock, error, body["message"]) == (12, ErrorCode.TOPIC_ALREADY_EXISTS, "exists")
    with pytest.raises(ProtocolError):
        read_answer(ApiKey.CREATE_TOPICS, {})


def test_a_request_in_the_broker_protocols_own_frames_is_forwarded_alike() -> None:
    """REMOVE_PARTITIONS, which Kafka has no API for: its own frames inside the Envelope."""
    body = {"topic": "t", "partitions": [3], "user": "u"}
    inner = unwrap(wrap(ApiKey.REMOVE_PARTITIONS, 0, body, "u", Origin(8), 4, 1, "f3"))
    assert (inner.api, inner.version, inner.correlation_id, inner.body) == \
        (ApiKey.REMOVE_PARTITIONS, 0, 8, body)
    assert read_answer(ApiKey.REMOVE_PARTITIONS, answer(inner, 6, 0, {
        "topic": "t", "throttle_time_ms": 0})) == (6, 0, {"topic": "t", "throttle_time_ms": 0})


def test_the_kafka_listener_neither_lists_nor_serves_envelope() -> None:
    """As Kafka's broker: Envelope only on the inter-broker listener (Epochal's own)."""
    assert ApiKey.ENVELOPE not in SERVED
    frame = encode_request(ApiKey.ENVELOPE, 0, 3, 0, _envelope())[4:]
    with pytest.raises(UnsupportedRequest):  # the listener closes the connection
        decode_request(frame)


# -- the forwarding broker, against a stand-in controller ------------------------------------

class FakeController:
    """A TCP server that reads one request per connection and answers it with ``reply``."""

    def __init__(self, reply: Any) -> None:
        self.seen: list[tuple[int, dict[str, Any]]] = []
        self.reply = reply

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        payload = await read_frame(reader)
        assert payload is not None
        header = decode_request_header(payload)
        body = decode_request_body(payload, header)
        self.seen.append((header[0], body))
        error, rbody = self.reply(body)
        writer.write(encode_response(header[2], 100, error, rbody, header[0], body))
        await writer.drain()
        writer.close()


def _forwarding_broker(tmp_path: Path, port: int) -> AdminService:
    config = BrokerConfig(broker_id=1, port=0, zookeeper="127.0.0.1:1", data_dir=tmp_path)
    DataDir.of(tmp_path).broker(1).admin_audit.parent.mkdir(parents=True, exist_ok=True)
    clock = iter(range(1, 1000))
    host = SimpleNamespace(id=1, zk=None, config=config, loop=None, stopping=False,
                           controller=SimpleNamespace(active=False),
                           endpoints={0: ("127.0.0.1", port)},
                           recorder=SimpleNamespace(tick=lambda: next(clock), observe=lambda _c: None))
    service = AdminService(host)  # type: ignore[arg-type]
    service.controller_id = 0
    return service


async def _forward(tmp_path: Path, reply: Any) -> tuple[FakeController, Any]:
    fake = FakeController(reply)
    server = await asyncio.start_server(fake.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        service = _forwarding_broker(tmp_path, port)
        try:
            result: Any = await service.handle(ApiKey.CREATE_TOPICS, 0, OLD, Origin(42, "10.1.2.3"))
        except AdminError as exc:
            result = exc
    finally:
        server.close()
    return fake, result


def test_a_forwarded_request_reaches_the_controller_wrapped_in_an_envelope(tmp_path: Path) -> None:
    def controller(envelope: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return 0, answer(unwrap(envelope), 50, 0, {"topic": "legacy", "assignment": {"0": [0]},
                                                   "throttle_time_ms": 1200})

    fake, result = asyncio.run(_forward(tmp_path, controller))
    [(api, envelope)] = fake.seen
    assert api == ApiKey.ENVELOPE and envelope["forwarded_by"] == 1
    inner: Unwrapped = unwrap(envelope)
    assert (inner.api, inner.version, inner.correlation_id) == (ApiKey.CREATE_TOPICS, 0, 42)
    assert inner.body == OLD and inner.forwarded.user == "olduser"
    assert inner.forwarded.original_version == 0 and inner.forwarded.forward_id
    assert envelope["client_host_address"] == bytes([10, 1, 2, 3])
    # the answer inside the Envelope's is relayed in the old format, its throttle kept
    assert result == {"topic": "legacy", "assignment": {"0": [0]}, "throttle_time_ms": 1200}


def test_an_envelope_the_controller_refuses_is_the_clients_unknown_server_error(
        tmp_path: Path) -> None:
    _, result = asyncio.run(_forward(tmp_path, lambda _e: (
        ErrorCode.CLUSTER_AUTHORIZATION_FAILED, {"message": "not a broker"})))
    assert isinstance(result, AdminError) and result.code == ErrorCode.UNKNOWN_SERVER_ERROR
    assert "CLUSTER_AUTHORIZATION_FAILED" in str(result)
