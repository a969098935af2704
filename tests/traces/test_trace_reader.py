"""The reader returns valid events and quarantines every kind of malformed record, never raising."""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path

import pytest

from traces.parquet import convert, write_parquet
from traces.reader import iter_file, read_traces
from traces.synthetic import generate_run, write_run

GOOD = generate_run("r1", partitions=1, records=1)[-1]  # a receive_fetch with params and post


def line(**changes) -> str:
    e = copy.deepcopy(GOOD)
    for k, v in changes.items():
        if v is DELETE:
            e.pop(k)
        else:
            e[k] = v
    return json.dumps(e)


DELETE = object()


def reasons(text: str | bytes, name: str = "t.jsonl") -> list[str]:
    data = text.encode() if isinstance(text, str) else text
    return [r for _, ev, r, _ in iter_file(name, data) if ev is None]


def test_a_valid_file_gives_events_with_their_file_and_line(tmp_path):
    paths = write_run(generate_run("r1"), tmp_path)
    result = read_traces([tmp_path])
    assert not result.quarantined
    assert len(result.events) == len(generate_run("r1"))
    assert {e["_file"] for e in result.events} == {str(p) for p in paths}
    first = [e for e in result.events if e["_file"].endswith("/1.jsonl")]
    assert [e["_line"] for e in first] == list(range(1, len(first) + 1))


@pytest.mark.parametrize("text, code", [
    ('{"schema": "epochal.trace/1", "run": ', "bad_json"),
    ("[1, 2]", "not_object"),
    (line(schema="epochal.trace/2"), "unknown_schema"),
    (line(run=DELETE), "missing_field"),
    (line(seq="3"), "wrong_type"),
    (line(node=True), "wrong_type"),
    (line(clock=4.0), "wrong_type"),
    (line(params=[]), "wrong_type"),
    (line(kind="become_zombie"), "unknown_kind"),
    (line(topic=None), "missing_field"),
    (line(seq=-1), "bad_value"),
    (line(params={**GOOD["params"], "fetch_offset": "0"}), "wrong_type"),
    (line(params={k: v for k, v in GOOD["params"].items() if k != "leader_epoch"}), "missing_field"),
    (line(params={**GOOD["params"], "records": [[0, 0]]}), "wrong_type"),
    (line(post={"hw": 1}), "missing_field"),
])
def test_each_malformed_record_is_quarantined_with_its_reason(text, code):
    assert [r.split(":")[0] for r in reasons(text + "\n" + line() + "\n")] == [code]


def test_unknown_extra_fields_are_allowed():
    e = json.loads(line())
    e["new_field"] = 1
    e["params"]["new_param"] = [1]
    assert reasons(json.dumps(e)) == []


def test_a_torn_last_line_is_quarantined_and_the_rest_kept():
    data = line() + "\n" + line()[:40]
    got = list(iter_file("t.jsonl", data.encode()))
    assert got[0][1] is not None and got[1][2].startswith("bad_json") and got[1][0] == 2


def test_a_truncated_gzip_keeps_the_lines_before_the_damage():
    body = "".join(line(seq=i) + "\n" for i in range(200)).encode()
    z = gzip.compress(body)
    got = list(iter_file("t.jsonl.gz", z[: len(z) // 2]))
    good = [g for g in got if g[1] is not None]
    assert 0 < len(good) < 200 and [g[1]["seq"] for g in good] == list(range(len(good)))
    assert got[-1][2].startswith("torn_gzip") and got[-1][0] == len(good) + 1


def test_corrupt_gzip_and_trailing_garbage_are_torn_gzip():
    z = bytearray(gzip.compress((line() + "\n").encode() * 50))
    z[30:40] = b"\xff" * 10
    assert reasons(bytes(z), "t.gz")[-1].startswith("torn_gzip")
    assert reasons(gzip.compress(b"\n") + b"garbage", "t.gz")[-1].startswith("torn_gzip")


def test_concatenated_gzip_members_are_one_stream():
    z = gzip.compress((line(seq=0) + "\n").encode()) + gzip.compress((line(seq=1) + "\n").encode())
    assert [e["seq"] for _, e, _, _ in iter_file("t.gz", z)] == [0, 1]


def test_a_line_that_is_not_utf8_is_bad_json():
    assert reasons(b"\xff\xfe{}\n")[0].startswith("bad_json")


def test_an_unreadable_parquet_file_is_quarantined_whole():
    assert reasons(b"PAR1 this is not parquet", "t.parquet")[0].startswith("unreadable_file")


def test_parquet_gives_the_same_events_as_json_lines(tmp_path):
    write_run(generate_run("r1", kill_leader=True), tmp_path / "j")
    convert([str(tmp_path / "j")], str(tmp_path / "p" / "all.parquet"))
    strip = lambda es: sorted(({k: v for k, v in e.items() if not k.startswith("_")} for e in es),  # noqa: E731
                              key=lambda e: (e["node"], e["seq"]))
    j, p = read_traces([tmp_path / "j"]), read_traces([tmp_path / "p"])
    assert not p.quarantined and strip(p.events) == strip(j.events)
    assert [e["_line"] for e in p.events] == list(range(1, len(p.events) + 1))


def test_parquet_rows_are_validated_like_lines(tmp_path):
    bad = copy.deepcopy(GOOD)
    bad["kind"] = "nonsense"
    write_parquet([GOOD, bad], tmp_path / "x.parquet")
    r = read_traces([tmp_path])
    assert len(r.events) == 1 and r.quarantined[0].line == 2 and r.quarantined[0].reason.startswith("unknown_kind")


def test_directories_skip_hidden_and_underscore_files(tmp_path):
    (tmp_path / "_SUCCESS").write_text("")
    (tmp_path / ".x.jsonl").write_text("junk\n")
    (tmp_path / "notes.txt").write_text("junk\n")
    (tmp_path / "a.jsonl").write_text(line() + "\n")
    r = read_traces([tmp_path])
    assert r.files == [str(tmp_path / "a.jsonl")] and len(r.events) == 1


def test_a_missing_path_is_a_usage_error_not_bad_data(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_traces([tmp_path / "nope"])


def test_broken_sample_files_in_traces_data_fail_for_the_reason_in_their_name():
    broken = Path(__file__).resolve().parents[2] / "traces" / "data" / "malformed"
    files = sorted(broken.glob("*"))
    assert files, "traces/data/malformed/ holds the deliberately malformed samples"
    for f in files:
        expected = f.name.split(".")[0].split("--")[0].replace("-", "_")
        got = {q.reason.split(":")[0] for q in read_traces([f]).quarantined}
        assert expected in got, f"{f.name}: {got}"
