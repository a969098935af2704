"""Trace mutations: small edits to a conforming run that a correct judge must notice.

Each mutation takes one run's events in causal order and returns a mutated copy that is
still a *valid* trace (schema-valid, per-node seq and Lamport clock consistent), so it is
the judge -- not the validator -- that has to reject it; or ``None`` when the run offers no
place for it (e.g. no leader change to make a stale leader commit after).  Used by the
mutation tests of the conformance job, which show the judge is not blind.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable

from conformance.spark.order import Event
from model.registry import REPLAYED

Mutation = Callable[[list[Event], random.Random], list[Event] | None]


def _clean(events: list[Event]) -> list[Event]:
    return [{k: v for k, v in copy.deepcopy(e).items() if not k.startswith("_")} for e in events]


def _replayed(events: list[Event]) -> list[int]:
    return [i for i, e in enumerate(events) if e["kind"] in REPLAYED]


def _renumber(events: list[Event]) -> list[Event]:
    """Re-derive seq (0, 1, ...) and a strictly increasing clock per node, in list order."""
    seq: dict[int, int] = {}
    clock: dict[int, int] = {}
    for e in events:
        n = e["node"]
        e["seq"] = seq.get(n, 0)
        seq[n] = e["seq"] + 1
        e["clock"] = max(e["clock"], clock.get(n, 0) + 1)
        clock[n] = e["clock"]
    return events


def drop(events: list[Event], rnd: random.Random) -> list[Event] | None:
    """Remove one replayed event (a step the implementation did not take)."""
    ev = _clean(events)
    idx = _replayed(ev)
    if not idx:
        return None
    del ev[rnd.choice(idx)]
    return _renumber(ev)


def duplicate(events: list[Event], rnd: random.Random) -> list[Event] | None:
    """Take one replayed step twice."""
    ev = _clean(events)
    idx = [i for i in _replayed(ev) if ev[i]["kind"] in ("produce", "receive_fetch", "elect_leader")]
    if not idx:
        return None
    i = rnd.choice(idx)
    ev.insert(i + 1, copy.deepcopy(ev[i]))
    if ev[i].get("zxid") is not None:
        ev[i + 1]["zxid"] = ev[i]["zxid"] + 1
    return _renumber(ev)


def swap(events: list[Event], rnd: random.Random) -> list[Event] | None:
    """Exchange two consecutive steps of one node that are of different kinds."""
    ev = _clean(events)
    pairs = []
    last: dict[int, int] = {}
    for i in _replayed(ev):
        n = ev[i]["node"]
        if n in last and ev[last[n]]["kind"] != ev[i]["kind"]:
            pairs.append((last[n], i))
        last[n] = i
    if not pairs:
        return None
    a, b = rnd.choice(pairs)
    for f in ("kind", "topic", "partition", "params", "post"):
        ev[a][f], ev[b][f] = ev[b][f], ev[a][f]
    return _renumber(ev)


def bump_epoch(events: list[Event], rnd: random.Random) -> list[Event] | None:
    """Claim a leader epoch one higher than the one in force."""
    ev = _clean(events)
    idx = [i for i in _replayed(ev) if "leader_epoch" in ev[i]["params"]]
    if not idx:
        return None
    e = ev[rnd.choice(idx)]
    e["params"]["leader_epoch"] += 1
    if "leader_epoch" in e["post"]:
        e["post"]["leader_epoch"] += 1
    return ev


def hw_above_leo(events: list[Event], rnd: random.Random) -> list[Event] | None:
    """Observe a high watermark above the log end offset."""
    ev = _clean(events)
    idx = [i for i in _replayed(ev) if "hw" in ev[i]["post"] and "leo" in ev[i]["post"]]
    if not idx:
        return None
    e = ev[rnd.choice(idx)]
    e["post"]["hw"] = e["post"]["leo"] + 1
    return ev


def stale_leader_commits(events: list[Event], rnd: random.Random) -> list[Event] | None:
    """After a new leader is elected, the old leader appends in its old epoch and commits it."""
    ev = _clean(events)
    leaders: dict[tuple, tuple[int, int, int]] = {}  # (topic, partition) -> (node, epoch, leo)
    for i, e in enumerate(ev):
        key = (e["topic"], e["partition"])
        if e["kind"] == "become_leader":
            leaders[key] = (e["node"], e["params"]["leader_epoch"], e["post"]["leo"])
        elif e["kind"] == "produce" and key in leaders and leaders[key][0] == e["node"]:
            leaders[key] = (e["node"], leaders[key][1], e["post"]["leo"])
        elif e["kind"] == "elect_leader" and key in leaders:
            old, epoch, leo = leaders[key]
            if e["params"]["leader"] != old and e["params"]["leader_epoch"] > epoch:
                stale = {**{k: e[k] for k in ("schema", "run", "topic", "partition")},
                         "node": old, "seq": 0, "clock": e["clock"] + 1, "zxid": None, "kind": "produce",
                         "params": {"offset": leo, "value": "stale", "leader_epoch": epoch},
                         "post": {"hw": leo + 1, "leo": leo + 1}}
                ev.insert(i + 1, stale)
                return _renumber(ev)
    return None


def second_controller(events: list[Event], rnd: random.Random) -> list[Event] | None:
    """Another broker becomes controller with the epoch already taken."""
    ev = _clean(events)
    brokers = sorted({e["node"] for e in ev if e["node"] >= 0})
    for i, e in enumerate(ev):
        if e["kind"] == "controller_elect":
            others = [b for b in brokers if b != e["node"]]
            if not others:
                return None
            twin = copy.deepcopy(e)
            twin["node"] = rnd.choice(others)
            twin["zxid"] = (e.get("zxid") or 0) + 1
            ev.insert(i + 1, twin)
            return _renumber(ev)
    return None


MUTATIONS: dict[str, Mutation] = {
    "drop": drop,
    "duplicate": duplicate,
    "swap": swap,
    "bump_epoch": bump_epoch,
    "hw_above_leo": hw_above_leo,
    "stale_leader_commits": stale_leader_commits,
    "second_controller": second_controller,
}
