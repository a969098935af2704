"""The adapter on real lines of a chaos run's restarted brokers (seed 2, 24 s, ibp-2.6, Kafka
3.9.2): the HW held by a restarted follower that caught up outside the ISR, a produce
answered REQUEST_TIMED_OUT whose record was appended, an answer's HW ahead of the leader's
line, a killed follower's last receipt that its restart shows never happened, a catching-up
follower's read taken for no HW's mover, and a fetch of an older leader epoch refused as it
is read.  Each
excerpt is one broker's lines as the run wrote them, in the order of their stamps."""

from __future__ import annotations

from pathlib import Path

from conformance.kafka.adapter import _Adapter, ordered_lines, steps
from conformance.kafka.ordering import answers_after_hw, fetching_replica
from conformance.kafka.patterns import Line, parse
from traces.events import Event

EXCERPTS = Path(__file__).parent / "fixtures" / "excerpts"
EPOCH = 2


def _run(tmp_path: Path, excerpts: dict[int, list[str]]) -> Path:
    """A run directory holding each broker's excerpts (the adapter orders the lines as it
    orders a run's)."""
    for broker, names in excerpts.items():
        logs = tmp_path / f"broker-{broker}" / "logs"
        logs.mkdir(parents=True)
        (logs / "kafka-request.log").write_text("".join((EXCERPTS / f"{name}.log").read_text() for name in names))
    return tmp_path


def _adapter(records: int, values: int, isr: list[int], epoch: int = EPOCH,
             down: dict[int, list[tuple[float, float]]] | None = None) -> _Adapter:
    """Leader 2 of chaos-0 at ``epoch`` with ``records`` records and ``isr``, every replica
    holding the same log; ``values`` placed by offset."""
    adapter = _Adapter([{"topic": "chaos", "partition": 0, "offset": o, "leader_epoch": epoch, "value": f"s2-{o}"}
                        for o in range(values)], down)
    for broker in (1, 2, 3):
        r = adapter.replica("chaos", 0, broker)
        r.log = [[o, epoch, f"s2-{o}"] for o in range(records)]
        r.leader, r.leader_epoch, r.isr, r.hw, r.zk_version = 2, epoch, list(isr), records, 2
    return adapter


def _events(adapter: _Adapter, run: Path) -> list[tuple[int, Event]]:
    for broker, line in ordered_lines(run):
        adapter.on_line(broker, line)
    kept = [x for i, x in enumerate(adapter.out.events) if i not in adapter.out.dropped]
    return [(node, e) for _, _, node, e in sorted(kept, key=lambda x: (x[0], x[1]))]


def test_a_caught_up_follower_outside_the_isr_holds_the_hw_until_it_joins(tmp_path: Path) -> None:
    """Leader 2 (ISR [2, 3], HW 307); broker 1, restarted, caught up: its fetch at 118 was
    answered with everything up to 304, its next at 304 with 304 to 306.  Follower 3's fetch
    at 308 is read (`Recorded replica 3 ... 308` at .580) before the leader expands the ISR
    by follower 1, which fetched at 307 -- and the HW stays at 307: Kafka's HW waits for a
    replica outside the ISR caught up within replica.lag.time.max.ms, and `High watermark
    updated ... to (offset=308` comes with follower 1's fetch at 308, after the expansion.
    Read at follower 3's fetch, a HW of 308 would leave follower 1 behind it, and the model
    refuses the expansion (the slow test's stop at ibp-2.6, seed 2)."""
    adapter = _adapter(307, 309, [2, 3])
    leader = adapter.replica("chaos", 0, 2)
    leader.fetch_offset.update({1: 118, 3: 307})
    leader.last_read[1] = (1795950926.4842, 304)  # follower 1's fetch at 118, read with the log at 304
    events = _events(adapter, _run(tmp_path, {2: ["chaos-hw-waits-for-caught-up-follower"]}))
    steps = [(e.kind, e.params.get("follower"), e.params.get("fetch_offset"), e.post.get("hw"))
             for node, e in events if node == 2 and e.kind in ("handle_fetch", "expand_isr")]
    reads_308 = [s for s in steps if s[0] == "handle_fetch" and s[2] == 308]
    assert reads_308[0] == ("handle_fetch", 3, 308, 307), "follower 1, outside the ISR at 307, holds the HW"
    expansion = steps.index(("expand_isr", 1, None, 307))
    assert ("handle_fetch", 1, 307, 307) in steps[:expansion]
    assert next(s for s in steps if s[3] == 308) == ("handle_fetch", 1, 308, 308), "moved by follower 1's fetch"


def test_an_answer_carries_the_hw_its_line_logs_later(tmp_path: Path) -> None:
    """Leader 2 (ISR [2, 1], leader epoch 3), records written one a millisecond: follower
    1's fetch at 451 is read and answered within 0.9 ms with record 451 and HW 451, and the
    `High watermark updated ... to (offset=451` line of that read carries the millisecond
    after the answer's rebuilt time.  The leader's HW after the answer is at least the one
    the answer carried (it was the leader's as it answered)."""
    adapter = _adapter(448, 454, [2, 1], epoch=3)
    adapter.replica("chaos", 0, 2).fetch_offset[1] = 448
    events = _events(adapter, _run(tmp_path, {2: ["chaos-answer-hw-before-its-line"]}))
    answers = [e for node, e in events if e.kind == "handle_fetch" and e.params["records"]]
    assert [e.params["fetch_offset"] for e in answers] == [449, 450, 451, 452]
    assert all(e.post["hw"] >= e.params["leader_hw"] for e in answers), [
        (e.params["fetch_offset"], e.params["leader_hw"], e.post["hw"]) for e in answers]


def test_a_produce_answered_request_timed_out_was_appended(tmp_path: Path) -> None:
    """Leader 2's produce of record 349 waited 3 s for follower 3, killed, and was answered
    REQUEST_TIMED_OUT with baseOffset 349: the record was appended (the read-back found it
    there); the next produce is 350."""
    adapter = _adapter(349, 351, [2, 3, 1])
    events = _events(adapter, _run(tmp_path, {2: ["chaos-produce-timed-out"]}))
    assert [(e.kind, e.params["offset"]) for _, e in events] == [("produce", 349)]
    assert len(adapter.replica("chaos", 0, 2).log) == 350


def test_a_killed_followers_last_receipt_its_restart_does_not_show_did_not_happen(tmp_path: Path) -> None:
    """Leader 2 answered follower 3's fetch at 349 with record 349 at 27.849; follower 3 was
    killed at 27.890 and, restarted, logs `Follower chaos-0 starts at leader epoch 3 from
    offset 349`: it never appended record 349 -- the answer was in flight at the kill.  Its
    receipt is not in the trace (the model's kill drops what is addressed to the victim), and
    its log ends at 349 as the line says."""
    killed = 1795950927.8901718
    adapter = _adapter(349, 351, [2, 3, 1], down={3: [(killed, 1795950931.0909765)]})
    adapter.replica("chaos", 0, 2).fetch_offset.update({1: 349, 3: 349})
    events = _events(adapter, _run(tmp_path, {2: ["chaos-answer-to-killed-follower", "chaos-produce-timed-out"],
                                              3: ["chaos-killed-follower-restarts"]}))
    kinds = [(node, e.kind) for node, e in events]
    assert (2, "produce") in kinds and (2, "handle_fetch") in kinds
    assert (3, "receive_fetch") not in kinds, "the answer never reached the killed follower's log"
    (became,) = [e for node, e in events if e.kind == "become_follower"]
    assert became.post["leo"] == 349 and became.post["hw"] == 328


def test_a_follower_catching_up_outside_the_isr_moves_no_hw(tmp_path: Path) -> None:
    """Leader 2 (ISR [2, 1]): follower 1's fetch at 555 is answered with HW 555 at .394 --
    moved by its own read at 555 (`High watermark updated ... to (offset=555` at .364) --
    while restarted follower 3, catching up (its fetch at 349 answered with 206 records),
    fetches at 555 at .398.  Its read is no mover of that HW: it stays after the answer (it
    was answered at once, with the HW follower 1's next read moved to 556 meanwhile)."""
    raw = [(2, pos, step) for pos, text in enumerate(
        (EXCERPTS / "chaos-catching-up-read-no-hw-mover.log").read_text().splitlines()) for step in steps(parse(text))]

    def at(placed: list[tuple[int, int, Line]], follower: int, read: bool) -> float:
        return next(line.ts for _, _, line in placed if line.name == "request" and fetching_replica(line.fields["request"]) == follower
                    and line.fields["request"]["request"]["topics"][0]["partitions"][0]["fetchOffset"] == 555
                    and bool(line.fields.get("read")) == read)

    placed = answers_after_hw(raw)
    assert at(placed, 3, read=True) > at(placed, 1, read=False)
    assert at(placed, 3, read=True) == at(raw, 3, read=True)


def test_a_fetch_asked_in_an_older_leader_epoch_is_refused_as_it_is_read(tmp_path: Path) -> None:
    """Follower 1, paused 6 s while the controller gave leader 2 epoch 4 without it, sends its
    fetch at 648 in epoch 3 once resumed: leader 2 answers FENCED_LEADER_EPOCH at once.  The
    read is that refusal -- no records, no HW, no offset taken -- not an answer of epoch 4
    with the records past 648 and a second, fenced, round trip."""
    adapter = _adapter(842, 842, [2, 3], epoch=4)
    adapter.replica("chaos", 0, 1).leader_epoch = 3
    events = _events(adapter, _run(tmp_path, {2: ["chaos-fenced-as-read"]}))
    assert [(node, e.kind, e.params["records"], e.params["error"]) for node, e in events] == [
        (2, "handle_fetch", [], "FENCED_LEADER_EPOCH")]
    assert 1 not in adapter.replica("chaos", 0, 2).fetch_offset
