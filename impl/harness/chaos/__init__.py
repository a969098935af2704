"""Chaos runs (``epochal chaos``): a seeded fault schedule against a real cluster, and a
verdict on every acknowledged write (Jepsen-style).

A run starts a :class:`~impl.harness.cluster.LocalCluster` (3-5 brokers on an embedded ZooKeeper),
creates the topic ``chaos`` (3 partitions, replication 3, ``min.insync.replicas`` 2), runs a
producer (acks=all by default; every value unique and, through Epochal's own client, sent
exactly once -- no client retries, so a value found twice is the system's duplicate, not the
client's; ``--client`` puts Kafka's own idempotent producers in its place) and a consumer,
and plays a schedule of faults drawn from the seed:

* ``kill`` / ``kill-controller`` -- ``kill -9`` of a broker (or the leader of a partition)
  or of the controller, restarted after the hold;
* ``pause-leader`` -- SIGSTOP of a partition leader until its ZooKeeper session expires,
  then SIGCONT: the GC pause of seed 000 question 3, a zombie leader;
* ``expire-session`` -- the broker's ZooKeeper session is expired by ZooKeeper (a second
  client closes it) while the broker is frozen for a moment, then it runs on and re-registers;
* ``partition`` -- the link between a leader and one of its followers is cut both ways
  (:mod:`impl.node.faults`, the RPC transport's fault layer);
* ``slow-follower`` -- a follower's fetches to its leader are delayed;
* ``restart`` -- a controlled shutdown (SIGTERM) and a restart;
* ``isolate-leader`` -- both followers cut off from a leader, a burst of writes to it, then
  ``kill -9`` of the leader: with acks=1 the burst is acknowledged by the leader alone and
  lost; with acks=all it is never acknowledged;
* ``lag-then-kill-isr`` -- one follower cut off until it leaves the ISR, a burst committed
  by the rest of the ISR, then the whole ISR killed: with unclean leader election the
  out-of-sync follower is elected and the burst is lost; without it the partition waits.

and, during the faults, topic creation and deletion and partition reassignment.  The
schedule is a pure function of the arguments: the same seed gives the same schedule, and it
is printed first.  Roles (leader of partition p, its first follower, the controller) are
resolved from ZooKeeper when a fault fires.

At the end every fault is healed, the run waits for every ISR to be whole again, and the
verdict is: every acknowledged write is in the final log of its partition exactly once, at
the offset it was acknowledged at, in the order it was acknowledged; every replica in the
ISR holds the same log up to the high watermark; no offset the consumer read as committed
holds another value now; and the run's traces conform to the model (the Spark job of
:mod:`conformance.spark.job`).  Lost writes are labelled with their cause (an unclean election
found in the traces, an acks=1 acknowledgement by a leader that was then killed).

One module per part of a run:

* :mod:`~impl.harness.chaos.schedule` -- the faults drawn from the seed, and what each did;
* :mod:`~impl.harness.chaos.workload` -- the producer, the consumer and the bursts, and the
  ledger of what they saw;
* :mod:`~impl.harness.chaos.clients` -- the client the producer writes and the final logs are
  read back through: Epochal's own, confluent-kafka or kafka-python;
* :mod:`~impl.harness.chaos.roles` -- who leads, follows and controls, read from ZooKeeper;
* :mod:`~impl.harness.chaos.inject` -- injecting each fault and healing it;
* :mod:`~impl.harness.chaos.evidence` -- reading what the cluster left (disk logs, traces);
* :mod:`~impl.harness.chaos.verdict` -- the verdict on acknowledged writes;
* :mod:`~impl.harness.chaos.run` -- one run from start to verdict.

The command line (arguments, progress, the printed report) is :mod:`impl.harness.cli.chaos`.
"""
