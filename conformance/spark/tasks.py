"""Judging on the executors: the functions each Spark task runs over its share of the corpus.

They are shipped by cloudpickle, so they hold no driver state: a judge is named by its
``"module:function"`` string and imported where it runs (``conformance.spark.verdict``).
Per task, one run at a time: its events are put in causal order, split into (topic,
partition) groups and each group judged.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from conformance.spark.read import read_group
from conformance.spark.rows import JUDGED_COLUMNS, OUTPUT_ROWS, arrow_schema
from conformance.spark.verdict import Judge, judge_run, load_judge


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


def judge_file_groups(judge_spec: str | Judge | None, config: str, dealt: Sequence[str],
                       only: frozenset[str] | None = None) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """Executor function of ``plan_local``: task ids -> verdict, quarantine and "seen"
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
        schema = arrow_schema(JUDGED_COLUMNS)
        out: list[dict[str, Any]] = []
        pace = _CollectorPace()
        try:
            for batch in batches:
                for task in batch.column(0).to_pylist():
                    for members in json.loads(dealt[task]):
                        runs = read_group(members, task, only, out)
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


def judge_partitions(judge_spec: str | Judge | None, config: str) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """Executor function: decoded rows sorted by (run, file, line) -> verdict and quarantine rows.

    Quarantined records pass through; the events of one run at a time are decoded (they
    were validated by ``decode_files``), ordered, split and judged (``conformance.spark.verdict``).
    """

    def judge_partition(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from traces.schema import loads, normalize

        judge = load_judge(judge_spec)
        schema = arrow_schema(JUDGED_COLUMNS)
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
