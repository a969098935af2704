"""The Python searches several test modules read, run once per test process.

A search's ``Result`` is only read by the tests that ask for it here, so one run proves what
running it again in the next module would: the kip320, design and zombie spaces are each
searched by several modules (the checker's verdicts, the reduction's, the native search's
comparison, the report's drawing).  A test that changes the model (monkeypatch) before it
searches must call ``check`` itself: this cache knows nothing of patches.
"""

from __future__ import annotations

import functools

from model.config import Config
from properties.checkers.bfs import DEFAULT_SEARCH, Result, SearchOptions, check


@functools.cache
def searched(cfg: Config, options: SearchOptions = DEFAULT_SEARCH) -> Result:
    """``check(cfg, options)``, searched once per process for each (configuration, options)."""
    assert options.progress is None, "a search reporting progress is a test's own"
    return check(cfg, options)
