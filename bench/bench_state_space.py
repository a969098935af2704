"""Where a search's states come from: how many distinct states remain when a part of the
state is forgotten, measured on the states the reduced search reaches within ``--depth``
steps.

    .venv/bin/python bench/bench_state_space.py                       # three-broker kip320, 14 steps
    .venv/bin/python bench/bench_state_space.py --max-crashes 1 --depth 30
    .venv/bin/python bench/bench_state_space.py --config zombie --two-brokers

When a space is larger than it should be, this says which part of the state makes it so.  A
reduction can only merge states that differ in a part no property reads, so it asks, part
by part, how much merging there is to win; and a part that merges far more than the
protocol explains points at the model.  (Session 19, ``--max-crashes 1 --depth 30`` on the
model before and after its fix: forgetting the LeaderAndISR requests merged x2.52 and all
messages x15.85, with up to 11 requests in flight to one broker -- the controller re-sending
its startup request after every ISR change, a rule the model had wrong; after the fix x1.05,
x6.76 and 2.  docs/checking.md, "Three-broker searches".)  For each projection it prints the number of
distinct canonical states left and the factor by which forgetting that part merges states.
``messages`` are the fetch requests and responses, the LeaderAndISR requests and the
StopReplica requests in flight; ``ghost`` is the history only properties read; ``follower
LEOs`` is the leader's record of each follower's fetch offset.  What survives every
projection (``core``) is the protocol's own state: ZooKeeper, roles, epochs, logs and HWs.
A last line gives the most LeaderAndISR requests in flight to one broker in any state reached.

The search is the checker's (symmetry plus ``properties.checkers.reduction``), held in memory by this
script so that each reached state can be projected.  Progress goes to stderr, one line per
level.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

from model.config import Config, named
from model.state import State, initial
from model.three_brokers import three_brokers
from properties.checkers.bfs import search_key
from properties.checkers.reduction import reduced_successors, visible
from properties.checkers.symmetry import canonical


def reach(cfg: Config, depth: int, expand: Callable[[State, Config], list] = reduced_successors,
          log: Callable[[str], None] = lambda _: None) -> list[State]:
    """Every search key (normal form, canonical) reached within ``depth`` steps."""
    root = search_key(initial(cfg), cfg, True, True)
    seen, level, out = {root}, [root], [root]
    started = time.perf_counter()
    for d in range(1, depth + 1):
        nxt = []
        for s in level:
            for _, t in expand(s, cfg):
                k = search_key(t, cfg, True, True)
                if k not in seen:
                    seen.add(k)
                    nxt.append(k)
        if not nxt:
            break
        out.extend(nxt)
        level = nxt
        log(f"  level {d}: {len(nxt):,} new, {len(out):,} in all, {time.perf_counter() - started:.1f} s")
    return out


def _no_follower_leos(s: State) -> State:
    return s._replace(brokers=tuple(
        b._replace(replicas=tuple(r._replace(follower_leo=()) for r in b.replicas)) for b in s.brokers))


def projections(cfg: Config) -> list[tuple[str, Callable[[State], State]]]:
    ghost = initial(cfg).ghost
    return [
        ("fetch messages", lambda s: s._replace(fetches=())),
        ("LeaderAndISR requests", lambda s: s._replace(leader_and_isr=())),
        ("messages", visible),
        ("ghost", lambda s: s._replace(ghost=ghost)),
        ("follower LEOs", _no_follower_leos),
        ("core (all of the above)", lambda s: _no_follower_leos(visible(s)._replace(ghost=ghost))),
    ]


def breakdown(cfg: Config, states: list[State]) -> list[tuple[str, int]]:
    """(projection, distinct canonical states left) for each projection."""
    return [(name, len({canonical(f(s)) for s in states})) for name, f in projections(cfg)]


def most_requests_to_one_broker(states: list[State]) -> int:
    """The largest number of LeaderAndISR requests in flight to a single broker."""
    return max((max((sum(m.to == b for m in s.leader_and_isr) for b in range(len(s.brokers))), default=0)
                for s in states), default=0)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="kip320")
    ap.add_argument("--depth", type=int, default=14)
    ap.add_argument("--two-brokers", action="store_true", help="the named defaults instead of three brokers")
    ap.add_argument("--max-crashes", type=int, help="override the configuration's crash bound")
    args = ap.parse_args(argv)
    bounds = {} if args.max_crashes is None else {"max_crashes": args.max_crashes}
    try:
        cfg = named(args.config, **bounds) if args.two_brokers else three_brokers(args.config, **bounds)
    except KeyError as exc:
        ap.error(exc.args[0])
    except ValueError as exc:
        ap.error(str(exc))
    if args.depth < 0:
        ap.error("--depth must be >= 0")
    print(f"{cfg.describe()}, within {args.depth} steps")
    states = reach(cfg, args.depth, log=lambda m: print(m, file=sys.stderr, flush=True))
    print(f"{'forgotten':26s} {'states':>11s}  merge")
    print(f"{'nothing':26s} {len(states):>11,d}  x1.00")
    for name, n in breakdown(cfg, states):
        print(f"{name:26s} {n:>11,d}  x{len(states) / n:.2f}")
    print(f"most LeaderAndISR requests in flight to one broker: {most_requests_to_one_broker(states)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
