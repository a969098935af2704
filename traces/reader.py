"""Read trace files (JSON Lines, gzip'd JSON Lines, Parquet) into validated events.

Bad data never raises: every record that is not a valid event comes back as a
``Quarantined`` entry with its file, line and a reason whose first word is one of
``traces.schema.REASONS``.  The Spark job decodes file bytes with the same ``iter_file``
function, so the plain reader and the job accept and reject exactly the same records.

Every event is returned as the schema's dict plus two source fields, ``_file`` and
``_line`` (1-based line of a JSON Lines file, 1-based row of a Parquet file).
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from traces.schema import FIELDS, bad_json, checked, decode_line, loads

TRACE_SUFFIXES = (".jsonl", ".ndjson", ".json", ".gz", ".parquet")
"""Files picked up when a *directory* is given (explicit file paths are read whatever their name)."""
TRACE_GLOB = "*.{jsonl,ndjson,json,gz,parquet}"
"""The same set as a Hadoop glob, for Spark's ``pathGlobFilter``."""

_GZIP_MAGIC = b"\x1f\x8b"
_PARQUET_MAGIC = b"PAR1"
_RAW_KEEP = 300  # characters of a quarantined record kept for the report


@dataclass(frozen=True)
class Quarantined:
    file: str
    line: int
    reason: str
    raw: str


@dataclass
class ReadResult:
    events: list[dict[str, Any]] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


Record = tuple[int, dict[str, Any] | None, str | None, str]
"""(line, event or None, quarantine reason or None, raw text)."""


Recognise = Callable[[list[Any]], Sequence[int]]
"""A faster twin of ``validate`` and ``normalize`` over a file's decoded lines: per object, a
true flag where it is a valid event (then normalized in place), a false one where it is
``checked``'s to say -- never a reason of its own."""


def iter_file(name: str, data: bytes, recognise: Recognise | None = None) -> Iterator[Record]:
    """Decode one file's bytes, yielding every record in file order.  Never raises.
    ``recognise``: the valid events recognised by a whole file's objects at once (the
    records, reasons and events are the same)."""
    if recognise is not None:
        yield from _recognised(iter_lines(name, data), recognise)
        return
    for line, raw, reason in iter_lines(name, data):
        if reason is not None:
            yield line, None, reason, raw
            continue
        yield _decoded(line, raw)


def _decoded(line: int, raw: str) -> Record:
    """The record of a line's text: decoded and validated (``decode_line``)."""
    event, reason = decode_line(raw)
    return line, event, reason, raw if event is not None else raw[:_RAW_KEEP]


def _recognised(lines: Iterable[tuple[int, str, str | None]], recognise: Recognise) -> Iterator[Record]:
    """``iter_file``'s records, each line decoded first, then the valid events recognised in
    one call; the rest validated by ``checked`` (``decode_line``'s two halves)."""
    records = list(lines)
    objs: list[Any] = []
    for _, raw, reason in records:
        obj: Any = None
        if reason is None:
            try:
                obj = loads(raw)
            except ValueError as exc:
                obj = _Refused(bad_json(exc))
        objs.append(obj)
    valid = recognise(objs)
    for (line, raw, reason), obj, ok in zip(records, objs, valid, strict=True):
        if ok:
            yield line, obj, None, raw
        elif reason is not None:
            yield line, None, reason, raw
        elif type(obj) is _Refused:
            yield line, None, obj.reason, raw[:_RAW_KEEP]
        else:
            event, why = checked(obj)
            yield line, event, why, raw if event is not None else raw[:_RAW_KEEP]


class _Refused(NamedTuple):
    """A line ``loads`` refused, and why (no JSON decodes to one)."""

    reason: str


def binary_format(name: str, data: bytes) -> bool:
    """Whether a file is read as Parquet or gzip'd JSON Lines, not as plain lines."""
    return data[:4] == _PARQUET_MAGIC or name.endswith(".parquet") or data[:2] == _GZIP_MAGIC


def iter_lines(name: str, data: bytes) -> Iterator[tuple[int, str, str | None]]:
    """Split one file into ``(line, raw JSON text, None)`` or ``(line, raw, reason)`` for
    damage found while splitting (torn gzip, bad UTF-8, unreadable Parquet).  Records are
    not validated here; ``decode_line`` does that (the Spark job calls the two on different
    executors, the plain reader one after the other)."""
    if data[:4] == _PARQUET_MAGIC or name.endswith(".parquet"):
        yield from _iter_parquet(data)
        return
    if data[:2] == _GZIP_MAGIC:
        text, torn = _gunzip(data)
    else:
        text, torn = data, None
    lines = text.split(b"\n")
    last = len(lines)
    if torn is None and lines and lines[-1] == b"":
        last -= 1  # the newline ending the last line
    for i in range(last):
        raw_bytes = lines[i].rstrip(b"\r")
        if torn is not None and i == len(lines) - 1:
            yield i + 1, raw_bytes.decode("utf-8", "replace")[:_RAW_KEEP], f"torn_gzip: {torn}"
            return
        if not raw_bytes.strip():
            continue  # blank lines are not records
        yield _text_line(i + 1, raw_bytes)


def _text_line(line: int, raw_bytes: bytes) -> tuple[int, str, str | None]:
    """A non-blank line of a JSON Lines file (its carriage returns cut) as ``iter_lines``
    gives it: its text, or the reason it has none."""
    try:
        return line, raw_bytes.decode("utf-8"), None
    except UnicodeDecodeError:
        return line, raw_bytes[:_RAW_KEEP].decode("utf-8", "replace"), "bad_json: line is not UTF-8"


def line_record(line: int, raw_bytes: bytes) -> Record:
    """``iter_file``'s record of one non-blank line of a plain JSON Lines file, from its
    bytes (its carriage returns cut): for a reader that splits the file itself and leaves
    a line to these rules."""
    line, raw, reason = _text_line(line, raw_bytes)
    return (line, None, reason, raw) if reason is not None else _decoded(line, raw)


def _gunzip(data: bytes) -> tuple[bytes, str | None]:
    """Decompress every gzip member; on damage keep what decompressed and say why."""
    out: list[bytes] = []
    pos = 0
    chunk = 1 << 16
    while pos < len(data):
        d = zlib.decompressobj(wbits=31)
        try:
            while pos < len(data) and not d.eof:
                piece = data[pos : pos + chunk]
                out.append(d.decompress(piece))
                pos += len(piece)
            out.append(d.flush())
        except zlib.error as exc:
            return b"".join(out), f"corrupt gzip data ({exc})"
        if not d.eof:
            return b"".join(out), "gzip stream ends before its end marker (truncated file)"
        pos -= len(d.unused_data)
        if data[pos : pos + 2] != _GZIP_MAGIC:
            if data[pos:].strip(b"\x00"):
                return b"".join(out), "trailing garbage after the gzip stream"
            break
    return b"".join(out), None


def _iter_parquet(data: bytes) -> Iterator[tuple[int, str, str | None]]:
    """Rows as JSON text with params/post decoded, so they validate exactly like lines."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        rows = pq.read_table(pa.BufferReader(data)).to_pylist()
    except Exception as exc:  # any decoding failure of the file as a whole
        yield 0, "", f"unreadable_file: not a readable Parquet file ({type(exc).__name__}: {exc})"[:300]
        return
    for i, row in enumerate(rows):
        obj = {k: v for k, v in row.items() if v is not None}
        for key in ("params", "post"):
            if isinstance(obj.get(key), str):
                try:
                    obj[key] = json.loads(obj[key])
                except ValueError:
                    raw = json.dumps(row, default=str, separators=(",", ":"))[:_RAW_KEEP]
                    yield i + 1, raw, f"bad_json: column {key} is not JSON text"
                    break
        else:
            yield i + 1, json.dumps(obj, default=str, separators=(",", ":")), None


def list_trace_files(path: str | os.PathLike[str]) -> list[Path]:
    """A file as itself; a directory as its trace files, recursively, in name order."""
    p = Path(path)
    if p.is_dir():
        return sorted(
            f
            for f in p.rglob("*")
            if f.is_file()
            and f.name.endswith(TRACE_SUFFIXES)
            and not any(part.startswith((".", "_")) for part in f.relative_to(p).parts)
        )
    if p.is_file():
        return [p]
    raise FileNotFoundError(f"no such trace file or directory: {path}")


def read_traces(paths: Iterable[str | os.PathLike[str]]) -> ReadResult:
    """Read files and directories; events in file order with ``_file`` and ``_line`` added.

    Raises ``FileNotFoundError`` for a path that does not exist (that is a usage error, not
    bad data); everything wrong *inside* the files is quarantined.
    """
    result = ReadResult()
    for path in paths:
        for f in list_trace_files(path):
            name = str(f)
            result.files.append(name)
            try:
                data = f.read_bytes()
            except OSError as exc:
                result.quarantined.append(Quarantined(name, 0, f"unreadable_file: {exc}", ""))
                continue
            for line, event, reason, raw in iter_file(name, data):
                if event is None:
                    result.quarantined.append(Quarantined(name, line, reason or "", raw))
                else:
                    event["_file"] = name
                    event["_line"] = line
                    result.events.append(event)
    return result


FIELD_NAMES = tuple(f.name for f in FIELDS)
