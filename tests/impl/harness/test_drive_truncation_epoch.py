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
from path_choosers import Chooser, answer_to, fetch_of, given, leader_and_isr_to

from impl.harness.drive import Driver, from_json, scenario
from impl.harness.drive.guided import path_json
from impl.harness.drive.paths import brokers_needed, step_of
from model.config import Config, named
from model.registry import apply
from model.state import initial

STEPS = 11
A, B, C = 0, 1, 2


def _fetch(f: int) -> list[tuple[str, Chooser]]:
    return [("send_fetch", given(f, 0)), ("handle_fetch", fetch_of(f)), ("receive_fetch", answer_to(f))]


BELOW = [("produce", given(A, 0)), *_fetch(B), *_fetch(C), ("produce", given(A, 0)), *_fetch(B),
         ("broker_crash", given(A)), ("controller_elect", given(B)), ("elect_leader", given(B, 0, B)),
         ("become_leader", leader_and_isr_to(B)), ("produce", given(B, 0)),
         ("become_follower", leader_and_isr_to(C)), ("truncate", given(C, 0)), *_fetch(C)]
BELOW_TRUNCATE = 18
ASKED = "        requested = r.log.epochs.latest_epoch()\n"


def _as_path(tmp_path: Path, name: str, cfg: Config, steps: list[tuple[str, Chooser]], note: str) -> Path:
    """Steps as a path (each step's arguments fixed as chosen in the model)."""
    s, taken = initial(cfg), []
    for action, choose in steps:
        step = step_of(action, choose, s)
        assert step is not None, action
        taken.append((step, s))
        s = apply(s, cfg, step)
        assert s is not None, step
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(path_json(cfg, taken, note)))
    return path


def _prefix(tmp_path: Path) -> Path:
    run = scenario("kip320_stale_fetch")
    cfg = named("kip320", brokers=brokers_needed(run, "kip320"))
    return _as_path(tmp_path, "prefix", cfg, run.steps[:STEPS], f"the first {STEPS} steps of kip320_stale_fetch")


def _below(tmp_path: Path) -> Path:
    return _as_path(tmp_path, "below", named("kip320", brokers=3, records=3), BELOW,
                    "a follower below the new epoch's start offset")


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


INCOMPLETE_ROUND = Path(__file__).resolve().parents[3] / "bench" / "mutation_paths" / "truncation_incomplete_round.json"


@pytest.mark.integration
def test_a_follower_whose_first_round_is_not_complete_asks_again_and_the_judge_takes_both_rounds_as_one_step(
        tmp_path: Path) -> None:
    """Broker 0 (epochs 1, 3) follows broker 1 (epochs 1, 2, 4): the answer to its lookup of
    epoch 3 is epoch 2, which it lacks, so it cuts to where its epoch 1 ends -- the model's
    cut -- and asks again before it fetches.  The driver grants the second round within the
    model's one ``truncate`` step, and the judge takes it as that step seen again."""
    report = Driver("kip320", data_dir=tmp_path / "run").run(from_json(INCOMPLETE_ROUND))
    assert report.verdict == "followed", report.divergence
    lines = (tmp_path / "run" / "traces" / "broker-0.jsonl").read_text().splitlines()
    cuts = [json.loads(x)["params"] for x in lines if '"truncate"' in x]
    # (the implementation numbers the model's epochs 1, 2, 3 from 0)
    assert [(c["truncated_to"], c["requested_epoch"], c["truncation_complete"]) for c in cuts[-2:]] == [
        (1, 2, False), (1, 0, True)]
