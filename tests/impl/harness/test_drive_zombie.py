"""A zombie controller on real processes: broker 0, the controller, is frozen (SIGSTOP) in
the middle of an election -- broker 2 crashed, its election waits for its permit -- until its
ZooKeeper session expires; broker 1 becomes controller at controller epoch 2; broker 0 resumes
still inside its election, reads ZooKeeper afresh and writes.  Only the ``/controller_epoch``
check in front of every controller write refuses it (``ControllerContext._txn``): the run
follows the model, and, with that check taken out of a copy of the source, diverges at the
zombie's resignation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from impl_testing import drive_mutant

from impl.harness.drive import Driver, from_json
from impl.harness.drive.generate import search, walk
from impl.harness.drive.zombie import waiting_after, write_refused, writes_unfenced
from model.actions import Step
from model.config import named
from model.registry import apply
from model.state import initial

ZOMBIE_PATH = {"config": {"brokers": 3, "max_crashes": 1},
               "steps": [{"action": "broker_crash", "args": [2]},
                         {"action": "broker_pause", "args": [0]},  # inside its election of partition 0
                         {"action": "controller_elect", "args": [1]},
                         {"action": "broker_resume", "args": [0]},  # it re-registers at once
                         {"action": "controller_resign", "args": [0]},  # its write refused: epoch_fenced
                         {"action": "elect_leader", "args": [1, 0, 0]}]}  # the new controller's goes through

EPOCH_CHECK = "        txn.check(zkl.CONTROLLER_EPOCH, self.epoch_version)\n"


def _path(tmp_path: Path) -> Path:
    path = tmp_path / "zombie.json"
    path.write_text(json.dumps(ZOMBIE_PATH))
    return path


def test_a_controller_paused_inside_an_election_waits_there_and_its_write_is_refused_once_replaced() -> None:
    cfg = named("zombie", brokers=3, max_crashes=1)
    s, waiting = initial(cfg), frozenset()
    for d in ZOMBIE_PATH["steps"][:4]:
        step = Step(d["action"], tuple(d["args"]))
        waiting = waiting_after(step, s, cfg, waiting)
        s = apply(s, cfg, step)
        assert s is not None
    assert waiting == {0}
    s = apply(s, cfg, Step("broker_reregister", (0,)))
    assert write_refused(s, 0, cfg) and not writes_unfenced(s, 0, cfg)


def test_the_zombie_configuration_with_a_crash_generates_a_resumed_controller_whose_write_is_refused() -> None:
    cfg = named("zombie", brokers=3, max_crashes=1)
    cases, _, _ = search(cfg, max_states=3000)
    pairs = {c.pair for c in cases}
    assert {("broker_pause", "controller_electing"), ("broker_resume", "zombie_controller"),
            ("controller_resign", "write_refused")} <= pairs
    case = next(c for c in cases if c.pair == ("controller_resign", "write_refused"))
    assert [result for _, _, result in walk(cfg, case.steps)][-1] == "write_refused"
    # at two brokers the broker that crashed must come back to take over, and then nothing
    # is left to elect: the zombie writes nothing
    two = {c.pair for c in search(named("zombie", brokers=2, max_crashes=1), max_states=3000)[0]}
    assert ("broker_pause", "controller_electing") in two and ("controller_resign", "write_refused") not in two


def test_a_controller_frozen_inside_an_election_with_no_successor_writes_and_is_not_generated() -> None:
    """Its session expired, but no other controller was elected: /controller_epoch has not
    moved, so its write passes the check -- a write the model has no step for."""
    cfg = named("zombie", brokers=2, max_crashes=1)
    s = initial(cfg)
    for step in (Step("broker_crash", (1,)), Step("broker_pause", (0,)), Step("broker_resume", (0,)),
                 Step("broker_reregister", (0,))):
        s = apply(s, cfg, step)
    assert writes_unfenced(s, 0, cfg) and not write_refused(s, 0, cfg)  # the ISR still names broker 1
    for case in search(cfg, max_states=3000)[0]:
        for (state, waiting), step, _ in walk(cfg, case.steps):
            if step.action == "controller_resign" and step.args[0] in waiting:
                assert not writes_unfenced(state, step.args[0], cfg)


@pytest.mark.integration
def test_a_zombie_controllers_write_is_refused_by_the_controller_epoch_check_on_real_brokers(tmp_path: Path) -> None:
    report = Driver("zombie", data_dir=tmp_path / "run").run(from_json(_path(tmp_path)))
    assert report.verdict == "followed", report.divergence
    assert [s.action for s in report.steps if s.outcome == "inserted"] == ["broker_reregister"]
    lines = (tmp_path / "run" / "traces" / "broker-0.jsonl").read_text().splitlines()
    resigns = [json.loads(x)["params"] for x in lines if '"controller_resign"' in x]
    assert resigns[0] == {"controller_epoch": 1, "reason": "epoch_fenced"}


@pytest.mark.integration
@pytest.mark.slow
def test_without_the_controller_epoch_check_the_zombie_run_diverges_at_its_resignation(tmp_path: Path) -> None:
    """The one-line mutant: the check taken out of a copy of the source, the brokers started
    from the copy.  The zombie's write goes through (conditional on the zk_version it has just
    read), and it resigns for its session, not for the epoch."""
    code, report = drive_mutant(tmp_path, "impl/node/controller/context.py", EPOCH_CHECK, "",
                                "--config", "zombie", "--path", str(_path(tmp_path)))
    assert code == 1 and report["outcome"] == "diverged"
    d = report["divergence"]
    assert d["step"] == 5 and d["action"] == "controller_resign"
    assert "not refused by the controller-epoch check" in d["implementation_did"]
