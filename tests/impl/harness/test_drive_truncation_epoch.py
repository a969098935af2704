"""The epoch a follower asks about before it truncates, on real brokers in the default suite:
the first 11 steps of ``kip320_stale_fetch`` -- broker 0 restarts with a record of an older
leader epoch and asks the leader where that epoch ends (``_truncate_by_epoch``:
``latest_epoch()``).  Asked one epoch off either way, the follower records no truncation at
the model's offset, and the run diverges at step 11.  ``kafka_1211``, the story the default
suite drove before, follows the model under either mutant (measured).

And a follower catching up below the new epoch's start offset (``BELOW``): broker 2 holds
``v1`` of epoch 1, broker 1 both of epoch 1's records; broker 0 crashes, broker 1 leads at
epoch 2 from offset 2 and takes ``v3``; broker 2, a prefix of the new leader's log, asks about
epoch 1 (its latest), cuts nothing and fetches from offset 1.  Asked one epoch below, it
diverges at the truncation.  One epoch above (epoch 2) the leader answers its LEO and the
follower cuts nothing either -- the right cut: that mutant shows only where the follower
holds a record the leader does not (the first story)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from impl_testing import drive_mutant

from impl.harness.drive import Driver, from_json, scenario
from impl.harness.drive.guided import path_json
from impl.harness.drive.paths import brokers_needed, step_of
from model.actions import Step
from model.config import named
from model.registry import apply
from model.state import FETCH_REQUEST, FETCH_RESPONSE, initial

STEPS = 11
A, B, C = 0, 1, 2
BELOW = [("produce", (A, 0)), ("send_fetch", (B, 0)), ("handle_fetch", B), ("receive_fetch", B),
         ("send_fetch", (C, 0)), ("handle_fetch", C), ("receive_fetch", C),
         ("produce", (A, 0)), ("send_fetch", (B, 0)), ("handle_fetch", B), ("receive_fetch", B),
         ("broker_crash", (A,)), ("controller_elect", (B,)), ("elect_leader", (B, 0, B)),
         ("become_leader", (B, B)), ("produce", (B, 0)), ("become_follower", (C, B)), ("truncate", (C, 0)),
         ("send_fetch", (C, 0)), ("handle_fetch", C), ("receive_fetch", C)]
BELOW_TRUNCATE = 18
ASKED = "        requested = r.log.epochs.latest_epoch()\n"


def _prefix(tmp_path: Path) -> Path:
    """The scenario's first steps as a path (each step's arguments fixed as the model chose them)."""
    run = scenario("kip320_stale_fetch")
    cfg = named("kip320", brokers=brokers_needed(run, "kip320"))
    s, taken = initial(cfg), []
    for action, choose in run.steps[:STEPS]:
        step = step_of(action, choose, s)
        taken.append((step, s))
        s = apply(s, cfg, step)
    path = tmp_path / "prefix.json"
    path.write_text(json.dumps(path_json(cfg, taken, f"the first {STEPS} steps of kip320_stale_fetch")))
    return path


def _below(tmp_path: Path) -> Path:
    """``BELOW`` as a path: a message step names its follower (a fetch) or its addressee and
    leader (the LeaderAndISR of the partition's current epoch)."""
    cfg = named("kip320", brokers=3, records=3)
    s, taken = initial(cfg), []
    for action, a in BELOW:
        if action in ("handle_fetch", "receive_fetch"):
            kind = FETCH_REQUEST if action == "handle_fetch" else FETCH_RESPONSE
            args: tuple = (next(m for m in s.fetches if m.kind == kind and m.follower == a),)
        elif action.startswith("become_"):
            zn = s.zk.partitions[0]
            args = (next(m for m in s.leader_and_isr
                         if (m.to, m.leader) == a and m.leader_epoch == zn.leader_epoch),)
        else:
            args = a
        step = Step(action, args)
        taken.append((step, s))
        s = apply(s, cfg, step)
        assert s is not None, step
    path = tmp_path / "below.json"
    path.write_text(json.dumps(path_json(cfg, taken, "a follower below the new epoch's start offset")))
    return path


@pytest.mark.integration
def test_a_restarted_follower_asks_about_its_latest_epoch_and_truncates_where_the_model_does(tmp_path: Path) -> None:
    report = Driver("kip320", data_dir=tmp_path / "run").run(from_json(_prefix(tmp_path)))
    assert report.verdict == "followed", report.divergence
    assert report.steps[-1].action == "truncate" and report.steps[-1].outcome == "followed"


@pytest.mark.integration
def test_a_follower_below_the_new_epochs_start_asks_about_its_own_epoch_and_catches_up(tmp_path: Path) -> None:
    report = Driver("kip320", data_dir=tmp_path / "run").run(from_json(_below(tmp_path)))
    assert report.verdict == "followed", report.divergence
    assert [s.action for s in report.steps if s.outcome == "followed"] == [a for a, _ in BELOW]
    lines = (tmp_path / "run" / "traces" / "broker-2.jsonl").read_text().splitlines()
    cuts = [json.loads(x) for x in lines if '"truncate"' in x]
    assert [(e["params"]["truncated_to"], e["params"]["requested_epoch"]) for e in cuts] == [(1, 0)]


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("off", ["- 1", "+ 1"])
def test_asking_about_an_epoch_off_by_one_diverges_at_the_truncation(tmp_path: Path, off: str) -> None:
    code, report = drive_mutant(tmp_path, "impl/node/broker/replication_follower.py", ASKED,
                                ASKED.replace("()\n", f"() {off}\n"),
                                "--config", "kip320", "--path", str(_prefix(tmp_path)), "--step-timeout", "5")
    assert code == 1 and report["outcome"] == "diverged"
    assert report["divergence"]["step"] == STEPS and report["divergence"]["action"] == "truncate"


@pytest.mark.integration
@pytest.mark.slow
def test_a_follower_below_the_new_epochs_start_asking_an_epoch_too_old_diverges_at_the_truncation(
        tmp_path: Path) -> None:
    code, report = drive_mutant(tmp_path, "impl/node/broker/replication_follower.py", ASKED,
                                ASKED.replace("()\n", "() - 1\n"),
                                "--config", "kip320", "--path", str(_below(tmp_path)), "--step-timeout", "5")
    assert code == 1 and report["outcome"] == "diverged", report
    assert report["divergence"]["step"] == BELOW_TRUNCATE and report["divergence"]["action"] == "truncate"
