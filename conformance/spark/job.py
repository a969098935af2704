"""The conformance job: judge a corpus of traces against the model with one Spark session.

Runnable three ways, all with the same arguments:

    epochal conform PATH... [--out DIR] [--master URL] [--config NAME]
    python -m conformance.spark.cli PATH...
    epochal package-job --out DIR   # then, from any directory, with pyspark, pyarrow, msgspec:
    spark-submit --py-files DIR/epochal-job.zip DIR/conform_job.py PATH... --out DIR2

Plan (one Spark session for the whole corpus, no process per trace):

1. **Read, validate.** Every input file is read as bytes (Spark's ``binaryFile`` source,
   so any Hadoop filesystem URI works), split into records by ``traces.reader.iter_lines``
   and every record validated by ``traces.schema.decode_line`` on the executors -- the
   plain reader's code, so both accept and quarantine exactly the same records: exact file
   and line numbers, the lines before the damage in a truncated ``.gz`` kept, Parquet rows
   turned into the same JSON text as lines.  A bad record becomes a quarantine row with its
   reason; it never stops the job.  A file's valid records leave as one row per run.
2. **Distribute.** Those rows are hash-partitioned by run and sorted by (run, file, line),
   so every task holds whole runs.  A run is the unit of distribution because its causal
   order needs all its events; a corpus of many runs spreads over all executors, while one
   huge run is judged by one task.  The shuffle moves one row per (file, run), not one per
   record, and Spark never parses the JSON: per-record rows and a JVM JSON parse of every
   record cost more than the judging (see ``docs/conformance.md``, How it is fast).
   Files on the local filesystem (``file:``, the usual case) skip steps 1-2 as such: the
   driver lists them and guesses from their names which files hold one run, and each task
   reads, validates and judges the files dealt to it; a run the guess split between tasks
   is judged again whole (``plan_local``) -- the same records in the same order, with no
   shuffle of records at all.
3. **Judge.** Per task, one run at a time: its events are put in causal order, split into
   (topic, partition) groups with the cluster-scope events in every group, and each group
   is judged (``conformance.spark.verdict``).
4. **Report.** Verdicts and quarantined records go to ``--out`` as Parquet and JSON Lines,
   with ``summary.json``; a table is printed.  Exit code: 0 if every group conforms, 1 if
   one does not (or, with ``--strict``, if any record was quarantined), 2 on unusable input.
   Quarantined records alone do not fail a run by default: a ``kill -9`` leaves a torn last
   line by design (see ``traces/recorder.py``); they are always counted and reported.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence

from conformance.spark.plan import FILES_PER_TASK, plan_local, split_runs
from conformance.spark.read import InputError, classify_paths, decode_files, list_local
from conformance.spark.report import (
    Outcome,
    Tally,
    collect_facts,
    exit_code,
    render,
    write_outputs,
    write_summary,
)
from conformance.spark.rows import DECODED_COLUMNS, JUDGED_COLUMNS, ddl
from conformance.spark.session import JOB_SQL_CONF, session_running, spark_session
from conformance.spark.tasks import judge_partitions
from conformance.spark.verdict import Judge, load_judge
from traces.reader import TRACE_GLOB

__all__ = ["JOB_SQL_CONF", "InputError", "Outcome", "conform", "render", "spark_session"]
"""The job's driver-side names; the stages live in ``read`` (reading and validating),
``plan`` (which task judges which files), ``tasks`` (judging on the executors), ``report``
(counts, verdicts and quarantine written out) and ``session``."""


def _log(msg: str) -> None:
    print(f"[conform {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def conform(paths: Sequence[str], out: str | None = None, *, spark=None, master: str | None = None,
            config: str = "kip320", judge: str | Judge | None = None, strict: bool = False,
            keep_verdicts: int = 1000, log: Callable[[str], None] = _log, read_local: bool = True) -> Outcome:
    """Judge every trace under ``paths``; write results under ``out`` if given.

    ``judge`` is a callable or ``"module:function"``; by default (None) ``conformance.judge.diagnose.judge``
    (``conformance.judge.replay.judge`` plus which protocol variant explains a failure), imported on
    the executors (``verdict.default_judge``).  Pass ``spark`` to reuse a session (it is not stopped, nor is one the process already runs).
    With ``read_local`` (default) files on the ``file:`` filesystem are read by the Python
    executors themselves (``plan_local``), others by Spark's ``binaryFile``.
    Raises ``InputError`` for unusable input; never raises on bad records.
    """
    if not paths:
        raise InputError("no input paths given")
    for p in paths:
        if "://" not in p and not p.startswith("file:") and not os.path.exists(p) and not any(c in p for c in "*?["):
            raise InputError(f"no such file or directory: {p}")
    if judge is None:  # the default judge (``verdict.default_judge``) knows the named configurations
        from model.config import NAMED

        if config not in NAMED:  # before Spark starts, not as an error in every verdict
            raise InputError(f"unknown configuration {config!r}; choose from {', '.join(sorted(NAMED))}")
    if isinstance(judge, str):
        try:
            load_judge(judge)
        except (ImportError, AttributeError, ValueError) as exc:
            raise InputError(f"judge {judge} is not available: {exc}") from None
    own_session = spark is None and not session_running()  # never stop a session another started
    t0 = time.perf_counter()
    if spark is None:
        if own_session:
            log(f"starting Spark ({master or 'local[2]'})")
        spark = spark_session(master)
    previous = {key: spark.conf.get(key, None) for key in JOB_SQL_CONF}
    for key, value in JOB_SQL_CONF.items():
        spark.conf.set(key, value)
    try:
        return _run(spark, list(paths), out, config, judge, strict, keep_verdicts, log, t0, read_local)
    finally:
        if own_session:
            spark.stop()
        else:
            for key, value in previous.items():
                if value is None:
                    spark.conf.unset(key)
                else:
                    spark.conf.set(key, value)


def _run(spark, paths, out, config, judge, strict, keep_verdicts, log, t0, read_local=True) -> Outcome:
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    seconds: dict[str, float] = {"session": time.perf_counter() - t0}
    t = time.perf_counter()
    files, dirs = classify_paths(spark, paths)
    local = read_local and all(uri.startswith("file:") for uri in files + dirs)
    if local:  # listed here, as Spark would (``list_local``)
        uris = sorted(set(files) | {uri for d in dirs for uri in list_local(d)})
    else:
        sources = []
        if files:
            sources.append(spark.read.format("binaryFile").load(files))
        if dirs:
            sources.append(spark.read.format("binaryFile").option("recursiveFileLookup", "true")
                           .option("pathGlobFilter", TRACE_GLOB).load(dirs))
        binary = sources[0] if len(sources) == 1 else sources[0].unionByName(sources[1])
        uris = [uri for source in sources for uri in source.inputFiles()]  # listed by Spark, as it reads
    n_files = len(uris)
    if n_files == 0:
        raise InputError(f"no trace files under {', '.join(paths)} (looked for {TRACE_GLOB})")
    tasks = max(spark.sparkContext.defaultParallelism * 2, n_files // FILES_PER_TASK)
    judge_name = judge if isinstance(judge, str) else getattr(judge, "__name__", repr(judge))
    log(f"judging {n_files} files from {len(paths)} paths in {tasks} tasks (config {config}, judge {judge_name}"
        f"{', read by the executors' if local else ''})")

    if local:
        judged = plan_local(spark, uris, judge, config, tasks)
    else:
        records = binary.select("path", "content").mapInArrow(decode_files, ddl(DECODED_COLUMNS))
        judged = (records.repartition(tasks, "run").sortWithinPartitions("run", "file", "line")
                  .mapInArrow(judge_partitions(judge, config), ddl(JUDGED_COLUMNS)))
    rows = judged.persist(StorageLevel.MEMORY_AND_DISK)
    redone = None
    try:
        judged_rows = rows.filter(F.col("row").isin("verdict", "run"))
        tally = Tally()
        if local:  # the driver holds every file name already: its rows' few columns, counted here
            facts = collect_facts(rows)
            again = split_runs(spark, facts, judge, config, tasks)
            tally.add_facts(facts, again[0] if again else frozenset())
            if again is not None:  # runs judged in pieces: their rows from the second pass
                only, redone = again[0], again[1].persist(StorageLevel.MEMORY_AND_DISK)
                log(f"{len(only)} runs had files in two tasks; judged again whole")
                judged_rows = judged_rows.filter(~F.col("run").isin(sorted(only))).unionByName(redone)
                tally.add_facts(collect_facts(redone))
        else:
            tally.add_aggregate(judged_rows, rows.filter(F.col("row") == "quarantine"))
        verdicts = judged_rows.filter(F.col("row") == "verdict").drop("row", "file", "line", "raw")
        quarantine = rows.filter(F.col("row") == "quarantine").select("file", "line", "reason", "raw")
        counts, status, n_events = tally.quarantined, tally.status, tally.events
        malformed = sum(counts.values())
        outcome = Outcome(exit_code=0, files=n_files, records=n_events + malformed, events=n_events,
                          quarantined=dict(sorted(counts.items())), out_of_order=tally.out_of_order,
                          groups=sum(status.values()), conforming=status.get("conforms", 0),
                          violating=status.get("violates", 0), errors=status.get("error", 0),
                          inconclusive=status.get("inconclusive", 0),
                          runs=tally.runs, scenarios=tally.scenarios())
        seconds["judge"] = time.perf_counter() - t
        log(f"{outcome.records} records in {seconds['judge']:.1f}s: {n_events} events, {malformed} quarantined"
            f"{' ' + str(outcome.quarantined) if malformed else ''}; {outcome.groups} groups of {outcome.runs} runs judged")
        if n_events == 0:
            raise InputError(f"no readable trace records in {n_files} files "
                             f"({malformed} malformed: {', '.join(f'{k} {v}' for k, v in sorted(counts.items()))})")
        if keep_verdicts:
            ranked = verdicts.orderBy(F.col("status") == "conforms", "run", "topic", "partition")
            outcome.verdicts = [r.asDict(recursive=True) for r in ranked.limit(keep_verdicts).collect()]
        if out:
            t = time.perf_counter()
            write_outputs(spark, out, verdicts, quarantine, outcome)
            seconds["write"] = time.perf_counter() - t
            log(f"wrote verdicts, quarantine and summary under {out}")
    finally:
        rows.unpersist()
        if redone is not None:
            redone.unpersist()
    seconds["total"] = time.perf_counter() - t0
    outcome.seconds = {k: round(v, 3) for k, v in seconds.items()}
    outcome.exit_code = exit_code(outcome, strict)
    if out:
        write_summary(spark, out, outcome)  # last, so it holds the final timings and exit code
    return outcome

