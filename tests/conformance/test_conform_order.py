"""Causal ordering (SCHEMA.md §4) and the per-partition split with cluster-event fan-out (§8)."""

from __future__ import annotations

import random

from conformance.spark.order import causal_order, source_disorder, split_groups
from conformance.spark.verdict import judge_run
from traces.synthetic import generate_run


def ev(node, seq, clock, kind="produce", zxid=None, topic="t", partition=0, line=None):
    scope_cluster = kind in ("controller_elect", "broker_crash", "broker_restart")
    return {"node": node, "seq": seq, "clock": clock, "zxid": zxid, "kind": kind,
            "topic": None if scope_cluster else topic, "partition": None if scope_cluster else partition,
            "params": {}, "post": {}, "_file": f"{node}.jsonl", "_line": line if line is not None else seq + 1}


def names(events):
    return [(e["node"], e["seq"]) for e in events]


def test_shuffled_files_come_back_in_the_order_they_happened():
    run = generate_run("r", partitions=2, kill_leader=True)
    shuffled = run[:]
    random.Random(7).shuffle(shuffled)
    ordered, forced = causal_order(shuffled)
    assert names(ordered) == names(sorted(run, key=lambda e: (e["clock"], e["node"], e["seq"])))
    assert not forced


def test_program_order_beats_a_smaller_clock():
    a0, a1 = ev(1, 0, 5), ev(1, 1, 3)  # a node whose clock went back: seq still decides
    b0 = ev(2, 0, 4)
    ordered, forced = causal_order([a1, b0, a0])
    assert names(ordered) == [(2, 0), (1, 0), (1, 1)] and not forced


def test_zxid_order_beats_the_lamport_clock_for_zookeeper_writes():
    # two controllers with unrelated clocks: ZooKeeper's order of their writes decides
    old = ev(1, 0, 9, "elect_leader", zxid=10)
    new = ev(2, 0, 2, "elect_leader", zxid=11)
    ordered, _ = causal_order([new, old])
    assert names(ordered) == [(1, 0), (2, 0)]


def test_when_program_order_and_zxid_order_disagree_zookeeper_wins_and_it_is_counted():
    # seen in impl: node 2, controller and leader at once, recorded its controller's write
    # (zxid 369) before its leader thread's earlier ISR write (zxid 368)
    elect = ev(2, 25, 142, "elect_leader", zxid=369)
    between = ev(2, 26, 143)
    expand = ev(2, 27, 145, "expand_isr", zxid=368)
    ordered, forced = causal_order([elect, between, expand])
    assert names(ordered) == [(2, 27), (2, 25), (2, 26)]
    assert forced == {id(expand)}


def test_out_of_order_counts_events_written_after_a_higher_seq():
    e = [ev(1, 0, 1, line=1), ev(1, 2, 3, line=2), ev(1, 1, 2, line=3), ev(2, 0, 1, line=1)]
    assert source_disorder(e) == {id(e[2])}


def test_cluster_events_go_to_every_partition_of_their_run():
    events = [ev(1, 0, 1, "controller_elect", zxid=1), ev(1, 1, 2, partition=0),
              ev(2, 0, 3, partition=1), ev(-1, 0, 4, "broker_crash"), ev(2, 1, 5, topic="u", partition=0)]
    groups = split_groups(causal_order(events)[0])
    assert list(groups) == [("t", 0), ("t", 1), ("u", 0)]
    for g in groups.values():
        assert [e["kind"] for e in g if e["partition"] is None] == ["controller_elect", "broker_crash"]
    assert [e["node"] for e in groups[("t", 1)]] == [1, 2, -1]


def test_a_run_with_only_cluster_events_is_one_group():
    groups = split_groups([ev(1, 0, 1, "controller_elect", zxid=1)])
    assert list(groups) == [(None, None)]


def test_a_verdict_names_the_first_bad_event_its_source_and_the_events_before_it():
    run = generate_run("r", partitions=1)
    bad = next(i for i, e in enumerate(run) if e["kind"] == "produce")
    run[bad]["_file"], run[bad]["_line"] = "x.jsonl", 42

    def judge(events, config):
        i = next(i for i, e in enumerate(events) if e["kind"] == "produce")
        return {"conforms": False, "matched": i, "total": len(events), "first_bad": i,
                "reason": "no", "property": "P", "possible_states": ["s1"], "bound": 2}

    [v] = judge_run("r", run, judge, "kip320")
    assert (v["status"], v["matched"], v["first_bad_file"], v["first_bad_line"]) == ("violates", bad, "x.jsonl", 42)
    assert len(v["before"]) == 5 and v["property"] == "P" and v["possible_states"] == ["s1"] and v["bound"] == 2


def test_a_judge_that_raises_gives_an_error_verdict():
    def judge(events, config):
        raise ValueError("boom")

    [v] = judge_run("r", generate_run("r", partitions=1), judge, "kip320")
    assert v["status"] == "error" and "boom" in v["reason"] and v["conforms"] is False


def test_zxid_order_does_not_relate_writes_to_two_partitions():
    """Chaos seed 6: broker 2 wrote ISR changes of partition 1 (zxid 218, clock 8) after
    broker 0 wrote partition 0's (zxid 219, clock 4); broker 0 then answered a fetch (clock 6)
    that broker 1 received (clock 8).  Chaining every zxid made partition 0's write wait for
    the unrelated one of partition 1, so the receipt of the answer came before the answer."""
    other = ev(2, 0, 8, kind="shrink_isr", zxid=218, partition=1)
    write = ev(0, 0, 4, kind="shrink_isr", zxid=219, partition=0)
    answer = ev(0, 1, 6, kind="handle_fetch", partition=0)
    receipt = ev(1, 0, 8, kind="receive_fetch", partition=0)
    ordered, forced = causal_order([other, write, answer, receipt])
    assert names(ordered).index((0, 1)) < names(ordered).index((1, 0)) and not forced
    # a cluster-level write still orders both partitions' writes around it
    elect = ev(3, 0, 9, kind="controller_elect", zxid=217)
    ordered, _ = causal_order([other, write, answer, receipt, elect])
    assert names(ordered).index((3, 0)) < names(ordered).index((0, 0))


def test_a_leader_and_isr_receipt_waits_for_the_write_of_its_state():
    """Chaos seed 1 (60 s): the controller elected broker 2 (zxid 121, clock 11) in reaction
    to its registration (zxid 120, clock 27 -- no clock passes through ZooKeeper); broker 1
    applied the election (clock 14).  The write waits for the registration in the zxid
    chain, so the receipt must wait for the write."""
    restart = ev(2, 0, 27, kind="broker_restart", zxid=120)
    elect = ev(0, 0, 11, kind="elect_leader", zxid=121)
    elect["params"] = {"zk_version": 10}
    receipt = ev(1, 0, 14, kind="become_follower")
    receipt["params"] = {"zk_version": 10}
    stale = ev(1, 1, 15, kind="become_follower")
    stale["params"] = {"zk_version": 99}  # no write of that version in the trace: no edge
    ordered, forced = causal_order([receipt, stale, elect, restart])
    assert names(ordered) == [(2, 0), (0, 0), (1, 0), (1, 1)] and not forced


def test_a_failed_isr_update_comes_after_the_write_that_moved_the_znode():
    """Chaos seed 1 (60 s, in CI): leader 2's conditional ISR write failed because the
    controller had just written the partition's state (zxid 254, clock 68360) on a broker's
    death; the failure carries that write's mzxid but the lower clock 68352.  Taken first,
    it met a znode still at the version the leader expected, and the run did not conform."""
    shrink = ev(2, 0, 68341, kind="shrink_isr", zxid=250)
    failed = ev(2, 1, 68352, kind="isr_update_failed", zxid=254)
    elect = ev(0, 0, 68360, kind="elect_leader", zxid=254)
    after = ev(2, 2, 68370)
    ordered, forced = causal_order([failed, after, elect, shrink])
    assert names(ordered) == [(2, 0), (0, 0), (2, 1), (2, 2)] and not forced
    # two writes at one zxid (a multi) keep the clock order between them
    other = ev(1, 0, 68350, kind="elect_leader", zxid=254)
    ordered, _ = causal_order([failed, elect, shrink, other])
    assert names(ordered) == [(2, 0), (1, 0), (0, 0), (2, 1)]


def _restarted_follower_run(epochs: bool) -> list[dict]:
    """Drive campaign guided-1, run 10 (docs/journal/drive-findings.md): follower 1 (registered at zxid 2)
    fetches, crashes with the fetch in flight, leader 0 answers it, follower 1 registers
    again (zxid 7) and fetches at the same offset, and the leader answers that too -- and a
    second restart (zxid 12) follows.  The new incarnation has not heard from the leader, so
    its events carry smaller clocks than the leader's answer to the old request.  With
    ``epochs`` each answer names the incarnation that asked (``follower_broker_epoch``)."""
    reg = ev(1, 0, 1, "broker_restart", zxid=2)
    sent = ev(1, 1, 3, "send_fetch")
    crash = ev(-1, 0, 4, "broker_crash", zxid=6)
    restart = ev(1, 2, 5, "broker_restart", zxid=7)
    resent = ev(1, 3, 6, "send_fetch")
    old_answer = ev(0, 0, 8, "handle_fetch")
    new_answer = ev(0, 1, 9, "handle_fetch")
    crash2 = ev(-1, 1, 11, "broker_crash", zxid=11)
    restart2 = ev(1, 4, 12, "broker_restart", zxid=12)
    for e in (reg, restart, restart2):
        e["params"] = {"broker": 1, "broker_epoch": e["zxid"]}
    crash["params"] = crash2["params"] = {"broker": 1}
    for answer, incarnation in ((old_answer, 2), (new_answer, 7)):
        answer["params"] = {"follower": 1, "fetch_offset": 0, "leader_epoch": 1}
        if epochs:
            answer["params"]["follower_broker_epoch"] = incarnation
    return [new_answer, restart2, resent, old_answer, crash, reg, crash2, restart, sent]


def test_the_answer_to_a_previous_incarnations_fetch_comes_before_the_followers_restart():
    """The model's broker_restart drops the previous incarnation's fetches, so the leader's
    answer to one goes before the restart, whatever the clocks say; the answer to the new
    incarnation's fetch is tied to no restart before it (only to the next one)."""
    ordered, forced = causal_order(_restarted_follower_run(epochs=True))
    assert names(ordered) == [(1, 0), (1, 1), (-1, 0), (0, 0), (1, 2), (1, 3), (0, 1), (-1, 1), (1, 4)]
    assert not forced


def test_answers_that_do_not_name_the_incarnation_keep_the_clock_order():
    """Without ``follower_broker_epoch`` (an older writer) nothing ties the answer to an
    incarnation: the Lamport order stands, the new incarnation's fetch before the answer."""
    ordered, forced = causal_order(_restarted_follower_run(epochs=False))
    assert names(ordered) == [(1, 0), (1, 1), (-1, 0), (1, 2), (1, 3), (0, 0), (0, 1), (-1, 1), (1, 4)]
    assert not forced


def _previous_incarnation_answered_run() -> list[dict]:
    """The same shape from the model (``events_from_steps``), so the judge can replay it: a
    record for the follower to fetch, its fetch, its crash, the leader's answer, its
    restart, the fetch and the answer again; then the clocks of the run-10 recording (the
    new incarnation's events below the leader's first answer)."""
    from conformance.judge.export import events_from_steps
    from model.config import named
    from model.registry import successors
    from model.state import initial

    cfg = named("kip320", brokers=2, max_crashes=1)
    s, steps = initial(cfg), []
    for action, args in [("produce", (0, 0)), ("send_fetch", (1, 0)), ("broker_crash", (1,)),
                         ("handle_fetch", None), ("broker_restart", (1,)), ("truncate", (1, 0)),
                         ("send_fetch", (1, 0)), ("handle_fetch", None)]:
        step, s = next((st, t) for st, t in successors(s, cfg) if st.action == action
                       and (st.args == args if args is not None else st.args[0].follower == 1))
        steps.append(step)
    events = events_from_steps(cfg, steps, run="r")
    by_name = {(e["node"], e["seq"]): e for e in events}
    registrations = [e for e in events if e["kind"] == "broker_restart" and e["node"] == 1]
    for e in registrations:
        e["params"]["broker_epoch"] = e["zxid"]
    answers = [e for e in events if e["kind"] == "handle_fetch"]
    for answer, registration in zip(answers, registrations, strict=True):
        answer["params"]["follower_broker_epoch"] = registration["zxid"]
    restart, fetch_again, answer = registrations[1], by_name[(1, registrations[1]["seq"] + 2)], answers[0]
    assert fetch_again["kind"] == "send_fetch"
    # restart, truncate, send_fetch of the new incarnation, then the leader's two answers
    clock = restart["clock"] - 1
    for e in (restart, by_name[(1, restart["seq"] + 1)], fetch_again, answer, answers[1]):
        clock += 1
        e["clock"] = clock
    return events


def test_the_judge_accepts_a_restarted_follower_whose_previous_fetch_was_answered():
    """End to end: ordered by the clocks alone, the judge matched the leader's first answer
    with the new incarnation's request and found no request left for the second ("not
    enabled in any of the possible model states"); with the incarnation named, it conforms."""
    from conformance.judge.replay import judge

    events = _previous_incarnation_answered_run()
    [v] = judge_run("r", events, judge, "kip320")
    assert v["status"] == "conforms", v["reason"]
    for e in events:
        e["params"].pop("follower_broker_epoch", None)
    [v] = judge_run("r", events, judge, "kip320")
    assert v["status"] == "violates" and v["first_bad_kind"] == "handle_fetch"
    assert "not enabled" in v["reason"]
