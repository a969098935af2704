"""The broker, one module per section of the design (seed 000) it implements.

* :mod:`.control` -- C: acting on LeaderAndISR and StopReplica; fencing by controller epoch
  (seed 002) and broker epoch (seed 003); the UpdateMetadata cache (seed 004)
* :mod:`.startup` -- E: startup recovery from ZooKeeper, and the registration whose czxid is
  the broker epoch (seed 003)
* :mod:`.replication_leader` -- G at the leader: on_ReplicaFetchRequest, HW, maybe_change_ISR
* :mod:`.replication_follower` -- G at the follower: the ReplicaFetcherThread and truncation
* :mod:`.clients` -- produce, and consumer reads up to the HW (question 7)
* :mod:`.kafka_listener` -- the same for Kafka's own clients, in Kafka's protocol (:mod:`impl.node.kafka`)
* :mod:`.shutdown` -- controlled shutdown (later Kafka; section A ahead of the failure)
* :mod:`.core` -- the state they share; :mod:`.server` -- the process that serves them

Each section is a mixin over :class:`.core.BrokerCore`; :class:`Broker` combines them.
``python -m impl.node.broker`` runs one broker (:func:`main`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["Broker", "RequestError", "main"]

# Loaded on first use, not with the package: ``python -m impl.node.broker`` imports the package
# before its ``__main__``, which must run first (it keeps an import out of the broker process).
_EXPORTS = {
    "Broker": "impl.node.broker.server",
    "main": "impl.node.broker.server",
    "RequestError": "impl.node.broker.core",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_EXPORTS[name]), name)
