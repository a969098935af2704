"""The verdict on a chaos run: every acknowledged write is where it was acknowledged.

From what the workload saw (:class:`~impl.harness.chaos.workload.Ledger`) and what the
cluster holds after recovery, :func:`judge` lists every finding: an acknowledged write lost
(labelled with its cause -- an unclean election found in the traces, an acks=1
acknowledgement by a leader that was then killed -- or a replication bug), found twice, at
another offset or out of its stream's order, acknowledged twice by the client's delivery
reports; an offset the consumer read as committed that
now holds another value; an ISR member whose log differs below the high watermark; an
acks=all write committed by fewer than min.insync.replicas.

Each finding records, where it is made, the property it breaks (:class:`Finding`): the
model's ``acked_durable`` for a lost write -- labelled as the model labels the loss an unclean
election causes by design -- ``writes_once`` for a write found or acknowledged twice, and
``replicas_consistent`` for every other finding about the logs.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from impl.harness.chaos.clients import LogRecords
from impl.harness.chaos.schedule import MIN_INSYNC, TOPIC, FaultRecord
from impl.harness.chaos.workload import Ack, Ledger
from properties.safety import UNCLEAN_LABEL

__all__ = ["DUPLICATED", "LOG_CONSISTENT", "LOST", "Election", "Finding", "LogRecords", "Loss", "Verdict",
           "explain_loss", "judge", "loss_label", "merge"]

LOST = "acked_durable"
"""The model's property an acknowledged write missing from the final logs breaks."""
DUPLICATED = "writes_once"
"""An idempotent producer's write found twice, or acknowledged twice: the model has no such
property (it does not model retries), so the chaos verdict names its own."""
LOG_CONSISTENT = "replicas_consistent"
"""What every other finding is about: a replica's log that differs from the committed one,
an offset moved, writes out of acknowledgement order, a cluster that did not recover."""


@dataclass(frozen=True)
class Finding:
    """One thing a run got wrong: in words, the property it breaks, and the model's label
    for it (the loss an unclean election causes by design), if any."""

    text: str
    property: str = LOG_CONSISTENT
    label: str | None = None


@dataclass(frozen=True)
class Loss:
    """Why an acknowledged write is gone (:func:`explain_loss`): the cause in words, and the
    model's label for it -- ``UNCLEAN_LABEL`` for an unclean election, else none."""

    cause: str
    label: str | None = None


def loss_label(losses: list[Loss]) -> str | None:
    """The model's label of a run's losses: the one label every loss carries (an unclean
    election's), else none -- a loss the design does not excuse."""
    labels = {loss.label for loss in losses}
    return labels.pop() if len(labels) == 1 else None


@dataclass(frozen=True)
class Election:
    """A leader election recorded by a controller (``elect_leader`` trace events)."""

    topic: str
    partition: int
    leader: int
    leader_epoch: int
    unclean: bool


@dataclass
class Verdict:
    """What :func:`judge` found: the counts, and every finding (none: the run passed)."""

    attempted: int
    acknowledged: int
    lost: int
    duplicated: int
    found: list[Finding]
    causes: dict[str, int]

    @property
    def findings(self) -> list[str]:
        """Every finding in words."""
        return [f.text for f in self.found]

    @property
    def passed(self) -> bool:
        return not self.found

    def as_dict(self) -> dict[str, object]:
        """The counts, the findings in words and the losses by cause."""
        return {"attempted": self.attempted, "acknowledged": self.acknowledged, "lost": self.lost,
                "duplicated": self.duplicated, "findings": self.findings, "causes": dict(self.causes)}


def explain_loss(ack: Ack, elections: list[Election], faults: list[FaultRecord]) -> Loss:
    """Why an acknowledged write is gone: the first matching cause, else a replication bug."""
    return Loss(_loss_cause(ack, elections, faults),
                UNCLEAN_LABEL if _unclean_election(ack, elections) is not None else None)


def _unclean_election(ack: Ack, elections: list[Election]) -> Election | None:
    """The first unclean election of ``ack``'s partition after the epoch it was acknowledged in."""
    return next((e for e in elections if e.topic == ack.topic and e.partition == ack.partition
                 and e.unclean and e.leader_epoch > ack.leader_epoch), None)


def _loss_cause(ack: Ack, elections: list[Election], faults: list[FaultRecord]) -> str:
    if (e := _unclean_election(ack, elections)) is not None:
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
          min_insync: int = MIN_INSYNC, topic: str = TOPIC) -> Verdict:
    """The verdict on a run from what it acknowledged and what the cluster holds at the end.

    ``final`` is each partition's committed log as its leader serves it after recovery;
    ``replica_logs`` each replica's on-disk log (partition -> broker -> records);
    ``isr`` the final ISR of each partition; ``commit_isr`` the ISR with which the leader
    committed each (partition, leader epoch, offset) (:func:`read_commit_isr`); all of them
    of ``topic``, whose writes are the ledger's (the run judges each topic on its own)."""
    findings: list[Finding] = []
    thin: Counter[str] = Counter()
    for ack in ledger.acked:
        epoch = _committed_epoch(ack, final)
        members = (commit_isr or {}).get((ack.partition, epoch, ack.offset))
        if ack.acks == -1 and members is not None and len(members) < min_insync:
            thin[f"{topic}-{ack.partition} leader {ack.leader} (epoch {epoch}) "
                 f"committed with ISR {members}"] += 1
    for where_, n in sorted(thin.items()):
        findings.append(Finding(f"{n} write{'s' if n != 1 else ''} acknowledged with acks=all although "
                                f"fewer than min.insync.replicas={min_insync} replicas held "
                                f"{'them' if n != 1 else 'it'}: {where_}"))
    where: dict[str, list[tuple[int, int]]] = defaultdict(list)  # value -> [(partition, offset)]
    for p, records in final.items():
        for offset, _epoch, value in records:
            where[value].append((p, offset))
    duplicated = {v: locs for v, locs in where.items() if len(locs) > 1}
    for v, locs in sorted(duplicated.items())[:10]:
        findings.append(Finding(f"value {v} is in the final logs {len(locs)} times: "
                                + ", ".join(f"{topic}-{p}@{o}" for p, o in locs), DUPLICATED))
    if len(duplicated) > 10:
        findings.append(Finding(f"... and {len(duplicated) - 10} more duplicated values", DUPLICATED))
    reports = Counter(ack.value for ack in ledger.acked)
    reacked = sorted(v for v, n in reports.items() if n > 1)
    for v in reacked[:10]:  # each value is sent once: one report for it, at most
        findings.append(Finding(f"value {v} is acknowledged {reports[v]} times by the client's "
                                f"delivery reports", DUPLICATED))
    if len(reacked) > 10:
        findings.append(Finding(f"... and {len(reacked) - 10} more values acknowledged more than once",
                                DUPLICATED))

    lost_by_cause: Counter[Loss] = Counter()
    misplaced = 0
    first: dict[str, Ack] = {}  # each value's first report, in the order reported
    for ack in ledger.acked:
        first.setdefault(ack.value, ack)
    for ack in first.values():
        locs = [loc for loc in where.get(ack.value, []) if loc[0] == ack.partition]
        if not locs:
            lost_by_cause[explain_loss(ack, elections, faults)] += 1
        elif ack.offset >= 0 and ack.offset not in [o for _p, o in locs]:  # -1: not reported
            misplaced += 1
            if misplaced <= 10:
                findings.append(Finding(f"value {ack.value} acknowledged at {topic}-{ack.partition}@"
                                        f"{ack.offset} is at offset {locs[0][1]} instead"))
    for loss, n in lost_by_cause.most_common():
        findings.append(Finding(f"lost {n} acknowledged write{'s' if n != 1 else ''}: {loss.cause}",
                                LOST, loss.label))

    streams: dict[tuple[str, int], list[int]] = defaultdict(list)
    for ack in first.values():
        for p, o in where.get(ack.value, []):
            if p == ack.partition:
                streams[(ack.stream, p)].append(o)
                break
    for (stream, p), offsets in sorted(streams.items()):
        if any(b <= a for a, b in zip(offsets, offsets[1:], strict=False)):
            findings.append(Finding(f"writes of {stream} to {topic}-{p} are out of acknowledgement "
                                    f"order in the final log"))

    twice: dict[int, list[str]] = defaultdict(list)
    for (p, o), value in sorted(ledger.consumed.items()):
        now = final.get(p, [])
        if o >= len(now) or now[o][2] != value:
            twice[p].append(f"@{o} {value} -> {now[o][2] if o < len(now) else 'gone'}")
    for p, items in sorted(twice.items()):
        unclean = [e for e in elections if e.topic == topic and e.partition == p and e.unclean]
        cause = (f"after the unclean election of broker {unclean[0].leader} out of the ISR"
                 if unclean else "no unclean election: a replication bug")
        findings.append(Finding(f"{len(items)} offset{'s' if len(items) != 1 else ''} of {topic}-{p} "
                                f"committed twice (read as committed by the consumer, now another "
                                f"value): {', '.join(items[:5])}{' ...' if len(items) > 5 else ''}; "
                                f"{cause}"))
    for p, members in sorted(isr.items()):
        committed = final.get(p, [])
        for b in members:
            disk = replica_logs.get(p, {}).get(b)
            if disk is None:
                findings.append(Finding(f"ISR member {b} of {topic}-{p} has no log on disk"))
                continue
            mine = disk[:len(committed)]
            if [(e, v) for _o, e, v in mine] != [(e, v) for _o, e, v in committed]:
                first = next((i for i, (a, b2) in enumerate(zip(mine, committed, strict=False))
                              if a[1:] != b2[1:]), min(len(mine), len(committed)))
                findings.append(Finding(f"ISR member {b} of {topic}-{p} differs from the committed log "
                                        f"at offset {first} (holds {len(disk)} records, committed "
                                        f"{len(committed)})"))
    return Verdict(attempted=ledger.attempted, acknowledged=len(reports),
                   lost=sum(lost_by_cause.values()), duplicated=len(duplicated.keys() | set(reacked)),
                   found=findings, causes={loss.cause: n for loss, n in lost_by_cause.items()})


def _committed_epoch(ack: Ack, final: dict[int, LogRecords]) -> int:
    """The leader epoch ``ack`` was committed in: as the client reported it, or -- a client
    that does not say (-1) -- the epoch of the record at its offset, if that is its value."""
    if ack.leader_epoch >= 0:
        return ack.leader_epoch
    records = final.get(ack.partition, [])
    if ack.offset < len(records) and records[ack.offset][2] == ack.value:
        return records[ack.offset][1]
    return -1


def merge(main: Verdict, other: Verdict) -> Verdict:
    """One verdict over two topics judged apart (the main topic's counts of attempts and
    acknowledgements are already the whole ledger's)."""
    causes: Counter[str] = Counter(main.causes)
    causes.update(other.causes)
    return Verdict(attempted=main.attempted, acknowledged=main.acknowledged,
                   lost=main.lost + other.lost, duplicated=main.duplicated + other.duplicated,
                   found=main.found + other.found, causes=dict(causes))
