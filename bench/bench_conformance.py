"""Benchmark: events judged per second by the conformance job, beside a plain Spark read.

    .venv/bin/python bench/bench_conformance.py [--sizes 250000 1000000] [--judge MODULE:FUNC]

For each corpus size it generates (once, cached under --corpus-dir) many small runs written
as the recorder writes them (one JSON Lines file per node per run), then times, in the same
Spark session (local[2] by default):

* **read**: a plain Spark read of the same files with the explicit schema in PERMISSIVE mode,
  counting the rows that parsed -- the floor any Spark job over these files pays;
* **job**: the whole conformance job (read, validate, causal order, split, judge, aggregate).

It prints events/s, events/s per core and the job/read time ratio for each size; two sizes
show whether the cost grows linearly.  The judge is the job's own default,
``conformance.judge.diagnose:judge`` (runs of events in C where there is a C compiler, see
``conformance.judge.replay``'s ``compiled=None``) when it is installed, else the small real
judge below (HW <= LEO, leader epochs never go back), so the plumbing can be measured on its
own; the judge used is printed.

The synthetic runs are not copies: each has its own seed (its own record values), and a
shape.  ``conformance.judge.replay.judge`` remembers steps it has matched (an exact memo, see
``conformance/judge/replay.py``); runs of one shape replay the same model steps whatever their
values.  ``--shapes 36`` is the corpus the figures were first taken on: partitions (1-4),
records per leader (4-12), a leader killed or not (36 shapes), on which the memo answers
nearly every event.  ``--shapes fresh`` (the default) draws each run's brokers (3-4: the generator kills a leader only with a follower to spare),
partitions (1-4), records per leader (2-20) and kill from its seed (304 shapes), so steps
repeat far less.  The benchmark says how much: it judges a sample in-process with and
without the memo, with the Python step and the compiled one (hit rate, microseconds per
event) and, with ``--unmemoized`` (default on), also times the job on the smallest corpus
with ``OTHER_JUDGES`` of ``conformance.judge.replay``: the Python judge with its memo and
without, and the compiled judge, which searches runs of events over C states
(``conformance/judge/compiled_batch.py``, ``properties/checkers/native/judge.c``) and keeps
no memo (its hit rate is 0).  For the compiled judge the sample also says which share of its
events the C judged and which kinds it left to the Python search (``replay.IN_PYTHON``).

``--source DIR`` replicates the recorded runs under DIR (``traces/data/recorded``) instead,
each copy under a fresh run id in a directory of its own: real traces -- longer runs, with
controlled shutdowns, re-created topics, kills -- but the same steps again in every copy, so
the Python judge's memo answers all but the first copy of each.
"""

from __future__ import annotations

import argparse
import json
import os
import random
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


def cpu_seconds() -> float:
    """CPU time (user + system) used so far by this process and every process below it --
    the Spark JVM and its Python workers, alive or reaped.  On a machine shared with other
    work, wall-clock events/s per core says as much about the neighbours as about the job;
    events per CPU-second does not (Linux /proc only; 0 elsewhere)."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    stats: dict[int, tuple[int, float]] = {}
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # after "(comm)": state ppid ... utime(12) stime(13) cutime(14) cstime(15)
        stats[int(entry)] = (int(fields[1]), sum(int(x) for x in fields[11:15]) / tick)
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0.0, [os.getpid()]
    while todo:
        pid = todo.pop()
        total += stats.get(pid, (0, 0.0))[1]
        todo.extend(children.get(pid, ()))
    return total


def run_shape(i: int) -> dict[str, Any]:
    """Synthetic run i: seed i, and one of 36 shapes."""
    return {"partitions": 1 + i % 4, "records": 4 + (7 * i) % 9, "kill_leader": i % 3 == 0, "seed": i}


def fresh_shape(i: int) -> dict[str, Any]:
    """Synthetic run i: seed i, and a shape drawn from it (304 shapes)."""
    rnd = random.Random(i)
    return {"brokers": rnd.randint(3, 4), "partitions": rnd.randint(1, 4), "records": rnd.randint(2, 20),
            "kill_leader": rnd.random() < 0.5, "seed": i}


SHAPES = {"36": run_shape, "fresh": fresh_shape}

JUDGES = {"memo": "judge", "no memo": "judge_unmemoized", "compiled, memo": "judge_compiled",
          "compiled, no memo": "judge_compiled_unmemoized"}
"""The judges timed alone: row name -> function of ``conformance.judge.replay``."""

DEFAULT_JUDGE = "conformance.judge.diagnose:judge"
"""The job's default judge (``conformance.spark.verdict.default_judge``), named."""

OTHER_JUDGES = ("judge", "judge_unmemoized", "judge_compiled_unmemoized")
"""Judges of ``conformance.judge.replay`` the job is also timed with, on the smallest corpus:
the Python judge with its memo and without, and the compiled one named as such."""


def judge_alone(directory: Path, runs: int) -> dict[str, Any]:
    """The judge without Spark, on the first ``runs`` runs of a corpus: CPU microseconds per
    event of each of ``JUDGES`` (each memo cold), the memo's hit rates, and of the events the
    compiled judge took, the share judged in C and the kinds most often left to Python
    (``replay.IN_PYTHON``).  CPU time, not wall time: on a shared machine the neighbours'
    load does not count."""
    from conformance.judge import replay
    from conformance.spark.order import causal_order, split_groups
    from traces.reader import read_traces

    by_name: dict[str, list[Path]] = {}
    for f in sorted(directory.rglob("*.jsonl")):
        # bench-NNNNNNN.NODE.jsonl; a replicated recorded run's files are a directory's
        by_name.setdefault(f.name.split(".")[0] if f.name.startswith("bench-") else str(f.parent), []).append(f)
    files = [f for name in sorted(by_name)[:runs] for f in by_name[name]]
    by_run: dict[str, list[dict[str, Any]]] = {}
    for e in read_traces(files).events:
        by_run.setdefault(e["run"], []).append(e)
    groups = []
    for evs in by_run.values():
        ordered, _ = causal_order(evs)
        groups.extend(split_groups(ordered).values())
    n = sum(len(g) for g in groups)
    out: dict[str, Any] = {"events": n, "runs": len(by_run)}
    for name, fn_name in JUDGES.items():
        fn = getattr(replay, fn_name)
        replay.Memo.forget_all()
        hits0, misses0 = replay.MEMO_STATS["hits"], replay.MEMO_STATS["misses"]
        taken = replay.IN_PYTHON.copy()
        t = time.process_time()
        assert all(fn(g, "kip320")["conforms"] for g in groups)
        out[f"{name} us/event"] = (time.process_time() - t) / n * 1e6
        if name == "compiled, no memo":  # the job's default judge's path (runs of events in C)
            took = replay.IN_PYTHON - taken
            in_c = took.pop("in C", 0)
            out["in C"] = in_c / max(1, in_c + sum(took.values()))
            out["in Python"] = ", ".join(f"{kind} {k}" for kind, k in took.most_common(6))
        if "no memo" not in name:
            hits = replay.MEMO_STATS["hits"] - hits0
            misses = replay.MEMO_STATS["misses"] - misses0
            out[f"{name} hit rate"] = hits / max(1, hits + misses)
    return out


def make_corpus(directory: Path, events: int, source: Path | None = None, shapes: str = "fresh") -> int:
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
        run = generate_run(f"bench-{i:07d}", **SHAPES[shapes](i))
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
    ap.add_argument("--judge", default=None, help=f"MODULE:FUNC (default {DEFAULT_JUDGE}, the job's own, if installed)")
    ap.add_argument("--source", type=Path, default=None,
                    help="replicate the recorded runs under this directory instead of synthetic runs")
    ap.add_argument("--unmemoized", action=argparse.BooleanOptionalAction, default=True,
                    help="also time the job on the smallest corpus with OTHER_JUDGES of conformance.judge.replay")
    ap.add_argument("--sample-runs", type=int, default=1000, help="runs judged in-process (judge alone)")
    ap.add_argument("--shapes", choices=sorted(SHAPES), default="fresh",
                    help="the synthetic runs' shapes: 36 repeated ones, or drawn from each run's seed")
    args = ap.parse_args(argv)
    if args.sample_runs < 1:
        ap.error("--sample-runs must be at least 1")

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from conformance.spark.job import JOB_SQL_CONF, conform, spark_session
    from traces.schema import spark_schema

    judge: Any = args.judge
    if judge is None:
        try:
            import conformance.judge.diagnose  # noqa: F401

            judge = DEFAULT_JUDGE
        except ImportError:
            judge = plumbing_judge  # defined in __main__: cloudpickle ships it by value
    judge_name = judge if isinstance(judge, str) else "bench plumbing_judge (conformance.judge not installed)"

    corpora = []
    for size in args.sizes:
        t = time.perf_counter()
        d = Path(args.corpus_dir) / (f"{size}-recorded" if args.source else
                                     f"{size}-mixed" if args.shapes == "36" else f"{size}-{args.shapes}")
        n = make_corpus(d, size, args.source, args.shapes)
        files = sum(1 for _ in d.rglob("*.jsonl"))  # noqa: C416
        print(f"corpus {d}: {n} events in {files} files ({time.perf_counter() - t:.1f}s to prepare)", flush=True)
        corpora.append((size, d, n, files))

    alone: dict[str, Any] = {}
    if judge == DEFAULT_JUDGE:
        alone = judge_alone(corpora[0][1], args.sample_runs)
        print(f"judge alone on {alone['runs']:.0f} runs ({alone['events']:.0f} events): {_alone_text(alone)}", flush=True)

    t = time.perf_counter()
    spark = spark_session(args.master, app="epochal-bench")
    cores = spark.sparkContext.defaultParallelism
    print(f"Spark session {args.master} ({cores} cores) started in {time.perf_counter() - t:.1f}s; judge: {judge_name}", flush=True)
    rows = []
    try:
        def read_count(path: str) -> tuple[int, float, float]:
            """The baseline: Spark's own JSON reader, explicit schema, same listing and packing."""
            t, cpu = time.perf_counter(), cpu_seconds()
            for key, value in JOB_SQL_CONF.items():
                spark.conf.set(key, value)
            df = (spark.read.schema(spark_schema()).option("mode", "PERMISSIVE")
                  .option("recursiveFileLookup", "true").json(path))
            count = df.filter("run is not null").count()  # forces every line to be parsed
            return count, time.perf_counter() - t, cpu_seconds() - cpu

        # warm-up: JVM JIT and Python worker start, not counted
        read_count(str(corpora[0][1] / "0000"))  # (the warm-up's figures are not kept)
        conform([str(corpora[0][1] / "0000")], spark=spark, judge=judge, log=lambda m: None, keep_verdicts=0)
        for _size, d, n, files in corpora:
            parsed, read_s, read_cpu = read_count(str(d))
            assert parsed == n, (parsed, n)
            t, cpu = time.perf_counter(), cpu_seconds()
            outcome = conform([str(d)], spark=spark, judge=judge, log=lambda m: None, keep_verdicts=0)
            job_s, job_cpu = time.perf_counter() - t, cpu_seconds() - cpu
            assert outcome.events == n
            rows.append((judge_name, n, files, read_s, job_s, read_cpu, job_cpu, outcome))
            print(f"  {n} events: read {read_s:.1f}s, job {job_s:.1f}s "
                  f"({outcome.groups} groups, {outcome.conforming} conform; stages {outcome.seconds})", flush=True)
        if args.unmemoized and judge == DEFAULT_JUDGE:
            _size, d, n, files = corpora[0]
            for other in OTHER_JUDGES:
                parsed, read_s, read_cpu = read_count(str(d))
                t, cpu = time.perf_counter(), cpu_seconds()
                outcome = conform([str(d)], spark=spark, judge=f"conformance.judge.replay:{other}",
                                  log=lambda m: None, keep_verdicts=0)
                job_s, job_cpu = time.perf_counter() - t, cpu_seconds() - cpu
                assert outcome.events == n and outcome.conforming == outcome.groups
                rows.append((other, n, files, read_s, job_s, read_cpu, job_cpu, outcome))
                print(f"  {n} events, {other}: read {read_s:.1f}s, job {job_s:.1f}s", flush=True)
    finally:
        spark.stop()

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print()
    print(f"wall clock on local[{cores}] (load average now {load:.1f}), and per CPU-second of the whole Spark process tree:")
    print(f"{'judge':<30} {'events':>10} {'files':>6} {'read s':>7} {'job s':>7} {'job ev/s':>9} "
          f"{'ev/s/core':>9} {'job/read':>8} {'read cpu':>8} {'job cpu':>8} {'ev/cpu-s':>9} {'cpu ratio':>9}")
    for name, n, files, read_s, job_s, read_cpu, job_cpu, _ in rows:
        per_cpu = f"{n / job_cpu:>9.0f}" if job_cpu else f"{'-':>9}"
        ratio = f"{job_cpu / read_cpu:>9.2f}" if read_cpu else f"{'-':>9}"
        print(f"{name:<30} {n:>10} {files:>6} {read_s:>7.1f} {job_s:>7.1f} {n / job_s:>9.0f} "
              f"{n / job_s / cores:>9.0f} {job_s / read_s:>8.2f} {read_cpu:>8.1f} {job_cpu:>8.1f} {per_cpu} {ratio}")
    main_rows = [r for r in rows if r[0] == judge_name]
    if len(main_rows) >= 2:
        (_, n1, _, r1, j1, _, c1, _), (_, n2, _, r2, j2, _, c2, _) = main_rows[0], main_rows[-1]
        print(f"growth {n2 / n1:.1f}x events: read time x{r2 / r1:.2f}, job time x{j2 / j1:.2f}, "
              f"job CPU x{c2 / c1 if c1 else float('nan'):.2f} (linear would be x{n2 / n1:.2f})")
    if alone:
        print(f"judge alone (in-process, {alone['events']:.0f} events; the hit rate is the share of model events "
              f"whose state and event had been judged before): {_alone_text(alone)}")
    print(f"target: 55000 events per core-second with the memo off; judge: {judge_name}")
    return 0


def _alone_text(alone: dict[str, Any]) -> str:
    return ", ".join(f"{name} {alone[f'{name} us/event']:.1f} CPU-us/event"
                     + (f" (hit rate {alone[f'{name} hit rate']:.1%})" if f"{name} hit rate" in alone else "")
                     for name in JUDGES) + (
        f"; compiled: {alone['in C']:.1%} of events judged in C, left to Python: {alone['in Python'] or 'none'}"
        if "in C" in alone else "")


if __name__ == "__main__":
    raise SystemExit(main())
