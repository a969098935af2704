"""Regenerate the deliberately broken samples in ``traces/data/``.

``malformed/``: records the reader must quarantine.  ``nonconforming/``: valid traces the
model's judge must reject, one directory (one run, one file per node) per case, named
``<what the verdict says>--<what is wrong>``: a conforming synthetic run with a leader kill,
mutated by ``conformance.mutations``.


``python -m conformance.broken_samples`` rewrites them.  Each file is named
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

HERE = Path(__file__).resolve().parent.parent / "traces" / "data" / "malformed"
NONCONFORMING = HERE.parent / "nonconforming"
CASES = {  # directory name -> mutation
    "not-enabled--second-controller-same-epoch": "second_controller",
    "not-enabled--stale-leader-commits-after-failover": "stale_leader_commits",
    "does-not-match--hw-above-leo": "hw_above_leo",
    "not-enabled--duplicated-step": "duplicate",
}


def _lines(events: list[dict[str, Any]]) -> list[str]:
    return [json.dumps(e, separators=(",", ":"), sort_keys=True) for e in events]


def samples() -> dict[str, bytes]:
    """name -> bytes; every sample is its own run (named after the file) so that judging
    them together does not merge them into one run with repeated sequence numbers."""
    builders = {
        "bad-json--torn-last-line.jsonl": lambda good, bad: _join(good) + good[0][:37].encode(),
        "not-object--array-line.jsonl": lambda good, bad: _join([*good, "[1, 2, 3]"]),
        "unknown-schema--version-2.jsonl": lambda good, bad: _join([*good, bad(schema="epochal.trace/2")]),
        "missing-field--no-run.jsonl": lambda good, bad: _join([*good, bad(run=None)]),
        "wrong-type--seq-is-string.jsonl": lambda good, bad: _join([*good, bad(seq="3")]),
        "unknown-kind--become-zombie.jsonl": lambda good, bad: _join([*good, bad(kind="become_zombie")]),
        "bad-value--negative-seq.jsonl": lambda good, bad: _join([*good, bad(seq=-1)]),
        "torn-gzip--truncated-download.jsonl.gz": lambda good, bad: _torn(_join(good)),
        "unreadable-file--not-parquet.parquet": lambda good, bad: b"PAR1 this file was cut off before its footer",
    }
    out = {}
    for name, build in builders.items():
        run = name.split(".")[0]
        events = [e for e in generate_run(run, partitions=1, records=2) if e["node"] == 2]

        def bad(_events=events, **changes) -> str:
            e = copy.deepcopy(_events[-1])
            for k, v in changes.items():
                if v is None:
                    e.pop(k)
                else:
                    e[k] = v
            return json.dumps(e)

        out[name] = build(_lines(events), bad)
    return out


def _join(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode()


def _torn(body: bytes) -> bytes:
    z = gzip.compress(body * 20)
    return z[: len(z) * 2 // 3]


def nonconforming() -> dict[str, list[dict[str, Any]]]:
    """case name -> events of one mutated run."""
    import random

    from conformance.mutations import MUTATIONS

    out = {}
    for name, mutation in CASES.items():
        run = generate_run(name, partitions=3, records=4, kill_leader=True, seed=5)
        mutant = MUTATIONS[mutation](run, random.Random(1))
        assert mutant is not None, name
        out[name] = mutant
    return out


def main() -> int:
    import shutil

    from traces.synthetic import write_run

    HERE.mkdir(parents=True, exist_ok=True)
    for name, data in samples().items():
        (HERE / name).write_bytes(data)
        print(HERE / name)
    shutil.rmtree(NONCONFORMING, ignore_errors=True)
    for name, events in nonconforming().items():
        write_run(events, NONCONFORMING)
        print(NONCONFORMING / name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
