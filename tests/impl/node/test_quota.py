"""The controller-mutation quota's token bucket and quota manager (seed 001, KIP-599), with
an injected clock: no cluster, no sleeping."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from impl.node.quota import (
    DEFAULT,
    ControllerMutationQuotaManager,
    TokenBucket,
    entity_path,
    validate_entity_name,
)
from properties.checkers.fuzz import PROFILES


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_bucket_matches_seed_001_worked_example():
    """R = 5, B = 500; 7 topics x 80 partitions = 560 mutations -> K = -60, throttle 12 s."""
    bucket = TokenBucket.from_quota(5, now=0.0, samples=100, window_s=1.0)
    assert (bucket.rate, bucket.burst) == (5.0, 500.0)
    assert bucket.try_admit(560, now=0.0) == 0  # K >= 0: admitted although it goes negative
    assert bucket.tokens == -60
    assert bucket.throttle_ms(0.0) == 12_000
    assert bucket.try_admit(1, now=0.0) == 12_000  # rejected, nothing charged
    assert bucket.tokens == -60
    assert bucket.try_admit(1, now=11.9) > 0
    assert bucket.try_admit(1, now=12.0) == 0  # back at K = 0: admitted


def test_bucket_defaults_are_eleven_one_second_samples():
    bucket = TokenBucket.from_quota(5, now=0.0)
    assert bucket.burst == 55.0


def test_bucket_refill_is_capped_at_the_burst():
    bucket = TokenBucket(rate=5, burst=50, now=0.0)
    bucket.try_admit(50, 0.0)
    assert bucket.refill(1000.0) == 50


def test_old_clients_are_always_admitted_and_told_the_throttle():
    bucket = TokenBucket(rate=5, burst=50, now=0.0)
    assert bucket.record(40, 0.0) == 0
    assert bucket.record(40, 0.0) == 6_000  # K = -30 -> 6 s
    assert bucket.record(5, 0.0) == 7_000  # still admitted, debt grows


# over any interval t: admitted <= B + R*t + largest single request
requests = st.lists(st.tuples(st.floats(0, 5, allow_nan=False), st.integers(1, 120)),
                    min_size=1, max_size=60)


def _check_bound(admitted: list[tuple[float, int]], rate: float, burst: float) -> None:
    largest = max((n for _, n in admitted), default=0)
    for i, (t1, _) in enumerate(admitted):
        total = 0
        for t2, n in admitted[i:]:
            total += n
            assert total <= burst + rate * (t2 - t1) + largest + 1e-6, (t1, t2, total)


@settings(PROFILES["ci"], max_examples=300)
@given(requests, st.floats(0.5, 20), st.integers(1, 30))
def test_admitted_mutations_never_exceed_burst_plus_rate_plus_one_request(
        schedule: list[tuple[float, int]], rate: float, samples: int) -> None:
    bucket = TokenBucket.from_quota(rate, now=0.0, samples=samples)
    now, admitted = 0.0, []
    for gap, n in schedule:
        now += gap
        if bucket.try_admit(n, now) == 0:
            admitted.append((now, n))
    _check_bound(admitted, bucket.rate, bucket.burst)


@settings(PROFILES["ci"], max_examples=300)
@given(requests, st.floats(0.5, 20), st.integers(1, 30))
def test_old_clients_muted_for_their_throttle_time_obey_the_same_bound(
        schedule: list[tuple[float, int]], rate: float, samples: int) -> None:
    """Old clients are always admitted; the broker mutes their connection for the throttle
    time, so the next request is read no earlier -- and the bound holds again."""
    bucket = TokenBucket.from_quota(rate, now=0.0, samples=samples)
    now, muted_until, admitted = 0.0, 0.0, []
    for gap, n in schedule:
        now = max(now + gap, muted_until)
        throttle = bucket.record(n, now)
        admitted.append((now, n))
        muted_until = now + throttle / 1000
    _check_bound(admitted, bucket.rate, bucket.burst)


# -- the manager: precedence, sharing, exemptions, metrics --------------------------------------

def test_quota_resolution_follows_kafka_precedence():
    m = ControllerMutationQuotaManager(FakeClock())
    levels = [((None, DEFAULT), 8.0), ((None, "c"), 7.0), ((DEFAULT, None), 6.0),
              ((DEFAULT, DEFAULT), 5.0), ((DEFAULT, "c"), 4.0), (("u", None), 3.0),
              (("u", DEFAULT), 2.0), (("u", "c"), 1.0)]
    for entity, rate in levels:  # each more specific level added on top must win
        m.set_quota(entity, rate)
        found = m.resolve("u", "c")
        assert found is not None and found[1] == rate, entity
    # another principal: (<default>, <default>) is the most specific entry that matches it
    assert m.resolve("other", "x") == (("other", "x"), 5.0)
    m.set_quota((DEFAULT, DEFAULT), None)
    assert m.resolve("other", "x") == (("other", None), 6.0)  # user=<default> beats client-id
    m.set_quota((DEFAULT, None), None)
    assert m.resolve("other", "c") == (("other", "c"), 4.0)  # user=<default>, client-id=c
    assert m.resolve("other", "y") == ((None, "y"), 8.0)


def test_no_quota_means_unlimited():
    m = ControllerMutationQuotaManager(FakeClock())
    assert m.check("u", "c", 10**6, strict=True) == 0


def test_a_user_quota_is_one_bucket_for_all_its_clients_but_defaults_are_per_principal():
    clock = FakeClock()
    m = ControllerMutationQuotaManager(clock, samples=2)
    m.set_quota(("alice", None), 5)  # burst 10, shared by all of alice's client ids
    m.set_quota((DEFAULT, None), 5)  # each other user: its own burst of 10
    assert m.check("alice", "a", 10, strict=True) == 0
    assert m.check("alice", "b", 1, strict=True) == 0  # K was 0: admitted, now -1
    assert m.check("alice", "b", 1, strict=True) == 200
    assert m.check("bob", "a", 10, strict=True) == 0
    assert m.check("carol", "a", 10, strict=True) == 0


def test_validate_only_zero_mutations_are_exempt():
    m = ControllerMutationQuotaManager(FakeClock(), samples=1)
    m.set_quota(("u", None), 1)
    assert m.check("u", "c", 5, strict=True) == 0
    assert m.check("u", "c", 0, strict=True) == 0  # validate-only: not even checked


def test_metrics_report_rate_tokens_and_throttle_time_per_principal():
    clock = FakeClock()
    m = ControllerMutationQuotaManager(clock, samples=10)
    m.set_quota(("u", "c"), 5)  # burst 50
    assert m.check("u", "c", 60, strict=True) == 0
    assert m.check("u", "c", 1, strict=True) == 2000
    metrics = m.describe_metrics()["user=u,client-id=c"]
    assert metrics["tokens"] == -10
    assert metrics["rate"] == 6.0  # 60 admitted over the 10 s horizon
    assert metrics["throttle-time"] == 2000


def test_altering_another_entity_keeps_a_principals_debt():
    clock = FakeClock()
    m = ControllerMutationQuotaManager(clock, samples=1)
    m.set_quota(("u", None), 5)
    m.check("u", "c", 20, strict=True)
    m.set_quota(("v", None), 5)
    assert m.check("u", "c", 1, strict=True) > 0
    m.set_quota(("u", None), 50)  # the principal's own quota changed: new bucket
    assert m.check("u", "c", 1, strict=True) == 0


def test_quota_znode_paths_and_invalid_names():
    assert entity_path("/q", ("u", "c")) == "/q/users/u/clients/c"
    assert entity_path("/q", (DEFAULT, None)) == "/q/users/<default>"
    assert entity_path("/q", (None, "c")) == "/q/clients/c"
    with pytest.raises(ValueError):
        entity_path("/q", (None, None))
    for bad in ("", "a/b", ".."):
        with pytest.raises(ValueError):
            validate_entity_name(bad, "user")
