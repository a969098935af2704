"""The conformance job: judge a corpus of traces against the model with one Spark session.

Runnable three ways, all with the same arguments:

    epochal conform PATH... [--out DIR] [--master URL] [--config NAME]
    python -m conformance.spark.job PATH...
    spark-submit --py-files dist/epochal-py.zip conformance/spark/job.py PATH...

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
   record cost more than the judging (see ``conformance/README.md``, Performance).
   Files on the local filesystem (``file:``, the usual case) skip steps 1-2 as such: the
   driver lists them and guesses from their names which files hold one run, and each task
   reads, validates and judges the files dealt to it; a run the guess split between tasks
   is judged again whole (``_plan_local``) -- the same records in the same order, with no
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

import gc
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.spark.verdict import (
    DEFAULT_JUDGE,
    VERDICT_FIELDS,
    Judge,
    judge_run,
    load_judge,
    summary_line,
)
from traces.reader import TRACE_GLOB

# The judge stage runs two tasks per core, or one per this many input files if that is more.
# Each task costs a Python worker round trip (~40-60 ms here): on the 1M-event benchmark
# corpus (20,880 files) one task per 500 files (41 tasks) took 8.6-8.9 s, 4 tasks 7.1-8.0 s.
FILES_PER_TASK = 20_000
JOB_SQL_CONF = {
    # Spark's default (4 MB) packs ~32 small trace files per task, so a corpus of many short
    # runs becomes hundreds of tasks, each paying a Python worker round trip.
    "spark.sql.files.openCostInBytes": str(64 * 1024),
    # Above 32 directories Spark lists them with a distributed job, one task per directory:
    # 16 s instead of 0.4 s for 1,500 run directories here.  List on the driver instead.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
}
"""SQL settings in force while the job runs (the caller's values are restored after)."""
OUTPUT_ROWS = 4096  # rows per Arrow batch handed back to Spark


class _CollectorPace:
    """The garbage collector's pace inside an executor function: automatic collection off,
    a young-generation collection every ``YOUNG_EVERY`` events and a full one every
    ``FULL_EVERY`` -- restored when the task ends.

    Why: decoding and judging allocate a dozen containers per event, and Python's default
    pace (a collection every 700 net allocations, a full one as the old generation grows)
    keeps re-scanning the judge's memo, which only grows during a task: measured in one
    process on the benchmark's corpus, ~15 us/event with the default pace against ~11.5
    with collection off.  Nothing is lost by waiting: the events, states and rows are
    freed by reference counting the moment they are dropped; a collection is needed only
    for reference cycles, which the judge does not make in the normal course (a few come
    from exceptions' tracebacks), and those are reclaimed at the paced collections."""

    YOUNG_EVERY = 50_000
    FULL_EVERY = 1_000_000

    def __init__(self) -> None:
        self.was_enabled = gc.isenabled()
        self.young = self.full = 0
        gc.disable()

    def events(self, n: int) -> None:
        self.young += n
        self.full += n
        if self.full >= self.FULL_EVERY:
            gc.collect()
            self.young = self.full = 0
        elif self.young >= self.YOUNG_EVERY:
            gc.collect(1)
            self.young = 0

    def close(self) -> None:
        if self.was_enabled:
            gc.enable()


class InputError(Exception):
    """Input the job cannot use at all (missing paths, no readable record): exit code 2."""


@dataclass
class Outcome:
    """What a run of the job found; ``exit_code`` follows the documented contract."""

    exit_code: int
    files: int = 0
    records: int = 0
    events: int = 0
    quarantined: dict[str, int] = field(default_factory=dict)
    out_of_order: int = 0
    groups: int = 0
    conforming: int = 0
    violating: int = 0
    errors: int = 0
    runs: int = 0
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    """Non-conforming verdicts first, then conforming; at most ``keep_verdicts`` of them."""
    seconds: dict[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k != "verdicts"}
        d["malformed"] = sum(self.quarantined.values())
        return d


# -- Spark schemas of the intermediate and output rows --------------------------------------
_DECODED = [("run", "string"), ("file", "string"), ("line", "long"), ("raw", "string"), ("reason", "string")]
"""Decode-stage output, one row per (file, run) or per quarantined record: for a run,
``raw`` is a JSON array ``[[line, event], ...]`` of that run's valid records in the file
(their text as read) and ``line`` its first line; for a quarantined record ``run`` is null
and ``reason`` says why."""
_OUT = [("row", "string"), *VERDICT_FIELDS, ("file", "string"), ("line", "long"), ("raw", "string")]
"""Judge-stage output: ``row`` is "verdict" (verdict columns set), "quarantine" (file, line,
raw and reason set), "run" (run, run_events and run_out_of_order: one per judged run, for
the totals) or "seen" (run, file, and in ``line`` the task that read them: local plan)."""


def _ddl(cols: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"`{n}` {t}" for n, t in cols)


def _arrow(cols: Sequence[tuple[str, str]]):
    import pyarrow as pa

    types = {"string": pa.string(), "long": pa.int64(), "boolean": pa.bool_(),
             "double": pa.float64(), "array<string>": pa.list_(pa.string())}
    return pa.schema([pa.field(n, types[t]) for n, t in cols])


def display_path(uri: str) -> str:
    """``file:/a%20b/c.jsonl`` -> ``/a b/c.jsonl``; other filesystems keep their URI."""
    if uri.startswith("file:"):
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(uri).path)
    return uri


# -- executor-side functions (shipped by cloudpickle; keep them free of driver state) --------
def _decode_files(batches: Iterator[Any]) -> Iterator[Any]:
    """binaryFile rows (path, content) -> decoded rows (``_DECODED``)."""

    def files() -> Iterator[tuple[str, bytes]]:
        for batch in batches:
            paths = batch.column("path").to_pylist()
            contents = batch.column("content")
            for i, uri in enumerate(paths):
                yield uri, contents[i].as_py() or b""

    return _decode(files())


def _read_local(uri: str) -> bytes | OSError:
    try:
        with open(display_path(uri), "rb") as f:
            return f.read()
    except OSError as exc:
        return exc


def _hidden(name: str) -> bool:
    """Whether Spark's file listing skips a file or directory of this name (its
    ``InMemoryFileIndex`` rule: names starting with "_" -- but not partition directories
    "k=v" nor Parquet's "_metadata" files -- or ".", and files still being copied)."""
    if name.startswith(("_common_metadata", "_metadata")):
        return False
    return (name.startswith("_") and "=" not in name) or name.startswith(".") or name.endswith("._COPYING_")


def _list_local(directory: str) -> list[str]:
    """``file:`` URIs of the trace files under a local directory, recursively -- the files
    Spark's ``binaryFile`` source lists with ``recursiveFileLookup`` and ``pathGlobFilter``
    set to ``TRACE_GLOB`` (``tests/conformance/test_fast_path.py`` holds the two to the same
    list), without its per-file JVM work (~2 s per 5,000 files here, ~1 CPU-s of it in the JVM)."""
    from pathlib import Path

    from traces.reader import TRACE_SUFFIXES

    found: list[str] = []
    for root, subdirs, names in os.walk(display_path(directory), followlinks=True):
        subdirs[:] = [d for d in subdirs if not _hidden(d)]
        found.extend(Path(root, n).as_uri() for n in names if n.endswith(TRACE_SUFFIXES) and not _hidden(n))
    return sorted(found)


GROUP_FILES = 64
"""Files of one directory dealt out together (``_guess_groups``); larger directories are cut
into pieces of about this many files, between names with different stems."""


def _guess_groups(uris: list[str]) -> list[list[str]]:
    """Files that probably hold the same runs, guessed from their names alone (no I/O): a
    directory's files together -- recorders write one directory per run, one file per node
    -- and a large directory cut into pieces of about ``GROUP_FILES`` files, never between
    two names with the same stem (``run-7.1.jsonl``, ``run-7.2.jsonl``).  Only a guess:
    a run it splits costs a second pass (``_split_runs``), never a wrong verdict."""
    from pathlib import PurePosixPath

    by_dir: dict[str, list[str]] = {}
    for uri in uris:
        by_dir.setdefault(str(PurePosixPath(uri).parent), []).append(uri)
    groups: list[list[str]] = []
    for files in by_dir.values():
        files.sort()
        piece: list[str] = []
        stem = None
        for uri in files:
            this = PurePosixPath(uri).name.split(".", 1)[0]
            if len(piece) >= GROUP_FILES and this != stem:
                groups.append(piece)
                piece = []
            piece.append(uri)
            stem = this
        groups.append(piece)
    return groups


def _judged_rows(run: str, events: list[dict[str, Any]], judge: Judge, config: str) -> list[dict[str, Any]]:
    """The output rows of one judged run: a "verdict" row per (topic, partition) group and,
    if there is one, a "run" row with the run's event and out-of-order counts -- what the
    driver's totals add up (once per run, where each verdict repeats them)."""
    rows = judge_run(run, events, judge, config)
    for v in rows:
        v["row"] = "verdict"
    if rows:
        rows.append({"row": "run", "run": run, "run_events": rows[0]["run_events"],
                     "run_out_of_order": rows[0]["run_out_of_order"]})
    return rows


def _file_groups(pairs: Sequence[tuple[str, str | None]]) -> list[list[str]]:
    """Files that share a run, transitively, form one group (union-find): a run's events
    all lie in one group's files, so a group can be decoded and judged on its own."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    first: dict[str, str] = {}
    for uri, run in pairs:
        find(uri)
        if run is not None:
            other = first.setdefault(run, uri)
            a, b = find(uri), find(other)
            if a != b:
                parent[a] = b
    groups: dict[str, list[str]] = {}
    for uri in parent:
        groups.setdefault(find(uri), []).append(uri)
    return [sorted(g) for g in groups.values()]


def _file_records(path: str, data: bytes | OSError) -> Iterator[tuple[int, str, dict[str, Any] | None, str | None]]:
    """Every record of one file as both plans see it: ``(line, raw, event, None)`` for a
    valid record, ``(line, raw[:300], None, reason)`` for one to quarantine -- split by
    ``traces.reader.iter_lines`` and validated by ``traces.schema.decode_line``, the plain
    reader's code.  A file that could not be read is one quarantined record at line 0."""
    from traces.reader import iter_lines
    from traces.schema import decode_line

    if isinstance(data, OSError):
        yield 0, "", None, f"unreadable_file: {data}"[:300]
        return
    for line, raw, reason in iter_lines(path, data):
        event = None
        if reason is None:
            event, reason = decode_line(raw)
        yield line, raw if event is not None else raw[:300], event, reason


def _read_group(members: list[str], task: int, only: frozenset[str] | None,
                out: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """A group's valid events by run, each file in path order (``only``: just those runs).
    On the first pass (no ``only``) its quarantine rows, and a "seen" row per (file, run),
    are appended to ``out``."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for path, uri in sorted((display_path(u), u) for u in members):
        seen: set[str] = set()
        for line, raw, event, reason in _file_records(path, _read_local(uri)):
            if event is None:
                if only is None:
                    out.append({"row": "quarantine", "file": path, "line": line, "raw": raw, "reason": reason})
                continue
            run = event["run"]
            if only is not None and run not in only:
                continue
            event["_file"] = path
            event["_line"] = line
            runs.setdefault(run, []).append(event)
            seen.add(run)
        if only is None:
            out.extend({"row": "seen", "run": run, "file": uri, "line": task} for run in sorted(seen))
    return runs


def _judge_file_groups(judge_spec: str | Judge, config: str, dealt: Sequence[str],
                       only: frozenset[str] | None = None) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """Executor function of ``_plan_local``: task ids -> verdict, quarantine and "seen"
    rows.  ``dealt[task]`` is a JSON list of file-URI lists (the task's groups); each
    group's files are read, split, validated (``decode_line``, as everywhere) and each of
    its runs judged, in the order the shuffled path would give: runs by id, a run's events
    by (file, line).  A "seen" row (run, file, line = task) says which task judged which run
    from which file, so the driver can tell a run whose files were dealt to two tasks.

    With ``only`` (the second pass) just those runs are judged and nothing else is
    emitted: the first pass already quarantined every bad record of these files."""

    def judge_groups(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        judge = load_judge(judge_spec)
        schema = _arrow(_OUT)
        out: list[dict[str, Any]] = []
        pace = _CollectorPace()
        try:
            for batch in batches:
                for task in batch.column(0).to_pylist():
                    for members in json.loads(dealt[task]):
                        runs = _read_group(members, task, only, out)
                        for run in sorted(runs):
                            out.extend(_judged_rows(run, runs[run], judge, config))
                            pace.events(len(runs[run]))
                        if len(out) >= OUTPUT_ROWS:
                            yield pa.RecordBatch.from_pylist(out, schema=schema)
                            out = []
            if out:
                yield pa.RecordBatch.from_pylist(out, schema=schema)
        finally:
            pace.close()

    return judge_groups


def _deal(spark, groups: list[list[str]], tasks: int, judge: str | Judge, config: str,
          only: frozenset[str] | None = None):
    """Deal file groups out to ``tasks`` tasks by size (largest first, each to the least
    loaded) and judge them (``_judge_file_groups``).  The input is ``spark.range(tasks)`` --
    one task id per task, made by the JVM -- and the groups travel inside the executor
    function (PySpark broadcasts a large one), so no Python stage feeds the judge and Spark
    moves only file names: building the input from a Python RDD cost a Python worker round
    trip per task, ~50 ms each (41 tasks: 10.3-10.9 s for the 1M-event benchmark corpus,
    8.6-8.9 s with the task ids from the JVM)."""
    tasks = max(1, min(tasks, len(groups)))
    load = [0] * tasks
    dealt: list[list[list[str]]] = [[] for _ in range(tasks)]
    for files in sorted(groups, key=len, reverse=True):
        task = min(range(tasks), key=load.__getitem__)
        load[task] += len(files)
        dealt[task].append(files)
    texts = [json.dumps(g) for g in dealt]
    return spark.range(0, tasks, 1, tasks).mapInArrow(_judge_file_groups(judge, config, texts, only), _ddl(_OUT))


def _plan_local(spark, uris: list[str], judge: str | Judge, config: str, tasks: int):
    """Local files, read by the executors in one pass with no shuffle of records.

    A run must be judged whole, by one task, but which files hold which runs is only known
    by reading them.  So the driver guesses from the file names (``_guess_groups``) and
    deals each guessed group to one task; each task reads, validates and judges its files
    and says which runs it saw in which files ("seen" rows).  ``_split_runs`` then finds
    any run the guess dealt to two tasks, drops those verdicts and judges those runs again
    from all their files (``_file_groups``).  Exact whatever the guesses; on the recorded
    traces and the benchmark corpus nothing is judged twice.  (Spark's ``binaryFile``
    source would cost ~0.4 ms of JVM CPU per file; an earlier plan listed every file's runs
    in a first Spark pass, a third of the job's time.)"""
    return _deal(spark, _guess_groups(uris), tasks, judge, config)


def _facts(rows) -> dict[str, list[Any]]:
    """The few columns of every output row the driver counts, as Arrow (no shuffle): the
    row type, run, status (verdicts), quarantine reason code, per-run event and out-of-order
    counts, and for "seen" rows the file and task (``line``)."""
    from pyspark.sql import functions as F

    row = F.col("row")
    return _to_arrow(rows.select(
        "row", "run", "status", "run_events", "run_out_of_order",
        F.when(row == "seen", F.col("line")).alias("task"),
        F.when(row == "seen", F.col("file")).alias("file"),
        F.when(row == "quarantine", F.split(F.col("reason"), ":").getItem(0)).alias("code"),
    )).to_pydict()


def _split_runs(spark, facts: dict[str, list[Any]], judge: str | Judge, config: str, tasks: int):
    """Second pass of ``_plan_local``: (runs judged in pieces, their rows judged again whole)
    -- the runs whose files were dealt to more than one task, from the "seen" rows of
    ``facts``; None if there are none."""
    tasks_of: dict[str, set[int]] = {}
    files_of: dict[str, list[str]] = {}
    for row, run, task, file in zip(facts["row"], facts["run"], facts["task"], facts["file"], strict=True):
        if row == "seen":
            tasks_of.setdefault(run, set()).add(task)
            files_of.setdefault(run, []).append(file)
    only = frozenset(run for run, ts in tasks_of.items() if len(ts) > 1)
    if not only:
        return None
    pairs = [(f, r) for r in sorted(only) for f in files_of[r]]
    return only, _deal(spark, _file_groups(pairs), tasks, judge, config, only)


@dataclass
class _Tally:
    """Every count of the outcome: quarantined records by reason code, verdicts by status,
    and the runs with their events and out-of-order events."""

    quarantined: dict[str, int] = field(default_factory=dict)
    status: dict[str, int] = field(default_factory=dict)
    runs: int = 0
    events: int = 0
    out_of_order: int = 0

    def add_facts(self, facts: dict[str, list[Any]], skip: frozenset[str] = frozenset()) -> None:
        """Count collected ``facts`` (``_facts``), leaving out the rows of runs in ``skip``
        (their rows from a first pass that judged them in pieces)."""
        cols = (facts["row"], facts["run"], facts["status"], facts["run_events"], facts["run_out_of_order"], facts["code"])
        for row, run, status, events, disorder, code in zip(*cols, strict=True):
            if row == "quarantine":
                self.quarantined[code] = self.quarantined.get(code, 0) + 1
            elif run in skip:
                continue
            elif row == "verdict":
                self.status[status] = self.status.get(status, 0) + 1
            elif row == "run":
                self.runs += 1
                self.events += events or 0
                self.out_of_order += disorder or 0

    def add_aggregate(self, judged_rows, quarantine) -> None:
        """Count on the executors (any filesystem: no per-run rows come to the driver), in
        one small aggregate -- each Spark action costs a fixed ~0.1-0.3 s."""
        from pyspark.sql import functions as F

        kind = (F.when(F.col("row") == "quarantine", F.split(F.col("reason"), ":").getItem(0))
                .when(F.col("row") == "verdict", F.col("status")).otherwise(F.lit("")))
        tally = (judged_rows.unionByName(quarantine)
                 .groupBy("row", kind.alias("kind"))
                 .agg(F.count("*").alias("n"), F.sum("run_events").alias("e"), F.sum("run_out_of_order").alias("o"))
                 .collect())
        for r in tally:
            if r["row"] == "quarantine":
                self.quarantined[r["kind"]] = r["n"]
            elif r["row"] == "verdict":
                self.status[r["kind"]] = r["n"]
            elif r["row"] == "run":
                self.runs, self.events, self.out_of_order = r["n"], int(r["e"] or 0), int(r["o"] or 0)


def _to_arrow(df):
    """A small DataFrame's rows on the driver as an Arrow table (``toArrow`` where this
    PySpark has it, else through pandas' Arrow path)."""
    import pyarrow as pa

    if hasattr(df, "toArrow"):
        return df.toArrow()
    return pa.Table.from_pandas(df.toPandas(), preserve_index=False)


def _decode(files: Iterator[tuple[str, bytes | OSError]]) -> Iterator[Any]:
    """(URI, bytes) of each file -> decoded rows (``_DECODED``).

    Every record is split off and validated (``_file_records``) here, where the file is read,
    so the shuffle that brings a run's files together moves one row per (file, run) --
    not one per record -- and Spark never parses the JSON itself.  A valid record travels
    as the text it was read as: the judge stage decodes a run's records with one call
    (``traces.schema.loads`` on the array), which is cheaper than any re-encoding."""
    import pyarrow as pa

    schema = _arrow(_DECODED)
    cols: list[list[Any]] = [[] for _ in _DECODED]
    run_c, file_c, line_c, raw_c, reason_c = cols

    def flush():
        batch = pa.RecordBatch.from_arrays([pa.array(c, f.type) for c, f in zip(cols, schema, strict=True)],
                                           schema=schema)
        for c in cols:
            c.clear()
        return batch

    for uri, data in files:
        path = display_path(uri)
        runs: dict[str, list[str]] = {}
        first: dict[str, int] = {}
        for line, raw, event, reason in _file_records(path, data):
            if event is None:
                run_c.append(None)
                file_c.append(path)
                line_c.append(line)
                raw_c.append(raw)
                reason_c.append(reason)
                continue
            run = event["run"]
            texts = runs.get(run)
            if texts is None:
                texts = runs[run] = []
                first[run] = line
            texts.append(f"[{line},{raw}]")
        for run, texts in runs.items():
            run_c.append(run)
            file_c.append(path)
            line_c.append(first[run])
            raw_c.append("[" + ",".join(texts) + "]")
            reason_c.append(None)
        if len(run_c) >= OUTPUT_ROWS:
            yield flush()
    if run_c:
        yield flush()


def _judge_partitions(judge_spec: str | Judge, config: str) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """Executor function: decoded rows sorted by (run, file, line) -> verdict and quarantine rows.

    Quarantined records pass through; the events of one run at a time are decoded (they
    were validated by ``_decode_files``), ordered, split and judged (``conformance.spark.verdict``).
    """

    def judge_partition(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from traces.schema import loads, normalize

        judge = load_judge(judge_spec)
        schema = _arrow(_OUT)
        out: list[dict[str, Any]] = []
        current: str | None = None
        events: list[dict[str, Any]] = []

        pace = _CollectorPace()

        def finish():
            if events:
                out.extend(_judged_rows(current or "", events, judge, config))
                pace.events(len(events))

        try:
            for batch in batches:
                cols = [batch.column(n).to_pylist() for n in ("run", "file", "line", "raw", "reason")]
                for run, file, line, raw, reason in zip(*cols, strict=True):
                    if run is None:
                        out.append({"row": "quarantine", "file": file, "line": line, "raw": raw, "reason": reason})
                        continue
                    if run != current:
                        finish()
                        events = []
                        current = run
                        if len(out) >= OUTPUT_ROWS:
                            yield pa.RecordBatch.from_pylist(out, schema=schema)
                            out = []
                    for n, event in loads(raw):
                        event = normalize(event)
                        event["_file"] = file
                        event["_line"] = n
                        events.append(event)
            finish()
            if out:
                yield pa.RecordBatch.from_pylist(out, schema=schema)
        finally:
            pace.close()

    return judge_partition


# -- driver ----------------------------------------------------------------------------------
def _log(msg: str) -> None:
    print(f"[conform {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


_LOG4J2 = """\
# Written by conformance.spark.job for local Spark sessions: errors only, so the job's own
# progress and summary are what a user reads (Spark's defaults print WARN lines about the
# host name, native Hadoop libraries and its own log profile on every start).
# PySpark counts as Spark's shell, which announces "Setting default log level" unless its
# logger (one under org.apache.spark) is configured at the root's level: both are ERROR.
rootLogger.level = error
logger.spark.name = org.apache.spark
logger.spark.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
logger.parquet.name = org.apache.parquet
logger.parquet.level = error
rootLogger.appenderRef.console.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


def _quiet_log4j2() -> str:
    """A log4j2 configuration file for the driver JVM of a local session (written once per
    user into the temporary directory; under spark-submit the cluster's own logging
    configuration is left alone)."""
    path = Path(tempfile.gettempdir()) / f"epochal-spark-log4j2-{os.getuid() if hasattr(os, 'getuid') else 0}.properties"
    if not path.exists() or path.read_text() != _LOG4J2:
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_LOG4J2)
        os.replace(tmp, path)
    return str(path)


def spark_session(master: str | None = None, app: str = "epochal-conform"):
    """A session for the job: local[2] by default, the submitter's master under spark-submit."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app)
    under_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    if master:
        builder = builder.master(master)
    elif not under_submit:
        builder = builder.master("local[2]")
    if not under_submit:
        # C1 only: the job's queries are small and many, and the JVM spent more CPU in the
        # C2 compiler (on code Spark generates per query) than running it -- measured: the
        # driver's CPU per 250k-event job 4.7 s -> 1.4 s (conformance/README.md, Performance).
        java_options = f"-XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile={_quiet_log4j2()}"
        builder = (builder.config("spark.driver.extraJavaOptions", java_options)
                   .config("spark.ui.enabled", "false")
                   .config("spark.sql.shuffle.partitions", "8")
                   .config("spark.driver.memory", os.environ.get("EPOCHAL_SPARK_MEMORY", "2g"))
                   .config("spark.ui.showConsoleProgress", str(sys.stderr.isatty()).lower()))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _classify_paths(spark, paths: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split inputs into (files, directories) through Hadoop's FileSystem, so any URI works."""
    jvm = spark.sparkContext._jvm
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    files, dirs, missing = [], [], []
    for p in paths:
        try:
            hpath = jvm.org.apache.hadoop.fs.Path(p)
            fs = hpath.getFileSystem(conf)
            statuses = fs.globStatus(hpath)
        except Exception as exc:  # unknown scheme, unreachable namenode, ...
            raise InputError(f"cannot open {p}: {str(exc).splitlines()[0][:200]}") from None
        if not statuses:
            missing.append(p)
            continue
        for st in statuses:
            (dirs if st.isDirectory() else files).append(st.getPath().toString())
    if missing:
        raise InputError(f"no such file or directory: {', '.join(missing)}")
    return files, dirs


def conform(paths: Sequence[str], out: str | None = None, *, spark=None, master: str | None = None,
            config: str = "kip320", judge: str | Judge | None = None, strict: bool = False,
            keep_verdicts: int = 1000, log: Callable[[str], None] = _log, read_local: bool = True) -> Outcome:
    """Judge every trace under ``paths``; write results under ``out`` if given.

    ``judge`` is a callable or ``"module:function"``; by default ``conformance.judge.diagnose:judge``
    (``conformance.judge.replay.judge`` plus which protocol variant explains a failure), imported on
    the executors.  Pass ``spark`` to reuse a session (it is not stopped).
    With ``read_local`` (default) files on the ``file:`` filesystem are read by the Python
    executors themselves (``_plan_local``), others by Spark's ``binaryFile``.
    Raises ``InputError`` for unusable input; never raises on bad records.
    """
    if not paths:
        raise InputError("no input paths given")
    for p in paths:
        if "://" not in p and not p.startswith("file:") and not os.path.exists(p) and not any(c in p for c in "*?["):
            raise InputError(f"no such file or directory: {p}")
    if judge is None:
        judge = DEFAULT_JUDGE
    if judge == DEFAULT_JUDGE:
        from model.config import NAMED

        if config not in NAMED:  # before Spark starts, not as an error in every verdict
            raise InputError(f"unknown configuration {config!r}; choose from {', '.join(sorted(NAMED))}")
    if isinstance(judge, str):
        try:
            load_judge(judge)
        except (ImportError, AttributeError, ValueError) as exc:
            raise InputError(f"judge {judge} is not available: {exc}") from None
    own_session = spark is None
    t0 = time.perf_counter()
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
    files, dirs = _classify_paths(spark, paths)
    local = read_local and all(uri.startswith("file:") for uri in files + dirs)
    if local:  # listed here, as Spark would (``_list_local``)
        uris = sorted(set(files) | {uri for d in dirs for uri in _list_local(d)})
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
        judged = _plan_local(spark, uris, judge, config, tasks)
    else:
        records = binary.select("path", "content").mapInArrow(_decode_files, _ddl(_DECODED))
        judged = (records.repartition(tasks, "run").sortWithinPartitions("run", "file", "line")
                  .mapInArrow(_judge_partitions(judge, config), _ddl(_OUT)))
    rows = judged.persist(StorageLevel.MEMORY_AND_DISK)
    redone = None
    try:
        judged_rows = rows.filter(F.col("row").isin("verdict", "run"))
        tally = _Tally()
        if local:  # the driver holds every file name already: its rows' few columns, counted here
            facts = _facts(rows)
            again = _split_runs(spark, facts, judge, config, tasks)
            tally.add_facts(facts, again[0] if again else frozenset())
            if again is not None:  # runs judged in pieces: their rows from the second pass
                only, redone = again[0], again[1].persist(StorageLevel.MEMORY_AND_DISK)
                log(f"{len(only)} runs had files in two tasks; judged again whole")
                judged_rows = judged_rows.filter(~F.col("run").isin(sorted(only))).unionByName(redone)
                tally.add_facts(_facts(redone))
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
                          runs=tally.runs)
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
            _write(spark, out, verdicts, quarantine, outcome)
            seconds["write"] = time.perf_counter() - t
            log(f"wrote verdicts, quarantine and summary under {out}")
    finally:
        rows.unpersist()
        if redone is not None:
            redone.unpersist()
    seconds["total"] = time.perf_counter() - t0
    outcome.seconds = {k: round(v, 3) for k, v in seconds.items()}
    bad = outcome.violating + outcome.errors
    outcome.exit_code = 1 if bad or (malformed and strict) else 0
    return outcome


def _write(spark, out: str, verdicts, quarantine, outcome: Outcome) -> None:
    base = out.rstrip("/")
    verdicts.coalesce(1).write.mode("overwrite").parquet(f"{base}/verdicts.parquet")
    verdicts.coalesce(1).write.mode("overwrite").json(f"{base}/verdicts.json")
    quarantine.coalesce(1).write.mode("overwrite").parquet(f"{base}/quarantine.parquet")
    quarantine.coalesce(1).write.mode("overwrite").json(f"{base}/quarantine.json")
    summary = json.dumps(outcome.as_dict(), sort_keys=True)
    spark.createDataFrame([(summary,)], "value string").coalesce(1).write.mode("overwrite").text(f"{base}/summary.json")


# -- report ----------------------------------------------------------------------------------
def render(outcome: Outcome, max_rows: int = 25) -> str:
    """The readable summary table printed at the end of a run."""
    lines = []
    rows = outcome.verdicts[:max_rows]
    if rows:
        head = ("run", "topic/partition", "events", "ooo", "verdict")
        table = [head] + [
            (v["run"], "-" if v["topic"] is None else f"{v['topic']}/{v['partition']}",
             str(v["total"]), str(v["out_of_order"]), summary_line(v))
            for v in rows
        ]
        widths = [min(40, max(len(r[i]) for r in table)) for i in range(4)]
        for r in table:
            lines.append("  ".join(c[:w].ljust(w) for c, w in zip(r[:4], widths, strict=True)) + "  " + r[4][:140])
        if len(outcome.verdicts) > max_rows or outcome.groups > len(rows):
            lines.append(f"... {outcome.groups - len(rows)} more groups (see verdicts under --out)")
        first = next((v for v in outcome.verdicts if v["status"] != "conforms"), None)
        if first:
            lines.append("")
            lines.append(f"first non-conforming step in run {first['run']} "
                         f"{first['topic']}/{first['partition']}: {summary_line(first)}")
            if first.get("first_bad_file"):
                lines.append(f"  at {first['first_bad_file']}:{first['first_bad_line']} "
                             f"(node {first['first_bad_node']} seq {first['first_bad_seq']} {first['first_bad_kind']})")
            if first.get("property"):
                lines.append(f"  property violated: {first['property']}")
            for b in first.get("before") or []:
                lines.append(f"  before: {b[:160]}")
            if first.get("observed"):
                lines.append(f"  observed: {first['observed'][:160]}")
            for s in (first.get("possible_states") or [])[:5]:
                lines.append(f"  model allows: {s[:160]}")
            if first.get("bound"):
                lines.append(f"  (internal steps searched up to bound {first['bound']})")
    malformed = sum(outcome.quarantined.values())
    lines.append("")
    lines.append(
        f"{outcome.files} files, {outcome.records} records: {outcome.events} events, {malformed} malformed"
        + (f" ({', '.join(f'{k} {v}' for k, v in outcome.quarantined.items())})" if malformed else "")
        + f", {outcome.out_of_order} out of order")
    lines.append(f"{outcome.groups} groups in {outcome.runs} runs: {outcome.conforming} conform, "
                 f"{outcome.violating} do not, {outcome.errors} judge errors "
                 f"-> exit {outcome.exit_code}")
    return "\n".join(lines)


if __name__ == "__main__":
    # Under spark-submit this file runs as __main__ with only --py-files on the path; the
    # real code is imported from the shipped package, never pickled from __main__.
    sys.path[:] = [p for p in sys.path if os.path.basename(p.rstrip("/")) != "conformance"]
    from conformance.spark.cli import standalone_main as _standalone

    raise SystemExit(_standalone(sys.argv[1:]))
