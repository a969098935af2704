"""A real Kafka run's logs as an Epochal trace (traces/SCHEMA.md).

``adapt(run_dir)`` reads what ``impl.harness.kafka`` leaves in a run's directory -- each
broker's ``logs/`` (state-change, controller, partition, request and server logs),
``faults.jsonl`` and the values the workload wrote (``produced.jsonl``) -- and returns the
run's events, one stream per broker plus the harness's faults; ``write_trace`` lays them out
as the project's recordings are (``<out>/broker-N.jsonl``, ``<out>/harness.jsonl``).

What Kafka logs is not what Epochal's brokers record, so each event is *observed* in one
named way (``OBSERVED``), and what no log shows is derived in one named way too:

* the order: every line carries Kafka's wall-clock time (one machine, one clock); events are
  ordered by it (a controller's write before the receipts of the same millisecond), where
  it inverts cause and effect by what caused them (a produce before the fetch answer the
  relay saw carry its record, ``conformance.kafka.ordering``; a leader's ``apply_isr`` after
  the controller's write; a fetch read before its answer), the
  Lamport clock of each event is its rank, and the zxid of each ZooKeeper write its rank
  among the writes -- real zxids are logged only for registrations (their ``broker_epoch``);
* the logs' contents: each replica's log is replayed from the produce responses (offset) and
  the values written in order, the leader epoch of the append being the leader's own -- or,
  when the workload says where each value landed (a chaos run: ``produced.jsonl`` entries
  with an ``offset``, each produce request one record), the value placed at that offset
  (``Placed``); an answer at an offset the leader's log already has is an idempotent
  producer's retry answered as a duplicate, no append;
* a follower's ``receive_fetch``: no Kafka log shows a follower appending, so it is taken
  right after the leader's ``handle_fetch`` whose response it is, with the records and the
  high watermark that response carried (the follower's HW is min(leader HW, its LEO), as
  Kafka's ``ReplicaFetcherThread.processPartitionData`` sets it);
* fetches that change nothing and carry nothing are left out: the judge supplies them as
  silent internal steps (SCHEMA.md section 9).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.kafka.checkpoints import CheckpointLines
from conformance.kafka.fetchers import FetcherLines
from conformance.kafka.ordering import (
    answers_after_appends,
    answers_after_hw,
    appends_first,
    fetching_replica,
    lookups_at_answers,
    next_fetches,
    reads_after_answers,
    stopped_while_polling,
)
from conformance.kafka.patterns import Line, ints, parse_file, topic_partition
from conformance.kafka.placed import Placed
from conformance.kafka.reassignment import (
    ReassignmentLines,
    Reassignments,
    expansions_before_caught_up,
)
from conformance.kafka.triggers import Trigger
from conformance.kafka.unlogged import UnloggedReceipts
from conformance.kafka.watermarks import (
    REPLICA_LAG,
    hw_after_make_leader,
    hw_as_read,
    note_read,
    replica_lag,
    waits_for,
)
from traces import SCHEMA_ID, events
from traces.events import Event

HARNESS = -1
FAULTS = {"kill": "broker_crash", "pause": "broker_pause", "resume": "broker_resume", "stop": "broker_stop"}
FENCED_LEADER_EPOCH = 74
FETCH_ERRORS = {0: None, 1: "OFFSET_OUT_OF_RANGE", FENCED_LEADER_EPOCH: "FENCED_LEADER_EPOCH"}
NOT_LEADING_YET = frozenset({3, 6, 75, 100})
"""UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_ID: a fetch
the broker read before it applied the LeaderAndIsr making it leader (the follower applied its
own first, and asks in an epoch the leader does not know yet).  It is no step of the leader's
partition, neither as it is read nor as it is answered: the follower fetches again, as the
model's does silently."""
LOG_FILES = ("server.log", "controller.log", "state-change.log", "partition.log", "kafka-request.log")

OBSERVED = {
    "broker_restart": "server.log: Registered broker N at path /brokers/ids/N ... czxid (broker epoch)",
    "broker_reregister": "server.log: the same line, of a process paused (faults.jsonl) since it started: its "
                         "session expired and it registers again",
    "controller_elect": "controller.log: N successfully elected as the controller. Epoch incremented to E",
    "elect_leader": "state-change.log, the controller: Changed partition T-P from X to OnlinePartition; "
                    "Partition T-P state changed to (Leader:L,...) after removing replica R from the ISR "
                    "(one write per dead replica, judged as elect_leader's offline R); "
                    "its reason from controller.log's line before it: Starting replica leader election (PREFERRED) "
                    "for partitions ... (preferred), Shutting down broker B (controlled_shutdown); Target replicas ... "
                    "have all caught up ... for reassigning partition T-P, then that write or Sent LeaderAndIsr "
                    "request ... for partition being reassigned T-P (reassign)",
    "reassignment": "controller.log: Successfully updated assignment of partition T-P to ReplicaAssignment(...) "
                    "naming a new target (IN_PROGRESS) or the target alone (DONE); conformance.kafka.reassignment",
    "stop_replica": "state-change.log, a replica a reassignment removed: Received StopReplica request "
                    "StopReplicaPartitionState(..., deletePartition=true)",
    "become_leader": "state-change.log, the broker: the Received LeaderAndIsr before Leader T-P ... starts at",
    "become_follower": "state-change.log, the broker: the Received LeaderAndIsr before Follower T-P starts at; "
                       "placed at server.log's Removed fetcher for partitions ... (T-P) of the same thread",
    "truncate": "server.log, the fetcher: Truncating partition T-P ... due to leader epoch and offset; placed at "
                "the relay's OffsetForLeaderEpoch answer to it",
    "shrink_isr": "partition.log, the leader (IBP 2.6, a request handler): ISR updated to ... and version updated "
                  "to V (one fewer)",
    "expand_isr": "partition.log, the leader (IBP 2.6, a request handler): ISR updated to ... and version updated "
                  "to V (one more)",
    "alter_partition": "kafka-request.log, the controller (IBP 2.7 on): ALTER_PARTITION, its request (leader, "
                       "leader epoch, proposed ISR) and answer (ISR, partition epoch, error)",
    "apply_isr": "partition.log, the leader (IBP 2.7 on, the AlterPartition channel's thread): ISR updated to ... "
                 "and version updated to V",
    "produce": "kafka-request.log, the leader: PRODUCE response's baseOffset; the value, the next written",
    "handle_fetch": "kafka-request.log, the leader: FETCH from replicaId F that moved its offset or carried news",
    "receive_fetch": "derived: right after the handle_fetch whose response it is; with that handle_fetch (and the "
                     "produce) before a kill, from the next epoch's from offset N (conformance.kafka.unlogged)",
    "broker_crash": "faults.jsonl: kill", "broker_stop": "faults.jsonl: stop",
    "broker_pause": "faults.jsonl: pause", "broker_resume": "faults.jsonl: resume",
}


ALTER_ERRORS = {0: None, 74: "FENCED_LEADER_EPOCH", 108: "INVALID_UPDATE_VERSION", 77: "STALE_BROKER_EPOCH",
                107: "INELIGIBLE_REPLICA", 100: "UNKNOWN_TOPIC_ID", 6: "NOT_LEADER_OR_FOLLOWER"}
"""An AlterPartition answer's error codes, by the names the model's answers use."""

ALTER_CHANNEL = "alter-partition-channel"
"""In the thread name of a leader's AlterPartition channel: its partition.log lines there are the
controller's answers applied, not ZooKeeper writes of its own."""

CONFIGS = {"ibp-2.6": "kafka26", "3.9": "kafka39"}
"""The model configuration that judges each profile's runs (``model.config``)."""

_IBP = re.compile(r"inter\.broker\.protocol\.version = (?P<major>\d+)\.(?P<minor>\d+)")


def model_config(run_dir: str | Path) -> str:
    """The configuration to judge a run with: ``kafka39`` when its brokers ran at inter-broker
    protocol 2.7 or later (the leader proposes ISR changes by AlterPartition), ``kafka26``
    otherwise -- as each broker's server.log states its configuration at start (a log without
    it, as the trimmed fixtures of earlier runs: ``kafka26``)."""
    for path in sorted(Path(run_dir).glob("broker-*/logs/server.log")):
        with open(path, encoding="utf-8", errors="replace") as f:
            for text in f:
                m = _IBP.search(text)
                if m is not None:
                    return CONFIGS["3.9" if (int(m["major"]), int(m["minor"])) >= (2, 7) else "ibp-2.6"]
    return CONFIGS["ibp-2.6"]


APPENDED_ERRORS = frozenset({0, 7, 20})
"""A produce answered with no error, REQUEST_TIMED_OUT or NOT_ENOUGH_REPLICAS_AFTER_APPEND: the
leader appended its record (acks=all: the timeout or the ISR shrink came while it waited for
its followers; the answer keeps the append's baseOffset)."""


def appended(answer: dict[str, Any]) -> bool:
    """Whether a produce's answer of one partition says the leader appended its records."""
    return answer["errorCode"] in APPENDED_ERRORS and answer["baseOffset"] >= 0


def outside_isr(leader: int, isr: list[int] | None) -> bool:
    """Whether an election was unclean: Kafka does not log it as such (the controller's line
    reads as a clean one's), so it is inferred from ZooKeeper's partition state -- a leader
    elected who was not in the ISR last written (``isr``; None: none written yet)."""
    return leader >= 0 and isr is not None and leader not in isr


class AdapterError(ValueError):
    """A run directory the adapter cannot read (one line)."""


@dataclass
class _Replica:
    """What the adapter knows of one broker's replica of one partition."""

    log: list[list[Any]] = field(default_factory=list)  # [offset, epoch, value]
    hw: int = 0
    leader: int = -1
    leader_epoch: int = -1
    isr: list[int] = field(default_factory=list)
    zk_version: int = -1
    received: dict[str, Any] | None = None  # the last LeaderAndIsr partition state received
    fetch_offset: dict[int, int] = field(default_factory=dict)  # leader: each follower's, in its session
    read_answer: dict[int, Any] = field(default_factory=dict)  # leader: the answer made as a fetch was read
    read_when: dict[int, float] = field(default_factory=dict)  # leader: when that fetch was read
    appended_at: dict[int, float] = field(default_factory=dict)  # leader: offset -> when its record was appended
    caught_up_at: dict[int, float] = field(default_factory=dict)  # leader: watermarks.note_read
    last_read: dict[int, tuple[float, int]] = field(default_factory=dict)  # leader: watermarks.note_read
    became_at: float = float("-inf")  # when it applied its leader epoch (a LeaderAndIsr)
    became_hw: int | None = None  # a new leader's HW as it took the epoch (it knows no follower's offset yet)

    def log_end_epoch(self) -> int | None:
        return self.log[-1][1] if self.log else None


@dataclass
class _Out:
    """The adapted events, (ts, priority, node, Event) each, before clocks are given."""

    events: list[tuple[float, int, int, Event]] = field(default_factory=list)
    dropped: set[int] = field(default_factory=set)  # indices of events found not to have happened

    def add(self, ts: float, node: int, event: Event, priority: int = 1) -> None:
        self.events.append((ts, priority, node, event))


def _lines(run_dir: Path) -> Iterator[tuple[int, int, Line]]:
    """(broker, position, line) of every recognised line of every broker's logs."""
    for broker_dir in sorted(run_dir.glob("broker-*")):
        broker = int(broker_dir.name.removeprefix("broker-"))
        position = 0
        for name in LOG_FILES:
            path = broker_dir / "logs" / name
            if not path.exists():
                continue
            with open(path, encoding="utf-8", errors="replace") as f:
                for line in parse_file(iter(f)):
                    for step in steps(line):
                        position += 1
                        yield broker, position, step


def steps(line: Line) -> list[Line]:
    """The steps a line reports, each at the time it was taken.  The request log writes a
    request when its response is sent.  A produce with acks=all appended its record a
    remote wait earlier (the followers' fetches of it come in between).  A follower's fetch
    that moves its offset is two steps: the leader takes the new offset (and moves its HW)
    as it reads the request -- its answer then, with nothing new, is never sent -- and
    answers up to replica.fetch.wait.max.ms later with what it has then, as a fetch round
    trip at the same offset would."""
    if line.name != "request":
        return [line]
    req = line.fields["request"]
    api = req["requestHeader"]["requestApiKeyName"]
    started = line.ts - (req["totalTimeMs"] - req["requestQueueTimeMs"]) / 1000
    if api == "PRODUCE":
        return [line._replace(ts=started)]
    answered = line._replace(ts=line.ts - (req["responseQueueTimeMs"] + req["sendTimeMs"]) / 1000)
    if api != "FETCH" or not req["request"].get("topics"):
        return [answered]
    # never after its own answer: a fetch answered at once (no remote wait) has both times
    # rebuilt from the same durations, and their rounding may put the read a hair later
    read = line._replace(ts=min(started + req["localTimeMs"] / 1000, answered.ts), fields={**line.fields, "read": True})
    return [read, answered]


def _carries_records(req: dict[str, Any]) -> bool:
    return any(pd.get("recordsSizeInBytes", 0) > 0 for t in req["response"].get("responses", ())
               for pd in t.get("partitions", ()))


def _faults(run_dir: Path) -> list[tuple[float, str, int]]:
    path = run_dir / "faults.jsonl"
    faults = []
    for text in path.read_text().splitlines() if path.exists() else ():
        f = json.loads(text)
        if f["fault"] in FAULTS:
            faults.append((float(f["time"]), FAULTS[f["fault"]], int(f["broker"])))
    return faults


def _down(run_dir: Path, begins: tuple[str, ...] = ("kill", "stop"), ends: str = "start") -> dict[int, list[tuple[float, float]]]:
    """Per broker, the intervals its process was gone: from a kill or stop to its next start
    (or forever); with ``begins=("pause",), ends="resume"``, the intervals it was paused."""
    path = run_dir / "faults.jsonl"
    down: dict[int, list[tuple[float, float]]] = {}
    for text in path.read_text().splitlines() if path.exists() else ():
        f = json.loads(text)
        spans = down.setdefault(int(f["broker"]), [])
        if f["fault"] in begins:
            spans.append((float(f["time"]), float("inf")))
        elif f["fault"] == ends and spans and spans[-1][1] == float("inf"):
            spans[-1] = (spans[-1][0], float(f["time"]))
    return down


def _values(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "produced.jsonl"
    return [json.loads(t) for t in path.read_text().splitlines()] if path.exists() else []


class _Adapter(ReassignmentLines, FetcherLines, UnloggedReceipts, CheckpointLines):
    def __init__(self, values: list[dict[str, Any]], down: dict[int, list[tuple[float, float]]] | None = None) -> None:
        self.values = [str(v["value"]) for v in values]
        self.placed = Placed(values) if values and all("offset" in v for v in values) else None
        self.down = down or {}
        self.paused: dict[int, list[tuple[float, float]]] = {}  # per broker, its SIGSTOP to SIGCONT
        self.lag = REPLICA_LAG  # replica.lag.time.max.ms, seconds (watermarks.replica_lag)
        self.produced = 0
        self.replicas: dict[tuple[str, int, int], _Replica] = {}
        self.assigned: dict[tuple[str, int], list[int]] = {}
        self.out = _Out()
        self.known_isr: dict[tuple[str, int], list[int]] = {}  # the controller's, per partition
        self.known_version: dict[tuple[str, int], int] = {}  # the znode's last version written
        self.topic_names: dict[str, str] = {}  # topic id -> name
        self.next_fetch: dict[tuple[int, str, int], int] = {}  # note_next_fetches
        self.read_at: dict[int, float] = {}  # id of a replica Fetch request -> when it was read
        # (topic, partition, leader) -> an ISR expansion waiting for the fetch read that made it
        self.expansions: dict[tuple[str, int, int], tuple[float, int, list[int], int]] = {}
        # (topic, partition, leader) -> an apply_isr waiting for the controller's write it applies
        self.applies: dict[tuple[str, int, int], tuple[float, list[int], int]] = {}
        # controller -> why its event thread writes partition states now (``election_trigger``)
        self.trigger: dict[int, Trigger] = {}
        self.moves = Reassignments()  # conformance.kafka.reassignment
        self.following: dict[tuple[int, str], tuple[int, tuple[str, int]]] = {}  # conformance.kafka.fetchers
        self.derived: dict[float, int] = {}  # conformance.kafka.unlogged
        self.restarted: dict[int, int] = {}  # conformance.kafka.checkpoints

    def replica(self, topic: str, partition: int, broker: int) -> _Replica:
        return self.replicas.setdefault((topic, partition, broker), _Replica())

    def on_line(self, broker: int, line: Line) -> None:
        if line.name in ("isr_updated", "fetcher_removed"):
            self._isr_updated(broker, line.ts, line.fields, line.thread) if line.name == "isr_updated" \
                else self.fetcher_removed(broker, line)
            return
        getattr(self, "_" + line.name)(broker, line.ts, line.fields)
        if line.name == "became_follower":
            self.note_follow(broker, line)

    # -- registrations and the controller ---------------------------------------------------
    def _registered(self, broker: int, ts: float, f: dict[str, Any]) -> None:
        resumed = self._resumed_since_start(broker, ts)
        make = events.broker_reregister if resumed else events.broker_restart
        self.out.add(ts, broker, make(zxid=0, broker_epoch=int(f["czxid"]), broker=broker), 0)
        self.note_registration(broker, not resumed)

    def _resumed_since_start(self, broker: int, ts: float) -> bool:
        """Whether a registration at ``ts`` is the same process's after its ZooKeeper session
        expired: it was paused (SIGSTOP, longer than the session timeout) since its process
        last started, and not killed or stopped -- Kafka's ``KafkaZkClient`` re-creates
        ``/brokers/ids/N`` in a new session (the model's ``broker_reregister``), where a
        started process registers for the first time (``broker_restart``)."""
        started = max((end for start, end in self.down.get(broker, ()) if end <= ts), default=float("-inf"))
        if any(start <= ts for start, _ in self.down.get(broker, ()) if start > started):
            return False  # gone since: the registration is a new process's
        return any(started < start <= ts for start, _ in self.paused.get(broker, ()))

    def _controller_elected(self, broker: int, ts: float, f: dict[str, Any]) -> None:
        self.out.add(ts, broker, events.controller_elect(zxid=0, controller_epoch=int(f["epoch"]), broker=broker), 0)

    def _elect(self, controller: int, ts: float, tp: str, leader: int, epoch: int, isr: list[int],
               version: int, cepoch: int, reason: str) -> None:
        topic, p = topic_partition(tp)
        self.out.add(ts, controller, events.elect_leader(
            topic=topic, partition=p, zxid=0, leader=leader, leader_epoch=epoch, isr=isr, zk_version=version,
            controller_epoch=cepoch, reason=reason, unclean=outside_isr(leader, self.known_isr.get((topic, p))),
            replicas=self.assigned.get((topic, p), [])), 0)
        self.known_isr[(topic, p)] = isr
        self.known_version[(topic, p)] = version

    def _election_trigger(self, broker: int, ts: float, f: dict[str, Any]) -> None:
        self.trigger[int(f["controller"])] = Trigger.of(f)

    def _leader_elected(self, broker: int, ts: float, f: dict[str, Any]) -> None:
        reason = "init" if f["from"] == "New" else "leader_failed"
        if f["from"] == "Online":  # a live leader replaced: only an admin's or a shutdown's election does so
            reason = self.trigger.get(int(f["controller"]), Trigger()).reason(f["tp"], None) or reason
            if self.moves.completes(topic_partition(f["tp"])):
                reason = "reassign"  # the leader removed from the assignment: the move's completion
        self._elect(broker, ts, f["tp"], int(f["leader"]), int(f["epoch"]), f["isr"], int(f["version"]),
                    int(f["cepoch"]), reason)

    def _replica_offline(self, broker: int, ts: float, f: dict[str, Any]) -> None:
        if int(f["version"]) <= self.known_version.get(topic_partition(f["tp"]), -1):
            return  # the election before it already left the replica out: Kafka wrote nothing
        trigger = self.trigger.get(int(f["controller"]), Trigger())
        self._elect(broker, ts, f["tp"], int(f["leader"]), int(f["epoch"]), ints(f["isr"]), int(f["version"]),
                    int(f["cepoch"]), trigger.reason(f["tp"], int(f["replica"])) or "broker_change")

    # -- a broker applying LeaderAndIsr -----------------------------------------------------
    def _leader_and_isr_received(self, broker: int, ts: float, f: dict[str, Any]) -> None:
        r = self.replica(f["topic"], int(f["partition"]), broker)
        r.received = {"leader": int(f["leader"]), "leader_epoch": int(f["epoch"]), "isr": ints(f["isr"]),
                      "zk_version": int(f["version"]), "controller_epoch": int(f["cepoch"])}

    def _became(self, broker: int, ts: float, f: dict[str, Any], role: str) -> None:
        topic, p = topic_partition(f["tp"])
        r = self.replica(topic, p, broker)
        if r.received is None or r.received["leader_epoch"] != int(f["epoch"]):
            raise AdapterError(f"broker {broker} applied {f['tp']} at leader epoch {f['epoch']} with no "
                               f"LeaderAndIsr of that epoch logged before it")
        kept = dict(r.fetch_offset) if role == "leader" and r.leader == broker else {}
        leo = int(f["leo"])
        self.receipts_before_kill(broker, ts, topic, p, leo)  # records a killed leader's unlogged answers carried
        self.receipts_cut_by_kill(broker, ts, topic, p, leo)  # answers a killed follower never took in
        del r.log[leo:]
        r.hw, r.leader, r.leader_epoch = int(f["hw"]), r.received["leader"], r.received["leader_epoch"]
        r.isr, r.zk_version = list(r.received["isr"]), r.received["zk_version"]
        r.fetch_offset.clear()
        if not kept:  # a new leader counts no follower outside its ISR caught up (resetReplicaState)
            r.caught_up_at.clear()
            r.last_read.clear()
        r.became_at = ts
        if kept:
            r.hw = hw_after_make_leader(r.hw, len(r.log), r.isr, broker, kept)
        r.became_hw = None if kept else r.hw
        make = events.become_leader if role == "leader" else events.become_follower
        self.out.add(ts, broker, make(topic=topic, partition=p, **r.received, post={
            "role": role, "leader": r.leader, "leader_epoch": r.leader_epoch, "hw": r.hw, "leo": len(r.log),
            "log_end_epoch": r.log_end_epoch()}))

    def _became_leader(self, broker: int, ts: float, f: dict[str, Any]) -> None:
        # Fetch v13 and later (IBP 3.1 on) name topics by id: the leader's line says which
        self.topic_names[f["topic_id"].removeprefix("Some(").removesuffix(")")] = topic_partition(f["tp"])[0]
        self._became(broker, ts, f, "leader")

    def _became_follower(self, broker: int, ts: float, f: dict[str, Any]) -> None:
        self._became(broker, ts, f, "follower")

    # -- the replicas' logs -----------------------------------------------------------------
    def _truncated(self, broker: int, ts: float, f: dict[str, Any]) -> None:
        if f["why"] != "leader epoch and offset":
            return  # an empty log's start: Kafka looks nothing up (the judge's silent lookup)
        topic, p = topic_partition(f["tp"])
        r = self.replica(topic, p, broker)
        del r.log[int(f["offset"]):]
        r.hw = min(r.hw, len(r.log))
        self.out.add(ts, broker, events.truncate(topic=topic, partition=p, leader=int(f["leader"]),
                                          truncated_to=len(r.log)))

    def _isr_updated(self, broker: int, ts: float, f: dict[str, Any], thread: str = "") -> None:
        topic, p = topic_partition(f["tp"])
        r = self.replica(topic, p, broker)
        isr = ints(f["isr"])
        if ALTER_CHANNEL in thread:  # the controller wrote it: the leader applies its answer
            if int(f["version"]) > self.known_version.get((topic, p), -1):
                # the controller's request log writes its answer once sent, stamped up to a
                # millisecond after the leader's line applying it: the apply waits for it
                self.applies[(topic, p, broker)] = (ts, isr, int(f["version"]))
                return
            self._apply_isr(broker, ts, topic, p, isr, int(f["version"]))
            return
        changed = set(isr) ^ set(r.isr)
        if len(changed) != 1:
            raise AdapterError(f"broker {broker}: ISR of {f['tp']} from {r.isr} to {isr} is not one change")
        follower = changed.pop()
        if len(isr) > len(r.isr) and r.fetch_offset.get(follower, -1) < r.hw:
            # expanded while handling the follower's fetch that reached the HW, whose read
            # step -- rebuilt from millisecond durations -- sorts after this line: it goes there
            self.expansions[(topic, p, broker)] = (ts, follower, isr, int(f["version"]))
            return
        self._write_isr(broker, ts, topic, p, follower, isr, int(f["version"]))

    def _apply_isr(self, leader: int, ts: float, topic: str, p: int, isr: list[int], version: int) -> None:
        """The leader applying the controller's answer to its AlterPartition (IBP 2.7 on)."""
        r = self.replica(topic, p, leader)
        r.isr, r.zk_version = isr, version
        self.out.add(ts, leader, events.apply_isr(topic=topic, partition=p, isr=isr, zk_version=version,
                                                  post={"hw": r.hw, "leo": len(r.log)}))

    def _write_isr(self, leader: int, ts: float, topic: str, p: int, follower: int, isr: list[int],
                   version: int) -> None:
        """The leader's own conditional ISR write (IBP 2.6): an expansion or a shrink."""
        r = self.replica(topic, p, leader)
        make = events.expand_isr if len(isr) > len(r.isr) else events.shrink_isr
        r.isr, r.zk_version = isr, version
        self.known_isr[(topic, p)] = isr
        self.known_version[(topic, p)] = version
        self.out.add(ts, leader, make(topic=topic, partition=p, zxid=0, follower=follower, isr=isr,
                                      zk_version=version, post={"hw": r.hw, "leo": len(r.log), "isr": isr}))

    def flush_expansions(self) -> None:
        """Expansions whose fetch never showed, applies whose write never showed (none
        expected): at their own time."""
        for (topic, p, leader), (ts, follower, isr, version) in sorted(self.expansions.items()):
            self._write_isr(leader, ts, topic, p, follower, isr, version)
        self.expansions.clear()
        for (topic, p, leader), (ts, isr, version) in sorted(self.applies.items()):
            self._apply_isr(leader, ts, topic, p, isr, version)
        self.applies.clear()

    def _hw_updated(self, broker: int, ts: float, f: dict[str, Any]) -> None:
        topic, p = topic_partition(f["tp"])
        self.replica(topic, p, broker).hw = int(f["hw"])

    def _request(self, broker: int, ts: float, f: dict[str, Any]) -> None:
        req = f["request"]
        api = req["requestHeader"]["requestApiKeyName"]
        if api == "PRODUCE":
            self._produce(broker, ts, req)
        elif api == "FETCH" and fetching_replica(req) >= 0:
            self._fetch(broker, ts, req, f.get("read", False))
        elif api == "ALTER_PARTITION":
            self._alter_partition(broker, ts, req)

    def _alter_partition(self, controller: int, ts: float, req: dict[str, Any]) -> None:
        """The controller's handling of a leader's AlterPartition: its ISR written (a
        ZooKeeper write, when the version moved) or refused, and answered."""
        leader = int(req["request"]["brokerId"])
        proposed = {(self._topic(t), pd["partitionIndex"]): pd for t in req["request"]["topics"] for pd in t["partitions"]}
        for t in req["response"].get("topics", ()):
            for pd in t["partitions"]:
                key = (self._topic(t), pd["partitionIndex"])
                asked = proposed.get(key)
                if asked is None:
                    continue
                error = ALTER_ERRORS.get(pd["errorCode"], "UNKNOWN")
                isr = list(pd["isr"]) if error is None else [b["brokerId"] for b in asked.get("newIsrWithEpochs", ())]
                # a refusal echoes the proposal, with the partition epoch the leader knew
                version = int(pd["partitionEpoch"]) if error is None else int(asked.get("partitionEpoch", -1))
                wrote = error is None and version > self.known_version.get(key, -1)
                if wrote:
                    self.known_isr[key], self.known_version[key] = isr, version
                self.out.add(ts, controller, events.alter_partition(
                    topic=key[0], partition=key[1], zxid=0 if wrote else None, leader=leader, isr=isr,
                    leader_epoch=int(asked["leaderEpoch"]), zk_version=version, error=error), 0)
                applied = self.applies.get((*key, leader))
                if applied is not None and applied[2] <= self.known_version.get(key, -1):
                    del self.applies[(*key, leader)]
                    self._apply_isr(leader, ts + 1e-7, key[0], key[1], applied[1], applied[2])

    def _topic(self, t: dict[str, Any]) -> str:
        """A Fetch request's or response's topic: its name, or (v13 on) its id's."""
        return t["topic"] if "topic" in t else self.topic_names.get(t.get("topicId", ""), "")

    def _produce(self, broker: int, ts: float, req: dict[str, Any]) -> None:
        for t in req["response"]["responses"]:
            for pr in t["partitionResponses"]:
                if not appended(pr):
                    continue
                r = self.replica(t["name"], pr["index"], broker)
                offset = pr["baseOffset"]
                if self.placed is not None:
                    if offset < len(r.log):
                        continue  # a retry answered as a duplicate: appended before
                    value = self.placed.value(t["name"], pr["index"], offset, r.leader_epoch)
                else:
                    if self.produced >= len(self.values):
                        raise AdapterError(f"more produce responses than values written ({len(self.values)})")
                    value = self.values[self.produced]
                    self.produced += 1
                del r.log[offset:]
                r.log.append([offset, r.leader_epoch, value])
                r.appended_at[offset] = ts
                # at the append the HW is at most the record's offset, and at most what the ISR
                # followers are known to have fetched: a later HW line (the followers' fetches,
                # sorted before the step rebuilt from durations) is not yet
                self.out.add(ts, broker, events.produce(topic=t["name"], partition=pr["index"], offset=offset, value=value,
                                                 leader_epoch=r.leader_epoch,
                                                 post={"hw": min(self._hw_as_read(r, broker, ts), offset),
                                                       "leo": len(r.log)}))

    def _fetch(self, broker: int, ts: float, req: dict[str, Any], read: bool) -> None:
        follower = fetching_replica(req)
        moved: dict[tuple[str, int], int] = {}
        asked: dict[tuple[str, int], int] = {}  # the leader epoch each partition was asked in
        for t in req["request"].get("topics", ()):
            for pd in t["partitions"]:
                moved[(self._topic(t), pd["partition"])] = pd["fetchOffset"]
                asked[(self._topic(t), pd["partition"])] = pd.get("currentLeaderEpoch", -1)
        answers = {(self._topic(t), pd["partitionIndex"]): pd
                   for t in req["response"].get("responses", ()) for pd in t["partitions"]}
        answered = {} if read else answers
        if not read:
            moved = {}  # taken when the request was read
        for key in sorted(set(moved) | set(answered)):
            r = self.replica(*key, broker)
            offset = moved.get(key, r.fetch_offset.get(follower))
            if offset is None or r.leader != broker:
                continue
            if key in answers and answers[key]["errorCode"] in NOT_LEADING_YET and not (
                    read and stopped_while_polling(asked.get(key, -1), r.leader_epoch, answers[key])):
                r.read_answer.pop(follower, None)
                continue
            # asked in an epoch before the leader's: refused as it was read (the answer, sent at
            # once), and the leader takes no offset from it
            fenced = read and 0 <= asked.get(key, -1) < r.leader_epoch \
                and answers.get(key, {}).get("errorCode") == FENCED_LEADER_EPOCH
            if not fenced:
                r.fetch_offset[follower] = offset
            if read and not fenced:
                note_read(r, follower, offset, ts)
            pd = answers[key] if fenced else answered.get(key)
            if read:
                self.read_at[id(req)] = ts
            at = ts if read else self._before_pause(follower, ts, self.read_at.get(id(req), ts))
            # sent in an epoch before the follower's latest, read once it had moved on: the model's
            # fetch is sent and read in one step, before the follower moved on (and after the
            # leader's own); its answer the follower's fetcher discards
            stale = 0 <= asked.get(key, -1) < self.replica(*key, follower).leader_epoch
            if read and stale:
                at = max(r.became_at + 1e-7, min(at, self.replica(*key, follower).became_at - 1e-6))
            upto = self.next_fetch.get((id(req), *key))
            if any(r.appended_at.get(o, at) > at for o in range(offset, len(r.log) if upto is None else upto)):
                at = ts  # it carries a record appended after the pause: sent then, taken in at the resume
            self._fetch_round_trip(broker, follower, key, offset, pd, at, read, upto, stale)

    def _fetch_round_trip(self, leader: int, follower: int, key: tuple[str, int], offset: int,
                          pd: dict[str, Any] | None, ts: float, read: bool, upto: int | None = None,
                          stale: bool = False) -> None:
        r = self.replica(*key, leader)
        error = FETCH_ERRORS.get(pd["errorCode"], "UNKNOWN") if pd else None
        has_records = pd.get("recordsSizeInBytes", 0) > 0 if pd else len(r.log) > offset
        records = [list(x) for x in r.log[offset:upto]] if has_records else []
        fenced = error == FETCH_ERRORS[FENCED_LEADER_EPOCH]  # the model's: no HW, no answer taken in
        leader_hw = None if fenced else pd["highWatermark"] if pd else self._hw_as_read(r, leader, ts)
        answer = (records, leader_hw, error)
        # an answer equal to the one made when the request was read is that one, sent later;
        # another one is a second round trip at the same offset, after the follower took the first
        made = None if read else r.read_answer.pop(follower, None)
        if made is not None and made != answer and not self._gone(follower, ts):
            # taken in after the read, before the answer: the two can be a microsecond apart
            at = max(ts - 2e-6, min(r.read_when.get(follower, ts) + 1e-7, ts - 1e-8))
            self._receive_read_answer(leader, follower, key, offset, made, at)
        if pd is not None and leader_hw is not None:
            # the answer carries the HW as it was sent: the line moving it there may come later
            r.hw = max(r.hw, leader_hw)
        if read or made != answer:
            self.out.add(ts, leader, events.handle_fetch(
                topic=key[0], partition=key[1], follower=follower, fetch_offset=offset,
                leader_epoch=r.leader_epoch, records=records, leader_hw=leader_hw, error=error,
                post={"hw": r.hw if pd else leader_hw, "leo": len(r.log), "isr": list(r.isr)}))
        if read:
            r.read_answer[follower], r.read_when[follower] = answer, ts
            pending = self.expansions.get((*key, leader))
            if pending is not None and pending[1] == follower and offset >= r.hw:
                del self.expansions[(*key, leader)]
                self._write_isr(leader, ts + 1e-7, key[0], key[1], follower, pending[2], pending[3])
        if pd is None or stale or fenced or self._gone(follower, ts):
            return  # nothing new for the follower, its receipt silent; or no follower to receive it
        fr = self.replica(*key, follower)
        if len(fr.log) == offset:
            fr.log.extend(records)
        fr.hw = min(leader_hw, len(fr.log))
        self.out.add(self._awake(follower, ts + 1e-6), follower, events.receive_fetch(
            topic=key[0], partition=key[1], leader=leader, fetch_offset=offset, leader_epoch=fr.leader_epoch,
            records=records, leader_hw=leader_hw, error=error, post={"hw": fr.hw, "leo": len(fr.log)}))

    def _receive_read_answer(self, leader: int, follower: int, key: tuple[str, int], offset: int,
                             answer: tuple[list[Any], int, str | None], ts: float) -> None:
        """The follower's receipt of the answer its fetch had as it was read, when the one
        sent later differs (records appended, the HW moved while it waited): derived, the
        first of two round trips at the same offset (``steps``).  None when it changes
        nothing a trace shows: the judge's silent step."""
        records, leader_hw, error = answer
        fr = self.replica(*key, follower)
        if len(fr.log) != offset:
            return
        hw = min(leader_hw, offset + len(records))
        if not records and hw == fr.hw:
            return
        fr.log.extend(records)
        fr.hw = hw
        self.out.add(self._awake(follower, ts), follower, events.receive_fetch(
            topic=key[0], partition=key[1], leader=leader, fetch_offset=offset, leader_epoch=fr.leader_epoch,
            records=records, leader_hw=leader_hw, error=error, post={"hw": fr.hw, "leo": len(fr.log)}))

    def _gone(self, broker: int, ts: float) -> bool:
        """Whether the broker's process was gone at ``ts``: the leader's request log writes
        the answer to a fetch that a killed follower sent before it died, and nobody got it."""
        return any(start <= ts < end for start, end in self.down.get(broker, ()))

    def _before_pause(self, follower: int, ts: float, read: float) -> float:
        """When a fetch read at ``read`` was answered: at ``ts`` -- or, the follower being
        paused (SIGSTOP) by then but not yet at the read, just before the pause.  The leader
        wrote the answer once the follower had stopped; what it carried was there before
        (the records a long poll waits for are appended within its wait), and the follower,
        resumed, took it in: a paused broker takes no step, so the round trip goes first."""
        start = next((start for start, end in self.paused.get(follower, ()) if start <= ts < end), None)
        return ts if start is None or start - 1e-5 <= read else start - 1e-5

    def _awake(self, broker: int, ts: float) -> float:
        """When a broker takes in what reached it at ``ts``: then, or -- paused (SIGSTOP) then
        -- as it is resumed (the answer waited in its socket)."""
        return next((end + 1e-6 for start, end in self.paused.get(broker, ()) if start <= ts < end), ts)

    def _hw_as_read(self, r: _Replica, leader: int, ts: float) -> int:
        """``watermarks.hw_as_read`` at ``ts``, the followers whose process runs then live."""
        return hw_as_read(r, leader, waits_for(r, leader, [f for f in r.fetch_offset if not self._gone(f, ts)], ts, self.lag))

    def note_next_fetches(self, lines: list[tuple[int, Line]]) -> None:
        """Where each replica Fetch answer's records ended (``ordering.next_fetches``): the
        leader's log as the adapter rebuilds it may already hold a record appended after the
        answer was read."""
        names = {line.fields["topic_id"].removeprefix("Some(").removesuffix(")"): topic_partition(line.fields["tp"])[0]
                 for _, line in lines if line.name == "became_leader"}
        self.next_fetch = next_fetches(lines, names)

    def note_assignments(self, lines: list[tuple[int, Line]]) -> None:
        """Each partition's assigned replicas, from any LeaderAndIsr state logged."""
        for _, line in lines:
            if line.name == "leader_and_isr_received":
                key = (line.fields["topic"], int(line.fields["partition"]))
                self.assigned.setdefault(key, ints(line.fields["replicas"]))


def ordered_lines(run_dir: Path) -> list[tuple[int, Line]]:
    """(broker, line) of every recognised line of the run, in the order ``adapt`` takes them."""
    steps = reads_after_answers(list(_lines(run_dir)))
    steps = answers_after_appends(answers_after_hw(appends_first(steps, run_dir)), run_dir)
    steps = lookups_at_answers(expansions_before_caught_up(steps), run_dir)
    lines = sorted(((line.ts, _priority(line), broker, pos, line) for broker, pos, line in steps), key=lambda x: x[:4])
    return [(broker, line) for _, _, broker, _, line in lines]


def adapt(run_dir: str | Path) -> list[tuple[int, Event, float]]:
    """The run's events in order: (node, event, ts) each."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir() or not any(run_dir.glob("broker-*/logs")):
        raise AdapterError(f"{run_dir}: not a Kafka run directory (no broker-N/logs)")
    adapter = _Adapter(_values(run_dir), _down(run_dir))
    adapter.paused = _down(run_dir, ("pause",), "resume")
    adapter.lag = replica_lag(run_dir)
    lines = ordered_lines(run_dir)
    adapter.note_assignments(lines)
    adapter.note_next_fetches(lines)
    for broker, line in lines:
        adapter.on_line(broker, line)
    adapter.flush_expansions()
    for ts, kind, broker in _faults(run_dir):
        adapter.out.add(ts, HARNESS, events.CONSTRUCTORS[kind](broker=broker), 0)
    kept = [(i, x) for i, x in enumerate(adapter.out.events) if i not in adapter.out.dropped]
    ordered = sorted(kept, key=lambda x: (x[1][0], x[1][1], x[0]))
    return [(node, event, ts) for _, (ts, _, node, event) in ordered]


def _priority(line: Line) -> int:
    """Within one millisecond: the controller's reason for a write, then ZooKeeper writes,
    then what reacts to them."""
    if line.name in ("election_trigger", "reassign_caught_up"):
        return -1
    if line.name == "fetcher_removed":
        return 2  # after the Follower ... starts line of its millisecond (server.log is read first)  # logged before the writes it causes, often in the same millisecond
    return 0 if line.name in ("registered", "controller_elected", "leader_elected", "replica_offline",
                              "assignment_updated", "reassign_epoch") else 1


def to_records(adapted: list[tuple[int, Event, float]], run: str) -> list[dict[str, Any]]:
    """Trace records (SCHEMA.md section 3): the clock of each is its rank in the run, the zxid
    of each ZooKeeper write its rank among the writes; ``seq`` counts per node."""
    seqs: dict[int, int] = {}
    zxid = 0
    records = []
    for clock, (node, e, ts) in enumerate(adapted, start=1):
        seq = seqs.get(node, 0)
        seqs[node] = seq + 1
        z = None
        if e.zxid is not None:
            zxid += 1
            z = zxid
        records.append({"schema": SCHEMA_ID, "run": run, "node": node, "seq": seq, "clock": clock, "zxid": z,
                        "kind": e.kind, "topic": e.topic, "partition": e.partition, "params": dict(e.params),
                        "post": dict(e.post or {}), "ts": ts})
    return records


def write_trace(records: list[dict[str, Any]], out: str | Path) -> list[Path]:
    """``<out>/broker-N.jsonl`` per broker and ``<out>/harness.jsonl``, as recordings are laid out."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files: dict[int, list[str]] = {}
    for rec in records:
        files.setdefault(rec["node"], []).append(json.dumps(rec, sort_keys=True))
    written = []
    for node, lines in sorted(files.items()):
        path = out / ("harness.jsonl" if node == HARNESS else f"broker-{node}.jsonl")
        path.write_text("\n".join(lines) + "\n")
        written.append(path)
    return written
