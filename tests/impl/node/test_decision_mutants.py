"""Rule tests written from the survivors of `bench/mutation.py`: each pins a
boundary or a branch of a decision function that a one-token change broke without any test
noticing (docs/benchmarks.md, "Mutation testing", lists the survivors and why)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from impl.node import limits
from impl.node.auth.credentials import Principal
from impl.node.auth.rules import Refusal, authorize
from impl.node.controller.broker_failure import Decision, broker_change_choice
from impl.node.controller.context import ControllerContext
from impl.node.controller.preferred_election import preferred_choice
from impl.node.controller.reassignment import reassignment_switch
from impl.node.controller.shutdown import shutdown_choice
from impl.node.fencing import (
    Verdict,
    epoch_lookup_refusal,
    fetch_refusal,
    leader_and_isr_verdict,
)
from impl.node.log import UNDEFINED_EPOCH, LeaderEpochCache, PartitionLog
from impl.node.producer_state import (
    NO_PRODUCER,
    PRODUCER_ID_BLOCK_PATH,
    RUNS_KEPT,
    Check,
    ProducerStateTable,
    classify,
    next_block,
)
from impl.node.producer_state import Verdict as Sequence
from impl.node.quota import EPSILON, TokenBucket
from impl.node.replica import PartitionState, Replica, follower_out_of_sync
from impl.node.truncation import epoch_truncation_point, normalise_rule, truncate_round
from impl.node.wire import ApiKey, ErrorCode
from impl.node.zk import LeaderAndIsr
from traces.recorder import TraceRecorder


def _replica(tmp_path: Path, broker: int = 1) -> Replica:
    log = PartitionLog.open(tmp_path / "t-0")
    return Replica("t", 0, broker, log, TraceRecorder(tmp_path / "trace.jsonl", "run", broker))


def _state(leader: int, epoch: int, zk_version: int) -> PartitionState:
    return PartitionState("t", 0, leader, epoch, [0, 1], [0, 1, 2], zk_version, 1, 0)


# -- election: on_broker_change and controlled shutdown (seed 000 A) ------------------------------
def test_nothing_is_decided_while_the_leader_and_exactly_the_isr_live() -> None:
    assert broker_change_choice([1, 2, 3], LeaderAndIsr(1, 4, (1, 2), 1), {1, 2}, False) is None


def test_a_live_isr_leader_that_is_shutting_down_stays_when_another_isr_member_dies() -> None:
    """It could not leave: excluding it would leave the partition without a leader."""
    d = broker_change_choice([1, 2, 3], LeaderAndIsr(1, 4, (1, 2), 1), {1, 3}, False,
                             shutting_down=frozenset({1}))
    assert d == Decision(1, (1,))


def test_a_new_leader_is_never_a_broker_shutting_down() -> None:
    d = broker_change_choice([1, 2, 3], LeaderAndIsr(1, 4, (1, 2, 3), 1), {2, 3}, False,
                             shutting_down=frozenset({2}))
    assert d == Decision(3, (3,))


def test_a_shutdown_moves_nothing_for_a_broker_outside_the_isr() -> None:
    assert shutdown_choice(3, [1, 2, 3], LeaderAndIsr(1, 4, (1, 2), 1), {1, 2, 3},
                           frozenset({3})) is None


def test_a_shutdown_never_elects_uncleanly() -> None:
    """The only other ISR member is dead: the shutting-down leader stays (no decision),
    even though live broker 2 is assigned."""
    assert shutdown_choice(3, [1, 2, 3], LeaderAndIsr(3, 4, (1, 3), 1), {2, 3},
                           frozenset({3})) is None


def test_a_shutdown_excludes_the_broker_itself_even_if_not_listed_as_shutting_down() -> None:
    d = shutdown_choice(3, [1, 2, 3], LeaderAndIsr(3, 4, (1, 3), 1), {1, 2, 3}, frozenset())
    assert d == Decision(1, (1,))


def test_the_electable_brokers_are_the_live_ones_less_those_shutting_down() -> None:
    """The candidate set of the preferred and reassignment elections (Kafka's live replicas
    without the brokers shutting down); a shutting-down broker that is not live adds none."""
    context = SimpleNamespace(live={1: ("h", 1, 7), 2: ("h", 2, 8), 3: ("h", 3, 9)}, shutting_down={2, 4})
    assert ControllerContext._electable(context) == {1, 3}  # type: ignore[arg-type]


def test_a_preferred_replica_outside_the_electable_brokers_does_not_lead() -> None:
    current = LeaderAndIsr(2, 4, (1, 2), 1)
    assert preferred_choice([1, 2], current, {2}) is None
    assert preferred_choice([1, 2], current, {1, 2}) == Decision(1, (1, 2))


def test_a_reassignment_switch_elects_the_first_electable_rar_member_in_the_isr() -> None:
    """The leader (0) leaves; RAR's first member (1) is in the ISR but not electable."""
    current = LeaderAndIsr(0, 4, (0, 1, 2), 1)
    assert reassignment_switch([1, 2], current, {0, 2}) == Decision(2, (1, 2))
    assert reassignment_switch([1, 2], current, {0, 1, 2}) == Decision(1, (1, 2))


def test_a_reassignment_switch_moves_the_lead_off_a_leader_that_is_not_electable() -> None:
    current = LeaderAndIsr(1, 4, (1, 2), 1)
    assert reassignment_switch([1, 2], current, {2}) == Decision(2, (1, 2))
    assert reassignment_switch([1, 2], current, {1}) == Decision(1, (1, 2))
    assert reassignment_switch([1, 2], current, set()) is None


# -- fencing (KIP-320) ---------------------------------------------------------------------------
def test_a_fetch_in_epoch_zero_is_fenced_by_a_leader_in_epoch_one(tmp_path: Path) -> None:
    r = _replica(tmp_path)
    r.become_leader(_state(1, 1, 0))
    assert fetch_refusal(r, 0, 0, 0, follower=0) == (ErrorCode.FENCED_LEADER_EPOCH, {"leader_epoch": 1})


def test_a_fetch_from_a_newer_epoch_is_unknown_to_the_leader(tmp_path: Path) -> None:
    r = _replica(tmp_path)
    r.become_leader(_state(1, 1, 0))
    assert fetch_refusal(r, 0, 2, 0, follower=0) == (ErrorCode.UNKNOWN_LEADER_EPOCH, {"leader_epoch": 1})
    assert epoch_lookup_refusal(r, 2, 0) == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert epoch_lookup_refusal(r, 0, 0) == ErrorCode.FENCED_LEADER_EPOCH


def test_a_fetch_past_the_log_end_names_the_leaders_leo_hw_and_log_start(tmp_path: Path) -> None:
    r = _replica(tmp_path)
    r.become_leader(_state(1, 1, 0))
    r.append(b"a")
    assert fetch_refusal(r, r.leo + 1, 1, 0, follower=0) == (
        ErrorCode.OFFSET_OUT_OF_RANGE, {"leo": r.leo, "hw": r.hw, "log_start_offset": r.log.log_start_offset})


def test_a_stepped_down_replica_refuses_every_write_of_its_own_epoch_and_takes_the_next(tmp_path: Path) -> None:
    r = _replica(tmp_path)
    r.become_leader(_state(1, 1, 3))
    r.step_down()
    for zk_version in (2, 3, 4):
        assert leader_and_isr_verdict(r, _state(1, 1, zk_version)) == Verdict.REFUSE
    assert leader_and_isr_verdict(r, _state(1, 2, 4)) == Verdict.APPLY


# -- ISR shrink (seed 000 G) -----------------------------------------------------------------------
def test_a_follower_exactly_at_the_lag_limits_is_still_in_sync() -> None:
    assert not follower_out_of_sync(5, 10, 2.0, 2.0, 5)


def test_a_follower_that_has_not_fetched_is_out_of_sync_only_by_time() -> None:
    assert not follower_out_of_sync(None, 10, 0.0, 2.0, 5)
    assert follower_out_of_sync(None, 10, 2.5, 2.0, 5)


def test_a_follower_too_many_messages_behind_is_out_of_sync_at_once() -> None:
    assert follower_out_of_sync(2, 10, 0.0, 2.0, 5)


# -- truncation after an epoch lookup (KIP-101/279) -------------------------------------------------
def test_a_follower_without_epochs_truncates_to_the_smaller_end() -> None:
    cache = LeaderEpochCache()
    assert epoch_truncation_point(cache, 5, UNDEFINED_EPOCH, 2, 3) == 3
    assert epoch_truncation_point(cache, 3, UNDEFINED_EPOCH, 2, 5) == 3
    assert epoch_truncation_point(cache, 0, UNDEFINED_EPOCH, 2, -1) == 0


def test_a_leader_without_the_epoch_bounds_the_truncation_by_its_end_offset() -> None:
    cache = LeaderEpochCache()
    assert epoch_truncation_point(cache, 5, 2, UNDEFINED_EPOCH, 3) == 3
    assert epoch_truncation_point(cache, 5, 2, UNDEFINED_EPOCH, -1) == 0


def test_an_unknown_truncation_rule_is_refused_naming_the_choices() -> None:
    with pytest.raises(ValueError,
                       match=r"^unknown truncation rule 'kip102' \(choose from hw, kip101, kip279, kip320\)$"):
        normalise_rule("kip102")


# -- limits (KIP-74) -------------------------------------------------------------------------------
def test_a_record_costs_its_value_plus_the_overhead() -> None:
    assert limits.record_size(b"ab") == 2 + limits.RECORD_OVERHEAD


@pytest.mark.parametrize("sizes", [(1, 0, 1), (1, 1, 0), (0, 1, 1)])
def test_every_fetch_limit_must_be_positive(sizes: tuple[int, int, int]) -> None:
    """The one-line error names the three limits (it reaches the user as it is)."""
    with pytest.raises(ValueError, match="^max_message_bytes, fetch_max_bytes and "
                                         "fetch_partition_max_bytes must be positive$"):
        limits.check(1 << 30, *sizes)


def test_limits_of_one_byte_and_a_response_that_exactly_fills_the_frame_are_accepted() -> None:
    limits.check(1 << 30, 1, 1, 1)
    exact = limits.RECORD_OVERHEAD + 1000 + limits.FRAME_HEADROOM
    limits.check(exact, 1000, 10, 10)
    with pytest.raises(ValueError):
        limits.check(exact - 1, 1000, 10, 10)


# -- the quota token bucket (seed 001) ---------------------------------------------------------------
@pytest.mark.parametrize("rate, burst", [(0, 5), (5, 0), (0, 0)])
def test_a_bucket_needs_a_positive_rate_and_burst(rate: float, burst: float) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        TokenBucket(rate, burst, 0.0)


def test_the_burst_is_quota_times_samples_times_window() -> None:
    assert TokenBucket.from_quota(2.0, 0.0, samples=11, window_s=2.0).burst == 44.0


def test_a_deficit_within_the_float_tolerance_neither_throttles_nor_refuses() -> None:
    b = TokenBucket(1.0, 5.0, 0.0)
    b.tokens = -EPSILON
    assert b.throttle_ms(0.0) == 0
    assert b.try_admit(1, 0.0) == 0
    assert b.tokens == pytest.approx(-1.0 - EPSILON)


def test_the_smallest_deficit_throttles_for_one_millisecond() -> None:
    b = TokenBucket(1000.0, 5.0, 0.0)
    b.tokens = -0.5
    assert b.throttle_ms(0.0) == 1


# -- truncation: KIP-101 as first shipped, one round ------------------------------------------------
def test_a_kip101_round_takes_the_leaders_end_offset_as_is_where_kip320_looks_up_its_own(
        tmp_path: Path) -> None:
    """KIP-279's divergence: the follower asked for epoch 2, the leader has only epoch 0, which
    ends at 2 there but at 1 here.  ``kip101`` cuts to 2 and keeps its epoch-2 record at
    offset 1 (what that configuration loses); ``kip320`` also looks up where epoch 0 ends in
    its own log and cuts to 1.  Both are complete in one round."""
    logs = []
    for name in ("kip101", "kip320"):
        log = PartitionLog.open(tmp_path / name)
        for epoch in (0, 2, 2, 2):
            log.append(epoch, b"v")
        logs.append(log)
    assert truncate_round(logs[0], 2, 0, 2, rule="kip101") == (2, True)
    assert [(r.offset, r.leader_epoch) for r in logs[0].records] == [(0, 0), (1, 2)]
    assert truncate_round(logs[1], 2, 0, 2, rule="kip320") == (1, True)
    assert [(r.offset, r.leader_epoch) for r in logs[1].records] == [(0, 0)]


# -- authorization: a body names only the identity its connection authenticated as --------------
BROKER0, BROKER1, ALICE = (Principal(n) for n in ("broker-0", "broker-1", "alice"))
CLAIMS = [(ApiKey.LEADER_AND_ISR, "controller_id"), (ApiKey.CONTROLLED_SHUTDOWN, "broker_id"),
          (ApiKey.FETCH, "replica_id"), (ApiKey.OFFSETS_FOR_LEADER_EPOCH, "replica_id"),
          (ApiKey.ENVELOPE, "forwarded_by")]


def _reason(verdict: object) -> str:
    """A refusal's reason, which the broker logs as it is; fails if the body was accepted."""
    assert isinstance(verdict, Refusal), verdict
    assert verdict.code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return verdict.reason


@pytest.mark.parametrize("api, field", CLAIMS)
def test_a_refused_claim_names_who_sent_it_the_field_and_the_id_it_claimed(api: ApiKey,
                                                                            field: str) -> None:
    assert _reason(authorize(BROKER1, api, {field: 0})) == \
        f"User:broker-1 may not send a request with {field}=0"
    assert _reason(authorize(ALICE, api, {field: 1})) == \
        f"User:alice may not send a request with {field}=1"


@pytest.mark.parametrize("api, field", CLAIMS)
def test_a_claim_that_is_no_broker_id_is_refused_naming_the_field_and_the_value(api: ApiKey,
                                                                                 field: str) -> None:
    assert _reason(authorize(BROKER0, api, {field: "0; drop"})) == \
        f"{field} '0; drop' is not a broker id"


def test_a_clients_quota_change_is_refused_naming_the_client() -> None:
    body = {"entries": [{"user": "alice", "client_id": None, "rate": 1e9}]}
    assert _reason(authorize(ALICE, ApiKey.ALTER_CLIENT_QUOTAS, body)) == \
        "User:alice may not alter quotas (the operator may)"


def test_a_client_acting_as_another_user_is_refused_naming_both() -> None:
    body = {"topics": [{"topic": "t", "partitions": 1}], "user": "bob"}
    assert _reason(authorize(ALICE, ApiKey.CREATE_TOPICS, body)) == \
        "User:alice may not act as user 'bob'"


@pytest.mark.parametrize("api", [ApiKey.FETCH, ApiKey.OFFSETS_FOR_LEADER_EPOCH])
@pytest.mark.parametrize("replica_id", [0, 2])
def test_a_fetch_or_epoch_lookup_naming_any_broker_id_is_a_followers(api: ApiKey,
                                                                      replica_id: int) -> None:
    """Broker 0 is a broker like any other, and a fetch is a replica fetch by its
    ``replica_id`` alone, without ``partitions``: only that broker may send it."""
    body = {"topic": "t", "partition": 0, "fetch_offset": 0, "leader_epoch": 1,
            "replica_id": replica_id}
    assert _reason(authorize(ALICE, api, body)) == \
        f"User:alice may not send a request with replica_id={replica_id}"
    assert authorize(Principal(f"broker-{replica_id}"), api, body) == body


@pytest.mark.parametrize("api", [ApiKey.FETCH, ApiKey.OFFSETS_FOR_LEADER_EPOCH])
def test_a_consumers_fetch_or_epoch_lookup_names_no_replica_and_anyone_may_send_it(
        api: ApiKey) -> None:
    """A consumer's body has no ``replica_id`` or -1 (KIP-320: a consumer looks up epochs
    too, to validate its position)."""
    body = {"topic": "t", "partition": 0, "fetch_offset": 0, "leader_epoch": 1}
    assert authorize(ALICE, api, body) == body
    assert authorize(ALICE, api, {**body, "replica_id": -1}) == {**body, "replica_id": -1}


def test_a_malformed_replica_id_in_a_fetch_is_checked_as_a_claim_and_refused() -> None:
    body = {"topic": "t", "partition": 0, "fetch_offset": 0, "replica_id": "x"}
    assert _reason(authorize(ALICE, ApiKey.FETCH, body)) == "replica_id 'x' is not a broker id"


# -- the idempotent producer (KIP-98) ----------------------------------------------------------------
def test_every_sequence_verdict_carries_the_producers_last_sequence() -> None:
    """The broker's OUT_OF_ORDER and DUPLICATE errors name it (impl/node/broker/producers.py)."""
    assert classify(4, 7, 1, None) == Check(Sequence.OUT_OF_ORDER, None, 4)
    assert classify(4, -1, 1, 10) == Check(Sequence.OUT_OF_ORDER, None, 4)
    assert classify(4, 3, 2, 10) == Check(Sequence.DUPLICATE, 10, 4)
    assert classify(4, 5, 2, None) == Check(Sequence.APPEND, None, 4, 0)
    assert classify(4, 3, 4, 9) == Check(Sequence.APPEND, 9, 4, 2)


def test_an_unknown_producer_starts_at_sequence_zero_with_no_last_sequence() -> None:
    table = ProducerStateTable()
    assert table.check(7, 0, 3) == Check(Sequence.APPEND, None, -1, 0)
    assert table.check(7, 1, 1) == Check(Sequence.OUT_OF_ORDER, None, -1)
    assert table.last_sequence(7) == -1


def test_records_without_a_producer_or_a_sequence_are_not_tracked() -> None:
    table = ProducerStateTable()
    table.record(NO_PRODUCER, 3, 0)
    table.record(7, -1, 1)
    assert table.entries == {}


def test_sequence_zero_is_remembered_where_it_was_appended() -> None:
    table = ProducerStateTable()
    table.record(7, 0, 5)
    assert table.check(7, 0, 1) == Check(Sequence.DUPLICATE, 5, 0)


def test_consecutive_records_at_consecutive_offsets_are_one_run_however_many() -> None:
    """Runs, not records, are what is kept (the last RUNS_KEPT): a retry of a long batch
    that started at sequence 3 is still located at its first offset."""
    n = 4 * RUNS_KEPT
    table = ProducerStateTable()
    for i in range(n):
        table.record(7, 3 + i, 100 + i)
    assert len(table.entries[7].runs) == 1
    assert table.check(7, 3, n) == Check(Sequence.DUPLICATE, 100, 3 + n - 1)


def test_a_producer_id_block_znode_is_canonical_json_naming_the_block_and_its_broker() -> None:
    """Sorted keys: the data written is a function of the block and the broker alone."""
    assert next_block(None, 2) == (
        0, 999, b'{"block_end": 999, "block_start": 0, "broker": 2, "version": 1}')


def test_a_znode_that_is_no_producer_id_block_is_refused_naming_it_and_its_first_80_bytes() -> None:
    junk = b"{" + b"x" * 200
    with pytest.raises(ValueError) as refused:
        next_block(junk, 0)
    assert str(refused.value) == \
        f"{PRODUCER_ID_BLOCK_PATH} is not a producer id block: {junk[:80]!r}"


class _Txn:
    """A ZooKeeper multi that records its items and answers with the results given."""

    def __init__(self, results: list[object]) -> None:
        self.results, self.checks = results, []

    def check(self, path: str, version: int) -> None:
        self.checks.append((path, version))

    def commit(self) -> list[object]:
        return self.results


def test_every_controller_write_is_fenced_by_the_controller_epoch_znodes_version() -> None:
    from impl.node import zk as zkl

    txn = _Txn([])
    context = SimpleNamespace(zk=SimpleNamespace(transaction=lambda: txn), epoch_version=7)
    assert ControllerContext._txn(context) is txn  # type: ignore[arg-type]
    assert txn.checks == [(zkl.CONTROLLER_EPOCH, 7)]


def test_a_failed_epoch_check_is_a_moved_controller_and_another_failed_item_a_failed_write() -> None:
    from kazoo.exceptions import BadVersionError, NoNodeError

    from impl.node import zk as zkl
    from impl.node.controller.context import ControllerMoved

    ok = object()
    for first in (BadVersionError(), NoNodeError()):
        with pytest.raises(ControllerMoved):
            ControllerContext._commit(None, _Txn([first, ok]))  # type: ignore[arg-type]
    stale = BadVersionError()
    with pytest.raises(zkl.TransactionFailed) as failed:
        ControllerContext._commit(None, _Txn([ok, stale]))  # type: ignore[arg-type]
    assert failed.value.errors == [stale]
    assert ControllerContext._commit(None, _Txn([ok, ok])) == [ok, ok]  # type: ignore[arg-type]
    assert ControllerContext._commit(None, _Txn([])) == []  # type: ignore[arg-type]
