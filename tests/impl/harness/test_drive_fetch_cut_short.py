"""A follower catching up with answers of one record each while the leader's HW is ahead,
on real brokers (``fetch_max_records`` 1: the driver sets the brokers' per-partition fetch
limit to one record).  Leader 0 takes two records while follower 1, silent, is out of the
ISR; the HW reaches 2; follower 1 then fetches from offset 0 and is answered ``v1`` with
the HW 2.  The follower's cap (``replication_follower``: ``min(leader hw, leo)``) keeps its
HW at its LEO; with the cap taken out of a copy of the source the run diverges there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from impl_testing import drive_mutant

from impl.harness.drive import Driver, from_json

A, B = 0, 1
FETCH = [{"action": "send_fetch", "args": [B, 0]}, {"action": "handle_fetch", "args": "request"},
         {"action": "receive_fetch", "args": "response"}]
STEPS = [{"action": "produce", "args": [A, 0]}, {"action": "shrink_isr", "args": [A, 0, B]},
         {"action": "produce", "args": [A, 0]}, *FETCH, *FETCH, *FETCH[:2], {"action": "expand_isr", "args": [A, 0, B]}]
CUT_SHORT = 6  # the first receive_fetch: v1 with the HW 2, the follower's LEO 1
CAP = '        new_hw = min(int(resp["hw"]), r.leo)\n'


def _path(tmp_path: Path) -> Path:
    """The story as a path: each fetch message as the model sends it (``_messages``)."""
    from model.actions import Step
    from model.config import named
    from model.registry import apply
    from model.state import FETCH_REQUEST, FETCH_RESPONSE, initial

    cfg = named("kip320", brokers=2, max_crashes=0, fetch_max_records=1)
    s, steps = initial(cfg), []
    for d in STEPS:
        if isinstance(d["args"], str):
            kind = FETCH_REQUEST if d["args"] == "request" else FETCH_RESPONSE
            m = next(m for m in s.fetches if m.kind == kind and m.follower == B)
            d = {"action": d["action"], "args": [{**m._asdict(), "records": [r._asdict() for r in m.records]}]}
            args: tuple = (m,)
        else:
            args = tuple(d["args"])
        s = apply(s, cfg, Step(d["action"], args))
        assert s is not None, d
        steps.append(d)
    path = tmp_path / "cut_short.json"
    path.write_text(json.dumps({"config": {"name": "kip320", "brokers": 2, "max_crashes": 0, "fetch_max_records": 1},
                                "steps": steps}))
    return path


@pytest.mark.integration
def test_a_follower_caught_up_one_record_at_a_time_keeps_its_hw_at_its_leo(tmp_path: Path) -> None:
    report = Driver("kip320", data_dir=tmp_path / "run").run(from_json(_path(tmp_path)))
    assert report.verdict == "followed", report.divergence
    assert [s.action for s in report.steps] == [d["action"] for d in STEPS]


@pytest.mark.integration
@pytest.mark.slow
def test_a_follower_that_takes_the_leaders_hw_uncapped_diverges_at_the_answer_cut_short(tmp_path: Path) -> None:
    code, report = drive_mutant(tmp_path, "impl/node/broker/replication_follower.py", CAP,
                                CAP.replace('min(int(resp["hw"]), r.leo)', 'int(resp["hw"])'),
                                "--config", "kip320", "--path", str(_path(tmp_path)))
    assert code == 1 and report["outcome"] == "diverged", report
    assert report["divergence"]["step"] == CUT_SHORT and report["divergence"]["action"] == "receive_fetch"
