"""docs/wire.md specifies the broker protocol: every API key, every error code and every
field of ``impl.node.wire`` (its ``MESSAGES`` table) is documented as the code has it, nothing
is documented that the code lacks, and what a running cluster's clients send and brokers
answer holds to the table."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from impl.node import wire
from impl.node.client import Admin, Consumer, Producer
from impl.node.codes import CONTROLLER_VERSIONS, KAFKA_VERSIONS
from impl.node.kafka.translate import EPOCHAL_TAG
from impl.node.wire import (
    API_VERSIONS,
    ERROR_BODY,
    MESSAGES,
    ApiKey,
    BlockingConnection,
    EncodedBody,
    ErrorCode,
    Field,
    RpcError,
    decode_encoded_body,
    encode_value,
    undeclared_fields,
)

DOC = (Path(__file__).resolve().parents[3] / "docs" / "wire.md").read_text(encoding="utf-8")
HEADING = re.compile(r"^### `(\w+)` \(key (-?\d+)\)$", re.M)
ROW = re.compile(r"^\| `([^`]+)` \| `([^`]+)` \| (yes|no) \| .+ \|$")


def _section(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def _fields(text: str) -> list[tuple[str, str, bool]]:
    return [(m.group(1), m.group(2), m.group(3) == "yes") for m in map(ROW.match, text.splitlines()) if m]


def _api_sections() -> dict[str, tuple[int, str]]:
    apis = _section(DOC, "\n## 5. ", "\n## 6. ")
    heads = list(HEADING.finditer(apis))
    return {m.group(1): (int(m.group(2)), apis[m.end(): heads[i + 1].start() if i + 1 < len(heads) else len(apis)])
            for i, m in enumerate(heads)}


def _spec(fields: tuple[Field, ...]) -> list[tuple[str, str, bool]]:
    return [(f.name, f.type, f.required) for f in fields]


def test_every_api_key_is_documented_with_its_number_and_nothing_else_is():
    assert {name: key for name, (key, _) in _api_sections().items()} == {a.name: int(a) for a in ApiKey}


def test_every_api_documents_its_highest_version():
    for name, (_, body) in _api_sections().items():
        api = ApiKey[name]
        highest = API_VERSIONS[api]
        versions = re.search(r"^- versions: ([\d-]+)", body, re.M)
        # an admin request of CONTROLLER_VERSIONS keeps Epochal's versions even in Kafka's frames
        own = api in KAFKA_VERSIONS and api not in CONTROLLER_VERSIONS
        expected = str(highest) if own else "0" if highest == 0 else f"0-{highest}"
        assert versions is not None and versions.group(1) == expected, name


def test_the_kafka_apis_are_documented_with_their_message_version_and_tag():
    table = _section(DOC, "\n### 2.1 Kafka frames", "\n## 3. ")
    rows = {name: int(version) for name, version in
            re.findall(r"^\| `(\w+)` \| \w+ \| (\d+) \|", table, re.M)}
    assert rows == {api.name: version for api, version in KAFKA_VERSIONS.items()}
    assert f"tag {EPOCHAL_TAG} (0x{EPOCHAL_TAG:04X}" in table


@pytest.mark.parametrize("api", list(ApiKey), ids=lambda a: a.name)
def test_every_field_is_documented_as_the_code_declares_it(api: ApiKey):
    body = _api_sections()[api.name][1]
    request, response = body.split("\nresponse:\n", 1)
    assert _fields(request) == _spec(MESSAGES[api].request), "request"
    assert _fields(response) == _spec(MESSAGES[api].response), "response"


def test_every_error_code_is_documented_with_its_number_and_nothing_else_is():
    table = _section(DOC, "\n## 8. ", "\n## 9. ")
    rows = dict(re.findall(r"^\| `(\w+)` \| (-?\d+) \|", table, re.M))
    assert {name: int(code) for name, code in rows.items()} == {e.name: int(e) for e in ErrorCode}
    assert _fields(table) == _spec(ERROR_BODY)


def test_every_api_and_error_the_document_names_exists_in_the_code():
    """Any `UPPER_CASE` name in the document is an API key or an error code of the codec."""
    named = set(re.findall(r"`([A-Z][A-Z0-9_]{2,})`", DOC)) - {"MESSAGES"}  # the table's own name
    assert named <= {a.name for a in ApiKey} | {e.name for e in ErrorCode}


def test_the_value_tags_are_the_codecs():
    table = _section(DOC, "\n## 4. ", "\n## 5. ")
    tags = {value: int(tag) for tag, value in re.findall(r"^\| (\d+) \| (\w+) \|", table, re.M)}
    samples = {"null": None, "false": False, "true": True, "integer": 7, "string": "s", "bytes": b"b",
               "list": [], "map": {}, "float": 1.5}
    assert {name: encode_value(v)[0] for name, v in samples.items()} == tags


def test_the_frame_header_sizes_are_the_codecs():
    frame = wire.encode_request(ApiKey.REMOVE_PARTITIONS, 0, 1, 5, {})  # still the broker protocol's
    assert len(frame) - 4 - len(encode_value({})) == 16  # i16 + i16 + i32 + i64
    assert "the 16 bytes of a request header" in DOC


def test_a_body_the_table_does_not_describe_is_reported():
    """The check the cluster test relies on finds an undeclared key and a missing one."""
    request = MESSAGES[ApiKey.LEADER_AND_ISR].request
    body = {"controller_id": 1, "controller_epoch": 2, "partitions": [
        {"topic": "t", "partition": 0, "leader": 1, "leader_epoch": 1, "isr": [1], "zk_version": 0, "epoch": 3}]}
    assert undeclared_fields(request, body) == ["missing: partitions[].replicas", "partitions[].epoch"]


# -- real traffic: what clients send and brokers answer --------------------------------------


@pytest.mark.integration
def test_what_clients_send_and_brokers_answer_is_what_the_table_declares(make_cluster, monkeypatch):
    """A cluster driven through every client API, including an old-version admin request that
    a broker forwards: every request body and every answer holds to ``MESSAGES`` (success)
    or ``ERROR_BODY`` (error), with no undeclared key and no required one missing."""
    seen: list[tuple[ApiKey, dict[str, Any], int, dict[str, Any]]] = []
    send = BlockingConnection.send

    def recording(self, api, body, clock=0, expect_response=True, timeout=None, version=None):
        error, rclock, rbody = send(self, api, body, clock, expect_response, timeout, version)
        sent = decode_encoded_body(api, body) if isinstance(body, EncodedBody) else body
        if expect_response:
            seen.append((ApiKey(api), sent, error, rbody))
        return error, rclock, rbody

    monkeypatch.setattr(BlockingConnection, "send", recording)
    c = make_cluster(2)
    with Admin(c.bootstrap, user="alice", client_id="wire-test") as admin:
        admin.create_topic("orders", partitions=1, replication_factor=2)
        with Admin(c.bootstrap, client_id="wire-test") as operator:  # a client may not alter quotas
            operator.alter_quota("alice", None, 1000.0)
        admin.describe_quotas()
        admin.add_partitions("orders", 2)
        admin.elect_preferred("orders", 0)
        admin.reassign("orders", 1, sorted(admin.partitions("orders")[1].replicas)[::-1])
        with pytest.raises(RpcError):  # a per-topic error in a version-1 answer
            admin.create_topic("orders", partitions=1, replication_factor=2, wait=0)
        leader = admin.leader_addr("orders", 0)
    with Producer(c.bootstrap) as producer:
        producer.send_batch("orders", ["a", "b"], partition=0)
    with Consumer(c.bootstrap) as consumer:
        assert [v for _, _, v in consumer.consume("orders", idle_timeout=0.5)] == [b"a", b"b"]
    conn = BlockingConnection(*leader, timeout=10)  # an error answer: beyond the log end
    error, _, _ = conn.send(ApiKey.FETCH, {"topic": "orders", "partition": 0, "fetch_offset": 99})
    conn.close()
    assert error == ErrorCode.OFFSET_OUT_OF_RANGE
    for broker in sorted(c.configs):  # an old client: forwarded by whichever is not controller
        conn = BlockingConnection(*c.endpoint(broker), timeout=20)
        conn.send(ApiKey.CREATE_TOPICS, {"topic": f"legacy{broker}", "partitions": 1, "replication_factor": 1,
                                         "user": "bob"}, version=0)
        conn.close()
    with Admin(c.bootstrap) as admin:
        admin.delete_topic("legacy0")
    apis = {api for api, _, _, _ in seen}
    assert {ApiKey.METADATA, ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.CREATE_TOPICS, ApiKey.CREATE_PARTITIONS,
            ApiKey.DELETE_TOPICS, ApiKey.ALTER_CLIENT_QUOTAS, ApiKey.DESCRIBE_CLIENT_QUOTAS,
            ApiKey.ELECT_PREFERRED, ApiKey.REASSIGN_PARTITIONS} <= apis
    assert any(error != ErrorCode.NONE for _, _, error, _ in seen), "an error answer is checked too"
    bad = []
    for api, body, error, rbody in seen:
        wrong = undeclared_fields(MESSAGES[api].request, body)
        answer = undeclared_fields(MESSAGES[api].response if error == ErrorCode.NONE else ERROR_BODY, rbody)
        if wrong or answer:
            bad.append((api.name, wrong, answer))
    assert not bad
