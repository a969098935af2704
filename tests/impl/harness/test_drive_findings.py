"""What model-guided fuzzing found (docs/journal/drive-findings.md), each kept as the
schedule that found it and driven against real brokers: it diverged before the fix and
follows the model since.  The saved schedules (``drive_findings/*.json``) are those
``epochal drive --generate guided --seed 1`` wrote, as ``epochal drive --path`` reads them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from impl.harness.drive import Driver, DriveReport, from_json

pytestmark = pytest.mark.integration

FOUND = Path(__file__).parent / "drive_findings"


def _drive(path: Path, tmp_path: Path) -> DriveReport:
    report = Driver("kip320", data_dir=tmp_path / "cluster").run(from_json(path))
    assert report.verdict == "followed" and report.exit_code == 0, report.divergence
    assert len(report.steps) >= len(json.loads(path.read_text())["steps"])
    return report


def _steps(steps: list[tuple[str, list[Any]]], tmp_path: Path) -> Path:
    f = tmp_path / "path.json"
    f.write_text(json.dumps({"config": {"brokers": 3},
                             "steps": [{"action": a, "args": args} for a, args in steps]}))
    return f


@pytest.mark.slow
def test_an_election_after_two_brokers_went_leaves_both_out_of_the_isr(tmp_path: Path) -> None:
    """The controller's broker-change event read the live brokers when broker 2 went, then
    waited for its elect_leader permit while broker 1 went too, and wrote back ISR [0, 1]
    with broker 1 dead.  The model's step reads the live brokers when it is taken: [0]."""
    path = _steps([("broker_crash", [2]), ("broker_crash", [1]), ("elect_leader", [0, 0, 0])], tmp_path)
    report = _drive(path, tmp_path)
    assert report.steps[-1].zookeeper["isr"] == [0]


@pytest.mark.slow
def test_a_new_controller_keeps_the_leader_that_came_back_while_its_election_waited(tmp_path: Path) -> None:
    """Run 9: the leader (and controller) and broker 2 crash, broker 1 takes over and its
    failover decides, from the brokers live then ({1}), to elect itself -- then waits for the
    permit while broker 0 restarts and leads again.  The model's election keeps leader 0,
    ISR [0, 1]; the implementation wrote leader 1, ISR [1]."""
    report = _drive(FOUND / "new-controller-elects-from-brokers-live-at-its-step.json", tmp_path)
    assert report.steps[-1].zookeeper["leader"] == 0 and report.steps[-1].zookeeper["isr"] == [0, 1]


@pytest.mark.slow
def test_an_election_whose_partition_changed_while_it_waited_is_still_one_permit(tmp_path: Path) -> None:
    """Run 5: the election broker 1's crash started waits for its permit while the leader
    shrinks and expands the ISR and broker 2 crashes.  Released, it wrote on the stale
    zk_version, re-read, found nothing to do from its stale live brokers -- and the
    election the model's step makes waited for a second permit: none was recorded."""
    report = _drive(FOUND / "election-after-isr-moved-while-it-waited.json", tmp_path)
    assert report.steps[-1].zookeeper["isr"] == [0]


@pytest.mark.slow
def test_a_restarted_follower_gets_the_answer_to_its_own_fetch(tmp_path: Path) -> None:
    """Run 3 (a driver fault): the relay still held a fetch broker 1 sent before it crashed;
    after its restart, handle_fetch released that one (the oldest at the offset), and the
    answer went to the dead incarnation's connection.  The model's broker_restart drops
    what the previous incarnation had in flight; the driver now drops it from the relay."""
    _drive(FOUND / "fetch-of-a-previous-incarnation.json", tmp_path)


@pytest.mark.slow
def test_a_restarted_follower_is_not_sent_the_answer_its_previous_incarnation_asked_for(
        tmp_path: Path) -> None:
    """Run 4 of a later campaign (a driver fault): broker 1 fetched and crashed, the leader
    answered the fetch anyway (the model lets a dead follower's request arrive), and the
    relay held the answer; after the restart, receive_fetch released that one, to the dead
    incarnation's connection.  The driver now drops it at the restart, as the model does."""
    _drive(FOUND / "answer-to-a-previous-incarnation.json", tmp_path)



@pytest.mark.slow
def test_a_reassignment_tells_its_replica_on_a_broker_shutting_down_to_follow(tmp_path: Path) -> None:
    """Broker 1 shuts down (broker 0 takes the lead), then the partition is reassigned to
    [1].  Kafka 2.7's reassignment sends its LeaderAndISR to every replica of ORS + TRS that
    is live or shutting down (``sendRequestsToBrokers`` filters by
    ``liveOrShuttingDownBrokerIds``), and so does the model's ``reassign_start``; the
    controller sent none to broker 1, as if it were an election's recipient."""
    follow = {"to": 1, "partition": 0, "leader": 0, "leader_epoch": 2, "isr": [0], "zk_version": 1,
              "controller_epoch": 1, "max_broker_epoch": 1, "topic_id": 0}
    f = tmp_path / "path.json"
    f.write_text(json.dumps({"config": {"brokers": 2, "max_shutdowns": 1, "reassignments": 1},
                             "steps": [{"action": "controlled_shutdown", "args": [0, 0, 1, 0]},
                                       {"action": "reassign_start", "args": [0, 0, [1]]},
                                       {"action": "become_follower", "args": [follow]}]}))
    _drive(f, tmp_path)


@pytest.mark.slow
def test_a_follower_waiting_to_fetch_looks_up_its_new_epoch_first(tmp_path: Path) -> None:
    """Run 8 of a later campaign, two faults.  Broker 2's fetcher waited for a send_fetch
    permit while LeaderAndISR made it follow broker 0 at a new epoch; it kept waiting for
    send_fetch, and the model's next step, the epoch lookup (``truncate``), never came
    (the implementation's step mode).  And the lookup went on the connection to broker
    0's previous incarnation, which the relay had kept open to deliver a held answer, and
    then never closed (the driver's relay)."""
    _drive(FOUND / "truncate-after-a-leader-and-isr-while-a-fetch-waited.json", tmp_path)

