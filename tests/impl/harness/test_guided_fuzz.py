"""Model-guided fuzzing (``epochal drive --generate guided``, impl.harness.drive.guided):
seeded random schedules steered toward model states no run has reached yet, driven against
real brokers and judged at every step.

The steering is real (it reaches more distinct states than a random walk over the same
steps, on a stub graph and on the model), the choice is a function of the seed alone, a
failing schedule is saved as a path ``epochal drive --path`` reads, and a short real run
reaches model states with the implementation following the model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.judge.replay import events_from_steps, judge
from impl.harness.cli.main import main
from impl.harness.drive import from_json
from impl.harness.drive.guided import (
    Steering,
    fuzz,
    judged_states,
    path_json,
    run_trace_dir,
    walk,
    within_bounds,
)
from impl.harness.drive.paths import step_of
from model.actions import Step
from model.config import named
from model.registry import apply
from model.state import initial

ROOT = Path(__file__).resolve().parents[3]


def _comb(width: int, depth: int):  # noqa: ANN202 - a stub state graph: ints for states
    """A hub (0) with ``width`` teeth of ``depth`` states each; every tooth state leads
    deeper or back to the hub, so a random walk keeps falling back into the teeth it knows."""

    def moves(s):  # noqa: ANN001, ANN202
        if s == 0:
            return [(Step("enter", (k,)), 1000 * k + 1) for k in range(width)]
        k, d = divmod(s, 1000)
        out = [(Step("back", (k, d)), 0)]
        if d < depth:
            out.append((Step("deeper", (k, d)), s + 1))
        return out

    return moves, width * depth + 1


def test_guided_choice_reaches_more_states_of_a_stub_graph_than_a_random_walk() -> None:
    moves, total = _comb(width=6, depth=6)
    cfg = named("kip320")
    never = lambda s, t: False  # noqa: E731
    guided = [len(walk(Steering(cfg, seed, True, moves, start=0), 0, 60, 12, ends=never).visited)
              for seed in range(5)]
    uniform = [len(walk(Steering(cfg, seed, False, moves, start=0), 0, 60, 12, ends=never).visited)
               for seed in range(5)]
    assert all(g > u for g, u in zip(guided, uniform, strict=True)), (guided, uniform)
    assert max(guided) <= total


def test_guided_choice_reaches_more_model_states_than_a_random_walk_in_the_same_steps() -> None:
    cfg = named("kip320", brokers=2)
    s0 = initial(cfg)
    guided = sum(len(walk(Steering(cfg, seed, True), s0, 240, 30).visited) for seed in range(4))
    uniform = sum(len(walk(Steering(cfg, seed, False), s0, 240, 30).visited) for seed in range(4))
    assert guided > 1.3 * uniform, (guided, uniform)


def test_a_step_whose_state_was_reached_is_not_preferred() -> None:
    cfg = named("kip320", brokers=2)
    steer = Steering(cfg, 0)
    s0 = initial(cfg)
    options = steer.candidates(s0)
    for _, t in options[:-1]:
        steer.reached(t)
    assert all(steer.choose(s0) == options[-1] for _ in range(10))


def test_a_run_that_can_reach_nothing_new_is_ended() -> None:
    moves, total = _comb(width=2, depth=2)
    steer = walk(Steering(named("kip320"), 0, True, moves, start=0), 0, 100, 10, ends=lambda s, t: False)
    assert len(steer.visited) == total
    assert steer.choose(0) is None and steer.choose(1001) is None


def test_a_state_a_run_failed_to_reach_is_no_longer_preferred() -> None:
    cfg = named("kip320", brokers=2)
    steer = Steering(cfg, 0)
    s0 = initial(cfg)
    options = steer.candidates(s0)
    for _, t in options[:-2]:
        steer.reached(t)
    steer.tried.add(options[-1][1])
    assert all(steer.choose(s0) == options[-2] for _ in range(10))


def _schedule(seed: int) -> list[str]:
    cfg = named("kip320", brokers=2)
    steer = walk(Steering(cfg, seed), initial(cfg), 45, 15)
    return sorted(map(repr, steer.visited))


def test_the_same_seed_chooses_the_same_schedule_and_another_seed_another() -> None:
    assert _schedule(7) == _schedule(7)
    assert _schedule(7) != _schedule(8)


@pytest.mark.integration
def test_the_schedule_does_not_depend_on_the_process_hash_seed() -> None:
    code = ("from impl.harness.drive.guided import Steering, walk; from model.config import named; "
            "from model.state import initial; cfg = named('kip320', brokers=2); s = initial(cfg); "
            "st = Steering(cfg, 3); out = []\n"
            "for _ in range(25):\n"
            "    c = st.choose(s)\n"
            "    if c is None: break\n"
            "    out.append((c[0].action, repr(c[0].args))); st.reached(c[1]); s = c[1]\n"
            "print(out)")
    outs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True,
                           env=dict(os.environ, PYTHONHASHSEED=h)).stdout for h in ("1", "2")}
    assert len(outs) == 1 and "send_fetch" in next(iter(outs))


def test_a_saved_schedule_is_a_path_drive_replays(tmp_path: Path) -> None:
    cfg = named("design", brokers=2)
    steer = Steering(cfg, 5)
    s, taken = initial(cfg), []
    for _ in range(12):
        step, t = steer.choose(s)  # type: ignore[misc]
        taken.append((step, s))
        s = t
    f = tmp_path / "guided.json"
    f.write_text(json.dumps(path_json(cfg, taken, "a test")))
    run = from_json(f)
    assert run.brokers == 2 and len(run.steps) == len(taken)
    replayed = initial(named("design", brokers=2, **run.bounds))
    for (action, choose), (step, _) in zip(run.steps, taken, strict=True):
        again = step_of(action, choose, replayed)
        assert again == step
        replayed = apply(replayed, cfg, again)
    assert replayed == s


def test_a_state_past_the_models_bounds_is_not_within_them() -> None:
    cfg = named("kip320", brokers=2)
    s = initial(cfg)
    assert within_bounds(s, cfg)
    assert not within_bounds(s._replace(ghost=s.ghost._replace(produced=cfg.records + 1)), cfg)


def test_bad_input_to_generate_guided_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, message in [(["--generate", "guided"], "--budget"),
                          (["--scenario", "kafka_1211", "--seed", "3"], "--seed goes with --generate guided")]:
        code = main(["drive", "--config", "kip320", *argv])
        err = capsys.readouterr().err
        assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.slow
def test_a_short_guided_run_against_real_brokers_follows_the_model_and_reaches_states(tmp_path: Path) -> None:
    judged: list[set] = []
    report = fuzz("kip320", budget_s=0.1, seed=0, brokers=2, steps=6, data_dir=tmp_path,
                  on_run=lambda d, r: judged.append(judged_states(run_trace_dir(d), "kip320")))
    assert [r.verdict for r in report.runs] == ["followed"] and report.exit_code == 0
    run = report.runs[0]
    assert run.steps == 6 and run.transitions >= 6 and run.new_states >= 3
    assert report.states == run.new_states + 1  # and the initial state
    # the judge maps the run's trace to model states: the setup's and every step's
    assert len(judged) == 1 and len(judged[0]) > run.new_states


def test_the_judge_reports_the_model_states_a_trace_reached() -> None:
    """A model run exported as a trace: after each of its steps the judge holds the state the
    model's run reached there (in the trace's numbering) among its possible states."""
    cfg = named("kip320", brokers=2)
    steer = Steering(cfg, 1)
    s, steps = initial(cfg), []
    for _ in range(10):
        step, s = steer.choose(s)  # type: ignore[misc]
        steps.append(step)
    seen: list[list] = []
    verdict = judge(events_from_steps(cfg, steps), "kip320", on_states=seen.append)
    assert verdict["conforms"]
    assert len(seen) >= len(steps) and all(seen)
    last = {h.state for h in seen[-1]}
    # (broker epochs are the trace's zxids, counted from the trace's own prologue)
    assert any([b.replicas for b in x.brokers] == [b.replicas for b in s.brokers]
               and x.zk.partitions == s.zk.partitions for x in last)
