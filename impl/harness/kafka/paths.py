"""The model runs ``epochal drive --engine kafka`` makes real Kafka take, as steps of the model.

A path is a list of :class:`Step`: a model action, the model broker that takes it (``A``,
``B``, ``C``: model ids 0, 1, 2) and what the step must show -- the parameters of the trace
event the adapter (``conformance.kafka.adapter``) makes of it, broker ids in model ids.  Who
is who on Kafka is the :class:`Cast`'s: the path names the model broker that is controller,
the harness reads Kafka's controller from ZooKeeper and gives the other roles the other
brokers in id order, and the topic is created with the assignment ``A, B, C`` so Kafka elects
``A`` (its first replica) at creation.

Each step is either *controlled* -- the harness does it (:data:`OPERATIONS`: a kill -9, a
restart, a write, the relay holding or releasing a follower's Fetch or a LeaderAndIsr) -- or
*awaited*: Kafka takes it by itself (an election, a role applied, a fetch, an ISR change),
and the driver waits, bounded, for its event.  A hold or release is the harness's alone
(no model step: a held request is one the model's receiver has not taken yet) and is done
when the relay holds the request, or has passed the held ones on.

The ISR changes differ by profile (docs/kafka.md, "The two profiles"): under ``ibp-2.6`` the
leader writes them (``shrink_isr`` / ``expand_isr``), under ``3.9`` the controller does, on
the leader's AlterPartition (``alter_partition``, then the leader's ``apply_isr``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

A, B, C = 0, 1, 2
NAMES = "ABC"
HARNESS = -1
"""The trace's node of the harness's own events (faults)."""

OPERATIONS: dict[str, str] = {
    "produce": "one write to the topic with Kafka's console producer, acks=1 (the leader's append alone)",
    "broker_crash": "KafkaCluster.kill: kill -9",
    "broker_restart": "KafkaCluster.restart, once the old ZooKeeper session is gone",
    "broker_pause": "KafkaCluster.pause: SIGSTOP",
    "broker_resume": "KafkaCluster.resume: SIGCONT",
    "hold_fetch": "the relay in front of the leader holds the follower's Fetch requests",
    "release_fetch": "the relay passes the follower's held Fetch requests on, in order",
    "hold_leader_and_isr": "the relay in front of the broker holds the controller's LeaderAndIsr requests",
    "release_leader_and_isr": "the relay passes the broker's held LeaderAndIsr requests on, in order",
}
"""The steps the harness takes, and how (the rest are Kafka's own, awaited)."""

HARNESS_ONLY = frozenset({"hold_fetch", "release_fetch", "hold_leader_and_isr", "release_leader_and_isr"})
"""Operations with no model step of their own: no event is expected of them."""

RELAY_HOLDS = {"hold_fetch": ("Fetch", True), "release_fetch": ("Fetch", False),
               "hold_leader_and_isr": ("LeaderAndIsr", True), "release_leader_and_isr": ("LeaderAndIsr", False)}
"""Each relay operation: the API it holds or releases, and whether it holds."""

Actor = int | frozenset[int] | None
"""Who takes a step: a model broker, any of several (Kafka's choice), or the harness (None)."""

FAULT_ACTIONS = frozenset({"broker_crash", "broker_stop", "broker_pause", "broker_resume"})
"""Faults the harness records (``faults.jsonl``): the trace's node is the harness, ``broker`` the victim."""


BROKER_PARAMS = frozenset({"broker", "leader", "follower"})
"""Event parameters that name one broker (model id in a step, Kafka id in a trace)."""
BROKER_SETS = frozenset({"isr", "replicas"})
"""Event parameters that name a set of brokers (compared as sets)."""


@dataclass(frozen=True)
class Step:
    """One step of a path: ``action`` taken by model broker ``actor`` (None: the harness; a
    ``frozenset``: whichever of them Kafka makes take it), ``expect`` the parameters its event
    must show.  A value that is a ``frozenset`` is a choice Kafka makes (any of them);
    ``values`` lists the values of the records the event carries; ``target`` names the other broker of a harness operation (the leader a held
    fetch goes to).  ``concurrent``: Kafka takes it alongside the step before, on another
    broker, from the same cause (the replicas applying one controller's LeaderAndIsr), so
    its event may come before that step's.  ``in_flight`` (a hold): the follower fetches from
    that leader now, so the hold is done once a request is held (the one in flight before
    it answered); else the hold waits for fetches still to come, done at once.  ``breaks``:
    the property the model's run breaks at this step (the path's last)."""

    action: str
    actor: Actor
    expect: Mapping[str, Any] = field(default_factory=dict)
    target: int | None = None
    concurrent: bool = False
    in_flight: bool = True
    breaks: str | None = None

    @property
    def controlled(self) -> bool:
        return self.action in OPERATIONS

    def describe(self) -> str:
        who = "harness" if self.actor is None else _model_text("broker", self.actor)
        args = ", ".join(f"{k}={_model_text(k, v)}" for k, v in self.expect.items())
        if self.target is not None:
            args = f"to {NAMES[self.target]}" + (f", {args}" if args else "")
        return f"{self.action} {who}" + (f" ({args})" if args else "")


def _model_text(key: str, value: Any) -> str:
    if key in BROKER_PARAMS:
        return "|".join(NAMES[v] for v in sorted(value)) if isinstance(value, frozenset) else NAMES[value]
    if key in BROKER_SETS:
        return "[" + ",".join(NAMES[v] for v in value) + "]"
    return str(value)


@dataclass(frozen=True)
class Cast:
    """Model broker id -> Kafka broker id."""

    kafka: tuple[int, ...]

    @classmethod
    def of(cls, controller_role: int, controller: int, brokers: Iterable[int]) -> Cast:
        """The controller plays ``controller_role``; the other brokers the other roles, in id order."""
        others = iter(sorted(b for b in brokers if b != controller))
        return cls(tuple(controller if m == controller_role else next(others) for m in range(len(NAMES))))

    def __call__(self, model: int) -> int:
        return self.kafka[model]

    def all(self, model: int | frozenset[int]) -> set[int]:
        """The Kafka ids of one model broker or of several."""
        return {self(m) for m in (model if isinstance(model, frozenset) else (model,))}

    def model(self, kafka: int) -> int:
        return self.kafka.index(kafka)

    def text(self) -> str:
        return ", ".join(f"{NAMES[m]}={k}" for m, k in enumerate(self.kafka))


def matches(step: Step, record: Mapping[str, Any], cast: Cast) -> bool:
    """Whether the trace event ``record`` (as ``conformance.kafka.adapter.to_records`` makes
    it) is ``step`` taken on Kafka."""
    if step.action != record["kind"]:
        return False
    params = record.get("params") or {}
    if step.actor is None or step.action in FAULT_ACTIONS:
        node, victim = HARNESS, params.get("broker")
    else:
        node, victim = record["node"], record["node"]
    if node != record["node"] or (step.actor is not None and victim not in cast.all(step.actor)):
        return False
    for key, want in step.expect.items():
        got = params.get(key)
        if key == "values":  # the records' values, as (offset, epoch, value)
            if [r[2] for r in params.get("records") or ()] != list(want):
                return False
        elif key in BROKER_PARAMS:
            if got not in cast.all(want):
                return False
        elif key in BROKER_SETS:
            if got is None or set(got) != {cast(m) for m in want}:
                return False
        elif got != want:
            return False
    return True


def find(step: Step, records: list[dict[str, Any]], after: int, cast: Cast,
         taken: frozenset[int] = frozenset()) -> int | None:
    """The index of the first event past ``after`` that is ``step`` (and not an event
    already ``taken`` by another step), or None."""
    return next((i for i in range(after + 1, len(records))
                 if i not in taken and matches(step, records[i], cast)), None)


@dataclass
class Progress:
    """Where a path stands in a trace: the events its steps took, and where the next step's
    search starts -- after the last event taken, or, for a step concurrent with the one
    before, after the event that step's group started from."""

    taken: list[int] = field(default_factory=list)
    anchor: int = -1

    def start(self, step: Step) -> int:
        if not step.concurrent:
            self.anchor = max(self.taken, default=-1)
        return self.anchor

    def find(self, step: Step, records: list[dict[str, Any]], cast: Cast) -> int | None:
        return find(step, records, self.start(step), cast, frozenset(self.taken))

    def take(self, at: int) -> None:
        self.taken.append(at)


# -- the paths ------------------------------------------------------------------------------
def isr_change(leader: int, controller: Actor, isr: tuple[int, ...], profile: str, grows: bool) -> list[Step]:
    """An ISR change of ``leader``'s partition to ``isr``: the leader's own write under
    ``ibp-2.6``; under ``3.9`` the controller's write on the leader's AlterPartition, then the
    leader applying the answer (the proposal itself is silent in the model's trace)."""
    if profile == "ibp-2.6":
        return [Step("expand_isr" if grows else "shrink_isr", leader, {"isr": isr})]
    return [Step("alter_partition", controller, {"leader": leader, "isr": isr}),
            Step("apply_isr", leader, {"isr": isr})]


def creation(controller: int) -> list[Step]:
    """The topic's creation: the controller elects ``A`` (the first replica assigned), which
    leads; ``B`` and ``C`` follow."""
    return [Step("elect_leader", controller, {"leader": A, "reason": "init", "isr": (A, B, C)}),
            Step("become_leader", A, {"leader": A}), Step("become_follower", B, {"leader": A}, concurrent=True),
            Step("become_follower", C, {"leader": A}, concurrent=True)]


def leader_kill_isr(profile: str) -> list[Step]:
    """``C``'s fetches to leader ``A`` held: ``A`` writes a record ``B`` takes, takes ``C``
    out of the ISR, and the record is committed; then ``A`` dies, and controller ``B`` elects
    itself from the ISR; ``C`` follows it, takes the record and rejoins the ISR."""
    return [*creation(B),
            Step("receive_fetch", C, {"leader": A}),  # a follower that never fetched counts as lagging
            Step("hold_fetch", C, target=A),
            Step("produce", A, {"value": "v0"}),
            Step("handle_fetch", A, {"follower": B, "values": ["v0"]}),
            Step("receive_fetch", B, {"leader": A, "values": ["v0"]}),
            *isr_change(A, B, (A, B), profile, grows=False),
            Step("receive_fetch", B, {"leader": A, "leader_hw": 1}),
            Step("broker_crash", A),
            Step("elect_leader", B, {"leader": B, "isr": (B,)}),
            Step("become_leader", B, {"leader": B}),
            Step("become_follower", C, {"leader": B}, concurrent=True),
            Step("receive_fetch", C, {"leader": B, "values": ["v0"]}),
            *isr_change(B, B, (B, C), profile, grows=True)]


def controller_failover(profile: str) -> list[Step]:
    """Controller ``C`` (a follower) dies after a committed write; ``A`` or ``B`` becomes
    controller and takes ``C`` out of the ISR (a new leader epoch for leader ``A``, whose
    LeaderAndIsr to ``B`` the relay holds until ``A`` has applied its own); ``A`` writes a
    second record, ``C`` restarts, takes the controller's LeaderAndIsr, catches up and rejoins."""
    new = frozenset({A, B})
    return [*creation(C),
            Step("produce", A, {"value": "v0"}),
            Step("receive_fetch", B, {"leader": A, "leader_hw": 1}),
            Step("receive_fetch", C, {"leader": A, "leader_hw": 1}, concurrent=True),
            Step("hold_leader_and_isr", B),
            Step("broker_crash", C),
            Step("controller_elect", new, {"broker": new}),
            Step("elect_leader", new, {"leader": A, "isr": (A, B)}),
            Step("become_leader", A, {"leader": A, "isr": (A, B)}),
            Step("release_leader_and_isr", B),
            Step("become_follower", B, {"leader": A, "isr": (A, B)}),
            Step("produce", A, {"value": "v1"}),
            Step("receive_fetch", B, {"leader": A, "values": ["v1"]}),
            Step("broker_restart", C),
            Step("become_follower", C, {"leader": A}),
            Step("receive_fetch", C, {"leader": A, "values": ["v1"]}),
            *isr_change(A, new, (A, B, C), profile, grows=True)]


def unclean_loss(profile: str) -> list[Step]:
    """``C``'s fetches held, to leader ``A`` and to ``B`` after it: ``A`` writes a record
    ``B`` takes and takes ``C`` out of the ISR (committed); ``A`` dies, controller ``B`` leads;
    ``B`` dies too, ``C`` becomes controller and, unclean election on, elects itself with a
    log that lacks the committed record: the model's ``committed_durable`` breaks."""
    return [*creation(B),
            Step("receive_fetch", C, {"leader": A}),  # a follower that never fetched counts as lagging
            Step("hold_fetch", C, target=A),
            Step("produce", A, {"value": "v0"}),
            Step("receive_fetch", B, {"leader": A, "values": ["v0"]}),
            *isr_change(A, B, (A, B), profile, grows=False),
            Step("receive_fetch", B, {"leader": A, "leader_hw": 1}),
            Step("hold_fetch", C, target=B, in_flight=False),
            Step("broker_crash", A),
            Step("elect_leader", B, {"leader": B, "isr": (B,)}),
            Step("become_leader", B, {"leader": B}),
            Step("become_follower", C, {"leader": B}, concurrent=True),
            Step("broker_crash", B),
            Step("controller_elect", C, {"broker": C}),
            Step("elect_leader", C, {"leader": C, "unclean": True}, breaks="committed_durable")]


def paused_leader(profile: str) -> list[Step]:
    """Leader ``A`` frozen (SIGSTOP) after a committed write, until its ZooKeeper session
    expires: controller ``B`` elects itself from the ISR; ``A`` resumed registers again in a
    new session, takes the controller's LeaderAndIsr as a follower and rejoins the ISR."""
    return [*creation(B),
            Step("produce", A, {"value": "v0"}),
            Step("receive_fetch", B, {"leader": A, "leader_hw": 1}),
            Step("receive_fetch", C, {"leader": A, "leader_hw": 1}, concurrent=True),
            Step("broker_pause", A),
            Step("elect_leader", B, {"leader": B, "isr": (B, C)}),
            Step("become_leader", B, {"leader": B}),
            Step("become_follower", C, {"leader": B}, concurrent=True),
            Step("broker_resume", A),
            Step("broker_reregister", A),
            Step("become_follower", A, {"leader": B}),
            *isr_change(B, B, (A, B, C), profile, grows=True)]


@dataclass(frozen=True)
class KafkaPath:
    """A named path: its story, the model broker that starts as controller, its steps per
    profile; ``unclean``: the cluster elects out of the ISR (``unclean.leader.election.enable``)
    and is judged by the profile's unclean twin (``kafka26-unclean``, ``kafka39-unclean``)."""

    description: str
    controller: int
    steps: Callable[[str], list[Step]]
    unclean: bool = False


PATHS: dict[str, KafkaPath] = {
    "leader_kill_isr": KafkaPath(
        "a follower's fetches held until its leader takes it out of the ISR; the leader killed, "
        "the controller elects the follower in the ISR; the held one follows and rejoins",
        B, leader_kill_isr),
    "controller_failover": KafkaPath(
        "the controller (a follower) killed; the new controller takes it out of the ISR, its "
        "LeaderAndIsr to the other follower held until the leader applied its own; it restarts and rejoins",
        C, controller_failover),
    "paused_leader": KafkaPath(
        "the leader frozen past its session: the controller elects a follower from the ISR; "
        "resumed, the old leader registers again and follows",
        B, paused_leader),
    "unclean_loss": KafkaPath(
        "a follower held out of the ISR; the leader and then the controller, leading, killed; the "
        "held follower, controller now, elects itself uncleanly and the committed record is lost",
        B, unclean_loss, unclean=True),
}
"""The paths ``epochal drive --engine kafka --scenario NAME`` drives."""
