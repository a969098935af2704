"""Reading trace events in model terms: broker ids, the replay configuration, the state
before the partition's life, and each event as an ``Observation`` matched field by field
against the view of a model step (``model.registry``, each entry's ``view``)."""

from __future__ import annotations

import bisect
import functools
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from conformance.judge.words import field_mismatch_words
from model.actions.views import HARNESS
from model.config import Config, named
from model.registry import ACTIONS, REPLAYED
from model.state import (
    DOWN,
    IDLE,
    NO_LEADER,
    NONE,
    UNKNOWN,
    UP,
    Broker,
    PartitionZnode,
    Replica,
    State,
    Zk,
    initial,
)
from model.text import value_text
from traces.schema import PARAMS, POST

Event = dict[str, Any]

UNBOUNDED = 10**9
"""Search bounds of the named configuration are for the checker; replay must not hit them."""


UNSEEN = -2
"""A broker id no model broker has (never equal to anything the model says)."""


_BY_REASON: dict[str, dict[str, str]] = {}
for _entry in ACTIONS.values():
    if _entry.trace is not None and _entry.trace.reasons:
        for _reason in _entry.trace.reasons:
            _BY_REASON.setdefault(_entry.trace.kind, {})[_reason] = _entry.name
"""Kinds several actions share (``elect_leader``: an election, a controlled shutdown's move,
a reassignment's switch to RAR), reason -> action, as the registry's ``Traced`` declares."""


# ---------------------------------------------------------------------------------------
# Broker ids, configuration and the state before the partition's life
# ---------------------------------------------------------------------------------------


SCALAR_IDS = ("broker", "leader", "follower")
LIST_IDS = ("isr", "replicas", "rar", "ar")
"""The params that name brokers: one id each, a list of them."""
_ID_PARAMS = {kind: (frozenset(names), tuple(k for k in SCALAR_IDS if k in names),
                     tuple(k for k in LIST_IDS if k in names))
              for kind, names in ((kind, {spec.name for spec in specs}) for kind, specs in PARAMS.items())}
"""Per kind: the schema's param names, and those of them ``broker_ids`` reads -- all it need
look up in params that hold no other names (the schema allows extra ones: then every name).
(``compiled_batch.group_ids`` looks up every name: those a kind's params cannot hold are
absent, so the ids are the same.)"""
_EVERY_ID = (frozenset(), SCALAR_IDS, LIST_IDS)


def broker_ids(events: Sequence[Event]) -> dict[int, int]:
    """Real broker id -> model broker id (0..n-1, in the order of the real ids).

    Every id the trace mentions counts: event nodes, the harness's target broker, leaders,
    followers, ISR and assigned-replica members.  -1 ("none") is not a broker."""
    seen: set[int] = set()
    add = seen.add
    preferred = None  # the first preferred-replica election's params (_preferred_first)
    # (this loop runs over every event of the corpus, once: a key the event lacks costs
    # one lookup, and a plain int -- what JSON gives -- one type test)
    for e in events:
        node = e["node"]
        if node >= 0:
            add(node)
        params = e.get("params")
        if not params:
            continue
        names, scalars, lists = _ID_PARAMS.get(e["kind"], _EVERY_ID)
        if not params.keys() <= names:
            scalars, lists = SCALAR_IDS, LIST_IDS
        get = params.get
        for key in scalars:
            v = get(key)
            if v is None:
                continue
            if type(v) is int or (isinstance(v, int) and not isinstance(v, bool)):
                if v >= 0:
                    add(v)
        for key in lists:
            v = get(key)
            if v is not None and isinstance(v, list):
                seen.update(x for x in v if isinstance(x, int) and x >= 0)
        if preferred is None and e["kind"] == "elect_leader" and get("reason") == "preferred" \
                and isinstance(get("replicas"), list) and params["replicas"]:
            preferred = params["replicas"]
    return {real: i for i, real in enumerate(_preferred_first(preferred or [], sorted(seen)))}


def _preferred_first(assigned: list[int], ids: list[int]) -> list[int]:
    """``ids``, or -- in a trace with a preferred-replica election -- the partition's
    assignment at that election (``assigned``: the first such election's replicas) first,
    in its order: the model's AR is sorted, so its preferred replica is
    its lowest id, and Kafka's is the first replica assigned, whatever its id.  (Every other
    rule of the model is symmetric in broker ids, so the naming changes nothing else.)  The
    assignment the election read is the one that names the preferred replica (a reassignment
    may have changed it since the partition's first election); one already in id order
    renames nothing."""
    if assigned == sorted(assigned):  # already in id order: the model names them as the trace does
        return ids
    first = [x for x in assigned if x in ids]
    return first + [x for x in ids if x not in first]


@functools.lru_cache(maxsize=64)
def replay_config(config: str, brokers: int) -> Config:
    """The named protocol variant (truncation rule, fencing, unclean election) with one
    partition and every search bound lifted: the checker's bounds keep its state space
    finite; a recorded run may produce, elect and crash as often as it likes.

    ``named`` chooses and validates the variant; the bounds are lifted afterwards because
    ``model.config.validate`` (rightly, for the checker) caps them far below a real run.
    Cached: ``Config`` is frozen, and building it was a tenth of judging a short trace."""
    cfg = named(config)
    return replace(cfg, brokers=max(1, brokers), partitions=1, records=UNBOUNDED, max_epoch=UNBOUNDED,
                   max_crashes=UNBOUNDED, max_pauses=UNBOUNDED, max_expiries=UNBOUNDED, max_shutdowns=UNBOUNDED,
                   min_insync=min(cfg.min_insync, max(1, brokers)),
                   reassignments=UNBOUNDED, preferred_elections=UNBOUNDED, deletions=UNBOUNDED,
                   partition_changes=UNBOUNDED)


def _first_lifecycle(events: Sequence[Event], ids: dict[int, int]) -> dict[int, str]:
    """The first replayed event each broker is seen in (its own or the harness's about it).
    Informational events do not count: a broker may apply UpdateMetadata before its own
    registration is recorded."""
    first: dict[int, str] = {}
    for e in events:
        if e["kind"] not in REPLAYED:
            continue
        b = e["params"].get("broker") if e["node"] == HARNESS else e["node"]
        if isinstance(b, int) and b in ids and ids[b] not in first:
            first[ids[b]] = e["kind"]
            if len(first) == len(ids):  # every broker seen (ids maps onto 0..n-1): nothing left to find
                break
    return first


def _controller_start(events: Sequence[Event], ids: dict[int, int]) -> tuple[int, int]:
    """(controller, /controller_epoch) before the trace: none, one below the first election
    it shows -- or, if a controller acts before any election is seen, that one."""
    for e in events:
        kind, params = e["kind"], e["params"]
        epoch = params.get("controller_epoch")
        if kind == "controller_elect" and isinstance(epoch, int):
            return NO_LEADER, epoch - 1
        if kind in ("elect_leader", "controller_resign") and isinstance(epoch, int) and e["node"] in ids:
            return ids[e["node"]], epoch
    return NO_LEADER, 0


def prelife_state(cfg: Config, events: Sequence[Event], ids: dict[int, int]) -> State:
    """The model state before the partition exists, as the trace shows it: brokers whose
    first event is their registration are down, the others up and registered; the
    controller as ``_controller_start`` finds it; the partition znode not yet written
    (leader -1, epoch -1, version -1), so its first ``elect_leader`` (reason ``init``: the
    topic's creation) initialises it with the numbers the trace shows."""
    first = _first_lifecycle(events, ids)
    down = frozenset(b for b in range(cfg.brokers) if first.get(b) == "broker_restart")
    return _prelife(cfg, down, *_controller_start(events, ids))


@functools.lru_cache(maxsize=1024)
def _prelife(cfg: Config, down: frozenset[int], controller: int, cepoch: int) -> State:
    """``prelife_state`` of these down brokers and controller: one object for equal states,
    whose parts the compiled judge's encodings remember (``native_step.CompiledStep``)."""
    n = cfg.brokers
    live = tuple(b for b in range(n) if b not in down)
    unknown = (UNKNOWN,) * n
    znode = PartitionZnode(NO_LEADER, -1, (), -1, tuple(range(n)))
    zk = Zk(controller, cepoch, live, (0,) * n, 0, (znode,))
    blank = Replica(NONE, NO_LEADER, -1, (), -1, (), 0, IDLE, unknown, 0)
    brokers = tuple(
        Broker(DOWN if b in down else UP, b == controller, cepoch if b not in down else 0, 0, (blank,))
        for b in range(n)
    )
    return State(zk, brokers, (), (), _empty_ghost(cfg))


@functools.lru_cache(maxsize=64)
def _empty_ghost(cfg: Config) -> Any:
    """Empty history, whatever the ghost records; the ghost has no per-partition shape, and
    the replay's lifted bound on partition changes would make initial() a state of as many
    ids.  (Cached: building the initial state of a replay configuration is slow.)"""
    return initial(replace(cfg, partition_changes=0)).ghost._replace(led=())


REGISTRATIONS = ("broker_restart", "broker_reregister")


def registration_epochs(events: Sequence[Event]) -> list[int]:
    """The broker epochs (czxids of ``/brokers/ids/N``) the trace's registrations got, in
    order: the model's broker epoch of the k-th is k (its zxid counts registrations alone,
    from 0 before the trace)."""
    return sorted(int(e["params"]["broker_epoch"]) for e in events
                  if e["kind"] in REGISTRATIONS and isinstance((e.get("params") or {}).get("broker_epoch"), int))


def in_model_broker_epochs(e: Event, epochs: list[int]) -> Event:
    """A refusal's ``max_broker_epoch`` -- a czxid, the newest registration the sender had
    read -- as the model's: the number of the trace's registrations no newer than it.  Only
    the order of broker epochs matters to the fence (seed 003), and both count alike."""
    params = e.get("params") or {}
    mbe = params.get("max_broker_epoch")
    if not isinstance(mbe, int) or isinstance(mbe, bool):
        return e
    return {**e, "params": {**params, "max_broker_epoch": bisect.bisect_right(epochs, mbe)}}


def checkpoint_of(e: Event, key: tuple[str, int] | None) -> Event:
    """A ``broker_restart`` as the judge of partition ``key`` reads it: its
    ``checkpointed_hw`` -- per partition ("topic-partition"), the HW the broker loaded from
    its replication-offset checkpoint -- as that partition's alone, the one the restart's
    view shows (``model.actions.brokers``); dropped when it does not name the partition,
    so that the restart may have loaded any HW the model allows, as without it."""
    params = e.get("params") or {}
    loaded = params.get("checkpointed_hw")
    if not isinstance(loaded, dict):
        return e
    hw = None if key is None else loaded.get(f"{key[0]}-{key[1]}")
    rest = {k: v for k, v in params.items() if k != "checkpointed_hw"}
    if isinstance(hw, int) and not isinstance(hw, bool):
        rest["checkpointed_hw"] = hw
    return {**e, "params": rest}


# ---------------------------------------------------------------------------------------
# An observation: one event, in model terms
# ---------------------------------------------------------------------------------------

ID_FIELDS = ("leader", "follower", "broker")
ID_LIST_FIELDS = ("isr", "rar", "ar")


class Observation(NamedTuple):
    index: int
    kind: str
    action: str
    actor: int  # model broker id
    fields: dict[str, Any]  # observed params + post the schema defines for the kind, model ids
    event: Event


_FIELD_NAMES: dict[str, tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = {}
"""Per kind: the schema's param names and (post name, "post." key) pairs, built once --
walking the FieldSpec tuples for every event was a tenth of the judge's time."""


def _field_names(kind: str) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    return (tuple(spec.name for spec in PARAMS.get(kind, ())),
            tuple((spec.name, "post." + spec.name) for spec in POST.get(kind, ())))


def observe(index: int, e: Event, ids: dict[int, int]) -> Observation:
    """The schema-defined params and post fields of an event, broker ids translated, and the
    model action it is.  Fields the schema does not define for the kind are ignored, as
    SCHEMA.md §3 asks of readers."""
    kind = e["kind"]
    params = e.get("params") or {}
    node = e["node"]
    who = params.get("broker") if node == HARNESS else node
    return Observation(index, kind, event_action(kind, params), ids.get(who, UNSEEN),
                       _fields(kind, params, e.get("post") or {}, ids), e)


def _fields(kind: str, params: dict[str, Any], post: dict[str, Any], ids: dict[int, int]) -> dict[str, Any]:
    """The params and post fields the schema defines for ``kind`` (post ones as ``post.NAME``),
    broker ids translated to model ids."""
    fields: dict[str, Any] = {}
    names = _FIELD_NAMES.get(kind)
    if names is None:
        names = _FIELD_NAMES[kind] = _field_names(kind)
    for name in names[0]:
        if name in params:
            fields[name] = params[name]
    for name, key in names[1]:
        if name in post:
            fields[key] = post[name]  # post-state, kept apart from params
    for key in ID_FIELDS:
        v = fields.get(key)
        if isinstance(v, int) and v >= 0:
            fields[key] = ids[v]
    for key in ID_LIST_FIELDS:
        if isinstance(fields.get(key), list):
            fields[key] = sorted(ids[x] for x in fields[key])
    if isinstance(fields.get("post.leader"), int) and fields["post.leader"] >= 0:
        fields["post.leader"] = ids.get(fields["post.leader"], UNSEEN)
    if isinstance(fields.get("post.isr"), list):
        fields["post.isr"] = sorted(ids.get(x, UNSEEN) for x in fields["post.isr"])
    if kind == "elect_leader" and isinstance(params.get("replicas"), list):
        # the assigned replicas, an extra field the implementation adds: the init uses them
        fields["_ar"] = sorted(ids[x] for x in params["replicas"] if x in ids)
    return fields


def event_action(kind: str, params: dict[str, Any]) -> str:
    """The model action an event of ``kind`` is, or "" if it is no step of its own."""
    action = REPLAYED.get(kind, "")
    if kind in _BY_REASON:  # a kind several actions share: its reason says which (model.registry)
        reason = params.get("reason")
        if isinstance(reason, str):
            action = _BY_REASON[kind].get(reason, action)
    if kind == "reassignment" and params.get("state") != "IN_PROGRESS":
        action = ""  # INIT: noted in memory only; done: the reassign_complete before it
    if kind == "stop_replica" and params.get("reason") != "stop_replica":
        # a broker's own deletion -- at startup (E 4), of a partition an INIT LeaderAndISR
        # does not name (C 3), or of a log of a deleted incarnation (stale_topic_id): part
        # of the model step before it
        action = ""
    if kind == "controller_resign" and params.get("reason") == "shutdown":
        action = ""  # a stopping controller: the broker_stop that follows ends its role
    return action


def _same_records(observed: Any, model: list[tuple[int, int, int]], values: dict[Any, set[int]]) -> bool:
    if not isinstance(observed, list) or len(observed) != len(model):
        return False
    for rec, (offset, epoch, value) in zip(observed, model, strict=True):
        if not (isinstance(rec, list) and len(rec) == 3 and rec[0] == offset and rec[1] == epoch):
            return False
        if value not in values.get(value_key(rec[2]), ()):
            return False
    return True


def value_key(v: Any) -> Any:
    return (type(v).__name__, v)


def mismatch(obs: Observation, view: dict[str, Any], values: dict[Any, set[int]]) -> str | None:
    """None if the model step agrees with everything observed, else every disagreement."""
    bad: list[str] = []
    for key, seen in obs.fields.items():
        if key not in view or key == "value":
            continue  # the model's produce writes a fresh value by construction; mapped after
        want = view[key]
        if key == "records":
            if not _same_records(seen, want, values):
                bad.append(field_mismatch_words(key, seen, [[o, ep, _show(v, values)] for o, ep, v in want]))
            continue
        if key == "truncated_to" and seen is None:
            continue  # "not truncated" is also what an implementation says before a lookup
        if key in ("isr", "post.isr") and isinstance(want, list):
            want = sorted(want)
        if seen != want:
            bad.append(field_mismatch_words(key, seen, want))
    if not bad:
        return None
    return "; ".join(bad)


def _show(value: int, values: dict[Any, set[int]]) -> Any:
    for (_, v), ints in values.items():
        if value in ints:
            return v
    return value_text(value)
