"""Record keys (docs/wire.md §4.1): a keyed record travels as one value, so brokers store and
replicate it unchanged, and a consumer reads back each key and value as produced -- an
unkeyed value that happens to start with the key marker included."""

from __future__ import annotations

from typing import Any

import pytest

from impl.node.client import Admin, Consumer, Producer
from impl.node.wire import KEYED_RECORD, keyed_record, record_key


def test_a_keyed_record_reads_back_as_its_key_and_value():
    assert record_key(keyed_record(b"value", b"key")) == (b"key", b"value")
    assert record_key(keyed_record(b"value", b"")) == (b"", b"value")  # an empty key is a key
    assert keyed_record(b"value", None) == b"value"  # unkeyed: the value as it is
    assert record_key(b"value") == (None, b"value")


def test_an_unkeyed_value_that_starts_with_the_marker_reads_back_unchanged():
    odd = KEYED_RECORD + b"not an envelope"
    assert keyed_record(odd, None) != odd
    assert record_key(keyed_record(odd, None)) == (None, odd)
    assert record_key(odd) == (None, odd)  # one that never went through a producer: shown as written


def test_no_text_value_is_taken_for_a_keyed_one():
    with pytest.raises(UnicodeDecodeError):
        KEYED_RECORD.decode("utf-8")  # so `epochal produce`'s UTF-8 lines can never collide


@pytest.mark.integration
def test_keys_survive_produce_replication_and_fetch(make_cluster: Any):
    c = make_cluster(2)
    with Admin(c.bootstrap) as admin:
        admin.create_topic("keyed", assignment={0: [0, 1]})
    with Producer(c.bootstrap, acks=-1) as producer:
        producer.send_batch("keyed", ["a", "b", "c"], partition=0, keys=["k1", None, b"\x00k3"])
        producer.send("keyed", "d", partition=0, key="k4")
        with pytest.raises(ValueError, match="2 keys for 1 values"):
            producer.send_batch("keyed", ["e"], partition=0, keys=["x", "y"])
    with Consumer(c.bootstrap) as consumer:
        consumer.assign("keyed", from_beginning=True)
        got: list[Any] = []
        for _ in range(50):
            got += consumer.poll_records()
            if len(got) >= 4:
                break
    assert [(r.partition, r.offset, r.key, r.value) for r in got] == [
        (0, 0, b"k1", b"a"), (0, 1, None, b"b"), (0, 2, b"\x00k3", b"c"), (0, 3, b"k4", b"d")]
