"""Record and judge real Apache Kafka beside Epochal's own brokers, one scenario at a time.

    python bench/bench_kafka_record.py                                  # both scenarios, both profiles
    python bench/bench_kafka_record.py --scenarios leader-kill --profiles 3.9

For each scenario (a kill -9 of the leader, or of the controller, three values written before
and three after, the victim restarted and back in the ISR) this measures, in one run:

* **real Kafka** at each profile (``impl.harness.kafka.scenarios.run_scenario``: a fresh
  three-broker cluster behind relays on an embedded ZooKeeper, jars from the cache that
  ``epochal kafka fetch`` fills): the cluster's start alone (started and stopped once per
  profile), the scenario's wall time, the adapter's time turning the logs into a trace
  (``conformance.kafka.adapter``), events, and the judge's time per event by the profile's
  configuration (``kafka26`` / ``kafka39``) with the job's default judge;
* **Epochal's brokers** on the same scenario (``epochal record-traces --scenario``), judged by
  ``kip320``, the configuration their traces are judged by.

"events per second recorded" is the trace's events over the scenario's wall time (start
included); the judge's figure is CPU time per event.  Not a timed test: the figures are in
docs/kafka.md ("Measured here").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from conformance.judge.replay import judge_default
from conformance.kafka.adapter import adapt, model_config, to_records, write_trace
from conformance.spark.order import causal_order, split_groups
from impl.harness.kafka import KafkaCluster
from impl.harness.kafka.fetch import fetch
from impl.harness.kafka.scenarios import run_scenario
from traces.reader import read_traces

PROG = "bench_kafka_record"
SCENARIOS = ("leader-kill", "controller-failover")
PROFILES = ("ibp-2.6", "3.9")
EPOCHAL = Path(sys.executable).with_name("epochal")


def judged(trace_dir: Path, config: str) -> dict[str, Any]:
    """Every (run, topic, partition) group of the trace judged by ``config``: events, CPU
    seconds, and whether each group conforms."""
    events = read_traces([trace_dir]).events
    groups = []
    for run in sorted({e["run"] for e in events}):
        ordered, _ = causal_order([e for e in events if e["run"] == run])
        groups += list(split_groups(ordered).values())
    t0 = time.process_time()
    verdicts = [judge_default(g, config) for g in groups]
    cpu = time.process_time() - t0
    n = sum(len(g) for g in groups)
    return {"events": n, "groups": len(groups), "conforming": sum(v["conforms"] for v in verdicts),
            "judge_cpu_s": round(cpu, 3), "judge_us_per_event": round(cpu / max(n, 1) * 1e6, 1)}


def kafka_start(jars: Any, work: Path, profile: str) -> float:
    cluster = KafkaCluster(work / f"start-{profile}", brokers=3, profile=profile, jars=jars, relay=True)
    t0 = time.monotonic()
    cluster.start()
    took = time.monotonic() - t0
    cluster.stop()
    return took


def kafka_row(jars: Any, work: Path, scenario: str, profile: str) -> dict[str, Any]:
    run_dir = work / f"kafka-{scenario}-{profile}" / "_kafka-run"
    t0 = time.monotonic()
    run_scenario(scenario, run_dir, profile, jars=jars)
    wall = time.monotonic() - t0
    t1 = time.process_time()
    records = to_records(adapt(run_dir), f"kafka-{scenario}-{profile}")
    adapt_cpu = time.process_time() - t1
    write_trace(records, run_dir.parent)
    row = {"engine": f"kafka {profile}", "scenario": scenario, "scenario_s": round(wall, 1),
           "adapt_cpu_s": round(adapt_cpu, 2), **judged(run_dir.parent, model_config(run_dir))}
    row["recorded_events_per_s"] = round(row["events"] / wall, 1)
    return row


def epochal_row(work: Path, scenario: str) -> dict[str, Any]:
    out = work / f"epochal-{scenario}"
    t0 = time.monotonic()
    subprocess.run([str(EPOCHAL), "record-traces", "--scenario", scenario, "--out", str(out)],
                   check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    row = {"engine": "epochal", "scenario": scenario, "scenario_s": round(wall, 1), "adapt_cpu_s": 0.0,
           **judged(out, "kip320")}
    row["recorded_events_per_s"] = round(row["events"] / wall, 1)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--profiles", default=",".join(PROFILES))
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = parser.parse_args(argv)
    scenarios = [s for s in args.scenarios.split(",") if s]
    profiles = [p for p in args.profiles.split(",") if p]
    bad = [s for s in scenarios if s not in SCENARIOS] + [p for p in profiles if p not in PROFILES]
    if bad:
        print(f"{PROG}: unknown {', '.join(bad)} (scenarios: {', '.join(SCENARIOS)}; profiles: "
              f"{', '.join(PROFILES)})", file=sys.stderr)
        return 2
    jars = fetch()
    rows: list[dict[str, Any]] = []
    starts: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-kafka-record-") as tmp:
        work = Path(tmp)
        for profile in profiles:
            starts[profile] = round(kafka_start(jars, work, profile), 1)
            print(f"kafka {profile}: 3 brokers started in {starts[profile]} s", file=sys.stderr)
        for scenario in scenarios:
            for profile in profiles:
                rows.append(kafka_row(jars, work, scenario, profile))
                print(f"  {rows[-1]}", file=sys.stderr)
            rows.append(epochal_row(work, scenario))
            print(f"  {rows[-1]}", file=sys.stderr)
    if args.json:
        print(json.dumps({"load": os.getloadavg()[0], "kafka_start_s": starts, "rows": rows}))
        return 0
    print(f"load {os.getloadavg()[0]:.1f}; Kafka cluster start: "
          + ", ".join(f"{p} {s} s" for p, s in starts.items()))
    print("| engine | scenario | scenario s | events | recorded ev/s | adapter CPU s | judge µs/event | groups conforming |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['engine']} | {r['scenario']} | {r['scenario_s']} | {r['events']} | {r['recorded_events_per_s']} "
              f"| {r['adapt_cpu_s']} | {r['judge_us_per_event']} | {r['conforming']}/{r['groups']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
