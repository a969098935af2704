"""Helpers shared by the implementation's integration tests."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from impl.node import zk as zkl


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


def controller_and_two_others(zk: Any, brokers: Iterable[int]) -> tuple[int, int, int]:
    """The controller's id and the two lowest other broker ids: a test that kills a broker
    picks one that is not the controller, so no controller failover joins the story."""
    ctrl = int(zkl.decode(zk.get(zkl.CONTROLLER)[0])["brokerid"])
    first, second = [b for b in sorted(brokers) if b != ctrl][:2]
    return ctrl, first, second
