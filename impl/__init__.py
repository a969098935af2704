"""The runnable system: brokers, an elected controller, real ZooKeeper, RPC over TCP, logs on disk.

Module map (seed sections in brackets):

* :mod:`impl.zk` -- embedded ZooKeeper from the PySpark jars; znode layout; checked multis
* :mod:`impl.wire` -- the binary, versioned, length-prefixed RPC protocol and error codes
* :mod:`impl.log` -- a replica's segments, HW checkpoint and leader-epoch cache
* :mod:`impl.truncation` -- where a new follower truncates: ``hw`` [000 C] or ``kip320``
* :mod:`impl.replica` -- one replica's role, HW and ISR bookkeeping [000 C, G]
* :mod:`impl.broker` -- the broker process: control requests [C], startup [E],
  replication [G], consumer reads [question 7]
* :mod:`impl.admin` -- admin requests on the controller only, forwarding [004], the quota [001]
* :mod:`impl.quota` -- the controller-mutation token bucket and its principals [001]
* :mod:`impl.controller` -- election [002], failover [D], broker failure [A], topics [B],
  reassignment [F], partitions add/remove [H], preferred election, controlled shutdown
* :mod:`impl.client` -- producer, consumer and admin clients routing by metadata
* :mod:`impl.cluster` -- a local cluster of real processes, with fault injection
* :mod:`impl.faults` -- network partitions and slow links in the RPC layer, session expiry
* :mod:`impl.chaos` -- ``epochal chaos``: seeded faults and a verdict on acknowledged writes
* :mod:`impl.recordings`, :mod:`impl.demo` -- ``epochal record-traces``, ``epochal demo``
* :mod:`impl.commands` -- ``epochal cluster|topics|quotas|produce|consume|broker``
"""
