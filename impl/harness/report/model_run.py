"""A run of the model -- a counterexample of ``epochal check`` or ``fuzz``, a driven schedule
-- as a report section: its diagram, the state after every step, what broke.

Every message of the model is visible in its state: ``State.leader_and_isr`` (every
LeaderAndISR request sent), ``State.fetches`` (fetch requests and responses in flight) and
``State.stop_replica`` (StopReplica requests in flight).  So a step's arrows come from the
diff of those sets: a message that appears was *sent* by the step; a step whose argument is
a message *received* it; one that leaves the set without being received was *lost* (its
reader went away).  A step whose exported event is a ZooKeeper write (the registry's
``Emitted.zk``) draws an arrow to the ZooKeeper lane; a ZooKeeper change that is no write
of the step's own (a crash ending a session) draws a dashed one.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

from impl.harness.report.diagram import Arrow, Diagram, Row
from impl.harness.report.page import Section, Snapshot
from model.actions import Step
from model.config import Config
from model.export.render import describe
from model.registry import ACTIONS, apply
from model.state import (
    EPOCH_DURING_DELETE,
    FETCH_REQUEST,
    LEADER,
    NO_LEADER,
    OUT_OF_RANGE,
    ROLE_NAMES,
    STATUS_NAMES,
    Fetch,
    LeaderAndIsr,
    State,
    StopReplica,
    initial,
)
from model.text import brokers_text, leader_text, log_text, record, value_text

ZK_LANE, CONTROLLER_LANE = 0, 1
Message = LeaderAndIsr | Fetch | StopReplica

GLYPH = {"broker_crash": "crash", "broker_pause": "pause", "broker_resume": "resume",
         "broker_restart": "restart", "broker_stop": "stop"}
"""The actions drawn with a shape of their own: faults and their ends."""


def broker_lane(b: int) -> int:
    return 2 + b


def lanes(cfg: Config) -> list[str]:
    return ["ZooKeeper", "controller"] + [f"broker {b}" for b in range(cfg.brokers)]


def is_controller_action(name: str) -> bool:
    """The controller's steps (its first argument is the controller, ``c``) and a broker's
    taking or leaving the role (``controller_elect``, ``controller_resign``) are drawn on the
    controller lane; every other step on the lane of the broker that takes it."""
    entry = ACTIONS[name]
    params = list(inspect.signature(entry.fn).parameters)[2:]
    return name.startswith("controller_") or (bool(params) and params[0] == "c")


def lane_of(step: Step) -> int:
    if is_controller_action(step.action):
        return CONTROLLER_LANE
    return broker_lane(ACTIONS[step.action].actor(step.args))


def messages(s: State) -> set[Message]:
    return set(s.leader_and_isr) | set(s.fetches) | set(s.stop_replica)


def addressee(m: Message) -> int:
    if isinstance(m, Fetch):
        return m.leader if m.kind == FETCH_REQUEST else m.follower
    return m.to


def message_label(m: Message) -> str:
    if isinstance(m, LeaderAndIsr):
        return f"LeaderAndISR p{m.partition}: leader {leader_text(m.leader)} epoch {m.leader_epoch} ISR {brokers_text(m.isr)}"
    if isinstance(m, StopReplica):
        what = "delete" if m.leader_epoch == EPOCH_DURING_DELETE else f"epoch {m.leader_epoch}"
        return f"StopReplica p{m.partition} ({what})"
    if m.kind == FETCH_REQUEST:
        return f"fetch p{m.partition} offset {m.offset} epoch {m.epoch}"
    if m.error == OUT_OF_RANGE:
        return f"fetch response p{m.partition}: out of range (leader LEO {m.hw})"
    return f"fetch response p{m.partition}: {log_text(m.records)} hw={m.hw}"


def arrow_label(m: Message) -> str:
    return f"to {addressee(m)}: {message_label(m)}"


def received(step: Step) -> Message | None:
    """The message a step acts on (LeaderAndISR, fetch, StopReplica), if any."""
    first = step.args[0] if step.args else None
    return first if isinstance(first, LeaderAndIsr | Fetch | StopReplica) else None


def zk_label(before: State, after: State) -> str:
    a, b = before.zk, after.zk
    parts = []
    if a.controller != b.controller or a.controller_epoch != b.controller_epoch:
        parts.append(f"/controller={leader_text(b.controller)} epoch {b.controller_epoch}")
    if a.live != b.live:
        parts.append(f"live {brokers_text(b.live)}")
    for p, (x, y) in enumerate(zip(a.partitions, b.partitions, strict=True)):
        if x != y:
            parts.append(f"p{p}: leader {leader_text(y.leader)} epoch {y.leader_epoch} ISR {brokers_text(y.isr)} v{y.zk_version}")
    return "; ".join(parts) or "ZooKeeper write"


@dataclass
class ModelRun:
    """A path of the model from the initial state of ``config``: what the report draws.

    ``property``/``message`` name what broke after the last step (None: nothing did --
    a driven schedule, or a check that found nothing and shows no path)."""

    config: Config
    steps: Sequence[Step]
    property: str | None = None
    message: str | None = None
    also: Sequence[tuple[str, str]] = ()
    title: str = ""
    note: str = ""  # how the path was found ("shortest counterexample of a breadth-first search ...")
    states: list[State] = field(default_factory=list)  # filled by ``replay``

    def replay(self) -> list[State]:
        if not self.states:
            s = initial(self.config)
            self.states = [s]
            for step in self.steps:
                t = apply(s, self.config, step)
                if t is None:
                    raise ValueError(f"step {step.action}{step.args} is not enabled where the path has it")
                self.states.append(t)
                s = t
        return self.states


def diagram(run: ModelRun) -> Diagram:
    states = run.replay()
    rows: list[Row] = []
    arrows: list[Arrow] = []
    sent: dict[Message, tuple[int, int]] = {}  # message -> (row, lane) of its latest send
    answered: set[Message] = set()
    for i, step in enumerate(run.steps):
        before, after = states[i], states[i + 1]
        lane = lane_of(step)
        last = i == len(run.steps) - 1 and run.property is not None
        rows.append(Row(lane=lane, text=describe(step, before, after), glyph=GLYPH.get(step.action, "dot"),
                        bad=last, note=f"✗ {run.property}" if last else ""))
        m = received(step)
        if m is not None and m in sent:
            row, src_lane = sent[m]
            arrows.append(Arrow("message", arrow_label(m), row, src_lane, i, broker_lane(addressee(m))))
            answered.add(m)
        old, new = messages(before), messages(after)
        for gone in sorted(old - new - ({m} if m is not None else set()), key=repr):
            if gone in sent and gone not in answered:
                row, src_lane = sent.pop(gone)
                arrows.append(Arrow("message", arrow_label(gone), row, src_lane, i,
                                    broker_lane(addressee(gone)), lost=True))
        for m2 in sorted(new - old, key=repr):
            sent[m2] = (i, lane)
            answered.discard(m2)
        entry = ACTIONS[step.action]
        emitted = entry.event(step.args, before, after)
        if emitted is not None and emitted.zk:
            arrows.append(Arrow("zk", zk_label(before, after), i, lane, i, ZK_LANE))
        elif before.zk != after.zk:
            arrows.append(Arrow("session", zk_label(before, after), i, lane, i, ZK_LANE))
    for m, (row, src_lane) in sent.items():
        if m not in answered and m in messages(states[-1]):
            arrows.append(Arrow("message", arrow_label(m), row, src_lane, None, broker_lane(addressee(m))))
    return Diagram(lanes(run.config), rows, arrows)


def snapshot(s: State) -> Snapshot:
    """Every part of a model state, field by field, in the model's words."""
    out: Snapshot = {}
    zk = s.zk
    z = "ZooKeeper"
    out[(z, "/controller")] = f"{leader_text(zk.controller)} (epoch {zk.controller_epoch})"
    out[(z, "/brokers/ids")] = f"{brokers_text(zk.live)} (broker epochs {', '.join(map(str, zk.broker_epochs))})"
    for p, zn in enumerate(zk.partitions):
        text = f"leader {leader_text(zn.leader)} epoch {zn.leader_epoch} ISR {brokers_text(zn.isr)} v{zn.zk_version}"
        text += f" AR {brokers_text(zn.ar)}" + (f" RAR {brokers_text(zn.rar)}" if zn.rar else "")
        if zn.topic_id:
            text += f" topic id {zn.topic_id}"
        out[(z, f"p{p} leaderAndISR")] = text
    for b, br in enumerate(s.brokers):
        part = f"broker {b}"
        role = STATUS_NAMES[br.status] + (f", controller (epoch {br.controller_epoch})" if br.is_controller else "")
        out[(part, "status")] = f"{role}; broker epoch {br.broker_epoch}"
        for p, r in enumerate(br.replicas):
            what = ROLE_NAMES[r.role]
            if r.role == LEADER:
                what += f" ISR {brokers_text(r.isr)} v{r.zk_version}"
            elif r.leader != NO_LEADER:
                what += f" of {r.leader}"
            out[(part, f"p{p}")] = f"{what}, leader epoch {r.leader_epoch}"
            out[(part, f"p{p} log")] = f"{log_text(r.log)} hw={r.hw}"
    flying = "messages (LeaderAndISR: every one sent; fetches and StopReplica: in flight)"
    for m in sorted(messages(s), key=repr):
        out[(flying, arrow_label(m))] = "sent" if isinstance(m, LeaderAndIsr) else "in flight"
    g = s.ghost
    history = "history (no broker sees it)"
    out[(history, "committed")] = ", ".join(f"p{p}[{o}]={record(e)}" for p, o, e in g.committed) or "none"
    out[(history, "acknowledged")] = ", ".join(f"p{p}:{value_text(v)}" for p, v in g.acked) or "none"
    return out


def lost_records(s: State) -> list[str]:
    """Committed records no longer at their offset in their partition's leader's log, and
    acknowledged writes in no log of the leader -- what a durability violation lost."""
    out = []
    for p, o, e in s.ghost.committed:
        leader = s.zk.partitions[p].leader
        log = s.brokers[leader].replicas[p].log if leader != NO_LEADER else ()
        if o >= len(log) or log[o] != e:
            out.append(f"p{p}[{o}]={record(e)} (committed)")
    for p, v in s.ghost.acked:
        leader = s.zk.partitions[p].leader
        log = s.brokers[leader].replicas[p].log if leader != NO_LEADER else ()
        if all(e.value != v for e in log):
            out.append(f"p{p}:{value_text(v)} (acknowledged)")
    return out


def section(run: ModelRun, ident: str) -> Section:
    states = run.replay()
    d = diagram(run)
    snaps = [("initial state", snapshot(states[0]))]
    snaps += [(f"after step {i + 1}: {row.text}", snapshot(states[i + 1])) for i, row in enumerate(d.rows)]
    summary = [f"<p>{escape(run.config.describe())}</p>"]
    if run.note:
        summary.append(f"<p>{escape(run.note)}</p>")
    highlight: dict[int, set[tuple[str, str]]] = {}
    if run.property is not None:
        lost = lost_records(states[-1])
        also = "".join(f"<br>also <b>{escape(n)}</b>: {escape(msg)}" for n, msg in run.also)
        lost_html = (f'<br><span class="lost-records">records lost: {escape(", ".join(lost))}</span>' if lost else "")
        summary.append(f'<div class="verdict bad">violated: <b class="property">{escape(run.property)}</b> after step '
                       f"{len(run.steps)}: {escape(run.message or '')}{also}{lost_html}</div>")
        if lost:
            highlight[len(states) - 1] = {("history (no broker sees it)", "committed"),
                                          ("history (no broker sees it)", "acknowledged")}
    return Section(ident=ident, title=run.title or f"{run.config.name}: {len(run.steps)} steps",
                   summary="".join(summary), diagram=d, snapshots=snaps,
                   selected=len(run.steps) if run.property is not None else 0, highlight=highlight)
