"""The job's two ways of reading files give the same outcome.

Files on the local filesystem are read by the Python executors (``_decode_local_files``),
any other filesystem through Spark's ``binaryFile`` source (``decode_files``); both feed
the same decoding.  The judge's own shortcuts are held to the plain judge in
``tests/conformance/test_replay_fast_path.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.spark.job import conform

pytestmark = pytest.mark.spark

DATA = Path(__file__).resolve().parents[2] / "traces" / "data"


@pytest.mark.integration
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
    from conformance.spark.plan import _file_groups

    pairs = [("a", "r1"), ("b", "r1"), ("b", "r2"), ("c", "r2"), ("d", "r3"), ("e", None), ("d", "r3")]
    assert sorted(_file_groups(pairs)) == [["a", "b", "c"], ["d"], ["e"]]


@pytest.mark.integration
def test_local_listing_is_the_files_spark_lists(spark, tmp_path):
    """The job lists local directories itself (``list_local``); it must pick exactly the
    files Spark's binaryFile source picks: hidden and "_" names skipped (files and
    directories), partition directories and Parquet metadata kept, only trace suffixes."""
    from conformance.spark.read import list_local
    from traces.reader import TRACE_GLOB

    names = ["a.jsonl", "b.json", "c.ndjson", "d.jsonl.gz", "e.parquet", "f.txt", "g.jsonl.tmp",
             ".hidden.jsonl", "_SUCCESS", "_x.jsonl", "h.jsonl._COPYING_", "_metadata", "_common_metadata.json",
             "sub/i.jsonl", "sub/deeper/j.jsonl", ".git/k.jsonl", "_tmp/l.jsonl", "k=v/m.jsonl", "_k=v/n.jsonl",
             "sp ace/o.jsonl"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("{}\n")
    uri = tmp_path.as_uri()
    ours = list_local(uri)
    theirs = (spark.read.format("binaryFile").option("recursiveFileLookup", "true")
              .option("pathGlobFilter", TRACE_GLOB).load(uri).inputFiles())
    from conformance.spark.read import display_path

    assert sorted(display_path(u) for u in ours) == sorted(display_path(u) for u in theirs)
    kept = sorted(display_path(u)[len(str(tmp_path)) + 1:] for u in ours)
    assert kept == ["_common_metadata.json", "_k=v/n.jsonl", "a.jsonl", "b.json", "c.ndjson", "d.jsonl.gz",
                    "e.parquet", "k=v/m.jsonl", "sp ace/o.jsonl", "sub/deeper/j.jsonl", "sub/i.jsonl"]


@pytest.mark.integration
def test_a_run_whose_files_were_dealt_to_two_tasks_is_judged_again_whole(spark, tmp_path):
    """The local plan deals files to tasks by their directory (one run per directory, as
    recorders write them).  A file of one run's directory holding another run's lines
    sends the second run to two tasks; the job must notice and judge that run again from
    all its files, giving what the shuffled plan (which groups by every record's run) gives."""
    from traces.synthetic import generate_run, write_run

    first = generate_run("run-a", partitions=2, records=4, seed=1)
    second = generate_run("run-b", partitions=2, records=4, kill_leader=True, seed=2)
    write_run(first, tmp_path)
    write_run(second, tmp_path)
    # run-b's broker 2 lines move behind run-a's broker 1 lines, in run-a's file
    mixed = tmp_path / "run-a" / "1.jsonl"
    moved = tmp_path / "run-b" / "2.jsonl"
    mixed.write_text(mixed.read_text() + moved.read_text())
    moved.unlink()
    logs: list[str] = []
    local = conform([str(tmp_path)], spark=spark, log=logs.append)
    hadoop = conform([str(tmp_path)], spark=spark, log=lambda m: None, read_local=False)
    assert any("judged again whole" in m for m in logs), logs
    assert (local.groups, local.conforming, local.events, local.runs) == (hadoop.groups, hadoop.conforming,
                                                                          hadoop.events, hadoop.runs)
    assert local.conforming == local.groups == 4 and local.exit_code == 0


def test_large_directories_are_cut_between_file_stems_only():
    """A directory of many runs is dealt out in pieces of about ``GROUP_FILES`` files, never
    cutting between two files of one stem (one run's node files), so no run is split."""
    from conformance.spark.plan import GROUP_FILES, _guess_groups

    uris = [f"file:///c/d/run-{r:04d}.{n}.jsonl" for r in range(100) for n in (-1, 1, 2, 3)]
    uris += ["file:///c/e/broker-1.jsonl", "file:///c/e/broker-2.jsonl"]
    groups = _guess_groups(uris)
    assert sorted(u for g in groups for u in g) == sorted(uris)
    assert ["file:///c/e/broker-1.jsonl", "file:///c/e/broker-2.jsonl"] in groups
    stems = [{u.rsplit("/", 1)[1].split(".")[0] for u in g} for g in groups]
    assert all(not (a & b) for i, a in enumerate(stems) for b in stems[i + 1:])
    assert all(len(g) <= GROUP_FILES + 3 for g in groups) and len(groups) > 400 // GROUP_FILES


def test_executors_pace_the_collector_and_restore_it(monkeypatch):
    """Inside a task the collector runs only at the paced moments (young every
    YOUNG_EVERY events, full every FULL_EVERY), and it is switched back on when the task
    ends -- normally or abandoned half-way (Spark closes the generator)."""
    import gc
    import json

    import pyarrow as pa

    from conformance.spark import tasks

    files = [str(p) for p in sorted((DATA / "recorded").rglob("*.jsonl*"))]
    largest = max(Path(f).read_text(encoding="utf-8").count("\n") for f in files)
    monkeypatch.setattr(tasks._CollectorPace, "YOUNG_EVERY", 1)
    # no file alone reaches a full collection: young ones after each, a full one now and then
    monkeypatch.setattr(tasks._CollectorPace, "FULL_EVERY", largest + 1)
    collected: list[int] = []
    monkeypatch.setattr(gc, "collect", lambda generation=2: collected.append(generation) or 0)
    enabled_while_judging: list[bool] = []

    def spy_judge(events, config="kip320"):
        enabled_while_judging.append(gc.isenabled())
        return {"conforms": True, "matched": len(events), "total": len(events), "first_bad": None,
                "reason": None, "property": None, "possible_states": [], "bound": 0}

    assert gc.isenabled()
    batch = pa.RecordBatch.from_pylist([{"id": 0}])
    dealt = [json.dumps([[f] for f in files])]
    list(tasks.judge_file_groups(spy_judge, "kip320", dealt)(iter([batch])))
    judged = len(enabled_while_judging)
    assert judged >= 3 and not any(enabled_while_judging)
    assert collected.count(2) >= 1 and collected.count(1) >= 1
    assert gc.isenabled()

    monkeypatch.setattr(tasks, "OUTPUT_ROWS", 1)  # a batch after the first run: stop there
    task = tasks.judge_file_groups(spy_judge, "kip320", dealt)(iter([batch]))
    next(task)
    assert not gc.isenabled()
    task.close()
    assert gc.isenabled()
