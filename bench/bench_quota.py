"""Controller-mutation quota benchmark (seed 001, KIP-599): does a client creating topics as
fast as it can delay a concurrent broker failover's leader election, with and without the
quota?  Figures and ratios are measured side by side in one run.

    .venv/bin/python bench/bench_quota.py [--rounds 2] [--full]

Part 1 -- failover under creation load.  A 3-broker cluster (2 s ZooKeeper sessions) with a
topic of 12 partitions x RF 3; a non-controller broker that leads some of them is killed
(kill -9).  Measured from the moment its /brokers/ids znode disappears (the event the
controller reacts to) until every partition it led has a new leader in ZooKeeper:

  (i)   no creation load;
  (ii)  a client creating topics (10 per request, 2 partitions x RF 1: no replication load,
        so only the controller is loaded) as fast as it can;
  (iii) the same client under the quota: 5 mutations/s, burst 500 (100 samples of 1 s).

Part 2 -- seed 001's experiment scaled to this machine (``--full``: 5,000
topics x 4 partitions x RF 3 at 10 requests/s of 50 topics).  The default offers 10
requests/s of 4 topics x 4 partitions x RF 3 for 8 s.  A broker is killed so that its
session ends as the load stops; measured: how long after the last request the controller
has finished creating every admitted topic (its event queue drained, from the controller's
``topic_created`` trace events) and the queueing delay of the broker-failure event (from
the znode's disappearance to the controller's first ``broker_change`` leader election).
Without and with the quota (5/s, burst 500).  Rejected topics are not retried: the offered
load is fixed, as in the seed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from impl.harness.cluster import LocalCluster
from impl.node import zk as zkl
from impl.node.client import Admin
from impl.node.layout import DataDir
from impl.node.wire import ErrorCode

FAST = {"zk_session_timeout_s": 2.0, "replica_lag_time_ms": 1500, "fetch_max_wait_ms": 100,
        "reassign_interval_s": 0.3, "controller_request_timeout_s": 2.0}
QUOTA_RATE, QUOTA_SAMPLES = 5.0, 100  # burst = 5 x 100 x 1 s = 500 mutations
LOADER = "loader"


class Loader(threading.Thread):
    """Creates topics in requests of ``per_request``; ``rate_hz`` None = as fast as it can.
    No retry of throttled topics: the command line's behaviour, and a fixed offered load."""

    def __init__(self, bootstrap: str, prefix: str, per_request: int, partitions: int, rf: int,
                 rate_hz: float | None = None, total: int | None = None) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.prefix = bootstrap, prefix
        self.per_request, self.partitions, self.rf = per_request, partitions, rf
        self.rate_hz, self.total = rate_hz, total
        self.stop = threading.Event()
        self.requests = self.admitted_topics = self.throttled_topics = self.failed = 0
        self.admitted: list[str] = []
        self.last_request_end = 0.0

    def run(self) -> None:
        sent = 0
        t0 = time.monotonic()
        with Admin(self.bootstrap, user=LOADER, client_id="bench", api_timeout_s=10,
                   retry_on_quota_violation=False) as admin:
            while not self.stop.is_set() and (self.total is None or sent < self.total):
                n = self.per_request if self.total is None else min(self.per_request,
                                                                    self.total - sent)
                specs = [{"topic": f"{self.prefix}-{sent + j}", "partitions": self.partitions,
                          "replication_factor": self.rf} for j in range(n)]
                sent += n
                try:
                    results = admin.create_topics(specs)
                except Exception:  # noqa: BLE001 - a failover in progress: keep offering load
                    self.failed += n
                    results = {}
                self.requests += 1
                self.last_request_end = time.time()
                for t, r in results.items():
                    code = int(r.get("error", 0))
                    if code == ErrorCode.NONE:
                        self.admitted_topics += 1
                        self.admitted.append(t)
                    elif code == ErrorCode.THROTTLING_QUOTA_EXCEEDED:
                        self.throttled_topics += 1
                    else:
                        self.failed += 1
                if self.rate_hz:
                    next_at = t0 + self.requests / self.rate_hz
                    self.stop.wait(max(0.0, next_at - time.monotonic()))


def start_cluster(root: Path, name: str) -> LocalCluster:
    return LocalCluster(root / name, brokers=3, tick_time_ms=200,
                        controller_quota_window_num=QUOTA_SAMPLES, **FAST).start()


def controller_id(zk: Any) -> int:
    data, _ = zk.get(zkl.CONTROLLER)
    return int(json.loads(data)["brokerid"])


def leaders(zk: Any, keys: list[tuple[str, int]]) -> list[int]:
    asyncs = [zk.get_async(zkl.leader_and_isr_path(t, p)) for t, p in keys]
    return [zkl.LeaderAndIsr.from_json(a.get(timeout=10)[0]).leader for a in asyncs]


def kill_and_time_election(c: LocalCluster, zk: Any, victim: int,
                           keys: list[tuple[str, int]]) -> tuple[float, float]:
    """kill -9 ``victim``; (seconds until its znode is gone, seconds from then until every
    partition in ``keys`` it led has another leader in ZooKeeper)."""
    t_kill = time.monotonic()
    c.procs[victim].kill()
    t_gone = None
    deadline = t_kill + 120
    while time.monotonic() < deadline:
        now = time.monotonic()
        if t_gone is None:
            if zk.exists(zkl.broker_path(victim)) is None:
                t_gone = now
        elif all(b not in (victim, -1) for b in leaders(zk, keys)):
            return t_gone - t_kill, now - t_gone
        time.sleep(0.005)
    raise TimeoutError("no new leaders within 120 s")


def failover_round(root: Path, scenario: str, warmup_s: float,
                   precreate: int = 0) -> dict[str, Any]:
    c = start_cluster(root, f"p1-{scenario}-{time.monotonic_ns()}")
    try:
        zk = c.zk_client()
        with Admin(c.bootstrap) as admin:
            admin.create_topic("victim", partitions=12, replication_factor=3)
            if scenario == "quota":
                admin.alter_quota(LOADER, None, QUOTA_RATE)
        ctrl = controller_id(zk)
        if precreate:  # as many topics as the quota run admitted, created and digested first
            pre = Loader(c.bootstrap, "pre", per_request=50, partitions=2, rf=1, total=precreate)
            pre.start()
            pre.join(300)
            wait_created(c.data_dir, ctrl, set(pre.admitted))
        keys = [("victim", p) for p in range(12)]
        victim = next(b for b in sorted(c.configs) if b != ctrl)
        led = [k for k, b in zip(keys, leaders(zk, keys), strict=True) if b == victim]
        loader = None
        if scenario != "none":
            loader = Loader(c.bootstrap, "load", per_request=10, partitions=2, rf=1)
            loader.start()
            time.sleep(warmup_s)  # past the burst: the quota, if any, is biting
        session_end, election = kill_and_time_election(c, zk, victim, led)
        out: dict[str, Any] = {"election": election, "session_end": session_end, "led": len(led)}
        if loader is not None:
            loader.stop.set()
            loader.join(30)
            out.update(requests=loader.requests, admitted=loader.admitted_topics * 2,
                       throttled=loader.throttled_topics * 2)
        zk.stop()
        return out
    finally:
        c.stop()


def trace_events(data_dir: Path, node: int) -> list[dict[str, Any]]:
    path = DataDir(data_dir).trace(node)
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a torn last line
    return out


def wait_created(data_dir: Path, ctrl: int, topics: set[str], timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while True:
        created = {e["params"]["topic"] for e in trace_events(data_dir, ctrl)
                   if e["kind"] == "topic_created"}
        if topics <= created:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"the controller did not create the topics within {timeout:g} s")
        time.sleep(0.2)


def burst_round(root: Path, scenario: str, topics: int, per_request: int, rate_hz: float,
                partitions: int, rf: int) -> dict[str, Any]:
    c = start_cluster(root, f"p2-{scenario}-{time.monotonic_ns()}")
    try:
        zk = c.zk_client()
        if scenario == "quota":
            with Admin(c.bootstrap) as admin:
                admin.alter_quota(LOADER, None, QUOTA_RATE)
        ctrl = controller_id(zk)
        victim = next(b for b in sorted(c.configs) if b != ctrl)
        duration = topics / per_request / rate_hz
        loader = Loader(c.bootstrap, "burst", per_request, partitions, rf, rate_hz, topics)
        t_start = time.time()
        loader.start()
        # the victim's session ends (2 s after the kill) as the offered load stops
        time.sleep(max(0.0, duration - c.configs[victim].zk_session_timeout_s))
        c.procs[victim].kill()
        t_gone = None
        gone_by = time.monotonic() + 120
        while t_gone is None:
            if zk.exists(zkl.broker_path(victim)) is None:
                t_gone = time.time()
            elif time.monotonic() > gone_by:
                raise TimeoutError(f"broker {victim}'s session did not end within 120 s of the kill")
            time.sleep(0.005)
        loader.join(600)
        want = set(loader.admitted)
        deadline = time.monotonic() + 600
        while True:
            events = trace_events(c.data_dir, ctrl)
            created = {e["params"]["topic"]: e["ts"] for e in events
                       if e["kind"] == "topic_created" and e["params"]["topic"] in want}
            failover = [e["ts"] for e in events if e["kind"] == "elect_leader"
                        and e["params"].get("reason") == "broker_change" and e["ts"] >= t_gone]
            if len(created) == len(want) and failover:
                break
            if time.monotonic() > deadline:
                raise TimeoutError("the controller did not catch up within 600 s")
            time.sleep(0.5)
        zk.stop()
        last_created = max(created.values(), default=loader.last_request_end)
        return {"offered_topics": topics, "admitted_topics": len(want),
                "throttled_topics": loader.throttled_topics, "failed_topics": loader.failed,
                "load_s": loader.last_request_end - t_start,
                "drain_s": max(0.0, last_created - loader.last_request_end),
                "queue_delay_s": min(failover) - t_gone}
    finally:
        c.stop()


def _med(rows: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2, help="rounds of part 1 per scenario")
    ap.add_argument("--warmup", type=float, default=8.0,
                    help="seconds of creation load before the kill in part 1")
    ap.add_argument("--full", action="store_true",
                    help="part 2 at seed 001's scale: 5,000 topics x 4 x RF 3, 10 req/s of 50")
    ap.add_argument("--skip-part1", action="store_true")
    ap.add_argument("--skip-part2", action="store_true")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.warmup < 0:
        ap.error("--rounds must be at least 1 and --warmup not negative")
    with tempfile.TemporaryDirectory(prefix="epochal-bench-quota-") as d:
        root = Path(d)
        if not args.skip_part1:
            print("part 1: leader election after kill -9 of a broker, from its session end "
                  "to new leaders in ZooKeeper", flush=True)
            rows: dict[str, list[dict[str, Any]]] = {}
            scenarios = ("none", "unthrottled", "quota", "none-same-size")
            for i in range(args.rounds):
                for scenario in scenarios:
                    pre = 0
                    if scenario == "none-same-size":  # the quota run's extra topics, no load
                        pre = rows["quota"][-1]["admitted"] // 2
                    r = failover_round(root, scenario.split("-")[0], args.warmup, pre)
                    rows.setdefault(scenario, []).append(r)
                    load = "" if "none" in scenario else (
                        f"; load: {r['requests']} requests, {r['admitted']} mutations admitted, "
                        f"{r['throttled']} throttled")
                    size = f", {pre} topics created beforehand" if pre else ""
                    print(f"  round {i + 1} {scenario:15s} election {r['election'] * 1000:7.0f} ms "
                          f"({r['led']} partitions{size}){load}", flush=True)
            base = _med(rows["none"], "election")
            same = _med(rows["none-same-size"], "election")
            for scenario in scenarios:
                m = _med(rows[scenario], "election")
                print(f"  {scenario:15s} median election delay {m * 1000:7.0f} ms   "
                      f"x{m / base:.2f} of no load, x{m / same:.2f} of no load at the quota "
                      "run's size")
        if not args.skip_part2:
            if args.full:
                spec = dict(topics=5000, per_request=50, rate_hz=10.0, partitions=4, rf=3)
            else:
                spec = dict(topics=320, per_request=4, rate_hz=10.0, partitions=4, rf=3)
            print(f"part 2: {spec['topics']} topics x {spec['partitions']} partitions x RF "
                  f"{spec['rf']}, {spec['rate_hz']:g} requests/s of {spec['per_request']} topics",
                  flush=True)
            res = {}
            for scenario in ("unthrottled", "quota"):
                r = res[scenario] = burst_round(root, scenario, **spec)  # type: ignore[arg-type]
                print(f"  {scenario:12s} admitted {r['admitted_topics']:5d} topics "
                      f"(throttled {r['throttled_topics']}, refused after the kill "
                      f"{r['failed_topics']}) in "
                      f"{r['load_s']:.1f} s; queue drained {r['drain_s']:.2f} s after the last "
                      f"request; broker-failure event delayed {r['queue_delay_s'] * 1000:.0f} ms",
                      flush=True)
            u, q = res["unthrottled"], res["quota"]
            print(f"  quota / unthrottled: drain x{(q['drain_s'] + 1e-3) / (u['drain_s'] + 1e-3):.2f}, "
                  f"broker-failure delay x{q['queue_delay_s'] / u['queue_delay_s']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
