"""Where Kafka's millisecond stamps put an effect before its cause, the order the relay saw.

The adapter orders steps by Kafka's log times (``conformance.kafka.adapter``), rebuilt from
millisecond stamps and durations.  A produce is placed where its request started (its
append happened during its local time, up to tens of milliseconds later), and a follower's
fetch answered while it was appending may be placed first: the answer carries a record the
leader's log does not hold yet, and the follower's receipt misses it.  The relay in front
of each broker (``impl.harness.kafka.relay``, ``<run>/relay/broker-N.jsonl``) logs every
Fetch answer as it forwards it, with the offsets of the records it carried; an answer that
carried a record was sent after the record was appended, so the produce goes first
(:func:`appends_first`).  Without a relay log the request log's own fetch offset says which
record an answer that carried any began with.

The other way round: a record a replica's fetch did not see as it was read was appended
after the read.  A fetch that waited in purgatory (``remoteTimeMs`` above 0: a follower's
fetch waits only while the leader has nothing for it) saw nothing past its fetch offset; one
answered at once saw the records up to where the same follower's next fetch began
(:func:`next_fetches`).  A produce of a record such a read did not see, placed at its start
but with the read within its local time, goes right after the read (:func:`appends_first`;
a chaos run's producer writes every few tens of milliseconds, and the read and the append
fall in the same millisecond).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from conformance.kafka.patterns import Line, topic_partition

RELAY_DIR = "relay"
LOG_LAG = 0.5
"""Seconds a request log line may be written after the request completed, at most (its
durations are measured to the completion; under load the line comes tens of milliseconds
later, and the answers that carried the produce's record before it)."""
MATCH_WINDOW = 2.0
"""Seconds between the request log's line and the relay's entry of one answer, at most
(correlation ids start again with each incarnation of a fetcher)."""

STAMP = 0.001
"""Seconds of a log line's stamp (milliseconds): a step rebuilt from one line and its durations may
be this much earlier or later against another line's."""

Carried = dict[tuple[str, int], tuple[int, int]]
"""(topic, partition) -> (first, last) offset of the records one Fetch answer carried."""


def fetching_replica(req: dict[str, Any]) -> int:
    """The follower that sent a Fetch (-1 for a consumer): ``replicaId``, in
    ``replicaState`` from v15 (IBP 3.5) on."""
    body = req["request"]
    return int(body.get("replicaId", body.get("replicaState", {}).get("replicaId", -1)))


def relay_answers(run_dir: Path) -> dict[tuple[int, str, int], list[tuple[float, Carried]]]:
    """(leader, fetcher's client id, correlation id) -> (time forwarded, what it carried) of
    every replica Fetch answer the relays forwarded; empty without relay logs."""
    out: dict[tuple[int, str, int], list[tuple[float, Carried]]] = defaultdict(list)
    for path in sorted((run_dir / RELAY_DIR).glob("broker-*.jsonl")):
        asked: dict[tuple[int, int], str] = {}  # (conn, correlation id) -> client id
        for text in path.read_text().splitlines():
            try:
                e = json.loads(text)
            except ValueError:
                continue  # a line the relay was writing as it stopped
            if e.get("api") != "Fetch" or "decode_error" in e:
                continue
            key = (e["conn"], e["correlation_id"])
            if e["direction"] == "request":
                asked[key] = e.get("client_id", "")
            elif key in asked:
                carried = {(p["topic"], p["partition"]): (p["last_offset"] - p["records"] + 1, p["last_offset"])
                           for p in e.get("partitions", ()) if p.get("records", 0) > 0 and p.get("last_offset") is not None}
                out[(e["broker"], asked.pop(key), e["correlation_id"])].append((e["time"], carried))
    return out


def appends_first(steps: list[tuple[int, int, Line]], run_dir: Path) -> list[tuple[int, int, Line]]:
    """``steps`` (broker, position, line) with each produce moved before the first answer of
    its leader that carried its record -- before its read, when it was answered as it was
    read -- when that answer sorts first (within the produce's own time: the same offset may
    be written again in another epoch)."""
    relayed = relay_answers(run_dir)
    names: dict[str, str] = {}  # topic id -> name (Fetch from v13 names topics by id)
    for _, _, line in steps:
        if line.name == "became_leader":
            names[line.fields["topic_id"].removeprefix("Some(").removesuffix(")")] = topic_partition(line.fields["tp"])[0]
    sent: dict[tuple[int, str, int], list[tuple[float, int, int]]] = defaultdict(list)  # -> (ts, first, last)
    session: Session = {}
    read = {id(line.fields["request"]): line.ts for _, _, line in steps if line.fields.get("read")}
    for broker, _, line in steps:
        if _api(line) == "FETCH" and not line.fields.get("read") and fetching_replica(line.fields["request"]) >= 0:
            req = line.fields["request"]
            # answered as it was read (no remote wait): its records were taken at the read
            taken = read.get(id(req), line.ts) if req["remoteTimeMs"] == 0 else line.ts
            for (topic, p), (first, last) in _carried(line, broker, relayed, names, session).items():
                sent[(broker, topic, p)].append((taken, first, last))
    unseen = _unseen_reads(steps, names)
    out = []
    written: dict[tuple[int, str, int, int], float] = {}  # (leader, topic, partition, offset) -> last produce
    for broker, pos, line in sorted(steps, key=lambda x: x[2].ts):
        if _api(line) == "PRODUCE":
            req = line.fields["request"]
            for t in req["response"]["responses"]:
                for pr in t["partitionResponses"]:
                    key = (broker, t["name"], pr["index"], pr["baseOffset"])
                    earliest = max(line.ts - req["totalTimeMs"] / 1000 - LOG_LAG, written.get(key, -1.0))
                    answers = [ts for ts, first, last in sent.get(key[:3], ())
                               if first <= key[3] <= last and earliest < ts <= line.ts]
                    written[key] = line.ts
                    if answers:
                        line = line._replace(ts=min(answers) - 1e-6)
                        continue
                    appended_by = line.ts + req["localTimeMs"] / 1000 + STAMP
                    reads = [ts for ts, seen in unseen.get(key[:3], ()) if seen <= key[3] and line.ts <= ts <= appended_by]
                    if reads:
                        line = line._replace(ts=max(reads) + 1e-6)
        out.append((broker, pos, line))
    return out


def next_fetches(lines: Iterable[tuple[int, Line]], names: dict[str, str]) -> dict[tuple[int, str, int], int]:
    """(id of a replica Fetch request, topic, partition) -> where the same follower's next
    fetch of the partition from the same leader began, when further on: the answer carried
    the records up to there.  The request log does not count an answer's records."""
    last: dict[tuple[int, int, str, int], tuple[int, int]] = {}  # -> (id of the request, its offset)
    out: dict[tuple[int, str, int], int] = {}
    for broker, line in lines:
        if _api(line) != "FETCH" or line.fields.get("read") or (follower := fetching_replica(line.fields["request"])) < 0:
            continue
        for t in line.fields["request"]["request"].get("topics", ()):
            name = t["topic"] if "topic" in t else names.get(t.get("topicId", ""), "")
            for pd in t["partitions"]:
                key = (broker, follower, name, pd["partition"])
                before = last.get(key)
                if before is not None and pd["fetchOffset"] > before[1]:
                    out[(before[0], name, pd["partition"])] = pd["fetchOffset"]
                last[key] = (id(line.fields["request"]), pd["fetchOffset"])
    return out


def _unseen_reads(steps: list[tuple[int, int, Line]], names: dict[str, str]) -> dict[tuple[int, str, int], list[tuple[float, int]]]:
    """(leader, topic, partition) -> (read time, the offset its log ended at as read) of each
    replica fetch whose answer says so: one that waited in purgatory read nothing past its
    fetch offset; one answered at once carried the records up to the follower's next fetch."""
    upto = next_fetches(((b, line) for b, _, line in steps), names)
    out: dict[tuple[int, str, int], list[tuple[float, int]]] = defaultdict(list)
    for broker, _, line in steps:
        req = line.fields["request"] if _api(line) == "FETCH" else None
        if req is None or not line.fields.get("read") or fetching_replica(req) < 0:
            continue
        for (topic, p), (first, _last) in _carried(line, broker, {}, names).items():
            seen = first if req["remoteTimeMs"] > 0 else upto.get((id(req), topic, p))
            if seen is not None:
                out[(broker, topic, p)].append((line.ts, seen))
    return out


HW_WINDOW = 0.02
"""Seconds an answer's rebuilt time may fall before the read that moved the HW it carries."""


def answers_after_hw(steps: list[tuple[int, int, Line]]) -> list[tuple[int, int, Line]]:
    """``steps`` with each replica Fetch answer that carried a HW no read before it had
    reached moved right after the read that did: another follower's fetch read at an offset
    at or past that HW, rebuilt a hair later (within :data:`HW_WINDOW`) from millisecond
    durations -- and with it its own read, when it was answered as it was read (no remote
    wait: the answer, and its HW, were made then).  Where that would put the answer past its
    own follower's next read, the read that moved the HW goes right before the answer
    instead -- its line was written late -- if its own fetcher had the answer before it by then."""
    names = _topic_names(steps)
    reads: dict[tuple[int, str, int], list[tuple[float, int, int, int]]] = defaultdict(list)  # -> (ts, follower, offset, pos)
    previous: dict[tuple[int, int], float] = {}  # (leader, pos of a read) -> its fetcher's answer before it
    last: dict[tuple[int, str], float] = {}
    logged = _hw_lines(steps)
    started: dict[tuple[int, int], float] = {}  # (leader, pos of a read) -> when its handling began
    for broker, pos, line in steps:
        if _api(line) == "FETCH" and (f := fetching_replica(line.fields["request"])) >= 0:
            client = (broker, line.fields["request"]["requestHeader"]["clientId"])
            if not line.fields.get("read"):
                last[client] = line.ts
                continue
            previous[(broker, pos)] = last.get(client, float("-inf"))
            for t in line.fields["request"]["request"].get("topics", ()):
                for pd in t["partitions"]:
                    reads[(broker, _name(t, names), pd["partition"])].append((line.ts, f, pd["fetchOffset"], pos))
            started[(broker, pos)] = line.ts - line.fields["request"]["localTimeMs"] / 1000
    out = []
    earlier: dict[tuple[int, int], float] = {}  # (leader, pos of a read) -> its new time
    along: dict[int, float] = {}  # id of a request answered at once -> its read's new time
    for broker, pos, line in steps:
        if _api(line) == "FETCH" and not line.fields.get("read") and (f := fetching_replica(line.fields["request"])) >= 0:
            for t in line.fields["request"]["response"].get("responses", ()):
                for pd in t["partitions"]:
                    seen = reads.get((broker, _name(t, names), pd["partitionIndex"]), [])
                    hw = pd["highWatermark"]
                    hws = logged.get((broker, _name(t, names), pd["partitionIndex"]), ())
                    movers = sorted((ts, p) for ts, other, offset, p in seen
                                    if other != f and offset >= hw and line.ts < ts <= line.ts + HW_WINDOW
                                    and not reached(hws, hw, started[(broker, p)]))
                    before = any(ts <= line.ts and other != f and offset >= hw for ts, other, offset, _ in seen)
                    # never past the follower's own next read, which this answer made possible
                    own = min((ts for ts, other, _, _ in seen if other == f and ts > line.ts), default=float("inf"))
                    if movers and not before and movers[0][0] < own:
                        line = line._replace(ts=movers[0][0] + 1e-6)
                        _read_along(line, along)
                    elif movers and not before and previous[(broker, movers[0][1])] < line.ts:
                        earlier[(broker, movers[0][1])] = line.ts - 1e-6
        out.append((broker, pos, line))
    out = [(b, pos, line._replace(ts=earlier[(b, pos)]) if (b, pos) in earlier else line) for b, pos, line in out]
    return _reads_moved(out, along)


def _hw_lines(steps: list[tuple[int, int, Line]]) -> dict[tuple[int, str, int], list[tuple[float, int]]]:
    """(leader, topic, partition) -> (time, HW) of each ``High watermark updated`` line."""
    out: dict[tuple[int, str, int], list[tuple[float, int]]] = defaultdict(list)
    for broker, _, line in steps:
        if line.name == "hw_updated":
            out[(broker, *topic_partition(line.fields["tp"]))].append((line.ts, int(line.fields["hw"])))
    return out


def reached(logged: Iterable[tuple[float, int]], hw: int, ts: float) -> bool:
    """Whether the leader's partition.log had logged its HW at ``hw`` or past it well before
    ``ts`` -- by more than :data:`HW_WINDOW`, what a read's rebuilt time may be off by (its
    handling can begin milliseconds before its durations say) -- so that a read whose
    handling began at ``ts`` did not move it there: a follower catching up outside the
    ISR, say, whose fetch reached ``hw`` after the ISR's had."""
    return any(at + HW_WINDOW < ts and logged_hw >= hw for at, logged_hw in logged)


def _read_along(answer: Line, along: dict[int, float]) -> None:
    """Note the read of a replica Fetch ``answer`` just moved later, if it was answered as it
    was read (no remote wait: its records and HW were taken then): the read was as late."""
    if answer.fields["request"]["remoteTimeMs"] == 0:
        along[id(answer.fields["request"])] = answer.ts - 5e-7


def _reads_moved(steps: list[tuple[int, int, Line]], along: dict[int, float]) -> list[tuple[int, int, Line]]:
    return [(b, pos, line._replace(ts=max(line.ts, along[id(line.fields["request"])]))
             if line.fields.get("read") and id(line.fields["request"]) in along else line) for b, pos, line in steps]


def reads_after_answers(steps: list[tuple[int, int, Line]]) -> list[tuple[int, int, Line]]:
    """``steps`` with each replica Fetch read after the answer to the same fetcher's
    previous Fetch from the same leader: a follower sends its next fetch only once it has
    the answer to the last, and its request log lines come in that order -- but two fetches
    answered at once have their reads rebuilt from millisecond durations, and the later one
    can land a hair before the earlier one's answer.  A read moved past its own answer takes
    the answer along."""
    answered: dict[tuple[int, str], float] = {}  # (leader, fetcher's client id) -> last answer
    out = []
    for broker, pos, line in steps:
        if _api(line) == "FETCH" and fetching_replica(line.fields["request"]) >= 0:
            key = (broker, line.fields["request"]["requestHeader"]["clientId"])
            if line.fields.get("read"):
                if key in answered:
                    line = line._replace(ts=max(line.ts, answered[key] + 1e-6))
                answered[key] = line.ts  # its own answer is never before it
            else:
                line = line._replace(ts=max(line.ts, answered.get(key, line.ts)))
                answered[key] = line.ts
        out.append((broker, pos, line))
    return out


def answers_after_appends(steps: list[tuple[int, int, Line]], run_dir: Path) -> list[tuple[int, int, Line]]:
    """``steps`` with each replica Fetch answer that sorts before the produce of a record it
    carried moved right after that produce -- the answer was sent with the record in the
    leader's log -- unless that would put it past the same follower's next read, which the
    answer made possible -- and its read along, when it was answered at once.  (``appends_first`` moves the produce before such an answer; a
    later move of the answer, ``answers_after_hw``, or of the produce after a read that did
    not see its record, can undo it within a millisecond.)"""
    relayed, names = relay_answers(run_dir), _topic_names(steps)
    produced: dict[tuple[int, str, int, int], list[float]] = defaultdict(list)  # (leader, topic, p, offset)
    reads: dict[tuple[int, str, int, int], list[float]] = defaultdict(list)  # (leader, topic, p, follower)
    for broker, _, line in steps:
        if _api(line) == "PRODUCE":
            for t in line.fields["request"]["response"]["responses"]:
                for pr in t["partitionResponses"]:
                    produced[(broker, t["name"], pr["index"], pr["baseOffset"])].append(line.ts)
        elif _api(line) == "FETCH" and line.fields.get("read") and (f := fetching_replica(line.fields["request"])) >= 0:
            for t in line.fields["request"]["request"].get("topics", ()):
                for pd in t["partitions"]:
                    reads[(broker, _name(t, names), pd["partition"], f)].append(line.ts)
    session: Session = {}
    out = []
    along: dict[int, float] = {}  # id of a request answered at once -> its read's new time
    for broker, pos, line in steps:
        if _api(line) == "FETCH" and not line.fields.get("read") and (f := fetching_replica(line.fields["request"])) >= 0:
            for (topic, p), (first, last) in _carried(line, broker, relayed, names, session).items():
                later = [ts for offset in range(first, last + 1) for ts in produced.get((broker, topic, p, offset), ())
                         if line.ts <= ts <= line.ts + LOG_LAG]
                own = min((ts for ts in reads.get((broker, topic, p, f), ()) if ts > line.ts), default=float("inf"))
                if later and max(later) < own:
                    line = line._replace(ts=max(later) + 1e-6)
                    _read_along(line, along)
        out.append((broker, pos, line))
    return _reads_moved(out, along)


def _topic_names(steps: list[tuple[int, int, Line]]) -> dict[str, str]:
    """Topic id -> name, from the leaders' lines (Fetch from v13 names topics by id)."""
    return {line.fields["topic_id"].removeprefix("Some(").removesuffix(")"): topic_partition(line.fields["tp"])[0]
            for _, _, line in steps if line.name == "became_leader"}


def _name(t: dict[str, Any], names: dict[str, str]) -> str:
    return t["topic"] if "topic" in t else names.get(t.get("topicId", ""), "")


def _api(line: Line) -> str | None:
    return line.fields["request"]["requestHeader"]["requestApiKeyName"] if line.name == "request" else None


Session = dict[tuple[int, str, str, int], int]
"""(leader, fetcher's client id, topic, partition) -> the fetch offset its last request listed."""


def _carried(line: Line, leader: int, relayed: dict[tuple[int, str, int], list[tuple[float, Carried]]],
             names: dict[str, str], session: Session | None = None) -> Carried:
    """What one answered Fetch of the request log carried: the relay's entry of it (the one
    forwarded nearest the line's time), else the records from the fetch offset asked --
    with ``session`` (fed the request log's lines in their order), for a partition an
    incremental request did not list (KIP-227: its offset did not change), the offset the
    fetcher's last request listed."""
    req = line.fields["request"]
    header = req["requestHeader"]
    asked = {(t.get("topic") or names.get(t.get("topicId", ""), ""), pd["partition"]): pd["fetchOffset"]
             for t in req["request"].get("topics", ()) for pd in t["partitions"]}
    if session is not None:
        for (topic, p), offset in asked.items():
            session[(leader, header["clientId"], topic, p)] = offset
        asked = {(topic, p): offset for (b, client, topic, p), offset in session.items()
                 if b == leader and client == header["clientId"]}
    entries = relayed.get((leader, header["clientId"], header["correlationId"]), [])
    near = [(abs(t - line.ts), carried) for t, carried in entries if abs(t - line.ts) <= MATCH_WINDOW]
    if near:
        return min(near, key=lambda x: x[0])[1]
    return {(t.get("topic") or names.get(t.get("topicId", ""), ""), pd["partitionIndex"]): (asked[key], asked[key])
            for t in req["response"].get("responses", ()) for pd in t["partitions"]
            if pd.get("recordsSizeInBytes", 0) > 0
            and (key := (t.get("topic") or names.get(t.get("topicId", ""), ""), pd["partitionIndex"])) in asked}


NOT_LEADER_OR_FOLLOWER = 6


def stopped_while_polling(asked: int, leader_epoch: int, answer: dict[str, Any]) -> bool:
    """Whether a replica fetch answered NOT_LEADER_OR_FOLLOWER was read by the leader it asked,
    in the epoch it led in (``asked``, the request's current leader epoch): it stopped leading
    during the long poll -- a StopReplica, or a new leader elsewhere (from Fetch v12 the answer
    names it, ``currentLeader``).  The read moved the follower's offset as any other (and may
    have expanded the ISR); only the answer is an error, which the follower takes in as
    nothing.  (A fetch read before the leader led asks in an epoch it does not lead in.)"""
    return answer["errorCode"] == NOT_LEADER_OR_FOLLOWER and asked == leader_epoch >= 0


def lookups_at_answers(steps: list[tuple[int, int, Line]], run_dir: Path) -> list[tuple[int, int, Line]]:
    """``steps`` with each truncation an epoch lookup decided (``Truncating ... due to leader
    epoch and offset``, logged once the follower's fetcher processed the answer) placed at the
    answer: the latest OffsetForLeaderEpoch answer the leader's relay forwarded to that
    follower for the partition before the line.  The model's lookup reads the leader's epochs
    as they were then -- the leader may have taken a new epoch between its answer and the
    line.  Without relay logs nothing moves."""
    answered: dict[tuple[int, int, str, int], list[float]] = defaultdict(list)  # (leader, follower, t, p)
    for path in sorted((run_dir / RELAY_DIR).glob("broker-*.jsonl")):
        asked: dict[tuple[int, int], int] = {}  # (conn, correlation id) -> the follower asking
        for text in path.read_text().splitlines():
            try:
                e = json.loads(text)
            except ValueError:
                continue
            if e.get("api") != "OffsetForLeaderEpoch" or "decode_error" in e:
                continue
            key = (e["conn"], e["correlation_id"])
            if e["direction"] == "request":
                asked[key] = int(e.get("src", -1))
            elif key in asked:
                follower = asked.pop(key)
                for p in e.get("partitions", ()):
                    answered[(e["broker"], follower, p["topic"], p["partition"])].append(e["time"])
    if not answered:
        return steps
    out = []
    for broker, pos, line in steps:
        if line.name == "truncated" and line.fields["why"] == "leader epoch and offset":
            times = answered.get((int(line.fields["leader"]), broker, *topic_partition(line.fields["tp"])), [])
            before = [t for t in times if t <= line.ts]
            if before:
                line = line._replace(ts=min(line.ts, max(before) + 1e-6))
        out.append((broker, pos, line))
    return out

