"""The protocol's processes: broker, controller, replicas, logs, ZooKeeper access, RPC, clients.

The broker (:mod:`impl.node.broker`) and the controller (:mod:`impl.node.controller`) are
packages with one module per section of the design (seed 000 C/E/G for the broker,
A/B/D/F/H for the controller).  Imports run one way: the broker builds its controller and
its admin service; neither of those imports the broker -- each names what it needs of its
host as a protocol (``ControllerHost``, ``AdminHost``).

This layer imports neither the model nor the properties: it is a second rendering of the
protocol, held to the model by tests (rule-level and trace conformance), never by sharing code.
"""
