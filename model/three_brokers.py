"""The three-broker bounds at which Kafka's replication history plays out.

At two brokers every fix after the design holds: the bugs KIP-279 and KIP-320 answered need
a third replica -- one follower left behind in an older epoch while the other two change
leader.  These are the smallest bounds in which both scripted stories of
``model.scenarios`` run to their violation (tests/properties/test_history.py plays each one with
every bound lowered by one and sees it blocked):

* ``records=2``: a diverging replica has to hold a record the leader does not (a@1 against
  b@2); with one record there is nothing to diverge on;
* ``max_epoch=3`` and ``max_crashes=2``: two leader changes (epoch 1 -> 2 -> 3), each needing
  its leader gone from ZooKeeper -- and the first leader is also the controller, so both
  stories include a controller failover (there is no bound on those: a controller crash
  always leads to one);
* ``min_insync=1``: the default; raising it to 2 keeps both stories (every write in them has
  two in-sync replicas) but barely shrinks the space (about 4 % at depth 14), so it is left
  at the default to keep the bounds the named configurations' own.

Everything else is the named configurations' default.  Both stories break their
configurations here, and the exhaustive search finds both by itself: kip101's in 17 steps
(3,933,056 states; the Python checker or ``--native``), kip279's in 20 (10,650,117 states;
the native search of ``properties.checkers.native``), both in tests/properties/test_history.py.  And kip320
holds in every reachable state at these bounds: 19,554,759 states with the partial-order
reduction of ``properties.checkers.reduction`` (about a minute natively on both cores), 38,097,622
without it (about three) -- tests/properties/test_history.py, docs/checking.md "Three-broker searches".
"""

from __future__ import annotations

from model.config import Config, named

THREE_BROKERS: dict[str, int] = {"brokers": 3, "records": 2, "max_epoch": 3, "max_crashes": 2, "min_insync": 1}


def three_brokers(name: str, **overrides: object) -> Config:
    """Named configuration ``name`` at the three-broker bounds (``overrides`` on top)."""
    return named(name, **{**THREE_BROKERS, **overrides})
