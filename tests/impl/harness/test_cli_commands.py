"""The cluster commands' command line: a request that would do nothing says so and records
nothing, partial writes are reported, consume prints positions, the broker commands find the
cluster from --bootstrap, and every command's --json is one object.

The client classes are replaced by small fakes where the behaviour under test is the
command's own (what it asks, what it prints, what it refuses); the broker processes are
real processes (``sleep``), so pausing is a real SIGSTOP.
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import impl.harness.cli.cluster_access as cluster_access
import impl.node.client as client
from impl.harness.cli.main import main


class _Stdin:
    def __init__(self, data: bytes) -> None:
        self.buffer = io.BytesIO(data)


class FakeProducer:
    """Accepts every value; remembers them."""

    sent: list[tuple[str, Any, int | None]] = []
    keys: list[Any] = []

    def __init__(self, *a: Any, **k: Any) -> None:
        FakeProducer.sent, FakeProducer.keys = [], []

    def __enter__(self) -> FakeProducer:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def partitions(self, topic: str) -> list[int]:
        return [0, 1]

    def send(self, topic: str, value: Any, partition: int | None = None, key: Any = None) -> dict[str, Any]:
        p = len(FakeProducer.sent) % 2 if partition is None else partition
        FakeProducer.sent.append((topic, value, p))
        FakeProducer.keys.append(key)
        return {"partition": p, "offset": len(FakeProducer.sent) - 1}


def test_produce_stops_at_a_line_that_is_not_utf8_and_says_what_was_written(monkeypatch, capsys):
    monkeypatch.setattr(client, "Producer", FakeProducer)
    monkeypatch.setattr(sys, "stdin", _Stdin(b"one\ntwo\n\xff\xfe\nfour\n"))
    assert main(["produce", "t"]) == 2
    err = capsys.readouterr().err
    assert "line 3 is not UTF-8" in err and "2 record(s) were produced to t before it" in err
    assert "partition 0: 1, partition 1: 1" in err and "Traceback" not in err
    assert [v for _, v, _ in FakeProducer.sent] == ["one", "two"]


def test_produce_json_counts_the_records_per_partition(monkeypatch, capsys):
    monkeypatch.setattr(client, "Producer", FakeProducer)
    monkeypatch.setattr(sys, "stdin", _Stdin(b"a\nb\nc\n"))
    assert main(["produce", "t", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data == {"command": "produce", "schema_version": 1, "exit_code": 0, "topic": "t", "acks": "all", "produced": 3,
                    "partitions": {"0": 2, "1": 1}}


class FakeConsumer:
    """Two partitions of three committed records each, delivered in one poll."""

    def __init__(self, *a: Any, **k: Any) -> None:
        self.positions: dict[tuple[str, int], int] = {}
        self.polled = False

    def __enter__(self) -> FakeConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def assign(self, topic: str, from_beginning: bool = True) -> None:
        self.positions = {(topic, 0): 0, (topic, 1): 0}

    def poll_records(self, max_wait_ms: int = 200) -> list[client.Record]:
        if self.polled:
            return []
        self.polled = True
        return [client.Record(t, p, o, f"v{p}{o}".encode(), f"k{o}".encode() if p == 0 else None)
                for (t, p) in sorted(self.positions) for o in range(3)]


def test_consume_prints_partition_and_offset_and_stops_at_max_messages(monkeypatch, capsys):
    monkeypatch.setattr(client, "Consumer", FakeConsumer)
    assert main(["consume", "t", "--from-beginning", "--print-partition", "--print-offset",
                 "--max-messages", "4", "--timeout", "0.2"]) == 0
    assert capsys.readouterr().out.splitlines() == ["0\t0\tv00", "0\t1\tv01", "0\t2\tv02", "1\t0\tv10"]


def test_consume_one_partition_as_json(monkeypatch, capsys):
    monkeypatch.setattr(client, "Consumer", FakeConsumer)
    assert main(["consume", "t", "--partition", "1", "--timeout", "0.2", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["command"] == "consume" and data["exit_code"] == 0
    assert data["records"] == [{"partition": 1, "offset": o, "key": None, "value": f"v1{o}"} for o in range(3)]
    assert main(["consume", "t", "--partition", "7", "--timeout", "0.2"]) == 2
    assert "has no partition 7 (partitions: 0, 1)" in capsys.readouterr().err


def test_produce_splits_each_line_into_key_and_value_at_the_separator(monkeypatch, capsys):
    monkeypatch.setattr(client, "Producer", FakeProducer)
    monkeypatch.setattr(sys, "stdin", _Stdin(b"k1:a\nk2:b:c\nno key here\n"))
    assert main(["produce", "t", "--key-separator", ":"]) == 2
    err = capsys.readouterr().err
    assert "line 3 has no key separator ':'" in err and "2 record(s) were produced" in err
    assert [v for _, v, _ in FakeProducer.sent] == ["a", "b:c"] and FakeProducer.keys == ["k1", "k2"]


def test_consume_prints_each_key_and_null_for_none(monkeypatch, capsys):
    monkeypatch.setattr(client, "Consumer", FakeConsumer)
    assert main(["consume", "t", "--from-beginning", "--print-partition", "--print-offset", "--print-key",
                 "--max-messages", "4", "--timeout", "0.2"]) == 0
    assert capsys.readouterr().out.splitlines() == ["0\t0\tk0\tv00", "0\t1\tk1\tv01", "0\t2\tk2\tv02",
                                                    "1\t0\tnull\tv10"]


class FakeAdmin:
    quotas: list[dict[str, Any]] = []
    altered: list[tuple[Any, Any, Any]] = []

    def __init__(self, *a: Any, **k: Any) -> None:
        pass

    def __enter__(self) -> FakeAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def describe_quotas(self) -> dict[str, Any]:
        return {"quotas": list(FakeAdmin.quotas), "metrics": {}}

    def alter_quota(self, user: Any, client_id: Any, rate: Any) -> None:
        FakeAdmin.altered.append((user, client_id, rate))


def test_deleting_a_quota_that_does_not_exist_says_so_and_sends_nothing(monkeypatch, capsys):
    monkeypatch.setattr(client, "Admin", FakeAdmin)
    FakeAdmin.quotas, FakeAdmin.altered = [], []
    assert main(["quotas", "alter", "--user", "nobody", "--delete"]) == 2
    err = capsys.readouterr().err
    assert "no controller_mutation_rate quota for" in err and "nothing removed" in err
    assert FakeAdmin.altered == []
    FakeAdmin.quotas = [{"user": "alice", "client_id": None, "controller_mutation_rate": 2.0}]
    assert main(["quotas", "alter", "--user", "alice", "--delete", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["removed"] is True
    assert FakeAdmin.altered == [("alice", None, None)]


@pytest.fixture
def fake_cluster(tmp_path: Path, monkeypatch):
    """A cluster.json naming one real process as broker 2 (a ``sleep``), and the pointer
    ``cluster start`` leaves for its endpoint."""
    proc = subprocess.Popen(["sleep", "60"])
    data_dir = tmp_path / "cluster"
    data_dir.mkdir()
    state = {"run_id": "r1", "zookeeper": "127.0.0.1:1", "data_dir": str(data_dir), "supervisor_pid": -1,
             "brokers": {"2": {"pid": proc.pid, "host": "127.0.0.1", "port": 19092, "argv": ["sleep", "60"]}}}
    (data_dir / "cluster.json").write_text(json.dumps(state))
    monkeypatch.setattr(cluster_access, "CLUSTERS", tmp_path / "pointers")
    cluster_access.leave_pointers(data_dir, [("127.0.0.1", 19092)])
    yield data_dir, proc
    os.kill(proc.pid, signal.SIGCONT)
    proc.kill()
    proc.wait(timeout=10)


def _recorded(data_dir: Path) -> list[str]:
    return [p.name for p in data_dir.rglob("*.jsonl")]


@pytest.mark.integration
def test_resuming_a_broker_that_is_not_paused_says_so_and_records_nothing(fake_cluster, capsys):
    data_dir, proc = fake_cluster
    assert main(["broker", "resume", "2", "--bootstrap", "127.0.0.1:19092"]) == 2
    err = capsys.readouterr().err
    assert f"broker 2 (pid {proc.pid}) is not paused: nothing to resume, nothing recorded" in err
    assert _recorded(data_dir) == []


@pytest.mark.integration
def test_broker_commands_find_the_cluster_from_bootstrap(fake_cluster, capsys):
    data_dir, proc = fake_cluster
    os.kill(proc.pid, signal.SIGSTOP)
    assert main(["broker", "pause", "2", "--bootstrap", "127.0.0.1:19092", "--json"]) == 2
    data = json.loads(capsys.readouterr().out)
    assert data["command"] == "broker pause" and data["exit_code"] == 2 and "already paused" in data["error"]
    assert main(["broker", "start", "2", "--bootstrap", "127.0.0.1:19092"]) == 2
    assert "already running" in capsys.readouterr().err
    # an explicit --data-dir still works, and an unknown endpoint falls back to the default dir
    assert main(["broker", "start", "2", "--data-dir", str(data_dir)]) == 2
    assert "already running" in capsys.readouterr().err


@pytest.mark.integration
def test_old_flag_spellings_still_parse_and_are_hidden(capsys):
    from impl.harness.cli.main import build_parser

    parser = build_parser()
    args = parser.parse_args(["topics", "add-partitions", "t", "--count", "4"])
    assert args.count == 4
    assert parser.parse_args(["topics", "add-partitions", "t", "--partitions", "5"]).count == 5
    args = parser.parse_args(["topics", "remove-partitions", "t", "--partitions", "1,2"])
    assert args.partition_list == "1,2"
    assert parser.parse_args(["chaos", "--seed", "1", "--duration", "1", "--unclean"]).unclean is True
    assert parser.parse_args(["check", "--min-insync", "2", "--unclean"]).min_insync == 2
    assert parser.parse_args(["check", "--min-insync-replicas", "2", "--no-unclean-leader-election"]).unclean is False
    for argv in (["chaos"], ["check"], ["topics", "add-partitions"]):
        with pytest.raises(SystemExit):  # the help the command line prints, from its own parser
            parser.parse_args([*argv, "--help"])
        text = capsys.readouterr().out
        assert "usage: epochal" in text
        assert "--unclean " not in text and "--min-insync " not in text and "--count" not in text
