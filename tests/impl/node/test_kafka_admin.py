"""Kafka's admin requests on the Kafka listener (impl.node.broker.kafka_admin), against a
stand-in for the controller's admin path: what each Kafka request becomes, which topics
are refused before it, NOT_CONTROLLER for every topic off the controller, the quota's
strictness by version, and ``epochal cluster client-config --java``."""

from __future__ import annotations

import asyncio
import contextlib
import io
import uuid
from pathlib import Path
from typing import Any

import pytest
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode as KafkaError

from impl.harness.cli.main import main
from impl.node.admin import AdminError
from impl.node.auth.credentials import ClusterSecret
from impl.node.broker.kafka_admin import KafkaAdmin
from impl.node.codes import ApiKey, ErrorCode
from impl.node.kafka import KafkaApi, build, response_schema
from impl.node.layout import DataDir


class FakeAdmin:
    """The controller's admin path: records each request, answers every topic created."""

    def __init__(self, refuse: AdminError | None = None, throttle_ms: int = 0) -> None:
        self.calls: list[tuple[ApiKey, int, dict[str, Any]]] = []
        self.refuse, self.throttle_ms = refuse, throttle_ms

    async def handle(self, api: ApiKey, version: int, body: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((api, version, body))
        if self.refuse is not None:
            raise self.refuse
        topics = [t if isinstance(t, dict) else {"topic": t} for t in body["topics"]]
        return {"topics": [{"topic": t["topic"], "error": 0, "throttle_time_ms": self.throttle_ms,
                            "assignment": {str(p): [0, 1, 2]
                                           for p in range(int(t.get("partitions", 0)))}}
                           for t in topics]}


class Listener(KafkaAdmin):
    def __init__(self, admin: FakeAdmin) -> None:
        self.admin = admin
        self.metadata = {"topics": {"t": {"0": {"leader": 1}}, "u": {"0": {"leader": 2}}}}


def _answer(admin: FakeAdmin, api: KafkaApi, version: int, **body: Any) -> Any:
    request = build(load_request_schema(api, version), **body)
    return asyncio.run(Listener(admin)._kafka_admin(api, version, response_schema(api, version),
                                                    request, "alice", "cli"))


def _create(name: str, partitions: int = 1, rf: int = 3, **more: Any) -> dict[str, Any]:
    return {"name": name, "num_partitions": partitions, "replication_factor": rf,
            "assignments": [], "configs": [], **more}


def test_create_topics_becomes_the_controller_version_with_defaults_and_configs_refused() -> None:
    admin = FakeAdmin()
    answer = _answer(admin, KafkaApi.CREATE_TOPICS, 7, timeout=1000, validate_only=False, topics=[
        _create("t", partitions=-1, rf=-1),
        _create("u", assignments=[{"partition_index": 0, "broker_ids": [2, 0]}]),
        _create("v", configs=[{"name": "cleanup.policy", "value": "compact"}])])
    ((api, version, body),) = admin.calls
    assert (api, version) == (ApiKey.CREATE_TOPICS, 1)
    assert body["topics"] == [{"topic": "t", "partitions": 1, "replication_factor": 1},
                              {"topic": "u", "partitions": 1, "replication_factor": 3,
                               "assignment": {"0": [2, 0]}}]
    assert (body["user"], body["client_id"], body["original_version"]) == ("alice", "cli", 1)
    rows = {t.name: t for t in answer.topics}
    assert rows["t"].error_code == KafkaError.none and rows["t"].num_partitions == 1
    assert rows["t"].replication_factor == 3
    assert rows["v"].error_code == KafkaError.invalid_config


def test_off_the_controller_every_topic_is_not_controller() -> None:
    admin = FakeAdmin(refuse=AdminError(ErrorCode.NOT_CONTROLLER, "broker 1 is not the controller"))
    answer = _answer(admin, KafkaApi.DELETE_TOPICS, 4, timeout=1000, topic_names=["t", "u"])
    assert [(r.name, r.error_code) for r in answer.responses] == \
        [("t", KafkaError.not_controller), ("u", KafkaError.not_controller)]
    assert admin.calls[0][2]["topics"] == ["t", "u"]


def test_delete_topics_by_id_alone_is_unknown_topic_id() -> None:
    admin = FakeAdmin()
    topic_id = uuid.uuid4()
    answer = _answer(admin, KafkaApi.DELETE_TOPICS, 6, timeout=1000,
                     topics=[{"name": "t", "topic_id": None}, {"name": None, "topic_id": topic_id}])
    assert [(r.name, r.error_code) for r in answer.responses] == \
        [("t", KafkaError.none), (None, KafkaError.unknown_topic_id)]
    assert answer.responses[1].topic_id == topic_id


@pytest.mark.parametrize(("version", "strict"), [(2, False), (3, True)])
def test_create_partitions_is_strict_from_the_version_that_knows_the_quota_error(
        version: int, strict: bool) -> None:
    admin = FakeAdmin(throttle_ms=1)
    answer = _answer(admin, KafkaApi.CREATE_PARTITIONS, version, timeout=1000, validate_only=True,
                     topics=[{"name": "t", "count": 3,
                              "assignments": [{"broker_ids": [0, 1]}, {"broker_ids": [1, 2]}]}])
    body = admin.calls[0][2]
    assert body["topics"] == [{"topic": "t", "count": 3, "assignments": [[0, 1], [1, 2]]}]
    assert (body["original_version"] >= 1) is strict and body["validate_only"] is True
    assert [(r.name, r.error_code) for r in answer.results] == [("t", KafkaError.none)]
    assert answer.throttle_time.total_seconds() == pytest.approx(0.001)


def test_client_config_java_gives_the_jaas_line_of_kafkas_scram_login_module(tmp_path: Path) -> None:
    DataDir(tmp_path).write_cluster_state({"brokers": {
        "1": {"host": "127.0.0.1", "port": 9001, "kafka_port": 9101},
        "0": {"host": "127.0.0.1", "port": 9000, "kafka_port": 9100}}})
    password = ClusterSecret.ensure(tmp_path).password("bob")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["cluster", "client-config", "--data-dir", str(tmp_path), "--user", "bob",
                     "--java"]) == 0
    assert out.getvalue().splitlines() == [
        "bootstrap.servers=127.0.0.1:9100,127.0.0.1:9101",
        "security.protocol=SASL_PLAINTEXT",
        "sasl.mechanism=SCRAM-SHA-256",
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="bob" password="{password}";']
