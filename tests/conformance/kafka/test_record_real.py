"""Each scenario on real Kafka 3.9, recorded, adapted and judged end to end, at each profile.

The scenarios place the leader by replica assignment, so each kills the same role in every
run, and the judge usually stops at the same divergence of docs/kafka.md (Divergences):
which event kind, taken by whom.  Real timing is not scripted, though: a loaded machine once
stopped controller-failover at ibp-2.6 on a leader's handle_fetch (an observation gap: two
fetches logged in one millisecond), so a run must stop at one of the documented
divergences, and where it stops at its usual one, everything up to the crash matched."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conformance.judge.replay import judge
from conformance.kafka.adapter import adapt, to_records
from conformance.spark.verdict import judge_run

pytestmark = [pytest.mark.slow, pytest.mark.integration,
              pytest.mark.skipif(shutil.which("mvn") is None or shutil.which("java") is None,
                                 reason="needs mvn and java (docs/kafka.md)")]

VERDICTS = {
    # (scenario, profile): (first refused kind, who took it, what the reason says)
    ("leader-kill", "ibp-2.6"): ("become_follower", "victim", "is not enabled"),  # divergence 4
    ("controller-failover", "ibp-2.6"): ("become_follower", "victim", "is not enabled"),  # divergence 4
    ("leader-controller-kill", "ibp-2.6"): ("elect_leader", "controller", "observed leader=-1"),  # divergence 1
    ("leader-kill", "3.9"): ("handle_fetch", "leader", ""),  # divergence 5
    ("controller-failover", "3.9"): ("handle_fetch", "leader", ""),  # divergence 6
}


@pytest.mark.parametrize("scenario,profile", sorted(VERDICTS))
def test_the_scenario_stops_at_its_divergence(tmp_path: Path, scenario: str, profile: str) -> None:
    from impl.harness.kafka.scenarios import run_scenario

    run_dir = run_scenario(scenario, tmp_path / "run", profile)
    records = to_records(adapt(run_dir), "kafka")
    (verdict,) = judge_run("kafka", records, judge, "kip320")
    assert len([r for r in records if r["kind"] == "produce"]) == 6
    kind, who, says = VERDICTS[(scenario, profile)]
    crash = next(i for i, r in enumerate(records) if r["kind"] == "broker_crash")
    victim = records[crash]["params"]["broker"]
    actor = {"victim": victim,
             "controller": next((r["node"] for r in records[crash:] if r["kind"] == "controller_elect"), None),
             "leader": next((r["node"] for r in records[crash:] if r["kind"] == "become_leader"), None)}[who]
    assert verdict["status"] == "violates", verdict["reason"]
    documented = {k for k, _, _ in VERDICTS.values()}
    assert verdict["first_bad_kind"] in documented, verdict["reason"]
    if (verdict["first_bad_kind"], verdict["first_bad_node"]) == (kind, actor):
        assert says in verdict["reason"]
        assert verdict["matched"] > crash
