"""Generated test cases: paths through the model's state graph, chosen to cover every
action the driver can execute and every distinct outcome of each, driven against real
clusters within a time budget.

The graph is searched breadth first from the initial state (over the actions that have a
harness operation, and, as the checker does, not past a state that breaks a property), so
the path to the first transition of each (action, outcome) pair is a shortest one.  An *outcome* is what the step did, read off the two states
(:func:`outcome`): a fetch answered (cut short with the HW ahead of what the follower will
have, under ``fetch_max_records``), refused or out of range; an answer appended (its HW
capped at the follower's LEO, or not), taken for its HW only, truncating or discarded; a
LeaderAndISR taken, already followed, or taken onto the records of a deleted incarnation of
the topic (``other_incarnation``: the broker must drop them first); an election
of a new leader, of the same one, of none, or unclean; a truncation that cut or kept; a
StopReplica that deleted, stopped, or was refused (stale, or for another incarnation of the topic).
The admin actions (preferred election, topic deletion and creation, partitions added and
removed, ...) are searched when the configuration's knobs allow them (``knobs``:
``--deletions``, ``--preferred-elections``, ``--partition-changes``, ...), and only where the
driver can hold every fetch apart (``driver.one_follower_partition``: an added partition has
one replica).

Each path runs on a fresh cluster (:class:`~impl.harness.drive.driver.Driver`), shortest
first, until the budget is spent.  The report counts the pairs and the distinct model
transitions the driven paths covered, against how many the search found.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from impl.harness.drive.driver import (
    DIVERGED,
    INTERRUPTED,
    REPRODUCED,
    Driver,
    DriveReport,
    one_follower_partition,
)
from impl.harness.drive.operations import OPERATIONS
from impl.harness.drive.paths import ModelRun
from impl.harness.drive.zombie import (
    Waiting,
    waiting_after,
    with_own_steps,
    write_refused,
    writes_unfenced,
)
from model.actions import Step
from model.actions.common import shutting_down
from model.config import Config, named
from model.registry import successors
from model.state import DELETED, FETCH_RESPONSE, NO_LEADER, OUT_OF_RANGE, State, initial
from properties.safety import all_violations

Pair = tuple[str, str]  # (action, outcome)


def outcome(step: Step, s: State, t: State, cfg: Config, waiting: Waiting = frozenset()) -> str:
    """The distinct outcome of one step, in the model's terms; ``waiting``, the controllers
    frozen inside an election on the path to ``s`` (``drive.zombie``)."""
    a = step.action
    if a in ("broker_pause", "broker_expire", "broker_resume", "controller_resign"):
        return _zombie_outcome(step, s, t, cfg, waiting)
    if a == "handle_fetch":
        m = step.args[0]
        new = [x for x in t.fetches if x.kind == FETCH_RESPONSE and x.follower == m.follower and x not in s.fetches]
        if not new:
            return "refused"
        if new[0].error == OUT_OF_RANGE:
            return "out_of_range"
        # cut short (fetch_max_records): the leader's HW ahead of the follower's new LEO
        return "answered_hw_ahead" if new[0].hw > m.offset + len(new[0].records) else "answered"
    if a == "receive_fetch":
        m = step.args[0]
        before, after = s.brokers[m.follower].replicas[m.partition], t.brokers[m.follower].replicas[m.partition]
        if after.leo > before.leo:
            return "appended_hw_capped" if after.hw < m.hw else "appended"
        if after.leo < before.leo:
            return "truncated"
        return "hw_taken" if after.hw != before.hw else "discarded"
    if a in ("become_follower", "become_leader"):
        m = step.args[0]
        before, after = s.brokers[m.to].replicas[m.partition], t.brokers[m.to].replicas[m.partition]
        if before.role == after.role and before.leader == after.leader:
            return "already_" + ("following" if a == "become_follower" else "leading")
        # onto the records of a deleted incarnation (its broker was down for the deletion):
        # the broker drops them first (``for_incarnation``; ``topic_identity.compare``)
        return "other_incarnation" if before.log and before.topic_id != m.topic_id else "taken"
    if a == "truncate":
        f, p = step.args
        return "cut" if t.brokers[f].replicas[p].leo < s.brokers[f].replicas[p].leo else "kept"
    if a == "elect_leader":
        p = step.args[1]
        if len(t.ghost.unclean) > len(s.ghost.unclean):
            return "unclean"
        new, old = t.zk.partitions[p].leader, s.zk.partitions[p].leader
        if new == NO_LEADER:
            return "no_leader"
        return "same_leader" if new == old else "new_leader"
    if a == "controlled_shutdown":
        p = step.args[1]
        return "moved" if t.zk.partitions[p] != s.zk.partitions[p] else "stopped_only"
    if a == "stop_replica":
        m = step.args[0]
        before, after = s.brokers[m.to].replicas[m.partition], t.brokers[m.to].replicas[m.partition]
        if before == after:  # a stale one (an older controller's, an older epoch's), or another incarnation's
            return "refused"
        return "deleted" if after.role == DELETED else "stopped"
    return "taken"


def _zombie_outcome(step: Step, s: State, t: State, cfg: Config, waiting: Waiting) -> str:
    """A pause or a session expiry of a controller in the middle of an election, of a
    controller, of another broker; a resume of a controller another has replaced (a zombie); a zombie's resignation
    after its election's write was refused by the controller-epoch check."""
    b = step.args[0]
    if step.action in ("broker_pause", "broker_expire"):
        if b in waiting_after(step, s, cfg, waiting):
            return "controller_electing"
        return "controller" if s.brokers[b].is_controller else "broker"
    if step.action == "broker_resume":
        zombie = t.brokers[b].is_controller and t.brokers[b].controller_epoch < t.zk.controller_epoch
        return "zombie_controller" if zombie else "taken"
    return "write_refused" if b in waiting and write_refused(s, b, cfg) else "taken"


WAIT_FOR_ELECTIONS = frozenset({"preferred_election", "delete_topic", "create_topic", "controlled_shutdown",
                                "reassign_start", "reassign_complete", "add_partitions", "remove_partitions"})
"""Admin requests the implementation's controller takes only after the election it has to
make: in step mode it waits for that election's permit (``elect_leader``) before its next
event, so while the model may elect, the generated paths take none of these."""


def controller_would_choose(step: Step, s: State) -> bool:
    """A topic's creation whose leader the implementation's controller would choose: the
    model lets the administrator name any live replica of the assignment, Kafka's
    administrator names only the assignment, and its controller makes the first live replica
    of it the leader.  With the model's assignment sorted -- its preferred replica is the
    lowest id -- that is the lowest live id; another leader is followed at the creation (the
    driver lists it first) but then is the implementation's preferred replica where the model's
    is the lowest id (docs/drive.md, Limits), so the generated paths do not choose it."""
    if step.action != "create_topic":
        return True
    _, _, ar, leader = step.args
    return leader == min(b for b in ar if b in s.zk.live and b not in shutting_down(s))


DELIVERIES = frozenset({"become_leader", "become_follower", "reject_leader_and_isr", "stop_replica"})


def sent_while_registered(step: Step, s: State) -> bool:
    """Whether a control request delivered by ``step`` may be one the implementation sent.
    The model's controller sends to every assigned replica; Kafka's, and the
    implementation's, only to the live brokers.  A broker whose session expired while it
    runs (``broker_expire``) is up and unregistered until ``broker_reregister``: a request
    to it in flight then may have been sent since the expiry, which the implementation never
    sent, so the generated paths deliver it none until it registers again (those sent since
    are stale by then, and forgotten)."""
    return step.action not in DELIVERIES or step.args[0].to in s.zk.live


def drivable(step: Step, s: State, t: State) -> bool:
    """Whether the generated paths take ``step`` (from ``s`` to ``t``): it has a harness
    operation, the implementation's controller would make the same choice
    (``controller_would_choose``), it sends to registered brokers only
    (``sent_while_registered``), and no partition but partition 0 gets a follower
    (``one_follower_partition``).  A partition removal needs no check of its own: the
    implementation's admin removes any partition the topic has, its last one too."""
    return step.action in OPERATIONS and controller_would_choose(step, s) and sent_while_registered(step, s) \
        and one_follower_partition(t) is None


@dataclass
class Case:
    pair: Pair
    steps: list[Step]


@dataclass
class GenerateReport:
    config: str
    budget_s: float
    states: int  # model states the search visited
    transitions: int  # model transitions among them (over the driven actions)
    pairs: list[Pair]  # every (action, outcome) pair the search found
    focus: list[Pair] = field(default_factory=list)  # a sample's: the pairs it drove paths for
    cases: list[dict[str, Any]] = field(default_factory=list)  # one per driven path
    covered_pairs: list[Pair] = field(default_factory=list)
    covered_transitions: int = 0
    seconds: float = 0.0
    exit_code: int = 0
    paths: list[list[Step]] = field(default_factory=list)  # each driven case's model steps, as ``cases``
    interrupted: bool = False  # Ctrl-C stopped the search or a case: the report covers what ran before

    def as_dict(self) -> dict[str, Any]:
        return {"config": self.config, "budget_s": self.budget_s, "states": self.states,
                "transitions": self.transitions, "pairs": [list(p) for p in self.pairs],
                "covered_pairs": [list(p) for p in self.covered_pairs], "focus": [list(p) for p in self.focus],
                "covered_transitions": self.covered_transitions, "cases": self.cases,
                "seconds": round(self.seconds, 1), "interrupted": self.interrupted,
                "transitions_per_minute": round(60 * self.covered_transitions / self.seconds, 1)
                if self.seconds else 0.0}


SEARCH_PROGRESS_SECONDS = 5.0
"""How often the search, which takes a minute or two at the default bound, says how far it got."""


Node = tuple[State, Waiting]
"""A state of the search: the model's state and the zombies frozen inside an election on the
path to it (``drive.zombie``: a fact of the path the implementation acts on)."""


def moves(node: Node, cfg: Config) -> list[tuple[Step, Node, str]]:
    """Every step from ``node`` the driver takes, to the node it leads to, with its outcome:
    a step's successor is taken with the steps the implementation takes on its own right
    after it (``zombie.with_own_steps``: a resumed broker re-registers)."""
    s, waiting = node
    steps = list(successors(s, cfg))
    electing = any(st.action == "elect_leader" for st, _ in steps)
    out = []
    for step, t in steps:
        if (electing and step.action in WAIT_FOR_ELECTIONS) or not drivable(step, s, t):
            continue
        if step.action == "controller_resign" and step.args[0] in waiting and writes_unfenced(s, step.args[0], cfg):
            continue
        result = outcome(step, s, t, cfg, waiting)
        after = waiting_after(step, s, cfg, waiting)
        out.append((step, (with_own_steps(step, t, cfg, after), after), result))
    return out


def search(cfg: Config, max_states: int = 50_000,
           progress: Callable[[str], None] | None = None) -> tuple[list[Case], int, int]:
    """Breadth-first over the driven actions: the shortest path to the first transition
    of every (action, outcome) pair; and the states and transitions visited."""
    n0: Node = (initial(cfg), frozenset())
    started = last = time.monotonic()
    parent: dict[Node, tuple[Node, Step] | None] = {n0: None}
    queue = deque([n0])
    found: dict[Pair, list[Step]] = {}
    transitions = 0

    def path_to(n: Node) -> list[Step]:
        out: list[Step] = []
        while (p := parent[n]) is not None:
            n, step = p
            out.append(step)
        return out[::-1]

    while queue:
        if progress is not None and time.monotonic() - last >= SEARCH_PROGRESS_SECONDS:
            last = time.monotonic()
            progress(f"generate: searching: {len(parent):,} of at most {max_states:,} states, {len(found)} "
                     f"(action, outcome) pairs so far ({last - started:.0f} s)")
        n = queue.popleft()
        for step, m, result in moves(n, cfg):
            transitions += 1
            pair = (step.action, result)
            if pair not in found:
                found[pair] = path_to(n) + [step]
            if m not in parent and len(parent) < max_states:
                parent[m] = (n, step)
                if not all_violations(n[0], m[0]):  # as the checker does: a run ends at a violation
                    queue.append(m)
    return _cover(cfg, [Case(p, steps) for p, steps in found.items()]), len(parent), transitions


def walk(cfg: Config, steps: list[Step]) -> list[tuple[Node, Step, str]]:
    """A path's steps, each with the node it is taken in and its outcome."""
    n: Node = (initial(cfg), frozenset())
    out = []
    for step in steps:
        _, m, result = next(x for x in moves(n, cfg) if x[0] == step)
        out.append((n, step, result))
        n = m
    return out


def pairs_along(cfg: Config, steps: list[Step]) -> set[Pair]:
    """The (action, outcome) pairs a path takes, every step of it."""
    return {(step.action, result) for _, step, result in walk(cfg, steps)}


def _cover(cfg: Config, cases: list[Case]) -> list[Case]:
    """Greedy set cover: first the path that takes the most pairs not yet taken (the shorter
    on a tie), then the next; paths that add nothing go last.  Each path runs on a cluster
    of its own, so fewer, longer paths cover the pairs in less time."""
    along = {c.pair: pairs_along(cfg, c.steps) for c in cases}
    left, done, order = sorted(cases, key=lambda c: (len(c.steps), c.pair)), set(), []
    while left:
        best = max(left, key=lambda c: (len(along[c.pair] - done), -len(c.steps)))
        if not along[best.pair] - done:
            break
        order.append(best)
        done |= along[best.pair]
        left.remove(best)
    return order + left


def _fixed(step: Step) -> Callable[[State], tuple]:
    return lambda _s: step.args


def generate(config: str, budget_s: float, data_dir: Path | None = None, brokers: int = 2,
             step_timeout: float = 20.0, progress: Callable[[str], None] | None = None,
             max_states: int = 50_000, knobs: dict[str, int] | None = None,
             focus: frozenset[Pair] | None = None, first_only: bool = False) -> GenerateReport:
    """Search, then drive the cases, shortest first, until ``budget_s`` is spent (a case
    is started only while the budget lasts).  ``knobs`` are the model's admin knobs
    (``deletions``, ``preferred_elections``, ...): with them the search takes the admin
    actions they allow, and the cases drive them.  A sample (``drive.targets``): with
    ``focus``, only the paths that take a pair of it not yet covered; ``first_only``, the
    first path alone."""
    say = progress or (lambda m: None)
    start = time.monotonic()
    knobs = dict(knobs or {})
    cfg = named(config, brokers=brokers, **knobs)
    say(f"generate: searching the model's states of {config} at {brokers} brokers for every (action, outcome) pair")
    try:
        cases, states, transitions = search(cfg, max_states, progress=progress)
    except KeyboardInterrupt:
        say("generate: interrupted by Ctrl-C while searching the model: no case driven")
        return GenerateReport(config, budget_s, 0, 0, [], seconds=time.monotonic() - start, interrupted=True)
    say(f"generate: {len(cases)} (action, outcome) pairs over {states} states and "
        f"{transitions} transitions of {config} at {brokers} brokers")
    report = GenerateReport(config, budget_s, states, transitions, [c.pair for c in cases],
                            focus=sorted(focus) if focus is not None else [])
    covered: set[Pair] = set()
    driven: set[tuple[Node, Step]] = set()
    for i, case in enumerate(cases):
        if time.monotonic() - start >= budget_s:
            say(f"generate: budget spent after {i} of {len(cases)} cases")
            break
        along = pairs_along(cfg, case.steps)
        if case.pair in covered and not along - covered:
            continue  # earlier cases' paths took every pair of this one already
        if (focus is not None and not along & (focus - covered)) or (first_only and report.cases):
            continue  # a sample: this path takes none of the pairs it is after
        run = ModelRun(f"{case.pair[0]}/{case.pair[1]}", [(s.action, _fixed(s)) for s in case.steps], brokers)
        say(f"case {i + 1}/{len(cases)}: {run.name} ({len(case.steps)} steps)")
        sub = None if data_dir is None else Path(data_dir) / f"case-{i + 1}"
        r: DriveReport = Driver(config, data_dir=sub, step_timeout=step_timeout, knobs=knobs).run(run)
        # the steps the implementation followed, and the pairs they took
        done = len([st for st in r.steps if st.n and st.outcome in ("followed", REPRODUCED)])
        for n, step, result in walk(cfg, case.steps[:done]):
            covered.add((step.action, result))
            driven.add((n, step))
        covered_now = len(covered)
        say(f"case {i + 1}: {r.verdict}; {covered_now} of {len(cases)} pairs covered so far")
        report.cases.append({"pair": list(case.pair), "steps": len(case.steps), "verdict": r.verdict,
                             "divergence": r.divergence, "property": r.property, "seconds": round(r.seconds, 1)})
        report.paths.append(case.steps)
        if r.verdict in (DIVERGED, REPRODUCED):
            report.exit_code = 1
        if r.verdict == INTERRUPTED:
            say(f"generate: interrupted by Ctrl-C in case {i + 1}; the report covers the cases driven so far")
            report.interrupted = True
            break
    report.covered_pairs = sorted(covered)
    report.covered_transitions = len(driven)
    report.seconds = time.monotonic() - start
    return report
