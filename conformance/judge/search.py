"""Searching for the model steps an observation is: the bounded set of possible states,
the observed action's candidate steps, and the unobserved *internal* steps the judge may
insert before an event (silent ones, and before a freezing event, the victim's own).

Which actions may be internal, may be cut short by a kill -9, or freeze their broker, and
who takes a step and what it shows, are declared with each action in ``model.registry``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import Any, NamedTuple

from conformance.judge.observation import Observation, mismatch
from model.actions import (
    Step,
    broker_partitions_args,
    brokers_args,
    fetch_messages_args,
    forget_stale_requests,
    isr_changes_args,
    requests_args,
)
from model.config import Config
from model.registry import ACTIONS, apply
from model.state import (
    DELETED,
    EPOCH_DURING_DELETE,
    FETCHING,
    FOLLOWER,
    NO_LEADER,
    TRUNCATING,
    UP,
    LeaderAndIsr,
    PartitionZnode,
    State,
)
from properties.safety import PROPERTIES, all_violations, epoch_monotonic_state

Stepper = Callable[[State, Config, Step], "State | None"]
"""How the search takes one step: ``model.registry.apply``, the Python model, unless the
judge is given another with the same answers (``conformance.judge.compiled``: the compiled
search's rules)."""


# ---------------------------------------------------------------------------------------
# Hypotheses: a model state plus what the judge must remember about how it got there
# ---------------------------------------------------------------------------------------


class Hypothesis(NamedTuple):
    """A state the system may be in.

    (The judge once also remembered which brokers had restarted and not yet applied a
    LeaderAndISR, so that the controller's LeaderAndISR repeating a startup's recovery in
    the same epoch could be matched as no step.  The model now has the rule itself: the
    decision a replica holds, sent again, is taken silently
    (``model.actions.commands.repeats_held_decision``) -- its delivery is no step, and no
    refusal of it is one -- as the implementation takes it (REPEAT).)"""

    state: State
    # whether this state assumes a kill -9 cut a step short before it was recorded (see
    # ``_before_freeze``): a speculation, kept only because a later event may need it
    speculative: bool = False


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
# What a model step looks like to an observer (declared per action in model.registry)
# ---------------------------------------------------------------------------------------


def actor(step: Step) -> int:
    """The broker that takes a step (the one whose trace records it)."""
    return ACTIONS[step.action].actor(step.args)


def model_view(step: Step, before: State, after: State) -> dict[str, Any]:
    """Every field an event of this step could carry (params and post together), in model
    terms: broker ids are model ids and record values the model's ints.  Keys follow
    ``traces/SCHEMA.md``; ``mismatch`` looks only at the ones an event actually carries.
    Each action declares its view in ``model.registry``."""
    entry = ACTIONS.get(step.action)
    return {} if entry is None else entry.view(step.args, before, after)


# ---------------------------------------------------------------------------------------
# Internal steps: silent ones, and those a freezing event forces before it
# ---------------------------------------------------------------------------------------


INTERNAL_ACTIONS = tuple(name for name, e in ACTIONS.items() if e.silent is not None)
"""Actions an implementation may take without recording them (only when silent, see
``_silent``): fetch round trips that change nothing, an epoch lookup on an empty log, a
zombie controller noticing it was superseded, the startup requests a controller sends."""


def _silent(step: Step, before: State, after: State) -> bool:
    """Would an implementation have taken this step without recording it?  Only if it
    changes nothing a trace shows: each action says when (``model.registry``, ``silent``)."""
    when = ACTIONS[step.action].silent
    return when is not None and when(step.args, before, after)


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


def internal_successors(s: State, cfg: Config, take: Stepper = apply) -> Iterator[State]:
    """States one silent internal step (of any broker) away."""
    return (t for t, _ in _internal_steps(s, cfg, None, False, take))


def victim_successors(s: State, cfg: Config, b: int, loud: bool, take: Stepper = apply) -> Iterator[tuple[State, bool]]:
    """States one internal step of broker ``b`` away, each with whether the step was silent;
    steps that are not silent (and ``CUT_SHORT_ACTIONS``) only when ``loud`` (see
    ``_before_freeze``)."""
    return _internal_steps(s, cfg, b, loud, take)


def _internal_steps(s: State, cfg: Config, by: int | None, loud: bool, take: Stepper = apply) -> Iterator[tuple[State, bool]]:
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
            t = take(s, cfg, step)
            if t is not None and t != s:
                silent = _silent(step, s, t)
                if silent or loud:
                    yield t, silent


CUT_SHORT_ACTIONS = tuple(name for name, e in ACTIONS.items() if e.cut_short)
"""Besides internal ones, steps a ``kill -9`` may cut short between their effect and their
trace line: a leader's conditional ISR write, made in ZooKeeper just before it died (chaos
seed 6), is seen by everyone though its own trace never says so."""

FREEZING = tuple(name for name, e in ACTIONS.items() if e.freezing)
"""Events after which their broker cannot take the silent steps it might have taken just
before: it is paused or dead until it resumes or restarts, its fetcher of the old
leader is gone (a role change), or its replica is (a StopReplica: a leader answers no
fetch after it, chaos seed 404 with ``--admin``).  Such steps cannot be placed after the
event, so for these events the judge also keeps the states where the broker took some
first (``_before_freeze``)."""


# ---------------------------------------------------------------------------------------
# Matching an observation: candidate steps, the iterative deepening, the bounded set
# ---------------------------------------------------------------------------------------


def _actor_args(obs: Observation, s: State, cfg: Config) -> Iterable[tuple] | None:
    """The argument tuples of the observed action whose step the observed broker takes, in
    the order ``ACTIONS[action].args`` yields them -- built directly instead of enumerating
    every argument and filtering by ``actor``.  Only for actions whose enumerator is one of
    the generic ones below (checked by identity, so a changed enumerator in
    ``model.actions`` falls back to the general path); None means "use the general path"."""
    gen = ACTIONS[obs.action].args
    b = obs.actor
    if gen is broker_partitions_args:  # (b, p): produce, send_fetch, truncate, isr_update_failed
        return [(b, p) for p in range(cfg.partitions)] if 0 <= b < cfg.brokers else []
    if gen is isr_changes_args:  # (b, p, f), f != b
        if not 0 <= b < cfg.brokers:
            return []
        return [(b, p, f) for p in range(cfg.partitions) for f in range(cfg.brokers) if f != b]
    if gen is requests_args:  # LeaderAndISR requests addressed to b
        return [(m,) for m in s.leader_and_isr if m.to == b]
    if gen is fetch_messages_args:  # handle_fetch: requests to leader b; receive_fetch: responses to b
        whose = ACTIONS[obs.action].actor
        return [(m,) for m in s.fetches if whose((m,)) == b]
    return None


def answer_config(obs: Observation, cfg: Config) -> Config:
    """The configuration the observed step is taken under: ``cfg``, except that a leader's
    fetch answer carries what fit in its byte limits (KIP-74: at least one record when it
    has any), so an answer of k records is the model's answer cut at ``fetch_max_records``
    = k -- the same answer as ``cfg``'s when the leader had no more to give."""
    answer = obs.fields.get("records")
    if obs.action != "handle_fetch" or not isinstance(answer, list) or not answer:
        return cfg
    return _cut_at(cfg, len(answer))


@functools.lru_cache(maxsize=64)
def _cut_at(cfg: Config, records: int) -> Config:
    return replace(cfg, fetch_max_records=records)


def _candidates(obs: Observation, s: State, cfg: Config, fast: bool = False,
                take: Stepper = apply) -> Iterator[tuple[Step, State | None]]:
    """Steps of the observed action by the observed broker, with their results (None when
    the guard fails).  ``fast`` builds the arguments from the observed broker directly
    (``_actor_args``): the same steps in the same order, so the same misses are reported."""
    entry = ACTIONS[obs.action]
    cfg = answer_config(obs, cfg)
    if entry.from_event is not None:  # a self-loop the model forgets: its arguments are in the event
        args = entry.from_event(obs.fields, obs.actor, s)
        yield Step(obs.action, args), entry.fn(s, cfg, *args)
        return
    if entry.args is brokers_args:  # the broker is the argument
        arg_sets: Iterable[tuple] = [(obs.actor,)] if obs.actor >= 0 else []
    else:
        direct = _actor_args(obs, s, cfg) if fast else None
        if direct is not None:
            for args in direct:
                step = Step(obs.action, args)
                yield step, take(s, cfg, step)
            return
        arg_sets = ACTIONS[obs.action].args(s, cfg)
    for args in arg_sets:
        step = Step(obs.action, args)
        if actor(step) != obs.actor:
            continue
        yield step, take(s, cfg, step)


def _init_candidate(obs: Observation, s: State, cfg: Config) -> tuple[Step, State | None] | None:
    """The partition's first ``elect_leader`` initialises it (``init_partition``); a later
    one with reason ``init`` is the topic's re-creation, the model's ``create_topic``."""
    if obs.action not in ("elect_leader", "create_topic") or s.zk.partitions[0].leader_epoch != -1:
        return None
    f = obs.fields
    ar = tuple(sorted(f.get("_ar") or range(cfg.brokers)))
    t = init_partition(s, cfg, obs.actor, f.get("leader", NO_LEADER), f.get("leader_epoch", 0),
                       tuple(f.get("isr") or ()), f.get("zk_version", 0), ar)
    return Step("init_partition", (obs.actor,)), t


def _deletion_candidates(obs: Observation, s: State, cfg: Config,
                         take: Stepper = apply) -> list[tuple[Step, State | None]] | None:
    """A topic deletion as the implementation records it (seed 000 B 2): the controller sends
    StopReplica(delete) to the live replicas, each records its ``stop_replica``, and only
    then does the controller remove the znodes and record ``topic_deleted``.  The model's
    ``delete_topic`` removes the znodes and sends the requests in one step, so it is taken
    just before the first replica's ``stop_replica`` (the request that replica acts on), and
    the ``topic_deleted`` after is the same step seen again (a stutter).  A deletion whose
    replicas were all down sends nothing: then ``topic_deleted`` is the step itself.

    A partition's removal (seed 000 H) is recorded the same way, ending in
    ``partitions_removed``: a first StopReplica(delete) may be either, and the event that
    ends it keeps the hypotheses of its own kind.  An added partition's ``partitions_added``
    comes after its ``elect_leader`` (reason init), which started its life: the same step.

    A reassignment's StopReplica (seed 000 F 3.2.4) and a controlled shutdown's (no delete)
    are the model's ``stop_replica`` of the request pending for the broker.
    None: not a deletion's event (the general candidates apply)."""
    zn = s.zk.partitions[0]
    c = s.zk.controller
    if obs.action == "add_partitions":
        if not zn.ar or obs.actor != c or zn.leader_epoch == -1:
            return []  # an added partition's life starts at its elect_leader (init), before this
        return [(Step("add_partitions", (c, 0, zn.ar, zn.leader)), s)]  # the same step seen again
    if obs.action in ("delete_topic", "remove_partitions"):
        if zn.ar or obs.actor != c or zn.leader_epoch == -1:
            return None
        # already taken, at its first StopReplica -- as this kind of removal, not the other
        if (obs.action == "remove_partitions") != (0 in s.ghost.removed):
            return []
        return [(Step(obs.action, (c, 0)), s)]
    if obs.action != "stop_replica":
        return None
    b = obs.actor
    out: list[tuple[Step, State | None]] = []
    pending = [m for m in s.stop_replica if m.to == b]
    for m in pending:
        out.append((Step("stop_replica", (m,)), take(s, cfg, Step("stop_replica", (m,)))))
    if not any(m.leader_epoch == EPOCH_DURING_DELETE for m in pending) and zn.ar and c != NO_LEADER:
        for removal in ("delete_topic", "remove_partitions"):  # which one, the event after it says
            deleted = take(s, cfg, Step(removal, (c, 0)))
            if deleted is None:
                continue
            for m in deleted.stop_replica:
                if m.to == b and m.leader_epoch == EPOCH_DURING_DELETE:
                    out.append((Step("stop_replica", (m,)), take(deleted, cfg, Step("stop_replica", (m,)))))
    return out


ROUNDED_TRUNCATIONS = ("kip279", "kip320")
"""The truncation rules Kafka's follower may take in several OffsetsForLeaderEpoch rounds."""


def later_truncation_round(obs: Observation, s: State, cfg: Config) -> tuple[Step, State] | None:
    """A ``truncate`` event that is a later OffsetsForLeaderEpoch round of the truncation the
    model already took: the same step seen again (a stutter), or None.

    Partial observation: the model takes a truncation as one step (``model.truncation.kip279``
    runs its rounds inside ``truncate``), but Kafka's ``AbstractFetcherThread`` -- and the
    implementation (``impl.node.truncation.epoch_truncation_step``) -- records each round, and
    asks again when the leader answered an epoch the follower lacks over an older one it has,
    even where that round already reached the final cut.  So a ``truncate`` of a follower
    that has truncated (FETCHING) and sent no fetch since (nothing of its own in flight), of
    the leader it follows, under a rule that takes rounds, is that truncation's later round:
    it matches no new step, and the state stays the model's.  Its ``truncated_to`` is
    compared with the model's cut -- the follower's LEO after ``truncate`` -- as any
    truncation is (``_truncate_view``): a round that cuts elsewhere than ``kip279``'s cut
    diverges there."""
    if obs.action != "truncate" or cfg.truncation not in ROUNDED_TRUNCATIONS or not 0 <= obs.actor < cfg.brokers:
        return None
    f = obs.actor
    r = s.brokers[f].replicas[0]
    if s.brokers[f].status != UP or r.role != FOLLOWER or r.fetch_state != FETCHING or r.leader == NO_LEADER:
        return None
    if any(m.follower == f for m in s.fetches):
        return None  # it fetched since: a new lookup is a new truncation, not a round of the last
    return Step("truncate", (f, 0)), s


class Match(NamedTuple):
    before: State  # the state at the start of the event (before any internal step)
    after: Hypothesis


def _match_in(h: Hypothesis, obs: Observation, cfg: Config, values: dict[Any, set[int]],
              misses: list[str], fast: bool = False, take: Stepper = apply) -> list[Match]:
    s = h.state
    out: list[Match] = []
    init = _init_candidate(obs, s, cfg)
    deletion = _deletion_candidates(obs, s, cfg, take) if init is None else None
    if init is not None:
        cands = [init]
    elif deletion is not None:
        cands = deletion
    else:
        cands = list(_candidates(obs, s, cfg, fast, take))
        later = later_truncation_round(obs, s, cfg)
        if later is not None:
            cands.append(later)
    for step, t in cands:
        if t is None:
            continue
        view = model_view(step, s, t) if step.action != "init_partition" else _init_view(t)
        why = mismatch(obs, view, values)
        if why is not None:
            misses.append(why)
            continue
        out.append(Match(s, Hypothesis(t, h.speculative)))
    return out


def _init_view(t: State) -> dict[str, Any]:
    zn = t.zk.partitions[0]
    return {"leader": zn.leader, "leader_epoch": zn.leader_epoch, "isr": list(zn.isr), "zk_version": zn.zk_version,
            "controller_epoch": t.zk.controller_epoch, "unclean": False}


def ordered(hyps: Iterable[Hypothesis]) -> list[Hypothesis]:
    return sorted(set(hyps))


class Search(NamedTuple):
    survivors: list[Match]
    depth: int
    frontier: list[Hypothesis]  # the states tried at the shallowest depth (for the report)
    misses: list[str]


def advance(hyps: list[Hypothesis], obs: Observation, cfg: Config, values: dict[Any, set[int]], bound: int,
            limit: int, fast: bool = False, take: Stepper = apply) -> Search:
    """The matches of an observation, with the fewest internal steps that give any.

    ``fast`` (see ``judge``) only changes how candidates are enumerated, never which;
    ``take`` (``Stepper``) only how each step is computed, never its result."""
    frontier = [(h.state, h) for h in hyps]  # (state at the start of the event, hypothesis)
    seen: set[Hypothesis] | None = None  # built only if internal steps are searched (hashing states costs)
    misses: list[str] = []
    for depth in range(bound + 1):
        found: list[Match] = []
        for origin, h in frontier:
            found.extend(m._replace(before=origin) if m.before is not origin else m
                         for m in _match_in(h, obs, cfg, values, misses if depth == 0 else [], fast, take))
        if found:
            if obs.action in FREEZING:
                found.extend(_before_freeze(frontier, obs, cfg, values, bound - depth, fast, take))
            return Search(found, depth, hyps, misses)
        if depth == bound:
            break
        if seen is None:
            seen = set(hyps)
        nxt: list[tuple[State, Hypothesis]] = []
        for origin, h in frontier:
            for t in internal_successors(h.state, cfg, take):
                g = Hypothesis(t, h.speculative)
                if g not in seen:
                    seen.add(g)
                    nxt.append((origin, g))
        frontier = sorted(nxt, key=lambda pair: pair[1])[: limit * 4]
        if not frontier:
            break
    return Search([], bound, hyps, misses)


def _before_freeze(frontier: list[tuple[State, Hypothesis]], obs: Observation, cfg: Config,
                   values: dict[Any, set[int]], bound: int, fast: bool, take: Stepper = apply) -> list[Match]:
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
            for t, silent in victim_successors(h.state, cfg, obs.actor, loud, take):
                g = Hypothesis(t, h.speculative or not silent)
                if g not in seen:
                    seen.add(g)
                    nxt.append((origin, g, loud and silent))
        for origin, g, _ in nxt:
            out.extend(m._replace(before=origin) for m in _match_in(g, obs, cfg, values, [], fast, take))
        level = nxt
    return out


# ---------------------------------------------------------------------------------------
# Properties after a step
# ---------------------------------------------------------------------------------------


def violations(before: State, after: State, fast: bool = False) -> list[tuple[str, str]]:
    """``all_violations`` of the event's steps taken together (the transition property is
    transitive).  ``before`` holds every property (it survived the previous event), and
    properties read only ZooKeeper, the brokers and the ghost history: if none of those
    changed -- a fetch request sent, a stale response dropped -- nothing can break.

    ``fast`` goes further on the same argument: only the properties whose inputs the step
    changed are evaluated (``may_break``); if one of them breaks, the full list is
    computed, so the answer is always exactly ``all_violations``'s."""
    if after.zk == before.zk and after.brokers == before.brokers and after.ghost == before.ghost:
        return []
    if fast and not may_break(before, after):
        return []
    return all_violations(before, after)


def may_break(before: State, after: State) -> bool:
    """Could the step ``before -> after`` break a property, given that ``before`` holds
    them all?  A property whose inputs (``Property.reads``) are unchanged gives the same answer
    in ``after`` as in ``before`` -- none -- and the transition property compares only
    inputs that changed.  Exact, not a heuristic: True whenever a property breaks."""
    if after.zk != before.zk:
        return True
    changed = _changed_inputs(before, after)
    if not changed:
        return False
    for prop in PROPERTIES:
        if not (prop.reads & changed):
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


_GHOST_INPUTS = ("committed", "acked", "led", "zombie_appends", "zombie_commits", "stale_accepts", "retired")


def _changed_inputs(before: State, after: State) -> set[str]:
    """The property inputs (``Property.reads``) of the brokers and the ghost history that
    differ between ``before`` and ``after`` (ZooKeeper unchanged)."""
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
            if rb.topic_id != ra.topic_id or (rb.role != ra.role and DELETED in (rb.role, ra.role)):
                changed.update(("logs", "epochs"))  # which replicas are compared, and exempt
    gb, ga = before.ghost, after.ghost
    if gb is not ga:
        changed.update(name for name in _GHOST_INPUTS if getattr(gb, name) != getattr(ga, name))
    return changed
