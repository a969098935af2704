"""The Kafka listener: Kafka's clients on a second port, served by the broker's own handlers.

Each request of Kafka's protocol (:mod:`impl.node.kafka`: kio's types, record batches v2)
is translated into the requests the broker already answers, and their answers and errors
back into Kafka's (docs/kafka-protocol.md):

* **Produce** -- each partition's batches become produces (:meth:`ClientRequests.on_produce`),
  with acks 0/1/-1, the batch's producer id and base sequence (KIP-98: the same sequence
  check as the broker protocol's), the partitions of one request concurrently.
* **Fetch** -- each partition a consumer fetch, up to the HW (question 7); when nothing is
  there yet it long-polls once, up to ``max_wait_ms``.  Sessionless (session id 0): every
  request names its partitions and every response answers all of them.
* **ListOffsets** -- earliest (-2) is the log start offset (0 unless retention deleted
  segments), latest (-1) the HW.
* **Metadata** -- the broker's metadata cache (UpdateMetadata), each broker at the Kafka
  port it registered in ``/brokers/ids/N``.
* **InitProducerId** -- a producer id from the broker's reserved block (epoch 0).
* **SaslHandshake / SaslAuthenticate** -- the connection's session
  (:mod:`impl.node.auth.session`): the same SCRAM-SHA-256 exchange, credentials and
  principals as the broker protocol; a request of any other API before it succeeds closes
  the connection (ApiVersions excepted, as Kafka's).
* **CreateTopics / DeleteTopics / CreatePartitions** -- the controller's admin path
  (:mod:`impl.node.broker.kafka_admin`).
* **ElectLeaders, Alter/ListPartitionReassignments, Describe/AlterClientQuotas,
  DescribeConfigs, IncrementalAlterConfigs, DescribeUserScramCredentials** -- the operator
  tools' requests (:mod:`impl.node.broker.kafka_operations`).
* **FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
  OffsetFetch** -- consumer groups (:mod:`impl.node.broker.kafka_groups`); a transactional
  id's coordinator is COORDINATOR_NOT_AVAILABLE: there are no transactions.

Error codes are the broker's, whose numbers are Kafka's (NOT_LEADER is Kafka's
NOT_LEADER_OR_FOLLOWER).  Requests of one connection are answered one at a time, in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import traceback
from typing import Any

from kazoo.exceptions import NoNodeError
from kio.schema.errors import ErrorCode as KafkaError

from impl.node import zk as zkl
from impl.node.auth.scram import MECHANISM
from impl.node.auth.session import Answer, ConnectionSession, session_principal
from impl.node.broker.clients import ClientRequests
from impl.node.broker.core import RequestError
from impl.node.broker.kafka_admin import AS_ADMIN, KafkaAdmin
from impl.node.broker.kafka_groups import GROUPS_AS, KafkaGroups
from impl.node.broker.kafka_operations import OPERATIONS_AS, KafkaOperations
from impl.node.envelope import origin_of
from impl.node.kafka import (
    SERVED,
    BatchRefused,
    KafkaApi,
    KafkaRequest,
    MalformedRequest,
    Refused,
    UnsupportedRequest,
    build,
    decode_request,
    encode_response,
    fetched_batches,
    millis,
    produced_batches,
    request_api_key,
    response_schema,
)
from impl.node.replica import Replica
from impl.node.wire import ApiKey, ProtocolError, read_frame

LATEST, EARLIEST = -1, -2  # ListOffsets' timestamps for the log's end and start
MAX_FETCH_WAIT_MS = 5000  # as the broker protocol's consumer fetch
MAX_FETCH_RECORDS = 5000
LINGER_S = 1.0  # how long a refused connection waits for the client to close it

# what a Kafka client may send before its SASL exchange succeeded: ApiVersions (Kafka's
# clients ask it first, to learn the SASL versions) and the exchange itself
BEFORE_AUTHENTICATION = frozenset({KafkaApi.API_VERSIONS, KafkaApi.SASL_HANDSHAKE,
                                   KafkaApi.SASL_AUTHENTICATE})

# the broker protocol's request whose authorization rule (impl.node.auth.rules) a Kafka
# request passes: reads as a consumer fetch, writes as a produce
RULES_AS: dict[KafkaApi, ApiKey] = {
    KafkaApi.PRODUCE: ApiKey.PRODUCE, KafkaApi.FETCH: ApiKey.FETCH,
    KafkaApi.LIST_OFFSETS: ApiKey.FETCH, KafkaApi.METADATA: ApiKey.METADATA,
    KafkaApi.INIT_PRODUCER_ID: ApiKey.INIT_PRODUCER_ID,
    KafkaApi.FIND_COORDINATOR: ApiKey.METADATA, **GROUPS_AS, **AS_ADMIN, **OPERATIONS_AS,
}


def _error(code: int, message: str = "") -> dict[str, Any]:
    return {"error_code": int(code), "error_message": message or None}


class KafkaClients(KafkaAdmin, KafkaOperations, KafkaGroups, ClientRequests):
    """The Kafka listener's connections and its translation of each request."""

    _kafka_endpoints: dict[int, tuple[str, int] | None] | None = None

    async def _kafka_connection(self, reader: asyncio.StreamReader,
                                writer: asyncio.StreamWriter) -> None:
        session = self.security.admit(writer.get_extra_info("peername"))
        if session is None:  # over the connection cap, shared with the broker protocol's
            with contextlib.suppress(Exception):
                writer.close()
            return
        try:
            while True:
                try:
                    async with asyncio.timeout(session.read_timeout()):
                        payload = await read_frame(reader, session.frame_limit(self.config.max_frame))
                except TimeoutError:
                    session.timed_out()
                    return
                if payload is None:
                    return
                api_key = request_api_key(payload)
                if session.screen_header(f"Kafka api key {api_key}", api_key in BEFORE_AUTHENTICATION):
                    return  # refused on its header, its body undecoded: Kafka answers nothing
                try:
                    request = decode_request(payload)
                except UnsupportedRequest as exc:
                    if exc.api_key != KafkaApi.API_VERSIONS:
                        self.security.log.log("kafka_request", f"closed: {exc}")
                        return
                    writer.write(encode_response(KafkaApi.API_VERSIONS, exc.correlation_id,
                                                 self._api_versions(0, KafkaError.unsupported_version)))
                    await writer.drain()
                    continue
                response, close = await self._kafka_answer(session, request)
                if response is not None:
                    writer.write(encode_response(request.api, request.correlation_id, response))
                    await writer.drain()
                if close:
                    await _linger(reader, writer)
                    return
        except (ProtocolError, MalformedRequest) as exc:
            self.security.log.log("kafka_request", f"closed: {exc}")
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        except Exception as exc:  # noqa: BLE001 - a translation bug: log, close, keep serving
            if self.security.log.log("kafka_handler_error", repr(exc)):
                traceback.print_exc()
        finally:
            self.security.release(session)
            with contextlib.suppress(Exception):
                writer.close()

    async def _kafka_answer(self, session: ConnectionSession,
                            request: KafkaRequest) -> tuple[Any | None, bool]:
        """The response (None: none, acks=0) and whether to close the connection after it."""
        api, version, body = request.api, request.version, request.body
        schema = response_schema(api, version)
        if api == KafkaApi.API_VERSIONS:
            return self._api_versions(version, KafkaError.none), False
        if api == KafkaApi.SASL_HANDSHAKE:
            answer = session.screen(ApiKey.SASL_HANDSHAKE, {"mechanism": body.mechanism})
            assert isinstance(answer, Answer)
            return build(schema, error_code=answer.error, mechanisms=[MECHANISM]), answer.close
        if api == KafkaApi.SASL_AUTHENTICATE:
            answer = session.screen(ApiKey.SASL_AUTHENTICATE, {"auth_bytes": body.auth_bytes})
            assert isinstance(answer, Answer)
            return build(schema, **_error(answer.error, answer.body.get("message", "")),
                         auth_bytes=answer.body.get("auth_bytes", b""),
                         session_lifetime=0), answer.close
        screened = session.screen(RULES_AS[api], {})
        if isinstance(screened, Answer) and api == KafkaApi.ALTER_CLIENT_QUOTAS \
                and not screened.close:  # a client's: each entry refused, as Kafka's
            return self._kafka_quotas_refused(schema, body, screened.error,
                                              str(screened.body.get("message", ""))), False
        if isinstance(screened, Answer):  # not authenticated: Kafka closes without an answer
            return None, screened.close or screened.error != 0
        if api == KafkaApi.FIND_COORDINATOR:
            return await self._find_coordinator(schema, body), False
        if api in GROUPS_AS:  # impl.node.broker.kafka_groups: the group coordinator
            return await self._kafka_group(api, version, schema, body, request.client_id,
                                           session.peer, session_principal(session)), False
        if api in AS_ADMIN:  # impl.node.broker.kafka_admin: the controller's admin path
            return await self._kafka_admin(api, version, schema, body, screened.get("user"),
                                           request.client_id), False
        if api in OPERATIONS_AS:  # impl.node.broker.kafka_operations: the operator tools'
            return await self._kafka_operation(api, schema, body, screened.get("user"),
                                               request.client_id, origin_of(0, session.peer, session_principal(session))), False
        handler = {KafkaApi.PRODUCE: self._kafka_produce, KafkaApi.FETCH: self._kafka_fetch,
                   KafkaApi.LIST_OFFSETS: self._kafka_list_offsets,
                   KafkaApi.METADATA: self._kafka_metadata,
                   KafkaApi.INIT_PRODUCER_ID: self._kafka_init_producer_id}[api]
        return await handler(schema, body), False

    # -- discovery ------------------------------------------------------------------------
    def _api_versions(self, version: int, error: KafkaError) -> Any:
        keys = [{"api_key": int(api), "min_version": low, "max_version": high}
                for api, (low, high) in sorted(SERVED.items())]
        return build(response_schema(KafkaApi.API_VERSIONS, version), error_code=error,
                     api_keys=keys, throttle_time=0)

    async def _kafka_metadata(self, schema: type, body: Any) -> Any:
        meta = await self.on_metadata({})
        live = sorted(int(b) for b in meta["brokers"])
        endpoints = await self._kafka_broker_endpoints(live)
        brokers = [{"node_id": b, "host": endpoints[b][0], "port": endpoints[b][1], "rack": None}
                   for b in live if endpoints.get(b) is not None]
        asked = getattr(body, "topics", None)
        names = sorted(meta["topics"]) if not asked else [t.name for t in asked]
        # a partition's leader counts as live only if it is listed: a client may hold no
        # address for any other (a registration gone before the metadata's cache moved)
        listed = {b["node_id"] for b in brokers}
        topics = [self._kafka_topic(name, meta["topics"].get(name), listed) for name in names]
        return build(schema, throttle_time=0, brokers=brokers, cluster_id=None,
                     controller_id=int(meta.get("controller_id", -1)), topics=topics)

    @staticmethod
    def _kafka_topic(name: str, partitions: dict[str, Any] | None, live: set[int]) -> dict[str, Any]:
        if partitions is None:
            return {"error_code": KafkaError.unknown_topic_or_partition, "name": name,
                    "topic_id": None, "is_internal": False, "partitions": []}
        rows = []
        for p, st in sorted(partitions.items(), key=lambda kv: int(kv[0])):
            # Kafka's MetadataCache: a leader not among the live brokers is no leader (-1)
            leader = int(st["leader"]) if int(st["leader"]) in live else -1
            rows.append({"error_code": KafkaError.none if leader != -1 else KafkaError.leader_not_available,
                         "partition_index": int(p), "leader_id": leader,
                         "leader_epoch": int(st["leader_epoch"]),
                         "replica_nodes": list(st["replicas"]), "isr_nodes": list(st["isr"]),
                         "offline_replicas": [b for b in st["replicas"] if b not in live]})
        return {"error_code": KafkaError.none, "name": name, "topic_id": None,
                "is_internal": False, "partitions": rows}

    async def _kafka_broker_endpoints(self, brokers: list[int]) -> dict[int, tuple[str, int] | None]:
        """Each broker's Kafka listener, from its registration (cached until the set of
        registrations changes; None: it registered none)."""
        if self._kafka_endpoints is None:
            self._kafka_endpoints = {}
            loop = asyncio.get_running_loop()
            self.zk.ChildrenWatch(zkl.BROKER_IDS, lambda _children: loop.call_soon_threadsafe(
                self._forget_kafka_endpoints))
        missing = [b for b in brokers if b not in self._kafka_endpoints]
        if missing:
            found = await self._zk(lambda: {b: self._kafka_endpoint_from_zk(b) for b in missing})
            self._kafka_endpoints.update(found)
        return dict(self._kafka_endpoints)

    def _forget_kafka_endpoints(self) -> None:
        if self._kafka_endpoints is not None:
            self._kafka_endpoints.clear()

    def _kafka_endpoint_from_zk(self, broker: int) -> tuple[str, int] | None:
        try:
            data, _ = self.zk.get(zkl.broker_path(broker))
        except NoNodeError:
            return None
        d = zkl.decode(data)
        return (str(d["host"]), int(d["kafka_port"])) if d.get("kafka_port") else None

    # -- producers ------------------------------------------------------------------------
    async def _kafka_init_producer_id(self, schema: type, body: Any) -> Any:
        if getattr(body, "transactional_id", None) is not None:
            return build(schema, throttle_time=0, producer_id=-1, producer_epoch=-1,
                         **_error(KafkaError.coordinator_not_available,
                                  "no transaction coordinator: transactions are not served"))
        try:
            answer = await self.on_init_producer_id({})
        except RequestError as exc:
            return build(schema, throttle_time=0, producer_id=-1, producer_epoch=-1,
                         **_error(exc.code, str(exc)))
        return build(schema, throttle_time=0, error_code=KafkaError.none,
                     producer_id=answer["producer_id"], producer_epoch=answer["producer_epoch"])

    async def _kafka_produce(self, schema: type, body: Any) -> Any | None:
        acks, timeout_ms = int(body.acks), millis(body.timeout)
        work = [(topic.name, p.index, p.records or b"") for topic in body.topic_data
                for p in topic.partition_data]
        results = await asyncio.gather(*(self._kafka_produce_partition(t, p, data, acks, timeout_ms)
                                         for t, p, data in work))
        if acks == 0:
            return None
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (topic, _, _), result in zip(work, results, strict=True):
            by_topic.setdefault(topic, []).append(result)
        return build(schema, throttle_time=0, responses=[
            {"name": t, "partition_responses": rows} for t, rows in by_topic.items()])

    async def _kafka_produce_partition(self, topic: str, partition: int, data: bytes, acks: int,
                                       timeout_ms: int) -> dict[str, Any]:
        row: dict[str, Any] = {"index": partition, "base_offset": -1, "log_append_time": None,
                               "log_start_offset": -1, "record_errors": []}
        try:
            base_offset = -1
            batches = produced_batches(data)
            if not batches:
                raise BatchRefused(KafkaError.invalid_record, "no record batch")
            for batch in batches:
                if batch.producer_id >= 0 and batch.producer_epoch != 0:
                    raise BatchRefused(KafkaError.invalid_producer_epoch,
                                       f"producer epoch {batch.producer_epoch} (always 0 here)")
                answer = await self.on_produce({
                    "topic": topic, "partition": partition, "values": list(batch.values),
                    "acks": acks, "timeout_ms": timeout_ms, "producer_id": batch.producer_id,
                    "base_sequence": batch.base_sequence})
                if answer is not None and base_offset < 0:
                    base_offset = int(answer["base_offset"])
        except (RequestError, Refused) as exc:
            return {**row, **_error(exc.code, str(exc))}
        return {**row, **_error(KafkaError.none), "base_offset": base_offset, "log_start_offset": 0}

    # -- consumers ------------------------------------------------------------------------
    def _kafka_leader(self, topic: str, partition: int, current_leader_epoch: int) -> Replica:
        """The replica this broker leads, fenced by the client's leader epoch (KIP-320:
        FENCED_LEADER_EPOCH if the client's is older, UNKNOWN_LEADER_EPOCH if newer)."""
        r = self._leader(topic, partition)
        if 0 <= current_leader_epoch < r.leader_epoch:
            raise Refused(KafkaError.fenced_leader_epoch,
                          f"leader epoch {current_leader_epoch} < {r.leader_epoch}")
        if current_leader_epoch > r.leader_epoch:
            raise Refused(KafkaError.unknown_leader_epoch,
                          f"leader epoch {current_leader_epoch} > {r.leader_epoch}")
        return r

    async def _kafka_fetch(self, schema: type, body: Any) -> Any:
        """Every partition read at once; if none had records, one wait for any change (up to
        ``max_wait_ms``) and every partition read again."""
        responses = await self._kafka_fetch_once(body)
        wait_ms = min(millis(body.max_wait), MAX_FETCH_WAIT_MS)
        if wait_ms > 0 and not any(p["records"] for t in responses for p in t["partitions"]):
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed_any.wait(), wait_ms / 1000)
            responses = await self._kafka_fetch_once(body)
        return build(schema, throttle_time=0, error_code=KafkaError.none, session_id=0,
                     responses=responses)

    async def _kafka_fetch_once(self, body: Any) -> list[dict[str, Any]]:
        budget = max(0, int(body.max_bytes))
        responses = []
        for topic in body.topics:
            rows = []
            for p in topic.partitions:
                row = await self._kafka_fetch_partition(topic.topic, p, budget)
                budget -= len(row["records"])
                rows.append(row)
            responses.append({"topic": topic.topic, "partitions": rows})
        return responses

    async def _kafka_fetch_partition(self, topic: str, p: Any, budget: int) -> dict[str, Any]:
        row: dict[str, Any] = {"partition_index": p.partition, "high_watermark": -1,
                               "last_stable_offset": -1, "log_start_offset": -1,
                               "aborted_transactions": None, "preferred_read_replica": -1,
                               "records": b""}
        try:
            r = self._kafka_leader(topic, p.partition, getattr(p, "current_leader_epoch", -1))
            # the response's max_bytes spent: the HW only (the consumer fetch would answer
            # the first record whole however small its limit, KIP-74)
            answer = {"hw": r.hw, "records": []} if budget <= 0 else await self._consumer_fetch(
                r, int(p.fetch_offset), MAX_FETCH_RECORDS, 0,
                min(int(p.partition_max_bytes), budget))
        except (RequestError, Refused) as exc:
            return {**row, "error_code": int(exc.code)}
        return {**row, "error_code": KafkaError.none, "high_watermark": answer["hw"],
                "last_stable_offset": answer["hw"],
                "log_start_offset": answer.get("log_start_offset", r.log.log_start_offset),
                "records": fetched_batches(answer["records"])}

    async def _kafka_list_offsets(self, schema: type, body: Any) -> Any:
        topics = []
        for topic in body.topics:
            rows = []
            for p in topic.partitions:
                row: dict[str, Any] = {"partition_index": p.partition_index, "timestamp": -1,
                                       "offset": -1, "leader_epoch": -1}
                try:
                    r = self._kafka_leader(topic.name, p.partition_index,
                                           getattr(p, "current_leader_epoch", -1))
                    if p.timestamp not in (LATEST, EARLIEST):
                        raise Refused(KafkaError.unsupported_for_message_format,
                                      "records carry no timestamps: only earliest (-2) and "
                                      "latest (-1)")
                    row.update(error_code=KafkaError.none, leader_epoch=r.leader_epoch,
                               offset=r.hw if p.timestamp == LATEST else r.log.log_start_offset)
                except (RequestError, Refused) as exc:
                    row["error_code"] = int(exc.code)
                rows.append(row)
            topics.append({"name": topic.name, "partitions": rows})
        return build(schema, throttle_time=0, topics=topics)


async def _linger(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Close after a last answer (a failed authentication) only once the client has read
    it: wait, briefly, for the client to close first.  A client that sees the end of the
    stream in the same read as the answer may drop the answer and report a lost
    connection instead of the error (kafka-python 3.0 does)."""
    with contextlib.suppress(Exception):
        async with asyncio.timeout(LINGER_S):
            while await reader.read(65536):
                pass
