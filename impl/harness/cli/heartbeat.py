"""A progress line every few seconds while long work gives none of its own.

Some work goes quiet for long stretches through no fault of the command: a Spark stage
judging a large corpus, one z3 query, a BMC depth.  :class:`Heartbeat` names the phase the
command last entered and says, every ``every`` seconds on stderr, that it is still in it and
for how long -- so a user (or a CI log) tells slow work from a hang.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from types import TracebackType

EVERY = 10.0
"""Seconds of silence before the heartbeat speaks (and between its lines)."""


class Heartbeat:
    """``with Heartbeat(say) as beat: beat.phase("judging"); ...`` -- between phases, a line
    ``still judging (N s)`` every ``every`` seconds; silent while the phase's own progress
    lines come (each :meth:`phase` or :meth:`said` resets the clock)."""

    def __init__(self, say: Callable[[str], None], every: float = EVERY) -> None:
        self.say, self.every = say, every
        self.name = "starting"
        self.since = self.last = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="heartbeat", daemon=True)

    def phase(self, name: str) -> None:
        self.name, self.since = name, time.monotonic()
        self.said()

    def said(self) -> None:
        """The work spoke for itself: the next line is ``every`` seconds from now."""
        self.last = time.monotonic()

    def _beat(self) -> None:
        while not self._stop.wait(max(0.05, self.last + self.every - time.monotonic())):
            if time.monotonic() - self.last >= self.every:
                self.say(f"still {self.name} ({time.monotonic() - self.since:.0f} s)")
                self.said()

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
