"""A control request delayed across a controller failover, on real brokers (3 brokers,
``kip320``).  Broker 2 crashes; controller 0 takes it out of the ISR at leader epoch 2 and
its LeaderAndISR to broker 1 is held; controller 0 (the leader too) crashes and broker 1
becomes controller at controller epoch 2.  The deposed controller's request is then
delivered twice: right after the election -- when it is stale by its controller epoch alone:
broker 1 is still at leader epoch 1, and without the fence would follow the dead broker 0 at
epoch 2 -- and again (duplicated) once broker 1 leads at epoch 3 under the new controller.
Broker 1 must refuse both as the model does (``reject_leader_and_isr``, reason
``stale_controller_epoch``), keeping the new controller's state.

The fence is the first check of every control request (``ControlRequests._fence_control``:
``_refuse_if_stale``; made again under the broker's lock as the request takes effect).  Behind it the controller's identity is checked against ZooKeeper
(docs/security.md), which refuses a deposed controller's request too -- so with the fence
taken out of a copy of the source, one line, broker 1 still changes nothing, but it refuses
the request as an unconfirmed claim, not as the model's stale request: the run diverges at
the first delivery, where the model's refusal is not recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from impl_testing import drive_mutant, drive_path_file

from impl.harness.drive import Driver, from_json
from model.actions import Step
from model.actions.commands import stale_reason
from model.config import named
from model.registry import apply
from model.state import LeaderAndIsr, State, initial

CFG = {"name": "kip320", "brokers": 3, "max_crashes": 2}
OLD = ("held", 1, 1)  # the deposed controller's request to broker 1 (controller epoch 1)
PLAN: list[tuple[str, tuple]] = [
    ("broker_crash", (2,)), ("elect_leader", (0, 0, 0)), ("become_leader", ("held", 0, 1)),
    ("broker_crash", (0,)), ("controller_elect", (1,)),
    ("reject_leader_and_isr", OLD),  # stale by its controller epoch alone
    ("become_follower", ("held", 1, 2)), ("elect_leader", (1, 0, 1)), ("become_leader", ("held", 1, 2)),
    ("reject_leader_and_isr", OLD)]  # delivered again, once broker 1 leads under the new controller
FIRST_REFUSAL = 6
FENCE = "        self._refuse_if_stale(header, kind, entries)\n"


def _request(s: State, to: int, controller_epoch: int, sent: dict[tuple, LeaderAndIsr]) -> LeaderAndIsr:
    """The newest LeaderAndISR to ``to`` from ``controller_epoch`` in flight, or, once the model
    has forgotten it (it forgets a request stale for ever), the last one sent."""
    flying = [m for m in s.leader_and_isr if m.to == to and m.controller_epoch == controller_epoch]
    return max(flying, key=lambda m: m.leader_epoch) if flying else sent[(to, controller_epoch)]


def _steps() -> list[tuple[Step, State]]:
    cfg = named("kip320", brokers=3, max_crashes=2)
    s, sent, out = initial(cfg), {}, []
    for action, args in PLAN:
        if args and args[0] == "held":
            args = (_request(s, args[1], args[2], sent),)
        step = Step(action, args)
        t = apply(s, cfg, step)
        assert t is not None, step
        out.append((step, s))
        for m in s.leader_and_isr:  # every request as it was sent, before the model forgets it
            sent[(m.to, m.controller_epoch)] = m
        s = t
    return out


def _path(tmp_path: Path) -> Path:
    return drive_path_file(tmp_path / "delayed_control.json", CFG, _steps())


def test_the_deposed_controllers_request_is_stale_by_its_controller_epoch_alone_after_the_election() -> None:
    from dataclasses import replace

    cfg = named("kip320", brokers=3, max_crashes=2)
    unfenced = replace(cfg, fence_controller_epoch=False)
    (step, s), (last, s_last) = _steps()[FIRST_REFUSAL - 1], _steps()[-1]
    m = step.args[0]
    assert m.controller_epoch == 1 and s.zk.controller_epoch == 2
    assert stale_reason(s, cfg, m) == "stale controller epoch" and stale_reason(s, unfenced, m) is None
    # once broker 1 leads at epoch 3, its leader epoch refuses the request too
    assert last.args[0] == m and stale_reason(s_last, unfenced, m) == "stale leader epoch"


@pytest.mark.integration
def test_a_control_request_delayed_across_a_failover_is_refused_by_its_controller_epoch(tmp_path: Path) -> None:
    report = Driver("kip320", data_dir=tmp_path / "run").run(from_json(_path(tmp_path)))
    assert report.verdict == "followed", report.divergence
    assert [s.action for s in report.steps] == [a for a, _ in PLAN]
    lines = (tmp_path / "run" / "traces" / "broker-1.jsonl").read_text().splitlines()
    refused = [json.loads(x)["params"] for x in lines if '"reject_leader_and_isr"' in x]
    assert [(p["reason"], p["controller_epoch"]) for p in refused] == [("stale_controller_epoch", 1)] * 2


@pytest.mark.integration
@pytest.mark.slow
def test_without_the_controller_epoch_fence_the_delayed_request_diverges_at_its_first_delivery(tmp_path: Path) -> None:
    code, report = drive_mutant(tmp_path, "impl/node/broker/control.py", FENCE, "",
                                "--config", "kip320", "--path", str(_path(tmp_path)), "--step-timeout", "5")
    assert code == 1 and report["outcome"] == "diverged", report
    d = report["divergence"]
    assert d["step"] == FIRST_REFUSAL and d["action"] == "reject_leader_and_isr", d
