"""The explicit-state model of the ZooKeeper-era Kafka controller and replication protocol.

One model, pure and immutable, feeds every checker (``properties.checkers``: the exhaustive
BFS, the native search, z3, Hypothesis), the trace judge (``conformance.judge``) and the
harness's driver (``impl.harness.drive``).  Its modules, lowest first:

* ``model.config``        -- the named configurations (``design``, ``kip101`` ... ``zombie``) and bounds;
  ``Config``'s knob fields assembled from the sections' knobs
* ``model.state``         -- the immutable state: ZooKeeper, brokers, replicas, messages, ghost history
* ``model.truncation``    -- the one rule the protocol variants disagree on: where a follower truncates
* ``model.preferred``, ``model.quota``, ``model.reads`` -- the preferred replica, the
  controller-mutation quota's token bucket, what a consumer's fetch returns: pure reference rules
* ``model.text``          -- states and records as text
* ``model.actions``       -- one module per design section, each declaring its actions (guard +
  effect), their arguments, registry entries and knobs
* ``model.registry``      -- the table of every action (``ACTIONS``), assembled from the sections,
  and ``apply``, ``successors``, ``explored``: the successor function every search uses
* ``model.scenarios``     -- Kafka's history (KAFKA-1211, KIP-279, KIP-320) as step scripts
* ``model.three_brokers`` -- the three-broker bounds at which that history plays out
* ``model.export``        -- what the model hands out: ``render`` (the prose a counterexample
  is printed in) and ``vectors`` (the rule-level vectors every port runs)
"""
