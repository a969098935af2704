"""Unit tests of the forwarding translation (seed 004): an old-version admin body becomes
the controller version's body and the answer goes back in the old shape; the principal a
request is charged to (seed 001) is the Envelope's only when forwarded."""

from __future__ import annotations

import pytest

from impl.node.admin import AdminError, principal_of, to_controller_format, to_old_format
from impl.node.envelope import Forwarded
from impl.node.quota import ANONYMOUS
from impl.node.wire import API_VERSIONS, CONTROLLER_VERSIONS, ApiKey, ErrorCode


def test_admin_writes_are_bumped_and_the_kafka_messages_are_at_kafkas_versions():
    assert all(API_VERSIONS[api] == v == 1 for api, v in CONTROLLER_VERSIONS.items())
    assert API_VERSIONS[ApiKey.REMOVE_PARTITIONS] == 1 and API_VERSIONS[ApiKey.LEADER_AND_ISR] == 4  # Kafka's
    assert ErrorCode.THROTTLING_QUOTA_EXCEEDED == 89 and ErrorCode.NOT_CONTROLLER == 41


def test_old_bodies_become_topic_lists_keeping_the_principal():
    body = {"topic": "t", "partitions": 3, "replication_factor": 2, "user": "u",
            "client_id": "c"}
    assert to_controller_format(ApiKey.CREATE_TOPICS, body) == {
        "user": "u", "client_id": "c",
        "topics": [{"topic": "t", "partitions": 3, "replication_factor": 2}]}
    assert to_controller_format(ApiKey.DELETE_TOPICS, {"topic": "t"}) == {"topics": ["t"]}
    assert to_controller_format(ApiKey.CREATE_PARTITIONS, {"topic": "t", "count": 4}) == {
        "topics": [{"topic": "t", "count": 4}]}
    same = {"topic": "t", "partition": 0, "replicas": [1, 2]}
    assert to_controller_format(ApiKey.REASSIGN_PARTITIONS, same) == same


def test_answers_go_back_in_the_old_shape_with_the_topic_error_as_the_requests():
    ok = {"topics": [{"topic": "t", "error": 0, "assignment": {"0": [1]}}], "throttle_time_ms": 7}
    assert to_old_format(ApiKey.CREATE_TOPICS, ok) == {"topic": "t", "assignment": {"0": [1]},
                                                       "throttle_time_ms": 7}
    bad = {"topics": [{"topic": "t", "error": 36, "message": "topic t exists"}],
           "throttle_time_ms": 0}
    with pytest.raises(AdminError) as exc:
        to_old_format(ApiKey.CREATE_TOPICS, bad)
    assert exc.value.code == ErrorCode.TOPIC_ALREADY_EXISTS and "exists" in str(exc.value)


def test_a_forwarded_request_is_charged_to_its_user_else_the_envelopes_principal():
    assert principal_of({}) == (ANONYMOUS, "")
    assert principal_of({"user": "u", "client_id": "c"}) == ("u", "c")
    claimed = {"user": "u", "client_id": "c", "forwarded_by": 2, "principal": {"user": "root"}}
    assert principal_of(claimed) == ("u", "c")  # not in an Envelope: the claim is ignored
    forwarded = Forwarded(forwarded_by=2, user="root", forward_id="f", original_version=0)
    # the user the forwarded request names (authorized against the Envelope's principal)
    assert principal_of({"user": "u", "client_id": "c"}, forwarded) == ("u", "c")
    # a request that names none (a Kafka broker's) is the Envelope's principal's
    assert principal_of({"client_id": "c"}, forwarded) == ("root", "c")
