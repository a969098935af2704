"""The epoch a follower asks about before it truncates, on real brokers in the default suite:
the first 11 steps of ``kip320_stale_fetch`` -- broker 0 restarts with a record of an older
leader epoch and asks the leader where that epoch ends (``_truncate_by_epoch``:
``latest_epoch()``).  Asked one epoch off either way, the follower records no truncation at
the model's offset, and the run diverges at step 11.  ``kafka_1211``, the story the default
suite drove before, follows the model under either mutant (measured)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from impl_testing import drive_mutant

from impl.harness.drive import Driver, from_json, scenario
from impl.harness.drive.guided import path_json
from impl.harness.drive.paths import brokers_needed, step_of
from model.config import named
from model.registry import apply
from model.state import initial

STEPS = 11
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


@pytest.mark.integration
def test_a_restarted_follower_asks_about_its_latest_epoch_and_truncates_where_the_model_does(tmp_path: Path) -> None:
    report = Driver("kip320", data_dir=tmp_path / "run").run(from_json(_prefix(tmp_path)))
    assert report.verdict == "followed", report.divergence
    assert report.steps[-1].action == "truncate" and report.steps[-1].outcome == "followed"


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("off", ["- 1", "+ 1"])
def test_asking_about_an_epoch_off_by_one_diverges_at_the_truncation(tmp_path: Path, off: str) -> None:
    code, report = drive_mutant(tmp_path, "impl/node/broker/replication_follower.py", ASKED,
                                ASKED.replace("()\n", f"() {off}\n"),
                                "--config", "kip320", "--path", str(_prefix(tmp_path)))
    assert code == 1 and report["outcome"] == "diverged"
    assert report["divergence"]["step"] == STEPS and report["divergence"]["action"] == "truncate"
