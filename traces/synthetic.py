"""Protocol-shaped synthetic traces, for benchmarks and tests of the trace plumbing.

A small deterministic simulation of a 3-broker run: brokers register, one becomes
controller, leaders are elected per partition, the brokers apply LeaderAndIsr, the leader
appends records and followers fetch them (the leader advancing the high watermark to the
minimum LEO of the ISR), and optionally the leader of every partition is killed and a new
leader elected.  Lamport clocks are carried on every simulated message and zxids increase
with every simulated ZooKeeper write, so the events obey every ordering rule of SCHEMA.md §4.

These traces are *not* evidence about the implementation (``traces/data/`` holds recorded
ones); they exist so the reader, the Spark job and the benchmark can be exercised at any
size without running a cluster.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

from traces import SCHEMA_ID


class _Run:
    def __init__(self, run: str, brokers: int) -> None:
        self.run = run
        self.seq = {n: 0 for n in [-1, *range(1, brokers + 1)]}
        self.clock = dict.fromkeys(self.seq, 0)
        self.zxid = 0x100000000
        self.events: list[dict[str, Any]] = []

    def emit(self, node: int, kind: str, *, after: int | None = None, zk: bool = False,
             topic: str | None = None, partition: int | None = None,
             params: dict[str, Any] | None = None, post: dict[str, Any] | None = None) -> int:
        """Record one event; ``after`` is the clock of the message that caused it."""
        if after is not None:
            self.clock[node] = max(self.clock[node], after)
        self.clock[node] += 1
        zxid = None
        if zk:
            self.zxid += 1
            zxid = self.zxid
        self.events.append({
            "schema": SCHEMA_ID, "run": self.run, "node": node, "seq": self.seq[node],
            "clock": self.clock[node], "zxid": zxid, "kind": kind, "topic": topic,
            "partition": partition, "params": params or {}, "post": post or {},
            "ts": 1.7e9 + len(self.events) / 1000,
        })
        self.seq[node] += 1
        return self.clock[node]


def generate_run(run: str, *, partitions: int = 2, records: int = 5, brokers: int = 3,
                 kill_leader: bool = False, seed: int = 0) -> list[dict[str, Any]]:
    """Events of one run in the order they happened (a valid causal order).

    Every partition is created with all brokers in its ISR and gets ``records`` appends,
    each replicated to every follower.  With ``kill_leader`` the last broker (never the
    controller) is then killed; each partition it led gets a new leader, which appends
    ``records`` more.
    """
    rnd = random.Random(seed)
    r = _Run(run, brokers)
    nodes = list(range(1, brokers + 1))
    controller = nodes[0]
    for b in nodes:
        r.emit(b, "broker_restart", zk=True, params={"broker_epoch": r.zxid + 1})
    c = r.emit(controller, "controller_elect", zk=True, params={"controller_epoch": 1})
    t = "t"
    state = {}
    for p in range(partitions):
        st = state[p] = {"leader": nodes[p % brokers], "epoch": 0, "isr": list(nodes), "zkv": 0,
                         "log": [], "leo": dict.fromkeys(nodes, 0), "hw": dict.fromkeys(nodes, 0)}
        c = _elect(r, controller, c, t, p, st, "init")
    for p in range(partitions):
        _replicate(r, rnd, t, p, state[p], records)
    if kill_leader:
        victim = nodes[-1]
        # the harness kills after it has seen the appends acknowledged: it happens after them
        h = r.emit(-1, "broker_crash", after=max(r.clock.values()), params={"broker": victim})
        for p in range(partitions):
            st = state[p]
            if st["leader"] != victim:
                continue
            st["isr"] = [b for b in st["isr"] if b != victim]
            st["leader"], st["epoch"], st["zkv"] = st["isr"][0], st["epoch"] + 1, st["zkv"] + 1
            st["known"] = {}
            h = _elect(r, controller, h, t, p, st, "leader_failed")
            _replicate(r, rnd, t, p, st, records)
    return r.events


def _elect(r: _Run, controller: int, after: int, t: str, p: int, st: dict[str, Any], reason: str) -> int:
    """The controller's election and every ISR member applying the LeaderAndIsr request."""
    leader, epoch, isr = st["leader"], st["epoch"], st["isr"]
    c = r.emit(controller, "elect_leader", after=after, zk=True, topic=t, partition=p,
               params={"leader": leader, "leader_epoch": epoch, "isr": isr, "zk_version": st["zkv"],
                       "controller_epoch": 1, "reason": reason, "unclean": False})
    lai = {"leader": leader, "leader_epoch": epoch, "isr": isr, "zk_version": st["zkv"], "controller_epoch": 1}
    for b in isr:
        role = "leader" if b == leader else "follower"
        leo = st["leo"][b]
        r.emit(b, f"become_{role}", after=c, topic=t, partition=p, params={**lai, "truncated_to": None},
               post={"role": role, "leader": leader, "leader_epoch": epoch, "hw": st["hw"][b], "leo": leo,
                     "log_end_epoch": st["log"][leo - 1][1] if leo else None})
        if role == "follower" and epoch > 0 and leo:
            # KIP-101/279/320: a follower of a new leader looks up its log end epoch first
            r.emit(b, "truncate", topic=t, partition=p,
                   params={"leader": leader, "truncated_to": min(leo, st["leo"][leader])})
    return c


def _replicate(r: _Run, rnd: random.Random, t: str, p: int, st: dict[str, Any], records: int) -> None:
    """``records`` appends by the leader, each fetched by every follower in the ISR."""
    leader, epoch, leo, hw, log = st["leader"], st["epoch"], st["leo"], st["hw"], st["log"]
    followers = [b for b in st["isr"] if b != leader]
    for _ in range(records):
        off = leo[leader]
        value = f"v{rnd.randrange(10**6)}"
        log.append((off, epoch, value))
        leo[leader] += 1
        if not followers:
            hw[leader] = leo[leader]
        r.emit(leader, "produce", topic=t, partition=p,
               params={"offset": off, "value": value, "leader_epoch": epoch},
               post={"hw": hw[leader], "leo": leo[leader]})
        for f in followers:
            fetch = {"leader": leader, "fetch_offset": leo[f], "leader_epoch": epoch}
            s = r.emit(f, "send_fetch", topic=t, partition=p, params=fetch, post={"hw": hw[f], "leo": leo[f]})
            recs = [list(x) for x in log[leo[f]:leo[leader]]]
            # the leader learns a follower's LEO from its fetch offset: HW trails by a round
            known = st.setdefault("known", {})
            known[f] = leo[f]
            hw[leader] = max(hw[leader], min([leo[leader], *(known.get(x, 0) for x in followers)]))
            a = r.emit(leader, "handle_fetch", after=s, topic=t, partition=p,
                       params={"follower": f, "fetch_offset": leo[f], "leader_epoch": epoch,
                               "records": recs, "leader_hw": hw[leader], "error": None},
                       post={"hw": hw[leader], "leo": leo[leader], "isr": st["isr"]})
            leo[f] += len(recs)
            hw[f] = min(hw[leader], leo[f])
            r.emit(f, "receive_fetch", after=a, topic=t, partition=p,
                   params={**fetch, "records": recs, "leader_hw": hw[leader], "error": None},
                   post={"hw": hw[f], "leo": leo[f]})


def write_run(events: list[dict[str, Any]], directory: str | Path) -> list[Path]:
    """Write one run as the recorder would: ``<directory>/<run>/<node>.jsonl``."""
    paths = []
    by_node: dict[int, list[str]] = {}
    for e in events:
        by_node.setdefault(e["node"], []).append(json.dumps(e, separators=(",", ":"), sort_keys=True))
    for node, lines in by_node.items():
        path = Path(directory) / events[0]["run"] / f"{node}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths
