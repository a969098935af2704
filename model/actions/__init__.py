"""The protocol's actions, one module per design section, each action declared once.

A section module holds, for each of its actions, the guard and effect (a pure function
``action(state, cfg, *args) -> State | None``: ``None`` when its guard does not hold, else
the successor state), the enumerator of the arguments worth trying in a state, its registry
``Entry`` (design section, implementation method, trace kind, the judge's view, one coverage
decision per backend) and its ``Knob`` (the ``Config`` bound that limits it, its default,
range, flag and help); it ends with ``ENTRIES`` and ``KNOBS``.  ``SECTIONS`` lists the
modules in the order a search tries their actions: ``model.registry.ACTIONS`` and the knob
fields of ``model.config.Config`` (so the CLI's flags and ``validate``'s range checks) are
assembled from it.

* ``brokers``            -- crashes, restarts, GC pauses, re-registration (seed 000 A, E; 003)
* ``controller``         -- controller election and resignation, leader elections, startups (000 A, D; 002)
* ``shutdown``           -- controlled shutdown and the clean stop after it (000 A)
* ``commands``           -- brokers acting on LeaderAndISR (000 C); forgetting stale requests
* ``replication``        -- produce, fetch, high watermark, ISR changes (000 G)
* ``reassignment``       -- replica reassignment and StopReplica (000 F)
* ``topics``             -- topic deletion and re-creation (000 B)
* ``preferred_election`` -- preferred-replica elections
* ``partitions``         -- partitions added and removed (000 H)
* ``controller_isr``     -- ISR changes proposed by the leader, written by the controller (000 G at IBP 2.7+, KIP-497/841)

Shared by the sections: ``common`` (immutable-update helpers, the rules on one replica),
``entry`` (the shape of an entry, knob and decision), ``views`` (the judge's views and
exported events several actions share); ``model.text`` and ``model.state`` below them.

Granularity follows Kafka: steps that are separate RPCs or separate ZooKeeper writes are
separate actions, because the interleavings between them are where the bugs live.  Two
merges are deliberate and sound:

* a controller's conditional ZK write and the sending of the resulting LeaderAndISR
  requests are one step: requests go into the set of requests ever sent, and delivery is a
  separate step that may be delayed, repeated, reordered or never happen -- which covers
  every way the send could have been late or lost (a StopReplica and a LeaderAndISR to one
  broker alone keep the order they were sent in: ``commands.waits_in_channel``);
* seed 000 A 3.1 (read the ISR) and 3.3 (conditional write) are one step: the design asks
  for them to be one ZooKeeper ``multi``, and the write is conditional on the version read.

This package re-exports every action, so ``model.actions.<name>`` is the one name to use.
Adding an action: its function, arguments, entry and knob in its section's module, and its
entry in that module's ``ENTRIES``; ``tests/model/test_registry.py`` names whatever else is
missing (a backend decision that is not true, the trace vocabulary, ``docs/actions.md``).
"""

from model.actions import (
    brokers,
    commands,
    controller,
    controller_isr,
    partitions,
    reassignment,
    replication,
    shutdown,
    topics,
)
from model.actions import preferred_election as preferred  # the module: its action has its name
from model.actions.brokers import (
    broker_crash,
    broker_pause,
    broker_reregister,
    broker_restart,
    broker_resume,
)
from model.actions.commands import (
    become_follower,
    become_leader,
    forget_stale_requests,
    reject_leader_and_isr,
    repeats_held_decision,
    requests_args,
    stale_reason,
    truncate,
)
from model.actions.common import (
    Step,
    broker_partitions_args,
    brokers_args,
    replica,
    set_replica,
    set_znode,
    shutting_down,
)
from model.actions.controller import (
    controller_elect,
    controller_resign,
    elect_leader,
    election_outcomes,
    on_broker_startup,
    write_and_send,
)
from model.actions.controller_isr import alter_partition, apply_isr, propose_isr
from model.actions.entry import Entry, Knob
from model.actions.partitions import add_partitions, partition_adds_args, remove_partitions
from model.actions.preferred_election import preferred_election
from model.actions.reassignment import reassign_complete, reassign_start, stop_replica
from model.actions.replication import (
    advance_hw,
    expand_isr,
    fetch_messages_args,
    handle_fetch,
    isr_changes_args,
    isr_update_failed,
    produce,
    receive_fetch,
    send_fetch,
    shrink_isr,
)
from model.actions.shutdown import broker_stop, controlled_shutdown
from model.actions.topics import create_topic, delete_topic

SECTIONS = (brokers, controller, shutdown, commands, replication, reassignment, topics, preferred, partitions,
            controller_isr)
"""The section modules, in the order a search tries their actions."""

ENTRIES: tuple[Entry, ...] = tuple(e for section in SECTIONS for e in section.ENTRIES)
KNOBS: tuple[Knob, ...] = tuple(k for section in SECTIONS for k in section.KNOBS)

__all__ = [
    "ENTRIES", "KNOBS", "SECTIONS", "Step", "add_partitions", "advance_hw", "alter_partition", "apply_isr", "propose_isr", "become_follower", "become_leader",
    "broker_crash", "broker_partitions_args", "brokers_args", "fetch_messages_args", "isr_changes_args", "requests_args", "broker_pause", "broker_reregister", "broker_restart", "broker_resume", "broker_stop",
    "controlled_shutdown", "controller_elect", "controller_resign", "create_topic", "delete_topic",
    "elect_leader", "election_outcomes", "expand_isr", "forget_stale_requests", "handle_fetch",
    "isr_update_failed", "on_broker_startup", "partition_adds_args", "preferred_election", "produce",
    "reassign_complete", "reassign_start", "receive_fetch", "reject_leader_and_isr", "remove_partitions", "repeats_held_decision",
    "replica", "send_fetch", "set_replica", "set_znode", "shrink_isr", "shutting_down", "stale_reason",
    "stop_replica", "truncate", "write_and_send",
]
