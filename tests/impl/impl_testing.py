"""Helpers shared by the implementation's integration tests."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def wait_until(cond: Callable[[], Any], timeout: float, what: str, every: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(every)


def trace_events(data_dir: Path) -> list[dict[str, Any]]:
    events = []
    for f in sorted((data_dir / "traces").glob("*.jsonl")):
        for line in f.read_text().splitlines():
            if line.strip():
                events.append(json.loads(line))
    return events
