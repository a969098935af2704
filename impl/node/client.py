"""Clients: a producer, a consumer and an admin client that route by cluster metadata.

The admin client sends every admin write to the active controller (seed 004) and honours
the controller-mutation quota's throttle time (seed 001).

All three start from one bootstrap broker (``host:port``), ask it for metadata (the
UpdateMetadata view the controller pushed to every broker), and talk to each partition's
leader.  Seed 000 question 6: during a leadership change a client may reach a broker that is
not (yet) the leader; it refreshes metadata and retries.

The producer is **idempotent** by default with acks=all (Kafka's ``enable.idempotence``,
KIP-98): it takes a producer id from a broker and numbers each partition's records, and a
retry resends a batch with the numbers it had, so a leader that already holds the batch
answers without appending it again (:mod:`impl.node.producer_state`).  It retries for up to
``delivery_timeout_ms`` (Kafka's ``delivery.timeout.ms``), longer than a leader failover
takes (docs/durability.md).
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

from impl.node.wire import (
    ApiKey,
    BlockingConnection,
    ErrorCode,
    RpcError,
    error_name,
    keyed_record,
    record_key,
)

RETRIABLE = {ErrorCode.NOT_LEADER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
             ErrorCode.REQUEST_TIMED_OUT, ErrorCode.FENCED_LEADER_EPOCH,
             ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.NOT_ENOUGH_REPLICAS,
             ErrorCode.BROKER_NOT_AVAILABLE, ErrorCode.KAFKA_STORAGE_ERROR}
RETRIABLE_IDEMPOTENT = RETRIABLE | {ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND}
"""Kafka retries NOT_ENOUGH_REPLICAS_AFTER_APPEND too; only an idempotent producer can do so
without writing the records twice."""

DELIVERY_TIMEOUT_MS = 30_000
"""How long a producer keeps retrying one batch (Kafka's ``delivery.timeout.ms``, there 120 s).
A ``kill -9`` of a leader takes 4.2 s here (median of 3, 3.95-4.32 s) until a new leader
acknowledges an acks=all write (bench/bench_cluster.py, docs/durability.md) -- most of it the
ZooKeeper session timeout -- so the budget covers a leader failover and a controller failover
behind it, several times over."""


class ClusterUnavailable(Exception):
    """No broker of the cluster could be reached."""


def parse_hostport(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) <= 65535:
        raise ValueError(f"expected HOST:PORT with a port from 1 to 65535, got {text!r}")
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

    # the user its connections authenticate as, where the process's keyring can give that
    # user's credentials (impl.node.auth.credentials); None: the keyring's own identity
    user: str | None = None

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
                conn = self._conns[addr] = BlockingConnection(*addr, timeout=self.timeout,
                                                              user=self.user)
            error, _, resp = conn.send(api, body, timeout=timeout,
                                       expect_response=expect_response)
        except (OSError, ConnectionError):
            self._drop(addr)
            raise
        if error != ErrorCode.NONE:
            raise RpcError(error, f"{error_name(error)}: {resp.get('message', '')}".rstrip(": "),
                           resp)
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
    """acks 0, 1 or -1 ("all"); retries NOT_LEADER and friends after a metadata refresh, for
    up to ``delivery_timeout_ms`` (and at most ``retries`` times, if given).

    ``idempotent`` (default: with acks=-1, as Kafka's) numbers the batches so a retry is
    never appended twice.  A batch given up on (its outcome unknown) or refused out of order
    ends the producer id: the next batch starts a new one at sequence 0, so it never follows
    a gap.  A broker that does not know INIT_PRODUCER_ID (a port's) leaves the producer
    non-idempotent."""

    def __init__(self, bootstrap: str = "127.0.0.1:9092", acks: int = -1, retries: int | None = None,
                 request_timeout_ms: int = 5000, retry_backoff_s: float = 0.2,
                 timeout: float = 10.0, idempotent: bool | None = None,
                 delivery_timeout_ms: int = DELIVERY_TIMEOUT_MS) -> None:
        super().__init__(bootstrap, timeout)
        self.acks, self.retries = acks, retries
        self.request_timeout_ms, self.retry_backoff_s = request_timeout_ms, retry_backoff_s
        self.delivery_timeout_ms = delivery_timeout_ms
        self.idempotent = acks == -1 if idempotent is None else idempotent
        self.producer_id: int | None = None
        self._sequences: dict[tuple[str, int], int] = {}
        # round robin over each topic's partitions, started again when they change
        self._rr: dict[str, tuple[list[int], Iterator[int]]] = {}

    def _producer_id(self) -> int | None:
        """This producer's id, asked for once (InitProducerId); None if not idempotent."""
        if self.idempotent and self.producer_id is None:
            try:
                self.producer_id = int(self.any_broker(ApiKey.INIT_PRODUCER_ID, {})["producer_id"])
            except RpcError as exc:
                if exc.code not in (ErrorCode.INVALID_REQUEST, ErrorCode.UNSUPPORTED_VERSION):
                    raise
                self.idempotent = False  # a broker without the API: plain retries
        return self.producer_id if self.idempotent else None

    def _next_partition(self, topic: str) -> int:
        """The partition a record given none goes to: the topic's partitions in turn, as
        the metadata has them now -- partitions added or removed since (seed 000 H) change
        the turn.  A topic whose every partition was removed has none to write to: refused
        UNKNOWN_TOPIC_OR_PARTITION, which the retries wait out (a partition may be added)."""
        parts = sorted(self.partitions(topic))
        if not parts:
            raise RpcError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic!r} has no partitions")
        known = self._rr.get(topic)
        if known is None or known[0] != parts:
            known = self._rr[topic] = (parts, itertools.cycle(parts))
        return next(known[1])

    def _end_producer_id(self) -> None:
        """The stream of some partition has a batch of unknown fate: start a new stream."""
        self.producer_id = None
        self._sequences.clear()

    def send(self, topic: str, value: bytes | str, partition: int | None = None,
             key: bytes | str | None = None) -> dict[str, Any]:
        return self.send_batch(topic, [value], partition, None if key is None else [key])

    def send_batch(self, topic: str, values: list[bytes | str], partition: int | None = None,
                   keys: list[bytes | str | None] | None = None) -> dict[str, Any]:
        """``keys``, one per value (None: that record has none), travel inside the values
        (``wire.keyed_record``, docs/wire.md §4.1)."""
        if keys is not None and len(keys) != len(values):
            raise ValueError(f"{len(keys)} keys for {len(values)} values")
        data = [keyed_record(_bytes(v), None if keys is None or keys[i] is None else _bytes(keys[i]))
                for i, v in enumerate(values)]
        deadline = time.monotonic() + self.delivery_timeout_ms / 1000
        last: Exception | None = None
        producer_id: int | None = None
        sequence = -1  # the batch's base sequence: fixed at the first attempt, resent as is
        attempt = 0
        while True:
            try:
                if partition is None:
                    partition = self._next_partition(topic)
                if producer_id is None and self._producer_id() is not None:
                    producer_id = self.producer_id
                    sequence = self._sequences.get((topic, partition), 0)
                body: dict[str, Any] = {"topic": topic, "partition": partition, "acks": self.acks,
                                        "values": data, "timeout_ms": self.request_timeout_ms}
                if producer_id is not None:
                    body.update(producer_id=producer_id, base_sequence=sequence)
                addr = self.leader_addr(topic, partition)
                try:
                    resp = self.call(addr, ApiKey.PRODUCE, body,
                                     timeout=self.request_timeout_ms / 1000 + 5,
                                     expect_response=self.acks != 0)
                except RpcError as exc:
                    if producer_id is None or exc.code != ErrorCode.DUPLICATE_SEQUENCE_NUMBER:
                        raise
                    resp = {"base_offset": -1, "leader_epoch": -1, "duplicate": True}  # delivered
                if producer_id is not None:
                    self._sequences[(topic, partition)] = sequence + len(data)
                return dict(resp, partition=partition)
            except RpcError as exc:
                if exc.code not in (RETRIABLE_IDEMPOTENT if producer_id is not None else RETRIABLE):
                    if producer_id is not None:
                        self._end_producer_id()
                    raise
                last = exc
            except OSError as exc:
                last = exc
            attempt += 1
            if (self.retries is not None and attempt > self.retries) or \
                    time.monotonic() + self.retry_backoff_s >= deadline:
                if producer_id is not None:
                    self._end_producer_id()  # the batch's fate is unknown
                raise last
            time.sleep(self.retry_backoff_s)
            try:
                self.refresh()
            except (ClusterUnavailable, RpcError, OSError) as exc:
                last = exc


def _bytes(v: bytes | str) -> bytes:
    return v.encode() if isinstance(v, str) else bytes(v)


class Record(NamedTuple):
    """A consumed record: where it is, its value and its key (None: it has none)."""

    topic: str
    partition: int
    offset: int
    value: bytes
    key: bytes | None = None


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
        return [(r.topic, r.partition, r.offset, r.value) for r in self.poll_records(max_wait_ms)]

    def poll_records(self, max_wait_ms: int = 200) -> list[Record]:
        """One round over the assigned partitions, each record with its key."""
        out = []
        for (topic, p), offset in sorted(self.positions.items()):
            try:
                resp = self._fetch(topic, p, offset, 1000, max_wait_ms // max(1, len(self.positions)))
            except RpcError as exc:
                if exc.code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    # below the log start offset (retention deleted it): go on from there,
                    # as Kafka's auto.offset.reset=earliest; beyond the log end: a new
                    # leader with a shorter log, wait for it to catch up
                    start = int(exc.body.get("log_start_offset", 0))
                    if offset < start:
                        self.positions[(topic, p)] = start
                    continue
                if exc.code in RETRIABLE:
                    self._safe_refresh()
                    continue
                raise
            except OSError:
                self._safe_refresh()
                continue
            for o, _epoch, v in resp["records"]:
                if int(o) == self.positions[(topic, p)]:
                    key, value = record_key(bytes(v))
                    out.append(Record(topic, p, int(o), value, key))
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


class ThrottlingQuotaExceeded(RpcError):
    """Seed 001: the controller-mutation quota rejected these topics; ``throttle_time_ms``
    says how long to wait.  Retryable: the Admin client retries it itself unless told not to."""

    def __init__(self, topics: list[str], throttle_time_ms: int) -> None:
        super().__init__(ErrorCode.THROTTLING_QUOTA_EXCEEDED,
                         f"controller mutation quota exceeded for {', '.join(topics)}; "
                         f"retry in {throttle_time_ms / 1000:.1f}s")
        self.topics, self.throttle_time_ms = topics, throttle_time_ms


class Admin(Client):
    """Topic creation/deletion, partition add/remove, reassignment, preferred election and
    quotas -- all sent to the active controller (seed 004): a NOT_CONTROLLER answer makes it
    refresh metadata (which names the controller) and resend, until ``api_timeout_s``.

    Topics rejected with THROTTLING_QUOTA_EXCEEDED (seed 001) are resent after the throttle
    time until ``api_timeout_s`` (Kafka's ``default.api.timeout.ms``) unless
    ``retry_on_quota_violation`` is False; then they raise :class:`ThrottlingQuotaExceeded`.
    ``user`` and ``client_id`` are the principal the quota is charged to."""

    def __init__(self, bootstrap: str = "127.0.0.1:9092", timeout: float = 5.0,
                 user: str | None = None, client_id: str | None = None,
                 api_timeout_s: float = 60.0, retry_on_quota_violation: bool = True) -> None:
        super().__init__(bootstrap, timeout)
        self.user, self.client_id = user, client_id
        self.api_timeout_s = api_timeout_s
        self.retry_on_quota_violation = retry_on_quota_violation

    # -- to the controller (seed 004) ---------------------------------------------------------
    def _principal(self) -> dict[str, Any]:
        return {k: v for k, v in (("user", self.user), ("client_id", self.client_id)) if v}

    def to_controller(self, api: ApiKey, body: dict[str, Any],
                      deadline: float | None = None) -> dict[str, Any]:
        """Send a new-version admin request to the controller, rediscovering it on
        NOT_CONTROLLER or when it is unreachable."""
        deadline = deadline or time.monotonic() + self.api_timeout_s
        body = {**self._principal(), **body}
        last: Exception | None = None
        while True:
            try:
                if self.controller_id not in self.brokers:
                    self.refresh()
                addr = self.brokers.get(self.controller_id)
                if addr is not None:
                    return self.call(addr, api, body)
                last = RpcError(ErrorCode.NOT_CONTROLLER, "no controller known")
            except RpcError as exc:
                if exc.code not in (ErrorCode.NOT_CONTROLLER, ErrorCode.BROKER_NOT_AVAILABLE):
                    raise
                last = exc
            except OSError as exc:  # the controller went away: rediscover
                last = exc
            if time.monotonic() > deadline:
                raise last
            self.controller_id = -1  # rediscover: metadata names the active controller
            time.sleep(0.1)

    def _topics_request(self, api: ApiKey, items: list[dict[str, Any]],
                        extra: dict[str, Any] | None = None,
                        retry: bool | None = None) -> dict[str, dict[str, Any]]:
        """Per-topic results; throttled topics are resent after their throttle time while
        retrying is on and the API timeout allows."""
        retry = self.retry_on_quota_violation if retry is None else retry
        deadline = time.monotonic() + self.api_timeout_s
        pending = {str(i["topic"]): i for i in items}
        results: dict[str, dict[str, Any]] = {}
        while pending:
            topics: list[Any] = [pending[t] for t in pending]
            if api == ApiKey.DELETE_TOPICS:
                topics = [str(i["topic"]) for i in topics]
            resp = self.to_controller(api, {"topics": topics, **(extra or {})}, deadline)
            throttled: dict[str, dict[str, Any]] = {}
            moved: dict[str, dict[str, Any]] = {}
            for r in resp["topics"]:
                t = str(r["topic"])
                results[t] = r
                code = int(r.get("error", 0))
                if code == ErrorCode.THROTTLING_QUOTA_EXCEEDED:
                    throttled[t] = pending[t]
                elif code == ErrorCode.NOT_CONTROLLER:  # lost the controller mid-request
                    moved[t] = pending[t]
            pending = {}
            if moved and time.monotonic() < deadline:
                self.controller_id = -1  # rediscover, then resend those topics
                pending = dict(moved)
            wait = 0.1 if pending else 0.0
            if throttled and retry:
                t_wait = max(int(results[t].get("throttle_time_ms", 0)) for t in throttled) / 1000
                if time.monotonic() + t_wait < deadline:
                    wait = max(wait, t_wait)
                    pending.update(throttled)
            if pending:
                time.sleep(wait)
        return results

    @staticmethod
    def _raise_first(results: dict[str, dict[str, Any]]) -> None:
        throttled = [t for t, r in results.items()
                     if int(r.get("error", 0)) == ErrorCode.THROTTLING_QUOTA_EXCEEDED]
        if throttled:
            raise ThrottlingQuotaExceeded(
                throttled, max(int(results[t].get("throttle_time_ms", 0)) for t in throttled))
        for t, r in results.items():
            code = int(r.get("error", 0))
            if code != ErrorCode.NONE:
                raise RpcError(code, f"{error_name(code)}: {r.get('message', t)}")

    def create_topics(self, specs: list[dict[str, Any]], validate_only: bool = False,
                      retry_on_quota_violation: bool | None = None) -> dict[str, dict[str, Any]]:
        """Create many topics in one request; every topic's result (``error`` 0 or a code)."""
        items = []
        for spec in specs:
            item = dict(spec)
            if item.get("assignment"):
                item["assignment"] = {str(p): r for p, r in item["assignment"].items()}
            items.append(item)
        return self._topics_request(ApiKey.CREATE_TOPICS, items,
                                    {"validate_only": validate_only}, retry_on_quota_violation)

    def create_topic(self, topic: str, partitions: int = 1, replication_factor: int = 1,
                     assignment: dict[int, list[int]] | None = None,
                     wait: float = 15.0, validate_only: bool = False) -> dict[str, Any]:
        spec: dict[str, Any] = {"topic": topic, "partitions": partitions,
                                "replication_factor": replication_factor}
        if assignment:
            spec["assignment"] = assignment
        results = self.create_topics([spec], validate_only)
        self._raise_first(results)
        if wait and not validate_only:
            n = len(assignment) if assignment else partitions
            self.wait_for(lambda: self._leaders_known(topic, n), wait, f"topic {topic} leaders")
        return results[topic]

    def _leaders_known(self, topic: str, n: int) -> bool:
        parts = self.topics.get(topic, {})
        return len(parts) >= n and all(i.leader >= 0 for i in parts.values())

    def delete_topics(self, topics: list[str],
                      retry_on_quota_violation: bool | None = None) -> dict[str, dict[str, Any]]:
        return self._topics_request(ApiKey.DELETE_TOPICS, [{"topic": t} for t in topics],
                                    None, retry_on_quota_violation)

    def delete_topic(self, topic: str, wait: float = 15.0) -> None:
        self._raise_first(self.delete_topics([topic]))
        if wait:
            self.wait_for(lambda: topic not in self.topics, wait, f"deletion of {topic}")

    def add_partitions(self, topic: str, count: int, wait: float = 15.0,
                       validate_only: bool = False,
                       assignments: list[list[int]] | None = None) -> dict[str, Any]:
        """Grow ``topic`` to ``count`` partitions; ``assignments``, if given, are the new
        partitions' replicas in id order (else the controller assigns them)."""
        spec: dict[str, Any] = {"topic": topic, "count": count}
        if assignments:
            spec["assignments"] = [list(r) for r in assignments]
        results = self._topics_request(ApiKey.CREATE_PARTITIONS, [spec],
                                       {"validate_only": validate_only})
        self._raise_first(results)
        if wait and not validate_only:
            self.wait_for(lambda: self._leaders_known(topic, count), wait,
                          f"{count} partitions of {topic}")
        return results[topic]

    def remove_partitions(self, topic: str, partitions: list[int], wait: float = 15.0) -> None:
        deadline = time.monotonic() + self.api_timeout_s
        while True:
            try:
                self.to_controller(ApiKey.REMOVE_PARTITIONS,
                                   {"topic": topic, "partitions": partitions}, deadline)
                break
            except RpcError as exc:
                if exc.code != ErrorCode.THROTTLING_QUOTA_EXCEEDED:
                    raise
                throttle = int(exc.body.get("throttle_time_ms", 0))
                if not self.retry_on_quota_violation or \
                        time.monotonic() + throttle / 1000 >= deadline:
                    raise ThrottlingQuotaExceeded([topic], throttle) from None
                time.sleep(throttle / 1000)
        if wait:
            self.wait_for(lambda: not set(partitions) & set(self.topics.get(topic, {})), wait,
                          f"removal of {topic} partitions {partitions}")

    # -- quotas (seed 001) -----------------------------------------------------------------------
    def alter_quota(self, user: str | None, client_id: str | None,
                    rate: float | None) -> None:
        """Set (``rate`` None: remove) the controller_mutation_rate of one entity; ``user``
        or ``client_id`` may be ``"<default>"``."""
        self.to_controller(ApiKey.ALTER_CLIENT_QUOTAS,
                           {"entries": [{"user": user, "client_id": client_id, "rate": rate}]})

    def describe_quotas(self) -> dict[str, Any]:
        """Stored quotas and, from the controller, each principal's rate/tokens/throttle-time."""
        return self.to_controller(ApiKey.DESCRIBE_CLIENT_QUOTAS, {})

    def reassign(self, topic: str, partition: int, replicas: list[int],
                 wait: float = 30.0) -> None:
        self.to_controller(ApiKey.REASSIGN_PARTITIONS,
                           {"topic": topic, "partition": partition, "replicas": replicas})
        if wait:
            def done() -> bool:
                info = self.topics.get(topic, {}).get(partition)
                return bool(info) and info.replicas == replicas and info.leader in replicas
            self.wait_for(done, wait, f"reassignment of {topic}-{partition} to {replicas}")

    def elect_preferred(self, topic: str, partition: int) -> None:
        self.to_controller(ApiKey.ELECT_PREFERRED, {"topic": topic, "partition": partition})

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
