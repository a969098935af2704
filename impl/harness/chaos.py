"""``epochal chaos``: a seeded fault schedule against a real cluster, and a verdict on every
acknowledged write (Jepsen-style).

A run starts a :class:`~impl.harness.cluster.LocalCluster` (3-5 brokers on an embedded ZooKeeper),
creates the topic ``chaos`` (3 partitions, replication 3, ``min.insync.replicas`` 2), runs a
producer (acks=all by default; every value unique and sent exactly once -- no client
retries, so a value found twice is the system's duplicate, not the client's) and a consumer,
and plays a schedule of faults drawn from the seed:

* ``kill`` / ``kill-controller`` -- ``kill -9`` of a broker (or the leader of a partition)
  or of the controller, restarted after the hold;
* ``pause-leader`` -- SIGSTOP of a partition leader until its ZooKeeper session expires,
  then SIGCONT: the GC pause of seed 000 question 3, a zombie leader;
* ``expire-session`` -- the broker's ZooKeeper session is expired by ZooKeeper (a second
  client closes it) while the broker is frozen for a moment, then it runs on and re-registers;
* ``partition`` -- the link between a leader and one of its followers is cut both ways
  (:mod:`impl.node.faults`, the RPC transport's fault layer);
* ``slow-follower`` -- a follower's fetches to its leader are delayed;
* ``restart`` -- a controlled shutdown (SIGTERM) and a restart;
* ``isolate-leader`` -- both followers cut off from a leader, a burst of writes to it, then
  ``kill -9`` of the leader: with acks=1 the burst is acknowledged by the leader alone and
  lost; with acks=all it is never acknowledged;
* ``lag-then-kill-isr`` -- one follower cut off until it leaves the ISR, a burst committed
  by the rest of the ISR, then the whole ISR killed: with unclean leader election the
  out-of-sync follower is elected and the burst is lost; without it the partition waits.

and, during the faults, topic creation and deletion and partition reassignment.  The
schedule is a pure function of the arguments: the same seed gives the same schedule, and it
is printed first.  Roles (leader of partition p, its first follower, the controller) are
resolved from ZooKeeper when a fault fires.

At the end every fault is healed, the run waits for every ISR to be whole again, and the
verdict is: every acknowledged write is in the final log of its partition exactly once, at
the offset it was acknowledged at, in the order it was acknowledged; every replica in the
ISR holds the same log up to the high watermark; no offset the consumer read as committed
holds another value now; and the run's traces conform to the model (the Spark job of
:mod:`conformance.spark.job`).  Lost writes are labelled with their cause (an unclean election
found in the traces, an acks=1 acknowledgement by a leader that was then killed).
Exit code 0 on pass, 1 on any finding, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

TOPIC = "chaos"
PARTITIONS = 3
REPLICATION = 3
MIN_INSYNC = 2
BURST = 20  # writes in the targeted scenarios' burst, sent as one produce request

# Broker settings: failures detected in ~2 s (as the integration tests' FAST settings), so a
# short run still sees every kind of fault complete its failover.
CHAOS_SETTINGS: dict[str, Any] = {
    "zk_session_timeout_s": 2.0,
    "replica_lag_time_ms": 1500,
    "fetch_max_wait_ms": 100,
    "reassign_interval_s": 0.3,
    "controller_request_timeout_s": 2.0,
    "min_insync_replicas": MIN_INSYNC,
}

FAULT_KINDS = ("kill", "kill-controller", "pause-leader", "expire-session", "partition",
               "slow-follower", "restart", "isolate-leader", "lag-then-kill-isr")
CHURN_KINDS = ("create-topic", "delete-topic", "reassign")

# rough seconds a fault takes beyond its hold (session expiry waits, restarts): the schedule
# spaces faults by these so that a run of D seconds holds about D seconds of faults
_OVERHEAD = {"kill": 4.0, "kill-controller": 4.0, "pause-leader": 3.0, "expire-session": 1.0,
             "partition": 0.0, "slow-follower": 0.0, "restart": 3.5, "isolate-leader": 4.5,
             "lag-then-kill-isr": 8.0}


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
                  unclean: bool = False) -> list[Fault]:
    """The faults of a run: a pure function of its arguments (same seed, same schedule).

    Faults follow one another (each is healed before the next fires) and fill ``duration``;
    a run has at least one.  With an unsafe setting (acks=1, unclean election) the run opens
    with the targeted scenario that setting cannot survive, so every seed of an unsafe run
    shows the loss; the same scenarios are in the random pool, where safe settings survive
    them."""
    rng = random.Random(f"epochal-chaos/{seed}/{brokers}")
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
        kind = kinds.pop(0) if kinds else rng.choice(FAULT_KINDS)
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
        forced = len(faults) < (unclean + (acks == 1))
        if faults and not forced and t + hold + _OVERHEAD[kind] > duration:
            return faults  # the next fault would outlast the run
        faults.append(Fault(index=len(faults) + 1, at=round(t, 1), kind=kind, partition=p,
                            hold=hold, **fields, **churn))
        t += hold + _OVERHEAD[kind] + rng.uniform(0.5, 1.5)


# -- what the workload saw -------------------------------------------------------------------

@dataclass(frozen=True)
class Ack:
    """An acknowledged write: where the leader said it put it."""

    partition: int
    value: str
    offset: int
    leader_epoch: int
    leader: int
    acks: int
    stream: str  # writes of one stream were sent one after another: their order must hold
    t: float  # seconds after the workload started


@dataclass
class Ledger:
    """Every write attempted and acknowledged, and every committed record the consumer read;
    shared by the workload threads (hence the lock)."""

    attempted: int = 0
    failed: int = 0
    acked: list[Ack] = field(default_factory=list)
    consumed: dict[tuple[int, int], str] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def attempt(self, n: int = 1) -> None:
        with self.lock:
            self.attempted += n

    def fail(self, n: int = 1) -> None:
        with self.lock:
            self.failed += n

    def ack(self, acks: list[Ack]) -> None:
        with self.lock:
            self.acked.extend(acks)


@dataclass(frozen=True)
class Election:
    """A leader election recorded by a controller (``elect_leader`` trace events)."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    unclean: bool


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


# -- the verdict ---------------------------------------------------------------------------------

@dataclass
class Verdict:
    attempted: int
    acknowledged: int
    lost: int
    duplicated: int
    findings: list[str]
    causes: dict[str, int]

    @property
    def passed(self) -> bool:
        return not self.findings


LogRecords = list[tuple[int, int, str]]  # (offset, leader_epoch, value)


def explain_loss(ack: Ack, elections: list[Election], faults: list[FaultRecord]) -> str:
    """Why an acknowledged write is gone: the first matching cause, else 'unexplained'."""
    for e in elections:
        if e.topic == TOPIC and e.partition == ack.partition and e.unclean and \
                e.leader_epoch > ack.leader_epoch:
            return f"unclean election of broker {e.leader} out of the ISR (leader epoch {e.leader_epoch})"
    if ack.acks == 1:
        for f in faults:
            if ack.leader in f.victims and f.ended >= ack.t:
                verb = {"kill": "killed", "kill-controller": "killed", "isolate-leader": "killed",
                        "lag-then-kill-isr": "killed", "pause-leader": "paused past its session",
                        "expire-session": "expired from ZooKeeper",
                        "restart": "shut down"}.get(f.kind, f"hit by fault {f.index}")
                return (f"acks=1 write acknowledged by leader {ack.leader} alone before it was "
                        f"{verb} (fault {f.index} {f.kind})")
        return f"acks=1 write acknowledged by leader {ack.leader} alone, then truncated"
    return "acknowledged with acks=all and no unclean election: a replication bug"


def judge(ledger: Ledger, final: dict[int, LogRecords],
          replica_logs: dict[int, dict[int, LogRecords]], isr: dict[int, list[int]],
          elections: list[Election], faults: list[FaultRecord],
          commit_isr: dict[tuple[int, int, int], list[int]] | None = None,
          min_insync: int = MIN_INSYNC) -> Verdict:
    """The verdict on a run from what it acknowledged and what the cluster holds at the end.

    ``final`` is each partition's committed log as its leader serves it after recovery;
    ``replica_logs`` each replica's on-disk log (partition -> broker -> records);
    ``isr`` the final ISR of each partition; ``commit_isr`` the ISR with which the leader
    committed each (partition, leader epoch, offset) (:func:`read_commit_isr`)."""
    findings: list[str] = []
    thin: Counter[str] = Counter()
    for ack in ledger.acked:
        members = (commit_isr or {}).get((ack.partition, ack.leader_epoch, ack.offset))
        if ack.acks == -1 and members is not None and len(members) < min_insync:
            thin[f"{TOPIC}-{ack.partition} leader {ack.leader} (epoch {ack.leader_epoch}) "
                 f"committed with ISR {members}"] += 1
    for where_, n in sorted(thin.items()):
        findings.append(f"{n} write{'s' if n != 1 else ''} acknowledged with acks=all although "
                        f"fewer than min.insync.replicas={min_insync} replicas held "
                        f"{'them' if n != 1 else 'it'}: {where_}")
    where: dict[str, list[tuple[int, int]]] = defaultdict(list)  # value -> [(partition, offset)]
    for p, records in final.items():
        for offset, _epoch, value in records:
            where[value].append((p, offset))
    duplicated = {v: locs for v, locs in where.items() if len(locs) > 1}
    for v, locs in sorted(duplicated.items())[:10]:
        findings.append(f"value {v} is in the final logs {len(locs)} times: "
                        + ", ".join(f"{TOPIC}-{p}@{o}" for p, o in locs))
    if len(duplicated) > 10:
        findings.append(f"... and {len(duplicated) - 10} more duplicated values")

    lost_by_cause: Counter[str] = Counter()
    misplaced = 0
    for ack in ledger.acked:
        locs = [loc for loc in where.get(ack.value, []) if loc[0] == ack.partition]
        if not locs:
            lost_by_cause[explain_loss(ack, elections, faults)] += 1
        elif ack.offset not in [o for _p, o in locs]:
            misplaced += 1
            if misplaced <= 10:
                findings.append(f"value {ack.value} acknowledged at {TOPIC}-{ack.partition}@"
                                f"{ack.offset} is at offset {locs[0][1]} instead")
    for cause, n in lost_by_cause.most_common():
        findings.append(f"lost {n} acknowledged write{'s' if n != 1 else ''}: {cause}")

    streams: dict[tuple[str, int], list[int]] = defaultdict(list)
    for ack in ledger.acked:
        for p, o in where.get(ack.value, []):
            if p == ack.partition:
                streams[(ack.stream, p)].append(o)
                break
    for (stream, p), offsets in sorted(streams.items()):
        if any(b <= a for a, b in zip(offsets, offsets[1:], strict=False)):
            findings.append(f"writes of {stream} to {TOPIC}-{p} are out of acknowledgement order "
                            f"in the final log")

    twice: dict[int, list[str]] = defaultdict(list)
    for (p, o), value in sorted(ledger.consumed.items()):
        now = final.get(p, [])
        if o >= len(now) or now[o][2] != value:
            twice[p].append(f"@{o} {value} -> {now[o][2] if o < len(now) else 'gone'}")
    for p, items in sorted(twice.items()):
        unclean = [e for e in elections if e.topic == TOPIC and e.partition == p and e.unclean]
        cause = (f"after the unclean election of broker {unclean[0].leader} out of the ISR"
                 if unclean else "no unclean election: a replication bug")
        findings.append(f"{len(items)} offset{'s' if len(items) != 1 else ''} of {TOPIC}-{p} "
                        f"committed twice (read as committed by the consumer, now another "
                        f"value): {', '.join(items[:5])}{' ...' if len(items) > 5 else ''}; "
                        f"{cause}")
    for p, members in sorted(isr.items()):
        committed = final.get(p, [])
        for b in members:
            disk = replica_logs.get(p, {}).get(b)
            if disk is None:
                findings.append(f"ISR member {b} of {TOPIC}-{p} has no log on disk")
                continue
            mine = disk[:len(committed)]
            if [(e, v) for _o, e, v in mine] != [(e, v) for _o, e, v in committed]:
                first = next((i for i, (a, b2) in enumerate(zip(mine, committed, strict=False))
                              if a[1:] != b2[1:]), min(len(mine), len(committed)))
                findings.append(f"ISR member {b} of {TOPIC}-{p} differs from the committed log "
                                f"at offset {first} (holds {len(disk)} records, committed "
                                f"{len(committed)})")
    return Verdict(attempted=ledger.attempted, acknowledged=len(ledger.acked),
                   lost=sum(lost_by_cause.values()), duplicated=len(duplicated),
                   findings=findings, causes=dict(lost_by_cause))


# -- reading what the cluster left -------------------------------------------------------------

def read_disk_log(directory: Path) -> LogRecords:
    """A replica's records as its segments hold them (read-only; stops at a torn record)."""
    from impl.node.log import _parse_at

    out: LogRecords = []
    for seg in sorted(directory.glob("*.log")):
        data = seg.read_bytes()
        pos = 0
        while pos < len(data):
            parsed = _parse_at(data, pos, len(out))
            if parsed is None:
                return out
            rec, size = parsed
            out.append((rec.offset, rec.leader_epoch, rec.value.decode("utf-8", "replace")))
            pos += size
    return out


def read_commit_isr(traces: Path, topic: str = TOPIC) -> dict[tuple[int, int, int], list[int]]:
    """(partition, leader epoch, offset) -> the ISR with which its leader moved the HW past
    the offset, from the leaders' own trace events (``post.hw`` / ``post.isr``).  An acks=all
    write is acknowledged when the HW passes it: that ISR is who held it then."""
    out: dict[tuple[int, int, int], list[int]] = {}
    for f in sorted(traces.glob("broker-*.jsonl")):
        epoch: dict[int, int | None] = {}
        isr: dict[int, list[int]] = {}
        hw: dict[int, int] = {}
        for line in f.read_text().splitlines():
            restart = '"broker_restart"' in line
            if f'"{topic}"' not in line and not restart:
                continue
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("kind") == "broker_restart":  # a new incarnation leads nothing yet
                epoch.clear()
                continue
            if e.get("topic") != topic:
                continue
            p, kind = int(e["partition"]), e["kind"]
            params, post = e.get("params") or {}, e.get("post") or {}
            if kind == "become_leader":
                epoch[p], isr[p] = int(params["leader_epoch"]), list(params["isr"])
                hw[p] = int(post.get("hw", 0))
                continue
            if kind in ("become_follower", "stop_replica", "isr_update_failed"):
                epoch[p] = None
                continue
            if epoch.get(p) is None:
                continue
            if isinstance(post.get("isr"), list):
                isr[p] = list(post["isr"])
            new_hw = post.get("hw")
            if kind == "shrink_isr" and isr[p] == [e["node"]] and isinstance(post.get("leo"), int):
                # alone in the ISR, the leader's HW jumps to its LEO right after this event
                # (HW = min LEO of the ISR), whether or not a later event shows it
                new_hw = post["leo"]
            if isinstance(new_hw, int) and new_hw > hw.get(p, 0):
                for o in range(hw.get(p, 0), new_hw):
                    out[(p, int(epoch[p] or 0), o)] = isr[p]
                hw[p] = new_hw
    return out


def read_elections(traces: Path) -> list[Election]:
    out = []
    for f in sorted(traces.glob("*.jsonl")):
        for line in f.read_text().splitlines():
            if '"elect_leader"' not in line:
                continue
            try:
                e = json.loads(line)
            except ValueError:
                continue  # a torn last line of a killed broker
            if e.get("kind") == "elect_leader":
                p = e.get("params") or {}
                out.append(Election(str(e["topic"]), int(e["partition"]), int(p["leader"]),
                                    int(p["leader_epoch"]), bool(p.get("unclean"))))
    return sorted(out, key=lambda e: e.leader_epoch)


# -- the run ---------------------------------------------------------------------------------------

@dataclass
class ChaosReport:
    seed: int
    duration: float
    brokers: int
    acks: int
    unclean: bool
    schedule: list[str]
    faults: list[FaultRecord]
    verdict: Verdict
    conformance: dict[str, Any]
    recovered: bool
    data_dir: str
    seconds: float

    @property
    def passed(self) -> bool:
        """Safe (nothing lost, duplicated, moved or diverged) and the traces conform."""
        return self.verdict.passed and not self.conformance.get("problem")

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["passed"] = self.passed
        d["exit_code"] = self.exit_code
        return d


class ChaosRun:
    """One run: cluster, workload threads, the fault executor, and the final inspection."""

    def __init__(self, seed: int, duration: float, brokers: int = 3, acks: int = -1,
                 unclean: bool = False, data_dir: Path | None = None,
                 zookeeper: str | None = None, log: Callable[[str], None] = print,
                 spark: Any = None, conform: bool = True) -> None:
        self.seed, self.duration, self.n, self.acks, self.unclean = seed, duration, brokers, acks, unclean
        self.data_dir = Path(data_dir or tempfile.mkdtemp(prefix=f"epochal-chaos-{seed}-"))
        self.zookeeper = zookeeper
        self._log = log
        self.spark, self.do_conform = spark, conform
        self.schedule = make_schedule(seed, duration, brokers, acks, unclean)
        self.ledger = Ledger()
        self.records: list[FaultRecord] = []
        self.stop_workload = threading.Event()
        self.paused: set[int] = set()
        self.churn_threads: list[threading.Thread] = []
        self.read_problems: list[str] = []
        self.t0 = time.monotonic()
        self.cluster: Any = None
        self.zk: Any = None
        self.plan: Any = None

    def say(self, msg: str) -> None:
        self._log(f"[{time.monotonic() - self.t0:6.1f}s] {msg}")

    # -- cluster state from ZooKeeper ---------------------------------------------------------
    def _assignment(self, topic: str = TOPIC) -> dict[int, list[int]]:
        from impl.node import zk as zkl

        data, _ = self.zk.get(zkl.topic_path(topic))
        return {int(p): [int(b) for b in r] for p, r in zkl.decode(data)["partitions"].items()}

    def _leader_and_isr(self, p: int, topic: str = TOPIC) -> tuple[int, list[int]]:
        from impl.node import zk as zkl

        data, _ = self.zk.get(zkl.leader_and_isr_path(topic, p))
        st = zkl.LeaderAndIsr.from_json(data)
        return st.leader, list(st.isr)

    def _controller(self) -> int:
        from impl.node import zk as zkl

        deadline = time.monotonic() + 15
        while True:
            try:
                data, _ = self.zk.get(zkl.CONTROLLER)
                return int(zkl.decode(data)["brokerid"])
            except Exception:  # noqa: BLE001 - no controller for a moment: wait for the next
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def _leader(self, p: int) -> int:
        leader, _ = self._leader_and_isr(p)
        return leader if leader >= 0 else self._assignment()[p][0]

    def _followers(self, p: int) -> list[int]:
        leader = self._leader(p)
        return [b for b in self._assignment()[p] if b != leader]

    def _resolve(self, f: Fault) -> int:
        if f.target == "broker":
            return f.broker
        if f.target == "controller":
            return self._controller()
        if f.target == "follower":
            followers = self._followers(f.partition)
            return followers[f.follower % len(followers)]
        return self._leader(f.partition)

    # -- fault primitives -----------------------------------------------------------------------
    def _observe_all(self) -> None:
        """Before a SIGCONT: take every node's clock, so that the woken broker (which takes
        the harness's clock when it wakes) orders its next steps after everything recorded
        before the resume -- not only after its own last step.  (Fault events themselves
        keep the victim's clock only, as LocalCluster records them: a fault's clock above
        the reactions to it would let their successors that carry no zxid order first.)"""
        from impl.node.tracing import observe_node

        rec = self.cluster.harness()
        for b in self.cluster.configs:
            observe_node(rec, self.cluster.data_dir, b)

    def _write_plan(self) -> None:
        from impl.node.faults import write_plan

        write_plan(self.cluster.data_dir, self.plan)

    def _kill(self, b: int, rec: FaultRecord) -> None:
        self.cluster.kill(b)
        self.paused.discard(b)
        rec.victims.append(b)

    def _bring_back(self, b: int, rec: FaultRecord | None = None) -> None:
        proc = self.cluster.procs[b]
        if proc.poll() is None:
            if b in self.paused:
                self._observe_all()
                self.cluster.resume(b)
                self.paused.discard(b)
            return
        self.cluster.restart(b)
        try:
            self.cluster.wait_ready(timeout=30, brokers=[b])
        except (TimeoutError, RuntimeError) as exc:
            if rec is not None:
                rec.notes.append(f"broker {b} not ready after restart: {exc}")

    def _burst(self, p: int, leader: int, label: str) -> int:
        """One produce request of BURST new values to partition ``p``; returns how many were
        acknowledged (all or none)."""
        from impl.node.client import Producer

        values = [f"s{self.seed}-{label}-{i}" for i in range(BURST)]
        # acks=all: wait longer than replica.lag.time.max, so the ISR can shrink under the
        # waiting burst (min.insync.replicas must still refuse it then)
        producer = Producer(self.cluster.bootstrap, acks=self.acks, retries=0,
                            request_timeout_ms=1000 if self.acks == 1 else 3000, timeout=5)
        t = time.monotonic() - self.t0
        self.ledger.attempt(len(values))
        try:
            resp = producer.send_batch(TOPIC, list(values), partition=p)
        except Exception:  # noqa: BLE001 - not acknowledged, whatever the reason
            self.ledger.fail(len(values))
            return 0
        finally:
            producer.close()
        base, epoch = int(resp["base_offset"]), int(resp["leader_epoch"])
        self.ledger.ack([Ack(p, v, base + i, epoch, leader, self.acks, label, t)
                         for i, v in enumerate(values)])
        return len(values)

    def _wait_isr_without(self, p: int, b: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if b not in self._leader_and_isr(p)[1]:
                return True
            time.sleep(0.1)
        return False

    def _expire(self, b: int) -> None:
        """Freeze, expire the session through ZooKeeper, record it as the model's pause (a
        broker whose session ended while it did not run), and let it run on."""
        from impl.harness.cluster import session_end_zxid
        from impl.node.faults import expire_session

        rec = self.cluster.sigstop(b)
        self.paused.add(b)
        expire_session(self.cluster.zookeeper, self.cluster.data_dir, b)
        zxid = session_end_zxid(self.cluster.zookeeper, b, 10.0)
        rec.emit("broker_pause", zxid=zxid, params={"broker": b})

    # -- one fault ------------------------------------------------------------------------------
    def execute(self, f: Fault) -> FaultRecord:
        rec = FaultRecord(f.index, f.kind, time.monotonic() - self.t0)
        self.records.append(rec)
        healers: list[Callable[[], None]] = []
        try:
            self._inject(f, rec, healers)
            self._churn(f, rec, f.hold / 2)
            time.sleep(f.hold / 2)
        except Exception as exc:  # noqa: BLE001 - a fault that could not be injected is a note
            rec.notes.append(f"injection failed: {type(exc).__name__}: {exc}")
        finally:
            for heal in reversed(healers):
                try:
                    heal()
                except Exception as exc:  # noqa: BLE001 - the final heal tries again
                    rec.notes.append(f"heal failed: {type(exc).__name__}: {exc}")
            rec.ended = time.monotonic() - self.t0
        return rec

    def _inject(self, f: Fault, rec: FaultRecord, healers: list[Callable[[], None]]) -> None:
        if f.kind in ("kill", "kill-controller"):
            b = self._resolve(f)
            rec.detail = f"kill -9 broker {b}"
            self._kill(b, rec)
            healers.append(lambda: self._bring_back(b, rec))
        elif f.kind == "pause-leader":
            b = self._resolve(f)
            rec.detail = f"SIGSTOP broker {b} (leader of {TOPIC}-{f.partition})"
            self.paused.add(b)
            rec.victims.append(b)
            healers.append(lambda: self._bring_back(b, rec))
            self.cluster.pause(b)
        elif f.kind == "expire-session":
            b = self._resolve(f)
            rec.detail = f"expire the ZooKeeper session of broker {b}"
            rec.victims.append(b)
            healers.append(lambda: self._bring_back(b, rec))
            self._expire(b)
            self._bring_back(b, rec)  # it runs on without a session, then re-registers
        elif f.kind == "restart":
            b = self._resolve(f)
            rec.detail = f"controlled shutdown of broker {b}"
            rec.victims.append(b)
            healers.append(lambda: self._bring_back(b, rec))
            self.cluster.stop_broker(b)
        elif f.kind in ("partition", "slow-follower"):
            follower = self._resolve(f)
            leader = self._leader(f.partition)
            if f.kind == "partition":
                rec.detail = f"link {leader}<->{follower} cut"
                self.plan = self.plan.with_partition(leader, follower)

                def heal_link() -> None:
                    self.plan = self.plan.without_partition(leader, follower)
                    self._write_plan()
            else:
                rec.detail = f"link {follower}->{leader} delayed {f.delay:.1f} s"
                self.plan = self.plan.with_delay(follower, leader, f.delay)

                def heal_link() -> None:
                    self.plan = self.plan.without_delay(follower, leader)
                    self._write_plan()
            self._write_plan()
            healers.append(heal_link)
        elif f.kind == "isolate-leader":
            self._isolate_leader(f, rec, healers)
        elif f.kind == "lag-then-kill-isr":
            self._lag_then_kill_isr(f, rec, healers)
        self.say(f"fault {f.index}/{len(self.schedule)} {f.kind}: {rec.detail}")

    def _cut(self, a: int, b: int) -> Callable[[], None]:
        self.plan = self.plan.with_partition(a, b)
        self._write_plan()

        def heal() -> None:
            self.plan = self.plan.without_partition(a, b)
            self._write_plan()
        return heal

    def _isolate_leader(self, f: Fault, rec: FaultRecord, healers: list[Callable[[], None]]) -> None:
        """Followers cut off, a burst only the leader takes, the leader killed before its
        ISR shrinks: the controller elects a follower (clean: it was in the ISR)."""
        leader = self._leader(f.partition)
        cuts = [self._cut(leader, x) for x in self._followers(f.partition)]
        time.sleep(0.4)  # fetches already in flight (long polls of 100 ms) come back first
        acked = self._burst(f.partition, leader, f"f{f.index}")
        self.cluster.kill(leader)
        rec.victims.append(leader)
        for heal in cuts:
            heal()
        rec.detail = (f"followers of broker {leader} cut off, burst of {BURST} to "
                      f"{TOPIC}-{f.partition} ({acked} acknowledged), broker {leader} killed")
        healers.append(lambda: self._bring_back(leader, rec))

    def _lag_then_kill_isr(self, f: Fault, rec: FaultRecord,
                           healers: list[Callable[[], None]]) -> None:
        """One follower falls out of the ISR; the rest commits a burst and is killed; only the
        out-of-sync follower is left, electable only by an unclean election."""
        p = f.partition
        leader = self._leader(p)
        followers = self._followers(p)
        laggard, other = followers[-1], followers[0]
        heal_cut = self._cut(leader, laggard)
        left = self._wait_isr_without(p, laggard, 10.0)
        acked = self._burst(p, leader, f"f{f.index}")
        victims = [other, leader]
        for b in victims:
            self._kill(b, rec)
        heal_cut()
        rec.detail = (f"broker {laggard} cut off from leader {leader} "
                      f"({'left' if left else 'did not leave'} the ISR), burst of {BURST} to "
                      f"{TOPIC}-{p} ({acked} acknowledged), brokers {other} and {leader} killed")
        def bring_back_all() -> None:
            for b in victims:
                self._bring_back(b, rec)
        healers.append(bring_back_all)

    def _churn(self, f: Fault, rec: FaultRecord, after: float) -> None:
        """Start the fault's admin operation ``after`` seconds into it, on a thread of its
        own: during a fault it may wait long for a controller, and the fault must still be
        healed on time.  The run joins these threads before it judges."""
        time.sleep(after)
        if f.churn is not None:
            th = threading.Thread(target=self._admin_op, args=(f, rec), daemon=True,
                                  name=f"chaos-churn-{f.index}")
            th.start()
            self.churn_threads.append(th)

    def _admin_op(self, f: Fault, rec: FaultRecord, patience: float = 20.0) -> None:
        """The fault's admin operation, retried while the fault makes it impossible (a
        replica set naming a dead broker, a controller moving) -- it starts during the fault
        and may complete after the heal, as an operator's retry would."""
        from impl.node.client import Admin
        from impl.node.wire import ErrorCode, RpcError

        what = f"{f.churn} {f.churn_topic or list(f.churn_replicas)}"
        deadline = time.monotonic() + patience
        tries = 0
        while True:
            tries += 1
            try:
                with Admin(self.cluster.bootstrap, timeout=3) as admin:
                    if f.churn == "create-topic":
                        assert f.churn_topic is not None
                        admin.create_topic(f.churn_topic, partitions=2,
                                           replication_factor=REPLICATION, wait=5)
                    elif f.churn == "delete-topic":
                        assert f.churn_topic is not None
                        admin.delete_topic(f.churn_topic, wait=5)
                    else:
                        admin.reassign(TOPIC, f.churn_partition, list(f.churn_replicas), wait=0)
                rec.notes.append(f"{what}: done" + (f" (try {tries})" if tries > 1 else ""))
                return
            except Exception as exc:  # noqa: BLE001 - refused or slow during a fault
                final = isinstance(exc, RpcError) and exc.code in (
                    ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    ErrorCode.INVALID_REQUEST)
                if final or time.monotonic() > deadline or self.stop_workload.is_set():
                    rec.notes.append(f"{what}: {type(exc).__name__}: {str(exc)[:120]}"
                                     + (f" (try {tries})" if tries > 1 else ""))
                    return
                time.sleep(0.5)

    # -- the workload ---------------------------------------------------------------------------
    def _produce_loop(self) -> None:
        from impl.node.client import Producer

        producer = Producer(self.cluster.bootstrap, acks=self.acks, retries=0,
                            request_timeout_ms=2000, timeout=4)
        n = 0
        try:
            while not self.stop_workload.is_set():
                p = n % PARTITIONS
                value = f"s{self.seed}-w{n}"
                n += 1
                self.ledger.attempt()
                t = time.monotonic() - self.t0
                try:
                    info = producer.partitions(TOPIC).get(p)
                    leader = info.leader if info else -1
                    resp = producer.send(TOPIC, value, partition=p)
                except Exception:  # noqa: BLE001 - not acknowledged: never resent
                    self.ledger.fail()
                    try:
                        producer.refresh()
                    except Exception:  # noqa: BLE001 - no broker answers right now
                        pass
                    time.sleep(0.05)
                    continue
                self.ledger.ack([Ack(p, value, int(resp["base_offset"]),
                                     int(resp["leader_epoch"]), leader, self.acks, "workload", t)])
                time.sleep(0.01)  # a steady load the conformance judge can follow
        finally:
            producer.close()

    def _consume_loop(self) -> None:
        from impl.node.client import Consumer

        consumer = Consumer(self.cluster.bootstrap, timeout=3)
        try:
            while not self.stop_workload.is_set():
                try:
                    if not consumer.positions:
                        consumer.assign(TOPIC)
                    batch = consumer.poll(max_wait_ms=200)
                except Exception:  # noqa: BLE001 - the cluster is in a fault: try again
                    time.sleep(0.2)
                    continue
                with self.ledger.lock:
                    for _t, p, o, v in batch:
                        self.ledger.consumed[(p, o)] = v.decode("utf-8", "replace")
        finally:
            consumer.close()

    # -- the end ------------------------------------------------------------------------------
    def _stop_recorded(self) -> None:
        """Stop the brokers one by one, each a recorded ``broker_stop`` (controlled shutdown,
        then exit): the traces end as the model can follow them -- a broker stopped without
        the event would still hold /controller in the model when the next one is elected."""
        for b in sorted(self.cluster.procs):
            if self.cluster.procs[b].poll() is None:
                try:
                    self.cluster.stop_broker(b)
                except Exception:  # noqa: BLE001 - cluster.stop() below ends it anyway
                    pass

    def heal_all(self) -> None:
        self.plan = self.plan.healed()
        self._write_plan()
        for b in sorted(self.cluster.procs):
            self._bring_back(b)
        self.paused.clear()

    def wait_recovered(self, timeout: float) -> tuple[bool, str]:
        """Every partition of TOPIC led, its ISR the whole assignment, no reassignment
        pending, and its leader's HW at its LEO (nothing uncommitted left behind)."""
        from impl.node import zk as zkl
        from impl.node.client import Client
        from impl.node.wire import ApiKey

        deadline = time.monotonic() + timeout
        why = ""
        while time.monotonic() < deadline:
            try:
                assignment = self._assignment()
                pending = self.zk.exists(f"{zkl.REASSIGN}/{TOPIC}") and \
                    self.zk.get_children(f"{zkl.REASSIGN}/{TOPIC}")
                bad = []
                for p, replicas in sorted(assignment.items()):
                    leader, isr = self._leader_and_isr(p)
                    if leader < 0 or sorted(isr) != sorted(replicas):
                        bad.append(f"{TOPIC}-{p} leader {leader} isr {isr} replicas {replicas}")
                if pending:
                    bad.append(f"reassignment pending for partitions {sorted(pending)}")
                if not bad:
                    with Client(self.cluster.bootstrap, timeout=3) as c:
                        c.refresh()
                        for p in sorted(assignment):
                            resp = c.call(c.leader_addr(TOPIC, p), ApiKey.FETCH, {
                                "replica_id": -1, "topic": TOPIC, "partition": p,
                                "fetch_offset": 0, "max_records": 0, "max_wait_ms": 0})
                            if int(resp["hw"]) != int(resp["leo"]):
                                bad.append(f"{TOPIC}-{p} hw {resp['hw']} < leo {resp['leo']}")
                if not bad:
                    return True, ""
                why = "; ".join(bad)
            except Exception as exc:  # noqa: BLE001 - metadata not there yet
                why = f"{type(exc).__name__}: {exc}"
            time.sleep(0.3)
        return False, why

    def read_final(self) -> dict[int, LogRecords]:
        """Each partition's committed log, read from its leader up to the HW."""
        from impl.node.client import Client
        from impl.node.wire import ApiKey

        out: dict[int, LogRecords] = {}
        with Client(self.cluster.bootstrap, timeout=5) as c:
            for p in range(PARTITIONS):
                records: LogRecords = []
                hw = None
                try:
                    c.refresh()
                    while hw is None or len(records) < hw:
                        resp = c.call(c.leader_addr(TOPIC, p), ApiKey.FETCH, {
                            "replica_id": -1, "topic": TOPIC, "partition": p,
                            "fetch_offset": len(records), "max_records": 5000, "max_wait_ms": 0})
                        hw = int(resp["hw"])
                        got = [(int(o), int(e), bytes(v).decode("utf-8", "replace"))
                               for o, e, v in resp["records"]]
                        if not got:
                            break
                        records.extend(got)
                except Exception as exc:  # noqa: BLE001 - no leader serving: judged as read
                    self.read_problems.append(f"could not read the final log of {TOPIC}-{p} "
                                              f"past offset {len(records)}: {exc}")
                out[p] = records
        return out

    def run(self) -> ChaosReport:
        from impl.harness.cluster import LocalCluster
        from impl.node.faults import FaultPlan

        self.t0 = time.monotonic()
        settings = dict(CHAOS_SETTINGS, unclean_leader_election=self.unclean)
        self.cluster = LocalCluster(self.data_dir, brokers=self.n, zookeeper=self.zookeeper,
                                    run_id=f"chaos-{self.seed}-{int(time.time())}", **settings)
        self.cluster.start()
        threads: list[threading.Thread] = []
        recovered, why = False, "not reached"
        final: dict[int, LogRecords] = {}
        isr: dict[int, list[int]] = {}
        try:
            self.zk = self.cluster.zk_client(session_timeout=10)
            self.plan = FaultPlan({b: self.cluster.endpoint(b) for b in self.cluster.configs})
            self._write_plan()
            from impl.node.client import Admin

            with Admin(self.cluster.bootstrap) as admin:
                admin.create_topic(TOPIC, partitions=PARTITIONS, replication_factor=REPLICATION,
                                   wait=30)
            self.say(f"cluster of {self.n} brokers up, topic {TOPIC} created "
                     f"(data in {self.data_dir})")
            threads = [threading.Thread(target=self._produce_loop, daemon=True, name="chaos-producer"),
                       threading.Thread(target=self._consume_loop, daemon=True, name="chaos-consumer")]
            for th in threads:
                th.start()
            start = time.monotonic()
            for f in self.schedule:
                wait = start + f.at - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                rec = self.execute(f)
                notes = f" ({'; '.join(rec.notes)})" if rec.notes else ""
                with self.ledger.lock:
                    counts = f"{self.ledger.attempted} writes, {len(self.ledger.acked)} acknowledged"
                self.say(f"fault {f.index} healed after {rec.ended - rec.started:.1f} s; "
                         f"{counts}{notes}")
            rest = start + self.duration - time.monotonic()
            if rest > 0:
                time.sleep(rest)
            self.stop_workload.set()
            for th in threads:
                th.join(15)
            self.say("workload stopped; healing every fault")
            self.heal_all()
            for th in self.churn_threads:
                th.join(30)
            recovered, why = self.wait_recovered(60)
            self.say("every ISR whole again" if recovered else f"NOT recovered: {why}")
            final = self.read_final()
            isr = {p: self._leader_and_isr(p)[1] for p in final}
        finally:
            self.stop_workload.set()
            if self.zk is not None:
                self.zk.stop()
                self.zk.close()
            self._stop_recorded()
            self.cluster.stop()
        replica_logs: dict[int, dict[int, LogRecords]] = defaultdict(dict)
        for b in self.cluster.configs:
            for p in final:
                d = self.cluster.configs[b].log_dir / f"{TOPIC}-{p}"
                if d.is_dir():
                    replica_logs[p][b] = read_disk_log(d)
        elections = read_elections(self.data_dir / "traces")
        verdict = judge(self.ledger, final, replica_logs, isr, elections, self.records,
                        read_commit_isr(self.data_dir / "traces"))
        if not recovered:
            verdict.findings.append(f"the cluster did not recover within 60 s: {why}")
        verdict.findings.extend(self.read_problems)
        conformance = self.conform() if self.do_conform else {"skipped": True}
        return ChaosReport(self.seed, self.duration, self.n, self.acks, self.unclean,
                           [f.describe() for f in self.schedule], self.records, verdict,
                           conformance, recovered, str(self.data_dir),
                           round(time.monotonic() - self.t0, 1))

    def conform(self) -> dict[str, Any]:
        """Judge the run's traces against the model (``unclean`` config when it is on)."""
        from conformance.spark.job import conform, render

        config = "unclean" if self.unclean else "kip320"
        self.say(f"judging the traces against the model (config {config}) with Spark ...")
        try:
            outcome = conform([str(self.data_dir / "traces")], out=str(self.data_dir / "verdicts"),
                              spark=self.spark, config=config, log=lambda m: None)
        except Exception as exc:  # noqa: BLE001 - no Spark / Java: the run cannot be judged
            return {"problem": f"conformance could not run: {type(exc).__name__}: {exc}"}
        result: dict[str, Any] = {"config": config, "groups": outcome.groups,
                                  "conforming": outcome.conforming, "violating": outcome.violating,
                                  "errors": outcome.errors, "exit_code": outcome.exit_code}
        if outcome.exit_code != 0 or outcome.conforming != outcome.groups or not outcome.groups:
            result["problem"] = (f"traces do not conform to the model ({config}): "
                                 f"{outcome.conforming} of {outcome.groups} groups conform")
            result["render"] = render(outcome, max_rows=10)
        return result


# -- the command ---------------------------------------------------------------------------------

def render_report(r: ChaosReport) -> str:
    v = r.verdict
    faults = len(r.faults)
    lines = [f"writes: {v.attempted} attempted, {v.acknowledged} acknowledged, {v.lost} lost, "
             f"{v.duplicated} duplicated; {faults} faults injected"]
    c = r.conformance
    if c.get("skipped"):
        lines.append("conformance: not judged")
    elif "groups" in c:
        lines.append(f"conformance ({c['config']}): {c['conforming']} of {c['groups']} "
                     f"trace groups conform")
        if c.get("render"):
            lines.append(c["render"])
    for finding in v.findings + ([c["problem"]] if c.get("problem") else []):
        lines.append(f"  - {finding}")
    lines.append(f"VERDICT: {'PASS' if r.passed else 'FAIL'} (seed {r.seed}, {r.seconds:.0f} s, "
                 f"data in {r.data_dir})")
    return "\n".join(lines)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("chaos", help="seeded faults against a real cluster; judge every "
                                     "acknowledged write and the traces")
    p.add_argument("--seed", type=int, required=True, help="the schedule's seed (same seed, same schedule)")
    p.add_argument("--duration", type=float, required=True, metavar="SECONDS",
                   help="seconds of workload and faults (the run adds start, heal and judging)")
    p.add_argument("--brokers", type=int, default=3, help="3 to 5 (default 3)")
    p.add_argument("--unclean", action="store_true", help="enable unclean leader election (unsafe)")
    p.add_argument("--acks", default="all", help="all (default) or 1 (unsafe)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="the run's directory (cluster data, traces, verdicts); default a new temp dir")
    p.add_argument("--json", action="store_true", help="print the report as JSON (progress on stderr)")
    p.set_defaults(func=_command)


def _command(args: argparse.Namespace) -> int:
    from impl.cli.main import UsageError

    if not 3 <= args.brokers <= 5:
        raise UsageError(f"--brokers must be 3 to 5, got {args.brokers}")
    if not 0 < args.duration <= 3600:  # also refuses nan
        raise UsageError(f"--duration must be in (0, 3600] seconds, got {args.duration:g}")
    if args.acks not in ("all", "-1", "1"):
        raise UsageError(f"--acks must be all or 1, got {args.acks!r}")
    acks = 1 if args.acks == "1" else -1
    out = Path(args.out) if args.out else None
    if out is not None:
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise UsageError(f"--out {out} must be a new or empty directory")
        try:
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create --out {out}: {exc}") from None
    stream = sys.stderr if args.json else sys.stdout

    def log(msg: str) -> None:
        print(msg, file=stream, flush=True)

    run = ChaosRun(args.seed, args.duration, args.brokers, acks, args.unclean, out, log=log)
    log(f"epochal chaos: seed {args.seed}, {args.duration:g} s, {args.brokers} brokers, "
        f"acks={'1' if acks == 1 else 'all'}, unclean election {'on' if args.unclean else 'off'}, "
        f"min.insync.replicas={MIN_INSYNC}")
    log(f"schedule ({len(run.schedule)} faults):")
    for f in run.schedule:
        log(f"  {f.index:2d}  {f.describe()}")
    try:
        report = run.run()
    except (OSError, TimeoutError, RuntimeError) as exc:
        if out is None:
            shutil.rmtree(run.data_dir, ignore_errors=True)
        raise UsageError(f"could not run the cluster: {exc}") from None
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, default=str))
    else:
        log(render_report(report))
    return report.exit_code
