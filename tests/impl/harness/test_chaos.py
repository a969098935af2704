"""``epochal chaos``: the schedule is a function of the seed, the verdict is not blind (a
synthetic lost, duplicated, moved or diverged write is reported), safe settings lose nothing
under real faults, and unsafe settings (acks=1, unclean election) are caught losing
acknowledged writes, with the cause named."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from impl.harness.chaos.evidence import read_commit_isr, read_disk_log
from impl.harness.chaos.run import ChaosRun
from impl.harness.chaos.schedule import (
    CHURN_KINDS,
    FAULT_KINDS,
    PARTITIONS,
    TOPIC,
    FaultRecord,
    make_schedule,
)
from impl.harness.chaos.verdict import DUPLICATED, LOG_CONSISTENT, LOST, Election, judge
from impl.harness.chaos.workload import Ack, Ledger
from impl.harness.cli.main import main
from impl.node.auth.credentials import ClusterSecret
from impl.node.log import PartitionLog
from impl.node.zk import EmbeddedZooKeeper, connect
from properties.safety import UNCLEAN_LABEL

# -- the schedule ------------------------------------------------------------------------------


def test_same_seed_gives_the_same_schedule() -> None:
    assert make_schedule(7, 60) == make_schedule(7, 60)
    assert make_schedule(7, 60, brokers=5) == make_schedule(7, 60, brokers=5)
    assert make_schedule(7, 60) != make_schedule(8, 60)


def test_every_fault_and_admin_operation_appears_across_seeds() -> None:
    kinds, churn, targets = set(), set(), set()
    for seed in range(40):
        for f in make_schedule(seed, 60):
            kinds.add(f.kind)
            targets.add(f.target)
            if f.churn:
                churn.add(f.churn)
    assert kinds == set(FAULT_KINDS)
    assert churn == set(CHURN_KINDS)
    assert targets == {"broker", "leader", "follower", "controller", "partition"}


def test_schedule_fills_the_duration_with_faults_one_after_another() -> None:
    for seed in range(10):
        short, long = make_schedule(seed, 12), make_schedule(seed, 120)
        assert 1 <= len(short) < len(long)
        for faults in (short, long):
            assert [f.index for f in faults] == list(range(1, len(faults) + 1))
            assert all(a.at + a.hold <= b.at for a, b in zip(faults, faults[1:], strict=False))
        assert long[-1].at < 120


def test_deleted_topics_are_ones_the_schedule_created_earlier() -> None:
    for seed in range(40):
        created: set[str] = set()
        for f in make_schedule(seed, 120):
            if f.churn == "create-topic":
                created.add(str(f.churn_topic))
            elif f.churn == "delete-topic":
                assert f.churn_topic in created
                created.discard(str(f.churn_topic))


def test_unsafe_settings_open_with_the_scenario_they_cannot_survive() -> None:
    assert make_schedule(3, 10, acks=1)[0].kind == "isolate-leader"
    assert make_schedule(3, 10, unclean=True)[0].kind == "lag-then-kill-isr"
    both = make_schedule(3, 1, acks=1, unclean=True)
    assert [f.kind for f in both[:2]] == ["lag-then-kill-isr", "isolate-leader"]


def test_reassignments_name_distinct_brokers_of_the_cluster() -> None:
    for brokers in (3, 4, 5):
        for seed in range(30):
            for f in make_schedule(seed, 60, brokers=brokers):
                if f.churn == "reassign":
                    assert len(set(f.churn_replicas)) == 3
                    assert set(f.churn_replicas) <= set(range(brokers))


# -- the verdict -------------------------------------------------------------------------------

def _log(*values: str, epoch: int = 0) -> list[tuple[int, int, str]]:
    return [(i, epoch, v) for i, v in enumerate(values)]


def _acked(*items: tuple[int, str, int], acks: int = -1, leader: int = 0,
           stream: str = "workload") -> Ledger:
    ledger = Ledger()
    ledger.attempt(len(items))
    ledger.ack([Ack(p, v, o, 0, leader, acks, stream, float(i)) for i, (p, v, o) in enumerate(items)])
    return ledger


def test_verdict_passes_a_run_that_kept_everything() -> None:
    ledger = _acked((0, "a", 0), (0, "b", 1), (1, "c", 0))
    ledger.consumed[(0, 0)] = "a"
    final = {0: _log("a", "b", "x"), 1: _log("c")}
    logs = {0: {0: final[0], 1: final[0]}, 1: {0: final[1], 1: final[1] + [(1, 0, "tail")]}}
    v = judge(ledger, final, logs, {0: [0, 1], 1: [0, 1]}, [], [])
    assert v.passed, v.findings
    assert (v.attempted, v.acknowledged, v.lost, v.duplicated) == (3, 3, 0, 0)


def test_verdict_reports_a_lost_acknowledged_write_as_a_bug_under_safe_settings() -> None:
    ledger = _acked((0, "a", 0), (0, "b", 1))
    final = {0: _log("a")}
    v = judge(ledger, final, {0: {0: final[0]}}, {0: [0]}, [], [])
    assert not v.passed and v.lost == 1
    assert v.findings == ["lost 1 acknowledged write: acknowledged with acks=all and no unclean "
                          "election: a replication bug"]
    assert [(f.property, f.label) for f in v.found] == [(LOST, None)]


def test_verdict_blames_an_unclean_election_for_the_writes_it_lost() -> None:
    ledger = _acked((0, "a", 0), (0, "b", 1), (0, "c", 2))
    elections = [Election(TOPIC, 0, 0, 0, False), Election(TOPIC, 0, 2, 3, True)]
    final = {0: _log("a")}
    v = judge(ledger, final, {0: {2: final[0]}}, {0: [2]}, elections, [])
    assert v.lost == 2
    assert v.causes == {"unclean election of broker 2 out of the ISR (leader epoch 3)": 2}
    # the judge records the property the loss breaks and the model's label where it finds it
    assert [(f.property, f.label) for f in v.found] == [(LOST, UNCLEAN_LABEL)]


def test_verdict_blames_acks_1_and_the_fault_that_killed_the_leader() -> None:
    ledger = _acked((1, "a", 0), (1, "b", 1), acks=1, leader=4)
    killed = FaultRecord(1, "isolate-leader", started=0.0, ended=5.0, victims=[4])
    v = judge(ledger, {1: []}, {1: {}}, {1: []}, [], [killed])
    assert v.findings == ["lost 2 acknowledged writes: acks=1 write acknowledged by leader 4 "
                          "alone before it was killed (fault 1 isolate-leader)"]


def test_verdict_reports_a_duplicated_value() -> None:
    ledger = _acked((0, "a", 0))
    final = {0: _log("a", "b", "a")}
    v = judge(ledger, final, {0: {0: final[0]}}, {0: [0]}, [], [])
    assert v.duplicated == 1
    assert any("value a is in the final logs 2 times" in f for f in v.findings)
    assert [f.property for f in v.found] == [DUPLICATED]


def test_verdict_reports_a_write_found_at_another_offset_than_acknowledged() -> None:
    ledger = _acked((0, "a", 0), (0, "b", 1))
    final = {0: _log("b", "a")}
    v = judge(ledger, final, {0: {0: final[0]}}, {0: [0]}, [], [])
    assert any("acknowledged at chaos-0@0 is at offset 1" in f for f in v.findings)
    assert any("out of acknowledgement order" in f for f in v.findings)


def test_verdict_reports_an_offset_committed_twice() -> None:
    ledger = _acked()
    ledger.consumed[(0, 1)] = "b"
    final = {0: _log("a", "z")}
    v = judge(ledger, final, {0: {0: final[0]}}, {0: [0]}, [], [])
    assert v.findings == ["1 offset of chaos-0 committed twice (read as committed by the "
                          "consumer, now another value): @1 b -> z; no unclean election: a "
                          "replication bug"]


def test_verdict_reports_an_isr_member_whose_log_differs_below_the_hw() -> None:
    ledger = _acked((0, "a", 0))
    final = {0: _log("a", "b")}
    diverged = [(0, 0, "a"), (1, 1, "b")]  # same value, another leader epoch
    v = judge(ledger, final, {0: {0: final[0], 1: diverged, 2: final[0][:1]}}, {0: [0, 1, 2]},
              [], [])
    assert any("ISR member 1 of chaos-0 differs from the committed log at offset 1" in f
               for f in v.findings)
    assert any("ISR member 2 of chaos-0 differs" in f for f in v.findings)
    assert not any("ISR member 0" in f for f in v.findings)
    assert {f.property for f in v.found} == {LOG_CONSISTENT}


def test_verdict_reports_acks_all_writes_committed_by_fewer_than_min_insync() -> None:
    ledger = _acked((0, "a", 0), (0, "b", 1), leader=1)
    final = {0: _log("a", "b")}
    commit_isr = {(0, 0, 0): [0, 1], (0, 0, 1): [1]}
    v = judge(ledger, final, {0: {1: final[0]}}, {0: [1]}, [], [], commit_isr, min_insync=2)
    assert v.findings == ["1 write acknowledged with acks=all although fewer than "
                          "min.insync.replicas=2 replicas held it: chaos-0 leader 1 (epoch 0) "
                          "committed with ISR [1]"]


def _event(node: int, kind: str, params: dict[str, Any], post: dict[str, Any],
           partition: int | None = 0) -> str:
    return json.dumps({"node": node, "kind": kind, "topic": TOPIC if partition is not None else None,
                       "partition": partition, "params": params, "post": post})


def test_commit_isr_follows_the_leaders_hw_and_isr_through_its_trace(tmp_path: Path) -> None:
    """The HW passing an offset is when an acks=all write is acknowledged; a shrink to the
    leader alone moves the HW to its LEO even if no later event shows it."""
    lines = [
        _event(1, "become_leader", {"leader_epoch": 3, "isr": [0, 1, 2]}, {"hw": 0}),
        _event(1, "handle_fetch", {}, {"hw": 2, "isr": [0, 1, 2], "leo": 4}),
        _event(1, "shrink_isr", {}, {"hw": 2, "isr": [1, 2], "leo": 4}),
        _event(1, "handle_fetch", {}, {"hw": 3, "isr": [1, 2], "leo": 5}),
        _event(1, "shrink_isr", {}, {"hw": 3, "isr": [1], "leo": 6}),
        _event(1, "broker_restart", {"broker": 1}, {}, partition=None),
        _event(1, "receive_fetch", {}, {"hw": 9, "leo": 9}),  # a follower now: not a commit
    ]
    (tmp_path / "broker-1.jsonl").write_text("\n".join(lines) + "\n")
    got = read_commit_isr(tmp_path)
    assert got == {(0, 3, 0): [0, 1, 2], (0, 3, 1): [0, 1, 2], (0, 3, 2): [1, 2],
                   (0, 3, 3): [1], (0, 3, 4): [1], (0, 3, 5): [1]}


def test_an_isr_write_in_flight_holds_the_partition_until_it_is_done(tmp_path: Path) -> None:
    """Found by chaos traces: a leader decided to add a follower at LEO 63 = HW, and while
    the ZooKeeper write was in flight the HW moved to 64 without it -- an ISR member missing
    a committed record (seed 5).  Counting the joiner early broke conformance instead (the
    model's HW is the min LEO of the ISR, seed 1).  Now, as Kafka holds the partition's ISR
    lock across the write, produce and fetch wait until the write is done, and the HW is
    the min LEO of the ISR alone."""
    import asyncio

    from impl.node.replica import LEADER, PartitionState, Replica
    from traces.recorder import TraceRecorder

    log = PartitionLog.open(tmp_path / "t-0")
    r = Replica("t", 0, 1, log, TraceRecorder(tmp_path / "trace.jsonl", "run", 1))
    r.become_leader(PartitionState("t", 0, 1, 1, [0, 1], [0, 1, 2], 0, 1))
    assert r.role == LEADER
    for v in (b"a", b"b"):
        r.append(v)
    r.record_follower_fetch(0, 2, 0.0)
    r.record_follower_fetch(2, 1, 0.0)
    assert r.maybe_advance_hw() and r.hw == 2  # follower 2 is not in the ISR: not counted

    async def scenario() -> list[str]:
        order: list[str] = []
        first = r.begin_isr_write()

        async def waiter() -> None:
            await r.isr_settled()
            order.append("settled")

        task = asyncio.create_task(waiter())
        await asyncio.sleep(0.01)
        assert not task.done() and r.isr_update_in_flight
        second = asyncio.Event()  # a stale term's write ending must not release a newer one
        r.isr_write = second
        r.end_isr_write(first)
        await asyncio.sleep(0.01)
        assert not task.done()
        order.append("written")
        r.end_isr_write(second)
        await task
        assert r.isr_write is None and not r.isr_update_in_flight
        return order

    assert asyncio.run(scenario()) == ["written", "settled"]


def test_disk_logs_are_read_as_the_broker_wrote_them(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path / "chaos-0")
    log.append(0, b"a")
    log.append(2, b"b")
    log.close()
    with open(next((tmp_path / "chaos-0").glob("*.log")), "ab") as f:
        f.write(b"\x00\x00\x00\x30torn")  # a kill -9 mid-append
    assert read_disk_log(tmp_path / "chaos-0") == [(0, 0, "a"), (1, 2, "b")]


# -- the command line ---------------------------------------------------------------------------

@pytest.mark.parametrize("argv, message", [
    (["--seed", "1", "--duration", "10", "--brokers", "7"], "a run takes 3 to 5 brokers, got 7"),
    (["--seed", "1", "--duration", "0"], "the duration must be in (0, 3600] seconds, got 0"),
    (["--seed", "1", "--duration", "10", "--acks", "0"], "--acks must be all or 1"),
])
def test_bad_arguments_are_one_line_and_exit_2(argv: list[str], message: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["chaos", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_out_must_not_hold_a_previous_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "traces").mkdir()
    assert main(["chaos", "--seed", "1", "--duration", "5", "--out", str(tmp_path)]) == 2
    assert "must be a new or empty directory" in capsys.readouterr().err


# -- real runs ---------------------------------------------------------------------------------

def _run(tmp_path: Path, zk: str, seed: int, duration: float, **kw: Any) -> Any:
    run = ChaosRun(seed, duration, data_dir=tmp_path / f"run-{seed}", zookeeper=zk,
                   log=lambda m: print(m, flush=True), **kw)
    return run.run()


def _safe(report: Any) -> None:
    v = report.verdict
    assert report.recovered, v.findings
    assert v.passed, "\n".join(v.findings)
    assert v.lost == 0 and v.duplicated == 0
    assert v.acknowledged > 100  # the workload kept writing through the faults
    assert len(report.faults) == len(report.schedule) >= 2
    assert all(not any(n.startswith("injection failed") for n in f.notes) for f in report.faults)


@pytest.fixture(scope="module")
def restarts_and_partitions(tmp_path_factory: pytest.TempPathFactory, zookeeper: EmbeddedZooKeeper,
                            zookeeper_key: bytes, spark: Any) -> Any:
    """Seed 5, 12 s: a controlled shutdown and restart, then two leader-follower partitions;
    the traces judged by the Spark conformance job.  One run, two tests.  The run's cluster
    takes the session ZooKeeper's secret (as zk_chroot's clusters do)."""
    zk = connect(zookeeper.hosts, acl=zookeeper.acl)
    root = f"/chaos-{uuid.uuid4().hex[:8]}"
    zk.ensure_path(root)
    zk.stop()
    zk.close()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ClusterSecret, "new_key", staticmethod(lambda: zookeeper_key))
        return _run(tmp_path_factory.mktemp("chaos"), zookeeper.hosts + root, 5, 12, spark=spark)


@pytest.mark.integration
@pytest.mark.slow
def test_restarts_and_partitions_lose_nothing(restarts_and_partitions: Any) -> None:
    report = restarts_and_partitions
    assert [f.kind for f in report.faults] == ["restart", "partition", "partition"]
    _safe(report)


def _conforms(report: Any) -> None:
    c = report.conformance
    assert c.get("groups", 0) >= PARTITIONS, c
    assert c["conforming"] == c["groups"], c.get("render")
    assert report.exit_code == 0


@pytest.mark.integration
def test_restarts_and_partitions_traces_conform_to_the_model(restarts_and_partitions: Any) -> None:
    _conforms(restarts_and_partitions)


@pytest.mark.integration
@pytest.mark.slow
def test_session_expiry_partition_and_controller_kill_lose_nothing_and_conform(
        tmp_path: Path, zk_chroot: str, spark: Any) -> None:
    """Seed 1: a leader's ZooKeeper session expired under it, a leader-follower partition,
    kill -9 of the controller; a topic created and deleted meanwhile."""
    report = _run(tmp_path, zk_chroot, 1, 12, spark=spark)
    assert [f.kind for f in report.faults] == ["expire-session", "partition", "kill-controller"]
    _safe(report)
    assert all(f.victims for f in report.faults if f.kind != "partition")
    _conforms(report)


@pytest.mark.integration
@pytest.mark.slow  # the default suite keeps to about six minutes
def test_acks_1_loses_acknowledged_writes_and_the_report_names_why(
        tmp_path: Path, zk_chroot: str) -> None:
    report = _run(tmp_path, zk_chroot, 6, 8, acks=1, conform=False)
    v = report.verdict
    assert report.faults[0].kind == "isolate-leader"
    assert v.lost >= 20  # at least the burst the isolated leader acknowledged alone
    assert report.exit_code == 1
    leader = report.faults[0].victims[0]
    assert any(c.startswith(f"acks=1 write acknowledged by leader {leader} alone before it was "
                            f"killed (fault 1 isolate-leader)") for c in v.causes), v.causes


@pytest.mark.integration
@pytest.mark.slow  # the default suite keeps to about six minutes
def test_an_isolated_leader_cannot_acknowledge_acks_all_writes_alone(
        tmp_path: Path, zk_chroot: str) -> None:
    """Seed 6 with acks=all: both followers cut off from a leader, a burst waits at it while
    its ISR shrinks to the leader alone.  The HW then jumps over the burst, but acks=all
    must not be acknowledged by fewer than min.insync.replicas (found by this run: the
    broker did acknowledge it, NOT_ENOUGH_REPLICAS_AFTER_APPEND in Kafka)."""
    report = _run(tmp_path, zk_chroot, 6, 8, conform=False)
    assert report.faults[0].kind == "isolate-leader"
    assert "(0 acknowledged)" in report.faults[0].detail
    assert report.verdict.passed, report.verdict.findings


@pytest.mark.integration
@pytest.mark.slow
def test_unclean_election_loses_acknowledged_writes_and_the_report_names_why(
        tmp_path: Path, zk_chroot: str) -> None:
    report = _run(tmp_path, zk_chroot, 21, 10, unclean=True, conform=False)
    v = report.verdict
    assert report.faults[0].kind == "lag-then-kill-isr"
    assert v.lost >= 20 and report.exit_code == 1
    assert any(c.startswith("unclean election of broker") for c in v.causes), v.causes


@pytest.mark.integration
@pytest.mark.slow
def test_cli_prints_schedule_verdict_and_json(tmp_path: Path) -> None:
    import subprocess

    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "impl.harness.cli.main", "chaos", "--seed", "5", "--duration",
                           "8", "--out", str(out), "--json"], capture_output=True, text=True,
                          timeout=600, cwd=Path(__file__).resolve().parents[3])
    report = json.loads(proc.stdout)
    assert "schedule (" in proc.stderr and "fault 1/" in proc.stderr
    assert report["schedule"] and report["writes"]["lost"] == 0 and report["verdict"] == "holds"
    assert proc.returncode == report["exit_code"]


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_kafka_clients_lose_and_duplicate_nothing_and_the_traces_conform(
        client: str, tmp_path: Path, zk_chroot: str, spark: Any) -> None:
    """Seed 5 through Kafka's own clients (``--client``): idempotent acks=all producers that
    retry as they do, the verdict counted from their delivery reports, the final logs read
    back by assignment -- nothing lost, nothing twice, every trace group conforming."""
    pytest.importorskip({"confluent": "confluent_kafka", "kafka-python": "kafka"}[client],
                        reason=f"{client} (the dev extra) is not installed")
    report = _run(tmp_path, zk_chroot, 5, 12, spark=spark, client=client)
    assert report.client == client and report.as_dict()["client"] == client
    assert [f.kind for f in report.faults] == ["restart", "partition", "partition"]
    _safe(report)
    _conforms(report)
