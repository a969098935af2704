"""Kafka's operator requests on the Kafka listener (impl.node.broker.kafka_operations),
against a stand-in for the admin path: what each becomes (forwarded, version 0), what is
refused before it and with which of Kafka's codes, the quota filters; every answer is
encoded as Kafka's message of its version (kio), at the lowest and the highest version
ApiVersions lists."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kio.index import load_request_schema
from kio.schema.errors import ErrorCode as KafkaError

from impl.node.admin import AdminError
from impl.node.broker.kafka_operations import OPERATIONS_AS, KafkaOperations
from impl.node.codes import ApiKey, ErrorCode
from impl.node.envelope import UNKNOWN_ORIGIN, Origin, origin_of
from impl.node.kafka import SERVED, KafkaApi, build, encode_response, response_schema
from impl.node.quota import DEFAULT

QUOTAS = [{"user": "alice", "client_id": None, "controller_mutation_rate": 5.0},
          {"user": "alice", "client_id": "cli", "controller_mutation_rate": 2.0},
          {"user": DEFAULT, "client_id": None, "controller_mutation_rate": 9.0},
          {"user": None, "client_id": "cli", "controller_mutation_rate": 1.0}]


class StandIn:
    """The admin path: records each request; elections take effect in the metadata."""

    def __init__(self, listener: Operations, refuse: AdminError | None = None) -> None:
        self.calls: list[tuple[ApiKey, int, dict[str, Any]]] = []
        self.origins: list[Origin] = []
        self.listener, self.refuse = listener, refuse

    async def handle(self, api: ApiKey, version: int, body: dict[str, Any],
                     origin: Origin = UNKNOWN_ORIGIN) -> dict[str, Any]:
        if api == ApiKey.DESCRIBE_CLIENT_QUOTAS:
            return {"quotas": QUOTAS}
        self.calls.append((api, version, body))
        self.origins.append(origin)
        if self.refuse is not None:
            raise self.refuse
        if api == ApiKey.ELECT_PREFERRED:
            state = self.listener.metadata["topics"][body["topic"]][str(body["partition"])]
            state["leader"] = state["replicas"][0]
        return {}


class Operations(KafkaOperations):
    def __init__(self, refuse: AdminError | None = None) -> None:
        self.admin = StandIn(self, refuse)
        self.id = 1
        self.config = type("Config", (), {"min_insync_replicas": 2})()
        self.metadata = {"brokers": {"0": [], "1": [], "2": []}, "topics": {
            "t": {"0": {"leader": 1, "replicas": [0, 1], "isr": [0, 1]},
                  "1": {"leader": 2, "replicas": [2, 0], "isr": [2, 0]},
                  "2": {"leader": 1, "replicas": [0, 1], "isr": [1]}}}}
        self.pending = {("t", 0): [2, 1]}

    async def _zk(self, fn: Any) -> Any:
        return self.pending  # the one ZooKeeper read: the pending reassignments


def _answer(ops: Operations, api: KafkaApi, version: int, user: str = "operator",
            **body: Any) -> Any:
    request = build(load_request_schema(api, version), **body)
    schema = response_schema(api, version)
    answer = asyncio.run(ops._kafka_operation(api, schema, request, user, "cli",
                                              origin_of(0, ("10.0.0.7", 5000), user)))
    encode_response(api, 7, answer)  # it is Kafka's message of this version
    return answer


def test_a_preferred_election_is_forwarded_and_answered_once_it_took_effect() -> None:
    ops = Operations()
    answer = _answer(ops, KafkaApi.ELECT_LEADERS, 2, election_type=0, timeout=1000,
                     topic_partitions=None)
    (result,) = answer.replica_election_results
    rows = {r.partition_id: r.error_code for r in result.partition_result}
    assert rows == {0: KafkaError.none, 1: KafkaError.election_not_needed,
                    2: KafkaError.preferred_leader_not_available}
    ((api, version, body),) = ops.admin.calls
    assert (api, version, body["topic"], body["partition"]) == (ApiKey.ELECT_PREFERRED, 0, "t", 0)
    # forwarded in an Envelope naming the connection's principal and address (impl.node.envelope)
    assert ops.admin.origins == [Origin(0, "10.0.0.7", "operator")]
    assert ops.metadata["topics"]["t"]["0"]["leader"] == 0
    unclean = _answer(Operations(), KafkaApi.ELECT_LEADERS, 1, election_type=1, timeout=1000,
                      topic_partitions=None)
    assert unclean.error_code == KafkaError.invalid_request


def test_a_reassignment_is_forwarded_a_cancellation_refused_and_a_pending_one_listed() -> None:
    ops = Operations(refuse=None)
    answer = _answer(ops, KafkaApi.ALTER_PARTITION_REASSIGNMENTS, 0, timeout=1000, topics=[
        {"name": "t", "partitions": [{"partition_index": 0, "replicas": [2, 1]},
                                     {"partition_index": 1, "replicas": None}]}])
    rows = {p.partition_index: p.error_code for p in answer.responses[0].partitions}
    assert rows == {0: KafkaError.none, 1: KafkaError.invalid_request}
    ((api, version, body),) = ops.admin.calls
    assert (api, version, body["replicas"], body["user"]) == \
        (ApiKey.REASSIGN_PARTITIONS, 0, [2, 1], "operator")
    refused = _answer(Operations(AdminError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "no")),
                      KafkaApi.ALTER_PARTITION_REASSIGNMENTS, 0, timeout=1000, topics=[
                          {"name": "t", "partitions": [{"partition_index": 0, "replicas": [7]}]}])
    assert refused.responses[0].partitions[0].error_code == KafkaError.invalid_replica_assignment
    listed = _answer(ops, KafkaApi.LIST_PARTITION_REASSIGNMENTS, 0, timeout=1000, topics=None)
    ((p,),) = [t.partitions for t in listed.topics]
    assert (p.partition_index, p.replicas, p.adding_replicas, p.removing_replicas) == \
        (0, (0, 1), (2,), (0,))


@pytest.mark.parametrize(("components", "strict", "expected"), [
    ([{"entity_type": "user", "match_type": 0, "match": "alice"}], True, [(("user", "alice"),)]),
    ([{"entity_type": "user", "match_type": 0, "match": "alice"}], False,
     [(("user", "alice"),), (("user", "alice"), ("client-id", "cli"))]),
    ([{"entity_type": "user", "match_type": 1, "match": None}], True, [(("user", None),)]),
    ([{"entity_type": "client-id", "match_type": 2, "match": None}], True,
     [(("client-id", "cli"),)]),
])
def test_describe_client_quotas_filters_as_kafka(components: list[dict[str, Any]], strict: bool,
                                                 expected: list[tuple[tuple[str, Any], ...]]) -> None:
    answer = _answer(Operations(), KafkaApi.DESCRIBE_CLIENT_QUOTAS, 1, components=components,
                     strict=strict)
    assert [tuple((c.entity_type, c.entity_name) for c in e.entity) for e in answer.entries] == \
        expected
    unknown = _answer(Operations(), KafkaApi.DESCRIBE_CLIENT_QUOTAS, 0, strict=False,
                      components=[{"entity_type": "ip", "match_type": 2, "match": None}])
    assert unknown.error_code == KafkaError.invalid_request and unknown.entries is None


def test_alter_client_quotas_forwards_the_rate_and_refuses_other_keys() -> None:
    ops = Operations()
    user = [{"entity_type": "user", "entity_name": None}]
    answer = _answer(ops, KafkaApi.ALTER_CLIENT_QUOTAS, 1, validate_only=False, entries=[
        {"entity": user, "ops": [{"key": "controller_mutation_rate", "value": 3.0,
                                  "remove": False}]},
        {"entity": user, "ops": [{"key": "producer_byte_rate", "value": 1.0, "remove": False}]},
        {"entity": [{"entity_type": "ip", "entity_name": "1.2.3.4"}],
         "ops": [{"key": "controller_mutation_rate", "value": 1.0, "remove": True}]}])
    assert [e.error_code for e in answer.entries] == \
        [KafkaError.none, KafkaError.invalid_request, KafkaError.invalid_request]
    assert "producer_byte_rate" in str(answer.entries[1].error_message)
    ((api, version, body),) = ops.admin.calls
    assert (api, version, body["entries"]) == \
        (ApiKey.ALTER_CLIENT_QUOTAS, 0, [{"user": DEFAULT, "client_id": None, "rate": 3.0}])
    request = build(load_request_schema(KafkaApi.ALTER_CLIENT_QUOTAS, 0), validate_only=False,
                    entries=[{"entity": user, "ops": []}])
    refused = ops._kafka_quotas_refused(response_schema(KafkaApi.ALTER_CLIENT_QUOTAS, 0),
                                        request, 31, "the operator may")
    encode_response(KafkaApi.ALTER_CLIENT_QUOTAS, 7, refused)
    assert refused.entries[0].error_code == KafkaError.cluster_authorization_failed


@pytest.mark.parametrize("version", [0, 1])  # DescribeConfigs' v1 and v4 with them
def test_configs_a_topic_has_min_insync_replicas_and_only_deletes_are_done(version: int) -> None:
    described = _answer(Operations(), KafkaApi.DESCRIBE_CONFIGS, 1 + 3 * version,
                        include_synonyms=False,
                        include_documentation=False, resources=[
                            {"resource_type": 2, "resource_name": "t", "configuration_keys": None},
                            {"resource_type": 2, "resource_name": "x", "configuration_keys": None},
                            {"resource_type": 4, "resource_name": "1", "configuration_keys": None},
                            {"resource_type": 4, "resource_name": "2", "configuration_keys": None},
                            {"resource_type": 8, "resource_name": "", "configuration_keys": None}])
    t, x, own, other, group = described.results
    assert [(c.name, c.value, c.read_only) for c in t.configs] == [("min.insync.replicas", "2", True)]
    assert (x.error_code, own.error_code, own.configs) == \
        (KafkaError.unknown_topic_or_partition, KafkaError.none, ())
    assert other.error_code == group.error_code == KafkaError.invalid_request
    altered = _answer(Operations(), KafkaApi.INCREMENTAL_ALTER_CONFIGS, version,
                      validate_only=False,
                      resources=[
                          {"resource_type": 2, "resource_name": "t", "configs": [
                              {"name": "leader.replication.throttled.replicas",
                               "config_operation": 1, "value": None}]},
                          {"resource_type": 2, "resource_name": "t", "configs": [
                              {"name": "retention.ms", "config_operation": 0, "value": "1"}]}])
    assert [r.error_code for r in altered.responses] == [KafkaError.none, KafkaError.invalid_config]


def test_scram_credentials_of_every_valid_user_name() -> None:
    answer = _answer(Operations(), KafkaApi.DESCRIBE_USER_SCRAM_CREDENTIALS, 0,
                     users=[{"name": "alice"}, {"name": "no such/name"}])
    ok, bad = answer.results
    assert [(c.mechanism, c.iterations) for c in ok.credential_infos] == [(1, 4096)]
    assert bad.error_code == KafkaError.resource_not_found


@pytest.mark.parametrize("api", sorted(OPERATIONS_AS))
def test_every_operator_api_is_listed_with_versions_kio_knows(api: KafkaApi) -> None:
    low, high = SERVED[api]
    for version in range(low, high + 1):
        load_request_schema(api, version)
        response_schema(api, version)
