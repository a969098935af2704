"""Typed trace events: one constructor per kind, made from the schema's tables, checked when
an event is written rather than when the judge reads it.

``events.send_fetch(topic="t", partition=0, leader=1, fetch_offset=4, leader_epoch=2,
post={"hw": 3, "leo": 4})`` is an :class:`Event` a :class:`traces.recorder.TraceRecorder`
writes.  Each constructor's keyword parameters are the kind's ``PARAMS`` (``traces.schema``):
the required ones without a default, the optional ones omitted from the event unless given.
``topic`` and ``partition`` are parameters of the partition-scope kinds only; ``zxid`` is
required of the kinds whose step is a ZooKeeper write of their own, optional of those that
may know one, and not a parameter of those that must not carry one (``schema.ZXID``).
Fields the schema does not declare (informational: the judge never reads them) are passed
as ``informational={...}`` and may not shadow a declared one.  A wrong name is a TypeError at
the call; a wrong type or a missing required field (params or post) is an :class:`EventError`
from the constructor.  A kind added to the schema gets its constructor with no code here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from traces import schema
from traces.vocabulary import KINDS

RETENTION_MARK = "leader_log_start_offset"
"""The informational field of the ``truncate`` event a follower records when it starts its log
at its leader's log start offset -- which only log retention causes, and the model knows no
retention: the judge reads this one informational field, to refuse such a trace with that
reason rather than a mismatch (retention stays off in judged runs, docs/conformance.md)."""


TRUNCATION_COMPLETE = "truncation_complete"
"""The informational field of a ``truncate`` event that says whether its OffsetsForLeaderEpoch
round ended the truncation (Kafka's ``truncationCompleted``): false when the leader answered
an epoch the follower lacks, and the follower asks again.  The judge does not read it (it
matches a later round by the model state, ``conformance.judge.search.later_truncation_round``);
a harness that grants each round reads it to know another round is coming."""


class EventError(ValueError):
    """An event that does not match the trace schema (one line)."""


_ABSENT: Any = object()


@dataclass(frozen=True, slots=True)
class Event:
    """One step as a recorder writes it, before the recorder adds run, node, seq, clock and ts.
    Made by the constructors below; checked against the schema when made (and when copied
    with ``dataclasses.replace``)."""

    kind: str
    params: Mapping[str, Any] = field(default_factory=dict)
    post: Mapping[str, Any] | None = None
    topic: str | None = None
    partition: int | None = None
    zxid: int | None = None

    def __post_init__(self) -> None:
        reason = check(self)
        if reason is not None:
            raise EventError(f"{self.kind} event: {reason}")


def check(event: Event) -> str | None:
    """What is wrong with ``event`` by the schema (``traces.schema.validate``'s rules for the
    fields an event's writer chooses), or None."""
    spec = KINDS.get(event.kind)
    if spec is None:
        return f"unknown_kind: {event.kind!r}"
    if spec.scope == "partition" and (type(event.topic) is not str or type(event.partition) is not int
                                      or event.partition < 0):
        return f"topic and partition required (partition-scope kind), got {event.topic!r}, {event.partition!r}"
    if event.zxid is not None and type(event.zxid) is not int:
        return f"wrong_type: zxid should be int?, got {type(event.zxid).__name__}"
    reason = schema.check_fields(event.params, schema.PARAMS.get(event.kind, ()), "params.")
    if reason is None and event.post is not None:
        reason = schema.check_fields(event.post, schema.POST.get(event.kind, ()), "post.")
    return reason


def _signature(kind: str) -> tuple[list[str], list[str]]:
    """The constructor's parameters (as source) and the lines that build its params dict."""
    spec, params = KINDS[kind], schema.PARAMS.get(kind, ())
    args = ["*"]
    if spec.scope == "partition":
        args += ["topic", "partition"]
    zxid = schema.ZXID[kind]
    if zxid == schema.ZXID_REQUIRED:
        args.append("zxid")
    args += [f.name for f in params if f.required]
    args += [f"{f.name}=_ABSENT" for f in params if not f.required]
    if zxid == schema.ZXID_OPTIONAL:
        args.append("zxid=None")
    args += ["post=None", "informational=None"]
    body = [f"    params = {{{', '.join(f'{f.name!r}: {f.name}' for f in params if f.required)}}}"]
    for f in params:
        if not f.required:
            body += [f"    if {f.name} is not _ABSENT:", f"        params[{f.name!r}] = {f.name}"]
    return args, body


def _constructor(kind: str) -> Callable[..., Event]:
    args, body = _signature(kind)
    scope = KINDS[kind].scope == "partition"
    zxid = "zxid" if schema.ZXID[kind] != schema.ZXID_ABSENT else "None"
    declared = frozenset(f.name for f in schema.PARAMS.get(kind, ()))
    lines = [f"def {kind}({', '.join(args)}):",
             *body,
             "    if informational:",
             "        shadowed = _DECLARED & informational.keys()",
             "        if shadowed:",
             f"            raise _EventError(f'{kind} event: informational fields {{sorted(shadowed)}} are declared "
             "parameters')",
             "        params.update(informational)",
             f"    return _Event({kind!r}, params, post, {'topic' if scope else 'None'}, "
             f"{'partition' if scope else 'None'}, {zxid})"]
    ns: dict[str, Any] = {"_ABSENT": _ABSENT, "_Event": Event, "_EventError": EventError, "_DECLARED": declared}
    exec("\n".join(lines), ns)  # noqa: S102 - generated from the schema's own tables
    made: Callable[..., Event] = ns[kind]
    made.__doc__ = KINDS[kind].meaning
    return made


CONSTRUCTORS: dict[str, Callable[..., Event]] = {kind: _constructor(kind) for kind in KINDS}
"""kind -> its constructor; ``events.<kind>`` is the same function."""


def __getattr__(name: str) -> Callable[..., Event]:
    try:
        return CONSTRUCTORS[name]
    except KeyError:
        raise AttributeError(f"no trace event kind {name!r}") from None
