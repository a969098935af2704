"""What a search may spend: a time and memory budget, and how memory is measured.

The exhaustive checker (``properties.checkers.bfs``) looks at its ``Budget`` between chunks of a
level, so a search larger than the machine stops cleanly and says how deep it checked,
instead of being killed by the kernel with nothing reported.
"""

from __future__ import annotations

import os
import sys
import time


def _pss(pid: int) -> int | None:
    """The proportional set size of process ``pid`` in bytes: its private memory plus its
    share of pages it shares (a forked worker shares the level it reads with the search, so
    adding up resident sizes would count those pages twice).  None where /proc cannot say."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def search_memory(pool=None) -> int:
    """Bytes of memory the search uses now: its own process and its worker processes (by
    proportional set size); where /proc has no ``smaps_rollup``, this process's resident
    size, and without /proc its peak resident size."""
    own = _pss(os.getpid())
    if own is None:
        try:
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            import resource

            # no /proc at all (macOS): the peak resident size, in bytes there
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            return peak if sys.platform == "darwin" else peak * 1024
    workers = [] if pool is None else [p.pid for p in getattr(pool, "_pool", []) if p.pid]
    return own + sum(_pss(pid) or 0 for pid in workers)


def size_text(n: int) -> str:
    """Bytes as a person reads them: ``734 MB``, ``16.2 GB``."""
    return f"{n / 2**30:.1f} GB" if n >= 2**30 else f"{n / 2**20:.0f} MB"


def machine_memory() -> int | None:
    """Bytes of physical memory on this machine, or None where it cannot be read."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError):
        return None


class Budget:
    """Time and memory limits, looked at between chunks of a level.  Memory is read at most
    every ``MEMORY_EVERY`` seconds (reading it walks the page tables of each process)."""

    MEMORY_EVERY = 1.0

    def __init__(self, started: float, max_seconds: float | None, max_memory: int | None) -> None:
        self.deadline = None if max_seconds is None else started + max_seconds
        self.max_memory = max_memory
        self.peak = 0
        self.used = 0  # the latest measurement
        self.next_look = 0.0

    def short(self, share: float) -> bool:
        """At least ``share`` of the memory budget has been used (the checker then packs
        new levels: ``properties.checkers.bfs``, "Packed levels")."""
        return self.max_memory is not None and self.peak >= self.max_memory * share

    def exceeded(self, pool=None, force: bool = False) -> str | None:
        now = time.perf_counter()
        if self.deadline is not None and now >= self.deadline:
            return "max_seconds"
        if self.max_memory is not None and (force or now >= self.next_look):
            self.next_look = now + self.MEMORY_EVERY
            self.used = used = search_memory(pool)
            self.peak = max(self.peak, used)
            if used >= self.max_memory:
                return "max_memory"
        return None
