"""The consumer group state machine (impl/node/groups.py): Kafka's classic protocol's
rebalances, generations and error codes, without a broker."""

from __future__ import annotations

from kio.schema.errors import ErrorCode as KafkaError

from impl.node import groups as gp
from impl.node.groups import Group, JoinRequest, Phase

SESSION_MS, REBALANCE_MS = 10_000, 30_000


def _request(member_id: str = "", protocols: tuple[tuple[str, bytes], ...] = (("range", b"r"),),
             v4: bool = False) -> JoinRequest:
    return JoinRequest(member_id, "client", "127.0.0.1", SESSION_MS, REBALANCE_MS, "consumer",
                       protocols, require_known_id=v4)


def _stable_pair() -> Group:
    """Members a (the leader) and b, generation 2, each assigned its share."""
    g, _ = gp.join(Group("g"), _request(), "a", 0)
    g, _ = gp.sync(g, "a", 1, {"a": b"all"}, 0)
    g, _ = gp.join(g, _request(), "b", 10)
    g, _ = gp.join(g, _request("a"), "unused", 20)
    assert g is not None
    g, _ = gp.sync(g, "a", 2, {"a": b"A", "b": b"B"}, 30)
    assert g is not None and g.phase is Phase.STABLE
    return g


def test_the_first_member_leads_and_its_assignment_answers_every_sync() -> None:
    g, answer = gp.join(Group("g"), _request(), "a", 0)
    assert answer is None and g.phase is Phase.COMPLETING_REBALANCE and g.generation == 1
    assert gp.join_answer(g, "a") == gp.JoinAnswer(0, "a", 1, "consumer", "range", "a",
                                                   (("a", b"r"),))
    g, waits = gp.join(g, _request(), "b", 5)  # b joins: a must join again
    assert waits is None and g.phase is Phase.PREPARING_REBALANCE
    assert gp.join_answer(g, "b") is None
    g, _ = gp.join(g, _request("a"), "unused", 6)
    assert g is not None and g.generation == 2 and g.leader == "a"
    assert gp.join_answer(g, "a").members == (("a", b"r"), ("b", b"r"))  # type: ignore[union-attr]
    assert gp.join_answer(g, "b").members == ()  # type: ignore[union-attr]
    # the follower's sync waits for the leader's
    g, refused = gp.sync(g, "b", 2, {}, 7)
    assert refused is None and gp.sync_answer(g, "b", 2) is None
    g, refused = gp.sync(g, "a", 2, {"a": b"A", "b": b"B"}, 8)
    assert refused is None and g is not None and g.phase is Phase.STABLE
    assert gp.sync_answer(g, "a", 2) == (0, b"A") and gp.sync_answer(g, "b", 2) == (0, b"B")


def test_kafka_error_codes_for_unknown_members_old_generations_and_rebalances() -> None:
    g = _stable_pair()
    assert gp.heartbeat(g, "x", 2, 40)[1] == KafkaError.unknown_member_id
    assert gp.heartbeat(g, "b", 1, 40)[1] == KafkaError.illegal_generation
    assert gp.heartbeat(g, "b", 2, 40)[1] == KafkaError.none
    g, _ = gp.join(g, _request(), "c", 50)
    assert g.phase is Phase.PREPARING_REBALANCE
    assert gp.heartbeat(g, "b", 2, 60)[1] == KafkaError.rebalance_in_progress
    assert gp.sync(g, "b", 2, {}, 60)[1] == KafkaError.rebalance_in_progress
    assert gp.commit_check(g, "b", 2) == KafkaError.none  # commit before rejoining: kept
    assert gp.commit_check(g, "", -1) == KafkaError.unknown_member_id  # the group has members
    assert gp.commit_check(None, "", -1) == KafkaError.none  # an assigning consumer's commit
    assert gp.join(g, _request("nobody"), "d", 60)[1] == gp.JoinAnswer(
        KafkaError.unknown_member_id, "nobody")


def test_join_v4_needs_the_member_id_it_was_given_which_expires_unused() -> None:
    g, answer = gp.join(Group("g"), _request(v4=True), "m1", 0)
    assert answer == gp.JoinAnswer(KafkaError.member_id_required, "m1") and not g.members
    g2, answer = gp.join(g, _request("m1", v4=True), "m2", 1)
    assert answer is None and g2.leader == "m1" and g2.pending == ()
    late, answer = gp.join(g, _request("m1", v4=True), "m3", SESSION_MS + 1)
    assert answer == gp.JoinAnswer(KafkaError.unknown_member_id, "m1")


def test_a_member_that_does_not_rejoin_is_dropped_at_the_rebalance_deadline() -> None:
    g = _stable_pair()
    g, _ = gp.join(g, _request("b"), "unused", 100)  # a rebalance: a never joins again,
    for t in range(100, 100 + REBALANCE_MS, SESSION_MS // 2):  # but its heartbeats keep it in
        g, code = gp.heartbeat(g, "a", 2, t)
        assert g is not None and code == KafkaError.rebalance_in_progress
        g = gp.expire(g, t)
    assert gp.expire(g, 100 + REBALANCE_MS - 1).phase is Phase.PREPARING_REBALANCE
    done = gp.expire(g, 100 + REBALANCE_MS)
    assert done.phase is Phase.COMPLETING_REBALANCE and done.generation == 3
    assert [m.member_id for m in done.members] == ["b"] and done.leader == "b"


def test_a_silent_member_times_out_and_the_last_to_leave_empties_the_group() -> None:
    g = _stable_pair()
    g, _ = gp.heartbeat(g, "a", 2, SESSION_MS)
    assert g is not None
    g = gp.expire(g, SESSION_MS + 31)  # b silent since 30
    assert g.phase is Phase.PREPARING_REBALANCE and [m.member_id for m in g.members] == ["a"]
    g, code = gp.leave(g, "a", SESSION_MS + 40)
    assert code == KafkaError.none and g is not None and g.phase is Phase.EMPTY and not g.members
    assert gp.leave(g, "a", SESSION_MS + 41)[1] == KafkaError.unknown_member_id


def test_the_protocol_is_voted_and_a_member_with_none_in_common_is_refused() -> None:
    both = (("roundrobin", b"x"), ("range", b"y"))
    g, _ = gp.join(Group("g"), _request(protocols=(("range", b"1"), ("roundrobin", b"2"))), "a", 0)
    g, _ = gp.join(g, _request(protocols=both), "b", 1)
    g, _ = gp.join(g, _request(protocols=both), "c", 2)
    g, _ = gp.join(g, _request("a", protocols=(("range", b"1"), ("roundrobin", b"2"))), "-", 3)
    assert g.protocol == "roundrobin"  # two votes to one
    assert gp.join_answer(g, "a").members[1] == ("b", b"x")  # type: ignore[union-attr]
    _, refused = gp.join(g, _request(protocols=(("sticky", b""),)), "d", 4)
    assert refused is not None and refused.error == KafkaError.inconsistent_group_protocol
    short = JoinRequest("", "c", "h", 10, REBALANCE_MS, "consumer", both, False)
    assert gp.join(g, short, "e", 5)[1].error == KafkaError.invalid_session_timeout  # type: ignore[union-attr]


def test_the_coordinator_is_one_live_broker_by_the_group_id_and_ids_are_path_components() -> None:
    assert gp.coordinator("g", []) == -1
    chosen = {gp.coordinator(f"group-{i}", [3, 1, 2]) for i in range(30)}
    assert chosen == {1, 2, 3}  # spread over the brokers
    assert gp.coordinator("group-7", [1, 2, 3]) == gp.coordinator("group-7", [3, 2, 1])
    for bad in ("", ".", "..", "a/b", "a\nb", "x" * 250):
        assert not gp.valid_group_id(bad)
    assert gp.valid_group_id("my-group.1")
