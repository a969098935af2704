"""The Kafka log adapter on real lines: each pattern on a line captured from a Kafka 3.9.2
run (the fixture directory is that run's logs, trimmed to the lines the adapter reads), the
events the adapter makes of the run, and the judge's verdict on them."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.judge.replay import judge
from conformance.kafka.adapter import AdapterError, adapt, to_records
from conformance.kafka.patterns import PATTERNS, parse
from conformance.spark.verdict import judge_run

RUN = Path(__file__).parent / "fixtures" / "leader-kill-ibp26"
ADMIN = Path(__file__).parent / "fixtures" / "admin-elections-39"  # the controller's lines of a chaos --admin run
REASSIGN = Path(__file__).parent / "fixtures" / "reassign-39"  # kafka record --scenario reassign
RESTART = Path(__file__).parent / "fixtures" / "restart-checkpoint-ibp26"  # a chaos run's broker 1, killed and paused


def _real_lines() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in [p for run in (RUN, ADMIN, REASSIGN, RESTART) for p in sorted(run.glob("broker-*/logs/*.log"))]:
        for text in path.read_text().splitlines():
            line = parse(text)
            if line is not None:
                found.setdefault(line.name, []).append(text)
    return found


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_pattern_matches_a_real_line(name: str) -> None:
    assert _real_lines().get(name), f"no captured line matches {name}"


def test_a_leader_election_line_reads_as_kafka_wrote_it() -> None:
    text = next(t for t in _real_lines()["leader_elected"] if "from NewPartition" in t)
    line = parse(text)
    assert line is not None
    assert line.fields["isr"] == [3, 1, 2] and line.fields["epoch"] == "0" and line.fields["version"] == "0"
    assert line.fields["controller"] == "3" and line.fields["cepoch"] == "1"


def test_the_run_adapts_to_the_steps_it_took() -> None:
    records = to_records(adapt(RUN), "kafka")
    kinds = [r["kind"] for r in records]
    assert kinds[:2] == ["broker_restart", "controller_elect"]
    assert kinds.count("broker_restart") == 4 and kinds.count("broker_crash") == 1
    produced = [(r["params"]["offset"], r["params"]["value"], r["params"]["leader_epoch"])
                for r in records if r["kind"] == "produce"]
    assert produced == [(0, "v0", 0), (1, "v1", 0), (2, "v2", 0), (3, "v3", 2), (4, "v4", 2), (5, "v5", 2)]
    elections = [(r["params"]["leader"], r["params"]["leader_epoch"], r["params"]["reason"])
                 for r in records if r["kind"] == "elect_leader"]
    assert elections == [(3, 0, "init"), (-1, 1, "broker_change"), (1, 2, "leader_failed")]
    expand = next(r for r in records if r["kind"] == "expand_isr")
    assert expand["params"] == {"follower": 3, "isr": [1, 2, 3], "zk_version": 3}
    # per node: seq without gaps, clock rising
    for node in {r["node"] for r in records}:
        mine = [r for r in records if r["node"] == node]
        assert [r["seq"] for r in mine] == list(range(len(mine)))
        assert all(a["clock"] < b["clock"] for a, b in zip(mine, mine[1:], strict=False))


def test_the_judge_follows_the_run_to_the_documented_divergence() -> None:
    """docs/kafka.md, Divergences: Kafka's new controller writes the dead leader's partition
    leaderless (leader -1, epoch + 1) before it elects; the model elects at once."""
    (verdict,) = judge_run("kafka", to_records(adapt(RUN), "kafka"), judge, "kip320")
    assert verdict["status"] == "violates"
    assert verdict["first_bad_kind"] == "elect_leader"
    assert "leader is -1 where the model's step gives" in verdict["reason"]
    assert verdict["matched"] == 39  # every produce, fetch and the crash before it conform


def test_a_directory_without_logs_is_one_error(tmp_path: Path) -> None:
    with pytest.raises(AdapterError, match="not a Kafka run directory"):
        adapt(tmp_path)


def test_a_restart_carries_the_hw_its_broker_loaded_from_the_checkpoint() -> None:
    """Broker 1 of an ibp-2.6 chaos run (slow test, seed 2): started, killed, restarted, then
    paused past its session and re-registered.  Each process's first ``Log loaded for partition
    ... with initial high watermark N`` line of a partition is its restart's checkpoint (483
    after the kill: the checkpoint lagged the HW 488 it had); a re-registration is the same
    process, which loads nothing anew -- the offsets topic it loads then is no restart's."""
    registrations = [(e.kind, dict(e.params)) for _, e, _ in adapt(RESTART)
                     if e.kind in ("broker_restart", "broker_reregister")]
    assert registrations == [
        ("broker_restart", {"broker_epoch": 71, "broker": 1, "checkpointed_hw": {"chaos-0": 0}}),
        ("broker_restart", {"broker_epoch": 127, "broker": 1, "checkpointed_hw": {"chaos-0": 483}}),
        ("broker_reregister", {"broker_epoch": 135, "broker": 1}),
    ]
