"""The runnable system: brokers, an elected controller, real ZooKeeper, RPC over TCP, logs on disk.

Module map (seed sections in brackets):

* :mod:`impl.node.zk` -- embedded ZooKeeper from the PySpark jars; znode layout; checked multis
* :mod:`impl.node.wire` -- the binary, versioned, length-prefixed RPC protocol and error codes
* :mod:`impl.node.log` -- a replica's segments, HW checkpoint and leader-epoch cache
* :mod:`impl.node.truncation` -- where a new follower truncates: ``hw`` [000 C] or ``kip320``
* :mod:`impl.node.replica` -- one replica's role, HW and ISR bookkeeping [000 C, G]
* :mod:`impl.node.broker` -- the broker process: control requests [C], startup [E],
  replication [G], consumer reads [question 7]
* :mod:`impl.node.admin` -- admin requests on the controller only, forwarding [004], the quota [001]
* :mod:`impl.node.quota` -- the controller-mutation token bucket and its principals [001]
* :mod:`impl.node.controller` -- election [002], failover [D], broker failure [A], topics [B],
  reassignment [F], partitions add/remove [H], preferred election, controlled shutdown
* :mod:`impl.node.client` -- producer, consumer and admin clients routing by metadata
* :mod:`impl.harness.cluster` -- a local cluster of real processes, with fault injection
* :mod:`impl.node.faults` -- network partitions and slow links in the RPC layer, session expiry
* :mod:`impl.harness.chaos` -- ``epochal chaos``: seeded faults and a verdict on acknowledged writes
* :mod:`impl.harness.recordings`, :mod:`impl.harness.demo` -- ``epochal record-traces``, ``epochal demo``
* :mod:`impl.cli.commands` -- ``epochal cluster|topics|quotas|produce|consume|broker``
"""
