"""The actions of the model: one named function per rule of seed 000, each a guard + effect.

Every action is a pure function ``action(state, cfg, *args) -> State | None``: ``None`` when
its guard does not hold, else the successor state.  ``model.registry`` declares each one
once -- with the function enumerating the arguments worth trying in a state, its design
section, implementation method, trace kind and coverage by every backend -- and holds the
table (``ACTIONS``) and the functions over it (``apply``, ``successors``).

Granularity follows Kafka: steps that are separate RPCs or separate ZooKeeper writes are
separate actions, because the interleavings between them are where the bugs live.  Two
merges are deliberate and sound:

* a controller's conditional ZK write and the sending of the resulting LeaderAndISR
  requests are one step: requests go into the set of requests ever sent, and delivery is a
  separate step that may be delayed, repeated, reordered or never happen -- which covers
  every way the send could have been late or lost;
* seed 000 A 3.1 (read the ISR) and 3.3 (conditional write) are one step: the design asks
  for them to be one ZooKeeper ``multi``, and the write is conditional on the version read.

The actions live in one module per section of the design: ``brokers`` (seed 000 A, D, E and
seed 002), ``topics`` (B), ``commands`` (C), ``reassignment`` (F), ``replication`` (G), ``partitions`` (H) and
``preferred_election``; ``common`` holds the immutable-update helpers and the rules on one
replica that several sections share, and ``arguments`` the enumerators the registry names.
This package re-exports every action, so ``model.actions.<name>`` is the one name to use.
"""

from model.actions.arguments import (
    broker_partitions_args,
    brokers_args,
    creations_args,
    deletions_args,
    elections_args,
    fetch_messages_args,
    forget_stale_requests,
    isr_changes_args,
    partition_adds_args,
    partition_removals_args,
    preferred_elections_args,
    reassign_completions_args,
    reassign_starts_args,
    requests_args,
    shutdowns_args,
    startups_args,
    stop_requests_args,
)
from model.actions.brokers import (
    broker_crash,
    broker_pause,
    broker_reregister,
    broker_restart,
    broker_resume,
    broker_stop,
    controlled_shutdown,
    controller_elect,
    controller_resign,
    elect_leader,
    election_outcomes,
    on_broker_startup,
    write_and_send,
)
from model.actions.commands import (
    become_follower,
    become_leader,
    reject_leader_and_isr,
    stale_reason,
    truncate,
)
from model.actions.common import (
    Step,
    replica,
    set_replica,
    set_znode,
    shutting_down,
)
from model.actions.partitions import (
    add_partitions,
    remove_partitions,
)
from model.actions.preferred_election import (
    preferred_election,
)
from model.actions.reassignment import (
    reassign_complete,
    reassign_start,
    stop_replica,
)
from model.actions.replication import (
    advance_hw,
    expand_isr,
    handle_fetch,
    isr_update_failed,
    produce,
    receive_fetch,
    send_fetch,
    shrink_isr,
)
from model.actions.topics import (
    create_topic,
    delete_topic,
)

__all__ = [
    "Step",
    "replica",
    "set_replica",
    "set_znode",
    "advance_hw",
    "produce",
    "send_fetch",
    "handle_fetch",
    "receive_fetch",
    "shrink_isr",
    "expand_isr",
    "isr_update_failed",
    "stale_reason",
    "become_leader",
    "become_follower",
    "reject_leader_and_isr",
    "truncate",
    "broker_crash",
    "broker_restart",
    "broker_pause",
    "broker_resume",
    "broker_reregister",
    "controller_elect",
    "controller_resign",
    "election_outcomes",
    "write_and_send",
    "elect_leader",
    "on_broker_startup",
    "controlled_shutdown",
    "broker_stop",
    "reassign_start",
    "reassign_complete",
    "stop_replica",
    "delete_topic",
    "create_topic",
    "preferred_election",
    "add_partitions",
    "remove_partitions",
    "shutting_down",
    "brokers_args",
    "broker_partitions_args",
    "isr_changes_args",
    "elections_args",
    "startups_args",
    "shutdowns_args",
    "reassign_starts_args",
    "reassign_completions_args",
    "deletions_args",
    "creations_args",
    "preferred_elections_args",
    "partition_adds_args",
    "partition_removals_args",
    "stop_requests_args",
    "requests_args",
    "fetch_messages_args",
    "forget_stale_requests",
]
