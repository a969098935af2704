"""``epochal drive`` (impl.harness.drive): model runs executed against real brokers.

The history the model tells is reproduced on real processes: KAFKA-1211 loses a committed
record under the design's truncation rule and not under KIP-320's; the KIP-279 divergence
under KIP-101's rule, the KIP-320 stale fetch under KIP-279's; an unclean election loses a
committed record.  Bad input is one line and exit 2, before any process starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from impl_testing import verdict_object

from impl.harness.cli.main import main
from impl.harness.drive import OPERATIONS, Driver, from_json, scenario
from impl.harness.drive.paths import brokers_needed, step_of
from model.config import named
from model.registry import ACTIONS, apply
from model.state import initial
from properties.checkers.scenarios import play


def test_every_action_the_registry_says_is_driven_has_a_harness_operation() -> None:
    driven = {name for name, e in ACTIONS.items() if e.coverage.driver.supported}
    assert driven == set(OPERATIONS)


def test_an_undriven_action_names_why_in_its_registry_entry() -> None:
    for name, e in ACTIONS.items():
        if not e.coverage.driver.supported:
            assert e.coverage.driver.reason and "issue 21" not in e.coverage.driver.reason, name


def _run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["drive", *argv])
    err = capsys.readouterr().err
    return code, err


@pytest.mark.parametrize("argv, message", [
    (["--config", "nope", "--scenario", "kafka_1211"], "unknown configuration 'nope'"),
    (["--config", "design", "--scenario", "nope"], "unknown scenario 'nope'"),
    (["--config", "design", "--scenario", "kafka_1211", "--step-timeout", "0"], "--step-timeout must be positive"),
])
def test_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, err = _run_cli(capsys, *argv)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_path_file_that_is_not_a_counterexample_is_bad_input(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    for text, message in [("{", "is not JSON"), ('{"x": 1}', "has no steps"),
                          ('[{"action": "fly", "args": []}]', "unknown action 'fly'"),
                          ('[{"action": "add_partitions", "args": [0, 1, [0], 0]}]',
                           "action add_partitions needs --partition-changes 1")]:
        f = tmp_path / "path.json"
        f.write_text(text)
        code, err = _run_cli(capsys, "--config", "design", "--path", str(f))
        assert code == 2 and message in err and "Traceback" not in err
    code, err = _run_cli(capsys, "--config", "design", "--path", str(tmp_path / "missing.json"))
    assert code == 2 and "cannot read" in err


def test_a_check_json_counterexample_reads_back_as_the_same_steps(tmp_path: Path) -> None:
    from impl.harness.cli.verdict import plain

    cfg = named("design")
    outcome = play("kafka_1211", cfg)
    doc = {"results": [{"config": {"brokers": 2}, "violation": {"steps": [
        {"n": i, "action": s.action, "args": plain(s.args)} for i, (s, _) in enumerate(outcome.steps, 1)]}}]}
    f = tmp_path / "cex.json"
    f.write_text(json.dumps(doc))
    run = from_json(f)
    s = initial(cfg)
    for (action, choose), (want, _) in zip(run.steps, outcome.steps, strict=True):
        step = step_of(action, choose, s)
        assert step == want
        s = apply(s, cfg, step)
    assert run.brokers == 2


def test_a_scenario_is_driven_with_as_many_brokers_as_it_names() -> None:
    assert brokers_needed(scenario("kafka_1211"), "design") == 2
    assert brokers_needed(scenario("kip279_divergence"), "kip101") == 3
    assert brokers_needed(scenario("kip320_stale_fetch"), "kip320") == 3


def _drive(config: str, name: str, tmp_path: Path):
    return Driver(config, data_dir=tmp_path / "cluster").run(scenario(name))


def test_kafka_1211_loses_the_committed_record_on_real_brokers_under_the_design(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["drive", "--config", "design", "--scenario", "kafka_1211", "--json", "--quiet",
                 "--data-dir", str(tmp_path / "cluster")])
    report = verdict_object(capsys.readouterr().out)  # the verdict object (docs/verdict.schema.json)
    assert code == 1 and report["exit_code"] == 1 and report["command"] == "drive"
    assert report["outcome"] == "reproduced" and report["property"] == "committed_durable"
    assert report["verdict"] == "violated" and report["violation"]["property"] == "committed_durable"
    # the violation's steps are the scenario's model steps, as drive --path reads them back
    assert [s["action"] for s in report["violation"]["steps"]] == [a for a, _ in scenario("kafka_1211").steps]
    assert report["config"]["name"] == "design" and report["config"]["brokers"] == 2
    steps = report["steps"]
    assert [s["outcome"] for s in steps][:-1] == ["followed"] * (len(steps) - 1)
    assert steps[-1]["action"] == "elect_leader" and steps[-1]["n"] == len(scenario("kafka_1211").steps)


@pytest.mark.integration
def test_kafka_1211_keeps_every_record_on_real_brokers_under_kip320(tmp_path: Path) -> None:
    report = _drive("kip320", "kafka_1211", tmp_path)
    assert report.verdict == "followed" and report.exit_code == 0
    assert len(report.steps) == 11 and report.divergence is None


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("config, name, verdict, broken", [
    ("kip101", "kip279_divergence", "reproduced", "replicas_consistent"),
    ("kip320", "kip279_divergence", "followed", None),
    ("kip279", "kip320_stale_fetch", "reproduced", "replicas_consistent"),
    ("kip320", "kip320_stale_fetch", "model_refused", None),
])
def test_the_kip279_and_kip320_stories_on_real_brokers(tmp_path: Path, config: str, name: str,
                                                       verdict: str, broken: str | None) -> None:
    report = _drive(config, name, tmp_path)
    assert report.verdict == verdict, report.divergence
    assert report.property == broken
    assert report.exit_code == (1 if broken else 0)


@pytest.mark.integration
@pytest.mark.slow
def test_a_leader_alone_in_its_isr_records_each_produce_with_the_hw_after_it(tmp_path: Path) -> None:
    """Found by guided fuzzing: with its follower crashed and shrunk out of the ISR, the
    leader commits a write at once -- the model's produce advances the HW in the same step --
    but the produce event recorded the HW from before, so the run diverged at step 3."""
    doc = {"steps": [{"action": "broker_crash", "args": [1]}, {"action": "shrink_isr", "args": [0, 0, 1]},
                     {"action": "produce", "args": [0, 0]}]}
    f = tmp_path / "alone.json"
    f.write_text(json.dumps(doc))
    report = Driver("kip320", data_dir=tmp_path / "cluster").run(from_json(f))
    assert report.verdict == "followed" and report.exit_code == 0, report.divergence
    assert len(report.steps) == 3


@pytest.mark.integration
@pytest.mark.slow
def test_an_unclean_election_loses_a_committed_record_on_real_brokers(tmp_path: Path) -> None:
    doc = {"steps": [{"action": "produce", "args": [0, 0]}, {"action": "shrink_isr", "args": [0, 0, 1]},
                     {"action": "broker_crash", "args": [0]}, {"action": "controller_elect", "args": [1]},
                     {"action": "elect_leader", "args": [1, 0, 1]}]}
    f = tmp_path / "unclean.json"
    f.write_text(json.dumps(doc))
    unclean = Driver("unclean", data_dir=tmp_path / "a").run(from_json(f))
    assert unclean.verdict == "reproduced" and unclean.property == "committed_durable"
    clean = Driver("kip320", data_dir=tmp_path / "b").run(from_json(f))
    assert clean.verdict == "model_refused" and clean.exit_code == 0


def test_generated_cases_each_end_in_their_pair_and_together_cover_every_pair() -> None:
    from impl.harness.drive.generate import outcome, pairs_along, search

    cfg = named("kip320", brokers=2)
    cases, states, transitions = search(cfg, max_states=3000)
    assert states <= 3000 and transitions > states
    for case in cases:
        s = initial(cfg)
        for step in case.steps:
            t = apply(s, cfg, step)
            assert t is not None
            last = (step.action, outcome(step, s, t, cfg))
            s = t
        assert last == case.pair
    taken: set = set()
    for case in cases:
        new = pairs_along(cfg, case.steps) - taken
        if not new:
            break  # the greedy order puts the cases that add nothing last
        taken |= new
    assert taken == {c.pair for c in cases}


@pytest.mark.slow
@pytest.mark.longest
def test_generated_cases_within_a_ci_budget_cover_every_pair_and_follow_the_model(tmp_path: Path) -> None:
    """With a preferred election allowed, the admin action whose path is the longest (a
    leader moved off its preferred replica, which then catches up): 24 pairs, in about the
    time the 23 of the plain configuration take at 50,000 states (isr_update_failed's is a
    path of its own, 3 steps: 76 s in all, measured)."""
    from impl.harness.drive.generate import generate

    report = generate("kip320", budget_s=150, data_dir=tmp_path, knobs={"preferred_elections": 1},
                      max_states=10_000)
    assert report.exit_code == 0 and all(c["verdict"] == "followed" for c in report.cases)
    assert set(report.covered_pairs) == set(report.pairs)
    assert ("preferred_election", "taken") in report.covered_pairs


@pytest.mark.integration
@pytest.mark.slow
def test_a_seeded_bug_is_a_divergence_naming_the_step_what_was_done_and_what_the_model_allowed(
        tmp_path: Path) -> None:
    """A copy of the source with KIP-320's fence seeded wrong (a stale fetch epoch passes),
    its brokers started from the copy: the story that follows the model against the real
    rule diverges where the rule matters."""
    from impl_testing import drive_mutant

    line = "    if fetch_epoch >= 0 and fetch_epoch != r.leader_epoch:"
    code, report = drive_mutant(tmp_path, "impl/node/fencing.py", line, line.replace("!=", ">"),
                                "--config", "kip320", "--scenario", "kip320_stale_fetch")
    assert code == 1 and report["outcome"] == "diverged"
    d = report["divergence"]
    assert d["action"] == "handle_fetch" and d["step"] == 23
    assert "handle_fetch by broker 0" in d["implementation_did"] and "FENCED_LEADER_EPOCH" in d["model_allowed"]


def test_a_driven_cluster_signs_in_as_every_cluster_does(tmp_path: Path) -> None:
    """Driven brokers run with SCRAM on (docs/security.md), not --insecure: the relay reads
    frames SCRAM leaves in the clear.  That the sign-in works through the relay, as the
    operator and in a broker's name, the real-process drive runs prove (the admin run's
    ControlledShutdown is accepted only from ``broker-N``)."""
    from impl.harness.drive.network import STEP_SETTINGS, SteerableCluster

    steerable = SteerableCluster(tmp_path, 2, "kip320")
    assert not steerable.cluster.insecure and not steerable.settings.get("insecure", False)
    assert "insecure" not in STEP_SETTINGS and not steerable.settings.get("tls", False)
