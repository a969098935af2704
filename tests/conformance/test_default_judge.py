"""The conformance job's default judge (``conformance.judge.diagnose.judge``) judges runs of
events in C wherever there is a C compiler, and the Python judge, memo and all, only where
there is none: a library that fails to build is an error, never a quiet fallback."""

from __future__ import annotations

from typing import Any

import pytest

import conformance.judge.compiled_batch as compiled_batch
import conformance.judge.replay as replay
from bench.bench_conformance import fresh_shape
from conformance.judge.diagnose import judge
from conformance.spark.order import causal_order, split_groups
from properties.checkers.native import NativeUnavailable, NoCompiler
from traces.synthetic import generate_run


@pytest.fixture(scope="module")
def groups() -> list[list[dict[str, Any]]]:
    try:
        compiled_batch._entry()
    except NoCompiler as e:
        pytest.skip(f"no C compiler: the default judge is the Python one ({e})")
    out = []
    for i in range(3):
        ordered, _ = causal_order(generate_run(f"bench-{i:07d}", **fresh_shape(i)))
        out += split_groups(ordered).values()
    return out


def _c_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the runs of events handed to the C from now on."""
    calls: list[int] = []
    run = compiled_batch.CompiledSearch.run

    def counted(self: compiled_batch.CompiledSearch, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return run(self, *args, **kwargs)

    monkeypatch.setattr(compiled_batch.CompiledSearch, "run", counted)
    return calls


def test_the_default_judge_judges_runs_of_events_in_c(groups, monkeypatch) -> None:
    calls = _c_runs(monkeypatch)
    for group in groups:
        assert judge(group) == judge(group, compiled=False), group[0]["run"]
    assert len(calls) >= len(groups)


def test_without_a_c_compiler_the_default_judge_is_the_python_one_with_its_memo(groups, monkeypatch) -> None:
    monkeypatch.setattr(compiled_batch, "_unbuilt", lambda: NoCompiler("no cc here"))
    calls = _c_runs(monkeypatch)
    replay.Memo.forget_all()
    misses = replay.MEMO_STATS["misses"]
    for group in groups:
        assert judge(group) == judge(group, compiled=False), group[0]["run"]
    assert not calls
    assert replay.MEMO_STATS["misses"] > misses, "the Python judge's memo was not asked"


def test_a_library_that_fails_to_build_is_an_error_not_the_python_judge(groups, monkeypatch) -> None:
    monkeypatch.setattr(compiled_batch, "_unbuilt", lambda: NativeUnavailable("judge.c: error: expected ';'"))
    with pytest.raises(NativeUnavailable, match="expected ';'"):
        judge(groups[0])


def test_a_packaged_job_without_the_c_sources_judges_in_python(groups, monkeypatch, tmp_path) -> None:
    """``epochal package-job`` ships Python modules in a zip: no C sources to build there."""
    zipped = tmp_path / "epochal-job.zip" / "properties" / "checkers" / "native"
    monkeypatch.setattr(compiled_batch, "SOURCE_DIR", zipped)
    monkeypatch.setattr(compiled_batch, "_unbuilt", compiled_batch._unbuilt.__wrapped__)
    calls = _c_runs(monkeypatch)
    assert judge(groups[0]) == judge(groups[0], compiled=False)
    assert not calls
