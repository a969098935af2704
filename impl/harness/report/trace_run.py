"""A recorded trace group -- one (run, topic, partition) in causal order, as the judge saw
it -- as a report section: drawn from the events' Lamport clocks (``traces/SCHEMA.md`` §4).

The trace records steps, not messages, so the arrows are the receipts the schema's order
already pairs with their sends: a ``become_leader``/``become_follower``/
``reject_leader_and_isr`` with the controller's write of the same ``zk_version`` (rule 3),
a ``handle_fetch`` with the follower's ``send_fetch`` at that offset, a ``receive_fetch``
with the leader's ``handle_fetch`` that answered it, a ``stop_replica`` with the
controller's step before it.  Every event that carries a ``zxid`` of its own node's write is
an arrow to the ZooKeeper lane; a fault's zxid (the end of the victim's session) a dashed
one.  Rows follow the causal order; the broker ids are the trace's own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from html import escape
from typing import Any

from conformance.judge.words import property_words
from impl.harness.report.diagram import Arrow, Diagram, Row
from impl.harness.report.model_run import GLYPH, is_controller_action
from impl.harness.report.page import Section, Snapshot
from model.registry import ACTIONS

Event = dict[str, Any]
HARNESS = -1
ZK_LANE, CONTROLLER_LANE = 0, 1

CONTROLLER_KINDS = frozenset(e.trace.kind for name, e in ACTIONS.items()
                             if e.trace is not None and is_controller_action(name))
"""Event kinds drawn on the controller lane: those of the controller's actions."""

LEADER_AND_ISR_RECEIPTS = ("become_leader", "become_follower", "reject_leader_and_isr")
TEXT_LIMIT = 120
WINDOW = 400
"""At most this many events of a group are drawn: the last ones up to its first divergence
(a page with a row and a state per event of a long run would not open)."""


@dataclass
class TraceGroup:
    """One judged group: its events in causal order and the judge's verdict (a row of
    ``conformance.spark.verdict.VERDICT_FIELDS``), if any."""

    run: str
    topic: str | None
    partition: int | None
    events: Sequence[Event]
    verdict: dict[str, Any] | None = None
    scenario: str = ""

    @property
    def name(self) -> str:
        where = "-" if self.topic is None else f"{self.topic}/{self.partition}"
        return f"{self.scenario or self.run} {where}"

    @property
    def first_bad(self) -> int | None:
        v = self.verdict or {}
        if v.get("status") == "conforms" or v.get("first_bad") is None:
            return None
        return int(v["first_bad"])


def _value(x: Any) -> str:
    return x if isinstance(x, str) else json.dumps(x, separators=(",", ":"))


def _brokers(events: Sequence[Event]) -> list[int]:
    ids = {e["node"] for e in events if e["node"] != HARNESS}
    ids |= {e["params"]["broker"] for e in events if e["node"] == HARNESS and isinstance(e["params"].get("broker"), int)}
    return sorted(ids)


def event_text(e: Event) -> str:
    who = "harness" if e["node"] == HARNESS else f"broker {e['node']}"
    params = ", ".join(f"{k}={_value(v)}" for k, v in sorted(e["params"].items()))
    text = f"c{e['clock']} {who}: {e['kind']}" + (f" ({params})" if params else "")
    return text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 1] + "…"


def diagram(group: TraceGroup, upto: int | None = None) -> Diagram:
    """Rows for the events up to ``upto`` (inclusive; all when None)."""
    events = list(group.events if upto is None else group.events[: upto + 1])
    brokers = _brokers(group.events)
    lane_names = ["ZooKeeper", "controller"] + [f"broker {b}" for b in brokers]
    harness_lane = None
    if any(e["node"] == HARNESS and not isinstance(e["params"].get("broker"), int) for e in events):
        harness_lane = len(lane_names)
        lane_names.append("harness")
    broker_lane = {b: 2 + i for i, b in enumerate(brokers)}

    def lane(e: Event) -> int:
        if e["node"] == HARNESS:
            b = e["params"].get("broker")
            return broker_lane[b] if isinstance(b, int) else harness_lane  # type: ignore[return-value]
        return CONTROLLER_LANE if e["kind"] in CONTROLLER_KINDS else broker_lane[e["node"]]

    rows: list[Row] = []
    arrows: list[Arrow] = []
    sends: list[int] = []  # rows of send_fetch not yet answered
    handled: list[int] = []  # rows of handle_fetch not yet received
    bad = group.first_bad
    for i, e in enumerate(events):
        is_bad = bad is not None and i == bad
        rows.append(Row(lane(e), event_text(e), GLYPH.get(e["kind"], "dot"), is_bad,
                        "✗ the model allows no such step here" if is_bad else ""))
        p = e["params"]
        src: int | None = None
        label = e["kind"]
        if e["kind"] in LEADER_AND_ISR_RECEIPTS:
            src = _latest(events, i, lambda x, p=p: x["kind"] in CONTROLLER_KINDS and x.get("zxid") is not None
                          and x["params"].get("zk_version") == p.get("zk_version")
                          and x["params"].get("leader_epoch", p.get("leader_epoch")) == p.get("leader_epoch"))
            if src is None:
                src = _latest(events, i, lambda x: x["kind"] in CONTROLLER_KINDS)
            label = f"LeaderAndISR: leader {p.get('leader')} epoch {p.get('leader_epoch')} ISR {_value(p.get('isr'))}"
        elif e["kind"] == "stop_replica":
            src = _latest(events, i, lambda x: x["kind"] in CONTROLLER_KINDS)
            label = "StopReplica"
        elif e["kind"] == "handle_fetch":
            src = next((r for r in reversed(sends) if events[r]["node"] == p.get("follower")
                        and events[r]["params"].get("fetch_offset") == p.get("fetch_offset")), None)
            if src is not None:
                sends.remove(src)
            label = f"fetch offset {p.get('fetch_offset')}"
        elif e["kind"] == "receive_fetch":
            src = next((r for r in reversed(handled) if events[r]["node"] == p.get("leader")
                        and events[r]["params"].get("follower") == e["node"]
                        and events[r]["params"].get("fetch_offset") == p.get("fetch_offset")), None)
            if src is not None:
                handled.remove(src)
            label = f"fetch response {_value(p.get('records', []))} hw={p.get('leader_hw')}"
        if src is not None:
            arrows.append(Arrow("message", label, src, rows[src].lane, i, rows[i].lane))
        if e["kind"] == "send_fetch":
            sends.append(i)
        elif e["kind"] == "handle_fetch":
            handled.append(i)
        if e.get("zxid") is not None:
            kind = "session" if e["node"] == HARNESS else "zk"
            arrows.append(Arrow(kind, f"zxid {e['zxid']}", i, rows[i].lane, i, ZK_LANE))
    for r in sends:
        leader = events[r]["params"].get("leader")
        if leader in broker_lane:
            arrows.append(Arrow("message", f"fetch offset {events[r]['params'].get('fetch_offset')}", r,
                                rows[r].lane, None, broker_lane[leader]))
    return Diagram(lane_names, rows, arrows)


def _latest(events: Sequence[Event], i: int, match) -> int | None:
    return next((j for j in range(i - 1, -1, -1) if match(events[j])), None)


STATUS_AFTER = {"broker_crash": "crashed", "broker_pause": "paused", "broker_resume": "up",
                "broker_restart": "up", "broker_stop": "stopped", "broker_expire": "up, unregistered",
                "broker_reregister": "up"}


def snapshots(events: Sequence[Event]) -> list[Snapshot]:
    """What the trace has shown so far, after each event: every node's last observed
    post-state (the trace's own broker ids), its liveness, and ZooKeeper's writes."""
    state: Snapshot = {}
    out = [dict(state)]
    for e in events:
        p = e["params"]
        if e["node"] == HARNESS:
            b = p.get("broker")
            if isinstance(b, int) and e["kind"] in STATUS_AFTER:
                state[(f"broker {b}", "status")] = STATUS_AFTER[e["kind"]]
        else:
            part = f"broker {e['node']}"
            state.setdefault((part, "status"), "up")
            if e["kind"] in STATUS_AFTER:
                state[(part, "status")] = STATUS_AFTER[e["kind"]]
            for k, v in sorted((e.get("post") or {}).items()):
                state[(part, k)] = _value(v)
        if e.get("zxid") is not None:
            state[("ZooKeeper", "last zxid")] = str(e["zxid"])
        if e["kind"] == "controller_elect":
            state[("ZooKeeper", "/controller")] = f"{e['node']} (epoch {p.get('controller_epoch')})"
        if e["kind"] == "elect_leader" and e.get("partition") is not None:
            state[("ZooKeeper", f"{e['topic']}/{e['partition']} leaderAndISR")] = (
                f"leader {p.get('leader')} epoch {p.get('leader_epoch')} ISR {_value(p.get('isr'))} v{p.get('zk_version')}")
        out.append(dict(sorted(state.items(), key=lambda kv: (kv[0][0] != "ZooKeeper", kv[0]))))
    return out


def section(group: TraceGroup, ident: str) -> Section:
    """A non-conforming group is drawn up to its first divergence; a conforming one whole."""
    bad = group.first_bad
    d = diagram(group, upto=bad)
    events = list(group.events[: len(d.rows)])
    snaps = snapshots(events)
    start = max(0, len(d.rows) - WINDOW)
    texts = [row.text for row in d.rows]
    if start:  # draw the last WINDOW events only, numbered as in the group
        d = Diagram(d.lanes, d.rows[start:], [
            replace(a, src=a.src - start, dst=None if a.dst is None else a.dst - start)
            for a in d.arrows if a.src >= start], first_number=start + 1)
    named = [(f"after event {start}" if start else "before the first event", snaps[start])] + [
        (f"after event {i + 1}: {texts[i]}", snaps[i + 1]) for i in range(start, len(texts))]
    v = group.verdict or {}
    extra: dict[int, str] = {}
    if bad is not None:
        allowed = "".join(f"<li><code>{escape(s)}</code></li>" for s in v.get("possible_states") or [])
        extra[bad + 1] = (f'<div class="verdict bad">{escape(v.get("reason") or "not conforming")}'
                          + (f"<br>the model allowed instead (states it could be in):<ul>{allowed}</ul>" if allowed else "")
                          + "</div>")
    summary = [f"<p>run <code>{escape(group.run)}</code>, {len(group.events)} events"
               + (f", drawn up to the first non-conforming one (event {bad + 1})" if bad is not None else "")
               + (f"; the first {start} are not drawn" if start else "") + "</p>"]
    status = v.get("status")
    if status == "violates":
        explained = ""
        if v.get("explained_by") and v["explained_by"] != v.get("config"):
            then = (f"breaks {v['explained_property']}" if v.get("explained_property") else "conforms")
            explained = f"<br>as a run of <b>{escape(v['explained_by'])}</b> it {escape(then)}"
        prop = f"<br>property violated: <b class=\"property\">{escape(property_words(v['property']))}</b>" if v.get("property") else ""
        summary.append(f'<div class="verdict bad">does not conform: matched {v.get("matched")} of {v.get("total")} '
                       f"events; {escape(v.get('reason') or '')}{prop}{explained}</div>")
    elif status == "conforms":
        summary.append('<div class="verdict good">conforms</div>')
    elif status == "error":
        summary.append(f'<div class="verdict unknown">judge error: {escape(v.get("reason") or "")}</div>')
    return Section(ident=ident, title=group.name, summary="".join(summary), diagram=d, snapshots=named,
                   selected=start if bad is None else bad + 1, extra=extra, first_state=start)
