"""``bench/mutation_generated.py``'s choice of cases and mutants: a mutant runs only the cases
whose clean run reached its function, the quickest first; a sample spreads over the modules and
is the same for the same seed; the score counts every mutant given."""

from __future__ import annotations

import pytest

from bench import mutation_generated as mg

FENCING = "impl.node.fencing.x_control_refusal__mutmut_3"
STALE = "impl.node.broker.control.x\u01c1ControlRequests\u01c1_refuse_if_stale__mutmut_19"


def test_a_mutant_belongs_to_the_function_the_trampoline_names() -> None:
    assert mg.function_of(FENCING) == "impl.node.fencing.x_control_refusal"
    assert mg.function_of(STALE) == "impl.node.broker.control.x\u01c1ControlRequests\u01c1_refuse_if_stale"
    assert mg.module_of(STALE) == "impl.node.broker.control"


def test_only_the_cases_that_reach_the_function_run_quickest_first() -> None:
    reach = {"kip320#1": {"impl.node.fencing.x_control_refusal"},
             "kip320#2": {"impl.node.fencing.x_control_refusal", "impl.node.replica.x_may_join_isr"},
             "zombie#1": {"impl.node.fencing.x_control_refusal"},
             "zombie#2": {"impl.node.replica.x_may_join_isr"}}
    seconds = {"kip320#1": 14.0, "kip320#2": 9.5, "zombie#1": 14.0, "zombie#2": 30.0}
    assert mg.cases_reaching(FENCING, reach, seconds) == ["kip320#2", "kip320#1", "zombie#1"]
    assert mg.cases_reaching("impl.node.replica.x_may_join_isr__mutmut_1", reach, seconds) == ["kip320#2", "zombie#2"]
    assert mg.cases_reaching(STALE, reach, seconds) == []


def test_a_sample_takes_the_modules_in_turn() -> None:
    mutants = [f"impl.node.a.x_f__mutmut_{i}" for i in range(1, 11)] + ["impl.node.b.x_g__mutmut_1",
                                                                        "impl.node.c.x_h__mutmut_1"]
    picked = mg.sample(mutants, 4, seed=1)
    assert [mg.module_of(m) for m in picked] == ["impl.node.a", "impl.node.b", "impl.node.c", "impl.node.a"]
    assert len(set(picked)) == 4
    assert mg.sample(mutants, 4, seed=1) == picked
    assert mg.sample(mutants, 4, seed=2) != picked
    assert mg.sample(mutants, None, seed=1) == mutants
    assert sorted(mg.sample(mutants, 99, seed=1)) == sorted(mutants)


def test_the_score_counts_every_mutant_given() -> None:
    results = [{"status": "killed"}] * 3 + [{"status": "survived"}, {"status": "not_reached"}]
    assert mg.score(results) == {"mutants": 5, "killed": 3, "survived": 1, "not_reached": 1, "score": 60.0}
    assert mg.score([])["score"] == 0.0


def test_the_decision_functions_mutants_are_selected_by_mutmuts_names() -> None:
    names = [FENCING, "impl.node.fencing.x_controller_term__mutmut_1", STALE]
    patterns = ["impl.node.fencing.x_control_refusal__mutmut_*",
                "impl.node.broker.control.x\u01c1ControlRequests\u01c1_refuse_if_stale__mutmut_*"]
    assert mg.selected_mutants(names, patterns) == sorted([FENCING, STALE])


def test_the_cases_take_the_targets_own_pairs_first_and_nothing_twice() -> None:
    along = {("a", "1"): {("a", "1"), ("b", "1"), ("c", "1")},
             ("z", "1"): {("a", "1"), ("z", "1")},
             ("b", "1"): {("b", "1")},
             ("y", "1"): {("y", "1"), ("z", "1"), ("a", "1")}}
    order = list(along)
    focus = frozenset({("z", "1"), ("y", "1")})
    assert mg.greedy_cover(order, along, focus, 2) == [("y", "1"), ("a", "1")]
    assert mg.greedy_cover(order, along, frozenset(), 9) == [("a", "1"), ("y", "1")]
    assert mg.greedy_cover(order, along, focus, 1) == [("y", "1")]


def test_a_later_targets_cases_take_what_the_earlier_targets_cases_do_not() -> None:
    along = {("a", "1"): {("a", "1"), ("b", "1"), ("c", "1")},
             ("b", "1"): {("b", "1"), ("d", "1")},
             ("u", "1"): {("a", "1"), ("u", "1")}}
    order = list(along)
    taken = {("a", "1"), ("b", "1"), ("c", "1")}
    assert mg.greedy_cover(order, along, frozenset({("u", "1")}), 9, taken) == [("u", "1"), ("b", "1")]
    assert mg.greedy_cover(order, along, frozenset(), 9, taken | {("d", "1"), ("u", "1")}) == []
    assert mg.greedy_cover(order, along, frozenset(), 9) == [("a", "1"), ("b", "1"), ("u", "1")]


def test_a_mutant_is_killed_by_the_first_case_that_does_not_follow_or_never_reports() -> None:
    impl_line = {"impl": "/tmp/x/generated/mutants/impl/__init__.py"}
    followed = {"case": "kip320#1", "verdict": "followed", "seconds": 9.0}
    diverged = {"case": "zombie#4", "verdict": "diverged", "divergence": {"step": 3}, "seconds": 7.0}
    assert mg.first_failure([impl_line, followed], ["kip320#1"]) is None
    assert mg.first_failure([impl_line, followed, diverged], ["kip320#1", "zombie#4"]) == {
        "case": "zombie#4", "verdict": "diverged", "divergence": {"step": 3}}
    assert mg.first_failure([impl_line, {"case": None, "verdict": "timeout"}], ["kip320#1"]) == {"verdict": "timeout"}
    assert mg.first_failure([], ["kip320#1"]) == {"case": "kip320#1", "verdict": "no report"}
    assert mg.first_failure([impl_line, followed], ["kip320#1", "zombie#4"]) == {
        "case": "zombie#4", "verdict": "no report"}


@pytest.mark.integration
def test_bad_arguments_are_one_line_and_exit_2_before_any_mutant_runs() -> None:
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "bench" / "mutation.py"
    for args, said in [(["--suite", "generated", "--configs", "nosuch"], "unknown target 'nosuch'"),
                       (["--suite", "generated", "--sample", "0"], "--cases and --sample must be positive"),
                       (["--python", "/nonexistent/python"], "cannot run --python /nonexistent/python")]:
        proc = subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and proc.stderr.startswith(f"mutation: {said}"), (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


def test_every_chosen_case_takes_a_pair_no_earlier_case_of_the_run_takes() -> None:
    from impl.harness.drive.generate import pairs_along
    from model.config import named

    cases = mg.select_cases(["kip320", "unclean"], 3, 3_000)
    taken: set[tuple[str, str]] = set()
    for c in cases:
        along = pairs_along(named(c["config"], brokers=c["brokers"], **c["knobs"]), c["steps"])
        assert along - taken, c["id"]
        taken |= along
    assert [c["id"] for c in cases][:2] == ["kip320#1", "kip320#2"]
    assert ("elect_leader", "unclean") in {tuple(c["pair"]) for c in cases if c["target"] == "unclean"}
