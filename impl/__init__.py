"""The runnable system and what runs it, in two layers that never mix:

* :mod:`impl.node` -- the system under test, at the bottom: brokers, an elected controller,
  real ZooKeeper, RPC over TCP, logs on disk.  It imports nothing of the harness, the
  checkers or the model.
* :mod:`impl.harness` -- at the top: local clusters of real processes, faults, chaos, the
  model-driven driver, recordings, the HTML reports and the ``epochal`` command.

Module map (seed sections in brackets):

* :mod:`impl.node.zk` -- embedded ZooKeeper from the PySpark jars; znode layout; checked multis
* :mod:`impl.node.wire` -- the binary, versioned, length-prefixed RPC protocol and error codes
* :mod:`impl.node.log` -- a replica's segments, HW checkpoint and leader-epoch cache
* :mod:`impl.node.truncation` -- where a new follower truncates: ``hw`` [000 C] or ``kip320``
* :mod:`impl.node.topic_identity` -- which incarnation of a topic a request and a log belong to [question 5]
* :mod:`impl.node.replica` -- one replica's role, HW and ISR bookkeeping [000 C, G]
* :mod:`impl.node.fencing` -- which control requests, LeaderAndISR entries and fetches a broker refuses [000 C, G, 002, 003]
* :mod:`impl.node.limits` -- record, fetch-response and frame size limits, held consistent (KIP-74)
* :mod:`impl.node.broker` -- the broker process (``python -m impl.node.broker``), one module
  per section: ``control`` [C, 002/003 fencing, 004 metadata], ``startup`` [E, 003 epoch],
  ``replication_leader`` / ``replication_follower`` [G], ``clients`` [question 7],
  ``shutdown`` (controlled shutdown); ``core`` holds the state they share
* :mod:`impl.node.controller` -- one module per section: ``failover`` [002, D],
  ``broker_failure`` [A], ``topics`` [B], ``reassignment`` [F], ``partitions`` [H],
  ``preferred_election``, ``controlled_shutdown``, ``requests`` (what it sends; cached
  UpdateMetadata [003, 004]), ``context`` (its view of ZooKeeper), ``event_loop``
* :mod:`impl.node.admin` -- admin requests: routing to the controller, forwarding [004]
* :mod:`impl.node.admin_writes` -- admin writes on the active controller, under the quota [001]
* :mod:`impl.node.quota` -- the controller-mutation token bucket and its principals [001]
* :mod:`impl.node.client` -- producer, consumer and admin clients routing by metadata
* :mod:`impl.harness.cluster` -- a local cluster of real processes, with fault injection
* :mod:`impl.node.faults` -- network partitions and slow links in the RPC layer, session expiry
* :mod:`impl.harness.chaos` -- ``epochal chaos``: seeded faults and a verdict on acknowledged writes
* :mod:`impl.harness.recordings`, :mod:`impl.harness.demo` -- ``epochal record-traces``, ``epochal demo``
* :mod:`impl.harness.report` -- the HTML reports: space-time diagrams of model runs and traces
* :mod:`impl.harness.cli` -- the ``epochal`` command, one module per subcommand
"""
