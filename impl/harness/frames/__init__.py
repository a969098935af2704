"""Kafka's frames as the harness observes them, below every relay that forwards them.

* :mod:`.kafka` -- request headers, the inter-broker requests and answers at any version
  Kafka 2.x-3.9 sends, and what is kept of each.
* :mod:`.control` -- the ZooKeeper-era inter-broker messages kio's schemas no longer carry.
"""
