"""A partition reassignment on real Kafka 3.9.2 (``epochal kafka record --scenario reassign``:
``orders-0`` on brokers 1,2, led by 1, moved to 2,3 by Kafka's ReassignPartitionsCommand under
controller 2), its logs trimmed to the lines the adapter reads: the patterns on the lines
Kafka wrote, the events the adapter makes of them, and the verdicts -- ``kafka39`` (Kafka's
phases, ``Config.reassign_phases``) conforms, seed 000 F (``kip320``) stops at the start's
epoch; the IBP 2.6 run conforms to ``kafka26`` as well, past its follower's old fetcher."""

from __future__ import annotations

from pathlib import Path

from conformance.judge.replay import judge
from conformance.kafka.adapter import _Adapter, adapt, model_config, ordered_lines, to_records
from conformance.kafka.ordering import stopped_while_polling
from conformance.kafka.patterns import parse
from conformance.spark.verdict import judge_run

FIXTURES = Path(__file__).parent / "fixtures"
RUN_39, RUN_26 = FIXTURES / "reassign-39", FIXTURES / "reassign-ibp26"


def _lines(run: Path, name: str) -> list:
    found = []
    for path in sorted(run.glob("broker-*/logs/*.log")):
        found += [x for x in map(parse, path.read_text().splitlines()) if x is not None and x.name == name]
    return found


def test_the_assignment_writes_read_as_kafka_wrote_them() -> None:
    start, end = _lines(RUN_39, "assignment_updated")
    assert (start.fields["replicas"], start.fields["adding"], start.fields["removing"]) == ("2,3,1", "3", "1")
    assert (end.fields["replicas"], end.fields["adding"], end.fields["removing"]) == ("2,3", "", "")
    (caught,) = _lines(RUN_39, "reassign_caught_up")
    assert (caught.fields["target"], caught.fields["tp"]) == ("2, 3", "orders-0")


def test_the_starts_epoch_bump_reads_as_kafka_wrote_it() -> None:
    """Phase A's updateLeaderEpochAndSendRequest: the same leader and ISR at a new epoch."""
    (bump,) = _lines(RUN_39, "reassign_epoch")
    f = bump.fields
    assert (f["leader"], f["isr"], f["epoch"], f["version"]) == ("1", "1,2", "1", "1")
    assert (f["replicas"], f["adding"], f["removing"], f["tp"]) == ("2,3,1", "3", "1", "orders-0")


def test_the_removed_replica_is_stopped_then_deleted() -> None:
    stops = _lines(RUN_39, "stop_replica_received")
    assert [(x.fields["broker"], x.fields["epoch"], x.fields["delete"]) for x in stops] == [
        ("1", "2", "false"), ("1", "3", "true")]


def test_the_run_adapts_to_the_models_reassignment_steps() -> None:
    records = to_records(adapt(RUN_39), "kafka")
    moves = [r for r in records if r["kind"] == "reassignment"]
    assert [(m["params"]["state"], m["params"]["rar"]) for m in moves] == [("IN_PROGRESS", [2, 3]), ("DONE", [2, 3])]
    assert moves[0]["params"]["ar"] == [1, 2] and moves[0]["zxid"] is not None
    # the start's epoch: leader 1 applies epoch 1 for itself, the new replica 3 follows it
    starts = [(r["kind"], r["node"]) for r in records if r["kind"].startswith("become") and r["params"]["leader_epoch"] == 1]
    assert ("become_leader", 1) in starts and ("become_follower", 3) in starts
    writes = [(r["params"]["reason"], r["params"]["leader"], r["params"]["leader_epoch"], r["params"]["isr"])
              for r in records if r["kind"] == "elect_leader"]
    assert writes[-2:] == [("reassign", 2, 2, [1, 2, 3]), ("broker_change", 2, 3, [2, 3])]
    (stop,) = [r for r in records if r["kind"] == "stop_replica"]
    assert (stop["node"], stop["params"]["delete"]) == (1, True)
    assert records.index(stop) > next(i for i, r in enumerate(records) if r["params"].get("isr") == [2, 3])


def test_a_fetch_whose_leader_stopped_during_its_long_poll_was_read() -> None:
    """Replica 3's fetch at offset 3 was read by leader 1 in epoch 1 (it joined the ISR by it)
    and answered NOT_LEADER_OR_FOLLOWER after the StopReplica; one asked in an epoch the
    broker did not lead in was not read."""
    answer = {"errorCode": 6, "currentLeader": {"leaderId": 2, "leaderEpoch": 3}}
    assert stopped_while_polling(1, 1, answer)
    assert not stopped_while_polling(2, 1, answer) and not stopped_while_polling(1, 1, {"errorCode": 75})
    records = to_records(adapt(RUN_39), "kafka")
    read = next(i for i, r in enumerate(records) if r["kind"] == "handle_fetch" and r["params"]["follower"] == 3
                and r["params"]["fetch_offset"] == 3 and r["node"] == 1)
    assert read < next(i for i, r in enumerate(records) if r["kind"] == "alter_partition")


def test_the_run_conforms_to_kafka39_and_the_seed_stops_at_the_starts_epoch() -> None:
    assert model_config(RUN_39) == "kafka39"
    records = to_records(adapt(RUN_39), "kafka")
    (verdict,) = judge_run("kafka", records, judge, "kafka39")
    assert verdict["status"] == "conforms", verdict["reason"]
    assert verdict["matched"] == verdict["total"] == len(records)
    (seed,) = judge_run("kafka", records, judge, "kip320")
    assert (seed["first_bad_kind"], seed["first_bad_node"]) == ("become_leader", 1), seed["reason"]
    assert records[seed["matched"]]["params"]["leader_epoch"] == 1


def test_at_ibp26_the_leaders_own_expansion_goes_before_the_controllers_completion() -> None:
    """The leader writes the ISR 1,2,3 itself and logs it after the controller logged that the
    target caught up: the adapter puts it (and the fetch it was made in) first."""
    records = to_records(adapt(RUN_26), "kafka")
    expand = next(i for i, r in enumerate(records) if r["kind"] == "expand_isr" and r["params"]["follower"] == 3)
    done = next(i for i, r in enumerate(records) if r["kind"] == "elect_leader" and r["params"]["reason"] == "reassign")
    assert expand < done
    assert records[expand - 1]["kind"] == "handle_fetch" and records[expand - 1]["params"]["follower"] == 3


def test_the_ibp26_run_conforms_past_the_followers_old_fetcher() -> None:
    """Follower 3 logs ``Follower orders-0 starts at leader epoch 3`` 27 ms before its epoch-2
    fetcher is taken off (``Removed fetcher for partitions Set(orders-0)``): meanwhile that
    fetcher's epoch lookup, answered by leader 2 before its own epoch 3 (the relay's
    OffsetForLeaderEpoch answer), and a fetch leader 2 fences.  The adapter places the
    lookup at its answer and the follower's epoch at the removal: ``kafka26`` conforms, and
    the seed stops at the start's epoch."""
    assert model_config(RUN_26) == "kafka26"
    records = to_records(adapt(RUN_26), "kafka")
    at = {(r["kind"], r["node"], r["params"].get("leader_epoch")): i for i, r in enumerate(records)}
    fenced = next(i for i, r in enumerate(records) if r["params"].get("error") == "FENCED_LEADER_EPOCH")
    lookup = max(i for i, r in enumerate(records) if r["kind"] == "truncate" and r["node"] == 3 and i < fenced)
    assert lookup < at[("become_leader", 2, 3)] < fenced < at[("become_follower", 3, 3)]
    assert records[fenced]["params"]["leader_hw"] is None, "a fenced fetch answers no HW (the model's)"
    (verdict,) = judge_run("kafka", records, judge, "kafka26")
    assert verdict["status"] == "conforms", verdict["reason"]
    (seed,) = judge_run("kafka", records, judge, "kip320")
    assert (seed["first_bad_kind"], records[seed["matched"]]["params"]["leader_epoch"]) == ("become_follower", 1)


def test_a_refused_alter_partition_echoes_the_partition_epoch_the_leader_knew(tmp_path: Path) -> None:
    """Leader 2, at epoch 2 of the move's completion, proposes the ISR 2,3 (broker 1, removed,
    no longer fetches) with partition epoch 3; the controller has meanwhile taken 1 out itself
    (epoch 3, partition epoch 4) and answers FENCED_LEADER_EPOCH.  The model's refusal echoes
    the proposal: the event carries the partition epoch the leader knew, not the znode's."""
    logs = tmp_path / "broker-2" / "logs"
    logs.mkdir(parents=True)
    leader, alter = (FIXTURES / "excerpts" / "reassign-fenced-alter.log").read_text().splitlines()
    (logs / "state-change.log").write_text(leader + "\n")
    (logs / "kafka-request.log").write_text(alter + "\n")
    adapter = _Adapter([])
    adapter.topic_names["MOWI4FkzSIGQ_AlWvzcoTA"] = "orders"  # the leader's line names the topic id
    assert "MOWI4FkzSIGQ_AlWvzcoTA" in leader
    for _, line in ordered_lines(tmp_path):
        if line.name == "request":
            adapter.on_line(2, line)
    (event,) = [e for _, _, _, e in adapter.out.events if e.kind == "alter_partition"]
    assert dict(event.params) == {"leader": 2, "isr": [2, 3], "leader_epoch": 2, "zk_version": 3,
                                  "error": "FENCED_LEADER_EPOCH"}


def test_a_followers_epoch_waits_for_its_own_requests_fetcher_removal(tmp_path: Path) -> None:
    """Real lines of a leader-kill run's follower: the ``Follower ... starts`` line and its
    fetcher's removal in one millisecond (server.log, read first, must not take it), and the
    removal of a later request 18 s on (too late to be this one's)."""
    received, follower, removed, later = (FIXTURES / "excerpts" / "follower-fetcher-removed.log").read_text().splitlines()
    logs = tmp_path / "broker-2" / "logs"
    logs.mkdir(parents=True)
    (logs / "state-change.log").write_text(f"{received}\n{follower}\n")
    (logs / "server.log").write_text(f"{removed}\n{later}\n")
    (event,) = [(node, e, ts) for node, e, ts in adapt(tmp_path) if e.kind == "become_follower"]
    assert event[0] == 2 and event[2] == parse(removed).ts == parse(follower).ts
    (logs / "server.log").write_text(f"{later}\n")  # no removal of its own: the line's time stands
    (event,) = [(node, e, ts) for node, e, ts in adapt(tmp_path) if e.kind == "become_follower"]
    assert event[2] == parse(follower).ts
