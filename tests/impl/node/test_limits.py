"""Size limits: a fetch response bounded in bytes that still returns its first
record whole (KIP-74), ``max.message.bytes`` with RECORD_TOO_LARGE, and limits held
consistent with the frame size (:mod:`impl.node.limits`)."""

from __future__ import annotations

from typing import Any

import pytest
from impl_testing import wait_until

from impl.node import limits
from impl.node import zk as zkl
from impl.node.client import Admin, Consumer, Producer
from impl.node.config import BrokerConfig
from impl.node.log import Record
from impl.node.wire import ApiKey, BlockingConnection, ErrorCode, ProtocolError, RpcError

MiB = 1024 * 1024


def _records(*sizes: int) -> list[Record]:
    return [Record(i, 0, b"x" * n) for i, n in enumerate(sizes)]


def test_a_response_takes_records_up_to_its_byte_limit() -> None:
    recs = _records(100, 100, 100)
    two = 2 * limits.record_size(b"x" * 100)
    assert limits.within(recs, two, True) == recs[:2]
    assert limits.within(recs, two - 1, True) == recs[:1]
    assert limits.within(recs, 10 * two, False) == recs


def test_the_first_record_is_returned_whole_even_above_the_limit_kip74() -> None:
    recs = _records(3 * MiB, 10)
    assert limits.within(recs, MiB, True) == recs[:1]
    assert limits.within(recs, MiB, False) == []  # a later partition of the same response


def test_limits_that_could_outgrow_a_frame_are_refused() -> None:
    limits.check(8 * MiB, 4 * MiB, 4 * MiB, MiB)  # the defaults
    with pytest.raises(ValueError, match="max_frame"):
        limits.check(8 * MiB, 8 * MiB, 4 * MiB, MiB)  # one legal record could not be fetched
    with pytest.raises(ValueError, match="max_frame"):
        limits.check(8 * MiB, MiB, 8 * MiB, MiB)
    with pytest.raises(ValueError, match="positive"):
        limits.check(8 * MiB, 0, MiB, MiB)


def test_the_broker_refuses_inconsistent_limits_in_one_line(capsys: Any) -> None:
    with pytest.raises(SystemExit) as exit_:
        BrokerConfig.from_argv(["--broker-id", "0", "--port", "1", "--zookeeper", "z",
                                "--data-dir", "d", "--max-message-bytes", str(16 * MiB)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert "does not fit in max_frame" in err[-1] and "Traceback" not in "".join(err)


def _isr(zk: Any, topic: str) -> tuple[int, ...]:
    data, _ = zk.get(zkl.leader_and_isr_path(topic, 0))
    return zkl.LeaderAndIsr.from_json(data).isr


@pytest.mark.slow  # the default suite keeps to about six minutes
@pytest.mark.integration
def test_three_acks_all_values_of_3_mib_reach_a_restarted_follower_and_a_consumer(
        make_cluster: Any) -> None:
    """Fetch responses limited by record count once outgrew the 8 MiB frame, the
    restarted follower never caught up, and a consumer crashed with "response too large"."""
    c = make_cluster(2, min_insync_replicas=1)
    zk = c.zk_client()
    with Admin(c.bootstrap) as admin:
        admin.create_topic("big", assignment={0: [0, 1]})
    c.kill(1)
    wait_until(lambda: _isr(zk, "big") == (0,), 15, "the follower out of the ISR")
    values = [bytes([ord("a") + i]) * (3 * MiB) for i in range(3)]
    with Producer(c.bootstrap, acks=-1) as producer:
        for v in values:
            producer.send("big", v, partition=0)
    c.restart(1)
    wait_until(lambda: _isr(zk, "big") == (0, 1), 30, "the restarted follower back in the ISR")
    with Consumer(c.bootstrap) as consumer:
        got = [v for _p, _o, v in consumer.consume("big", True, 2.0)]
    assert got == values
    # a value above max.message.bytes is refused before anything is appended
    with Producer(c.bootstrap, acks=-1) as producer, pytest.raises(RpcError) as refused:
        producer.send("big", b"z" * (4 * MiB + 1), partition=0)
    assert refused.value.code == ErrorCode.RECORD_TOO_LARGE
    # and a value that is not bytes (an integer once became a 16 MiB record of zeros)
    # is refused by the client's record batch writer before anything is sent
    conn = BlockingConnection(*c.endpoint(0), timeout=5)
    try:
        with pytest.raises(ProtocolError) as not_bytes:
            conn.send(ApiKey.PRODUCE, {"topic": "big", "partition": 0, "acks": 1, "values": [16 * MiB]})
    finally:
        conn.close()
    assert not_bytes.value.code == ErrorCode.INVALID_REQUEST
    with Consumer(c.bootstrap) as consumer:
        assert len(list(consumer.consume("big", True, 1.0))) == 3
    zk.stop()
