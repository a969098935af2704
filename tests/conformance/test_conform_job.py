"""The Spark job end to end on one shared local[2] session: bad input, exit codes, formats."""

from __future__ import annotations

import gzip
import json
import random
import shutil

import conform_judges
import pytest

from conformance.spark.cli import standalone_main
from conformance.spark.job import InputError, conform
from traces.parquet import convert
from traces.synthetic import generate_run, write_run

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def corpus(directory, runs=4, **kw):
    for i in range(runs):
        write_run(generate_run(f"run{i}", seed=i, kill_leader=i % 2 == 1, **kw), directory)
    return directory


@pytest.mark.slow
def test_a_directory_mixing_valid_traces_and_garbage_is_reported_and_the_valid_runs_judged(spark, tmp_path):
    d = corpus(tmp_path / "in")
    # a run whose only node file is a truncated gzip: its surviving prefix is still judged
    lines = [json.dumps(e) for e in generate_run("gz-run", partitions=1)]
    z = gzip.compress(("\n".join(lines) + "\n").encode())
    (d / "gz-run.jsonl.gz").write_bytes(z[: len(z) // 2])
    (d / "invalid.jsonl").write_text('{"schema": "epochal.trace/1", "run": "x"\nnot json at all\n')
    wrong = json.loads(lines[5])
    wrong["seq"], wrong["run"] = "five", "run0"
    (d / "wrong-types.jsonl").write_text(json.dumps(wrong) + "\n" + json.dumps({**wrong, "node": "b"}) + "\n")

    out = conform([str(d)], str(tmp_path / "out"), spark=spark, judge=conform_judges.hw_within_leo)
    assert out.quarantined == {"bad_json": 2, "torn_gzip": 1, "wrong_type": 2}
    assert {v["run"] for v in out.verdicts} == {"run0", "run1", "run2", "run3", "gz-run"}
    assert out.violating == 0 and out.conforming == out.groups == 9
    assert out.exit_code == 0  # every group conforms; the malformed records are counted

    strict = conform([str(d)], None, spark=spark, judge=conform_judges.hw_within_leo, strict=True)
    assert strict.exit_code == 1

    # everything is on disk, as Parquet and as JSON
    q = spark.read.parquet(str(tmp_path / "out" / "quarantine.parquet"))
    assert q.count() == 5 and {r.reason.split(":")[0] for r in q.collect()} == {"bad_json", "torn_gzip", "wrong_type"}
    assert spark.read.json(str(tmp_path / "out" / "verdicts.json")).count() == 9
    summary = json.loads(spark.read.text(str(tmp_path / "out" / "summary.json")).first()[0])
    assert summary["malformed"] == 5 and summary["groups"] == 9


def test_exit_codes_0_conforms_1_does_not_2_unusable(spark, tmp_path, capsys):
    good = corpus(tmp_path / "good")
    assert standalone_main([str(good), "--judge", "conform_judges:hw_within_leo"], spark=spark) == 0

    bad = corpus(tmp_path / "bad", runs=2)
    f = bad / "run1" / "2.jsonl"
    events = [json.loads(x) for x in f.read_text().splitlines()]
    victim = next(e for e in events if e["kind"] == "receive_fetch" and e["post"]["leo"] > 0)
    victim["post"]["hw"] = victim["post"]["leo"] + 1
    f.write_text("".join(json.dumps(e) + "\n" for e in events))
    assert standalone_main([str(bad), "--judge", "conform_judges:hw_within_leo"], spark=spark) == 1
    report = capsys.readouterr().out
    assert f"at {f}:{events.index(victim) + 1}" in report and "HighWatermarkWithinLog" in report
    assert "matched" in report

    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "a.jsonl").write_text("nope\n")
    assert standalone_main([str(junk), "--judge", "conform_judges:hw_within_leo"], spark=spark) == 2
    assert standalone_main([str(tmp_path / "missing")], spark=spark) == 2
    err = capsys.readouterr().err
    assert "no readable trace records" in err and "no such file or directory" in err
    with pytest.raises(InputError, match="judge nowhere:judge is not available"):
        conform([str(good)], spark=spark, judge="nowhere:judge")


def test_json_lines_and_parquet_give_identical_verdicts(spark, tmp_path):
    src = corpus(tmp_path / "jsonl", runs=6)
    victim = src / "run3" / "1.jsonl"
    events = [json.loads(x) for x in victim.read_text().splitlines()]
    for e in events:
        if e["kind"] == "produce":
            e["post"]["hw"] = 99
            break
    victim.write_text("".join(json.dumps(e) + "\n" for e in events))
    convert([str(src)], str(tmp_path / "parquet"), per_file=True)
    # and one run whose nodes were recorded in different formats
    shutil.copytree(src / "run3", tmp_path / "mixed" / "run3")
    (tmp_path / "mixed" / "run3" / "1.jsonl").unlink()
    shutil.copy(tmp_path / "parquet" / "run3" / "1.parquet", tmp_path / "mixed" / "run3")

    def key(o):
        return sorted((v["run"], v["topic"], v["partition"], v["status"], v["matched"], v["total"],
                       v["first_bad"], v["reason"], v["first_bad_seq"]) for v in o.verdicts)

    j = conform([str(src)], spark=spark, judge=conform_judges.hw_within_leo)
    p = conform([str(tmp_path / "parquet")], spark=spark, judge=conform_judges.hw_within_leo)
    assert j.exit_code == p.exit_code == 1 and j.violating == 1
    assert key(j) == key(p)
    m = conform([str(tmp_path / "mixed")], spark=spark, judge=conform_judges.hw_within_leo)
    assert key(m) == [k for k in key(j) if k[0] == "run3"]


def test_shuffled_files_are_judged_in_causal_order_and_disorder_is_counted(spark, tmp_path):
    d = corpus(tmp_path / "in", runs=2)
    f = d / "run0" / "1.jsonl"
    lines = f.read_text().splitlines()
    random.Random(3).shuffle(lines)
    f.write_text("\n".join(lines) + "\n")
    out = conform([str(d)], spark=spark, judge=conform_judges.causal)
    assert out.exit_code == 0 and out.conforming == out.groups == 4
    assert out.out_of_order > 0
    assert all(v["out_of_order"] == 0 for v in out.verdicts if v["run"] == "run1")


def test_a_broken_judge_gives_error_verdicts_not_a_crash(spark, tmp_path):
    out = conform([str(corpus(tmp_path / "in", runs=1))], spark=spark, judge=conform_judges.explodes)
    assert out.exit_code == 3 and out.errors == out.groups == 2  # nothing decided: inconclusive
    assert "judge bug" in out.verdicts[0]["reason"]


@pytest.mark.slow
def test_a_local_run_prints_the_jobs_own_lines_not_sparks_log(tmp_path):
    """From a fresh JVM, as a user runs it: stderr holds the job's progress, not Spark's
    start-up WARN lines (host name, native Hadoop, log profile, default log level) -- the
    driver gets a quiet log4j2 configuration.  The one line left is the JVM's own notice
    about the incubator module Spark 4 enables, which no logging configuration reaches."""
    import subprocess
    import sys
    from pathlib import Path

    data = Path(__file__).resolve().parents[2] / "traces" / "data" / "recorded" / "leader-kill"
    p = subprocess.run(
        [sys.executable, "-m", "impl.harness.cli.main", "conform", str(data), "--out", str(tmp_path / "v")],
        capture_output=True, text=True, timeout=300,
    )
    assert p.returncode == 0, p.stderr
    noise = [line for line in p.stderr.splitlines() if line.strip() and not line.startswith("[conform ") and "incubator modules" not in line]
    assert noise == [], noise
    assert "conforms" in p.stdout


def test_a_job_given_no_session_leaves_the_session_the_process_runs_running(spark, tmp_path):
    """``getOrCreate`` hands the job the session that already runs (a test run's shared one):
    the job must not stop it, or every later user of that session fails."""
    out = conform([str(corpus(tmp_path / "in", runs=1))], judge=conform_judges.hw_within_leo)
    assert out.exit_code == 0
    assert spark.sparkContext._jsc is not None, "the job stopped a session it did not start"
    assert spark.range(3).count() == 3
