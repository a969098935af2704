"""Replication and reads as Kafka's messages: Fetch v12 (a follower's replica fetch, with
``replica_id``, and a consumer's) and OffsetForLeaderEpoch v4 (a follower's epoch lookup).

Records travel as record batches v2 (CRC-32C), one batch per run of records of one leader
epoch and, for an idempotent producer's records, one producer id with consecutive
sequences (KIP-98: the batch's producer id and base sequence).  A record's value is the
value the log stores, verbatim, with no key: a follower must store exactly what its leader
stores, and Epochal's consumer reads keys out of stored values itself (docs/wire.md 4.1).

Epochal's fields Kafka's schema lacks ride in the header's tag: a fetch's ``max_records``
and ``broker_epoch`` (KIP-903's replica epoch arrives only in Fetch v15), each replica
partition's ``hw`` and ``topic_id`` and each answered partition's ``leo`` and ``topic_id``
(``partition_extras``, in the order of Kafka's message: grouped by topic); an epoch
lookup's ``topic_id``.  An error answer of a whole request sets Fetch's top-level
``error_code``; a refused partition sets its own.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from impl.node.codes import ApiKey
from impl.node.kafka.translate import NOTHING, Body, Fields, Translation
from impl.node.kafka.translate.batches import read_batches, write_batch

NO_LIMIT = 2**31 - 1  # Kafka's default max_bytes: no limit asked for
NO_PRODUCER = -1
_REPLICA_PARTITION = frozenset({"topic", "partition", "fetch_offset", "leader_epoch"})
_ANSWERED_PARTITION = frozenset({"topic", "partition", "error", "records", "producers", "hw",
                                 "log_start_offset", "leader_epoch", "leader"})


# -- records ---------------------------------------------------------------------------------

def write_records(records: Sequence[Sequence[Any]], producers: Sequence[Sequence[int]] = ()) -> bytes:
    """``[offset, leader_epoch, value]`` records (``producers``: ``[offset, producer_id,
    sequence]`` of those an idempotent producer wrote) as record batches."""
    if not producers:  # one batch per run of one leader epoch
        out = bytearray()
        for epoch, run in itertools.groupby(records, key=lambda r: int(r[1])):
            write_batch(out, epoch, NO_PRODUCER, -1, -1, [(int(o), bytes(v)) for o, _, v in run])
        return bytes(out)
    by_offset = {int(o): (int(pid), int(seq)) for o, pid, seq in producers}

    def run_key(item: tuple[int, Sequence[Any]]) -> tuple[int, int, int]:
        i, (offset, epoch, _) = item
        pid, seq = by_offset.get(int(offset), (NO_PRODUCER, -1))
        # records of one producer in one batch keep sequence - position constant
        return int(epoch), pid, seq - i if pid != NO_PRODUCER else 0

    out = bytearray()
    for (epoch, pid, _), run in itertools.groupby(enumerate(records), key=run_key):
        batch = [r for _, r in run]
        first = by_offset.get(int(batch[0][0]), (NO_PRODUCER, -1))
        write_batch(out, epoch, pid, 0 if pid != NO_PRODUCER else -1,
                    first[1] if pid != NO_PRODUCER else -1, [(int(o), bytes(v)) for o, _, v in batch])
    return bytes(out)


def write_produced(values: Sequence[bytes], producer_id: int, base_sequence: int) -> bytes:
    """A produce's values at offsets 0, 1, ... of leader epoch 0 (their producer's sequences
    from ``base_sequence``): :func:`write_records`' one batch for them."""
    if not values:
        return b""
    out = bytearray()
    producing = producer_id != NO_PRODUCER
    write_batch(out, 0, producer_id, 0 if producing else -1, base_sequence if producing else -1,
                list(enumerate(values)))
    return bytes(out)


def read_records(data: bytes | None) -> tuple[list[list[Any]], list[list[int]]]:
    """(records, producers) of :func:`write_records`' batches."""
    records: list[list[Any]] = []
    producers: list[list[int]] = []
    for batch in read_batches(bytes(data or b"")):
        for i, (offset, _, value) in enumerate(batch.records):
            records.append([offset, batch.leader_epoch, value or b""])
            if batch.producer_id != NO_PRODUCER:
                producers.append([offset, batch.producer_id, batch.base_sequence + i])
    return records, producers


# -- Fetch -----------------------------------------------------------------------------------

def _in_kafka_order(parts: Sequence[Body]) -> list[Body]:
    """``parts`` in the order Kafka's Fetch holds them: grouped by topic, each topic where it
    first appears.  A follower starts each fetch at the next partition (so none waits behind
    the others), and its list interleaves topics; ``partition_extras`` must follow this order,
    the one the receiver reads the partitions in, or a partition takes another's extras."""
    topics: dict[str, list[Body]] = {}
    for p in parts:
        topics.setdefault(str(p["topic"]), []).append(p)
    return [p for ps in topics.values() for p in ps]


def _fetch_request(body: Body) -> tuple[Body, frozenset[str], Body]:
    if "partitions" in body:  # a replica fetch: every partition the follower fetches here
        parts = _in_kafka_order(body["partitions"])
        per_partition = int(body.get("partition_max_bytes", NO_LIMIT))
        used = {"partitions", "partition_max_bytes"}
    else:  # a consumer fetch: one partition
        parts = [{"topic": body["topic"], "partition": body["partition"],
                  "fetch_offset": body["fetch_offset"]}]
        per_partition = NO_LIMIT
        used = {"topic", "partition", "fetch_offset"}
    topics: dict[str, list[Body]] = {}
    for p in parts:
        topics.setdefault(str(p["topic"]), []).append({
            "partition": int(p["partition"]), "fetch_offset": int(p["fetch_offset"]),
            "current_leader_epoch": int(p.get("leader_epoch", -1)),
            "partition_max_bytes": per_partition})
    extras = [{k: v for k, v in p.items() if k not in _REPLICA_PARTITION} for p in parts]
    values = {"replica_id": int(body.get("replica_id", -1)),
              "max_wait": int(body.get("max_wait_ms", 0)), "min_bytes": 0,
              "max_bytes": int(body.get("max_bytes", NO_LIMIT)), "session_epoch": -1,
              "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
              "forgotten_topics_data": []}
    return values, frozenset(used | {"replica_id", "max_wait_ms", "max_bytes"}), \
        {"partition_extras": extras} if any(extras) and "partitions" in body else {}


def _ms(duration: Any) -> int:
    return int(duration.total_seconds() * 1000)


def _fetch_from_request(e: Any, extras: Body) -> Body:
    parts = [(t.topic, p) for t in e.topics for p in t.partitions]
    out: Body = {}
    if int(e.replica_id) != -1:
        out["replica_id"] = int(e.replica_id)
    if int(e.max_bytes) != NO_LIMIT:
        out["max_bytes"] = int(e.max_bytes)
    if _ms(e.max_wait):
        out["max_wait_ms"] = _ms(e.max_wait)
    more = list(extras.pop("partition_extras", []))
    if int(e.replica_id) < 0 and len(parts) == 1 and not more:  # a consumer's
        topic, p = parts[0]
        return {**out, "topic": topic, "partition": int(p.partition), "fetch_offset": int(p.fetch_offset)}
    if parts and int(parts[0][1].partition_max_bytes) != NO_LIMIT:
        out["partition_max_bytes"] = int(parts[0][1].partition_max_bytes)
    more += [{}] * (len(parts) - len(more))
    return {**out, "partitions": [
        {"topic": topic, "partition": int(p.partition), "fetch_offset": int(p.fetch_offset),
         **({"leader_epoch": int(p.current_leader_epoch)} if int(p.current_leader_epoch) != -1 else {}),
         **dict(x)} for (topic, p), x in zip(parts, more, strict=True)]}


def _partition(index: int, error: int, hw: int = -1, log_start: int = -1, leader: int = -1,
               leader_epoch: int = -1, records: bytes = b"") -> Body:
    return {"partition_index": index, "error_code": error, "high_watermark": hw,
            "last_stable_offset": hw, "log_start_offset": log_start,
            "current_leader": {"leader_id": leader, "leader_epoch": leader_epoch},
            "aborted_transactions": None, "preferred_read_replica": -1, "records": records}


def _fetch_response(error: int, body: Body, request: Body) -> Fields:
    base = {"throttle_time": 0, "error_code": error, "session_id": 0}
    if error or "partitions" not in body:
        if error or "topic" not in request:  # a whole request refused: its body in the tag
            return {**base, "responses": []}, NOTHING, {}
        part = _partition(int(request["partition"]), 0, int(body.get("hw", -1)),
                          int(body.get("log_start_offset", -1)), -1,
                          int(body.get("leader_epoch", -1)), write_records(body.get("records", [])))
        return {**base, "responses": [{"topic": str(request["topic"]), "partitions": [part]}]}, \
            frozenset({"records", "hw", "log_start_offset", "leader_epoch"}), {}
    topics: dict[str, list[Body]] = {}
    extras = []
    for p in _in_kafka_order(body["partitions"]):
        topics.setdefault(str(p["topic"]), []).append(_partition(
            int(p["partition"]), int(p["error"]), int(p.get("hw", -1)),
            int(p.get("log_start_offset", -1)), int(p.get("leader", -1)),
            int(p.get("leader_epoch", -1)),
            write_records(p.get("records", []), p.get("producers", []))))
        extras.append({k: v for k, v in p.items() if k not in _ANSWERED_PARTITION})
    return {**base, "responses": [{"topic": t, "partitions": ps} for t, ps in topics.items()]}, \
        frozenset({"partitions"}), {"partition_extras": extras}


def _fetch_from_response(e: Any, extras: Body) -> tuple[int, Body]:
    if int(e.error_code):
        return int(e.error_code), {}
    parts = [(t.topic, p) for t in e.responses for p in t.partitions]
    more = extras.pop("partition_extras", None)
    if more is None:  # the answer to a consumer's fetch: one partition
        if not parts:
            return 0, {}
        _, p = parts[0]
        records, _ = read_records(p.records)
        out: Body = {"records": records, "hw": int(p.high_watermark)}
        if int(p.current_leader.leader_epoch) != -1:
            out["leader_epoch"] = int(p.current_leader.leader_epoch)
        if int(p.log_start_offset) != -1:
            out["log_start_offset"] = int(p.log_start_offset)
        return 0, out
    answered = []
    for (topic, p), x in zip(parts, list(more) + [{}] * (len(parts) - len(more)), strict=True):
        item: Body = {"topic": topic, "partition": int(p.partition_index), "error": int(p.error_code)}
        records, producers = read_records(p.records)
        if int(p.error_code) == 0:
            item["records"] = records
        if producers:
            item["producers"] = producers
        for key, value in (("hw", int(p.high_watermark)), ("log_start_offset", int(p.log_start_offset)),
                           ("leader_epoch", int(p.current_leader.leader_epoch)),
                           ("leader", int(p.current_leader.leader_id))):
            if value != -1:
                item[key] = value
        answered.append({**item, **dict(x)})
    return 0, {"partitions": answered}


# -- OffsetForLeaderEpoch --------------------------------------------------------------------

def _epoch_request(body: Body) -> tuple[Body, frozenset[str], Body]:
    return {"replica_id": int(body.get("replica_id", -1)), "topics": [
        {"topic": str(body["topic"]), "partitions": [
            {"partition": int(body["partition"]), "leader_epoch": int(body["leader_epoch"]),
             "current_leader_epoch": int(body.get("current_leader_epoch", -1))}]}]}, \
        frozenset({"replica_id", "topic", "partition", "leader_epoch", "current_leader_epoch"}), {}


def _epoch_from_request(e: Any, _extras: Body) -> Body:
    (topic,) = e.topics
    (p,) = topic.partitions
    out: Body = {"topic": topic.topic, "partition": int(p.partition),
                 "leader_epoch": int(p.leader_epoch)}
    if int(p.current_leader_epoch) != -1:
        out["current_leader_epoch"] = int(p.current_leader_epoch)
    if int(e.replica_id) != -1:
        out["replica_id"] = int(e.replica_id)
    return out


def _epoch_response(error: int, body: Body, request: Body) -> Fields:
    p = {"error_code": error, "partition": int(request.get("partition", -1)),
         "leader_epoch": -1 if error else int(body["leader_epoch"]),
         "end_offset": -1 if error else int(body["end_offset"])}
    return {"throttle_time": 0, "topics": [{"topic": str(request.get("topic", "")), "partitions": [p]}]}, \
        NOTHING if error else frozenset({"leader_epoch", "end_offset"}), {}


def _epoch_from_response(e: Any, _extras: Body) -> tuple[int, Body]:
    (topic,) = e.topics
    (p,) = topic.partitions
    if int(p.error_code):
        return int(p.error_code), {}
    return 0, {"leader_epoch": int(p.leader_epoch), "end_offset": int(p.end_offset)}


TRANSLATIONS = (
    Translation(ApiKey.FETCH, _fetch_request, _fetch_from_request, _fetch_response,
                _fetch_from_response),
    Translation(ApiKey.OFFSETS_FOR_LEADER_EPOCH, _epoch_request, _epoch_from_request,
                _epoch_response, _epoch_from_response),
)
