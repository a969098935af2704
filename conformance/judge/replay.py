"""The trace judge: does a recorded execution take only steps the model allows?

``judge(events, config)`` checks one causally ordered ``(run, topic, partition)`` group of
trace events (``traces/SCHEMA.md``) against the model by *observation matching*, the
standard way to check a trace against a nondeterministic specification:

* the judge keeps the set of model states the system could be in (bounded, deduplicated);
* each event names the model action it is (``traces.vocabulary``) and the broker that took
  it; in every possible state the judge tries that action's candidate arguments, keeps the
  steps taken by that broker whose result agrees with every field the event observed
  (its params and post-state, as far as ``traces.schema`` defines them for the kind), and
  the results become the new set of possible states;
* an implementation does not trace every step: a fetch round trip that changes nothing is
  silent, so is an epoch lookup on an empty log.  Before an observed step the judge may
  take up to ``bound`` such *internal* steps, but only *silent* ones -- steps that change
  nothing the implementation would have recorded -- and only when no state explains the
  event without them (iterative deepening: the fewest unobserved steps first);
* every property of ``properties`` must hold in a surviving state; states that break one
  are dropped, and if every state breaks one the event is non-conforming, naming it;
* when no state survives, the event is non-conforming: the verdict says what was observed,
  what the model allowed instead, and shows the model's possible states.

The model starts before the partition's life: every broker that the trace shows
registering is down, there is no controller, and the partition's znode is not written yet.
Registrations, the controller election and the partition's first ``elect_leader`` (reason
``init``: the model has no topic creation, its initial state is *after* ``init_leaders``)
build the state the rest of the trace is judged from.

``events_from_steps`` goes the other way: it exports a run of the model as a trace, so
that the model's own counterexamples (the design's KAFKA-1211 bug) can be fed to any
conformance tool, and so that the judge can be tested on traces whose truth is known.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any, NamedTuple

from model.actions import (
    ACTIONS,
    Step,
    _broker_partitions,
    _fetch_messages,
    _isr_changes,
    _requests,
    apply,
    forget_stale_requests,
    stale_reason,
)
from model.config import Config, named
from model.render import record, state_text
from model.state import (
    DOWN,
    FETCH_RESPONSE,
    FETCHING,
    FOLLOWER,
    IDLE,
    NO_LEADER,
    NONE,
    OUT_OF_RANGE,
    ROLE_NAMES,
    TRUNCATING,
    UNKNOWN,
    UP,
    Broker,
    Entry,
    Fetch,
    LeaderAndIsr,
    PartitionZnode,
    Replica,
    State,
    Zk,
    initial,
)
from properties.safety import PROPERTIES, all_violations, epoch_monotonic_state
from traces import SCHEMA_ID
from traces.schema import PARAMS, POST
from traces.vocabulary import KINDS

Event = dict[str, Any]

DEFAULT_BOUND = 2
"""Unobserved internal steps searched before each observed one."""

MAX_STATES = 200
"""Possible model states kept after each event (in a fixed order: judging is deterministic)."""

UNBOUNDED = 10**9
"""Search bounds of the named configuration are for the checker; replay must not hit them."""

SHOWN_STATES = 3
"""Model states shown beside a non-conforming observation."""

INTERNAL_ACTIONS = ("send_fetch", "handle_fetch", "receive_fetch", "truncate", "controller_resign", "on_broker_startup")
"""Actions an implementation may take without recording them (only when silent, see
``_silent``): fetch round trips that change nothing, an epoch lookup on an empty log, a
zombie controller noticing it was superseded."""

UNSEEN = -2
"""A broker id no model broker has (never equal to anything the model says)."""

HARNESS = -1
"""The node id of the fault-injecting harness; its events name their broker in params."""

_ERRORS = {OUT_OF_RANGE: "OFFSET_OUT_OF_RANGE"}
_REJECT_CFG = named("kip320")  # naming why a request is stale reads only fence_controller_epoch
FENCED = "FENCED_LEADER_EPOCH"


# ---------------------------------------------------------------------------------------
# Hypotheses: a model state plus what the judge must remember about how it got there
# ---------------------------------------------------------------------------------------


class Hypothesis(NamedTuple):
    """A state the system may be in.  ``recovering`` lists brokers that restarted and have
    not yet applied a LeaderAndISR: the model's ``broker_restart`` recovers the partition
    state from ZooKeeper in the same step (seed 000 E), an implementation may instead show
    the recovery when the controller's LeaderAndISR for the same epoch arrives -- one model
    step observed as two events, so the second one is matched as a stutter."""

    state: State
    recovering: tuple[int, ...] = ()
    # whether this state assumes a kill -9 cut a step short before it was recorded (see
    # ``_before_freeze``): a speculation, kept only because a later event may need it
    speculative: bool = False


class Verdict(NamedTuple):
    """The judge's answer (the interface ``conformance.spark.verdict`` expects, as a dict)."""

    conforms: bool
    matched: int  # events matched before the first non-conforming one (all, if it conforms)
    total: int  # events in the group, informational ones included
    first_bad: int | None  # index into the events of the first non-conforming one
    reason: str | None  # what was observed there, and what the model allowed instead
    property: str | None  # the property every surviving state broke, if that is why
    possible_states: list[str]  # up to SHOWN_STATES model states (state_text) beside the observation
    bound: int  # unobserved internal steps searched before each observed one

    def as_dict(self) -> dict[str, Any]:
        return self._asdict()


# ---------------------------------------------------------------------------------------
# Broker ids, configuration and the state before the partition's life
# ---------------------------------------------------------------------------------------


def broker_ids(events: Sequence[Event]) -> dict[int, int]:
    """Real broker id -> model broker id (0..n-1, in the order of the real ids).

    Every id the trace mentions counts: event nodes, the harness's target broker, leaders,
    followers, ISR and assigned-replica members.  -1 ("none") is not a broker."""
    seen: set[int] = set()
    for e in events:
        if e["node"] >= 0:
            seen.add(e["node"])
        params = e.get("params")
        if not params:
            continue
        # (checks in this order because this loop runs over every event of the corpus)
        for key in ("broker", "leader", "follower"):
            v = params.get(key)
            if v is not None and isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                seen.add(v)
        for key in ("isr", "replicas", "rar", "ar"):
            v = params.get(key)
            if v is not None and isinstance(v, list):
                seen.update(x for x in v if isinstance(x, int) and x >= 0)
    return {real: i for i, real in enumerate(sorted(seen))}


@functools.lru_cache(maxsize=64)
def replay_config(config: str, brokers: int) -> Config:
    """The named protocol variant (truncation rule, fencing, unclean election) with one
    partition and every search bound lifted: the checker's bounds keep its state space
    finite; a recorded run may produce, elect and crash as often as it likes.

    A real leader also drops a caught-up follower that went silent (replica.lag.time.max.ms),
    which the searches leave out for tractability (``Config.shrink_caught_up``); a trace
    is judged with it.

    ``named`` chooses and validates the variant; the bounds are lifted afterwards because
    ``model.config.validate`` (rightly, for the checker) caps them far below a real run.
    Cached: ``Config`` is frozen, and building it was a tenth of judging a short trace."""
    cfg = named(config)
    return replace(cfg, brokers=max(1, brokers), partitions=1, records=UNBOUNDED, max_epoch=UNBOUNDED,
                   max_crashes=UNBOUNDED, max_pauses=UNBOUNDED, max_shutdowns=UNBOUNDED, min_insync=min(cfg.min_insync, max(1, brokers)),
                   reassignments=UNBOUNDED, shrink_caught_up=True)


def _first_lifecycle(events: Sequence[Event], ids: dict[int, int]) -> dict[int, str]:
    """The first replayed event each broker is seen in (its own or the harness's about it).
    Informational events do not count: a broker may apply UpdateMetadata before its own
    registration is recorded."""
    first: dict[int, str] = {}
    for e in events:
        if KINDS[e["kind"]].model_action is None:
            continue
        b = e["params"].get("broker") if e["node"] == HARNESS else e["node"]
        if isinstance(b, int) and b in ids and ids[b] not in first:
            first[ids[b]] = e["kind"]
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
    (leader -1, epoch -1, version -1), so its first ``elect_leader`` initialises it."""
    n = cfg.brokers
    first = _first_lifecycle(events, ids)
    down = {b for b in range(n) if first.get(b) == "broker_restart"}
    live = tuple(b for b in range(n) if b not in down)
    controller, cepoch = _controller_start(events, ids)
    unknown = (UNKNOWN,) * n
    znode = PartitionZnode(NO_LEADER, -1, (), -1, tuple(range(n)))
    zk = Zk(controller, cepoch, live, (0,) * n, 0, (znode,))
    blank = Replica(NONE, NO_LEADER, -1, (), -1, (), 0, IDLE, unknown, 0)
    brokers = tuple(
        Broker(DOWN if b in down else UP, b == controller, cepoch if b not in down else 0, 0, (blank,))
        for b in range(n)
    )
    ghost = initial(cfg).ghost._replace(led=())  # empty history, whatever the ghost records
    return State(zk, brokers, (), (), ghost)


def init_partition(s: State, cfg: Config, c: int, leader: int, epoch: int, isr: tuple[int, ...],
                   zk_version: int, ar: tuple[int, ...]) -> State | None:
    """``init_leaders`` (seed 000 A): the acting controller writes the partition's first
    leader and ISR and sends LeaderAndISR to its assigned replicas.  Not a model action --
    the model's initial state is after it -- so replay provides it."""
    zn = s.zk.partitions[0]
    broker = s.brokers[c]
    if zn.leader_epoch != -1 or s.zk.controller != c or broker.status != UP or not broker.is_controller:
        return None
    znode = PartitionZnode(leader, epoch, isr, zk_version, ar)
    s = s._replace(zk=s.zk._replace(partitions=(znode,)))
    mbe = max((s.zk.broker_epochs[b] for b in s.zk.live), default=0)
    sent = tuple(sorted(set(s.leader_and_isr) | {
        LeaderAndIsr(to, 0, leader, epoch, isr, zk_version, s.zk.controller_epoch, mbe) for to in ar}))
    return forget_stale_requests(s._replace(leader_and_isr=sent), cfg)


# ---------------------------------------------------------------------------------------
# What a model step looks like to an observer
# ---------------------------------------------------------------------------------------


def actor(step: Step) -> int:
    """The broker that takes a step (the one whose trace records it)."""
    a, args = step.action, step.args
    if a in ("become_leader", "become_follower", "reject_leader_and_isr"):
        return args[0].to
    if a == "handle_fetch":
        return args[0].leader
    if a == "receive_fetch":
        return args[0].follower
    return args[0]


def _entries(offset: int, log: Iterable[Entry]) -> list[tuple[int, int, int]]:
    return [(offset + i, e.epoch, e.value) for i, e in enumerate(log)]


def _new_response(before: State, after: State, m: Fetch) -> Fetch | None:
    for x in after.fetches:
        if x.kind == FETCH_RESPONSE and x.follower == m.follower and x.leader == m.leader and x not in before.fetches:
            return x
    return None


def _replica_view(r: Replica) -> dict[str, Any]:
    return {"post.role": ROLE_NAMES[r.role], "post.leader": r.leader, "post.leader_epoch": r.leader_epoch,
            "post.hw": r.hw, "post.leo": r.leo, "post.log_end_epoch": r.log[-1].epoch if r.log else None,
            "post.isr": list(r.isr)}


def model_view(step: Step, before: State, after: State) -> dict[str, Any]:
    """Every field an event of this step could carry (params and post together), in model
    terms: broker ids are model ids and record values the model's ints.  Keys follow
    ``traces/SCHEMA.md``; ``_compare`` looks only at the ones an event actually carries."""
    a, args = step.action, step.args
    zn = after.zk.partitions[0]
    if a == "controller_elect":
        return {"controller_epoch": after.zk.controller_epoch}
    if a == "controller_resign":
        return {"controller_epoch": before.brokers[args[0]].controller_epoch}
    if a == "reassign_start":  # the agent's IN_PROGRESS: RAR, and AR as it was before AR+RAR
        return {"rar": list(zn.rar), "ar": list(before.zk.partitions[0].ar)}
    if a in ("elect_leader", "controlled_shutdown", "reassign_complete"):
        return {"leader": zn.leader, "leader_epoch": zn.leader_epoch, "isr": list(zn.isr), "zk_version": zn.zk_version,
                "controller_epoch": after.zk.controller_epoch,
                "unclean": 0 in after.ghost.unclean and 0 not in before.ghost.unclean}
    if a in ("become_leader", "become_follower", "reject_leader_and_isr"):
        m: LeaderAndIsr = args[0]
        rb, ra = before.brokers[m.to].replicas[0], after.brokers[m.to].replicas[0]
        view = _replica_view(ra)
        view.update(leader=m.leader if a != "become_follower" or m.leader != NO_LEADER else NO_LEADER,
                    leader_epoch=m.leader_epoch, isr=list(m.isr), zk_version=m.zk_version,
                    controller_epoch=m.controller_epoch,
                    truncated_to=ra.leo)  # an implementation may name a cut that removed nothing
        if a == "reject_leader_and_isr":
            view["reason"] = (stale_reason(before, _REJECT_CFG, m) or "").replace(" ", "_")
        return view
    if a == "truncate":
        f = args[0]
        return {"leader": before.brokers[f].replicas[0].leader, "truncated_to": after.brokers[f].replicas[0].leo}
    if a == "produce":
        r = after.brokers[args[0]].replicas[0]
        return {"offset": r.leo - 1, "leader_epoch": r.log[-1].epoch, "value": r.log[-1].value,
                "post.hw": r.hw, "post.leo": r.leo}
    if a == "send_fetch":
        r = before.brokers[args[0]].replicas[0]
        return {"leader": r.leader, "fetch_offset": r.leo, "leader_epoch": r.leader_epoch,
                "post.hw": r.hw, "post.leo": r.leo}
    if a == "handle_fetch":
        m = args[0]
        lr = after.brokers[m.leader].replicas[0]
        resp = _new_response(before, after, m)
        view = {"follower": m.follower, "fetch_offset": m.offset, "leader_epoch": lr.leader_epoch,
                "post.hw": lr.hw, "post.leo": lr.leo, "post.isr": list(lr.isr)}
        if resp is None:
            view.update(error=FENCED, records=[], leader_hw=None)
        else:
            view.update(error=_ERRORS.get(resp.error), records=_entries(m.offset, resp.records), leader_hw=resp.hw)
        return view
    if a == "receive_fetch":
        m = args[0]
        rb, ra = before.brokers[m.follower].replicas[0], after.brokers[m.follower].replicas[0]
        appended = ra.log[rb.leo:] if ra.log[: rb.leo] == rb.log else ()
        return {"leader": m.leader, "fetch_offset": m.offset, "leader_epoch": ra.leader_epoch,
                "records": _entries(rb.leo, appended), "leader_hw": m.hw, "error": _ERRORS.get(m.error),
                "post.hw": ra.hw, "post.leo": ra.leo}
    if a in ("shrink_isr", "expand_isr"):
        return {"follower": args[2], "isr": list(zn.isr), "zk_version": zn.zk_version}
    if a == "isr_update_failed":
        return {"expected_zk_version": before.brokers[args[0]].replicas[0].zk_version}
    return {}  # broker lifecycle: broker epochs are zxids, not comparable with the model's


# ---------------------------------------------------------------------------------------
# An observation: one event, in model terms
# ---------------------------------------------------------------------------------------

_ID_FIELDS = ("leader", "follower", "broker")
_ID_LIST_FIELDS = ("isr", "rar", "ar")


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
    """The schema-defined params and post fields of an event, broker ids translated.  Fields
    the schema does not define for the kind are ignored, as SCHEMA.md §3 asks of readers."""
    kind = e["kind"]
    params, post = e.get("params") or {}, e.get("post") or {}
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
    for key in _ID_FIELDS:
        v = fields.get(key)
        if isinstance(v, int) and v >= 0:
            fields[key] = ids[v]
    for key in _ID_LIST_FIELDS:
        if isinstance(fields.get(key), list):
            fields[key] = sorted(ids[x] for x in fields[key])
    if isinstance(fields.get("post.leader"), int) and fields["post.leader"] >= 0:
        fields["post.leader"] = ids.get(fields["post.leader"], UNSEEN)
    if isinstance(fields.get("post.isr"), list):
        fields["post.isr"] = sorted(ids.get(x, UNSEEN) for x in fields["post.isr"])
    if kind == "elect_leader" and isinstance(params.get("replicas"), list):
        # the assigned replicas, an extra field the implementation adds: the init uses them
        fields["_ar"] = [ids[x] for x in params["replicas"] if x in ids]
    node = e["node"]
    who = params.get("broker") if node == HARNESS else node
    action = KINDS[kind].model_action or ""
    if kind == "elect_leader" and params.get("reason") == "controlled_shutdown":
        action = "controlled_shutdown"  # the same ZK write, for a broker on its way out
    if kind == "elect_leader" and params.get("reason") in ("reassign", "reassignment"):
        action = "reassign_complete"  # seed 000 F 3.2.2: the switch of ISR and AR to RAR
    if kind == "reassignment" and params.get("state") != "IN_PROGRESS":
        action = ""  # INIT: noted in memory only; done: the reassign_complete before it
    if kind == "controller_resign" and params.get("reason") == "shutdown":
        action = ""  # a stopping controller: the broker_stop that follows ends its role
    return Observation(index, kind, action, ids.get(who, UNSEEN), fields, e)


def _same_records(observed: Any, model: list[tuple[int, int, int]], values: dict[Any, set[int]]) -> bool:
    if not isinstance(observed, list) or len(observed) != len(model):
        return False
    for rec, (offset, epoch, value) in zip(observed, model, strict=True):
        if not (isinstance(rec, list) and len(rec) == 3 and rec[0] == offset and rec[1] == epoch):
            return False
        if value not in values.get(_value_key(rec[2]), ()):
            return False
    return True


def _value_key(v: Any) -> Any:
    return (type(v).__name__, v)


def mismatch(obs: Observation, view: dict[str, Any], values: dict[Any, set[int]]) -> str | None:
    """None if the model step agrees with everything observed, else every disagreement."""
    seen_bad: list[str] = []
    want_bad: list[str] = []
    for key, seen in obs.fields.items():
        if key not in view or key == "value":
            continue  # the model's produce writes a fresh value by construction; mapped after
        want = view[key]
        if key == "records":
            if not _same_records(seen, want, values):
                seen_bad.append(f"records={seen}")
                want_bad.append(f"records={[[o, ep, _show(v, values)] for o, ep, v in want]}")
            continue
        if key == "truncated_to" and seen is None:
            continue  # "not truncated" is also what an implementation says before a lookup
        if key in ("isr", "post.isr") and isinstance(want, list):
            want = sorted(want)
        if seen != want:
            seen_bad.append(f"{key}={seen!r}")
            want_bad.append(f"{key}={want!r}")
    if not seen_bad:
        return None
    return f"observed {', '.join(seen_bad)} where the model has {', '.join(want_bad)}"


def _show(value: int, values: dict[Any, set[int]]) -> Any:
    for (_, v), ints in values.items():
        if value in ints:
            return v
    return record(Entry(value, 0)).split("@")[0]


# ---------------------------------------------------------------------------------------
# Searching: observed steps, silent internal steps, the bounded set of states
# ---------------------------------------------------------------------------------------


def _silent(step: Step, before: State, after: State) -> bool:
    """Would an implementation have taken this step without recording it?  Only if it
    changes nothing a trace shows: a fetch request, a fetch answered or received without
    news, an epoch lookup with nothing to look up, a controller stepping down."""
    a = step.action
    if a in ("send_fetch", "controller_resign", "on_broker_startup"):
        return True  # no ZK write, no change of role: implementations record none of these
    if a == "handle_fetch":
        m = step.args[0]
        resp = _new_response(before, after, m)
        same = before.brokers[m.leader].replicas[0] == after.brokers[m.leader].replicas[0]
        return same and (resp is None or not resp.records)
    if a == "receive_fetch":
        f = step.args[0].follower
        return before.brokers[f].replicas[0] == after.brokers[f].replicas[0]
    if a == "truncate":
        return before.brokers[step.args[0]].replicas[0].leo == 0
    return False


def skip_empty_lookup(s: State, cfg: Config, f: int) -> State | None:
    """A follower with an empty log has no epoch to look up: it fetches at once (the
    implementation, like Kafka, sends no OffsetsForLeaderEpoch then).  The model's
    ``truncate`` reaches the same state -- nothing to cut, FETCHING -- but waits for the
    leader to be ready to answer a lookup nobody needs, so replay takes this shortcut."""
    r = s.brokers[f].replicas[0]
    if s.brokers[f].status != UP or r.role != FOLLOWER or r.fetch_state != TRUNCATING or r.log:
        return None
    broker = s.brokers[f]
    return s._replace(brokers=s.brokers[:f] + (broker._replace(replicas=(r._replace(fetch_state=FETCHING),)),)
                      + s.brokers[f + 1 :])


def internal_successors(s: State, cfg: Config) -> Iterator[State]:
    """States one silent internal step (of any broker) away."""
    return (t for t, _ in _internal_steps(s, cfg, None, False))


def victim_successors(s: State, cfg: Config, b: int, loud: bool) -> Iterator[tuple[State, bool]]:
    """States one internal step of broker ``b`` away, each with whether the step was silent;
    steps that are not silent (and ``CUT_SHORT_ACTIONS``) only when ``loud`` (see
    ``_before_freeze``)."""
    return _internal_steps(s, cfg, b, loud)


def _internal_steps(s: State, cfg: Config, by: int | None, loud: bool) -> Iterator[tuple[State, bool]]:
    """(state, silent) one internal step away, of broker ``by`` or of any broker."""
    for f in range(cfg.brokers) if by is None else (by,):
        t = skip_empty_lookup(s, cfg, f)
        if t is not None:
            yield t, True
    for name in INTERNAL_ACTIONS + (CUT_SHORT_ACTIONS if loud else ()):
        for args in ACTIONS[name].args(s, cfg):
            step = Step(name, args)
            if by is not None and actor(step) != by:
                continue
            t = apply(s, cfg, step)
            if t is not None and t != s:
                silent = _silent(step, s, t)
                if silent or loud:
                    yield t, silent


CUT_SHORT_ACTIONS = ("shrink_isr", "expand_isr")
"""Besides internal ones, steps a ``kill -9`` may cut short between their effect and their
trace line: a leader's conditional ISR write, made in ZooKeeper just before it died (chaos
seed 6), is seen by everyone though its own trace never says so."""

FREEZING = ("broker_pause", "broker_crash", "broker_stop", "become_leader", "become_follower")
"""Events after which their broker cannot take the silent steps it might have taken just
before: it is paused or dead until it resumes or restarts, or its fetcher of the old
leader is gone (a role change).  Such steps cannot be placed after the event, so for these
events the judge also keeps the states where the broker took some first
(``_before_freeze``)."""


def _actor_args(obs: Observation, s: State, cfg: Config) -> Iterable[tuple] | None:
    """The argument tuples of the observed action whose step the observed broker takes, in
    the order ``ACTIONS[action].args`` yields them -- built directly instead of enumerating
    every argument and filtering by ``actor``.  Only for actions whose enumerator is one of
    the generic ones below (checked by identity, so a changed enumerator in
    ``model.actions`` falls back to the general path); None means "use the general path"."""
    gen = ACTIONS[obs.action].args
    b = obs.actor
    if gen is _broker_partitions:  # (b, p): produce, send_fetch, truncate, isr_update_failed
        return [(b, p) for p in range(cfg.partitions)] if 0 <= b < cfg.brokers else []
    if gen is _isr_changes:  # (b, p, f), f != b
        if not 0 <= b < cfg.brokers:
            return []
        return [(b, p, f) for p in range(cfg.partitions) for f in range(cfg.brokers) if f != b]
    if gen is _requests:  # LeaderAndISR requests addressed to b
        return [(m,) for m in s.leader_and_isr if m.to == b]
    if gen is _fetch_messages:  # handle_fetch: requests to leader b; receive_fetch: responses to b
        if obs.action == "handle_fetch":
            return [(m,) for m in s.fetches if m.leader == b]
        if obs.action == "receive_fetch":
            return [(m,) for m in s.fetches if m.follower == b]
    return None


def _candidates(obs: Observation, s: State, cfg: Config, fast: bool = False) -> Iterator[tuple[Step, State | None]]:
    """Steps of the observed action by the observed broker, with their results (None when
    the guard fails).  ``fast`` builds the arguments from the observed broker directly
    (``_actor_args``): the same steps in the same order, so the same misses are reported."""
    if obs.action == "reject_leader_and_isr":
        # A refused request is a self-loop the model forgets; rebuild it from the event.
        f = obs.fields
        mbe = f.get("max_broker_epoch", s.brokers[obs.actor].broker_epoch)  # absent: meant for this incarnation
        m = LeaderAndIsr(obs.actor, 0, NO_LEADER, f.get("leader_epoch", -1), (), -1, f.get("controller_epoch", -1), mbe)
        yield Step(obs.action, (m,)), ACTIONS[obs.action].fn(s, cfg, m)
        return
    if obs.action in ("broker_crash", "broker_stop", "broker_restart", "broker_pause", "broker_resume", "broker_reregister",
                      "controller_elect", "controller_resign"):
        arg_sets: Iterable[tuple] = [(obs.actor,)] if obs.actor >= 0 else []
    else:
        direct = _actor_args(obs, s, cfg) if fast else None
        if direct is not None:
            for args in direct:
                step = Step(obs.action, args)
                yield step, apply(s, cfg, step)
            return
        arg_sets = ACTIONS[obs.action].args(s, cfg)
    for args in arg_sets:
        step = Step(obs.action, args)
        if actor(step) != obs.actor:
            continue
        yield step, apply(s, cfg, step)


def _init_candidate(obs: Observation, s: State, cfg: Config) -> tuple[Step, State | None] | None:
    """The partition's first ``elect_leader`` initialises it (``init_partition``)."""
    if obs.action != "elect_leader" or s.zk.partitions[0].leader_epoch != -1:
        return None
    f = obs.fields
    ar = tuple(sorted(f.get("_ar") or range(cfg.brokers)))
    t = init_partition(s, cfg, obs.actor, f.get("leader", NO_LEADER), f.get("leader_epoch", 0),
                       tuple(f.get("isr") or ()), f.get("zk_version", 0), ar)
    return Step("init_partition", (obs.actor,)), t


class Match(NamedTuple):
    before: State  # the state at the start of the event (before any internal step)
    after: Hypothesis


def _match_in(h: Hypothesis, obs: Observation, cfg: Config, values: dict[Any, set[int]],
              misses: list[str], fast: bool = False) -> list[Match]:
    s = h.state
    out: list[Match] = []
    init = _init_candidate(obs, s, cfg)
    cands = [init] if init is not None else list(_candidates(obs, s, cfg, fast))
    for step, t in cands:
        if t is None:
            continue
        view = model_view(step, s, t) if step.action != "init_partition" else _init_view(t)
        why = mismatch(obs, view, values)
        if why is not None:
            misses.append(why)
            continue
        rec = tuple(b for b in h.recovering if b != obs.actor) if obs.action.startswith("become_") else h.recovering
        if step.action == "broker_restart":
            rec = tuple(sorted(set(rec) | {obs.actor}))
        out.append(Match(s, Hypothesis(t, rec, h.speculative)))
    if obs.action in ("become_leader", "become_follower") and obs.actor in h.recovering:
        echo = _recovery_echo(obs, h)
        if echo is not None:
            out.append(echo)
    return out


def _init_view(t: State) -> dict[str, Any]:
    zn = t.zk.partitions[0]
    return {"leader": zn.leader, "leader_epoch": zn.leader_epoch, "isr": list(zn.isr), "zk_version": zn.zk_version,
            "controller_epoch": t.zk.controller_epoch, "unclean": False}


def _recovery_echo(obs: Observation, h: Hypothesis) -> Match | None:
    """A restarted broker's first LeaderAndISR repeating what its startup recovery already
    did in the model (same role, leader and epoch, same log): no model step."""
    s, b = h.state, obs.actor
    r = s.brokers[b].replicas[0]
    f = obs.fields
    want_role = "leader" if f.get("leader") == b else "follower"
    if (ROLE_NAMES[r.role], r.leader, r.leader_epoch) != (want_role, f.get("leader"), f.get("leader_epoch")):
        return None
    view = _replica_view(r)
    for key in ("post.role", "post.leader", "post.leader_epoch", "post.hw", "post.leo", "post.log_end_epoch"):
        if key in f and f[key] != view[key]:
            return None
    if f.get("truncated_to") not in (None, r.leo):
        return None
    return Match(s, Hypothesis(s, tuple(x for x in h.recovering if x != b), h.speculative))


def _order(hyps: Iterable[Hypothesis]) -> list[Hypothesis]:
    return sorted(set(hyps))


class Search(NamedTuple):
    survivors: list[Match]
    depth: int
    frontier: list[Hypothesis]  # the states tried at the shallowest depth (for the report)
    misses: list[str]


def advance(hyps: list[Hypothesis], obs: Observation, cfg: Config, values: dict[Any, set[int]], bound: int,
            limit: int, fast: bool = False) -> Search:
    """The matches of an observation, with the fewest internal steps that give any.

    ``fast`` (see ``judge``) only changes how candidates are enumerated, never which."""
    frontier = [(h.state, h) for h in hyps]  # (state at the start of the event, hypothesis)
    seen: set[Hypothesis] | None = None  # built only if internal steps are searched (hashing states costs)
    misses: list[str] = []
    for depth in range(bound + 1):
        found: list[Match] = []
        for origin, h in frontier:
            found.extend(m._replace(before=origin) if m.before is not origin else m
                         for m in _match_in(h, obs, cfg, values, misses if depth == 0 else [], fast))
        if found:
            if obs.action in FREEZING:
                found.extend(_before_freeze(frontier, obs, cfg, values, bound - depth, fast))
            return Search(found, depth, hyps, misses)
        if depth == bound:
            break
        if seen is None:
            seen = set(hyps)
        nxt: list[tuple[State, Hypothesis]] = []
        for origin, h in frontier:
            for t in internal_successors(h.state, cfg):
                g = Hypothesis(t, h.recovering, h.speculative)
                if g not in seen:
                    seen.add(g)
                    nxt.append((origin, g))
        frontier = sorted(nxt, key=lambda pair: pair[1])[: limit * 4]
        if not frontier:
            break
    return Search([], bound, hyps, misses)


def _before_freeze(frontier: list[tuple[State, Hypothesis]], obs: Observation, cfg: Config,
                   values: dict[Any, set[int]], bound: int, fast: bool) -> list[Match]:
    """Matches of a freezing event (``FREEZING``) after 1..``bound`` unrecorded steps of its
    victim.

    Iterative deepening places unobserved steps as late as possible: just before the next
    event that needs them.  A paused or dead broker takes no step, so its own silent steps
    -- say, an empty fetch answer received and the identical fetch sent again, which an
    implementation does not record twice -- must be placed before the pause when a later
    event (the leader answering that fetch while the follower is frozen) needs them.  The
    same holds for a follower that becomes leader: the fetch it sent again just before is
    still answered by a paused old leader that wakes up later (chaos seed 5).

    A ``kill -9`` may also land between a step's effect and its trace line (the recorder
    loses at most the line being written): a follower that took a new HW from a fetch
    answer, checkpointed it and died before recording it, or a leader whose ISR write
    reached ZooKeeper (``CUT_SHORT_ACTIONS``).  So before a ``broker_crash`` one of the
    victim's steps may be one that is not silent -- only one, the step the kill cut short.
    Which of these happened no event before the freeze says, so the judge keeps every such
    state; later events prune them."""
    out: list[Match] = []
    seen = {h for _, h in frontier}
    cut_short = obs.action == "broker_crash"
    level = [(origin, h, cut_short) for origin, h in frontier]  # (origin, state, loud step left)
    for _ in range(bound):
        nxt: list[tuple[State, Hypothesis, bool]] = []
        for origin, h, loud in level:
            for t, silent in victim_successors(h.state, cfg, obs.actor, loud):
                g = Hypothesis(t, h.recovering, h.speculative or not silent)
                if g not in seen:
                    seen.add(g)
                    nxt.append((origin, g, loud and silent))
        for origin, g, _ in nxt:
            out.extend(m._replace(before=origin) for m in _match_in(g, obs, cfg, values, [], fast))
        level = nxt
    return out


# ---------------------------------------------------------------------------------------
# The judge
# ---------------------------------------------------------------------------------------


def _describe_event(e: Event) -> str:
    node = e["node"]
    who = f"harness (broker {e['params'].get('broker')})" if node == HARNESS else f"broker {node}"
    shown = dict(e.get("params") or {})
    if e.get("post"):
        shown["post"] = e["post"]
    return f"{e['kind']} by {who} {shown}"


def judge(events: list[Event], config: str = "kip320", bound: int = DEFAULT_BOUND,
          limit: int = MAX_STATES, fast: bool = True, memo: bool = True) -> dict[str, Any]:
    """Judge one causally ordered (run, topic, partition) group of events against the named
    model configuration.  See the module docstring for the method and ``Verdict`` for the
    answer's fields.

    ``fast`` (the default) takes the same steps for less work: candidate arguments built
    from the observed broker (``_actor_args``), only the properties a step could break
    evaluated (``_may_break``), no sorting or hashing of a single surviving state.  Every
    shortcut is exact -- ``fast=False`` is the plain method, kept so that a test holds the
    two to the same verdicts (``tests/model/test_replay_fast_path.py``).

    ``memo`` (with ``fast``) remembers, per process, which states each matched event led to
    from which states (``_Memo``): a step seen before is not searched again.  Exact, as the
    test holds too; ``MEMO_STATS`` counts how often it answered."""
    total = len(events)
    ids = broker_ids(events)
    cfg = replay_config(config, len(ids))
    hyps = [Hypothesis(prelife_state(cfg, events, ids))]
    # _may_break assumes the state before each step holds every property; survivors do,
    # the state before the partition's life is checked here once.
    fast = fast and _holds(hyps[0].state)
    values: dict[Any, set[int]] = {}
    scope = _Memo.scope(config, bound, limit, ids) if fast and memo else None
    node = scope.node(hyps) if scope is not None else None
    sig: tuple | None = None
    key = next(((e["topic"], e["partition"]) for e in events if e.get("topic") is not None), None)
    # (event index, property, message, states) where every state *not* assuming a step cut
    # short by a kill -9 broke a property; reported if the speculation is refuted later
    suspect: tuple[int, str, str, list[str]] | None = None

    def refuted(v: dict[str, Any]) -> dict[str, Any]:
        if suspect is None:
            return v
        j, (at, name, msg, states) = v["first_bad"], suspect
        return Verdict(False, at, total, at,
                       f"{_describe_event(events[at])} leads only to states that break {name}: {msg} -- unless a "
                       f"kill -9 cut short a step nobody recorded, which event {j} ({events[j]['kind']}) rules out",
                       name, states, bound).as_dict()

    for i, e in enumerate(events):
        kind = KINDS.get(e["kind"])
        if kind is None:
            return Verdict(False, i, total, i, f"unknown event kind {e['kind']!r}", None, [], bound).as_dict()
        if kind.model_action is None:
            if key is not None and _ends_life(e, key):
                # the model has no topic deletion: the partition's life, which it covers from
                # its first leader to here, is over; later events are other partitions' business
                return Verdict(True, total, total, None, None, None, [], bound).as_dict()
            continue  # informational: validated and ordered upstream, not a model step
        if node is not None:
            sig = _signature(e, values)
            edge = node.next.get(sig) if sig is not None else None
            if edge is not None:
                MEMO_STATS["hits"] += 1
                node, produced, broke = edge
                hyps = node.hyps
                if broke is not None and suspect is None:
                    suspect = (i, *broke)
                if produced:
                    values.setdefault(_value_key(e["params"].get("value")), set()).update(produced)
                continue
            MEMO_STATS["misses"] += 1
        obs = observe(i, e, ids)
        if not obs.action:
            if node is not None and sig is not None:
                node.next[sig] = (node, (), None)
            continue  # recorded for people, subsumed by the model step that follows
        res = advance(hyps, obs, cfg, values, bound, limit, fast)
        if not res.survivors:
            return refuted(_no_step(i, total, e, obs, res, bound))
        ok: list[Hypothesis] = []
        broken: dict[str, str] = {}
        for match in res.survivors:
            bad = _violations(match.before, match.after.state, fast)
            if bad:
                for name, msg in bad:
                    broken.setdefault(name, msg)
            else:
                ok.append(match.after)
        if not ok:
            name, msg = next(iter(broken.items()))
            states = _order(m.after for m in res.survivors)[:SHOWN_STATES]
            return refuted(Verdict(False, i, total, i,
                                   f"{_describe_event(e)} leads only to states that break {name}: {msg}",
                                   name, [state_text(h.state) for h in states], bound).as_dict())
        broke: tuple[str, str, list[str]] | None = None
        if broken and all(h.speculative for h in ok) and any(not m.after.speculative for m in res.survivors):
            name, msg = next(iter(broken.items()))
            plain = _order(m.after for m in res.survivors if not m.after.speculative)[:SHOWN_STATES]
            broke = (name, msg, [state_text(h.state) for h in plain])
            if suspect is None:
                suspect = (i, *broke)
        produced: tuple[int, ...] = ()
        if obs.action == "produce":
            for h in ok:
                r = h.state.brokers[obs.actor].replicas[0]
                values.setdefault(_value_key(e["params"].get("value")), set()).add(r.log[-1].value)
            produced = tuple(h.state.brokers[obs.actor].replicas[0].log[-1].value for h in ok)
        hyps = ok if fast and len(ok) == 1 else _order(ok)[:limit]
        if scope is not None and node is not None:
            child = scope.node(hyps)
            if sig is not None:
                node.next[sig] = (child, produced, broke)
            node = child
    return Verdict(True, total, total, None, None, None, [], bound).as_dict()


def _ends_life(e: Event, key: tuple[str, int]) -> bool:
    """Whether ``e`` is the controller finishing the deletion of partition ``key`` (its
    topic deleted, or the partition removed)."""
    params = e.get("params") or {}
    if params.get("topic") != key[0]:
        return False
    if e["kind"] == "topic_deleted":
        return True
    return e["kind"] == "partitions_removed" and key[1] in (params.get("partitions") or [])


_HOLDS: dict[State, bool] = {}


def _holds(s: State) -> bool:
    """Whether a state before a partition's life breaks no property (cached: traces of one
    cluster start from a handful of such states)."""
    ok = _HOLDS.get(s)
    if ok is None:
        if len(_HOLDS) > 10_000:
            _HOLDS.clear()
        ok = _HOLDS[s] = not all_violations(None, s)
    return ok


def judge_unmemoized(events: list[Event], config: str = "kip320") -> dict[str, Any]:
    """``judge`` without the memo (``MODULE:FUNC`` for ``epochal conform``'s judge option and
    the benchmark's figures on work that is never repeated)."""
    return judge(events, config, memo=False)


# ---------------------------------------------------------------------------------------
# The memo: exact reuse of steps already matched
# ---------------------------------------------------------------------------------------

MEMO_STATS = {"hits": 0, "misses": 0}
"""Model events answered from the memo, and searched, in this process."""

MEMO_MAX_NODES = 50_000
"""Distinct state sets remembered per process before the memo starts afresh."""


class _Node:
    """A set of possible states (``hyps``, as the judge keeps them) and the events already
    matched from it: event signature -> (the node it led to, the model values its produce
    appended, one per state, and the property that step broke in every state not assuming
    an unrecorded step cut short by a kill -9, if it did -- see ``judge``'s ``suspect``)."""

    __slots__ = ("hyps", "next")

    def __init__(self, hyps: list[Hypothesis]) -> None:
        self.hyps = hyps
        self.next: dict[tuple, tuple[_Node, tuple[int, ...], tuple[str, str, list[str]] | None]] = {}


class _Memo:
    """Nodes of one scope -- configuration, bounds and broker-id mapping, everything
    besides the states and the event that decides a step's outcome -- interned by their
    states, so different traces that reach the same states share what was learnt there.

    Why it is exact: ``advance`` and the property check are pure functions of the states,
    the observation and, for fetched records, which model values each observed value may
    be; ``_signature`` keeps all of that (the values as the sets they map to) and nothing
    else of the event that matters to a conforming step.  Only conforming steps are
    remembered: a non-conforming event is always searched, so its report is the plain one."""

    scopes: dict[tuple, _Memo] = {}
    nodes_total = 0

    def __init__(self) -> None:
        self.nodes: dict[tuple[Hypothesis, ...], _Node] = {}

    @classmethod
    def scope(cls, config: str, bound: int, limit: int, ids: dict[int, int]) -> _Memo:
        key = (config, bound, limit, tuple(sorted(ids.items())))
        memo = cls.scopes.get(key)
        if memo is None:
            memo = cls.scopes[key] = _Memo()
        return memo

    def node(self, hyps: list[Hypothesis]) -> _Node:
        key = tuple(hyps)
        n = self.nodes.get(key)
        if n is None:
            if _Memo.nodes_total >= MEMO_MAX_NODES:  # start afresh rather than grow without end
                for memo in _Memo.scopes.values():
                    memo.nodes.clear()
                _Memo.nodes_total = 0
            n = self.nodes[key] = _Node(hyps)
            _Memo.nodes_total += 1
        return n


def _freeze(v: Any) -> Any:
    """A hashable stand-in for a JSON value, equal only for values the judge cannot tell
    apart (types kept: 1, 1.0 and True are different observations)."""
    t = type(v)
    if t is int or t is str or v is None:
        return v
    if t is list:
        if _PLAIN.issuperset(map(type, v)):  # (ISR lists: the same tuple, built in C)
            return (list, tuple(v))
        return (list, tuple(_freeze(x) for x in v))
    if t is dict:
        return (dict, tuple((k, _freeze(x)) for k, x in v.items()))
    return (t, v)


_PLAIN = frozenset({int, str, type(None)})  # types whose == is exact (no 1 == 1.0 == True)
_POST_MARK = ("post",)  # never a key (keys are str) nor a frozen value (those are 2-tuples)


def _signature(e: Event, values: dict[Any, set[int]]) -> tuple | None:
    """What of an event decides a conforming step: kind, node, params and post -- but of a
    produced value nothing (the model appends a fresh one whatever it is), and of each
    fetched record's value only the model values it may be.  None when an odd value keeps
    it from being hashed (the plain search then runs, and raises or reports as usual).
    Flat (kind, node, key, value, ..., mark, key, value, ...): built for every event, so
    built cheaply.  An event whose params and post hold only ints, strings and nulls (no
    records) -- half of a replication trace -- gets (kind, node, params, post) as item
    tuples instead: an even length, where the flat form's is odd, so the two never meet."""
    params = e.get("params") or {}
    post = e.get("post") or {}
    if "records" not in params and _PLAIN.issuperset(map(type, params.values())) \
            and _PLAIN.issuperset(map(type, post.values())):
        items = tuple(params.items())
        if "value" in params:
            items = tuple(kv for kv in items if kv[0] != "value")
        return (e["kind"], e["node"], items, tuple(post.items()))
    out: list[Any] = [e["kind"], e["node"]]
    try:
        for k, v in (e.get("params") or {}).items():
            t = type(v)
            if k == "value":
                continue
            out.append(k)
            if t is int or t is str or v is None:
                out.append(v)
            elif k == "records" and t is list:
                recs = []
                for r in v:
                    if type(r) is list and len(r) == 3 and type(r[0]) is int and type(r[1]) is int:
                        recs.append((r[0], r[1], frozenset(values.get(_value_key(r[2]), ()))))
                    else:
                        recs.append(_freeze(r))  # a frozen list: never equal to the triples above
                out.append(tuple(recs))
            else:
                out.append(_freeze(v))
        out.append(_POST_MARK)
        for k, v in (e.get("post") or {}).items():
            out.append(k)
            t = type(v)
            out.append(v if t is int or t is str or v is None else _freeze(v))
        return tuple(out)
    except TypeError:  # an unhashable record value
        return None


def _violations(before: State, after: State, fast: bool = False) -> list[tuple[str, str]]:
    """``all_violations`` of the event's steps taken together (the transition property is
    transitive).  ``before`` holds every property (it survived the previous event), and
    properties read only ZooKeeper, the brokers and the ghost history: if none of those
    changed -- a fetch request sent, a stale response dropped -- nothing can break.

    ``fast`` goes further on the same argument: only the properties whose inputs the step
    changed are evaluated (``_may_break``); if one of them breaks, the full list is
    computed, so the answer is always exactly ``all_violations``'s."""
    if after.zk == before.zk and after.brokers == before.brokers and after.ghost == before.ghost:
        return []
    if fast and not _may_break(before, after):
        return []
    return all_violations(before, after)


_DEPENDS: dict[str, frozenset[str]] = {
    "hw_le_leo": frozenset({"logs"}),
    "epoch_monotonic": frozenset({"logs", "epochs"}),  # the logs' epochs; ZK and known epochs
    "single_committing_leader": frozenset({"led", "committed"}),
    "committed_durable": frozenset({"committed", "leader_log"}),
    "replicas_consistent": frozenset({"logs"}),
    "isr_well_formed": frozenset(),  # ZooKeeper only
    "single_controller": frozenset({"controllers", "stale_accepts"}),
    "acked_durable": frozenset({"acked", "leader_log"}),
    "zombie_cannot_commit": frozenset({"zombie_commits"}),
}
"""What each property of ``properties`` reads besides ZooKeeper (a changed ZooKeeper state
always means a full check): "logs" a replica's log or HW, "leader_log" the log of the
partition's leader in ZooKeeper, "epochs" a replica's known leader epoch, "controllers" a
broker's controller flag or epoch; the rest are fields of the ghost history.  A property
missing from this table (a new one) is always evaluated."""


def _may_break(before: State, after: State) -> bool:
    """Could the step ``before -> after`` break a property, given that ``before`` holds
    them all?  A property whose inputs (``_DEPENDS``) are unchanged gives the same answer
    in ``after`` as in ``before`` -- none -- and the transition property compares only
    inputs that changed.  Exact, not a heuristic: True whenever a property breaks."""
    if after.zk != before.zk:
        return True
    changed: set[str] = set()
    leaders = {p: zn.leader for p, zn in enumerate(after.zk.partitions)}
    for b, (bb, ba) in enumerate(zip(before.brokers, after.brokers, strict=True)):
        if bb is ba or bb == ba:
            continue
        if bb.is_controller != ba.is_controller or bb.controller_epoch != ba.controller_epoch:
            changed.add("controllers")
        for p, (rb, ra) in enumerate(zip(bb.replicas, ba.replicas, strict=True)):
            if rb is ra:
                continue
            if rb.log != ra.log or rb.hw != ra.hw:
                changed.add("logs")
                if leaders.get(p) == b and rb.log != ra.log:
                    changed.add("leader_log")
            if rb.leader_epoch != ra.leader_epoch:
                changed.add("epochs")
    gb, ga = before.ghost, after.ghost
    if gb is not ga:
        for name in ("committed", "acked", "led", "zombie_appends", "zombie_commits", "stale_accepts"):
            if getattr(gb, name) != getattr(ga, name):
                changed.add(name)
    if not changed:
        return False
    for prop in PROPERTIES:
        needs = _DEPENDS.get(prop.name)
        if needs is not None and not (needs & changed):
            continue
        if prop.name == "epoch_monotonic":
            bad = epoch_monotonic_state(after) if "logs" in changed else None
            if bad is None and "epochs" in changed:
                bad = prop.check(before, after)
        else:
            bad = prop.check(before, after) if prop.on_transition else prop.check(after)
        if bad is not None:
            return True
    return False


def _no_step(i: int, total: int, e: Event, obs: Observation, res: Search, bound: int) -> dict[str, Any]:
    states = res.frontier[:SHOWN_STATES]
    if res.misses:
        distinct = list(dict.fromkeys(res.misses))[:3]
        allowed = "; ".join(distinct)
        reason = f"{_describe_event(e)} does not match any step the model allows: {allowed}"
    elif obs.actor < 0:
        reason = f"{_describe_event(e)} names no broker"
    else:
        reason = (f"{_describe_event(e)} is not enabled in any of the {len(res.frontier)} possible model states "
                  f"(searching up to {res.depth} unobserved internal steps)")
    return Verdict(False, i, total, i, reason, None, [state_text(h.state) for h in states], bound).as_dict()


# ---------------------------------------------------------------------------------------
# Exporting model runs as traces
# ---------------------------------------------------------------------------------------


def _value_text(v: int) -> str:
    return record(Entry(v, 0)).split("@")[0]


class _Exporter:
    def __init__(self, run: str, topic: str) -> None:
        self.run, self.topic = run, topic
        self.events: list[Event] = []
        self.seq: dict[int, int] = {}
        self.zxid = 0

    def emit(self, node: int, kind: str, params: dict[str, Any], post: dict[str, Any] | None = None,
             zk: bool = False) -> None:
        scope = KINDS[kind].scope
        seq = self.seq.get(node, 0)
        self.seq[node] = seq + 1
        if zk:
            self.zxid += 1
        self.events.append({
            "schema": SCHEMA_ID, "run": self.run, "node": node, "seq": seq, "clock": len(self.events) + 1,
            "zxid": self.zxid if zk else None, "kind": kind,
            "topic": self.topic if scope == "partition" else None, "partition": 0 if scope == "partition" else None,
            "params": params, "post": post or {},
            "_file": f"{self.run}/{node}.jsonl", "_line": seq + 1,
        })


def _records(offset: int, log: Iterable[Entry]) -> list[list[Any]]:
    return [[offset + i, e.epoch, _value_text(e.value)] for i, e in enumerate(log)]


def _post(r: Replica) -> dict[str, Any]:
    return {"role": ROLE_NAMES[r.role], "leader": r.leader, "leader_epoch": r.leader_epoch, "hw": r.hw, "leo": r.leo,
            "log_end_epoch": r.log[-1].epoch if r.log else None}


def _event_of(x: _Exporter, step: Step, before: State, after: State) -> None:
    a, args = step.action, step.args
    if a in ("broker_crash", "broker_stop", "broker_pause", "broker_resume"):
        x.emit(HARNESS, a, {"broker": args[0]})
    elif a in ("broker_restart", "broker_reregister"):
        x.emit(args[0], a, {"broker": args[0], "broker_epoch": after.brokers[args[0]].broker_epoch}, zk=True)
    elif a == "controller_elect":
        x.emit(args[0], a, {"controller_epoch": after.zk.controller_epoch}, zk=True)
    elif a == "controller_resign":
        x.emit(args[0], a, {"controller_epoch": before.brokers[args[0]].controller_epoch})
    elif a in ("elect_leader", "controlled_shutdown"):
        zn = after.zk.partitions[args[1]]
        x.emit(args[0], "elect_leader", {"leader": zn.leader, "leader_epoch": zn.leader_epoch, "isr": list(zn.isr),
                            "zk_version": zn.zk_version, "controller_epoch": after.zk.controller_epoch,
                            "reason": "broker_change" if a == "elect_leader" else "controlled_shutdown",
                            "replicas": list(zn.ar),
                            "unclean": args[1] in after.ghost.unclean and args[1] not in before.ghost.unclean}, zk=True)
    elif a in ("become_leader", "become_follower"):
        m = args[0]
        rb, ra = before.brokers[m.to].replicas[m.partition], after.brokers[m.to].replicas[m.partition]
        x.emit(m.to, a, {"leader": m.leader, "leader_epoch": m.leader_epoch, "isr": list(m.isr),
                         "zk_version": m.zk_version, "controller_epoch": m.controller_epoch,
                         "truncated_to": ra.leo if ra.log != rb.log else None}, _post(ra))
    elif a == "reject_leader_and_isr":
        m = args[0]
        reason = (stale_reason(before, _REJECT_CFG, m) or "stale").replace(" ", "_")
        x.emit(m.to, a, {"reason": reason, "leader_epoch": m.leader_epoch, "controller_epoch": m.controller_epoch})
    elif a == "truncate":
        f, p = args
        x.emit(f, a, {"leader": before.brokers[f].replicas[p].leader, "truncated_to": after.brokers[f].replicas[p].leo})
    elif a == "produce":
        b, p = args
        r = after.brokers[b].replicas[p]
        x.emit(b, a, {"offset": r.leo - 1, "value": _value_text(r.log[-1].value), "leader_epoch": r.log[-1].epoch},
               {"hw": r.hw, "leo": r.leo})
    elif a == "send_fetch":
        f, p = args
        r = before.brokers[f].replicas[p]
        x.emit(f, a, {"leader": r.leader, "fetch_offset": r.leo, "leader_epoch": r.leader_epoch},
               {"hw": r.hw, "leo": r.leo})
    elif a == "handle_fetch":
        m = args[0]
        lr = after.brokers[m.leader].replicas[m.partition]
        resp = _new_response(before, after, m)
        params: dict[str, Any] = {"follower": m.follower, "fetch_offset": m.offset, "leader_epoch": lr.leader_epoch}
        if resp is None:
            params.update(records=[], leader_hw=None, error=FENCED)
        else:
            params.update(records=_records(m.offset, resp.records), leader_hw=resp.hw, error=_ERRORS.get(resp.error))
        x.emit(m.leader, a, params, {"hw": lr.hw, "leo": lr.leo, "isr": list(lr.isr)})
    elif a == "receive_fetch":
        m = args[0]
        rb, ra = before.brokers[m.follower].replicas[m.partition], after.brokers[m.follower].replicas[m.partition]
        appended = ra.log[rb.leo:] if ra.log[: rb.leo] == rb.log else ()
        x.emit(m.follower, a, {"leader": m.leader, "fetch_offset": m.offset, "leader_epoch": ra.leader_epoch,
                               "records": _records(rb.leo, appended), "leader_hw": m.hw,
                               "error": _ERRORS.get(m.error)}, {"hw": ra.hw, "leo": ra.leo})
    elif a in ("shrink_isr", "expand_isr"):
        b, p, f = args
        zn = after.zk.partitions[p]
        x.emit(b, a, {"follower": f, "isr": list(zn.isr), "zk_version": zn.zk_version}, zk=True)
    elif a == "isr_update_failed":
        b, p = args
        x.emit(b, a, {"expected_zk_version": before.brokers[b].replicas[p].zk_version})
    elif a == "reassign_start":
        c, p, rar = args
        x.emit(c, "reassignment", {"state": "IN_PROGRESS", "rar": list(rar), "ar": list(before.zk.partitions[p].ar)}, zk=True)
    elif a == "reassign_complete":
        c, p, _ = args
        zn = after.zk.partitions[p]
        x.emit(c, "elect_leader", {"leader": zn.leader, "leader_epoch": zn.leader_epoch, "isr": list(zn.isr),
                                   "zk_version": zn.zk_version, "controller_epoch": after.zk.controller_epoch,
                                   "reason": "reassign", "replicas": list(zn.ar), "unclean": False}, zk=True)
    elif a == "stop_replica":
        m = args[0]
        x.emit(m.to, "stop_replica", {"delete": True, "reason": "stop_replica"})
    elif a == "on_broker_startup":
        pass  # no event: implementations record no control request sent (see ``_silent``)
    else:  # pragma: no cover - every action of model.actions is listed above
        raise ValueError(f"no trace event for action {a}")


def _prologue(x: _Exporter, cfg: Config, s: State) -> None:
    """Events that build ``model.state.initial``: every broker registers, broker 0 becomes
    controller, the partition's leader is initialised and every replica applies it."""
    for b in range(cfg.brokers):
        x.emit(b, "broker_restart", {"broker": b, "broker_epoch": b + 1}, zk=True)
    x.emit(0, "controller_elect", {"controller_epoch": s.zk.controller_epoch}, zk=True)
    zn = s.zk.partitions[0]
    x.emit(0, "elect_leader", {"leader": zn.leader, "leader_epoch": zn.leader_epoch, "isr": list(zn.isr),
                               "zk_version": zn.zk_version, "controller_epoch": s.zk.controller_epoch,
                               "reason": "init", "replicas": list(zn.ar), "unclean": False}, zk=True)
    for b in zn.ar:
        kind = "become_leader" if b == zn.leader else "become_follower"
        r = s.brokers[b].replicas[0]
        x.emit(b, kind, {"leader": zn.leader, "leader_epoch": zn.leader_epoch, "isr": list(zn.isr),
                         "zk_version": zn.zk_version, "controller_epoch": s.zk.controller_epoch, "truncated_to": None},
               _post(r))


def events_from_steps(cfg: Config, steps: Sequence[Step], run: str | None = None, topic: str = "t") -> list[Event]:
    """A trace (one causally ordered group, as ``judge`` takes it) of the model run that
    takes ``steps`` from ``model.state.initial(cfg)`` (partition 0 only).  Each step is one
    event of its actor, with every field the schema defines; a prologue of registrations,
    the controller election and the partition's initialisation comes first.  Raises
    ``ValueError`` on a step the model does not allow."""
    if cfg.partitions != 1:
        cfg = replace(cfg, partitions=1)
    x = _Exporter(run or f"model-{cfg.name}", topic)
    s = initial(cfg)
    _prologue(x, cfg, s)
    for i, step in enumerate(steps, 1):
        t = apply(s, cfg, step)
        if t is None:
            raise ValueError(f"step {i} ({step.action}{step.args}) is not enabled in {cfg.name}")
        _event_of(x, step, s, t)
        s = t
    return x.events


def _lai_for(broker: int) -> Callable[[State], Step]:
    def choose(s: State) -> Step:
        epoch = s.zk.partitions[0].leader_epoch
        m = next(m for m in s.leader_and_isr if m.to == broker and m.leader_epoch == epoch)
        return Step("become_leader" if m.leader == broker else "become_follower", (m,))

    return choose


def design_bug_steps() -> list[Step]:
    """KAFKA-1211 as the design (seed 000) allows it, from ``model.scenarios``: a follower
    restarts, truncates the committed record ``a`` to its stale HW and is elected leader --
    and then becomes leader, so the loss is visible in the trace (its LEO is 0)."""
    from properties.checkers.scenarios import play

    cfg = named("design")
    out = play("kafka_1211", cfg)
    steps = [step for step, _ in out.steps]
    last = out.states[-1]
    tail = _lai_for(last.zk.partitions[0].leader)(last)
    return [*steps, tail]


def design_bug_events() -> list[Event]:
    """The design bug's counterexample exported as a trace (issue 5, criterion 4)."""
    return events_from_steps(named("design"), design_bug_steps(), run="design-kafka-1211")
