"""Clients: a producer, a consumer and an admin client that route by cluster metadata.

All three start from one bootstrap broker (``host:port``), ask it for metadata (the
UpdateMetadata view the controller pushed to every broker), and talk to each partition's
leader.  Seed 000 question 6: during a leadership change a client may reach a broker that is
not (yet) the leader; it refreshes metadata and retries.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from impl.wire import ApiKey, BlockingConnection, ErrorCode, RpcError, error_name

RETRIABLE = {ErrorCode.NOT_LEADER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
             ErrorCode.REQUEST_TIMED_OUT, ErrorCode.FENCED_LEADER_EPOCH,
             ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.NOT_ENOUGH_REPLICAS,
             ErrorCode.BROKER_NOT_AVAILABLE}


class ClusterUnavailable(Exception):
    """No broker of the cluster could be reached."""


def parse_hostport(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return host or "127.0.0.1", int(port)


@dataclass
class PartitionInfo:
    topic: str
    partition: int
    leader: int
    leader_epoch: int
    isr: list[int]
    replicas: list[int]


class Client:
    """Connections and metadata shared by the producer, consumer and admin client."""

    def __init__(self, bootstrap: str = "127.0.0.1:9092", timeout: float = 5.0) -> None:
        self.bootstrap = [parse_hostport(b) for b in bootstrap.split(",")]
        self.timeout = timeout
        self.brokers: dict[int, tuple[str, int]] = {}
        self.topics: dict[str, dict[int, PartitionInfo]] = {}
        self.controller_id = -1
        self._conns: dict[tuple[str, int], BlockingConnection] = {}

    def close(self) -> None:
        for c in self._conns.values():
            c.close()
        self._conns.clear()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport --------------------------------------------------------------------------
    def call(self, addr: tuple[str, int], api: ApiKey, body: dict[str, Any],
             timeout: float | None = None, expect_response: bool = True) -> dict[str, Any]:
        """One request; raises RpcError on an error code, OSError when unreachable."""
        conn = self._conns.get(addr)
        try:
            if conn is None:
                conn = self._conns[addr] = BlockingConnection(*addr, timeout=self.timeout)
            error, _, resp = conn.send(api, body, timeout=timeout,
                                       expect_response=expect_response)
        except (OSError, ConnectionError):
            self._drop(addr)
            raise
        if error != ErrorCode.NONE:
            raise RpcError(error, f"{error_name(error)}: {resp.get('message', '')}".rstrip(": "))
        return resp

    def _drop(self, addr: tuple[str, int]) -> None:
        conn = self._conns.pop(addr, None)
        if conn is not None:
            conn.close()

    def any_broker(self, api: ApiKey, body: dict[str, Any]) -> dict[str, Any]:
        addrs = list(dict.fromkeys(self.bootstrap + list(self.brokers.values())))
        last: Exception | None = None
        for addr in addrs:
            try:
                return self.call(addr, api, body)
            except OSError as exc:
                last = exc
        raise ClusterUnavailable(f"no broker reachable at {', '.join(f'{h}:{p}' for h, p in addrs)}"
                                 f" ({last})")

    def refresh(self) -> None:
        meta = self.any_broker(ApiKey.METADATA, {})
        self.brokers = {int(b): (str(h), int(p)) for b, (h, p) in meta["brokers"].items()}
        self.controller_id = int(meta.get("controller_id", -1))
        self.topics = {
            t: {int(p): PartitionInfo(t, int(p), int(i["leader"]), int(i["leader_epoch"]),
                                      [int(b) for b in i["isr"]], [int(b) for b in i["replicas"]])
                for p, i in parts.items()}
            for t, parts in meta["topics"].items()}

    def partitions(self, topic: str) -> dict[int, PartitionInfo]:
        if topic not in self.topics:
            self.refresh()
        if topic not in self.topics:
            raise RpcError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"unknown topic {topic!r}")
        return self.topics[topic]

    def leader_addr(self, topic: str, partition: int) -> tuple[str, int]:
        info = self.partitions(topic).get(partition)
        if info is None:
            raise RpcError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {topic}-{partition}")
        if info.leader not in self.brokers:
            raise RpcError(ErrorCode.NOT_LEADER, f"{topic}-{partition} has no live leader")
        return self.brokers[info.leader]


class Producer(Client):
    """acks 0, 1 or -1 ("all"); retries NOT_LEADER and friends after a metadata refresh."""

    def __init__(self, bootstrap: str = "127.0.0.1:9092", acks: int = -1, retries: int = 20,
                 request_timeout_ms: int = 5000, retry_backoff_s: float = 0.2,
                 timeout: float = 10.0) -> None:
        super().__init__(bootstrap, timeout)
        self.acks, self.retries = acks, retries
        self.request_timeout_ms, self.retry_backoff_s = request_timeout_ms, retry_backoff_s
        self._rr: dict[str, Iterator[int]] = {}

    def send(self, topic: str, value: bytes | str, partition: int | None = None) -> dict[str, Any]:
        return self.send_batch(topic, [value], partition)

    def send_batch(self, topic: str, values: list[bytes | str],
                   partition: int | None = None) -> dict[str, Any]:
        data = [v.encode() if isinstance(v, str) else bytes(v) for v in values]
        last: Exception | None = None
        for attempt in range(self.retries + 1):
            try:
                if partition is None:
                    parts = sorted(self.partitions(topic))
                    rr = self._rr.setdefault(topic, itertools.cycle(parts))
                    partition = next(rr)
                addr = self.leader_addr(topic, partition)
                resp = self.call(addr, ApiKey.PRODUCE, {
                    "topic": topic, "partition": partition, "acks": self.acks, "values": data,
                    "timeout_ms": self.request_timeout_ms},
                    timeout=self.request_timeout_ms / 1000 + 5, expect_response=self.acks != 0)
                return dict(resp, partition=partition)
            except RpcError as exc:
                if exc.code not in RETRIABLE:
                    raise
                last = exc
            except OSError as exc:
                last = exc
            if attempt < self.retries:
                time.sleep(self.retry_backoff_s)
                try:
                    self.refresh()
                except (ClusterUnavailable, RpcError, OSError) as exc:
                    last = exc
        raise last if last else RuntimeError("unreachable")


class Consumer(Client):
    """Reads committed records (below the HW) from partition leaders, in offset order."""

    def __init__(self, bootstrap: str = "127.0.0.1:9092", timeout: float = 5.0) -> None:
        super().__init__(bootstrap, timeout)
        self.positions: dict[tuple[str, int], int] = {}

    def assign(self, topic: str, from_beginning: bool = True) -> None:
        self.refresh()
        for p in self.partitions(topic):
            if from_beginning:
                self.positions[(topic, p)] = 0
            else:
                self.positions[(topic, p)] = self._fetch(topic, p, 0, 0, 0)["hw"]

    def _fetch(self, topic: str, p: int, offset: int, max_records: int,
               max_wait_ms: int) -> dict[str, Any]:
        addr = self.leader_addr(topic, p)
        return self.call(addr, ApiKey.FETCH, {
            "replica_id": -1, "topic": topic, "partition": p, "fetch_offset": offset,
            "max_records": max_records, "max_wait_ms": max_wait_ms},
            timeout=max_wait_ms / 1000 + self.timeout)

    def poll(self, max_wait_ms: int = 200) -> list[tuple[str, int, int, bytes]]:
        """One round over the assigned partitions; (topic, partition, offset, value) items."""
        out = []
        for (topic, p), offset in sorted(self.positions.items()):
            try:
                resp = self._fetch(topic, p, offset, 1000, max_wait_ms // max(1, len(self.positions)))
            except RpcError as exc:
                if exc.code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    continue  # a new leader with a shorter log: wait for it to catch up
                if exc.code in RETRIABLE:
                    self._safe_refresh()
                    continue
                raise
            except OSError:
                self._safe_refresh()
                continue
            for o, _epoch, v in resp["records"]:
                if int(o) == self.positions[(topic, p)]:
                    out.append((topic, p, int(o), bytes(v)))
                    self.positions[(topic, p)] = int(o) + 1
        return out

    def _safe_refresh(self) -> None:
        try:
            self.refresh()
        except (ClusterUnavailable, OSError, RpcError):
            time.sleep(0.2)

    def consume(self, topic: str, from_beginning: bool = True,
                idle_timeout: float = 2.0) -> Iterator[tuple[int, int, bytes]]:
        """Yield (partition, offset, value) until nothing new arrives for ``idle_timeout``."""
        self.assign(topic, from_beginning)
        idle_since = time.monotonic()
        while time.monotonic() - idle_since < idle_timeout:
            batch = self.poll()
            if batch:
                idle_since = time.monotonic()
            for _t, p, o, v in batch:
                yield p, o, v


class Admin(Client):
    """Topic creation/deletion, partition add/remove, reassignment, preferred election."""

    def create_topic(self, topic: str, partitions: int = 1, replication_factor: int = 1,
                     assignment: dict[int, list[int]] | None = None,
                     wait: float = 15.0) -> dict[str, Any]:
        body: dict[str, Any] = {"topic": topic, "partitions": partitions,
                                "replication_factor": replication_factor}
        if assignment:
            body["assignment"] = {str(p): r for p, r in assignment.items()}
        resp = self.any_broker(ApiKey.CREATE_TOPICS, body)
        if wait:
            n = len(assignment) if assignment else partitions
            self.wait_for(lambda: self._leaders_known(topic, n), wait, f"topic {topic} leaders")
        return resp

    def _leaders_known(self, topic: str, n: int) -> bool:
        parts = self.topics.get(topic, {})
        return len(parts) >= n and all(i.leader >= 0 for i in parts.values())

    def delete_topic(self, topic: str, wait: float = 15.0) -> None:
        self.any_broker(ApiKey.DELETE_TOPICS, {"topic": topic})
        if wait:
            self.wait_for(lambda: topic not in self.topics, wait, f"deletion of {topic}")

    def add_partitions(self, topic: str, count: int, wait: float = 15.0) -> dict[str, Any]:
        resp = self.any_broker(ApiKey.CREATE_PARTITIONS, {"topic": topic, "count": count})
        if wait:
            self.wait_for(lambda: self._leaders_known(topic, count), wait,
                          f"{count} partitions of {topic}")
        return resp

    def remove_partitions(self, topic: str, partitions: list[int], wait: float = 15.0) -> None:
        self.any_broker(ApiKey.REMOVE_PARTITIONS, {"topic": topic, "partitions": partitions})
        if wait:
            self.wait_for(lambda: not set(partitions) & set(self.topics.get(topic, {})), wait,
                          f"removal of {topic} partitions {partitions}")

    def reassign(self, topic: str, partition: int, replicas: list[int],
                 wait: float = 30.0) -> None:
        self.any_broker(ApiKey.REASSIGN_PARTITIONS,
                        {"topic": topic, "partition": partition, "replicas": replicas})
        if wait:
            def done() -> bool:
                info = self.topics.get(topic, {}).get(partition)
                return bool(info) and info.replicas == replicas and info.leader in replicas
            self.wait_for(done, wait, f"reassignment of {topic}-{partition} to {replicas}")

    def elect_preferred(self, topic: str, partition: int) -> None:
        self.any_broker(ApiKey.ELECT_PREFERRED, {"topic": topic, "partition": partition})

    def describe(self, topic: str | None = None) -> dict[str, dict[int, PartitionInfo]]:
        self.refresh()
        if topic is None:
            return self.topics
        return {topic: self.partitions(topic)}

    def wait_for(self, cond: Any, timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.refresh()
                if cond():
                    return
            except (ClusterUnavailable, RpcError, OSError):
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout:g}s waiting for {what}")
            time.sleep(0.1)
