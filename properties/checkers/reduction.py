"""Partial-order reduction for the exhaustive checker: fetch bookkeeping that cannot matter is
done at once, in one order, instead of in every interleaving.

At three brokers two followers each run a fetch loop (send a request, the leader handles it,
the follower receives the answer) beside the controller's and the brokers' own steps, and
the messages in flight multiply the state space about four-fold.  Some of those steps are
*free*: they change nothing but the set of fetch messages in flight, which no property reads
(``properties`` looks at logs, high watermarks, epochs, ZooKeeper, the controller flags and
the ghost history -- never at ``State.fetches``).  ``ample`` picks, in a state where one is
enabled, a single free step and lets the search take it alone:

1. **Dropping a dead request**: ``handle_fetch`` of a request whose leader epoch is below the
   leader's current one.  Under fenced fetching (KIP-320) the leader refuses it and only
   removes it -- and since a broker's leader epoch never goes down (``epoch_monotonic``),
   it would refuse it at any later moment too.
2. **Dropping a dead response**: ``receive_fetch`` of a response whose epoch is below the
   follower's current one: fenced, now and for ever, for the same reason.
3. **Reading an answer that changes nothing**: ``receive_fetch`` of a response the follower
   accepts with no records and no new high watermark -- its only effect is the removal.
4. **Sending a fetch request at once**: ``send_fetch`` whose request would not be dead on
   arrival (the leader's epoch is not above the follower's).

Beside the ample steps, ``normal_form`` forgets messages that are garbage outright -- no step
can ever consume them with an effect, and no guard reads them -- before a state is
fingerprinted: responses to a crashed broker (``receive_fetch`` needs the follower up, and
the only way back up, ``broker_restart``, drops every fetch message of that follower) and,
with broker-epoch fencing, LeaderAndISR requests to a crashed broker (a restart registers a
broker epoch above every request's ``max_broker_epoch``, so each is refused and forgotten by
``forget_stale_requests``; ``on_broker_startup`` reads no request in flight).
A state and its normal form have the same future step for step (strong bisimilarity), and
the same visible part.

Why nothing the properties could see is lost (the classic ample-set conditions, argued for
these four kinds of step -- an argument, checked by the tests below, not a mechanised proof;
the ample steps are used only with fenced fetching, ``cfg.fenced_fetch``):

* *Invisible.*  Each ample step changes ``State.fetches`` only, so every state and transition
  property has the same verdict before and after it.
* *Persistent (nothing on a path without it can depend on it).*  For a dead message, every
  other step acts the same whether or not it is still in flight: consuming it is a no-op
  (removal), and the one guard that looks at it -- a follower sends only with nothing else
  in flight to that leader -- is only ever relieved by the removal.  For a send, the request's
  content (follower, leader, offset = LEO, epoch) cannot change while the send stays enabled:
  with fenced fetching every new LeaderAndISR restarts the fetcher (``TRUNCATING`` disables
  the send), the LEO changes only by truncation (needs ``TRUNCATING``) or by a response to a
  request in flight (which would disable it), and a restart removes the follower's requests.
  So a path on which the follower sends later is matched by one on which it sent now, with
  the same visible states; the early request can only add behaviour (the leader may handle
  it sooner), or be removed by a crash of the leader, after which the follower sends again.
  The one thing it can block is a *different* later request from the same follower to the
  same leader, which needs the follower to have taken a newer epoch and truncated against
  the leader in it -- the leader became leader in that epoch before, and in the state it
  did so the early request was dead and droppable, so step 1 had removed it at once.
* *No ignoring (the cycle proviso).*  A path of ample steps alone cannot be a cycle: no ample
  step creates a response (only ``handle_fetch`` of a live request does, and that is never
  ample) or makes a message dead (free steps change no epoch); drops and reads remove a
  response or a dead message, and a send adds a live request.  So the pair (responses plus
  dead requests, minus requests) falls strictly, lexicographically, along such a path.
  Every cycle of the reduced graph therefore passes through a fully expanded state, and no
  enabled step is postponed for ever.

With symmetry reduction the ample step is chosen on the canonical representative the search
expands, deterministically (``free_step`` says in which order), so the reduced graph over
canonical states is well defined.  Every step the reduced search takes is a step of the
model (from a state that differs from a reachable one only by garbage ``normal_form``
forgot, which no step reads), so its counterexamples replay from the initial state step by
step like any other.

*What "shortest" means with it.*  The search is still breadth-first, so a counterexample is
a shortest path of the *reduced* graph: the shortest run in which followers send each fetch
request as soon as they can and fenced messages are dropped as soon as they are dead.  It
can be a few steps longer than the shortest run of the full model (those sends and drops are
steps), and the state counts are those of the reduced graph, not of the model.

``tests/properties/test_reduction.py`` checks the claim where the full search is cheap: on the
two-broker configurations the reduced search reaches the same verdicts and exactly the same
set of visible states (each state without its messages in flight, canonicalised), and its
counterexamples replay through the model.
"""

from __future__ import annotations

from model.actions import Step
from model.config import Config
from model.registry import apply, successors
from model.state import (
    DOWN,
    FETCH_REQUEST,
    FETCH_RESPONSE,
    FETCHING,
    FOLLOWER,
    NO_LEADER,
    OK,
    Fetch,
    State,
)

FREE_ACTIONS = ("handle_fetch", "receive_fetch", "send_fetch")


def applies(cfg: Config) -> bool:
    """Whether ``ample`` reduces anything for ``cfg`` (``normal_form`` applies to every
    configuration).  Without fenced fetching an early
    request is not harmless: a follower that changes leader and comes back would have its
    stale request (with an old offset) accepted, and moving the HW on it is visible -- so the
    configurations before KIP-320 are searched in full."""
    return cfg.fenced_fetch


def _dead_request(s: State, m: Fetch) -> bool:
    return m.epoch < s.brokers[m.leader].replicas[m.partition].leader_epoch


def _dead_response(s: State, m: Fetch) -> bool:
    return m.epoch < s.brokers[m.follower].replicas[m.partition].leader_epoch


def _empty_answer(s: State, m: Fetch) -> bool:
    """The follower would accept the response (``receive_fetch``'s checks) and it changes
    nothing: no records, and the HW it sets is the one the follower has."""
    r = s.brokers[m.follower].replicas[m.partition]
    return (
        m.error == OK
        and not m.records
        and r.role == FOLLOWER
        and r.leader == m.leader
        and r.fetch_state == FETCHING
        and m.offset == r.leo
        and m.epoch == r.leader_epoch
        and min(m.hw, r.leo) == r.hw
    )


def _live_send(s: State, f: int, p: int) -> bool:
    r = s.brokers[f].replicas[p]
    return s.brokers[r.leader].replicas[p].leader_epoch <= r.leader_epoch


def _take(s: State, cfg: Config, step: Step) -> tuple[Step, State] | None:
    t = apply(s, cfg, step)
    return None if t is None or t == s else (step, t)


def free_step(s: State, cfg: Config) -> tuple[Step, State] | None:
    """The ample step of ``s``, or None if it has none and is to be fully expanded.

    Found without generating every successor (most states the reduced search expands have
    one, so this is where it saves the most time).  The choice is deterministic: the first
    dead request's drop in ``s.fetches`` order, else the first dead or empty response's
    read, else the first live send in (broker, partition) order."""
    if not cfg.fenced_fetch:
        return None
    for m in s.fetches:
        if m.kind == FETCH_REQUEST and _dead_request(s, m):
            pair = _take(s, cfg, Step("handle_fetch", (m,)))
            if pair is not None:
                return pair
    for m in s.fetches:
        if m.kind == FETCH_RESPONSE and (_dead_response(s, m) or _empty_answer(s, m)):
            pair = _take(s, cfg, Step("receive_fetch", (m,)))
            if pair is not None:
                return pair
    for f in range(cfg.brokers):
        for p in range(cfg.partitions):
            r = s.brokers[f].replicas[p]
            if r.fetch_state == FETCHING and r.leader != NO_LEADER and _live_send(s, f, p):
                pair = _take(s, cfg, Step("send_fetch", (f, p)))
                if pair is not None:
                    return pair
    return None


def ample(s: State, cfg: Config, succ: list[tuple[Step, State]]) -> list[tuple[Step, State]]:
    """The successors of ``s`` the reduced search explores: its free step alone if it has
    one (``free_step``), else all of ``succ`` -- every enabled step from ``s``
    (``model.registry.successors``)."""
    pair = free_step(s, cfg)
    return succ if pair is None else [pair]


def reduced_successors(s: State, cfg: Config) -> list[tuple[Step, State]]:
    """``ample(s, cfg, list(successors(s, cfg)))`` without computing the successors the
    reduction drops."""
    pair = free_step(s, cfg)
    return list(successors(s, cfg)) if pair is None else [pair]


def visible(s: State) -> State:
    """``s`` without its messages in flight -- what is left (ZooKeeper, the brokers, the ghost
    history) is everything a property reads.  The reduction's claim is that the reduced
    search reaches every visible state the full one does."""
    return s._replace(fetches=(), leader_and_isr=(), stop_replica=(), alter_partition=())


def normal_form(s: State, cfg: Config) -> State:
    """``s`` without the messages no step can ever act on (see the module docstring): fetch
    responses to a crashed broker and, with broker-epoch fencing, LeaderAndISR requests to
    one.  Applied before fingerprinting when the reduction is on."""
    brokers = s.brokers
    if all(br.status != DOWN for br in brokers):
        return s
    fetches = tuple(m for m in s.fetches if not (m.kind == FETCH_RESPONSE and brokers[m.follower].status == DOWN))
    if cfg.fence_broker_epoch:
        lai = tuple(m for m in s.leader_and_isr if brokers[m.to].status != DOWN)
    else:
        lai = s.leader_and_isr
    if len(fetches) == len(s.fetches) and len(lai) == len(s.leader_and_isr):
        return s
    return s._replace(fetches=fetches, leader_and_isr=lai)
