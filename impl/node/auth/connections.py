"""A broker's connection budget: a cap, timeouts, and log lines that cannot flood.

1,100 idle connections once exhausted a broker's file descriptors (measured): it lost its
ZooKeeper session, fell out of every ISR and wrote 51,849 tracebacks.  Kafka bounds this
with ``max.connections``, ``max.connections.per.ip`` and ``connections.max.idle.ms``; so does
this module, with one rule Kafka gets from its separate inter-broker listener: the last
``broker_reserve`` connections under the cap are kept for brokers, so a flood of client (or
anonymous) connections cannot lock the controller and the followers out.

* :meth:`ConnectionLimiter.admit` -- at the cap (or the per-address cap) a new connection is
  refused: closed at once, counted, and logged at most once per interval.  Within the
  reserve it is admitted *on probation*: it must authenticate as a broker (or the
  operator), or it is closed.
* The server closes a connection that has not authenticated within ``auth_timeout_s``, and
  an authenticated one idle for ``idle_timeout_s``.
* :class:`RateLimitedLog` -- one line per kind per interval, with the count of the lines it
  held back: a flood of bad connections costs a line every few seconds, not one each.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import TextIO


class RateLimitedLog:
    """At most one line per ``kind`` per ``interval_s``; the next says how many it held."""

    def __init__(self, prefix: str, interval_s: float = 5.0, out: TextIO | None = None) -> None:
        self.prefix, self.interval_s = prefix, interval_s
        self.out = out
        self._last: dict[str, float] = {}
        self._held: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()

    def log(self, kind: str, message: str) -> bool:
        """Count one ``kind`` event; print it unless one was printed within the interval."""
        self.counts[kind] += 1
        now = time.monotonic()
        last = self._last.get(kind)
        if last is not None and now - last < self.interval_s:
            self._held[kind] += 1
            return False
        self._last[kind] = now
        held = self._held.pop(kind, 0)
        more = f" (+{held} more since the last line)" if held else ""
        print(f"{self.prefix}: {kind}: {message}{more}", file=self.out or sys.stderr, flush=True)
        return True


@dataclass
class Ticket:
    """One admitted connection: ``probation`` ones must authenticate as a broker."""

    host: str
    probation: bool


@dataclass
class ConnectionLimiter:
    max_connections: int
    max_per_address: int
    broker_reserve: int
    open: int = 0
    refused: int = 0
    by_address: Counter[str] = field(default_factory=Counter)

    def admit(self, host: str) -> Ticket | None:
        """A ticket for a new connection from ``host``, or None: refuse it."""
        if self.open >= self.max_connections or self.by_address[host] >= self.max_per_address:
            self.refused += 1
            return None
        self.open += 1
        self.by_address[host] += 1
        return Ticket(host, probation=self.open > self.max_connections - self.broker_reserve
                      or self.by_address[host] > self.max_per_address - self.broker_reserve)

    def release(self, ticket: Ticket) -> None:
        self.open -= 1
        self.by_address[ticket.host] -= 1
        if self.by_address[ticket.host] <= 0:
            del self.by_address[ticket.host]
