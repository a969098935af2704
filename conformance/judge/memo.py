"""The judge's memo: exact reuse of steps already matched.

``conformance.judge.replay.judge`` remembers, per process, which states each matched event
led to from which states: a step seen before is not searched again.
"""

from __future__ import annotations

from typing import Any

from conformance.judge.observation import Event, value_key
from conformance.judge.search import Hypothesis

Broke = tuple[str, str, list[str]]
"""A property every state not assuming an unrecorded step cut short by a kill -9 broke at
a step: its name, the message, those states shown (see ``replay.Speculation``)."""

Recalled = tuple[list[Hypothesis], tuple[int, ...], Broke | None]
"""A remembered step: the states it led to, the model values its produce appended (one per
state), and what it broke (``Broke``) if it did."""

MEMO_STATS = {"hits": 0, "misses": 0}
"""Model events answered from the memo, and searched, in this process."""


MEMO_MAX_NODES = 50_000
"""Distinct state sets remembered per process before the memo starts afresh."""


class _Node:
    """A set of possible states (``hyps``, as the judge keeps them) and the events already
    matched from it: event signature -> (the node it led to, the model values its produce
    appended, one per state, and what that step broke, if it did: ``Broke``)."""

    __slots__ = ("hyps", "next")

    def __init__(self, hyps: list[Hypothesis]) -> None:
        self.hyps = hyps
        self.next: dict[tuple, tuple[_Node, tuple[int, ...], Broke | None]] = {}


class Memo:
    """Nodes of one scope -- configuration, bounds and broker-id mapping, everything
    besides the states and the event that decides a step's outcome -- interned by their
    states, so different traces that reach the same states share what was learnt there.

    Why it is exact: ``advance`` and the property check are pure functions of the states,
    the observation and, for fetched records, which model values each observed value may
    be; ``signature`` keeps all of that (the values as the sets they map to) and nothing
    else of the event that matters to a conforming step.  Only conforming steps are
    remembered: a non-conforming event is always searched, so its report is the plain one."""

    scopes: dict[tuple, Memo] = {}
    nodes_total = 0

    def __init__(self) -> None:
        self.nodes: dict[tuple[Hypothesis, ...], _Node] = {}

    @classmethod
    def scope(cls, config: str, bound: int, limit: int, ids: dict[int, int]) -> Memo:
        key = (config, bound, limit, tuple(sorted(ids.items())))
        memo = cls.scopes.get(key)
        if memo is None:
            memo = cls.scopes[key] = Memo()
        return memo

    def node(self, hyps: list[Hypothesis]) -> _Node:
        key = tuple(hyps)
        n = self.nodes.get(key)
        if n is None:
            if Memo.nodes_total >= MEMO_MAX_NODES:  # start afresh rather than grow without end
                for memo in Memo.scopes.values():
                    memo.nodes.clear()
                Memo.nodes_total = 0
            n = self.nodes[key] = _Node(hyps)
            Memo.nodes_total += 1
        return n

    @classmethod
    def forget_all(cls) -> None:
        """Start every scope afresh (for figures and tests that need a cold memo)."""
        cls.scopes.clear()
        cls.nodes_total = 0


class MemoPath:
    """One judgement's place in its scope's memo: the node of the states it holds.

    ``recall`` answers an event matched before from these states; otherwise the judge
    searches, and says what the event led to: ``learn`` (new states, with what its produce
    appended and what it broke) or ``stay`` (an event that is no model step)."""

    __slots__ = ("memo", "node", "sig")

    def __init__(self, memo: Memo, hyps: list[Hypothesis]) -> None:
        self.memo = memo
        self.node = memo.node(hyps)
        self.sig: tuple | None = None  # the signature of the event being judged

    def recall(self, e: Event, values: dict[Any, set[int]]) -> Recalled | None:
        sig = self.sig = signature(e, values)
        edge = self.node.next.get(sig) if sig is not None else None
        if edge is None:
            MEMO_STATS["misses"] += 1
            return None
        MEMO_STATS["hits"] += 1
        node, produced, broke = edge
        self.node = node
        return node.hyps, produced, broke

    def stay(self) -> None:
        if self.sig is not None:
            self.node.next[self.sig] = (self.node, (), None)

    def learn(self, hyps: list[Hypothesis], produced: tuple[int, ...], broke: Broke | None) -> None:
        child = self.memo.node(hyps)
        if self.sig is not None:
            self.node.next[self.sig] = (child, produced, broke)
        self.node = child


class NoMemo:
    """``MemoPath``'s interface for a judgement without the memo: nothing recalled, nothing kept."""

    __slots__ = ()

    def recall(self, e: Event, values: dict[Any, set[int]]) -> Recalled | None:
        return None

    def stay(self) -> None:
        pass

    def learn(self, hyps: list[Hypothesis], produced: tuple[int, ...], broke: Broke | None) -> None:
        pass


def _freeze(v: Any) -> Any:
    """A hashable stand-in for a JSON value, equal only for values the judge cannot tell
    apart (types kept: 1, 1.0 and True are different observations)."""
    t = type(v)
    if t is int or t is str or v is None:
        return v
    if t is list:
        if _PLAIN.issuperset(map(type, v)):  # (ISR lists: the same tuple, built in C)
            return (list, tuple(v))
        return (list, tuple(_freeze(x) for x in v))
    if t is dict:
        return (dict, tuple((k, _freeze(x)) for k, x in v.items()))
    return (t, v)


_PLAIN = frozenset({int, str, type(None)})  # types whose == is exact (no 1 == 1.0 == True)
_POST_MARK = ("post",)  # never a key (keys are str) nor a frozen value (those are 2-tuples)


def signature(e: Event, values: dict[Any, set[int]]) -> tuple | None:
    """What of an event decides a conforming step: kind, node, params and post -- but of a
    produced value nothing (the model appends a fresh one whatever it is), and of each
    fetched record's value only the model values it may be.  None when an odd value keeps
    it from being hashed (the plain search then runs, and raises or reports as usual).
    Flat (kind, node, key, value, ..., mark, key, value, ...): built for every event, so
    built cheaply.  An event whose params and post hold only ints, strings and nulls (no
    records) -- half of a replication trace -- gets (kind, node, params, post) as item
    tuples instead: an even length, where the flat form's is odd, so the two never meet."""
    params = e.get("params") or {}
    post = e.get("post") or {}
    if "records" not in params and _PLAIN.issuperset(map(type, params.values())) \
            and _PLAIN.issuperset(map(type, post.values())):
        items = tuple(params.items())
        if "value" in params:
            items = tuple(kv for kv in items if kv[0] != "value")
        return (e["kind"], e["node"], items, tuple(post.items()))
    out: list[Any] = [e["kind"], e["node"]]
    try:
        for k, v in (e.get("params") or {}).items():
            t = type(v)
            if k == "value":
                continue
            out.append(k)
            if t is int or t is str or v is None:
                out.append(v)
            elif k == "records" and t is list:
                recs = []
                for r in v:
                    if type(r) is list and len(r) == 3 and type(r[0]) is int and type(r[1]) is int:
                        recs.append((r[0], r[1], frozenset(values.get(value_key(r[2]), ()))))
                    else:
                        recs.append(_freeze(r))  # a frozen list: never equal to the triples above
                out.append(tuple(recs))
            else:
                out.append(_freeze(v))
        out.append(_POST_MARK)
        for k, v in (e.get("post") or {}).items():
            out.append(k)
            t = type(v)
            out.append(v if t is int or t is str or v is None else _freeze(v))
        return tuple(out)
    except TypeError:  # an unhashable record value
        return None
