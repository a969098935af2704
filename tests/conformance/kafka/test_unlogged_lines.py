"""The adapter on real lines of the slow test's chaos runs (seed 2, 24 s, 3.9.2): what a kill -9
cut off the killed leader's request log, derived from where its followers say their logs end;
a fetch answered as it was read moved along with its answer; a new leader's HW line written
before the read that moved it is rebuilt; and the first receipt of a fetch read twice placed
after its read.  Each excerpt is a broker's lines as the run wrote them."""

from __future__ import annotations

from pathlib import Path

from conformance.kafka.adapter import _Adapter, steps
from conformance.kafka.ordering import answers_after_appends, answers_after_hw, appends_first
from conformance.kafka.patterns import Line, parse

EXCERPTS = Path(__file__).parent / "fixtures" / "excerpts"
KILLED_AT = 1795939998.4070654  # faults.jsonl of the ibp-2.6 run: kill -9 of leader 3


def _lines(name: str) -> list[Line]:
    out = []
    for text in (EXCERPTS / f"{name}.log").read_text().splitlines():
        line = parse(text)
        assert line is not None, text[:80]
        out.extend(steps(line))
    return out


def _follower_state(adapter: _Adapter, broker: int, records: int, leader: int, epoch: int, isr: list[int]) -> None:
    r = adapter.replica("chaos", 0, broker)
    r.log = [[o, epoch, f"s2-{o}"] for o in range(records)]
    r.leader, r.leader_epoch, r.isr, r.hw, r.became_at = leader, epoch, list(isr), records, KILLED_AT - 6


def test_records_a_killed_leader_sent_unlogged_are_derived_before_the_kill() -> None:
    """Leader 3 (ibp-2.6) appended record 85 and followers 1 and 2 fetched it; kill -9 cut the
    produce's and both answers' request-log lines.  Applying the new epoch, follower 2 and new
    leader 1 log `from offset 86`: record 85's append and each follower's round trip are
    derived just before the kill, and the client's retry of record 85 -- answered by leader 1
    in epoch 2 as a duplicate -- is no append."""
    values = [{"topic": "chaos", "partition": 0, "offset": o, "leader_epoch": 0, "value": f"s2-{o}"} for o in range(86)]
    adapter = _Adapter(values, {3: [(KILLED_AT, KILLED_AT + 30)]})
    for broker in (1, 2, 3):
        _follower_state(adapter, broker, 85, 3, 0, [3, 1, 2])
    adapter.replica("chaos", 0, 3).fetch_offset.update({1: 85, 2: 85})
    for line in _lines("killed-leader-unlogged-answers"):
        adapter.on_line(int(line.fields["broker"]), line)
    before = [(ts, node, e.kind, e.params.get("follower", e.params.get("offset")), e.params.get("records"))
              for ts, _, node, e in sorted(adapter.out.events, key=lambda x: x[0]) if ts < KILLED_AT]
    record = [[85, 0, "s2-85"]]
    assert [x[1:] for x in before] == [
        (3, "produce", 85, None), (3, "handle_fetch", 2, record), (2, "receive_fetch", None, record),
        (3, "handle_fetch", 1, record), (1, "receive_fetch", None, record)]
    assert before[-1][0] < KILLED_AT - 9e-5, "after the killed leader's last line, well before the kill"
    became = {(node, e.kind): e.post for ts, _, node, e in adapter.out.events if ts > KILLED_AT}
    assert became[(2, "become_follower")]["leo"] == became[(1, "become_leader")]["leo"] == 86
    assert became[(2, "become_follower")]["hw"] == became[(1, "become_leader")]["hw"] == 85
    retry = {"response": {"responses": [{"name": "chaos", "partitionResponses": [
        {"index": 0, "errorCode": 0, "baseOffset": 85}]}]}}
    count = len(adapter.out.events)
    adapter._produce(1, KILLED_AT + 4, retry)
    assert len(adapter.out.events) == count, "a duplicate answered with the record's offset: no append"


def test_nothing_is_derived_when_the_leader_was_not_killed() -> None:
    values = [{"topic": "chaos", "partition": 0, "offset": o, "leader_epoch": 0, "value": f"s2-{o}"} for o in range(86)]
    adapter = _Adapter(values, {})
    for broker in (1, 2, 3):
        _follower_state(adapter, broker, 85, 3, 0, [3, 1, 2])
    for line in _lines("killed-leader-unlogged-answers"):
        adapter.on_line(int(line.fields["broker"]), line)
    assert sorted(e.kind for _, _, _, e in adapter.out.events) == ["become_follower", "become_leader"]


def test_a_fetch_answered_as_it_was_read_is_read_where_its_answer_goes(tmp_path: Path) -> None:
    """Leader 3 at 3.9: follower 2's fetch at 67 waited in purgatory (its read saw no record
    67), follower 1's was answered at once with record 67 and HW 67 -- which needs follower
    2's read first.  Rebuilt from durations, follower 1's read and answer sort before follower
    2's read, and the produce of 67 before both reads.  After the passes: follower 2's read,
    the append, then follower 1's read and answer together, then follower 2's answer."""
    raw = [(3, pos, line) for pos, line in enumerate(_lines("chaos-read-moved-with-answer"))]
    placed = answers_after_appends(answers_after_hw(appends_first(raw, tmp_path)), tmp_path)

    def order(steps_: list[tuple[int, int, Line]]) -> list[tuple[str, bool]]:
        out = []
        for _, _, line in sorted(steps_, key=lambda x: (x[2].ts, x[1])):
            if line.name == "request":
                req = line.fields["request"]
                who = "produce" if req["requestHeader"]["requestApiKeyName"] == "PRODUCE" else \
                    f"follower {req['request']['replicaState']['replicaId']}"
                out.append((who, bool(line.fields.get("read"))))
        return out

    assert order(raw)[:2] == [("produce", False), ("follower 1", True)], "the rebuilt order"
    assert order(placed) == [("follower 2", True), ("produce", False), ("follower 1", True), ("follower 1", False),
                             ("follower 2", False)]


def test_a_new_leaders_hw_waits_for_its_followers_first_fetch() -> None:
    """Broker 1 leads chaos-0 at epoch 1 (3.9) from offset 82 with HW 81; its `High watermark
    updated ... to (offset=82` line (follower 2's fetch at 82, whose read has a 16.5 ms local
    time and is rebuilt at its end) sorts before the produce of record 82: the produce still
    finds the HW where the new leader took it, 81, as no follower has fetched in its epoch."""
    adapter = _Adapter([{"topic": "chaos", "partition": 0, "offset": o, "leader_epoch": 0, "value": f"s2-{o}"}
                        for o in range(83)], {})
    _follower_state(adapter, 1, 82, 3, 0, [3, 1, 2])
    for line in _lines("new-leader-hw-line-early"):
        adapter.on_line(1, line)
    (produce,) = [e for _, _, _, e in adapter.out.events if e.kind == "produce"]
    assert produce.params["offset"] == 82 and produce.post == {"hw": 81, "leo": 83}
    assert adapter.replica("chaos", 0, 1).hw == 82, "the line itself is taken"


def test_a_produce_goes_before_the_read_of_an_answer_at_once_that_carried_its_record(tmp_path: Path) -> None:
    """Leader 1 at 3.9: follower 2's fetch at 262, answered at once (no remote wait) with
    record 262 and HW 262; the produce of 262, placed at its start, sorts after it.  It goes
    before the read -- the records were taken there -- not between the read and its answer,
    where the read would have seen no record and its answer would be a second round trip."""
    raw = [(1, pos, line) for pos, line in enumerate(_lines("chaos-produce-before-read-at-once"))]

    def order(steps_: list[tuple[int, int, Line]]) -> list[tuple[str, bool]]:
        return [(line.fields["request"]["requestHeader"]["requestApiKeyName"], bool(line.fields.get("read")))
                for _, _, line in sorted(steps_, key=lambda x: (x[2].ts, x[1])) if line.name == "request"]

    assert order(raw) == [("FETCH", True), ("FETCH", False), ("PRODUCE", False)], "the rebuilt order"
    assert order(appends_first(raw, tmp_path)) == [("PRODUCE", False), ("FETCH", True), ("FETCH", False)]
