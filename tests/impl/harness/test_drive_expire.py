"""A session expiry that is not a crash, on real brokers (3 brokers, ``kip320``).  Broker 1
crashes; controller 0 takes it out of the ISR at leader epoch 2, and its LeaderAndISR to
broker 2 is held.  Then broker 2's ZooKeeper session expires while its process runs on
(``LocalCluster.expire``: a second client attached to the session closes it): its
registration goes, controller 0 takes it out of the ISR too (leader epoch 3), and broker 2
registers again in a new session (at its ``broker_reregister`` permit), with a new broker
epoch.  The LeaderAndISR held since leader epoch 2 is delivered only now: it was computed
before the re-registration, its max broker epoch is older than broker 2's new one, and broker
2 must refuse it (``reject_leader_and_isr``, reason ``stale_broker_epoch``, seed 003) -- by its
leader epoch alone it would follow it, since it never saw epoch 2.  Then the controller's
request for the new registration (``on_broker_startup``) is taken.

With the re-registration keeping the broker's old epoch (one line of
``Startup.register``), the stale request passes the fence and the run diverges at its
delivery."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from impl_testing import drive_mutant, drive_path_file

from impl.harness.drive import Driver, from_json
from impl.harness.drive.generate import search
from impl.harness.drive.zombie import on_its_own
from model.actions import Step
from model.actions.commands import stale_reason
from model.config import named
from model.registry import apply
from model.state import State, initial

CFG = {"name": "kip320", "brokers": 3, "max_crashes": 1, "max_expiries": 1}
HELD = ("held", 2, 2)  # controller 0's request to broker 2 at leader epoch 2, sent before the expiry
PLAN: list[tuple[str, tuple]] = [
    ("broker_crash", (1,)), ("elect_leader", (0, 0, 0)),
    ("broker_expire", (2,)), ("elect_leader", (0, 0, 0)), ("broker_reregister", (2,)),
    ("reject_leader_and_isr", HELD),  # meant for broker 2's previous registration
    ("on_broker_startup", (0, 2)), ("become_follower", ("held", 2, 3))]
REFUSAL = 6
NEW_EPOCH = "        self.broker_epoch = stat.czxid\n"
KEEPS_OLD_EPOCH = "        self.broker_epoch = stat.czxid if not reregister else self.broker_epoch\n"


def _cfg():  # noqa: ANN202 - model.config.Config
    return named("kip320", brokers=3, max_crashes=1, max_expiries=1)


def _steps() -> list[tuple[Step, State]]:
    """The plan in the model; a held request is the one in flight to that broker at that
    leader epoch, or, once the model has forgotten it (it forgets a request stale for ever),
    the one sent first."""
    cfg = _cfg()
    s, sent, out = initial(cfg), {}, []
    for action, args in PLAN:
        if args and args[0] == "held":
            flying = [m for m in s.leader_and_isr if (m.to, m.leader_epoch) == args[1:]]
            args = (flying[-1] if flying else sent[args[1:]],)
        step = Step(action, args)
        t = apply(s, cfg, step)
        assert t is not None, step
        out.append((step, s))
        for m in t.leader_and_isr:
            sent.setdefault((m.to, m.leader_epoch), m)
        s = t
    return out


def _path(tmp_path: Path) -> Path:
    return drive_path_file(tmp_path / "expire.json", CFG, _steps())


def test_a_request_sent_before_the_re_registration_is_stale_by_the_broker_epoch_alone() -> None:
    cfg = _cfg()
    step, s = _steps()[REFUSAL - 1]
    m = step.args[0]
    assert m.to == 2 and m.leader_epoch == 2 and s.brokers[2].replicas[0].leader_epoch == 1
    assert stale_reason(s, cfg, m) == "stale broker epoch"
    assert stale_reason(s, replace(cfg, fence_broker_epoch=False), m) is None  # else it would follow it


def test_an_expired_controller_resigns_at_once_and_registers_again_only_at_its_own_step() -> None:
    cfg = _cfg()
    s = initial(cfg)
    t = apply(s, cfg, Step("broker_expire", (0,)))
    assert on_its_own(Step("broker_expire", (0,)), t, cfg, frozenset()) == [Step("controller_resign", (0,))]
    assert on_its_own(Step("broker_expire", (2,)), apply(s, cfg, Step("broker_expire", (2,))), cfg, frozenset()) == []


def _recorded(mbe_of: str) -> list[dict]:
    """The plan's events as a real run records them: each registration's broker epoch the
    czxid of its ZooKeeper write (large, as a real cluster's), and the refusal naming the
    max broker epoch of the request it refused -- that of ``mbe_of``, the registration the
    controller had read last before sending it (``"first"``), or the re-registration."""
    from conformance.judge.replay import events_from_steps

    events = events_from_steps(_cfg(), [step for step, _ in _steps()])
    czxid = {id(e): 50 + 10 * e["zxid"] for e in events if e["kind"] in ("broker_restart", "broker_reregister")}
    for e in events:
        if id(e) in czxid:
            e["params"]["broker_epoch"] = czxid[id(e)]
    first, again = (czxid[id(e)] for e in events if id(e) in czxid and e["node"] == 2)
    for e in events:
        if e["kind"] == "reject_leader_and_isr":
            e["params"]["max_broker_epoch"] = first if mbe_of == "first" else again
    return events


def test_the_judge_takes_a_refusal_for_the_broker_epoch_only_of_a_request_sent_before_the_re_registration() -> None:
    """The request's max broker epoch is a czxid; the judge orders it among the trace's
    registrations, as the fence does."""
    from conformance.judge.replay import judge

    assert judge(_recorded("first"), "kip320")["conforms"]
    verdict = judge(_recorded("re-registration"), "kip320")
    assert not verdict["conforms"] and "reject_leader_and_isr" in verdict["reason"]


def test_generated_cases_take_session_expiries() -> None:
    cases, _, _ = search(_cfg(), max_states=3000)
    pairs = {c.pair for c in cases}
    assert {("broker_expire", "broker"), ("broker_expire", "controller"), ("broker_reregister", "taken")} <= pairs


@pytest.mark.integration
def test_a_running_brokers_session_expires_and_it_refuses_what_was_meant_for_its_old_registration(
        tmp_path: Path) -> None:
    report = Driver("kip320", data_dir=tmp_path / "run").run(from_json(_path(tmp_path)))
    assert report.verdict == "followed", report.divergence
    assert [s.action for s in report.steps] == [a for a, _ in PLAN]
    lines = [json.loads(x) for x in (tmp_path / "run" / "traces" / "broker-2.jsonl").read_text().splitlines()]
    epochs = [e["params"]["broker_epoch"] for e in lines if e["kind"] in ("broker_restart", "broker_reregister")]
    assert len(epochs) == 2 and epochs[1] > epochs[0]
    refused = [e["params"] for e in lines if e["kind"] == "reject_leader_and_isr"]
    assert [p["reason"] for p in refused] == ["stale_broker_epoch"]


@pytest.mark.integration
@pytest.mark.slow
def test_a_re_registration_that_keeps_the_old_broker_epoch_diverges_at_the_stale_request(tmp_path: Path) -> None:
    code, report = drive_mutant(tmp_path, "impl/node/broker/startup.py", NEW_EPOCH, KEEPS_OLD_EPOCH,
                                "--config", "kip320", "--path", str(_path(tmp_path)), "--step-timeout", "5")
    assert code == 1 and report["outcome"] == "diverged", report
    d = report["divergence"]
    assert d["step"] == REFUSAL and d["action"] == "reject_leader_and_isr", d
