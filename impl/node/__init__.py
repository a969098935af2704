"""The protocol's processes: broker, controller, replicas, logs, ZooKeeper access, RPC, clients.

This layer imports neither the model nor the properties: it is a second rendering of the
protocol, held to the model by tests (rule-level and trace conformance), never by sharing code.
"""
