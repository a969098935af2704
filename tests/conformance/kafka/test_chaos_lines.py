"""The adapter on the lines of real chaos runs (``epochal chaos --engine kafka``, 3.9.2, a
producer writing every 30 ms): where millisecond stamps put a produce before a fetch read
that did not see its record, or a fetch answer before the read that moved the HW it
carries; the values placed by offset; the configuration a chaos run is judged by; and the
``--admin`` schedule.  Each excerpt is a leader's request log lines, as the run wrote them
(at 3.9 after the leader's line naming the topic's id: Fetch v17 names topics by id)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.kafka.adapter import Placed, Trigger, adapt, hw_after_make_leader, steps
from conformance.kafka.ordering import (
    answers_after_appends,
    answers_after_hw,
    appends_first,
    next_fetches,
    reads_after_answers,
)
from conformance.kafka.patterns import Line, parse
from impl.harness.chaos import kafka_run
from impl.harness.chaos.kafka_admin import ADMIN_KINDS
from impl.harness.chaos.kafka_judge import configuration, conformance
from model.config import DRIVABLE, NAMED

EXCERPTS = Path(__file__).parent / "fixtures" / "excerpts"
ADMIN = Path(__file__).parent / "fixtures" / "admin-elections-39"


def _steps(name: str, leader: int = 2) -> list[tuple[int, int, Line]]:
    out: list[tuple[int, int, Line]] = []
    for text in (EXCERPTS / f"{name}.log").read_text().splitlines():
        line = parse(text)
        assert line is not None
        out.extend((leader, len(out), step) for step in steps(line))
    return out


def _what(step: Line) -> tuple[str, bool, int]:
    req = step.fields["request"]
    api = req["requestHeader"]["requestApiKeyName"]
    if api == "PRODUCE":
        return api, False, req["response"]["responses"][0]["partitionResponses"][0]["baseOffset"]
    return api, bool(step.fields.get("read")), req["request"]["topics"][0]["partitions"][0]["fetchOffset"]


def _order(placed: list[tuple[int, int, Line]]) -> list[tuple[str, bool, int]]:
    return [_what(line) for _, _, line in sorted(placed, key=lambda x: (x[2].ts, x[1])) if line.name == "request"]


def test_a_produce_goes_after_the_long_poll_read_that_waited_for_its_record(tmp_path: Path) -> None:
    """Follower 3's fetch at offset 3 waited 2.4 ms in purgatory (nothing to answer as it was
    read) and was answered with record 3; the produce of record 3 starts by its durations
    0.1 ms before the read's end: it goes after the read, which moved the HW to 3."""
    raw = _steps("chaos-delayed-fetch")
    assert _order(raw)[0] == ("PRODUCE", False, 3)
    assert _order(appends_first(raw, tmp_path)) == [("FETCH", True, 3), ("PRODUCE", False, 3), ("FETCH", False, 3)]


def test_a_produce_goes_after_a_read_its_record_was_not_in(tmp_path: Path) -> None:
    """Follower 1 catching up fetched at 292 and next at 294: the first answer (at once, no
    wait) carried 292 and 293 only, so record 294's append -- its produce placed at its
    start, 1.2 ms before that read -- came after the read."""
    raw = _steps("chaos-fetch-read-before-append")
    names = {"R4-k0mFSTqmx1miIupp4Ug": "chaos"}  # the leader's line (Fetch v17 names topics by id)
    upto = next_fetches(((b, line) for b, _, line in raw), names)
    assert sorted(upto.values()) == [294]
    assert _order(raw)[0] == ("PRODUCE", False, 294)
    assert _order(appends_first(raw, tmp_path))[:3] == [("FETCH", True, 292), ("PRODUCE", False, 294),
                                                        ("FETCH", False, 292)]


def test_an_answer_goes_after_the_read_that_moved_the_hw_it_carries() -> None:
    """Follower 1's long poll at 6 was answered with HW 6, rebuilt 0.9 ms before follower 3's
    read at 6 -- the read that moved the HW there (both in the ISR): the answer goes after."""
    raw = _steps("chaos-answer-after-hw")
    moved = sorted(answers_after_hw(raw), key=lambda x: (x[2].ts, x[1]))  # ibp-2.6: Fetch v11 names topics
    clients = [(line.fields["request"]["requestHeader"]["clientId"], bool(line.fields.get("read")))
               for _, _, line in moved]
    assert clients == [("broker-1-fetcher-0", True), ("broker-3-fetcher-0", True),
                       ("broker-1-fetcher-0", False), ("broker-3-fetcher-0", False)]


def test_an_answer_goes_after_the_append_of_the_record_it_carried(tmp_path: Path) -> None:
    """Leader 3 at ibp-2.6 (seed 2): follower 2's read at 7 moved the HW to 7; follower 1's
    answer at 7 carried HW 7 and record 7 (72 bytes; its next fetch began at 8). The produce
    of record 7 goes after the read that did not see it, and the answer, moved after the read
    that moved its HW, lands in the same instant, before the produce: it goes after it."""
    placed = answers_after_hw(appends_first(_steps("chaos-answer-before-append", leader=3), tmp_path))

    def answer_then_produce(steps: list[tuple[int, int, Line]]) -> bool:
        order = _order(steps)
        return order.index(("FETCH", False, 7)) < order.index(("PRODUCE", False, 7))

    assert answer_then_produce(placed), "the order the rules before it leave"
    assert not answer_then_produce(answers_after_appends(placed, tmp_path))


def test_the_read_that_moved_the_hw_goes_before_an_answer_that_cannot_wait_for_it() -> None:
    """Leader 2 at 3.9 (seed 3): follower 3's answer at 13 carried HW 13, which only
    follower 1's read at 13 could have moved -- rebuilt 9 ms later (its line written late),
    after follower 3's own next read at 14, so the answer cannot go after it: the read goes
    right before the answer (follower 1 had its answer at 12 by then)."""
    raw = _steps("chaos-mover-read-logged-late")

    def order(steps: list[tuple[int, int, Line]]) -> list[tuple[str, bool, int]]:
        return [(line.fields["request"]["requestHeader"]["clientId"][7], bool(line.fields.get("read")), _what(line)[2])
                for _, _, line in sorted(steps, key=lambda x: (x[2].ts, x[1]))]

    hw_answer, mover = ("3", False, 13), ("1", True, 13)
    assert order(raw).index(mover) > order(raw).index(("3", True, 14)) > order(raw).index(hw_answer)
    placed = order(answers_after_hw(raw))
    assert placed.index(mover) < placed.index(hw_answer) < placed.index(("3", True, 14))
    assert placed.index(("1", False, 12)) < placed.index(mover)


def test_a_fetch_is_read_after_the_answer_to_the_fetch_before_it() -> None:
    """Follower 3's fetches at 29 and 30 from leader 2 (3.9, seed 3), both answered at once:
    rebuilt from their durations, the read at 30 falls a hair before the answer at 29 --
    before the follower had it. It goes right after that answer."""
    raw = _steps("chaos-next-read-before-answer")

    def times(steps: list[tuple[int, int, Line]]) -> dict[tuple[bool, int], float]:
        return {(bool(line.fields.get("read")), _what(line)[2]): line.ts for _, _, line in steps}

    before, after = times(raw), times(reads_after_answers(raw))
    assert before[(True, 30)] < before[(False, 29)], "the rebuilt order"
    assert after[(False, 29)] < after[(True, 30)] <= after[(False, 30)]
    assert after[(True, 29)] == before[(True, 29)] and after[(False, 29)] == before[(False, 29)]


def test_a_leader_given_an_epoch_of_its_own_moves_its_hw_over_the_offsets_it_kept() -> None:
    """Leader 2 at 3.9 (seed 3, unclean scenario): the controller took paused follower 3 out
    of the ISR with a new epoch for the same leader, and broker 2 logged `starts at leader
    epoch 1 from offset 50 with partition epoch 1, high watermark 49, ISR [2,1]` -- before
    makeLeader's own HW increment over follower 1's offset 50, kept from epoch 0."""
    line = parse("[2026-11-29 03:07:08,276] INFO [data-plane-kafka-request-handler-0] [Broker id=2] Leader chaos-0 "
                 "with topic id Some(mpktlwGjQjO0LPy21UBiPA) starts at leader epoch 1 from offset 50 with partition "
                 "epoch 1, high watermark 49, ISR [2,1], adding replicas [] and removing replicas [] . Previous leader "
                 "Some(2) and previous leader epoch was 0. (state.change.logger)")
    assert line is not None and line.name == "became_leader"
    hw, leo = int(line.fields["hw"]), int(line.fields["leo"])
    assert hw_after_make_leader(hw, leo, [2, 1], 2, {1: 50, 3: 49}) == 50
    assert hw_after_make_leader(hw, leo, [2, 1], 2, {3: 49}) == 49, "follower 1's offset unknown: no move"
    assert hw_after_make_leader(hw, leo, [2], 2, {1: 50}) == 49, "alone in the ISR: under min.insync.replicas"


def test_values_are_placed_by_offset_and_leader_epoch() -> None:
    placed = Placed([{"topic": "chaos", "partition": 0, "offset": 3, "leader_epoch": 1, "value": "s1-3"},
                     {"topic": "chaos", "partition": 0, "offset": 3, "leader_epoch": 4, "value": "s1-90"},
                     {"topic": "chaos", "partition": 0, "offset": 5, "leader_epoch": -1, "value": "s1-5"}])
    assert placed.value("chaos", 0, 3, 1) == "s1-3" and placed.value("chaos", 0, 3, 4) == "s1-90"
    assert placed.value("chaos", 0, 5, 2) == "s1-5"  # the read-back's epoch unknown
    assert placed.value("chaos", 0, 3, 2) == "unseen@3/2"  # two values there, neither of that epoch
    assert placed.value("chaos-admin", 0, 3, 1) == "unseen@3/1"


def test_each_profile_and_unclean_setting_has_its_configuration() -> None:
    assert [configuration(p, u) for p in ("ibp-2.6", "3.9") for u in (False, True)] == [
        "kafka26", "kafka26-unclean", "kafka39", "kafka39-unclean"]
    for name in ("kafka26-unclean", "kafka39-unclean"):
        assert NAMED[name].unclean and name not in DRIVABLE
        assert NAMED[name].startup_from_controller and NAMED[name].offline_replica_writes
    assert NAMED["kafka39-unclean"].alter_partition and not NAMED["kafka26-unclean"].alter_partition


def test_a_run_is_judged_by_its_configuration_and_a_refusal_names_the_event() -> None:
    """The committed 3.9 leader-kill run, judged as a chaos run is: it conforms to kafka39;
    judged as if unclean election had been on it conforms too (unclean adds elections); and
    a judgement the budget cuts short is inconclusive, never a pass."""
    run = Path(__file__).parent / "fixtures" / "leader-kill-39"
    judged = conformance(run, "3.9", False)
    assert judged["config"] == "kafka39" and judged["groups"] == judged["conforming"] >= 1, judged
    assert "problem" not in judged
    from conformance.judge.replay import Budget

    cut = conformance(run, "3.9", False, budget=Budget(states=10))
    assert cut["inconclusive"] >= 1 and "inconclusive" in cut["problem"]


@pytest.mark.parametrize("unclean", [False, True])
def test_the_admin_schedule_has_each_operation_once_between_the_faults(unclean: bool) -> None:
    plain = kafka_run.schedule(3, 16, unclean)
    mixed = kafka_run.schedule(3, 16, unclean, admin=True)
    kinds = [k for _, k in mixed]
    assert sorted(k for k in kinds if k in ADMIN_KINDS) == sorted(ADMIN_KINDS)
    assert [k for k in kinds if k not in ADMIN_KINDS] == [k for _, k in plain]
    assert kinds[1] in ADMIN_KINDS and kinds[0] not in ADMIN_KINDS
    assert mixed == kafka_run.schedule(3, 16, unclean, admin=True)  # the same seed, the same schedule


def test_each_election_takes_its_reason_from_the_controllers_line_before_it() -> None:
    """The controller of a ``--admin`` run (3.9.2, seed 1), its controller.log and
    state-change.log lines for chaos-0 and the added chaos-admin-1: the creations, a broker
    failure, an admin's preferred election (Online to Online, after "Starting replica leader
    election (PREFERRED) for partitions chaos-0,..."), the partition added, and the
    controlled shutdown of broker 2 (chaos-0's leadership moved, chaos-admin-1's ISR without
    it, after "Shutting down broker 2"); the ISR removals as broker 2 died repeat a version
    already written and are no step."""
    elections = [(e.topic, e.partition, e.params["reason"], e.params["leader"], e.params["leader_epoch"])
                 for _, e, _ in adapt(ADMIN) if e.kind == "elect_leader"]
    assert elections == [("chaos", 0, "init", 2, 0), ("chaos", 0, "leader_failed", 1, 1),
                         ("chaos", 0, "preferred", 2, 2), ("chaos-admin", 1, "init", 3, 0),
                         ("chaos", 0, "controlled_shutdown", 1, 3), ("chaos-admin", 1, "controlled_shutdown", 3, 1)]


@pytest.mark.parametrize(("trigger", "tp", "removed", "reason"), [
    (Trigger(partitions=frozenset({"chaos-0"})), "chaos-0", None, "preferred"),
    (Trigger(partitions=frozenset({"chaos-0"})), "chaos-1", None, None),  # not a partition named
    (Trigger(partitions=frozenset({"chaos-0"})), "chaos-0", 2, None),  # a preferred election removes no replica
    (Trigger(stopping=2), "chaos-0", 2, "controlled_shutdown"),
    (Trigger(stopping=2), "chaos-0", 3, None),  # another broker's removal: not this shutdown's
    (Trigger(), "chaos-0", None, None),  # after a broker failure
])
def test_a_trigger_explains_only_the_writes_it_causes(trigger: Trigger, tp: str, removed: int | None,
                                                      reason: str | None) -> None:
    assert trigger.reason(tp, removed) == reason


def test_a_paused_brokers_registration_after_its_session_expired_is_a_reregistration() -> None:
    """Seed 3 at 3.9 with unclean election (its registrations and faults.jsonl): broker 3,
    paused past the session timeout and resumed, registers again on its controller event
    thread -- the same process, a new session; brokers 1 and 2, killed (and 2 later stopped)
    and started, register as new processes."""
    kinds = [(e.kind, node) for node, e, _ in adapt(Path(__file__).parent / "fixtures" / "reregister-39")
             if e.kind in ("broker_restart", "broker_reregister")]
    assert kinds == [("broker_restart", 3), ("broker_restart", 1), ("broker_restart", 2), ("broker_reregister", 3),
                     ("broker_restart", 1), ("broker_restart", 2), ("broker_restart", 2)]
