"""The state-space breakdown benchmark counts what the checker reaches and prints each part's share."""

from __future__ import annotations

import pytest

from bench.bench_state_space import breakdown, main, most_requests_to_one_broker, reach
from model.state import LeaderAndIsr, initial
from model.three_brokers import three_brokers
from properties.checkers.bfs import SearchOptions, check
from tests.pinned import pinned


@pytest.mark.slow  # the default suite keeps to about six minutes
def test_the_breakdown_projects_the_states_the_checker_reaches() -> None:
    cfg = three_brokers("kip320")
    states = reach(cfg, 10)
    assert len(states) == len(set(states)) == pinned("kip320", "three brokers, reduced, within 10 steps", "states")
    assert check(cfg, SearchOptions(max_depth=10, reduction=True)).states == len(states)
    rows = dict(breakdown(cfg, states))
    # forgetting more can only merge more
    assert rows["core (all of the above)"] <= rows["messages"] <= rows["fetch messages"] < len(states)
    assert rows["messages"] <= rows["LeaderAndISR requests"] <= len(states)
    assert rows["core (all of the above)"] <= min(rows["ghost"], rows["follower LEOs"])


def test_the_benchmark_prints_a_merge_factor_per_part(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--depth", "6"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("kip320: truncation=kip320 brokers=3") and out[0].endswith("within 6 steps")
    assert out[2].split() == ["nothing", f"{pinned('kip320', 'three brokers, reduced, within 6 steps', 'states'):,}", "x1.00"]
    assert [line.rsplit(None, 2)[0].strip() for line in out[3:-1]] == [
        "fetch messages", "LeaderAndISR requests", "messages", "ghost", "follower LEOs", "core (all of the above)"]
    assert out[-1] == f"most LeaderAndISR requests in flight to one broker: {most_requests_to_one_broker(reach(three_brokers('kip320'), 6))}"


def test_the_crash_bound_can_be_lowered_and_a_bad_one_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--depth", "30", "--max-crashes", "0"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "max_crashes=0" in out[0]
    whole = pinned("kip320", "three brokers, no crashes, reduced", "states")  # no crash: the whole space, 22 steps deep
    assert out[2].split() == ["nothing", f"{whole:,}", "x1.00"]
    with pytest.raises(SystemExit) as exit_:
        main(["--max-crashes", "-1"])
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith("must be >= 0")


def test_the_most_requests_to_one_broker_counts_by_addressee() -> None:
    s = initial(three_brokers("kip320"))
    m = LeaderAndIsr(1, 0, 0, 2, (0, 1), 1, 1, 1)
    requests = (m, m._replace(zk_version=2), m._replace(to=2))
    assert most_requests_to_one_broker([s, s._replace(leader_and_isr=requests)]) == 2
    assert most_requests_to_one_broker([s]) == 0


def test_an_unknown_configuration_is_one_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--config", "nope"])
    assert exc.value.code == 2
    assert "unknown configuration 'nope'" in capsys.readouterr().err
