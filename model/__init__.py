"""The explicit-state model of the ZooKeeper-era Kafka controller and replication protocol.

One model, pure and immutable, feeds every checker (the exhaustive BFS in ``properties.checkers.bfs``,
z3, Hypothesis) and the trace conformance job:

* ``model.config``     -- the named configurations (``design``, ``kip101`` ... ``zombie``) and bounds;
  ``Config``'s knob fields assembled from the sections' knobs
* ``model.state``      -- the immutable state: ZooKeeper, brokers, replicas, messages, ghost history
* ``model.truncation`` -- the one rule the protocol variants disagree on: where a follower truncates
* ``model.actions``    -- one module per design section, each declaring its actions (guard + effect),
  their arguments, registry entries and knobs
* ``model.registry``   -- the table of every action (``ACTIONS``), assembled from the sections, and
  ``apply``, ``successors``, ``explored``
* ``properties.checkers.symmetry``   -- broker-id permutations and the canonical representative of a state
* ``properties.checkers.bfs``    -- breadth-first search with shortest counterexamples
* ``model.export.render``     -- steps and states as the prose a counterexample is printed in
* ``model.scenarios``  -- Kafka's history (KAFKA-1211, KIP-279, KIP-320) as step scripts
* ``conformance.judge.replay``     -- the trace judge: does a recorded run take only steps the model allows?
* ``conformance.judge.diagnose``   -- which other protocol variant a failing trace is a run of
* ``properties.checkers.symbolic``   -- the z3 encoding of the same actions, for proofs and bounded model checking
* ``properties.checkers.fuzz``       -- the Hypothesis state machine over the same actions and properties
* ``impl.harness.cli.check``, ``impl.harness.cli.prove``, ``impl.harness.cli.fuzz`` -- ``epochal check``, ``prove``, ``fuzz``
"""
