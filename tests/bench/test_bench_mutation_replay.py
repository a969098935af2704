"""``bench/mutation_replay.py``: a mutant that answers every call the clean run recorded as the
original did is not driven; one that answers a call differently is driven through the cases
where it does; a function with a call that could not be recorded drives its mutants everywhere."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import pytest

from bench import mutation_generated as mg
from bench import mutation_replay as mr

# a module laid out as mutmut lays out a mutated one: the mutants of f in a dict beside it
FAKE = '''
def x_f__mutmut_orig(a, b):
    return a if a >= b else b

def x_f__mutmut_1(a, b):
    return a if a > b else b   # the same answer on every input

def x_f__mutmut_2(a, b):
    return a if a <= b else b  # the smaller

def x_f__mutmut_3(a, b):
    while True:
        pass

mutants_x_f__mutmut = {"x_f__mutmut_1": x_f__mutmut_1, "x_f__mutmut_2": x_f__mutmut_2,
                       "x_f__mutmut_3": x_f__mutmut_3}
'''


def _record(trace: Path, pid: int, *records: tuple[str, object, object]) -> None:
    with open(f"{trace}.calls.{pid}", "ab") as f:
        for function, call, answer in records:
            f.write(pickle.dumps((function, call, answer)))


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "fake_decisions.py").write_text(FAKE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    sys.modules.pop("fake_decisions", None)


def test_a_mutant_is_driven_only_through_the_cases_whose_calls_it_answers_differently(fake: Path) -> None:
    f = "fake_decisions.x_f"
    equal, apart = pickle.dumps(((2, 2), {})), pickle.dumps(((1, 3), {}))
    _record(fake / "a.txt", 10, (f, equal, ("return", 2)))
    _record(fake / "b.txt", 11, (f, equal, ("return", 2)))
    _record(fake / "b.txt", 12, (f, apart, ("return", 3)))
    got = mr.replay([f"{f}__mutmut_1", f"{f}__mutmut_2"], {"a": fake / "a.txt", "b": fake / "b.txt"})
    assert got[f"{f}__mutmut_1"] == {"recorded": True, "differs": [], "calls": 3}
    assert got[f"{f}__mutmut_2"] == {"recorded": True, "differs": ["b"], "calls": 3}


def test_a_mutant_that_never_answers_differs_and_one_unrecorded_call_drives_every_case(fake: Path) -> None:
    f = "fake_decisions.x_f"
    _record(fake / "a.txt", 10, (f, pickle.dumps(((2, 2), {})), ("return", 2)))
    assert mr.answer_of(mr.mutant_callable(f"{f}__mutmut_3"), pickle.dumps(((2, 2), {})), 0.2) == ("raise", "Timeout")
    _record(fake / "b.txt", 11, (f, None, None))
    got = mr.replay([f"{f}__mutmut_1"], {"a": fake / "a.txt", "b": fake / "b.txt"})
    assert got[f"{f}__mutmut_1"] == {"recorded": False}


def test_an_exception_is_an_answer_compared_by_its_type() -> None:
    assert mr.answer_of(int, pickle.dumps((("x",), {}))) == ("raise", "ValueError")
    assert mr.same(("raise", "ValueError"), ("raise", "ValueError"))
    assert not mr.same(("return", 0), ("raise", "ValueError"))
    assert not mr.same(("return", [1]), ("return", [2]))


def test_the_decision_codes_score_leaves_out_the_rules_the_model_does_not_state() -> None:
    results = [{"name": "impl.node.fencing.x_fetch_refusal__mutmut_1", "status": "killed"},
               {"name": "impl.node.replica.x_may_join_isr__mutmut_2", "status": "survived"},
               {"name": "impl.node.auth.rules.x_authorize__mutmut_10", "status": "survived"},
               {"name": "impl.node.quota.x\u01c1TokenBucket\u01c1refill__mutmut_1", "status": "survived"}]
    assert mg.decision_score(results)["score"] == 50.0
    assert mg.score(results)["score"] == 25.0


def test_a_driven_tests_path_is_a_case_with_its_config_and_brokers() -> None:
    case = mg.path_case(Path(mg.__file__).parent / "mutation_paths" / "delayed_control.json")
    assert (case["id"], case["config"], case["brokers"], case["knobs"]) == (
        "path:delayed_control", "kip320", 3, {"max_crashes": 2})
    assert [s.action for s in case["steps"]][-1] == "reject_leader_and_isr"


def test_only_the_limits_validation_is_outside_the_model_not_the_fetch_cut() -> None:
    assert mg.outside_model("impl.node.limits.x_check__mutmut_6")
    assert mg.outside_model("impl.node.limits.x_within__mutmut_6") is None
    assert mg.outside_model("impl.node.producer_state.x\u01c1ProducerStateTable\u01c1record__mutmut_9")


@pytest.mark.integration
def test_a_path_that_cannot_be_read_is_one_line_and_exit_2(tmp_path: Path) -> None:
    import subprocess

    script = Path(mg.__file__).parent / "mutation.py"
    run = subprocess.run([sys.executable, str(script), "--suite", "generated", "--paths", str(tmp_path / "none.json")],
                         capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stderr.startswith("mutation: cannot read") and run.stderr.count("\n") == 1
