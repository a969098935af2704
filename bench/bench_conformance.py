"""Benchmark: events judged per second by the conformance job, beside a plain Spark read.

    .venv/bin/python bench/bench_conformance.py [--sizes 250000 1000000] [--judge MODULE:FUNC]

For each corpus size it generates (once, cached under --corpus-dir) many small runs written
as the recorder writes them (one JSON Lines file per node per run), then times, in the same
Spark session (local[2] by default):

* **read**: a plain Spark read of the same files with the explicit schema in PERMISSIVE mode,
  counting the rows that parsed -- the floor any Spark job over these files pays;
* **job**: the whole conformance job (read, validate, causal order, split, judge, aggregate).

It prints events/s, events/s per core and the job/read time ratio for each size; two sizes
show whether the cost grows linearly.  The judge is ``model.replay:judge`` when it is
installed, else the small real judge below (HW <= LEO, leader epochs never go back), so the
plumbing can be measured on its own; the judge used is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from traces.synthetic import generate_run


def plumbing_judge(events: list[dict[str, Any]], config: str = "kip320") -> dict[str, Any]:
    """A cheap but real check, used when the model's judge is not installed."""
    epochs: dict[int, int] = {}
    for i, e in enumerate(events):
        post = e["post"]
        bad = ("hw" in post and post["hw"] > post.get("leo", post["hw"])) or (
            post.get("leader_epoch", 1 << 62) < epochs.get(e["node"], -1))
        if bad:
            return {"conforms": False, "matched": i, "total": len(events), "first_bad": i,
                    "reason": "hw above leo or epoch went back", "property": None,
                    "possible_states": [], "bound": 0}
        if "leader_epoch" in post:
            epochs[e["node"]] = post["leader_epoch"]
    return {"conforms": True, "matched": len(events), "total": len(events), "first_bad": None,
            "reason": None, "property": None, "possible_states": [], "bound": 0}


def replicate(directory: Path, events: int, source: Path) -> int:
    """Copies of recorded runs under ``source`` with fresh run ids until ``events`` exist."""
    from traces.reader import read_traces

    runs: dict[str, list[dict[str, Any]]] = {}
    for e in read_traces([source]).events:
        runs.setdefault(e["run"], []).append(e)
    if not runs:
        raise SystemExit(f"no valid events under {source}")
    total, i = 0, 0
    while total < events:
        for run, evs in runs.items():
            new = f"{run}-{i:06d}"
            by_file: dict[str, list[str]] = {}
            for e in evs:
                body = {k: v for k, v in e.items() if not k.startswith("_")}
                body["run"] = new
                by_file.setdefault(Path(e["_file"]).name, []).append(json.dumps(body, separators=(",", ":")))
            sub = directory / f"{i // 100:04d}" / new
            sub.mkdir(parents=True, exist_ok=True)
            for name, lines in by_file.items():
                (sub / name).write_text("\n".join(lines) + "\n")
            total += len(evs)
            i += 1
            if total >= events:
                break
    return total


def make_corpus(directory: Path, events: int, source: Path | None = None) -> int:
    """Write runs until ``events`` events exist; returns the exact count (cached by a marker)."""
    marker = directory / "_EVENTS"
    if marker.exists():
        return int(marker.read_text())
    directory.mkdir(parents=True, exist_ok=True)
    if source is not None:
        total = replicate(directory, events, source)
        marker.write_text(str(total))
        return total
    total, i = 0, 0
    while total < events:
        run = generate_run(f"bench-{i:07d}", partitions=3, records=8, kill_leader=i % 3 == 0, seed=i)
        by_node: dict[int, list[str]] = {}
        for e in run:
            by_node.setdefault(e["node"], []).append(json.dumps(e, separators=(",", ":")))
        sub = directory / f"{i // 1000:04d}"
        sub.mkdir(exist_ok=True)
        for node, lines in by_node.items():
            (sub / f"bench-{i:07d}.{node}.jsonl").write_text("\n".join(lines) + "\n")
        total += len(run)
        i += 1
    marker.write_text(str(total))
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[250_000, 1_000_000])
    ap.add_argument("--corpus-dir", default="/tmp/epochal-bench")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--judge", default=None, help="MODULE:FUNC (default model.replay:judge if installed)")
    ap.add_argument("--source", type=Path, default=None,
                    help="replicate the recorded runs under this directory instead of synthetic runs")
    args = ap.parse_args(argv)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from conformance.job import JOB_SQL_CONF, conform, spark_session
    from traces.schema import spark_schema

    judge: Any = args.judge
    if judge is None:
        try:
            import model.replay  # noqa: F401

            judge = "model.replay:judge"
        except ImportError:
            judge = plumbing_judge  # defined in __main__: cloudpickle ships it by value
    judge_name = judge if isinstance(judge, str) else "bench plumbing_judge (model.replay not installed)"

    corpora = []
    for size in args.sizes:
        t = time.perf_counter()
        d = Path(args.corpus_dir) / (f"{size}-recorded" if args.source else str(size))
        n = make_corpus(d, size, args.source)
        files = sum(1 for _ in d.rglob("*.jsonl"))  # noqa: C416
        print(f"corpus {d}: {n} events in {files} files ({time.perf_counter() - t:.1f}s to prepare)", flush=True)
        corpora.append((size, d, n, files))

    t = time.perf_counter()
    spark = spark_session(args.master, app="epochal-bench")
    cores = spark.sparkContext.defaultParallelism
    print(f"Spark session {args.master} ({cores} cores) started in {time.perf_counter() - t:.1f}s; judge: {judge_name}", flush=True)
    rows = []
    try:
        def read_count(path: str) -> tuple[int, float]:
            """The baseline: Spark's own JSON reader, explicit schema, same listing and packing."""
            t = time.perf_counter()
            for key, value in JOB_SQL_CONF.items():
                spark.conf.set(key, value)
            df = (spark.read.schema(spark_schema()).option("mode", "PERMISSIVE")
                  .option("recursiveFileLookup", "true").json(path))
            count = df.filter("run is not null").count()  # forces every line to be parsed
            return count, time.perf_counter() - t

        # warm-up: JVM JIT and Python worker start, not counted
        read_count(str(corpora[0][1] / "0000"))
        conform([str(corpora[0][1] / "0000")], spark=spark, judge=judge, log=lambda m: None, keep_verdicts=0)
        for size, d, n, files in corpora:
            parsed, read_s = read_count(str(d))
            assert parsed == n, (parsed, n)
            t = time.perf_counter()
            outcome = conform([str(d)], spark=spark, judge=judge, log=lambda m: None, keep_verdicts=0)
            job_s = time.perf_counter() - t
            assert outcome.events == n
            rows.append((size, n, files, read_s, job_s, outcome))
            print(f"  {n} events: read {read_s:.1f}s, job {job_s:.1f}s "
                  f"({outcome.groups} groups, {outcome.conforming} conform; stages {outcome.seconds})", flush=True)
    finally:
        spark.stop()

    print()
    print(f"{'events':>10} {'files':>7} {'read s':>7} {'read ev/s':>10} {'job s':>7} {'job ev/s':>10} "
          f"{'job ev/s/core':>13} {'job/read':>8}")
    for _size, n, files, read_s, job_s, _ in rows:
        print(f"{n:>10} {files:>7} {read_s:>7.1f} {n / read_s:>10.0f} {job_s:>7.1f} {n / job_s:>10.0f} "
              f"{n / job_s / cores:>13.0f} {job_s / read_s:>8.1f}")
    if len(rows) >= 2:
        (_, n1, _, r1, j1, _), (_, n2, _, r2, j2, _) = rows[0], rows[-1]
        print(f"growth {n2 / n1:.1f}x events: read time x{r2 / r1:.2f}, job time x{j2 / j1:.2f} "
              f"(linear would be x{n2 / n1:.2f})")
    print(f"target: 50000 events/s per core; judge: {judge_name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
