"""Causal order of a run's events, and the split into per-partition groups (SCHEMA.md §4, §8).

Pure Python and independent of Spark, so the rules are testable on their own and the job's
executors run exactly this code.
"""

from __future__ import annotations

import bisect
import heapq
import operator
from collections.abc import Callable, Sequence
from typing import Any

from traces.vocabulary import KINDS, OBSERVES_ZXID

Event = dict[str, Any]
GroupKey = tuple[str | None, int | None]  # (topic, partition); (None, None) for a cluster-only run


_key: Callable[[Event], tuple[int, int, int]] = operator.itemgetter("clock", "node", "seq")
"""An event's Lamport order: (clock, node, seq)."""


def _zxid_key(e: Event) -> tuple[int, int, int, int, int]:
    """ZooKeeper's order: by zxid; at one zxid the write before those that observed it
    (``OBSERVES_ZXID``), then by ``_key``."""
    return (e["zxid"], e["kind"] in OBSERVES_ZXID, *_key(e))


def _source(e: Event) -> tuple[str, int]:
    return (e.get("_file", ""), e.get("_line", 0))


_read_source: Callable[[Event], tuple[str, int]] = operator.itemgetter("_file", "_line")
"""``_source`` of an event read from a file (the job's: each has both)."""


def source_disorder(events: Sequence[Event]) -> set[int]:
    """``id()`` of the events that appear in their node's stream (files by name, lines in
    order) after an event of the same node with an equal or higher seq."""
    out_of_order: set[int] = set()
    highest: dict[int, int] = {}
    try:
        in_source_order = sorted(events, key=_read_source)
    except KeyError:  # events not read from files (a judge's caller's own)
        in_source_order = sorted(events, key=_source)
    for e in in_source_order:
        node = e["node"]
        if node in highest and e["seq"] <= highest[node]:
            out_of_order.add(id(e))
        else:
            highest[node] = e["seq"]
    return out_of_order


def _domain(e: Event) -> GroupKey | None:
    """Whose ZooKeeper order a zxid-carrying event joins: its partition's (None: the cluster's)."""
    kind = KINDS.get(e["kind"])
    return (e["topic"], e["partition"]) if kind is not None and kind.scope == "partition" else None


def _fast_path(events: Sequence[Event]) -> list[Event] | None:
    """The Lamport order, if it already respects program order, zxid order and the answers
    to a previous incarnation's fetches (``_answers_before_restart``; the usual case)."""
    ordered = sorted(events, key=_key)
    last_seq: dict[int, int] = {}
    # (zxid, observed) of the last zxid-carrying event: an observer sorts after a write
    # at the same zxid (``_zxid_key``), so a write may not follow an observer of its zxid
    last_cluster = last_any = (-1, False)
    last_part: dict[GroupKey, tuple[int, bool]] = {}
    for e in ordered:
        if e["seq"] <= last_seq.get(e["node"], -1):
            return None
        last_seq[e["node"]] = e["seq"]
        z = e.get("zxid")
        if z is not None:
            zk = (z, e["kind"] in OBSERVES_ZXID)
            d = _domain(e)
            if d is None:
                if zk < last_any:
                    return None
                last_cluster = zk
            else:
                if zk < last_cluster or zk < last_part.get(d, (-1, False)):
                    return None
                last_part[d] = zk
            last_any = max(last_any, zk)
    for answer, restart in _answers_before_restart(events):
        if _key(events[restart]) < _key(events[answer]):
            return None
    return ordered


RECEIPTS = ("become_leader", "become_follower")
"""Events applying a LeaderAndISR request: they follow the write of the state it carries."""


def _receipts(events: Sequence[Event]) -> list[tuple[int, int]]:
    """(write, receipt) pairs: a broker applying a LeaderAndISR request for partition p at
    zk_version v comes after the ZooKeeper write that made version v of p's state (the
    event of that partition with a zxid and that ``zk_version``, the latest one by clock
    before the receipt: a recreated topic starts its versions again).

    The request carries the sender's clock, so usually the clock alone orders the two; but
    the write may have to wait in the zxid chain behind a write with a larger clock (a
    broker's registration, which the controller reacts to without any clock passing), and
    the receipt must then wait too (chaos seed 1: a follower applied its new leader before
    the registration of that leader)."""
    writers: dict[tuple[Any, Any, int], list[tuple[int, int]]] = {}
    for i, e in enumerate(events):
        v = (e.get("params") or {}).get("zk_version")
        if e.get("zxid") is not None and type(v) is int and e["kind"] not in RECEIPTS:
            writers.setdefault((e.get("topic"), e.get("partition"), v), []).append((e["clock"], i))
    pairs = []
    for i, e in enumerate(events):
        if e["kind"] in RECEIPTS:
            v = (e.get("params") or {}).get("zk_version")
            if type(v) is not int:
                continue
            before = [w for w in writers.get((e.get("topic"), e.get("partition"), v), ()) if w[0] < e["clock"]]
            if before:
                pairs.append((max(before)[1], i))
    return pairs


def _answers_before_restart(events: Sequence[Event]) -> list[tuple[int, int]]:
    """(answer, restart) pairs: a leader's ``handle_fetch`` of a request that follower f
    sent in its incarnation with broker epoch E (``follower_broker_epoch``, which the
    request carries as in KIP-903) comes before f's first ``broker_restart`` whose
    registration zxid is above E -- the next incarnation.

    The model's ``broker_restart`` drops every fetch of the previous incarnation, so any
    handling of one must be placed before the restart.  The clocks alone may place it
    after: the new incarnation has yet to hear from the leader, so its first ``send_fetch``
    can carry a smaller clock than the leader's answer to the old request, and the judge
    then matched that answer with the new request and found none left for the leader's
    answer to it (docs/drive.md, guided run 10: "not enabled in any of the 2 possible model
    states").  An answer without ``follower_broker_epoch`` (an older writer) is ordered by
    its clock alone, as before."""
    restarts: dict[Any, list[tuple[int, int]]] = {}
    for i, e in enumerate(events):
        if e["kind"] == "broker_restart" and type(e.get("zxid")) is int:
            broker = (e.get("params") or {}).get("broker", e["node"])
            restarts.setdefault(broker, []).append((e["zxid"], i))
    if not restarts:
        return []
    for registrations in restarts.values():
        registrations.sort()
    pairs = []
    for i, e in enumerate(events):
        if e["kind"] != "handle_fetch":
            continue
        params = e.get("params") or {}
        epoch, registrations = params.get("follower_broker_epoch"), restarts.get(params.get("follower"))
        if type(epoch) is not int or registrations is None:
            continue
        k = bisect.bisect_right(registrations, epoch, key=lambda r: r[0])
        if k < len(registrations):
            pairs.append((i, registrations[k][1]))
    return pairs


def causal_order(events: Sequence[Event]) -> tuple[list[Event], set[int]]:
    """Order one run's events causally; returns (ordered events, ``id()`` of the events
    taken despite a cycle).

    Predecessors of an event: the previous event of its node by seq, and the previous
    zxid-carrying event by ``_zxid_key`` among the cluster's events and its own partition's
    (ZooKeeper's order between two partitions' writes says nothing about causality, and a
    node's clock may trail the zxid order of an unrelated write; an event that observed a
    write comes after it even when its clock is lower); for a
    broker applying a LeaderAndISR request, the write of the state it carries
    (``_receipts``); for a follower's restart, the leader's answers to its previous
    incarnation's fetches (``_answers_before_restart``).  Among ready events the smallest
    (clock, node, seq) goes first.  Duplicated events (same node and seq) stay adjacent.
    """
    fast = _fast_path(events)
    if fast is not None:
        return fast, set()
    by_zxid = sorted((i for i, e in enumerate(events) if e.get("zxid") is not None),
                     key=lambda i: _zxid_key(events[i]))
    return _take_ready(events, _successors(events, by_zxid), by_zxid)


def _successors(events: Sequence[Event], by_zxid: list[int]) -> list[list[int]]:
    """The causal edges of ``causal_order`` (its docstring lists them): the events that come
    after each event, by index; ``by_zxid`` is the zxid-carrying events in zxid order."""
    succ: list[list[int]] = [[] for _ in events]

    def chain(order: list[int]) -> None:
        for a, b in zip(order, order[1:], strict=False):
            succ[a].append(b)

    by_node: dict[int, list[int]] = {}
    for i, e in enumerate(events):
        by_node.setdefault(e["node"], []).append(i)
    for idx in by_node.values():
        chain(sorted(idx, key=lambda i: (events[i]["seq"], _source(events[i]))))
    cluster = [i for i in by_zxid if _domain(events[i]) is None]
    chain(cluster)
    domains: dict[GroupKey, list[int]] = {}
    for i in by_zxid:
        d = _domain(events[i])
        if d is not None:
            domains.setdefault(d, []).append(i)
    for own in domains.values():
        # the partition's writes in zxid order, each after the cluster's earlier writes and
        # before its later ones (cluster-to-cluster edges are chained once, above)
        merged = sorted(cluster + own, key=lambda i: _zxid_key(events[i]))
        for a, b in zip(merged, merged[1:], strict=False):
            if _domain(events[a]) is not None or _domain(events[b]) is not None:
                succ[a].append(b)
    for a, b in [*_receipts(events), *_answers_before_restart(events)]:
        succ[a].append(b)
    return succ


def _take_ready(events: Sequence[Event], succ: list[list[int]], by_zxid: list[int]) -> tuple[list[Event], set[int]]:
    """The events in an order that respects ``succ``, the smallest (clock, node, seq) of the
    ready ones first; a cycle is broken by ZooKeeper's order.  Returns ``causal_order``'s answer."""
    n = len(events)
    indeg = [0] * n
    for after in succ:
        for b in after:
            indeg[b] += 1
    heap = [(*_key(events[i]), i) for i in range(n) if indeg[i] == 0]
    heapq.heapify(heap)
    taken = [False] * n
    cursor = 0
    ordered: list[Event] = []
    forced: set[int] = set()
    while len(ordered) < n:
        if heap:
            i = heapq.heappop(heap)[-1]
            if taken[i]:
                continue
        else:
            # A cycle mixes program order with zxid order (a node that recorded two
            # ZooKeeper writes made by different threads in the opposite order of their
            # zxids; or a leader that answered a previous incarnation's fetch after a write
            # that follows the restart).  ZooKeeper's order is the truth about writes: take
            # its next write.
            while taken[by_zxid[cursor]]:
                cursor += 1
            i = by_zxid[cursor]
            forced.add(id(events[i]))
        taken[i] = True
        ordered.append(events[i])
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0 and not taken[j]:
                heapq.heappush(heap, (*_key(events[j]), j))
    return ordered, forced


def split_groups(ordered: Sequence[Event]) -> dict[GroupKey, list[Event]]:
    """Per (topic, partition) event lists; cluster-scope events go to every group of the run.

    The same event dict is shared by the groups it goes to: judges must not mutate events.
    """
    scopes = [_SCOPES[e["kind"]] for e in ordered]
    partitions = sorted({(e["topic"], e["partition"]) for e, scope in zip(ordered, scopes, strict=True)
                         if scope == "partition"})
    keys: list[GroupKey] = partitions if partitions else [(None, None)]
    groups: dict[GroupKey, list[Event]] = {k: [] for k in keys}
    for e, scope in zip(ordered, scopes, strict=True):
        if scope == "cluster":
            for g in groups.values():
                g.append(e)
        else:
            groups[(e["topic"], e["partition"])].append(e)
    return groups


_SCOPES = {name: kind.scope for name, kind in KINDS.items()}
