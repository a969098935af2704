"""The controller's requests to brokers and a broker's to the controller, as Kafka's
ZooKeeper-era inter-broker messages: LeaderAndIsr v4, StopReplica v3, UpdateMetadata v6,
ControlledShutdown v3 (the flexible versions Kafka 2.4-3.x send).

Kafka's fields carry the controller's fencing fields (``controller_id``,
``controller_epoch``, ``broker_epoch`` in the KIP-380 format; -1 there means absent, as no
registration has a negative czxid).  Epochal's fields Kafka lacks ride in the header's tag:
the seed 003 ``max_broker_epoch``, LeaderAndIsr's ``init`` (Kafka's ``type`` only exists
from v5), the topics' incarnations (``topic_ids``: Kafka's topic ids are UUIDs from v5,
Epochal's are integers), UpdateMetadata's ``partial``, ControlledShutdown's
``remaining_isr``.  The domain name ``zk_version`` is Kafka's ``partition_epoch``.
"""

from __future__ import annotations

from typing import Any

from impl.node.codes import ApiKey
from impl.node.kafka.translate import (
    NOTHING,
    Body,
    Translation,
    read_top_level_error,
    top_level_error,
)

NO_EPOCH = -1
LISTENER = "EPOCHAL"  # the one endpoint of each broker UpdateMetadata names
_FENCE = frozenset({"controller_id", "controller_epoch", "broker_epoch"})


def _fence(body: Body) -> Body:
    return {"controller_id": int(body["controller_id"]),
            "controller_epoch": int(body["controller_epoch"]),
            "broker_epoch": int(body.get("broker_epoch", NO_EPOCH))}


def _fence_used(body: Body) -> frozenset[str]:
    """The fencing keys Kafka's fields carry: an explicit ``broker_epoch`` of -1 (Kafka's
    "absent") rides in the tag instead, so that the broker still sees it was sent."""
    return _FENCE - {"broker_epoch"} if body.get("broker_epoch") == NO_EPOCH else _FENCE


def _from_fence(e: Any) -> Body:
    out: Body = {"controller_id": int(e.controller_id), "controller_epoch": int(e.controller_epoch)}
    if int(e.broker_epoch) != NO_EPOCH:
        out["broker_epoch"] = int(e.broker_epoch)
    return out


def _by_topic(items: list[tuple[str, Any]]) -> dict[str, list[Any]]:
    grouped: dict[str, list[Any]] = {}
    for topic, item in items:
        grouped.setdefault(topic, []).append(item)
    return grouped


def _nothing(_body: Body, _request: Body) -> tuple[Body, frozenset[str]]:
    return {}, NOTHING


def _no_partition_errors(_body: Body, _request: Body) -> tuple[Body, frozenset[str]]:
    return {"partition_errors": []}, NOTHING


def _empty(_entity: Any) -> Body:
    return {}


# -- LeaderAndIsr ----------------------------------------------------------------------------

def _lai_request(body: Body) -> tuple[Body, frozenset[str], Body]:
    cepoch = int(body["controller_epoch"])
    parts = list(body["partitions"])
    states = _by_topic([(str(p["topic"]), {
        "partition_index": int(p["partition"]), "controller_epoch": cepoch,
        "leader": int(p["leader"]), "leader_epoch": int(p["leader_epoch"]),
        "isr": [int(b) for b in p["isr"]], "partition_epoch": int(p["zk_version"]),
        "replicas": [int(b) for b in p["replicas"]], "adding_replicas": [],
        "removing_replicas": [], "is_new": False}) for p in parts])
    ids = {str(p["topic"]): int(p["topic_id"]) for p in parts if "topic_id" in p}
    values = {**_fence(body),
              "topic_states": [{"topic_name": t, "partition_states": s} for t, s in states.items()],
              "live_leaders": [{"broker_id": int(b), "host_name": str(h), "port": int(port)}
                               for b, (h, port) in dict(body.get("leaders", {})).items()]}
    return values, _fence_used(body) | {"partitions", "leaders"}, {"topic_ids": ids} if ids else {}


def _topic_id(ids: Body, topic: str) -> Body:
    return {"topic_id": int(ids[topic])} if topic in ids else {}


def _lai_from_request(e: Any, extras: Body) -> Body:
    ids = dict(extras.pop("topic_ids", {}))
    return {**_from_fence(e), "partitions": [
        {"topic": t.topic_name, "partition": int(p.partition_index), "leader": int(p.leader),
         "leader_epoch": int(p.leader_epoch), "isr": [int(b) for b in p.isr],
         "replicas": [int(b) for b in p.replicas], "zk_version": int(p.partition_epoch),
         **_topic_id(ids, t.topic_name)}
        for t in e.topic_states for p in t.partition_states],
        "leaders": {str(int(x.broker_id)): [x.host_name, int(x.port)] for x in e.live_leaders}}


def _lai_response(body: Body, _request: Body) -> tuple[Body, frozenset[str]]:
    return {"partition_errors": [
        {"topic_name": str(t), "partition_index": int(p), "error_code": int(err)}
        for t, p, err in body.get("partitions", [])]}, frozenset({"partitions"})


def _lai_from_response(e: Any) -> Body:
    return {"partitions": [[x.topic_name, int(x.partition_index), int(x.error_code)]
                           for x in e.partition_errors if int(x.error_code)]}


# -- StopReplica -----------------------------------------------------------------------------

def _stop_request(body: Body) -> tuple[Body, frozenset[str], Body]:
    delete = bool(body.get("delete"))
    items = [list(item) for item in body["partitions"]]
    states = _by_topic([(str(i[0]), {"partition_index": int(i[1]), "leader_epoch": -1,
                                     "delete_partition": delete}) for i in items])
    ids = {str(i[0]): int(i[2]) for i in items if len(i) > 2}
    # Kafka's delete flag is per partition: with no partition, it rides in the tag
    used = _fence_used(body) | ({"partitions", "delete"} if items else {"partitions"})
    return {**_fence(body), "topic_states": [{"topic_name": t, "partition_states": s}
                                             for t, s in states.items()]}, \
        used, {"topic_ids": ids} if ids else {}


def _stop_from_request(e: Any, extras: Body) -> Body:
    ids = dict(extras.pop("topic_ids", {}))
    parts = [(t.topic_name, p) for t in e.topic_states for p in t.partition_states]
    out = {**_from_fence(e), "partitions": [
        [t, int(p.partition_index), *([int(ids[t])] if t in ids else [])] for t, p in parts]}
    if parts:
        out["delete"] = any(bool(p.delete_partition) for _, p in parts)
    return out


# -- UpdateMetadata --------------------------------------------------------------------------

def _um_request(body: Body) -> tuple[Body, frozenset[str], Body]:
    cepoch = int(body["controller_epoch"])
    topics = [{"topic_name": str(t), "partition_states": [
        {"partition_index": int(p), "controller_epoch": cepoch, "leader": int(st["leader"]),
         "leader_epoch": int(st["leader_epoch"]), "isr": [int(b) for b in st["isr"]],
         "zk_version": int(st.get("zk_version", -1)),
         "replicas": [int(b) for b in st["replicas"]], "offline_replicas": []}
        for p, st in sorted(dict(parts).items(), key=lambda kv: int(kv[0]))]}
        for t, parts in dict(body["topics"]).items()]
    brokers = [{"id_": int(b), "rack": None, "endpoints": [
        {"port": int(port), "host": str(h), "listener": LISTENER, "security_protocol": 0}]}
        for b, (h, port) in dict(body["brokers"]).items()]
    return {**_fence(body), "topic_states": topics, "live_brokers": brokers}, \
        _fence_used(body) | {"topics", "brokers"}, {}


def _um_from_request(e: Any, _extras: Body) -> Body:
    topics = {t.topic_name: {str(int(p.partition_index)): {
        "leader": int(p.leader), "leader_epoch": int(p.leader_epoch),
        "isr": [int(b) for b in p.isr], "replicas": [int(b) for b in p.replicas]}
        for p in t.partition_states} for t in e.topic_states}
    brokers = {str(int(b.id_)): [b.endpoints[0].host, int(b.endpoints[0].port)]
               for b in e.live_brokers if b.endpoints}
    return {**_from_fence(e), "brokers": brokers, "topics": topics}


# -- ControlledShutdown ----------------------------------------------------------------------

def _cs_request(body: Body) -> tuple[Body, frozenset[str], Body]:
    return {"broker_id": int(body["broker_id"]), "broker_epoch": int(body["broker_epoch"])}, \
        frozenset({"broker_id", "broker_epoch"}), {}


def _cs_from_request(e: Any, _extras: Body) -> Body:
    return {"broker_id": int(e.broker_id), "broker_epoch": int(e.broker_epoch)}


def _cs_response(body: Body, _request: Body) -> tuple[Body, frozenset[str]]:
    return {"remaining_partitions": [
        {"topic_name": str(t), "partition_index": int(p)}
        for t, p in body.get("remaining_leaderships", [])]}, frozenset({"remaining_leaderships"})


def _cs_from_response(e: Any) -> Body:
    return {"remaining_leaderships": [[x.topic_name, int(x.partition_index)]
                                      for x in e.remaining_partitions]}


TRANSLATIONS = (
    Translation(ApiKey.LEADER_AND_ISR, _lai_request, _lai_from_request,
                top_level_error(_lai_response), read_top_level_error(_lai_from_response)),
    Translation(ApiKey.STOP_REPLICA, _stop_request, _stop_from_request,
                top_level_error(_no_partition_errors), read_top_level_error(_empty)),
    Translation(ApiKey.UPDATE_METADATA, _um_request, _um_from_request,
                top_level_error(_nothing), read_top_level_error(_empty)),
    Translation(ApiKey.CONTROLLED_SHUTDOWN, _cs_request, _cs_from_request,
                top_level_error(_cs_response), read_top_level_error(_cs_from_response)),
)
