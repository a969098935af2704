"""Convert JSON Lines traces to the Parquet form of the schema.

Usage: ``python -m traces.parquet SRC... --out DEST`` where DEST is a ``.parquet`` file
(every valid event of every source, in source order) or, with ``--per-file``, a directory
receiving one ``<name>.parquet`` per source file, mirroring the source tree.  Quarantined records are not converted;
their count and reasons are printed so nothing disappears silently.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from traces.reader import ReadResult, list_trace_files, read_traces
from traces.schema import FIELDS, arrow_schema


def events_to_table(events: Iterable[dict[str, Any]]):  # -> pyarrow.Table
    """Events (schema dicts) as an Arrow table with the Parquet schema; params/post as JSON text."""
    import pyarrow as pa

    cols: dict[str, list[Any]] = {f.name: [] for f in FIELDS}
    for e in events:
        for f in FIELDS:
            v = e.get(f.name)
            if f.name in ("params", "post"):
                v = json.dumps(v if v is not None else {}, separators=(",", ":"), sort_keys=True)
            cols[f.name].append(v)
    return pa.table(cols, schema=arrow_schema())


def write_parquet(events: Iterable[dict[str, Any]], dest: str | Path) -> None:
    import pyarrow.parquet as pq

    Path(dest).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(events_to_table(events), str(dest))


def convert(sources: list[str], dest: str, per_file: bool = False) -> ReadResult:
    """Convert; returns what was read (events and quarantined records)."""
    if not per_file:
        result = read_traces(sources)
        write_parquet(result.events, dest)
        return result
    total = ReadResult()
    for src in sources:
        root = Path(src) if Path(src).is_dir() else Path(src).parent
        for f in list_trace_files(src):
            r = read_traces([f])
            rel = f.relative_to(root)
            name = rel.name.removesuffix(".gz").removesuffix(".jsonl").removesuffix(".json")
            write_parquet(r.events, Path(dest) / rel.parent / f"{name}.parquet")
            total.events += r.events
            total.quarantined += r.quarantined
            total.files += r.files
    return total


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m traces.parquet", description=__doc__.splitlines()[0])
    ap.add_argument("sources", nargs="+", metavar="SRC")
    ap.add_argument("--out", required=True, metavar="DEST")
    ap.add_argument("--per-file", action="store_true", help="one Parquet file per source file in DEST/")
    args = ap.parse_args(argv)
    try:
        result = convert(args.sources, args.out, args.per_file)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{len(result.events)} events from {len(result.files)} files -> {args.out}")
    for q in result.quarantined:
        print(f"  quarantined {q.file}:{q.line}: {q.reason}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
