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
    """Events of one run in the order they happened (a valid causal order)."""
    rnd = random.Random(seed)
    r = _Run(run, brokers)
    nodes = list(range(1, brokers + 1))
    epochs = {}
    for b in nodes:
        r.emit(b, "broker_restart", zk=True, params={"broker_epoch": r.zxid + 1})
    controller = nodes[0]
    c = r.emit(controller, "controller_elect", zk=True, params={"controller_epoch": 1})
    for p in range(partitions):
        t, isr, zkv = "t", list(nodes), 0
        leader = nodes[p % brokers]
        leo = dict.fromkeys(nodes, 0)
        hw = dict.fromkeys(nodes, 0)
        rounds = [(leader, 0)]
        if kill_leader:
            rounds.append((nodes[(p + 1) % brokers], 1))
        for round_no, (leader, epoch) in enumerate(rounds):
            if round_no:  # the previous leader is killed; the controller elects the next one
                dead = rounds[round_no - 1][0]
                h = r.emit(-1, "broker_crash", params={"broker": dead})
                isr = [b for b in isr if b != dead]
                zkv += 1
                c = r.emit(controller, "elect_leader", after=h, zk=True, topic=t, partition=p,
                           params={"leader": leader, "leader_epoch": epoch, "isr": isr, "zk_version": zkv,
                                   "controller_epoch": 1, "reason": "leader_failed", "unclean": False})
            else:
                c = r.emit(controller, "elect_leader", after=c, zk=True, topic=t, partition=p,
                           params={"leader": leader, "leader_epoch": epoch, "isr": isr, "zk_version": zkv,
                                   "controller_epoch": 1, "reason": "init", "unclean": False})
            epochs[p] = epoch
            lai = {"leader": leader, "leader_epoch": epoch, "isr": isr, "zk_version": zkv, "controller_epoch": 1}
            for b in isr:
                role = "leader" if b == leader else "follower"
                r.emit(b, f"become_{role}", after=c, topic=t, partition=p,
                       params={**lai, "truncated_to": None},
                       post={"role": role, "leader": leader, "leader_epoch": epoch, "hw": hw[b],
                             "leo": leo[b], "log_end_epoch": epoch if leo[b] else None})
            followers = [b for b in isr if b != leader]
            for _ in range(records):
                off = leo[leader]
                leo[leader] += 1
                r.emit(leader, "produce", topic=t, partition=p,
                       params={"offset": off, "value": f"v{rnd.randrange(10**6)}", "leader_epoch": epoch},
                       post={"hw": hw[leader], "leo": leo[leader]})
                for f in followers:
                    fetch = {"leader": leader, "fetch_offset": leo[f], "leader_epoch": epoch}
                    s = r.emit(f, "send_fetch", topic=t, partition=p, params=fetch,
                               post={"hw": hw[f], "leo": leo[f]})
                    recs = [[o, epoch, "v"] for o in range(leo[f], leo[leader])]
                    hw[leader] = min(leo[leader], *(leo[x] for x in followers if x != f), leo[f])
                    a = r.emit(leader, "handle_fetch", after=s, topic=t, partition=p,
                               params={"follower": f, "fetch_offset": leo[f], "leader_epoch": epoch,
                                       "records": recs, "leader_hw": hw[leader], "error": None},
                               post={"hw": hw[leader], "leo": leo[leader], "isr": isr})
                    leo[f] += len(recs)
                    hw[f] = min(hw[leader], leo[f])
                    r.emit(f, "receive_fetch", after=a, topic=t, partition=p,
                           params={**fetch, "records": recs, "leader_hw": hw[leader], "error": None},
                           post={"hw": hw[f], "leo": leo[f]})
    return r.events


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
