"""Reading: which trace files an input names, and their records, split and validated.

Every record is split off and validated by ``traces.reader.iter_file`` -- the plain reader's
code -- wherever the file is read, so the job and the plain reader accept and quarantine
exactly the same records (the job's valid events recognised in C where the judge's rows
are written in C: ``compiled_batch.recognise``, the same records).  A bad record
becomes a quarantine row with its reason; it never stops the job.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from typing import Any

from conformance.spark.rows import DECODED_COLUMNS, OUTPUT_ROWS, arrow_schema


class InputError(Exception):
    """Input the job cannot use at all (missing paths, no readable record): exit code 2."""


def display_path(uri: str) -> str:
    """``file:/a%20b/c.jsonl`` -> ``/a b/c.jsonl``; other filesystems keep their URI."""
    if uri.startswith("file:"):
        from urllib.parse import unquote, urlparse

        return unquote(urlparse(uri).path)
    return uri


# Executor-side functions are shipped by cloudpickle: keep them free of driver state.
def decode_files(batches: Iterator[Any]) -> Iterator[Any]:
    """binaryFile rows (path, content) -> decoded rows (``DECODED_COLUMNS``)."""

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


def list_local(directory: str) -> list[str]:
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


def _file_records(path: str, data: bytes | OSError) -> Iterator[tuple[int, dict[str, Any] | None, str | None, str]]:
    """Every record of one file as both plans see it -- ``traces.reader.iter_file``'s
    ``(line, event, reason, raw)``, the plain reader's code: a valid event with its raw text,
    or None, the reason and the raw text cut short.  A file that could not be read is one
    quarantined record at line 0.  (Imported here: the judge's C, where the executors read.)"""
    from conformance.judge.compiled_batch import recognise
    from traces.reader import iter_file

    if isinstance(data, OSError):
        return iter((0, None, f"unreadable_file: {data}"[:300], ""),)
    return iter_file(path, data, recognise())


def _read_in_c(path: str, data: bytes | OSError) -> tuple[list[dict[str, Any]], list[tuple[int, int, bytes]], str | None] | None:
    """A plain JSON Lines file read by the judge's C (``compiled_batch.read_lines``), or None:
    an unreadable, gzip'd or Parquet file, or no C here -- ``_file_records``' to read."""
    from conformance.judge.compiled_batch import read_lines
    from traces.reader import binary_format

    if isinstance(data, OSError) or binary_format(path, data):
        return None
    return read_lines(data, path)


def _merged(events: list[dict[str, Any]], others: list[tuple[int, int, bytes]]) -> Iterator[tuple[int, dict[str, Any] | None, str | None, str]]:
    """``_file_records``' records of a file ``_read_in_c`` read: its valid events and, in
    their places, its other lines' records (``traces.reader.line_record``).  (A valid
    event's raw text is not kept: ``read_group`` does not use it.)"""
    from traces.reader import line_record

    at = 0
    for before, line, raw in others:
        for event in events[at:before]:
            yield event["_line"], event, None, ""
        at = before
        yield line_record(line, raw)
    for event in events[at:]:
        yield event["_line"], event, None, ""


def read_group(members: list[str], task: int, only: frozenset[str] | None,
                out: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """A group's valid events by run, each file in path order (``only``: just those runs).
    On the first pass (no ``only``) its quarantine rows, and a "seen" row per (file, run),
    are appended to ``out``.  A plain JSON Lines file is read in C where the judge's rows
    are (``_read_in_c``: the same records)."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for path, uri in sorted((display_path(u), u) for u in members):
        data = _read_local(uri)
        read = _read_in_c(path, data)
        if read is not None and not read[1] and read[2] is not None:  # the usual file: one run's valid events
            events, _, run = read
            if only is None or run in only:
                runs.setdefault(run, []).extend(events)
            if only is None:
                out.append({"row": "seen", "run": run, "file": uri, "line": task})
            continue
        seen: set[str] = set()
        last, events = None, []  # (a file's records are one run's, as a rule: its list kept at hand)
        for line, event, reason, raw in _file_records(path, data) if read is None else _merged(read[0], read[1]):
            if event is None:
                if only is None:
                    out.append({"row": "quarantine", "file": path, "line": line, "raw": raw, "reason": reason})
                continue
            run = event["run"]
            if run != last:
                if only is not None and run not in only:
                    continue
                last, events = run, runs.setdefault(run, [])
                seen.add(run)
            event["_file"] = path
            event["_line"] = line
            events.append(event)
        if only is None:
            out.extend({"row": "seen", "run": run, "file": uri, "line": task} for run in sorted(seen))
    return runs


def _decode(files: Iterator[tuple[str, bytes | OSError]]) -> Iterator[Any]:
    """(URI, bytes) of each file -> decoded rows (``DECODED_COLUMNS``).

    Every record is split off and validated (``_file_records``) here, where the file is read,
    so the shuffle that brings a run's files together moves one row per (file, run) --
    not one per record -- and Spark never parses the JSON itself.  A valid record travels
    as the text it was read as: the judge stage decodes a run's records with one call
    (``traces.schema.loads`` on the array), which is cheaper than any re-encoding."""
    import pyarrow as pa

    schema = arrow_schema(DECODED_COLUMNS)
    cols: list[list[Any]] = [[] for _ in DECODED_COLUMNS]
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
        for line, event, reason, raw in _file_records(path, data):
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


def classify_paths(spark, paths: Sequence[str]) -> tuple[list[str], list[str]]:
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
