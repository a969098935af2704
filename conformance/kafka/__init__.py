"""Real Apache Kafka runs as Epochal traces: the log lines of a ZooKeeper-mode Kafka
cluster (``impl.harness.kafka``) parsed (:mod:`.patterns`) and turned into the events of
``traces/SCHEMA.md`` (:mod:`.adapter`), so that the judge can replay a real Kafka run
against the model.  Reads files and writes traces; starts nothing (docs/kafka.md)."""
