"""States and records as text: counterexamples are for people.

Records print as letters with their leader epoch (``a@1`` is the first client record,
written in leader epoch 1); sets of brokers print as ``{0,2}``.  What each *step* says is
declared with its action in ``model.registry``; ``model.export.render.describe`` looks it up.
"""

from __future__ import annotations

from collections.abc import Sequence

from model.state import NO_LEADER, ROLE_NAMES, STATUS_NAMES, Entry, State


def record(e: Entry) -> str:
    return f"{chr(96 + e.value) if 1 <= e.value <= 26 else e.value}@{e.epoch}"


def value_text(v: int) -> str:
    """A record value as a client wrote it (``a`` for 1), without its epoch."""
    return record(Entry(v, 0)).split("@")[0]


def log_text(log: tuple[Entry, ...]) -> str:
    return "[" + ", ".join(record(e) for e in log) + "]"


def brokers_text(bs: tuple[int, ...]) -> str:
    return "{" + ",".join(str(b) for b in bs) + "}"


def leader_text(b: int) -> str:
    return "none (-1)" if b == NO_LEADER else str(b)


def state_text(s: State, ids: Sequence[int] | None = None) -> str:
    """A few lines showing ZooKeeper and every broker.  ``ids`` names model broker ``b`` as
    ``ids[b]`` -- a judged trace's own broker ids, so that the states the model allowed read
    in the numbering of the trace they stand beside."""

    def n(b: int) -> int:
        return ids[b] if ids is not None and 0 <= b < len(ids) else b

    def ns(bs: tuple[int, ...]) -> str:
        return brokers_text(tuple(n(b) for b in bs))

    lines = []
    zk = s.zk
    everyone = tuple(range(len(s.brokers)))
    parts = [
        f"p{p}: leader {leader_text(n(z.leader))} epoch {z.leader_epoch} ISR {ns(z.isr)} v{z.zk_version}"
        + (f" AR {ns(z.ar)}" if z.ar != everyone or z.rar else "")
        + (f" RAR {ns(z.rar)}" if z.rar else "")
        for p, z in enumerate(zk.partitions)
    ]
    lines.append(f"ZK: /controller={leader_text(n(zk.controller))} /controller_epoch={zk.controller_epoch} live={ns(zk.live)}; " + "; ".join(parts))
    for b, br in enumerate(s.brokers):
        ctl = f", controller@{br.controller_epoch}" if br.is_controller else ""
        if br.new_brokers:
            ctl += f", startup owed to {ns(br.new_brokers)}"
        reps = []
        for p, r in enumerate(br.replicas):
            role = ROLE_NAMES[r.role]
            extra = f" ISR {ns(r.isr)}" if r.role == 1 else (f" of {leader_text(n(r.leader))}" if r.role == 2 else "")
            reps.append(f"p{p} {role}{extra}@{r.leader_epoch} log {log_text(r.log)} hw={r.hw}")
        lines.append(f"broker {n(b)} [{STATUS_NAMES[br.status]}{ctl}]: " + "; ".join(reps))
    if s.ghost.committed:
        lines.append("committed: " + ", ".join(f"p{p}[{o}]={record(e)}" for p, o, e in s.ghost.committed))
    if s.ghost.acked:
        lines.append("acknowledged: " + ", ".join(f"p{p}:{chr(96 + v)}" for p, v in s.ghost.acked))
    return "\n".join(lines)
