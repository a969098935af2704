"""Does one OffsetsForLeaderEpoch round ever stop short in a run of the protocol?

    python bench/bench_truncation_rounds.py [--config kip320] [--bounds default|epoch4|records3]

Walks every reachable state of the configuration (breadth-first, no symmetry) and, wherever a
follower is about to truncate against a live leader, compares ``model.truncation.kip279`` (the
rounds, as Kafka's follower asks again) with ``single_round`` (the first answer taken as final).
Prints one progress line per level and a summary: states, truncations compared, and how many
differ.  Exit 1 if any does.  The figures are quoted in ``model.truncation.single_round`` and
docs/benchmarks.md ("Truncation in rounds").
"""

from __future__ import annotations

import argparse
import sys
import time

from model.config import named
from model.registry import successors
from model.state import FOLLOWER, LEADER, TRUNCATING, UP, initial
from model.truncation import kip279, single_round

BOUNDS = {"default": {}, "epoch4": {"max_epoch": 4}, "records3": {"records": 3, "max_epoch": 4}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="kip320")
    ap.add_argument("--bounds", choices=sorted(BOUNDS), default="default")
    args = ap.parse_args(argv)
    try:
        cfg = named(args.config, **BOUNDS[args.bounds])
    except (KeyError, ValueError) as exc:
        print(f"bench_truncation_rounds: error: {exc}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    seen = {initial(cfg)}
    frontier = list(seen)
    compared = differ = depth = 0
    while frontier:
        nxt = []
        for s in frontier:
            for br in s.brokers:
                for p, r in enumerate(br.replicas):
                    if br.status != UP or r.role != FOLLOWER or r.fetch_state != TRUNCATING or r.leader < 0:
                        continue
                    lr = s.brokers[r.leader].replicas[p]
                    if s.brokers[r.leader].status == UP and lr.role == LEADER:
                        compared += 1
                        if kip279(r.log, lr.log, lr.leader_epoch) != single_round(r.log, lr.log, lr.leader_epoch):
                            differ += 1
                            if differ <= 3:
                                print(f"  differs: follower {r.log} leader {lr.log} epoch {lr.leader_epoch}")
            for _, t in successors(s, cfg):
                if t not in seen:
                    seen.add(t)
                    nxt.append(t)
        depth += 1
        frontier = nxt
        print(f"  depth {depth}: {len(seen):,} states, {compared:,} truncations compared "
              f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
    print(f"{cfg.describe()}\n{len(seen):,} states, {compared:,} truncations compared, {differ} differ "
          f"({time.perf_counter() - t0:.0f} s)")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
