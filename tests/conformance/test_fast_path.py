"""The job's two ways of reading files give the same outcome.

Files on the local filesystem are read by the Python executors (``_decode_local_files``),
any other filesystem through Spark's ``binaryFile`` source (``_decode_files``); both feed
the same decoding.  The judge's own shortcuts are held to the plain judge in
``tests/model/test_replay_fast_path.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.job import conform

pytestmark = pytest.mark.spark

DATA = Path(__file__).resolve().parents[2] / "traces" / "data"


def test_local_read_and_binary_file_read_agree(spark):
    paths = [str(DATA / d) for d in ("recorded", "malformed", "nonconforming")]
    local = conform(paths, spark=spark, log=lambda m: None)
    hadoop = conform(paths, spark=spark, log=lambda m: None, read_local=False)
    for field in ("files", "records", "events", "quarantined", "out_of_order", "groups", "conforming",
                  "violating", "errors", "runs", "exit_code"):
        assert getattr(local, field) == getattr(hadoop, field), field
    strip = [{k: v for k, v in verdict.items() if k != "judge_seconds"} for verdict in local.verdicts]
    assert strip == [{k: v for k, v in verdict.items() if k != "judge_seconds"} for verdict in hadoop.verdicts]
    assert local.violating > 0 and local.conforming > 0 and sum(local.quarantined.values()) > 0


def test_files_sharing_runs_are_grouped_transitively():
    from conformance.job import _file_groups

    pairs = [("a", "r1"), ("b", "r1"), ("b", "r2"), ("c", "r2"), ("d", "r3"), ("e", None), ("d", "r3")]
    assert sorted(_file_groups(pairs)) == [["a", "b", "c"], ["d"], ["e"]]
