"""Seed 003's motivation measured: controller memory held for UpdateMetadata while one
metadata change fans out to 1, 50 and 200 brokers, with the cached payload (one encoded
body shared by every broker, max broker epoch) and without it (the KIP-380 format: a request
per broker carrying that broker's epoch, encoded into a buffer per broker).

    .venv/bin/python bench/bench_update_metadata.py [--partitions 2000] [--brokers 1 50 200]

What is real: the controller's own ``_send_update_metadata`` builds the requests and hands
them to its per-broker channels.  What is simulated: the brokers.  Each channel is a stand-in
that holds what the real channel would hold while its broker has not yet taken the request
-- the queued request and the frame it writes (``impl.node.wire.request_frame_parts``, the same
function the real channel's connection uses).  That is the memory seed 003 is about: N
copies while N brokers are being sent to.  Measured with ``tracemalloc`` as the memory still
allocated after the fan-out, over the metadata the controller read from ZooKeeper (which
both modes share and is not counted).
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from impl.node import zk as zkl
from impl.node.config import BrokerConfig
from impl.node.controller import Controller
from impl.node.wire import API_VERSIONS, ApiKey, EncodedBody, request_frame_parts
from traces.recorder import TraceRecorder


class HeldChannel:
    """A broker that has not read its request yet: the channel holds the queued request and
    the frame its connection would write."""

    def __init__(self) -> None:
        self.held: list[Any] = []

    def send(self, api: ApiKey, body: dict[str, Any] | EncodedBody, epoch: int | None = None) -> None:
        prefix, encoded = request_frame_parts(api, API_VERSIONS[api], 1, 1, body)
        self.held.append((body, prefix, encoded))

    def close(self) -> None:
        pass


def fan_out(partitions: int, brokers: int, cached: bool, tmp: Path) -> tuple[int, float]:
    """Bytes held after one UpdateMetadata fan-out, and the seconds it took."""
    config = BrokerConfig(broker_id=0, port=1, zookeeper="unused:1", data_dir=tmp,
                          cache_update_metadata=cached)
    host = SimpleNamespace(zk=None, id=0, config=config,
                           recorder=TraceRecorder(tmp / "controller.jsonl", "bench", 0))
    c = Controller(host)  # type: ignore[arg-type]
    c.active, c.epoch = True, 1
    c.live = {b: ("127.0.0.1", 10000 + b, 4096 + b) for b in range(brokers)}
    topics = max(1, partitions // 100)
    c.assignments = {f"topic-{t:04d}": {p: [(t + p + j) % brokers for j in range(min(3, brokers))]
                                        for p in range(partitions // topics)} for t in range(topics)}
    states = {(t, p): (zkl.LeaderAndIsr(reps[0], 3, list(reps), 1), 2)
              for t, parts in c.assignments.items() for p, reps in parts.items()}
    c.channels = {b: HeldChannel() for b in c.live}  # type: ignore[misc]
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    t0 = time.perf_counter()
    c._send_update_metadata(states)
    elapsed = time.perf_counter() - t0
    held = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert all(len(ch.held) == 1 for ch in c.channels.values())  # type: ignore[attr-defined]
    return held, elapsed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--partitions", type=int, default=2000)
    ap.add_argument("--brokers", type=int, nargs="+", default=[1, 50, 200])
    args = ap.parse_args(argv)
    if args.partitions < 1 or any(b < 1 for b in args.brokers):
        print("bench_update_metadata: --partitions and --brokers must be positive", file=sys.stderr)
        return 2
    rows: dict[tuple[bool, int], tuple[int, float]] = {}
    with tempfile.TemporaryDirectory(prefix="epochal-um-") as d:
        for cached in (True, False):
            for n in args.brokers:
                rows[cached, n] = fan_out(args.partitions, n, cached, Path(d))
                held, secs = rows[cached, n]
                mode = "cached (seed 003)" if cached else "per-broker (KIP-380)"
                print(f"{mode:22s} {n:4d} brokers: {held / 2**20:8.2f} MiB held, "
                      f"built in {secs * 1000:7.1f} ms (under tracemalloc)", flush=True)
    lo, hi = min(args.brokers), max(args.brokers)
    print(f"\n{args.partitions} partitions; memory held, {hi} brokers / {lo} broker:")
    for cached in (True, False):
        mode = "cached" if cached else "per-broker"
        ratio = rows[cached, hi][0] / max(1, rows[cached, lo][0])
        print(f"  {mode:10s} x{ratio:.2f}")
    print(f"per-broker / cached at {hi} brokers: x{rows[False, hi][0] / max(1, rows[True, hi][0]):.1f} memory, "
          f"x{rows[False, hi][1] / max(1e-9, rows[True, hi][1]):.1f} time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
