"""Named configurations of the model: which protocol variant, and the bounds of the search.

The variants are the history of Kafka's replication protocol (see ``model.truncation``):

* ``design`` -- seed 000 as written: a new follower truncates its log to its own HW.
* ``kip101`` -- truncation by leader-epoch lookup (OffsetsForLeaderEpoch), KIP-101.
* ``kip279`` -- the lookup returns the largest common epoch, KIP-279 (fast leader changes).
* ``kip320`` -- additionally fenced fetching, KIP-320: requests carry the leader epoch.
* ``unclean`` -- ``kip320`` with unclean leader election enabled.
* ``zombie`` -- ``kip320`` with a GC pause / resume of a broker within the bounds.
* ``kafka26`` -- ``kip320`` with Kafka's broker start (``startup_from_controller``), its
  controller's write per dead replica taken out of the ISR (``offline_replica_writes``), its
  leader's HW waiting for a caught-up follower outside the ISR (``hw_waits_outside_isr``), keeping its
  followers' fetch state across its own new epochs (``leader_keeps_follower_state``) and its
  controller's reassignment in phases, each with its epoch (``reassign_phases``):
  Apache Kafka 3.9 in ZooKeeper mode at inter-broker protocol 2.6, whose leaders write the ISR.
* ``kafka39`` -- ``kip320`` with the ISR changed through the controller (AlterPartition,
  KIP-497; KIP-841's eligibility) and ``kafka26``'s rules of Kafka's brokers (``KAFKA_BROKER``):
  Apache Kafka 3.9 in ZooKeeper mode at its default inter-broker protocol.
* ``kafka26-unclean``, ``kafka39-unclean`` -- those two with unclean leader election
  enabled (as ``unclean`` is ``kip320`` with it), and ``unclean``'s one crash.

``Config`` is the protocol's settings and the search's bounds written here, plus one field
per action knob (``model.actions.KNOBS``: ``max_crashes``, ``deletions`` ...), each declared
with its action in its section's module -- its default there, its range checked by
``validate``.  So this module sits above the sections, which name ``Config`` only in type
hints.
"""

from __future__ import annotations

from dataclasses import dataclass, make_dataclass, replace

from model.actions import KNOBS

TRUNCATION_RULES = ("hw", "kip101", "kip279", "kip320")


@dataclass(frozen=True)
class Settings:
    """The protocol's settings and the bounds that limit no single action; ``Config`` adds
    the action knobs."""

    name: str
    truncation: str  # one of TRUNCATION_RULES
    brokers: int = 2
    partitions: int = 1
    records: int = 2  # client records produced, in all
    max_epoch: int = 3  # highest leader epoch the controller may write
    min_insync: int = 1  # min.insync.replicas for acks=all produce
    unclean: bool = False  # unclean.leader.election.enable
    fence_controller_epoch: bool = True  # brokers reject requests from older controller epochs (seed 002)
    fence_broker_epoch: bool = True  # brokers reject requests meant for an older incarnation (seed 003)
    replication_factor: int = 0  # brokers in each partition's initial AR; 0: every broker
    # seed 000 question 5: a topic id in the topic znode, LeaderAndISR, StopReplica and beside
    # the log (KIP-516).  False is the design as written: "no partition version is needed"
    topic_ids: bool = True
    # Kafka's broker start: the logs are loaded and no partition state is read from ZooKeeper;
    # each replica waits for the controller's LeaderAndISR, with the HW its checkpoint held.
    # False is seed 000 E as written: the broker reads the leader and ISR from ZooKeeper itself
    startup_from_controller: bool = False
    # Kafka's controller (``ReplicaStateMachine``'s OfflineReplica transition): each dead ISR
    # member is taken out of the ISR by a write of its own -- leader -1 if it led, the last
    # member kept -- and a dead leader's election writes no ISR of its own
    # (model.actions.controller.offline_replica_write).  False is seed 000 A: one write
    # elects a live ISR member and drops every dead member, or keeps the ISR leaderless
    offline_replica_writes: bool = False
    # Kafka's leader (``Partition.maybeIncrementLeaderHW``): its HW may also wait for a live
    # assigned follower outside the ISR that has caught up within replica.lag.time.max.ms
    # (``shouldWaitForReplicaToJoinIsr``).  False is seed 000 G: the HW is the ISR's least LEO
    hw_waits_outside_isr: bool = False
    # Kafka's ``Partition.makeLeader``: a leader given a new leader epoch while it leads keeps
    # what it knows of its followers' fetch offsets (``isNewLeader`` false); a new leader
    # forgets them.  False is the model's makeLeader: every new epoch forgets them
    leader_keeps_follower_state: bool = False
    # Kafka's controller moving a partition (KIP-455's ``onPartitionReassignment``): the start
    # bumps the leader epoch (same leader and ISR) and sends it to every replica old and new;
    # the completion keeps the ISR, whose removed replicas leave it by a write of their own
    # (model.actions.reassignment).  False is seed 000 F: one epoch bump, at the completion
    reassign_phases: bool = False

    @property
    def partition_ids(self) -> int:
        """How many partition ids the topic can ever have had: the ``partitions`` it starts
        with, and one fresh id per partition change allowed (each change adds at most one).
        ``model.state.initial`` gives the state one slot per id, the ids past ``partitions``
        not yet created, so that ``add_partitions`` has a fresh id to fill while every state
        of a configuration keeps one shape (the symmetry reduction and the encodings need no
        case for a partition count).  With no partition changes it is ``partitions``: the
        named configurations' states are as they were."""
        return self.partitions + self.partition_changes

    @property
    def fenced_fetch(self) -> bool:
        """KIP-320: fetch and epoch-lookup requests carry the leader epoch and are fenced."""
        return self.truncation == "kip320"

    @property
    def refollow_on_new_epoch(self) -> bool:
        """Seed 000 C 2.2: only 'if the broker is not already following L'.  With fenced
        fetching (KIP-320) every new leader epoch restarts the fetcher and reconciles."""
        return self.truncation == "kip320"

    def describe(self) -> str:
        """One line: the variant, its bounds with the failures it allows, its settings, and
        each other knob above 0."""
        def knobs(failures: bool) -> str:
            return "".join(f" {k.field}={getattr(self, k.field)}" for k in KNOBS
                           if k.failure == failures and (k.always or getattr(self, k.field)))

        return (
            f"{self.name}: truncation={self.truncation} brokers={self.brokers} "
            f"partitions={self.partitions} records={self.records} max_epoch={self.max_epoch}"
            + knobs(failures=True)
            + f" min_insync={self.min_insync} unclean={self.unclean}"
            + ("" if self.fence_controller_epoch and self.fence_broker_epoch else f" fence_controller_epoch={self.fence_controller_epoch} fence_broker_epoch={self.fence_broker_epoch}")
            + (f" replication_factor={self.replication_factor}" if self.replication_factor else "")
            + knobs(failures=False)
            + ("" if self.topic_ids or not self.deletions else " topic_ids=False")
            + (" startup_from_controller=True" if self.startup_from_controller else "")
            + (" offline_replica_writes=True" if self.offline_replica_writes else "")
            + (" hw_waits_outside_isr=True" if self.hw_waits_outside_isr else "")
            + (" leader_keeps_follower_state=True" if self.leader_keeps_follower_state else "")
            + (" reassign_phases=True" if self.reassign_phases else "")
        )


Config = make_dataclass("Config", [(k.field, int, k.default) for k in KNOBS], bases=(Settings,), frozen=True,
                        namespace={"__module__": __name__})
"""A configuration of the model: ``Settings`` and one ``int`` field per action knob."""


KAFKA_BROKER: dict[str, bool] = {
    "startup_from_controller": True, "offline_replica_writes": True,
    "hw_waits_outside_isr": True, "leader_keeps_follower_state": True, "reassign_phases": True,
}
"""The rules of Apache Kafka's brokers and controller that every Kafka configuration has."""


NAMED: dict[str, Config] = {
    "design": Config("design", "hw", max_crashes=2),
    "kip101": Config("kip101", "kip101", max_crashes=2),
    "kip279": Config("kip279", "kip279", max_crashes=2),
    "kip320": Config("kip320", "kip320", max_crashes=2),
    "unclean": Config("unclean", "kip320", unclean=True),
    "zombie": Config("zombie", "kip320", max_crashes=0, max_pauses=1),
    "kafka26": Config("kafka26", "kip320", max_crashes=2, **KAFKA_BROKER),
    "kafka39": Config("kafka39", "kip320", max_crashes=2, alter_partition=1, **KAFKA_BROKER),
    # the two with unclean.leader.election.enable, as ``unclean`` is ``kip320`` with it: what
    # judges a chaos run on Kafka with unclean election on (``epochal chaos --engine kafka``)
    "kafka26-unclean": Config("kafka26-unclean", "kip320", unclean=True, **KAFKA_BROKER),
    "kafka39-unclean": Config("kafka39-unclean", "kip320", unclean=True, alter_partition=1, **KAFKA_BROKER),
}

UNCLEAN_OF: dict[str, str] = {"kip320": "unclean", "kafka26": "kafka26-unclean", "kafka39": "kafka39-unclean"}
"""A configuration's twin with unclean leader election on: what judges a run made with it."""


def of_apache_kafka(cfg: Config) -> bool:
    """Whether ``cfg`` has rules of Apache Kafka's own brokers that Epochal's brokers do not
    follow (Kafka's broker start, its controller's write per dead replica taken out of the
    ISR, AlterPartition, the HW's wait outside the ISR, the followers' state kept across a
    leader's own epochs): such a configuration
    judges Kafka's traces, and no Epochal cluster can be driven by it."""
    return bool(cfg.startup_from_controller or cfg.offline_replica_writes or cfg.alter_partition
                or cfg.hw_waits_outside_isr or cfg.leader_keeps_follower_state or cfg.reassign_phases)


DRIVABLE: tuple[str, ...] = tuple(name for name, cfg in NAMED.items() if not of_apache_kafka(cfg))
"""The named configurations whose rules Epochal's brokers follow: what ``drive`` runs."""


def named(name: str, **overrides: object) -> Config:
    """The named configuration with the given bounds overridden (``None`` values ignored)."""
    if name not in NAMED:
        raise KeyError(f"unknown configuration {name!r}; choose one of {', '.join(NAMED)}")
    changes = {k: v for k, v in overrides.items() if v is not None}
    cfg = replace(NAMED[name], **changes)
    validate(cfg)
    return cfg


def validate(cfg: Config) -> None:
    """Reject bounds that make no sense, with a message a user can act on."""
    if cfg.truncation not in TRUNCATION_RULES:
        raise ValueError(f"truncation must be one of {TRUNCATION_RULES}")
    if not 1 <= cfg.brokers <= 5:
        raise ValueError("--brokers must be between 1 and 5")
    if not 1 <= cfg.partitions <= 3:
        raise ValueError("--partitions must be between 1 and 3")
    if not 0 <= cfg.records <= 6:
        raise ValueError("--records must be between 0 and 6")
    if not 1 <= cfg.max_epoch <= 8:
        raise ValueError("--max-epoch must be between 1 and 8")
    if not 1 <= cfg.min_insync <= cfg.brokers:
        raise ValueError("--min-insync must be between 1 and --brokers")
    if not 0 <= cfg.replication_factor <= cfg.brokers:
        raise ValueError("--replication-factor must be between 0 (every broker) and --brokers")
    for knob in KNOBS:
        knob.check(getattr(cfg, knob.field))
    if cfg.partition_changes and cfg.deletions:
        # one topic per model: a partition without AR is either removed or of a deleted
        # topic, and the model does not tell the two apart
        raise ValueError("--partition-changes and --deletions cannot be combined (the model has one topic)")
    if (cfg.reuse_partition_ids or cfg.partition_identity) and not cfg.partition_changes:
        raise ValueError("--reuse-partition-ids and --partition-identity go with --partition-changes")
    if cfg.partition_identity and not cfg.topic_ids:
        # the identity is compared where topic ids are (``for_incarnation``): without them
        # no broker reads it
        raise ValueError("--partition-identity needs topic ids (it is not combined with --no-topic-ids)")
