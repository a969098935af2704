"""The faults of a chaos run: the schedule drawn from the seed, and what each fault did.

The schedule is a pure function of its arguments -- the same seed gives the same faults, in
the same order, at the same times -- so a run is repeated by repeating its seed.  Roles
(the leader of partition p, its first follower, the controller) are named here and resolved
from ZooKeeper only when a fault fires (:mod:`impl.harness.chaos.inject`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

TOPIC = "chaos"
PARTITIONS = 3
REPLICATION = 3
MIN_INSYNC = 2
BURST = 20  # writes in the targeted scenarios' burst, sent as one produce request

FAULT_KINDS = ("kill", "kill-controller", "pause-leader", "expire-session", "partition",
               "slow-follower", "restart", "isolate-leader", "lag-then-kill-isr")
CHURN_KINDS = ("create-topic", "delete-topic", "reassign")

# ``--admin``: a second topic the workload also writes to, deleted and created again under
# the same name during the run, and the administrator's operations mixed into the schedule
# (a controlled shutdown and restart is the ``restart`` fault)
ADMIN_TOPIC = "chaos-admin"
ADMIN_PARTITIONS = 2
ADMIN_KINDS = ("preferred-election", "recreate-topic")
ADMIN_ENSURED = ("preferred-election", "recreate-topic", "restart")  # each in every --admin run

# rough seconds a fault takes beyond its hold (session expiry waits, restarts): the schedule
# spaces faults by these so that a run of D seconds holds about D seconds of faults
_OVERHEAD = {"kill": 4.0, "kill-controller": 4.0, "pause-leader": 3.0, "expire-session": 1.0,
             "partition": 0.0, "slow-follower": 0.0, "restart": 3.5, "isolate-leader": 4.5,
             "lag-then-kill-isr": 8.0, "preferred-election": 0.5, "recreate-topic": 3.0}


# -- the schedule ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Fault:
    """One scheduled fault; ``target`` names a role resolved when it fires."""

    index: int
    at: float  # seconds after the workload started, at the earliest
    kind: str
    partition: int  # the partition of TOPIC whose leader / follower is targeted
    target: str  # "broker", "leader", "follower", "controller" or "partition"
    hold: float  # seconds the fault lasts before it is healed
    broker: int = -1  # for target "broker"
    follower: int = 0  # for target "follower": which follower (0 or 1, assignment order)
    delay: float = 0.0  # slow-follower: seconds added to each of its fetches
    churn: str | None = None  # an admin operation performed while the fault holds
    churn_topic: str | None = None
    churn_partition: int = 0
    churn_replicas: tuple[int, ...] = ()

    def describe(self) -> str:
        who = {"broker": f"broker {self.broker}",
               "leader": f"the leader of {TOPIC}-{self.partition}",
               "follower": f"follower #{self.follower} of {TOPIC}-{self.partition}",
               "controller": "the controller",
               "partition": f"{TOPIC}-{self.partition}"}[self.target]
        what = {
            "kill": f"kill -9 {who}, restart after {self.hold:.1f} s",
            "kill-controller": f"kill -9 {who}, restart after {self.hold:.1f} s",
            "pause-leader": f"SIGSTOP {who} until its ZooKeeper session expires, "
                            f"SIGCONT {self.hold:.1f} s later",
            "expire-session": f"expire the ZooKeeper session of {who}, {self.hold:.1f} s",
            "partition": f"cut the link between {who} and its leader for {self.hold:.1f} s",
            "slow-follower": f"delay {who}'s fetches by {self.delay:.1f} s for {self.hold:.1f} s",
            "restart": f"controlled shutdown of {who}, restart after {self.hold:.1f} s",
            "isolate-leader": f"cut both followers of {who} off its leader, burst {BURST} writes, "
                              f"kill -9 the leader, restart after {self.hold:.1f} s",
            "lag-then-kill-isr": f"cut a follower of {who} off until it leaves the ISR, burst "
                                 f"{BURST} writes, kill -9 the rest of the ISR, restart after "
                                 f"{self.hold:.1f} s",
            "preferred-election": "preferred-replica election of every partition whose "
                                  "preferred replica is in the ISR but does not lead",
            "recreate-topic": f"delete topic {ADMIN_TOPIC} (its writes held meanwhile) and "
                              f"create it again under the same name",
        }[self.kind]
        if self.churn == "create-topic":
            what += f"; meanwhile create topic {self.churn_topic}"
        elif self.churn == "delete-topic":
            what += f"; meanwhile delete topic {self.churn_topic}"
        elif self.churn == "reassign":
            what += (f"; meanwhile reassign {TOPIC}-{self.churn_partition} to "
                     f"{list(self.churn_replicas)}")
        return f"t+{self.at:5.1f}s  {what}"


def make_schedule(seed: int, duration: float, brokers: int = 3, acks: int = -1,
                  unclean: bool = False, admin: bool = False) -> list[Fault]:
    """The faults of a run: a pure function of its arguments (same seed, same schedule).

    Faults follow one another (each is healed before the next fires) and fill ``duration``;
    a run has at least one.  With an unsafe setting (acks=1, unclean election) the run opens
    with the targeted scenario that setting cannot survive, so every seed of an unsafe run
    shows the loss; the same scenarios are in the random pool, where safe settings survive
    them.

    With ``admin`` the administrator's operations join the pool (a preferred-replica
    election, the deletion and re-creation of :data:`ADMIN_TOPIC`), and every second entry,
    until each has come once, is one of :data:`ADMIN_ENSURED` (in a seeded order): a short
    run still performs all of them.  Without it the schedule is the one it always was."""
    rng = random.Random(f"epochal-chaos/{seed}/{brokers}" + ("/admin" if admin else ""))
    pool = FAULT_KINDS + (ADMIN_KINDS if admin else ())
    ensured = rng.sample(ADMIN_ENSURED, len(ADMIN_ENSURED)) if admin else []
    kinds: list[str] = []
    if unclean:
        kinds.append("lag-then-kill-isr")
    if acks == 1:
        kinds.append("isolate-leader")
    faults: list[Fault] = []
    churn_created: list[str] = []
    churn_live: list[str] = []
    t = 1.0
    while True:
        owed = bool(ensured)  # an admin operation of ADMIN_ENSURED still to come
        if kinds:
            kind = kinds.pop(0)
        elif ensured and len(faults) % 2 == 0:
            kind = ensured.pop(0)
        else:
            kind = rng.choice(pool)
        hold = round(rng.uniform(1.0, 2.5), 1)
        p = rng.randrange(PARTITIONS)
        fields: dict[str, Any] = {}
        if kind in ("kill", "restart", "expire-session"):
            if rng.random() < 0.5:
                fields = {"target": "broker", "broker": rng.randrange(brokers)}
            else:
                fields = {"target": "leader"}
        elif kind == "kill-controller":
            fields = {"target": "controller"}
        elif kind == "pause-leader":
            fields = {"target": "leader"}
        elif kind in ("partition", "slow-follower"):
            fields = {"target": "follower", "follower": rng.randrange(REPLICATION - 1)}
            if kind == "slow-follower":
                fields["delay"] = round(rng.uniform(0.3, 2.0), 1)
        else:
            fields = {"target": "partition"}
        churn: dict[str, Any] = {}
        if rng.random() < 0.6:
            op = rng.choice(CHURN_KINDS)
            if op == "delete-topic" and not churn_live:
                op = "create-topic"
            if op == "create-topic":
                name = f"churn-{len(churn_created)}"
                churn_created.append(name)
                churn_live.append(name)
                churn = {"churn": op, "churn_topic": name}
            elif op == "delete-topic":
                churn = {"churn": op, "churn_topic": churn_live.pop(0)}
            else:
                replicas = rng.sample(range(brokers), REPLICATION)
                churn = {"churn": op, "churn_partition": rng.randrange(PARTITIONS),
                         "churn_replicas": tuple(replicas)}
        forced = len(faults) < (unclean + (acks == 1)) or owed
        if faults and not forced and t + hold + _OVERHEAD[kind] > duration:
            return faults  # the next fault would outlast the run
        faults.append(Fault(index=len(faults) + 1, at=round(t, 1), kind=kind, partition=p,
                            hold=hold, **fields, **churn))
        t += hold + _OVERHEAD[kind] + rng.uniform(0.5, 1.5)


# -- what a fault did ---------------------------------------------------------------------------

@dataclass
class FaultRecord:
    """What a scheduled fault did when it fired (brokers resolved from its roles)."""

    index: int
    kind: str
    started: float
    ended: float = 0.0
    victims: list[int] = field(default_factory=list)
    detail: str = ""
    notes: list[str] = field(default_factory=list)



def admin_assignment(brokers: int) -> dict[int, list[int]]:
    """ADMIN_TOPIC's replicas, in broker order: its preferred (first assigned) replica is
    then also the model's (the lowest broker id of the assignment), so a preferred election
    of it is judged as the model makes it."""
    return {p: sorted((p + i) % brokers for i in range(REPLICATION)) for p in range(ADMIN_PARTITIONS)}
