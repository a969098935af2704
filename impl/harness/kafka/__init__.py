"""Real Apache Kafka (3.9.x, ZooKeeper mode) as an engine of the harness.

* :mod:`.fetch` -- the broker's jars, resolved once with Maven from ``pom.xml`` and cached
  outside the repository (``epochal kafka fetch``).
* :mod:`.config` -- what a broker is started with: server.properties (the two profiles,
  short timeouts), log4j.properties (the logs a trace adapter reads), JAAS (ZooKeeper ACLs).
* :mod:`.cluster` -- :class:`KafkaCluster`: N ``kafka.Kafka`` JVMs on the embedded
  ZooKeeper, their faults (kill -9, SIGSTOP/SIGCONT, SIGTERM, restart), and who is
  controller and leader, read from ZooKeeper.
* :mod:`.wire` -- CreateTopics in Kafka's own wire format, the one request the harness sends.
* :mod:`.relay` -- a Kafka-protocol relay per broker (``KafkaCluster(relay=True)``) that logs
  the inter-broker messages, read by :mod:`impl.harness.frames` (which also describes the
  ZooKeeper-era ones kio lacks).
* :mod:`.paths`, :mod:`.drive` -- ``epochal drive --engine kafka``: paths of model steps the
  harness makes Kafka take (kills, pauses, writes, the relay holding a follower's fetches or
  a LeaderAndIsr) or waits for, each judged in the run's adapted trace (docs/drive.md).

docs/kafka.md says how to run it and what it costs.
"""

from impl.harness.kafka.cluster import Controller, KafkaBroker, KafkaCluster, PartitionState
from impl.harness.kafka.config import DEFAULT_PROFILE, PROFILES, KafkaProfile
from impl.harness.kafka.fetch import DEFAULT_VERSION, KafkaFetchError, KafkaJars, fetch

__all__ = ["DEFAULT_PROFILE", "DEFAULT_VERSION", "PROFILES", "Controller", "KafkaBroker",
           "KafkaCluster", "KafkaFetchError", "KafkaJars", "KafkaProfile", "PartitionState", "fetch"]
