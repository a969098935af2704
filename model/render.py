"""Readable text for steps and states: counterexamples are for people.

Records print as letters with their leader epoch (``a@1`` is the first client record,
written in leader epoch 1); sets of brokers print as ``{0,2}``.
"""

from __future__ import annotations

from model.actions import Step, replica
from model.state import (
    FETCH_RESPONSE,
    NO_LEADER,
    OUT_OF_RANGE,
    ROLE_NAMES,
    STATUS_NAMES,
    TRUNCATING,
    Entry,
    State,
)


def record(e: Entry) -> str:
    return f"{chr(96 + e.value) if 1 <= e.value <= 26 else e.value}@{e.epoch}"


def log_text(log: tuple[Entry, ...]) -> str:
    return "[" + ", ".join(record(e) for e in log) + "]"


def brokers_text(bs: tuple[int, ...]) -> str:
    return "{" + ",".join(str(b) for b in bs) + "}"


def _leader(b: int) -> str:
    return "none (-1)" if b == NO_LEADER else str(b)


def describe(step: Step, before: State, after: State) -> str:
    """One line saying what happened, in the design's words."""
    a, args = step.action, step.args
    if a == "broker_crash":
        return f"broker {args[0]} crashes (kill -9); its ZK registration expires"
    if a == "broker_restart":
        b = args[0]
        parts = [f"broker {b} restarts and registers (broker epoch {after.brokers[b].broker_epoch}); recovers from ZK:"]
        for p, (rb, ra) in enumerate(zip(before.brokers[b].replicas, after.brokers[b].replicas, strict=True)):
            role = ROLE_NAMES[ra.role]
            cut = f", truncates log to hw={rb.hw}: {log_text(rb.log)} → {log_text(ra.log)}" if ra.log != rb.log else ""
            wait = ", will reconcile by epoch before fetching" if ra.fetch_state == TRUNCATING else ""
            parts.append(f"p{p} {role} of {_leader(ra.leader)} at epoch {ra.leader_epoch}{cut}{wait}")
        return " ".join(parts)
    if a == "broker_pause":
        return f"broker {args[0]} pauses (GC); its ZK session expires while it is frozen"
    if a == "broker_resume":
        return f"broker {args[0]} resumes, still believing its old state"
    if a == "broker_reregister":
        b = args[0]
        return f"broker {b} opens a new ZK session and re-registers (broker epoch {after.brokers[b].broker_epoch})"
    if a == "controller_elect":
        return f"broker {args[0]} creates /controller and becomes controller (controller epoch {after.zk.controller_epoch}); sends INIT LeaderAndISR"
    if a == "controller_resign":
        return f"broker {args[0]} sees another controller and stops acting as controller"
    if a == "elect_leader":
        c, p, _ = args
        zn = after.zk.partitions[p]
        unclean = " -- UNCLEAN election, possible data loss" if p in after.ghost.unclean and p not in before.ghost.unclean else ""
        return (
            f"controller {c} writes partition {p}: leader {_leader(zn.leader)}, epoch {zn.leader_epoch}, "
            f"ISR {brokers_text(zn.isr)} (zk_version {zn.zk_version}) and sends LeaderAndISR{unclean}"
        )
    if a == "on_broker_startup":
        return f"controller {args[0]} sees broker {args[1]} registered and sends it the current LeaderAndISR"
    if a == "controlled_shutdown":
        c, p, b, _ = args
        zn = after.zk.partitions[p]
        return f"controller {c} moves partition {p} off broker {b} for its controlled shutdown: leader {_leader(zn.leader)}, epoch {zn.leader_epoch}, ISR {brokers_text(zn.isr)} (zk_version {zn.zk_version})"
    if a == "broker_stop":
        return f"broker {args[0]} stops cleanly after its controlled shutdown"
    if a in ("become_leader", "become_follower", "reject_leader_and_isr"):
        m = args[0]
        rb, ra = replica(before, m.to, m.partition), replica(after, m.to, m.partition)
        if a == "reject_leader_and_isr":
            return f"broker {m.to} rejects LeaderAndISR(p{m.partition}, leader {m.leader}, epoch {m.leader_epoch}, controller epoch {m.controller_epoch}) as stale"
        if a == "become_leader":
            return f"broker {m.to} becomes leader of p{m.partition} at epoch {m.leader_epoch} with ISR {brokers_text(m.isr)}, hw={ra.hw}, log {log_text(ra.log)}"
        text = f"broker {m.to} becomes follower of {_leader(m.leader)} for p{m.partition} at epoch {m.leader_epoch}"
        if ra.log != rb.log:
            text += f", truncates log to hw={rb.hw}: {log_text(rb.log)} → {log_text(ra.log)}"
        elif ra.fetch_state == TRUNCATING:
            text += ", will reconcile its log by epoch before fetching"
        elif rb.leader == ra.leader:
            text += " (already following it: keeps fetching)"
        return text
    if a == "truncate":
        f, p = args
        rb, ra = replica(before, f, p), replica(after, f, p)
        return f"broker {f} asks leader {rb.leader} where its epoch ends and truncates p{p} to offset {ra.leo}: {log_text(rb.log)} → {log_text(ra.log)}"
    if a == "produce":
        b, p = args
        r = replica(after, b, p)
        return f"client writes {record(r.log[-1])} to leader {b} (p{p}): log {log_text(r.log)}, hw={r.hw}"
    if a == "send_fetch":
        f, p = args
        r = replica(before, f, p)
        return f"broker {f} sends fetch(p{p}, offset={r.leo}, epoch {r.leader_epoch}) to leader {r.leader}"
    if a == "handle_fetch":
        m = args[0]
        rb, ra = replica(before, m.leader, m.partition), replica(after, m.leader, m.partition)
        resp = [x for x in after.fetches if x.kind == FETCH_RESPONSE and x.follower == m.follower and x.leader == m.leader and x not in before.fetches]
        if not resp:
            return f"leader {m.leader} refuses fetch from {m.follower} (request epoch {m.epoch} ≠ its epoch {rb.leader_epoch})"
        r = resp[0]
        if r.error == OUT_OF_RANGE:
            return f"leader {m.leader} answers fetch from {m.follower} at offset {m.offset} with OFFSET_OUT_OF_RANGE (its LEO is {rb.leo})"
        hw = f"HW {rb.hw} → {ra.hw}, commits {log_text(ra.log[rb.hw:ra.hw])}" if ra.hw != rb.hw else f"hw={ra.hw}"
        return f"leader {m.leader} handles fetch from {m.follower} at offset {m.offset} (epoch {m.epoch}): {hw}; replies {log_text(r.records)}"
    if a == "receive_fetch":
        m = args[0]
        rb, ra = replica(before, m.follower, m.partition), replica(after, m.follower, m.partition)
        if ra == rb:
            return f"broker {m.follower} discards a stale fetch response from {m.leader}"
        if m.error == OUT_OF_RANGE:
            return f"broker {m.follower} gets OFFSET_OUT_OF_RANGE from {m.leader} and truncates: {log_text(rb.log)} → {log_text(ra.log)}"
        return f"broker {m.follower} appends {log_text(m.records)} from leader {m.leader} and takes hw={ra.hw}: log {log_text(ra.log)}"
    if a in ("shrink_isr", "expand_isr"):
        b, p, f = args
        rb, ra = replica(before, b, p), replica(after, b, p)
        verb = "removes" if a == "shrink_isr" else "adds"
        hw = f", HW {rb.hw} → {ra.hw}" if ra.hw != rb.hw else ""
        return f"leader {b} {verb} {f} {'from' if verb == 'removes' else 'to'} the ISR of p{p} by conditional ZK write: {brokers_text(ra.isr)} (zk_version {rb.zk_version} → {ra.zk_version}){hw}"
    if a == "isr_update_failed":
        b, p = args
        rb = replica(before, b, p)
        return f"leader {b}'s conditional ISR write for p{p} fails (ZK at version {before.zk.partitions[p].zk_version}, it knew {rb.zk_version}): it stops acting as leader"
    if a == "reassign_start":
        c, p, rar = args
        zn = after.zk.partitions[p]
        return f"controller {c} starts reassigning p{p} to RAR {brokers_text(rar)}: AR := {brokers_text(zn.ar)}, sends LeaderAndISR (epoch {zn.leader_epoch}) to RAR"
    if a == "reassign_complete":
        c, p, _ = args
        zb, zn = before.zk.partitions[p], after.zk.partitions[p]
        gone = tuple(b for b in zb.ar if b not in zn.ar)
        return (
            f"controller {c} completes the reassignment of p{p} (RAR ⊆ ISR): leader {_leader(zn.leader)}, epoch {zn.leader_epoch}, "
            f"ISR {brokers_text(zn.isr)}, AR {brokers_text(zn.ar)} (zk_version {zn.zk_version}); LeaderAndISR to RAR, StopReplica to {brokers_text(gone)}"
        )
    if a == "stop_replica":
        m = args[0]
        if m.controller_epoch < before.brokers[m.to].controller_epoch or m.leader_epoch < replica(before, m.to, m.partition).leader_epoch:
            return f"broker {m.to} refuses a stale StopReplica(p{m.partition}, epoch {m.leader_epoch}, controller epoch {m.controller_epoch})"
        return f"broker {m.to} stops its replica of p{m.partition} and deletes it (StopReplica, epoch {m.leader_epoch})"
    return f"{a}{args}"


def state_text(s: State) -> str:
    """A few lines showing ZooKeeper and every broker."""
    lines = []
    zk = s.zk
    everyone = tuple(range(len(s.brokers)))
    parts = [
        f"p{p}: leader {_leader(z.leader)} epoch {z.leader_epoch} ISR {brokers_text(z.isr)} v{z.zk_version}"
        + (f" AR {brokers_text(z.ar)}" if z.ar != everyone or z.rar else "")
        + (f" RAR {brokers_text(z.rar)}" if z.rar else "")
        for p, z in enumerate(zk.partitions)
    ]
    lines.append(f"ZK: /controller={_leader(zk.controller)} /controller_epoch={zk.controller_epoch} live={brokers_text(zk.live)}; " + "; ".join(parts))
    for b, br in enumerate(s.brokers):
        ctl = f", controller@{br.controller_epoch}" if br.is_controller else ""
        if br.new_brokers:
            ctl += f", startup owed to {brokers_text(br.new_brokers)}"
        reps = []
        for p, r in enumerate(br.replicas):
            role = ROLE_NAMES[r.role]
            extra = f" ISR {brokers_text(r.isr)}" if r.role == 1 else (f" of {_leader(r.leader)}" if r.role == 2 else "")
            reps.append(f"p{p} {role}{extra}@{r.leader_epoch} log {log_text(r.log)} hw={r.hw}")
        lines.append(f"broker {b} [{STATUS_NAMES[br.status]}{ctl}]: " + "; ".join(reps))
    if s.ghost.committed:
        lines.append("committed: " + ", ".join(f"p{p}[{o}]={record(e)}" for p, o, e in s.ghost.committed))
    if s.ghost.acked:
        lines.append("acknowledged: " + ", ".join(f"p{p}:{chr(96 + v)}" for p, v in s.ghost.acked))
    return "\n".join(lines)
