"""Kafka's history, replayed: each known scenario breaks the configuration it was found in
and is stopped by the fix that answered it."""

from __future__ import annotations

import pytest

from model.config import named
from model.scenarios import play


def names(outcome):
    return {name for name, _ in outcome.violations}


def test_kafka_1211_design_truncation_to_hw_loses_a_committed_record():
    out = play("kafka_1211", named("design"))
    assert {"committed_durable", "acked_durable"} <= names(out)


@pytest.mark.parametrize("fix", ["kip101", "kip279", "kip320"])
def test_kafka_1211_is_fixed_by_epoch_based_truncation(fix):
    out = play("kafka_1211", named(fix))
    assert not out.violations


def test_kip101_diverges_after_fast_leader_changes():
    out = play("kip279_divergence", named("kip101", brokers=3))
    assert names(out) == {"replicas_consistent"}
    assert len(out.steps) == 19


@pytest.mark.parametrize("fix", ["kip279", "kip320"])
def test_kip279_epoch_lookup_prevents_that_divergence(fix):
    out = play("kip279_divergence", named(fix, brokers=3))
    assert not out.violations


def test_kip279_leader_advances_hw_on_a_follower_still_in_an_older_epoch():
    out = play("kip320_stale_fetch", named("kip279", brokers=3))
    assert "replicas_consistent" in names(out)
    assert "HW 0 → 1" in out.steps[-2][1] and "(epoch 1)" in out.steps[-2][1]


def test_kip320_fenced_fetching_refuses_the_stale_fetch():
    out = play("kip320_stale_fetch", named("kip320", brokers=3))
    assert not out.violations
    assert out.blocked_at == len(out.steps) + 1  # the refused request leaves no response to read
    assert "refuses fetch from 2" in out.steps[-1][1]
