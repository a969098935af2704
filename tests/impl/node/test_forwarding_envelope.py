"""Integration: the controller's side of forwarding in Kafka's Envelope (ApiKey 58, KIP-590),
on a real, authenticated cluster.  Only a broker's connection may send an Envelope, naming
itself (Kafka's CLUSTER_ACTION); an Envelope at a broker that is not the controller is
NOT_CONTROLLER; an Envelope inside an Envelope is refused; the request inside is handled as
its original principal's -- charged to it, refused what that principal may not do -- and
answered inside the Envelope's answer; and forwarding fields outside an Envelope are
refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from impl.node import zk as zkl
from impl.node.envelope import Origin, read_answer, wrap
from impl.node.wire import ApiKey, BlockingConnection, ErrorCode, encode_request

pytestmark = pytest.mark.integration


def _send(c: Any, broker: int, user: str, api: ApiKey, body: dict[str, Any],
          version: int | None = None) -> tuple[int, dict[str, Any]]:
    conn = BlockingConnection(*c.endpoint(broker), timeout=10.0,
                              credentials=c.keyring.credentials(user))
    try:
        error, _, resp = conn.send(api, body, version=version)
        return error, resp
    finally:
        conn.close()


def _envelope(api: ApiKey, body: dict[str, Any], user: str, forwarded_by: int,
              forward_id: str) -> dict[str, Any]:
    return wrap(api, 0, body, user, Origin(9, "127.0.0.1"), 1, forwarded_by, forward_id)


def test_the_controller_takes_envelopes_only_from_brokers_and_never_nests_them(make_cluster):
    c = make_cluster(2)
    zk = c.zk_client()
    ctrl = int(json.loads(zk.get(zkl.CONTROLLER)[0])["brokerid"])
    other = 1 - ctrl
    broker = f"broker-{other}"
    create = {"topic": "wrapped", "partitions": 2, "replication_factor": 1, "user": "eve",
              "client_id": "old-tool"}

    # a client may not forward (Kafka: CLUSTER_ACTION), nor a broker under another's id
    error, _ = _send(c, ctrl, "eve", ApiKey.ENVELOPE,
                     _envelope(ApiKey.CREATE_TOPICS, create, "eve", other, "by-eve"))
    assert error == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    error, _ = _send(c, ctrl, broker, ApiKey.ENVELOPE,
                     _envelope(ApiKey.CREATE_TOPICS, create, "eve", ctrl, "posing"))
    assert error == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    # forwarding fields outside an Envelope, even from a broker
    error, _ = _send(c, ctrl, broker, ApiKey.CREATE_TOPICS,
                     {**create, "forward_id": "bare", "original_version": 0}, version=0)
    assert error == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    # a broker that is not the controller refuses an Envelope as a whole
    error, resp = _send(c, other, f"broker-{ctrl}", ApiKey.ENVELOPE,
                        _envelope(ApiKey.CREATE_TOPICS, create, "eve", ctrl, "misrouted"))
    assert error == ErrorCode.NOT_CONTROLLER and resp["controller_id"] == ctrl
    # an Envelope inside an Envelope is not forwardable
    inner = encode_request(ApiKey.ENVELOPE, 0, 1, 0,
                           _envelope(ApiKey.CREATE_TOPICS, create, "eve", other, "nested"))[4:]
    nested = {**_envelope(ApiKey.CREATE_TOPICS, create, "eve", other, "outer"),
              "request_data": inner}
    error, _ = _send(c, ctrl, broker, ApiKey.ENVELOPE, nested)
    assert error == ErrorCode.INVALID_REQUEST
    assert zk.exists(zkl.topic_path("wrapped")) is None

    # the request inside is eve's: authorized as hers (she may not alter quotas) ...
    quota = {"entries": [{"user": "eve", "client_id": None, "rate": 1e6}], "user": "eve"}
    error, resp = _send(c, ctrl, broker, ApiKey.ENVELOPE,
                        _envelope(ApiKey.ALTER_CLIENT_QUOTAS, quota, "eve", other, "raise"))
    assert error == ErrorCode.NONE
    assert read_answer(ApiKey.ALTER_CLIENT_QUOTAS, resp)[1] == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert zk.exists("/config/quotas/users/eve") is None
    # ... handled once, answered in her version's format inside the Envelope's answer
    error, resp = _send(c, ctrl, broker, ApiKey.ENVELOPE,
                        _envelope(ApiKey.CREATE_TOPICS, create, "eve", other, "fwd-1"))
    assert error == ErrorCode.NONE
    _, inner_error, answer = read_answer(ApiKey.CREATE_TOPICS, resp)
    assert inner_error == ErrorCode.NONE and answer["topic"] == "wrapped"
    assert len(answer["assignment"]) == 2 and zk.exists(zkl.topic_path("wrapped"))
    audit = Path(c.data_dir) / f"broker-{ctrl}" / "admin-audit.jsonl"
    handled = [e for e in map(json.loads, audit.read_text().splitlines())
               if e["event"] == "handled"]
    assert [(e["forward_id"], e["forwarded_by"], e["user"], e["client_id"], e["original_version"])
            for e in handled] == [("fwd-1", other, "eve", "old-tool", 0)]
    zk.stop()


def test_a_cluster_run_insecure_forwards_in_envelopes_too(make_cluster):
    """Without authentication the Envelope's principal is the user the request names, and
    its forwarded_by is taken as the forwarding broker says."""
    c = make_cluster(2, insecure=True)
    zk = c.zk_client()
    ctrl = int(json.loads(zk.get(zkl.CONTROLLER)[0])["brokerid"])
    other = 1 - ctrl
    conn = BlockingConnection(*c.endpoint(other), timeout=20.0)
    try:
        error, _, resp = conn.send(ApiKey.CREATE_TOPICS, {
            "topic": "open", "partitions": 1, "user": "dave", "client_id": "cli"}, version=0)
    finally:
        conn.close()
    assert error == ErrorCode.NONE and resp["topic"] == "open"
    audit = Path(c.data_dir) / f"broker-{ctrl}" / "admin-audit.jsonl"
    [handled] = [e for e in map(json.loads, audit.read_text().splitlines())
                 if e["event"] == "handled"]
    assert (handled["forwarded_by"], handled["user"], handled["client_id"]) == (other, "dave", "cli")
    assert handled["forward_id"] and handled["original_version"] == 0
    zk.stop()
