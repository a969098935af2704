"""The controller, one module per section of the design (seed 000) it implements.

* :mod:`.failover` -- seed 002 election and seed 000 D, on_controller_failover
* :mod:`.broker_failure` -- A, on_broker_change, and the conditional leader election
  (:func:`choose_leader`, A 3.1-4) every later rule reuses
* :mod:`.topics` -- B, new topics' init_leaders and topic deletion
* :mod:`.reassignment` -- F, the Reassignment Agent (INIT / IN_PROGRESS)
* :mod:`.partitions` -- H, partitions added to and removed from a topic
* :mod:`.preferred_election`, :mod:`.shutdown` -- later Kafka, on A's election (controlled shutdown)
* :mod:`.requests` -- the LeaderAndISR / StopReplica / UpdateMetadata it sends, their fencing
  fields (seeds 002, 003) and the cached UpdateMetadata (seed 004)
* :mod:`.responses` -- what the error codes brokers answer with make the controller re-read
* :mod:`.context` -- what the controller knows, and its fenced ZooKeeper reads and writes
* :mod:`.event_loop` -- :class:`Controller`: one event queue, one thread, every section

Each section is a mixin over :class:`.context.ControllerContext`; a section that uses
another's rule inherits it (partitions added get leaders as new topics do: H builds on B),
so the class lines state the design's dependencies.  The controller runs inside a broker
process but needs of it only an id, a ZooKeeper session, a configuration and a recorder
(:class:`.context.ControllerHost`): it reaches every broker, its own included, over TCP.

The modules follow the model's sections (``model.actions``) where the two meet: ``topics``,
``reassignment``, ``preferred_election``, ``partitions`` and ``shutdown`` share their
names; the model's ``controller`` section is ``failover`` (its election) and
``broker_failure`` (leader elections, startups) here, and its ``brokers``, ``commands`` and
``replication`` sections are the broker's (``impl.node``), not the controller's.
"""

from impl.node.controller.broker_failure import Decision, choose_leader
from impl.node.controller.context import ControllerHost, ControllerMoved, Key
from impl.node.controller.event_loop import Controller
from impl.node.controller.requests import ControllerChannel

__all__ = ["Controller", "ControllerChannel", "ControllerHost", "ControllerMoved", "Decision",
           "Key", "choose_leader"]
