"""Each scenario on real Kafka 3.9, recorded, adapted and judged end to end, at each profile,
by the configuration of its profile (``model_config``: ``kafka26`` for ibp-2.6, ``kafka39``
for the 3.9 default), which has every model gap the runs showed closed; the seed's own rules
(``kip320``) refuse each run at a documented divergence (docs/kafka.md): the restarted victim
applying the controller's LeaderAndIsr (divergence 4), or the new controller's leaderless
write (divergence 1).

Real timing is not scripted, and the adapter orders steps from Kafka's millisecond stamps
and request-log durations, a produce before the fetch answer the relay saw carry its record
(the scenarios run behind relays): two steps of one millisecond or a fetch's rebuilt read
time may still sort the wrong way (docs/kafka.md, "Still open").  Such a run stops at a
replication step (``OBSERVATION_GAPS``), never at a model gap's kind; every other run
conforms."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conformance.judge.replay import judge
from conformance.kafka.adapter import CONFIGS, adapt, model_config, to_records
from conformance.spark.verdict import judge_run

pytestmark = [pytest.mark.slow, pytest.mark.integration,
              pytest.mark.skipif(shutil.which("mvn") is None or shutil.which("java") is None,
                                 reason="needs mvn and java (docs/kafka.md)")]

OBSERVATION_GAPS = {"handle_fetch", "receive_fetch", "expand_isr", "produce"}
"""The kinds a run may stop at when the adapter's order from millisecond stamps is wrong.
``apply_isr`` is no longer one (an apply placed before the controller's AlterPartition write
it answers waits for it), nor is a ``handle_fetch`` or ``receive_fetch`` missing the record of
a produce logged after the answer that carried it (``test_ordering.py``); the kinds stay for
the causes not yet closed (docs/kafka.md, "Still open")."""

SEED_DIVERGENCE = {
    # (scenario, profile): the first event kip320 refuses, and who took it
    ("leader-kill", "ibp-2.6"): ("become_follower", "victim"),  # divergence 4
    ("controller-failover", "ibp-2.6"): ("become_follower", "victim"),  # divergence 4
    ("leader-controller-kill", "ibp-2.6"): ("elect_leader", "controller"),  # divergence 1
    ("leader-kill", "3.9"): ("become_follower", "victim"),  # divergence 4
    ("controller-failover", "3.9"): ("become_follower", "victim"),  # divergence 4
}


@pytest.mark.parametrize("scenario,profile", sorted(SEED_DIVERGENCE))
def test_the_scenario_conforms_to_its_profiles_configuration(tmp_path: Path, scenario: str, profile: str) -> None:
    from impl.harness.kafka.scenarios import run_scenario

    run_dir = run_scenario(scenario, tmp_path / "run", profile)
    records = to_records(adapt(run_dir), "kafka")
    assert len([r for r in records if r["kind"] == "produce"]) == 6
    config = model_config(run_dir)
    assert config == CONFIGS[profile]
    (verdict,) = judge_run("kafka", records, judge, config)
    if profile == "3.9":
        assert "apply_isr" in {r["kind"] for r in records}, "the victim's return is an AlterPartition"
    if verdict["status"] != "conforms":
        assert verdict["status"] == "violates" and verdict["first_bad_kind"] in OBSERVATION_GAPS, verdict["reason"]
        pytest.xfail(f"an ordering gap of the adapter: {verdict['reason'][:200]}")
    (seed,) = judge_run("kafka", records, judge, "kip320")
    kind, who = SEED_DIVERGENCE[(scenario, profile)]
    crash = next(i for i, r in enumerate(records) if r["kind"] == "broker_crash")
    actor = {"victim": records[crash]["params"]["broker"],
             "controller": next((r["node"] for r in records[crash:] if r["kind"] == "controller_elect"), None)}[who]
    assert seed["status"] == "violates"
    assert (seed["first_bad_kind"], seed["first_bad_node"]) == (kind, actor), seed["reason"]


def test_a_reassignment_takes_is_recorded_and_conforms_to_kafka39(tmp_path: Path) -> None:
    """``--scenario reassign`` at 3.9 (15 s on an idle machine, 48 s busy): Kafka's own
    ReassignPartitionsCommand moves ``orders-0`` off its leader onto the broker outside it, the
    adapter reads the move's phases (docs/kafka.md, divergences 19 and 20), ``kafka39`` judges
    it -- and the seed's one-epoch move (``kip320``) refuses the start's epoch, at the leader's
    ``become_leader`` of it."""
    from impl.harness.kafka.scenarios import REASSIGN, run_scenario

    run_dir = run_scenario(REASSIGN, tmp_path / "run", "3.9")
    records = to_records(adapt(run_dir), "kafka")
    assert len([r for r in records if r["kind"] == "produce"]) == 6
    moves = [r["params"] for r in records if r["kind"] == "reassignment"]
    assert [m["state"] for m in moves] == ["IN_PROGRESS", "DONE"] and moves[0]["ar"] != moves[0]["rar"]
    (removed,) = set(moves[0]["ar"]) - set(moves[0]["rar"])
    assert [r["node"] for r in records if r["kind"] == "stop_replica"] == [removed]
    leader = next(r["params"]["leader"] for r in records if r["params"].get("reason") == "reassign")
    assert leader in moves[0]["rar"]
    assert {r["node"] for r in records if r["kind"] == "produce"} == {removed, leader}, \
        "the values after the move went to the new leader"
    (verdict,) = judge_run("kafka", records, judge, model_config(run_dir))
    if verdict["status"] != "conforms":
        assert verdict["status"] == "violates" and verdict["first_bad_kind"] in OBSERVATION_GAPS, verdict["reason"]
        pytest.xfail(f"an ordering gap of the adapter: {verdict['reason'][:200]}")
    (seed,) = judge_run("kafka", records, judge, "kip320")
    assert (seed["first_bad_kind"], seed["first_bad_node"]) == ("become_leader", removed), seed["reason"]
