"""Rule-level test vectors: the model's own decision functions, run on every small input and
written down as language-neutral JSON cases a port in any language can run.

In the style of Ethereum's consensus-spec-tests: the executable specification (here the
model) generates the vectors, and every implementation -- ``impl.node`` in its test suite, the
Node.js port in ``ports/node`` -- runs them through its own decision functions.  A vector
holds one rule, not a run: a port that passes them takes the same decision as the model at
every step the rule covers, before it ever joins a cluster.

Each case is ``{"name", "section", "input", "expected"}``; the format is versioned
(``FORMAT``) and documented, field by field, in ``docs/vectors.md``.  Inputs are enumerated
exhaustively within small bounds, in a fixed order, and expected outputs are computed by
calling the model -- never written by hand -- so the output is the same bytes on every run
(nothing random is involved; ``generate`` takes no seed because it needs none).

Where the model has no such rule (it checks replication and has no quota, no consumer and
no preferred replica), the expected outputs come from a small pure reference function in the
model layer that cites its design document: ``model.quota``, ``model.reads``,
``model.preferred``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from fractions import Fraction
from itertools import combinations, permutations, product
from pathlib import Path
from typing import Any

from model.actions import (
    advance_hw,
    controlled_shutdown,
    controller_elect,
    election_outcomes,
    expand_isr,
    reassign_complete,
    replica,
    shrink_isr,
    stale_reason,
)
from model.config import Config
from model.preferred import preferred_leader
from model.quota import QuotaRequest, token_bucket
from model.reads import consumer_fetch
from model.state import (
    DOWN,
    FOLLOWER,
    LEADER,
    NO_LEADER,
    NONE,
    UNKNOWN,
    UP,
    Entry,
    LeaderAndIsr,
    PartitionZnode,
    State,
    initial,
)
from model.truncation import truncation_point

FORMAT = "epochal.vectors/1"
"""The version of the vector format; a change that would make an existing port misread a case
gets a new number (docs/vectors.md, "Versioning")."""

BROKERS = (0, 1, 2)
Case = dict[str, Any]


# ---------------------------------------------------------------------------------------
# Small clusters the model's actions run on: three brokers, one partition
# ---------------------------------------------------------------------------------------


def _config(truncation: str = "kip320", unclean: bool = False) -> Config:
    """Three brokers, with bounds wide enough that no guard of a bound refuses a step: the
    vectors are about the rule, not the search's budget."""
    return Config("vectors", truncation, brokers=3, max_epoch=8, max_shutdowns=1,
                  reassignments=1, unclean=unclean)


def _cluster(cfg: Config, *, ar: tuple[int, ...], isr: tuple[int, ...], leader: int,
             live: tuple[int, ...], controller: int = NO_LEADER, rar: tuple[int, ...] = ()) -> State:
    """Partition 0 with the given znode; the live brokers up and registered, the others
    down; ``controller`` (if any) the acting controller at controller epoch 1."""
    s = initial(cfg)
    zn = PartitionZnode(leader=leader, leader_epoch=1, isr=isr, zk_version=0, ar=ar, rar=rar)
    zk = s.zk._replace(controller=controller, live=live, partitions=(zn,))
    brokers = tuple(
        br._replace(status=UP if b in live else DOWN, is_controller=b == controller)
        for b, br in enumerate(s.brokers)
    )
    return s._replace(zk=zk, brokers=brokers)


def _subsets(items: tuple[int, ...], empty: bool = False) -> Iterator[tuple[int, ...]]:
    """Every subset of ``items`` (sorted tuples), smallest first; the empty one if asked."""
    for k in range(0 if empty else 1, len(items) + 1):
        yield from combinations(items, k)


def _ids(bs: tuple[int, ...] | list[int]) -> str:
    return "".join(str(b) for b in bs) or "-"


def _case(name: str, section: str, input: dict[str, Any], expected: dict[str, Any]) -> Case:
    return {"name": name, "section": section, "input": input, "expected": expected}


# ---------------------------------------------------------------------------------------
# The families
# ---------------------------------------------------------------------------------------


def election() -> Iterator[Case]:
    """Seed 000 A 3.2 (``election_outcomes``): the leader and ISR choices the controller may
    write when the live brokers change -- clean, unclean, or leaderless."""
    for unclean in (False, True):
        cfg = _config(unclean=unclean)
        for ar in _subsets(BROKERS):
            for isr in _subsets(ar):
                for leader in (NO_LEADER, *isr):
                    for live in _subsets(BROKERS, empty=True):
                        zk = _cluster(cfg, ar=ar, isr=isr, leader=leader, live=live).zk
                        outcomes = [{"leader": ld, "isr": list(i), "unclean": u}
                                    for ld, i, u in sorted(election_outcomes(zk, 0, cfg))]
                        yield _case(
                            f"ar={_ids(ar)} isr={_ids(isr)} leader={leader} live={_ids(live)}"
                            + (" unclean-enabled" if unclean else ""),
                            "000 A",
                            {"ar": list(ar), "isr": list(isr), "leader": leader, "live": list(live),
                             "unclean_enabled": unclean},
                            {"outcomes": outcomes})


def preferred() -> Iterator[Case]:
    """Preferred-replica election (``model.preferred``): the first assigned replica takes
    over if it is a live ISR member and not already the leader."""
    for n in (1, 2, 3):
        for ar in permutations(BROKERS, n):
            for isr in _subsets(tuple(sorted(ar))):
                for leader in (NO_LEADER, *isr):
                    for live in _subsets(BROKERS, empty=True):
                        new = preferred_leader(ar, leader, isr, live)
                        outcomes = [] if new is None else [{"leader": new, "isr": list(isr), "unclean": False}]
                        yield _case(f"ar={_ids(ar)} isr={_ids(isr)} leader={leader} live={_ids(live)}",
                                    "000 A",
                                    {"ar": list(ar), "isr": list(isr), "leader": leader, "live": list(live)},
                                    {"outcomes": outcomes})


def controlled_shutdown_cases() -> Iterator[Case]:
    """Controlled shutdown (``model.actions.controlled_shutdown``): the controller takes the
    stopping broker out of the ISR and, if it led, elects a live ISR member in its place;
    the last in-sync replica cannot leave."""
    cfg = _config()
    ar = BROKERS
    for isr in _subsets(ar):
        for leader in (NO_LEADER, *isr):
            for live in _subsets(BROKERS):
                for stopping in live:
                    s = _cluster(cfg, ar=ar, isr=isr, leader=leader, live=live, controller=live[0])
                    outcomes = []
                    for new in (NO_LEADER, *BROKERS):
                        after = controlled_shutdown(s, cfg, live[0], 0, stopping, new)
                        if after is not None and after.zk.partitions != s.zk.partitions:  # a write
                            zn = after.zk.partitions[0]
                            outcomes.append({"leader": zn.leader, "isr": list(zn.isr), "unclean": False})
                    yield _case(f"isr={_ids(isr)} leader={leader} live={_ids(live)} stopping={stopping}",
                                "000 A",
                                {"ar": list(ar), "isr": list(isr), "leader": leader, "live": list(live),
                                 "stopping": stopping},
                                {"outcomes": outcomes})


def reassignment() -> Iterator[Case]:
    """Seed 000 F 3.2 (``model.actions.reassign_complete``): once every RAR member is in the
    ISR, the partition switches to RAR -- a live RAR member leads (the current leader if it
    is one), the ISR keeps only RAR members, and the replicas that left are stopped."""
    cfg = _config()
    for ar in ((0,), (0, 1)):
        for rar in _subsets(BROKERS):
            moving = tuple(sorted(set(ar) | set(rar)))  # AR + RAR while the move is in progress
            for isr in _subsets(moving):
                for leader in (NO_LEADER, *isr):
                    for live in _subsets(BROKERS):
                        s = _cluster(cfg, ar=moving, isr=isr, leader=leader, live=live,
                                     controller=live[0], rar=rar)
                        outcomes = []
                        for new in (NO_LEADER, *BROKERS):
                            after = reassign_complete(s, cfg, live[0], 0, new)
                            if after is not None:
                                zn = after.zk.partitions[0]
                                removed = sorted({m.to for m in after.stop_replica})
                                outcomes.append({"leader": zn.leader, "isr": list(zn.isr), "ar": list(zn.ar),
                                                 "removed": removed})
                        yield _case(f"ar={_ids(ar)} rar={_ids(rar)} isr={_ids(isr)} leader={leader} "
                                    f"live={_ids(live)}",
                                    "000 F",
                                    {"ar": list(ar), "rar": list(rar), "isr": list(isr), "leader": leader,
                                     "live": list(live)},
                                    {"outcomes": outcomes})


def _logs(max_len: int = 3, max_epoch: int = 3) -> Iterator[tuple[int, ...]]:
    """Every log of up to ``max_len`` records as its records' leader epochs, non-decreasing."""
    for n in range(max_len + 1):
        for epochs in product(range(1, max_epoch + 1), repeat=n):
            if list(epochs) == sorted(epochs):
                yield epochs


def _log(epochs: tuple[int, ...]) -> tuple[Entry, ...]:
    return tuple(Entry(i + 1, e) for i, e in enumerate(epochs))


def truncation() -> Iterator[Case]:
    """Where a new follower truncates (``model.truncation.truncation_point``), under each
    rule: ``hw`` (seed 000 C), ``kip101``, ``kip279``, ``kip320`` (one OffsetsForLeaderEpoch
    round: the leader's current epoch ends at its LEO)."""
    for follower in _logs():
        for hw in range(len(follower) + 1):
            point = truncation_point("hw", _log(follower), hw, (), 0)
            yield _case(f"hw follower={_ids(follower)} hw={hw}", "000 C",
                        {"rule": "hw", "follower_log": list(follower), "follower_hw": hw},
                        {"offset": point})
    for rule in ("kip101", "kip279", "kip320"):
        for follower in _logs():
            for leader in _logs():
                for leader_epoch in range(leader[-1] if leader else 1, 5):
                    point = truncation_point(rule, _log(follower), 0, _log(leader), leader_epoch)
                    yield _case(f"{rule} follower={_ids(follower)} leader={_ids(leader)}@{leader_epoch}",
                                "000 C",
                                {"rule": rule, "follower_log": list(follower), "leader_log": list(leader),
                                 "leader_epoch": leader_epoch},
                                {"offset": point})


def _leading(cfg: Config, leo: int, hw: int, isr: tuple[int, ...], follower_leo: tuple[int, ...],
             ar: tuple[int, ...] = BROKERS, epoch_start: int = 0) -> State:
    """Broker 0 leads partition 0 with a log of ``leo`` records, the given HW and ISR, and the
    followers' LEOs as it last saw them (``UNKNOWN``: not fetched in this term)."""
    s = _cluster(cfg, ar=ar, isr=isr, leader=0, live=BROKERS)
    r = replica(s, 0, 0)._replace(role=LEADER, leader=0, isr=isr, zk_version=0, log=_log((1,) * leo),
                                  hw=hw, follower_leo=follower_leo, epoch_start=epoch_start)
    broker = s.brokers[0]._replace(replicas=(r,))
    return s._replace(brokers=(broker, *s.brokers[1:]))


def hw_advance() -> Iterator[Case]:
    """Seed 000 G (``model.actions.advance_hw``): the leader's HW is the minimum LEO of the
    ISR, never moving backwards; a follower that has not fetched in this term holds it."""
    cfg = _config()
    for leo in range(4):
        for hw in range(leo + 1):
            for isr in _subsets((1, 2), empty=True):
                for leo1, leo2 in product(range(UNKNOWN, leo + 1), repeat=2):
                    s = _leading(cfg, leo, hw, (0, *isr), (UNKNOWN, leo1, leo2))
                    new = replica(advance_hw(s, cfg, 0, 0), 0, 0).hw
                    yield _case(f"leo={leo} hw={hw} isr=0{_ids(isr)} leos={leo1},{leo2}", "000 G",
                                {"leader": 0, "leo": leo, "hw": hw, "isr": [0, *isr],
                                 "follower_leo": {"1": leo1, "2": leo2}},
                                {"hw": new})


def isr() -> Iterator[Case]:
    """Seed 000 G ``maybe_change_ISR`` (``model.actions.shrink_isr`` / ``expand_isr``): who
    may leave the ISR (a follower behind the leader's LEO, once the lag time has passed: one
    at the LEO never), and who may join it (caught up to the HW and, with KIP-320, to the
    start of the leader's epoch; an assigned replica only)."""
    cfg = _config()
    for leo in range(4):
        for in_isr in (True, False):
            for f_leo in range(UNKNOWN, leo + 1):
                isr = (0, 1) if in_isr else (0,)
                s = _leading(cfg, leo, 0, isr, (UNKNOWN, f_leo, UNKNOWN))
                may = shrink_isr(s, cfg, 0, 0, 1) is not None
                yield _case(f"shrink leo={leo} follower_leo={f_leo}" + ("" if in_isr else " not-in-isr"),
                            "000 G",
                            {"change": "shrink", "leo": leo, "follower_leo": f_leo, "in_isr": in_isr},
                            {"eligible": may})
    leo = 3
    for kip320 in (False, True):
        cfg = _config("kip320" if kip320 else "kip279")
        for hw in range(leo + 1):
            for epoch_start in range(hw, leo + 1):  # an epoch starts at or above the HW it found
                for f_leo in range(UNKNOWN, leo + 1):
                    for in_isr, assigned in ((False, True), (False, False), (True, True)):
                        isr = (0, 1) if in_isr else (0,)
                        ar = BROKERS if assigned else (0, 2)
                        s = _leading(cfg, leo, hw, isr, (UNKNOWN, f_leo, UNKNOWN), ar=ar, epoch_start=epoch_start)
                        may = expand_isr(s, cfg, 0, 0, 1) is not None
                        yield _case(f"expand {'kip320' if kip320 else 'pre-kip320'} hw={hw} epoch_start={epoch_start} "
                                    f"follower_leo={f_leo}" + (" in-isr" if in_isr else "")
                                    + ("" if assigned else " not-assigned"),
                                    "000 G",
                                    {"change": "expand", "kip320": kip320, "leo": leo, "hw": hw,
                                     "epoch_start": epoch_start, "follower_leo": f_leo, "in_isr": in_isr,
                                     "assigned": assigned},
                                    {"eligible": may})


ROLES = {"leader": LEADER, "follower": FOLLOWER, "none": NONE}


def _reason(why: str | None) -> str:
    """The model's reasons as vector tokens: ``stale controller epoch`` -> ``stale_controller_epoch``."""
    return "accept" if why is None else why.replace(" ", "_")


def control() -> Iterator[Case]:
    """Seeds 002, 003 and 000 C (``model.actions.stale_reason``): a broker refuses a
    LeaderAndISR from an older controller epoch, one computed before its own registration
    (max broker epoch below its broker epoch), and one whose leader epoch is not newer than
    its replica's -- checked in that order."""
    cfg = _config()
    known_ce, broker_epoch, replica_epoch = 2, 5, 2
    for ce, mbe, le, role in product((1, 2, 3), (4, 5, 6), (1, 2, 3), ROLES):
        s = _cluster(cfg, ar=BROKERS, isr=BROKERS, leader=0, live=BROKERS)
        leader = {"leader": 1, "follower": 0, "none": NO_LEADER}[role]
        r = replica(s, 1, 0)._replace(role=ROLES[role], leader=leader, leader_epoch=replica_epoch)
        b1 = s.brokers[1]._replace(controller_epoch=known_ce, broker_epoch=broker_epoch, replicas=(r,))
        s = s._replace(brokers=(s.brokers[0], b1, s.brokers[2]))
        new_leader = 0 if role == "none" else leader
        m = LeaderAndIsr(1, 0, new_leader, le, BROKERS, 1, ce, mbe)
        yield _case(f"controller_epoch={ce}/{known_ce} max_broker_epoch={mbe}/{broker_epoch} "
                    f"leader_epoch={le}/{replica_epoch} {role}",
                    "002" if ce < known_ce else "003" if mbe < broker_epoch else "000 C",
                    {"known_controller_epoch": known_ce, "broker_epoch": broker_epoch,
                     "replica_leader_epoch": replica_epoch, "replica_role": role,
                     "replica_leader": leader,
                     "request": {"controller_epoch": ce, "max_broker_epoch": mbe, "leader_epoch": le,
                                 "leader": new_leader}},
                    {"decision": _reason(stale_reason(s, cfg, m))})


def max_broker_epoch() -> Iterator[Case]:
    """Seed 003 (``model.actions.controller_elect``, then ``stale_reason``): the controller
    sends every broker the largest broker epoch among the live registrations it read; a
    recipient that registered again after that read (its epoch is larger) refuses."""
    cfg = _config()
    for epochs in permutations((2, 4, 6)):
        for live in _subsets(BROKERS):
            for recipient in live:
                for re_registered in (False, True):
                    s = _cluster(cfg, ar=BROKERS, isr=BROKERS, leader=0, live=live)
                    s = s._replace(zk=s.zk._replace(broker_epochs=epochs, zxid=6))
                    own = 7 if re_registered else epochs[recipient]
                    brokers = tuple(br._replace(broker_epoch=own if b == recipient else epochs[b])
                                    for b, br in enumerate(s.brokers))
                    after = controller_elect(s._replace(brokers=brokers), cfg, live[0])
                    assert after is not None
                    (m,) = [m for m in after.leader_and_isr if m.to == recipient]
                    yield _case(f"epochs={','.join(map(str, epochs))} live={_ids(live)} to={recipient}"
                                + (" re-registered" if re_registered else ""),
                                "003",
                                {"broker_epochs": {str(b): epochs[b] for b in BROKERS}, "live": list(live),
                                 "recipient": recipient, "recipient_broker_epoch": own},
                                {"max_broker_epoch": m.max_broker_epoch,
                                 "decision": "stale_broker_epoch"
                                 if stale_reason(after, cfg, m) == "stale broker epoch" else "accept"})


def quota() -> Iterator[Case]:
    """Seed 001 (``model.quota.token_bucket``): the KIP-599 token bucket, three requests in
    a row against a fresh bucket, for new (strict) and old clients."""
    steps = ((Fraction(0), 1), (Fraction(0), 4), (Fraction(3, 2), 1), (Fraction(3, 2), 4), (Fraction(0), 0))
    for q, samples in ((2, 1), (1, 3)):
        for strict in (True, False):
            for seq in product(steps, repeat=3):
                t, requests = Fraction(0), []
                for delta, n in seq:
                    t += delta
                    requests.append(QuotaRequest(t, n, strict))
                answers = token_bucket(Fraction(q), samples, Fraction(1), requests)
                yield _case(f"Q={q} S={samples} {'new' if strict else 'old'} "
                            + " ".join(f"+{float(d):g}s:{n}" for d, n in seq),
                            "001",
                            {"quota": q, "samples": samples, "window_s": 1, "strict": strict,
                             "requests": [{"time_s": float(r.time_s), "mutations": r.mutations} for r in requests]},
                            {"answers": [{"admitted": a.admitted, "throttle_ms": a.throttle_ms,
                                          "tokens": None if a.tokens is None else float(a.tokens)}
                                         for a in answers]})


def consumer() -> Iterator[Case]:
    """Seed 000 question 7 (``model.reads.consumer_fetch``): a consumer reads only below the
    HW; an offset between the HW and the LEO gets no records, not an error."""
    for leo in range(4):
        for hw in range(leo + 1):
            for offset in range(-1, leo + 2):
                for max_records in (1, 3):
                    got = consumer_fetch(leo, hw, offset, max_records)
                    expected = ({"error": "offset_out_of_range"} if got is None
                                else {"records": [got.start, got.stop]})
                    yield _case(f"leo={leo} hw={hw} offset={offset} max={max_records}", "000 G",
                                {"leo": leo, "hw": hw, "offset": offset, "max_records": max_records},
                                expected)


FAMILIES: dict[str, tuple[Callable[[], Iterator[Case]], str]] = {
    "election": (election, "leader election when brokers come and go: clean, unclean, leaderless"),
    "preferred_election": (preferred, "preferred-replica election"),
    "controlled_shutdown": (controlled_shutdown_cases, "controlled shutdown: leadership and ISR membership move off"),
    "reassignment": (reassignment, "reassignment completes: the switch to RAR"),
    "truncation": (truncation, "a new follower's truncation point under each truncation rule"),
    "hw_advance": (hw_advance, "the leader's high watermark: min LEO of the ISR, never backwards"),
    "isr": (isr, "ISR shrink and expand eligibility"),
    "control": (control, "LeaderAndISR acceptance: controller, broker and leader epochs"),
    "max_broker_epoch": (max_broker_epoch, "the max broker epoch a controller sends, and who it fences"),
    "quota": (quota, "the KIP-599 token bucket of the controller-mutation quota"),
    "consumer_fetch": (consumer, "a consumer's fetch between the HW and the LEO"),
}


def generate() -> dict[str, dict[str, Any]]:
    """Every family's document: ``{"format", "family", "description", "cases"}``."""
    return {name: {"format": FORMAT, "family": name, "description": text, "cases": list(cases())}
            for name, (cases, text) in FAMILIES.items()}


def write(out: str | Path) -> dict[str, int]:
    """Write ``<family>.json`` per family and ``index.json`` into ``out``; returns the case
    count per family.  The JSON is sorted and indented, so a diff of two runs is empty."""
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    counts = {}
    for name, doc in generate().items():
        (directory / f"{name}.json").write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        counts[name] = len(doc["cases"])
    index = {"format": FORMAT, "families": {n: {"file": f"{n}.json", "cases": c} for n, c in counts.items()}}
    (directory / "index.json").write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    return counts
