"""Event kinds of the trace format: each kind's name, scope and meaning.

The format knows no model: which model action replays a kind is declared once, by the
action's registry entry (``Entry.trace``), and ``model.registry.REPLAYED`` derives the kind
-> action table from those entries; a kind no action traces is informational (validated and
ordered, not replayed).  ``tests/model/test_registry.py`` and
``tests/traces/test_trace_schema_doc.py`` hold this table, the registry and
``traces/SCHEMA.md`` together.
"""

from __future__ import annotations

from typing import NamedTuple


class Kind(NamedTuple):
    name: str
    scope: str  # "cluster" (affects every partition) or "partition"
    meaning: str


KINDS: dict[str, Kind] = {
    k.name: k
    for k in [
        # -- broker lifecycle and ZooKeeper sessions (cluster-level) --
        Kind("broker_crash", "cluster", "broker process died (kill -9); its ZK session ends"),
        Kind("broker_restart", "cluster", "broker started and registered /brokers/ids/N (new broker epoch = czxid); startup recovery from ZK (seed 000 E)"),
        Kind("broker_pause", "cluster", "broker frozen (SIGSTOP / GC pause); its ZK session expires while it is frozen"),
        Kind("broker_resume", "cluster", "a paused broker runs again, still believing its old state"),
        Kind("broker_expire", "cluster", "a running broker's ZK session expired (not a crash, not a pause): it keeps running, unregistered"),
        Kind("broker_stop", "cluster", "broker exited cleanly after its controlled shutdown (SIGTERM)"),
        Kind("broker_reregister", "cluster", "a resumed/expired broker opened a new ZK session and re-created /brokers/ids/N"),
        # -- controller (cluster-level) --
        Kind("controller_elect", "cluster", "broker created /controller and bumped /controller_epoch (seed 002); sends INIT LeaderAndISR"),
        Kind("controller_resign", "cluster", "a broker stopped acting as controller (its epoch is stale or it lost its session)"),
        # -- controller per partition --
        Kind("elect_leader", "partition", "controller wrote leader/leader_epoch/isr conditionally on zk_version (seed 000 A 3.3 / init_leaders) and sent LeaderAndISR"),
        Kind("reassignment", "partition", "reassignment agent state change (seed 000 F: INIT / IN_PROGRESS / DONE); IN_PROGRESS is replayed as reassign_start (AR := AR+RAR written, LeaderAndISR sent to RAR), the others are informational (DONE follows the elect_leader with reason reassign, replayed as reassign_complete)"),
        # -- broker acting on controller requests (seed 000 C) --
        Kind("become_leader", "partition", "broker accepted a LeaderAndISR naming it leader"),
        Kind("become_follower", "partition", "broker accepted a LeaderAndISR naming another leader; truncation per configuration"),
        Kind("reject_leader_and_isr", "partition", "broker refused a LeaderAndISR with a stale controller epoch or leader epoch"),
        Kind("truncate", "partition", "follower truncated its log after an epoch lookup at the leader (KIP-101/279/320)"),
        # -- replication (seed 000 G) --
        Kind("produce", "partition", "leader appended a client record in its current leader epoch"),
        Kind("send_fetch", "partition", "follower sent a fetch request from its LEO"),
        Kind("handle_fetch", "partition", "leader recorded the follower's LEO, advanced HW = min LEO of ISR, answered with records and HW"),
        Kind("receive_fetch", "partition", "follower appended the fetched records and took the leader's HW"),
        Kind("shrink_isr", "partition", "leader removed a lagging follower from the ISR by a conditional ZK update"),
        Kind("expand_isr", "partition", "leader added a caught-up follower to the ISR by a conditional ZK update"),
        Kind("isr_update_failed", "partition", "leader's conditional ISR update failed (zk_version moved): it stops acting as leader"),
        # -- ISR changes through the controller (AlterPartition, KIP-497; inter-broker protocol 2.7+) --
        Kind("propose_isr", "partition", "leader sent the controller an AlterPartition proposing an ISR, with its leader epoch and the zk_version it knows"),
        Kind("alter_partition", "partition", "controller validated a leader's AlterPartition and wrote the ISR conditionally on zk_version (or refused it: error) and answered"),
        Kind("apply_isr", "partition", "leader took the ISR and zk_version of the controller's AlterPartition answer"),
        # -- informational (recorded, validated, ordered, not replayed), or replayed only in part (the controller's StopReplica; seed 000 B, H) --
        Kind("stop_replica", "partition", "broker stopped (and possibly deleted) a replica on StopReplica; the controller's (reason stop_replica: a topic deletion's or a partition removal's with delete, a controlled shutdown's without) is replayed as stop_replica, the others are informational"),
        Kind("update_metadata", "cluster", "broker applied an UpdateMetadata request"),
        Kind("topic_created", "cluster", "controller initialised a new topic's partitions (each one's creation is its elect_leader with reason init, replayed as create_topic)"),
        Kind("topic_deleted", "cluster", "controller finished deleting a topic (znodes removed after StopReplica(delete) to its replicas); replayed as delete_topic of the group's own topic"),
        Kind("partitions_added", "cluster", "controller added partitions to a topic (seed 000 H); each added partition's life starts at its elect_leader with reason init, and this event is the same step seen again"),
        Kind("partitions_removed", "cluster", "controller removed partitions from a topic (seed 000 H; znodes removed after StopReplica(delete) to their replicas); replayed as remove_partitions of the group's own partition"),
        Kind("consumer_fetch", "partition", "leader served a consumer fetch (empty between HW and LEO)"),
        Kind("request_rejected", "cluster", "a request was rejected with an error code"),
        Kind("note", "cluster", "free-form harness annotation (fault injected, etc.)"),
    ]
}

OBSERVES_ZXID: frozenset[str] = frozenset({"isr_update_failed"})
"""Kinds whose ``zxid`` is not a write of their own but the write they observed (a failed
conditional update carries the ``mzxid`` of the write that moved the znode on).  Such an
event comes after every event that carries the same ``zxid`` as its own write (SCHEMA.md §4
rule 2): the observer's clock may be lower than the writer's, since ZooKeeper does not carry
clocks."""
