"""The state-space breakdown benchmark counts what the checker reaches and prints each part's share."""

from __future__ import annotations

import pytest

from bench.bench_state_space import breakdown, main, reach
from model.checker import check
from model.three_brokers import three_brokers


def test_the_breakdown_projects_the_states_the_checker_reaches() -> None:
    cfg = three_brokers("kip320")
    states = reach(cfg, 10)
    assert len(states) == len(set(states)) == 9_694  # pinned: three-broker kip320 within 10 steps
    assert check(cfg, max_depth=10, reduction=True).states == len(states)
    rows = dict(breakdown(cfg, states))
    # forgetting more can only merge more
    assert rows["core (all of the above)"] <= rows["messages"] <= rows["fetch messages"] < len(states)
    assert rows["messages"] <= rows["LeaderAndISR requests"] <= len(states)
    assert rows["core (all of the above)"] <= min(rows["ghost"], rows["follower LEOs"])


def test_the_benchmark_prints_a_merge_factor_per_part(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--depth", "6"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("kip320: truncation=kip320 brokers=3") and out[0].endswith("within 6 steps")
    assert out[2].split() == ["nothing", "255", "x1.00"]
    assert [line.rsplit(None, 2)[0].strip() for line in out[3:]] == [
        "fetch messages", "LeaderAndISR requests", "messages", "ghost", "follower LEOs", "core (all of the above)"]


def test_an_unknown_configuration_is_one_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--config", "nope"])
    assert exc.value.code == 2
    assert "unknown configuration 'nope'" in capsys.readouterr().err
