"""What the controller does with the error codes brokers answer its control requests with.

A refused control request is a fact about the cluster the controller did not know: it must
not be counted as done.  Each code says what the controller's view is missing, and the
controller re-reads exactly that from ZooKeeper -- the source of truth (seed 000) -- rather
than resending the same request, which the broker would refuse again:

* ``STALE_CONTROLLER_EPOCH``: the broker has heard from a newer controller (seed 002).  The
  controller checks ``/controller_epoch``; if it moved, this controller is deposed and
  resigns (its writes would fail anyway, :class:`~impl.node.controller.context.ControllerMoved`).
* ``STALE_BROKER_EPOCH``: the broker registered again after the controller read it (seed
  003's e0 -> e1 -> e2).  The controller re-reads the live brokers (on_broker_change), which
  opens a channel to the new registration and sends it every partition it replicates.
* A LeaderAndISR entry refused with ``FENCED_LEADER_EPOCH`` (the broker holds a newer or
  conflicting decision) or ``INCONSISTENT_TOPIC_ID`` (it holds another incarnation of the
  topic): the controller's cached state of the partition (or topic id) is stale, and is read
  again, so the next decision starts from ZooKeeper.
* Anything else (a malformed request, a server error) cannot be mended by re-reading or by
  sending the same bytes again: it is logged.

Every error is logged with the broker, the request and the partitions it names.  The rule
is one pure function (:func:`response_actions`) so it is tested apart from sockets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from impl.node.wire import ApiKey, ErrorCode, error_name

Key = tuple[str, int]

# per-partition codes that say the controller's cached state of that partition is stale
_STALE_PARTITION = frozenset({int(ErrorCode.FENCED_LEADER_EPOCH), int(ErrorCode.INCONSISTENT_TOPIC_ID)})


@dataclass(frozen=True)
class ResponseActions:
    """What one control response asks of the controller (all empty/False: nothing)."""

    errors: tuple[str, ...] = ()  # one line per error, for the log
    check_controller_epoch: bool = False
    reread_brokers: bool = False
    reread_partitions: frozenset[Key] = field(default_factory=frozenset)
    reread_topics: frozenset[str] = field(default_factory=frozenset)

    def __bool__(self) -> bool:
        return bool(self.errors)


def response_actions(api: ApiKey, error: int, body: dict[str, Any]) -> ResponseActions:
    """Read one control response: the request-level code, and for LeaderAndISR the code of
    each partition (``partitions``: ``[topic, partition, code]``)."""
    errors: list[str] = []
    check = reread_brokers = False
    partitions: set[Key] = set()
    topics: set[str] = set()
    if error != ErrorCode.NONE:
        errors.append(f"{api.name} refused: {error_name(error)}"
                      + (f" ({body['message']})" if isinstance(body, dict) and body.get("message") else ""))
        check = error == ErrorCode.STALE_CONTROLLER_EPOCH
        reread_brokers = error == ErrorCode.STALE_BROKER_EPOCH
    elif api == ApiKey.LEADER_AND_ISR and isinstance(body, dict):
        for item in body.get("partitions", []):
            try:
                topic, partition, code = str(item[0]), int(item[1]), int(item[2])
            except (IndexError, TypeError, ValueError):
                errors.append(f"{api.name}: unreadable partition result {item!r}")
                continue
            if code == ErrorCode.NONE:
                continue
            errors.append(f"{api.name} refused for {topic}-{partition}: {error_name(code)}")
            if code in _STALE_PARTITION:
                partitions.add((topic, partition))
            if code == ErrorCode.INCONSISTENT_TOPIC_ID:
                topics.add(topic)
    return ResponseActions(tuple(errors), check, reread_brokers, frozenset(partitions),
                           frozenset(topics))
