"""Regenerate the deliberately malformed samples in ``traces/data/malformed/``.

``python -m traces.broken_samples`` rewrites them.  Each file is named
``<reason-code>--<what is wrong>.<ext>`` with the quarantine reason code of SCHEMA.md §6
spelled with dashes; ``tests/traces/test_trace_reader.py`` checks that every sample is
quarantined for the reason its name gives.  Each sample also holds valid events, so a job
over it still has something to judge.
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

from traces.synthetic import generate_run

HERE = Path(__file__).resolve().parent / "data" / "malformed"


def _lines(events: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(e, separators=(",", ":"), sort_keys=True) for e in events]


def samples() -> dict[str, bytes]:
    events = [e for e in generate_run("malformed-sample", partitions=1, records=2) if e["node"] == 2]
    good = _lines(events)

    def with_bad(mutate) -> bytes:
        e = copy.deepcopy(events[-1])
        mutate(e)
        return ("\n".join([*good, json.dumps(e)]) + "\n").encode()

    whole = ("\n".join(good) + "\n").encode()
    z = gzip.compress(whole * 20)
    return {
        "bad-json--torn-last-line.jsonl": ("\n".join(good) + "\n" + good[0][:37]).encode(),
        "not-object--array-line.jsonl": ("\n".join([*good, "[1, 2, 3]"]) + "\n").encode(),
        "unknown-schema--version-2.jsonl": with_bad(lambda e: e.update(schema="epochal.trace/2")),
        "missing-field--no-run.jsonl": with_bad(lambda e: e.pop("run")),
        "wrong-type--seq-is-string.jsonl": with_bad(lambda e: e.update(seq=str(e["seq"]))),
        "unknown-kind--become-zombie.jsonl": with_bad(lambda e: e.update(kind="become_zombie")),
        "bad-value--negative-seq.jsonl": with_bad(lambda e: e.update(seq=-1)),
        "torn-gzip--truncated-download.jsonl.gz": z[: len(z) * 2 // 3],
        "unreadable-file--not-parquet.parquet": b"PAR1 this file was cut off before its footer",
    }


def main() -> int:
    HERE.mkdir(parents=True, exist_ok=True)
    for name, data in samples().items():
        (HERE / name).write_bytes(data)
        print(HERE / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
