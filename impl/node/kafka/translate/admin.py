"""The admin requests that reach the controller as Kafka's messages: CreateTopics v6,
DeleteTopics v5 and CreatePartitions v3 (the flexible versions that know
THROTTLING_QUOTA_EXCEEDED, KIP-599).

Both shapes of a body (docs/wire.md 5) become Kafka's topic list: version 1's ``topics``,
version 0's one ``topic`` (the tag's ``single`` says which to give back).  Epochal's version
(0 or 1, :data:`impl.node.codes.CONTROLLER_VERSIONS`) is not Kafka's: it rides in the tag
(:mod:`impl.node.kafka.translate`).  The principal, the forwarding fields and DeleteTopics'
``validate_only`` are not consumed and ride in the tag as they are.

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
from impl.node.kafka.translate import Body, Fields, Translation

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


TRANSLATIONS = (
    Translation(ApiKey.CREATE_TOPICS, _create_topics_request, _create_topics_from_request,
                _answer("topics", _CREATED), _read_answer("topics")),
    Translation(ApiKey.DELETE_TOPICS, _delete_topics_request, _delete_topics_from_request,
                _answer("responses", {}), _read_answer("responses")),
    Translation(ApiKey.CREATE_PARTITIONS, _create_partitions_request,
                _create_partitions_from_request, _answer("results", {}), _read_answer("results")),
)
