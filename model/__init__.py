"""The explicit-state model of the ZooKeeper-era Kafka controller and replication protocol.

One model, pure and immutable, feeds every checker (the exhaustive BFS in ``model.checker``,
z3, Hypothesis) and the trace conformance job:

* ``model.config``     -- the named configurations (``design``, ``kip101`` ... ``zombie``) and bounds
* ``model.state``      -- the immutable state: ZooKeeper, brokers, replicas, messages, ghost history
* ``model.truncation`` -- the one rule the protocol variants disagree on: where a follower truncates
* ``model.actions``    -- one named action (guard + effect) per rule of seed 000
* ``model.symmetry``   -- broker-id permutations and the canonical representative of a state
* ``model.checker``    -- breadth-first search with shortest counterexamples
"""
