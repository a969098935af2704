"""The rows that pass between the job's stages, as Spark SQL and Arrow schemas.

Each stage hands Spark Arrow batches (``mapInArrow``), so a stage's output is declared
twice over the same column list: as DDL for Spark (``ddl``) and as an Arrow schema for the
Python side (``arrow_schema``).
"""

from __future__ import annotations

from collections.abc import Sequence

from conformance.spark.verdict import VERDICT_FIELDS

OUTPUT_ROWS = 4096  # rows per Arrow batch handed back to Spark


DECODED_COLUMNS = [("run", "string"), ("file", "string"), ("line", "long"), ("raw", "string"), ("reason", "string")]
"""Decode-stage output, one row per (file, run) or per quarantined record: for a run,
``raw`` is a JSON array ``[[line, event], ...]`` of that run's valid records in the file
(their text as read) and ``line`` its first line; for a quarantined record ``run`` is null
and ``reason`` says why."""
JUDGED_COLUMNS = [("row", "string"), *VERDICT_FIELDS, ("file", "string"), ("line", "long"), ("raw", "string")]
"""Judge-stage output: ``row`` is "verdict" (verdict columns set), "quarantine" (file, line,
raw and reason set), "run" (run, run_events and run_out_of_order: one per judged run, for
the totals) or "seen" (run, file, and in ``line`` the task that read them: local plan)."""


def ddl(cols: Sequence[tuple[str, str]]) -> str:
    return ", ".join(f"`{n}` {t}" for n, t in cols)


def arrow_schema(cols: Sequence[tuple[str, str]]):
    import pyarrow as pa

    types = {"string": pa.string(), "long": pa.int64(), "boolean": pa.bool_(),
             "double": pa.float64(), "array<string>": pa.list_(pa.string())}
    return pa.schema([pa.field(n, types[t]) for n, t in cols])
