"""The idempotent producer on real brokers (KIP-98, docs/durability.md): a resent batch is
answered as the first time and never appended twice -- by the leader that took it, and by
the next leader after a ``kill -9``, which knows the batch from its own log -- a batch after
a gap is refused, and the default producer writes every value once across leader kills."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from impl.harness.recordings import TOPIC, leader_of, wait_for_change
from impl.node.client import Admin, Consumer, Producer
from impl.node.wire import ApiKey, ErrorCode, RpcError


def _produce(p: Producer, body: dict[str, Any]) -> dict[str, Any]:
    """One raw produce to the partition's current leader (no client retries)."""
    p.refresh()
    return p.call(p.leader_addr(TOPIC, 0), ApiKey.PRODUCE,
                  {"topic": TOPIC, "partition": 0, "acks": -1, **body})


def _values(c: Any) -> list[bytes]:
    with Consumer(c.bootstrap) as consumer:
        return [v for _p, _o, v in consumer.consume(TOPIC, True, 1.5)]


@pytest.mark.integration
def test_a_resent_batch_is_not_appended_again_by_its_leader_nor_by_the_next_one(make_cluster: Any) -> None:
    c = make_cluster(3, min_insync_replicas=2)
    with Admin(c.bootstrap) as admin:
        admin.create_topic(TOPIC, assignment={0: [0, 1, 2]})
    with Producer(c.bootstrap) as p:
        pid = int(p.any_broker(ApiKey.INIT_PRODUCER_ID, {})["producer_id"])
        other = int(p.any_broker(ApiKey.INIT_PRODUCER_ID, {})["producer_id"])
        assert other != pid
        batch = {"producer_id": pid, "base_sequence": 0, "values": [b"a", b"b"]}
        first = _produce(p, batch)
        again = _produce(p, batch)  # the answer was lost, say: the client resends
        assert again["duplicate"] is True and again["base_offset"] == first["base_offset"]
        with pytest.raises(RpcError) as gap:  # sequence 2 never arrived
            _produce(p, {"producer_id": pid, "base_sequence": 3, "values": [b"d"]})
        assert gap.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        old = leader_of(c)
        c.kill(old)  # the batch is committed: every ISR member has it, with its sequence
        wait_for_change(lambda: leader_of(c), old, "leader", timeout=30)
        after = _produce(p, batch)
        assert after["duplicate"] is True and after["base_offset"] == first["base_offset"]
        # a batch whose head the new leader holds gets only its tail appended
        tail = _produce(p, {"producer_id": pid, "base_sequence": 1, "values": [b"b", b"c"]})
        assert tail["base_offset"] == first["base_offset"] + 1 and "duplicate" not in tail
    assert _values(c) == [b"a", b"b", b"c"]


@pytest.mark.integration
@pytest.mark.slow
def test_the_default_producer_writes_each_value_once_across_leader_kills(make_cluster: Any) -> None:
    """The default producer under two leader kills: every acknowledged value is in the log
    exactly once, and no send gives up (its delivery timeout outlasts a failover)."""
    c = make_cluster(3, min_insync_replicas=2)
    with Admin(c.bootstrap) as admin:
        admin.create_topic(TOPIC, assignment={0: [0, 1, 2]})
    acked: list[str] = []
    failed: list[str] = []
    stop = threading.Event()

    def produce() -> None:
        with Producer(c.bootstrap, request_timeout_ms=2000) as p:
            i = 0
            while not stop.is_set() and i < 5000:
                v = f"value-{i}"
                try:
                    p.send(TOPIC, v, partition=0)
                    acked.append(v)
                except Exception as exc:  # noqa: BLE001 - counted: the test requires none
                    failed.append(f"{v}: {exc}")
                i += 1

    writer = threading.Thread(target=produce)
    writer.start()
    try:
        for _ in range(2):
            time.sleep(1.0)
            old = leader_of(c)
            c.kill(old)
            wait_for_change(lambda: leader_of(c), old, "leader", timeout=30)
            c.restart(old)
            c.wait_ready(30)
        time.sleep(1.0)
    finally:
        stop.set()
        writer.join(60)
    got = [v.decode() for v in _values(c)]
    assert not failed
    assert len(acked) > 20
    assert len(got) == len(set(got)), "a value is in the log twice"
    assert set(acked) <= set(got)
