"""The authentication rules without processes: who may send what, the SCRAM
exchange both ways, the cluster secret's file, the connection limiter and the log that
cannot flood.  tests/impl/node/test_security.py runs the same rules on a real cluster."""

from __future__ import annotations

import io
import os
import stat

import pytest

from impl.node.auth.connections import ConnectionLimiter, RateLimitedLog
from impl.node.auth.credentials import ClusterSecret, Credentials, Keyring, Kind, Principal
from impl.node.auth.rules import Refusal, authorize
from impl.node.auth.scram import AuthenticationFailed, Verifier, client_exchange
from impl.node.wire import ApiKey, ErrorCode

OPERATOR, BROKER0, BROKER1, ALICE = (Principal(n) for n in ("operator", "broker-0", "broker-1", "alice"))
CONTROL = {"controller_id": 0, "controller_epoch": 3, "max_broker_epoch": 10, "partitions": []}


def refused(verdict: object) -> bool:
    return isinstance(verdict, Refusal) and verdict.code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED


def test_principal_kinds_come_from_the_authenticated_name():
    assert (OPERATOR.kind, BROKER1.kind, ALICE.kind) == (Kind.OPERATOR, Kind.BROKER, Kind.CLIENT)
    assert BROKER1.broker_id == 1 and Principal("broker-x").kind is Kind.CLIENT


@pytest.mark.parametrize("api", [ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA])
def test_a_control_request_is_accepted_only_from_the_controller_it_names(api):
    assert authorize(BROKER0, api, CONTROL) == CONTROL
    assert authorize(OPERATOR, api, CONTROL) == CONTROL
    assert refused(authorize(BROKER1, api, CONTROL))  # another broker naming the controller
    assert refused(authorize(ALICE, api, CONTROL))
    assert refused(authorize(BROKER0, api, {**CONTROL, "controller_id": "0; drop"}))


def test_a_replica_fetch_is_accepted_only_from_the_follower_it_names():
    fetch = {"replica_id": 1, "partitions": [{"topic": "t", "partition": 0, "fetch_offset": 9}]}
    assert authorize(BROKER1, ApiKey.FETCH, fetch) == fetch
    assert refused(authorize(BROKER0, ApiKey.FETCH, fetch))
    assert refused(authorize(ALICE, ApiKey.FETCH, fetch))
    # a body in a replica fetch's shape is one, whatever replica_id says
    assert refused(authorize(ALICE, ApiKey.FETCH, {"partitions": fetch["partitions"]}))
    lookup = {"topic": "t", "partition": 0, "leader_epoch": 2, "replica_id": 1}
    assert refused(authorize(ALICE, ApiKey.OFFSETS_FOR_LEADER_EPOCH, lookup))
    consumer = {"replica_id": -1, "topic": "t", "partition": 0, "fetch_offset": 0}
    assert authorize(ALICE, ApiKey.FETCH, consumer) == consumer


def test_a_controlled_shutdown_is_accepted_only_from_the_broker_stopping():
    body = {"broker_id": 1, "broker_epoch": 5}
    assert authorize(BROKER1, ApiKey.CONTROLLED_SHUTDOWN, body) == body
    assert refused(authorize(BROKER0, ApiKey.CONTROLLED_SHUTDOWN, body))


def test_the_admin_principal_is_the_authenticated_one():
    body = {"topics": [{"topic": "t", "partitions": 1}]}
    assert authorize(ALICE, ApiKey.CREATE_TOPICS, body) == {**body, "user": "alice"}
    assert authorize(ALICE, ApiKey.CREATE_TOPICS, {**body, "user": "alice"})["user"] == "alice"
    assert refused(authorize(ALICE, ApiKey.CREATE_TOPICS, {**body, "user": "bob"}))


def test_only_the_operator_and_brokers_alter_quotas():
    body = {"entries": [{"user": "alice", "client_id": None, "rate": 1e9}]}
    assert refused(authorize(ALICE, ApiKey.ALTER_CLIENT_QUOTAS, body))
    assert authorize(OPERATOR, ApiKey.ALTER_CLIENT_QUOTAS, body) == body
    assert authorize(ALICE, ApiKey.DESCRIBE_CLIENT_QUOTAS, {})["user"] == "alice"


def test_an_envelope_is_taken_only_from_the_broker_it_names_or_the_operator():
    """Only a broker forwards (Kafka's CLUSTER_ACTION), under its own id; the operator may."""
    envelope = {"request_data": b"", "request_principal": b"", "client_host_address": b""}
    assert authorize(BROKER1, ApiKey.ENVELOPE, envelope) == {**envelope, "forwarded_by": 1}
    assert authorize(BROKER1, ApiKey.ENVELOPE, {**envelope, "forwarded_by": 1})["forwarded_by"] == 1
    assert refused(authorize(BROKER0, ApiKey.ENVELOPE, {**envelope, "forwarded_by": 1}))
    assert refused(authorize(ALICE, ApiKey.ENVELOPE, envelope))
    assert refused(authorize(ALICE, ApiKey.ENVELOPE, {**envelope, "forwarded_by": 1}))
    assert authorize(OPERATOR, ApiKey.ENVELOPE, envelope) == {**envelope, "forwarded_by": None}


def test_a_request_claiming_to_be_forwarded_outside_an_envelope_is_refused():
    """Only an Envelope is handled as forwarded: the old body fields claim nothing now."""
    for claim in ({"forwarded_by": 1}, {"forward_id": "x"}, {"original_version": 0},
                  {"principal": {"user": "bob"}}):
        body = {"topics": [], **claim}
        assert refused(authorize(ALICE, ApiKey.CREATE_TOPICS, body)), claim
        assert refused(authorize(BROKER1, ApiKey.CREATE_TOPICS, body)), claim
        assert authorize(OPERATOR, ApiKey.CREATE_TOPICS, body) == body


def _exchange(verifier: Verifier, creds: Credentials) -> Principal | None:
    server = verifier.exchange()
    flow = client_exchange(creds)
    message = next(flow)
    while True:
        reply = server.step(message)
        try:
            message = flow.send(reply)
        except StopIteration:
            return server.principal


def test_scram_authenticates_a_user_whose_password_the_cluster_derived():
    secret = ClusterSecret(os.urandom(32))
    assert _exchange(Verifier(secret), secret.credentials("alice")) == ALICE


def test_scram_refuses_a_wrong_password_and_a_server_without_the_secret():
    secret, other = ClusterSecret(os.urandom(32)), ClusterSecret(os.urandom(32))
    with pytest.raises(AuthenticationFailed):
        _exchange(Verifier(secret), Credentials("alice", "guess"))
    with pytest.raises(AuthenticationFailed):  # the client checks the server's signature
        _exchange(Verifier(other), secret.credentials("alice"))
    with pytest.raises(AuthenticationFailed):  # a name we never accept
        _exchange(Verifier(secret), Credentials("a,b=c", secret.password("a,b=c")))


def test_the_cluster_secret_is_generated_once_and_readable_only_by_its_owner(tmp_path):
    first = ClusterSecret.ensure(tmp_path)
    path = ClusterSecret.path(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert ClusterSecret.ensure(tmp_path).password("x") == first.password("x")
    assert first.password("alice") != first.password("bob")
    assert Keyring("operator", first).credentials("bob") == first.credentials("bob")
    assert first.password("bob") not in repr(first.credentials("bob"))


def test_the_limiter_refuses_over_the_cap_and_keeps_a_reserve_for_brokers():
    lim = ConnectionLimiter(max_connections=10, max_per_address=10, broker_reserve=3)
    tickets = [lim.admit("127.0.0.1") for _ in range(12)]
    assert [t is None for t in tickets] == [False] * 10 + [True] * 2
    assert [t.probation for t in tickets[:10] if t] == [False] * 7 + [True] * 3
    assert lim.refused == 2
    lim.release(tickets[0])
    assert lim.admit("127.0.0.1") is not None and lim.open == 10


def test_the_log_prints_one_line_per_interval_and_counts_the_rest():
    out = io.StringIO()
    log = RateLimitedLog("broker 0", interval_s=60, out=out)
    printed = [log.log("connection_refused", f"n={i}") for i in range(1000)]
    assert printed.count(True) == 1 and log.counts["connection_refused"] == 1000
    assert out.getvalue().count("\n") == 1


def test_new_user_names_have_a_budget_but_brokers_and_the_operator_do_not():
    """Each new name costs the broker a PBKDF2: a peer cycling through names is held back."""
    secret = ClusterSecret(os.urandom(32))
    now = [100.0]
    verifier = Verifier(secret, clock=lambda: now[0])

    def accepted(user: str) -> bool:
        try:
            return _exchange(verifier, secret.credentials(user)) == Principal(user)
        except AuthenticationFailed:
            return False

    assert [accepted(f"user{i}") for i in range(22)] == [True] * 20 + [False] * 2
    assert accepted("broker-3") and accepted("operator")  # never held back
    assert accepted("user0")  # cached: no new derivation
    now[0] += 0.5  # half a second refills half the budget
    assert [accepted(f"later{i}") for i in range(12)] == [True] * 10 + [False] * 2
