"""The admin requests that reach the controller as Kafka's messages: CreateTopics v6,
DeleteTopics v5 and CreatePartitions v3 (the flexible versions that know
THROTTLING_QUOTA_EXCEEDED, KIP-599), ElectLeaders v2, AlterPartitionReassignments v0,
DescribeClientQuotas v1 and AlterClientQuotas v1.

Both shapes of a body (docs/wire.md 5) become Kafka's topic list: version 1's ``topics``,
version 0's one ``topic`` (the tag's ``single`` says which to give back).  Epochal's version
(0 or 1, :data:`impl.node.codes.CONTROLLER_VERSIONS`) is not Kafka's: it rides in the tag
(:mod:`impl.node.kafka.translate`).  The principal, the forwarding fields and DeleteTopics'
``validate_only`` are not consumed and ride in the tag as they are.

The one-partition requests (ElectLeaders, AlterPartitionReassignments) and the quota requests
answer a refusal in Kafka's request-level ``error_code`` (and ``error_message`` where the
schema has one) and in every partition's or entry's result as well, so a Kafka client
reading either finds it; the rest of the error body (``controller_id``) rides in the tag.
A quota entity is Kafka's: ``user`` and ``client_id`` are the ``user`` and ``client-id``
components (None: no such component), the default entity ``<default>`` is Kafka's null
``entity_name``.

An answer's topics are Kafka's per-topic results, each topic's error in its ``error_code``
and ``error_message``; what Kafka lacks (a topic's ``throttle_time_ms``, ``assignment``,
``added``) rides in the tag as ``topic_extras``, one map per result.  A request refused as
a whole (NOT_CONTROLLER, authorization, ...) answers every topic it named with that error,
and the tag's ``error_code`` says the whole request was refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from impl.node.codes import ApiKey
from impl.node.kafka.translate import NOTHING, Body, Fields, Translation
from impl.node.quota import DEFAULT

# the fields of a topic's result that are Kafka's (the rest ride in ``topic_extras``)
_RESULT_KEYS = frozenset({"topic", "error", "message"})
_SHAPE_KEYS = frozenset({"topics", "topic"})
# CreateTopics' result fields (KIP-525) that Epochal does not answer with
_CREATED: Body = {"topic_config_error_code": 0, "num_partitions": -1, "replication_factor": -1,
                  "configs": None}


def _ms(duration: Any) -> int:
    return int(duration.total_seconds() * 1000)


def _specs(body: Body, single: tuple[str, ...]) -> tuple[list[Any], Body]:
    """The body's topic specs (version 1's list, or version 0's one topic built from the
    ``single`` keys) and the tag's shape marker."""
    if "topics" in body:
        return list(body["topics"]), {}
    return [{k: body[k] for k in ("topic", *single) if k in body}], {"single": True}


def _requested(request: Body) -> list[str]:
    """The topics a request names, in its order (the answer's topics when it is refused)."""
    if "topics" not in request:
        return [str(request["topic"])] if "topic" in request else []
    return [str(t["topic"]) if isinstance(t, dict) else str(t) for t in request["topics"]]


def _answer(results: str, defaults: Body) -> Callable[[int, Body, Body], Fields]:
    """The ``response`` of an admin API whose Kafka answer lists ``results`` (each with
    ``defaults`` for the fields of Kafka's result Epochal has no value for)."""
    def response(error: int, body: Body, request: Body) -> Fields:
        throttle = int(body.get("throttle_time_ms", 0))
        if error:
            items: list[Body] = [{"topic": t, "error": error, "message": body.get("message")}
                                 for t in _requested(request)]
            extras: Body = {"error_code": error}
            used = frozenset({"throttle_time_ms"})
        elif "topics" in body:
            items, extras, used = list(body["topics"]), {}, frozenset({"throttle_time_ms", "topics"})
        else:
            items = [{k: v for k, v in body.items() if k != "throttle_time_ms"}]
            extras, used = {"single": True}, frozenset(body)
        rest = [{k: v for k, v in t.items() if k not in _RESULT_KEYS} for t in items]
        if any(rest) and not error:
            extras["topic_extras"] = rest
        return {"throttle_time": throttle, results: [
            {"name": str(t["topic"]), "error_code": int(t.get("error", 0)),
             "error_message": t.get("message"), **defaults}
            for t in items]}, used, extras
    return response


def _read_answer(results: str) -> Callable[[Any, Body], tuple[int, Body]]:
    """The ``from_response`` that goes with :func:`_answer`."""
    def from_response(e: Any, extras: Body) -> tuple[int, Body]:
        throttle = {"throttle_time_ms": _ms(e.throttle_time)}
        error = int(extras.pop("error_code", 0))
        if error:
            return error, throttle
        rest = list(extras.pop("topic_extras", [{}] * len(getattr(e, results))))
        topics = [{"topic": r.name, "error": int(r.error_code),
                   **({"message": r.error_message} if r.error_message is not None else {}), **x}
                  for r, x in zip(getattr(e, results), rest, strict=True)]
        if extras.pop("single", False):
            (only,) = topics
            return 0, {**{k: v for k, v in only.items() if k not in ("error", "message")},
                       **throttle}
        return 0, {"topics": topics, **throttle}
    return from_response


def _give_back(topics: list[Body], extras: Body) -> Body:
    """A request body from its topic specs: version 0's shape when the tag says so."""
    if extras.pop("single", False):
        (only,) = topics
        return only
    return {"topics": topics}


# -- CreateTopics ----------------------------------------------------------------------------

def _or_none(spec: Body, key: str) -> int:
    """A count the spec may leave out (absent or None): Kafka's -1, "none"."""
    value = spec.get(key)
    return -1 if value is None else int(value)


def _create_topics_request(body: Body) -> Fields:
    specs, extras = _specs(body, ("partitions", "replication_factor", "assignment"))
    topics = [{"name": str(s["topic"]), "num_partitions": _or_none(s, "partitions"),
               "replication_factor": _or_none(s, "replication_factor"),
               "assignments": [{"partition_index": int(p), "broker_ids": [int(b) for b in rs]}
                               for p, rs in dict(s.get("assignment") or {}).items()],
               "configs": []} for s in specs]
    return {"topics": topics, "validate_only": bool(body.get("validate_only", False))}, \
        frozenset(_SHAPE_KEYS | {"validate_only", "partitions", "replication_factor",
                                 "assignment"}), extras


def _create_topics_from_request(e: Any, extras: Body) -> Body:
    specs: list[Body] = []
    for t in e.topics:
        spec: Body = {"topic": t.name}
        if int(t.num_partitions) != -1:
            spec["partitions"] = int(t.num_partitions)
        if int(t.replication_factor) != -1:
            spec["replication_factor"] = int(t.replication_factor)
        if t.assignments:
            spec["assignment"] = {str(int(a.partition_index)): [int(b) for b in a.broker_ids]
                                  for a in t.assignments}
        specs.append(spec)
    out = _give_back(specs, extras)
    return {**out, "validate_only": True} if e.validate_only else out


# -- DeleteTopics ----------------------------------------------------------------------------

def _delete_topics_request(body: Body) -> Fields:
    names = [str(t) for t in body["topics"]] if "topics" in body else [str(body["topic"])]
    return {"topic_names": names, "timeout": 60000}, _SHAPE_KEYS, \
        {} if "topics" in body else {"single": True}


def _delete_topics_from_request(e: Any, extras: Body) -> Body:
    if extras.pop("single", False):
        (only,) = e.topic_names
        return {"topic": only}
    return {"topics": list(e.topic_names)}


# -- CreatePartitions ------------------------------------------------------------------------

def _create_partitions_request(body: Body) -> Fields:
    specs, extras = _specs(body, ("count",))
    topics = [{"name": str(s["topic"]), "count": int(s["count"]),
               "assignments": None if s.get("assignments") is None else
               [{"broker_ids": [int(b) for b in rs]} for rs in s["assignments"]]}
              for s in specs]
    return {"topics": topics, "timeout": 60000,
            "validate_only": bool(body.get("validate_only", False))}, \
        frozenset(_SHAPE_KEYS | {"validate_only", "count"}), extras


def _create_partitions_from_request(e: Any, extras: Body) -> Body:
    specs: list[Body] = []
    for t in e.topics:
        spec: Body = {"topic": t.name, "count": int(t.count)}
        if t.assignments is not None:
            spec["assignments"] = [[int(b) for b in a.broker_ids] for a in t.assignments]
        specs.append(spec)
    out = _give_back(specs, extras)
    return {**out, "validate_only": True} if e.validate_only else out


_TOPIC_TRANSLATIONS = (
    Translation(ApiKey.CREATE_TOPICS, _create_topics_request, _create_topics_from_request,
                _answer("topics", _CREATED), _read_answer("topics")),
    Translation(ApiKey.DELETE_TOPICS, _delete_topics_request, _delete_topics_from_request,
                _answer("responses", {}), _read_answer("responses")),
    Translation(ApiKey.CREATE_PARTITIONS, _create_partitions_request,
                _create_partitions_from_request, _answer("results", {}), _read_answer("results")),
)


# -- a refusal's Kafka fields ----------------------------------------------------------------

def _refusal(error: int, body: Body) -> tuple[Body, frozenset[str]]:
    """Kafka's request-level error fields and throttle time of an answer (its body is an
    error body when ``error``), and the keys they consume."""
    throttle = int(body.get("throttle_time_ms", 0)) if error else 0
    return {"throttle_time": throttle, "error_code": error}, \
        frozenset({"throttle_time_ms"}) if error else NOTHING


def _refused(e: Any, message: str | None) -> tuple[int, Body]:
    """The (error, body) of an answer read back: a refusal's message and throttle time."""
    error = int(e.error_code)
    if not error:
        return 0, {}
    return error, {"throttle_time_ms": _ms(e.throttle_time),
                   **({"message": message} if message is not None else {})}


def _one_partition(request: Body) -> list[tuple[str, int]]:
    """The partition a one-partition request names (none: the request is unknown)."""
    return [(str(request["topic"]), int(request["partition"]))] \
        if "topic" in request and "partition" in request else []


# -- ElectLeaders ----------------------------------------------------------------------------

PREFERRED = 0  # ElectLeaders' election_type: the preferred replica (1: unclean)


def _elect_leaders_request(body: Body) -> Fields:
    return {"election_type": PREFERRED, "timeout": 60000, "topic_partitions": [
        {"topic": str(body["topic"]), "partitions": [int(body["partition"])]}]}, \
        frozenset({"topic", "partition"}), {}


def _elect_leaders_from_request(e: Any, extras: Body) -> Body:
    if int(e.election_type) != PREFERRED or e.topic_partitions is None:
        raise ValueError("Epochal elects the preferred replica of named partitions only")
    ((topic, partition),) = [(t.topic, p) for t in e.topic_partitions for p in t.partitions]
    return {"topic": topic, "partition": int(partition)}


def _elect_leaders_response(error: int, body: Body, request: Body) -> Fields:
    top, used = _refusal(error, body)
    named = _one_partition(request)
    message = body.get("message") if named else None  # else it rides in the tag
    return {**top, "replica_election_results": [
        {"topic": t, "partition_result": [
            {"partition_id": p, "error_code": error, "error_message": message}]}
        for t, p in named]}, used | (frozenset({"message"}) if named and error else NOTHING), {}


def _elect_leaders_from_response(e: Any, _extras: Body) -> tuple[int, Body]:
    messages = [r.error_message for t in e.replica_election_results for r in t.partition_result]
    return _refused(e, messages[0] if messages else None)


# -- AlterPartitionReassignments -------------------------------------------------------------

def _reassign_request(body: Body) -> Fields:
    return {"timeout": 60000, "topics": [{"name": str(body["topic"]), "partitions": [
        {"partition_index": int(body["partition"]),
         "replicas": [int(b) for b in body["replicas"]]}]}]}, \
        frozenset({"topic", "partition", "replicas"}), {}


def _reassign_from_request(e: Any, extras: Body) -> Body:
    ((topic, p),) = [(t.name, p) for t in e.topics for p in t.partitions]
    if p.replicas is None:
        raise ValueError("Epochal cannot cancel a reassignment (replicas null)")
    return {"topic": topic, "partition": int(p.partition_index),
            "replicas": [int(b) for b in p.replicas]}


def _reassign_response(error: int, body: Body, request: Body) -> Fields:
    top, used = _refusal(error, body)
    named = [(str(body["topic"]), int(body["partition"]))] if not error else \
        _one_partition(request)
    message = body.get("message") if error else None
    return {**top, "error_message": message, "responses": [
        {"name": t, "partitions": [
            {"partition_index": p, "error_code": error, "error_message": message}]}
        for t, p in named]}, \
        used | (frozenset({"message"}) if error else frozenset({"topic", "partition"})), {}


def _reassign_from_response(e: Any, _extras: Body) -> tuple[int, Body]:
    error, body = _refused(e, e.error_message)
    if error:
        return error, body
    ((topic, p),) = [(t.name, p) for t in e.responses for p in t.partitions]
    return 0, {"topic": topic, "partition": int(p.partition_index)}


# -- client quotas ---------------------------------------------------------------------------

_QUOTA_KEY = "controller_mutation_rate"
_COMPONENTS = (("user", "user"), ("client_id", "client-id"))  # Epochal's key, Kafka's type


def _entity(item: Body) -> list[Body]:
    """Kafka's entity components of a quota entry (``<default>`` is Kafka's null name)."""
    return [{"entity_type": kind, "entity_name": None if item[key] == DEFAULT else str(item[key])}
            for key, kind in _COMPONENTS if item.get(key) is not None]


def _from_entity(entity: Any) -> Body:
    names = {c.entity_type: DEFAULT if c.entity_name is None else c.entity_name for c in entity}
    unknown = set(names) - {kind for _, kind in _COMPONENTS}
    if unknown:
        raise ValueError(f"quota entity types {sorted(unknown)}: Epochal knows user, client-id")
    return {key: names.get(kind) for key, kind in _COMPONENTS}


def _describe_quotas_request(body: Body) -> Fields:
    return {"components": [], "strict": False}, NOTHING, {}  # every quota (the principal: tag)


def _describe_quotas_from_request(e: Any, extras: Body) -> Body:
    if e.components or e.strict:
        raise ValueError("Epochal describes every quota: no components, not strict")
    return {}


def _describe_quotas_response(error: int, body: Body, request: Body) -> Fields:
    top, used = _refusal(error, body)
    if error:
        return {**top, "error_message": body.get("message"), "entries": None}, \
            used | frozenset({"message"}), {}
    return {**top, "error_message": None, "entries": [
        {"entity": _entity(q), "values": [{"key": _QUOTA_KEY, "value": float(q[_QUOTA_KEY])}]}
        for q in body["quotas"]]}, frozenset({"quotas"}), {}


def _describe_quotas_from_response(e: Any, _extras: Body) -> tuple[int, Body]:
    error, body = _refused(e, e.error_message)
    if error:
        return error, body
    return 0, {"quotas": [{**_from_entity(q.entity), **{v.key: float(v.value) for v in q.values}}
                          for q in e.entries or ()]}


def _alter_quotas_request(body: Body) -> Fields:
    entries = [{"entity": _entity(q), "ops": [
        {"key": _QUOTA_KEY, "value": 0.0 if q.get("rate") is None else float(q["rate"]),
         "remove": q.get("rate") is None}]} for q in body["entries"]]
    return {"entries": entries, "validate_only": bool(body.get("validate_only", False))}, \
        frozenset({"entries", "validate_only"}), {}


def _alter_quotas_from_request(e: Any, extras: Body) -> Body:
    entries: list[Body] = []
    for q in e.entries:
        ((op),) = [op for op in q.ops if op.key == _QUOTA_KEY] or [None]
        if op is None or len(q.ops) != 1:
            raise ValueError(f"Epochal alters {_QUOTA_KEY} only")
        entries.append({**_from_entity(q.entity), "rate": None if op.remove else float(op.value)})
    return {"entries": entries, **({"validate_only": True} if e.validate_only else {})}


def _alter_quotas_response(error: int, body: Body, request: Body) -> Fields:
    throttle = int(body.get("throttle_time_ms", 0)) if error else 0
    named = [_entity(q) for q in request.get("entries", [])]
    altered = body.get("altered")
    # the count is Kafka's number of entries (else it rides in the tag); a refusal is each
    # entry's error, and the tag's error_code says the whole request was refused
    used = frozenset({"throttle_time_ms", *(("message",) if named else ())}) if error else \
        frozenset({"altered"}) if altered == len(named) else NOTHING
    return {"throttle_time": throttle, "entries": [
        {"error_code": error, "error_message": body.get("message") if error else None,
         "entity": entity} for entity in named]}, used, {"error_code": error} if error else {}


def _alter_quotas_from_response(e: Any, extras: Body) -> tuple[int, Body]:
    error = int(extras.pop("error_code", 0))
    if error:
        messages = [q.error_message for q in e.entries if q.error_message is not None]
        return error, {"throttle_time_ms": _ms(e.throttle_time),
                       **({"message": messages[0]} if messages else {})}
    return 0, {"altered": len(e.entries)}


TRANSLATIONS: tuple[Translation, ...] = (
    *_TOPIC_TRANSLATIONS,
    Translation(ApiKey.ELECT_PREFERRED, _elect_leaders_request, _elect_leaders_from_request,
                _elect_leaders_response, _elect_leaders_from_response),
    Translation(ApiKey.REASSIGN_PARTITIONS, _reassign_request, _reassign_from_request,
                _reassign_response, _reassign_from_response),
    Translation(ApiKey.DESCRIBE_CLIENT_QUOTAS, _describe_quotas_request,
                _describe_quotas_from_request, _describe_quotas_response,
                _describe_quotas_from_response),
    Translation(ApiKey.ALTER_CLIENT_QUOTAS, _alter_quotas_request, _alter_quotas_from_request,
                _alter_quotas_response, _alter_quotas_from_response),
)
