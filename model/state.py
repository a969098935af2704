"""The immutable state of the model.

Everything is a ``NamedTuple`` of ints and tuples: immutable, hashable, orderable (the
symmetry reduction sorts states) and hashed identically in every process (no strings, whose
hashes are salted per process).  Sets are sorted tuples.  Broker ids are ``0..brokers-1``;
``NO_LEADER`` (-1) is "no leader" / "unknown" as in Kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from model.config import Config


NO_LEADER = -1
UNKNOWN = -1  # a leader's view of a follower's LEO before the follower has fetched

# Broker.status
UP, DOWN, PAUSED = 0, 1, 2
STATUS_NAMES = {UP: "up", DOWN: "crashed", PAUSED: "paused"}

# Replica.role
NONE, LEADER, FOLLOWER = 0, 1, 2
DELETED = 3  # its topic was deleted: the partition's directory is gone (seed 000 B 2)
ROLE_NAMES = {NONE: "none", LEADER: "leader", FOLLOWER: "follower", DELETED: "deleted"}

# Replica.fetch_state (followers)
IDLE, TRUNCATING, FETCHING = 0, 1, 2


class Entry(NamedTuple):
    """One record in a log: the client's value and the leader epoch it was written in."""

    value: int
    epoch: int


class PartitionZnode(NamedTuple):
    """``/brokers/topics/T/P/leaderAndISR`` plus the partition's assigned replicas (AR) and
    the reassignment asked for it (RAR, seed 000 F ``/admin/partitions_reassigned/T/P``).

    ``zk_version`` is the leaderAndISR znode's version only: AR lives in the topic path and
    RAR in the admin path, so writing them does not move it (as in ZooKeeper).  ``rar`` is
    ``()`` when no reassignment is pending -- the default, so states without reassignment
    are built and hashed as before."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    ar: tuple[int, ...]
    rar: tuple[int, ...] = ()
    # the topic's identity: which incarnation of the topic this partition belongs to (0, the
    # initial one, then one more per re-creation).  The implementation uses the czxid of the
    # topic's znode: unique, and larger for every later creation, which is all the model
    # uses.  A deleted partition has no AR (``ar == ()``) and keeps the id it had.
    topic_id: int = 0


# An id the topic has never had (seed 000 H: a partition not added yet): no AR, and no
# leader epoch ever written (-1, as in the judge's state before a partition's life).  Its
# version is 0, as low as any znode's: the symmetry reduction's renumbering of versions
# (``rename_versions``) leaves it 0.
NOT_CREATED = PartitionZnode(NO_LEADER, -1, (), 0, ())


def ever_created(zn: PartitionZnode) -> bool:
    """Whether the topic has ever had this partition id: the partition exists (it has an
    AR) or existed and was removed -- a removed partition's znode keeps the leader epoch it
    had (``partition_gone``), so the id stays used and is never handed out again.  Leader
    epochs are never renumbered (unlike versions), so this holds in every state the
    symmetry reduction picks."""
    return bool(zn.ar) or zn.leader_epoch != -1


class Zk(NamedTuple):
    """What ZooKeeper holds: the source of truth the controller publishes to (seed 000)."""

    controller: int  # owner of the ephemeral /controller, or NO_LEADER
    controller_epoch: int  # persistent /controller_epoch
    live: tuple[int, ...]  # brokers with a registration under /brokers/ids
    broker_epochs: tuple[int, ...]  # czxid of each broker's current/last registration
    zxid: int  # last transaction id, the source of broker epochs
    partitions: tuple[PartitionZnode, ...]


class Replica(NamedTuple):
    """A broker's replica of one partition (seed 000 ``Replica`` / ``Partition``)."""

    role: int
    leader: int  # the leader it follows (followers), itself (leaders), or NO_LEADER
    leader_epoch: int  # the highest leader epoch it has accepted
    isr: tuple[int, ...]  # leader only: its local copy of the ISR
    zk_version: int  # leader only: LeaderAndISRVersionInZK
    log: tuple[Entry, ...]
    hw: int
    fetch_state: int  # followers: IDLE, TRUNCATING (KIP-101+) or FETCHING
    follower_leo: tuple[int, ...]  # leader only: LEO each follower last fetched from, by broker
    epoch_start: int  # leader only: its LEO when it became leader (start of its epoch)
    # the incarnation of the topic whose data this replica holds -- stored beside the log
    # (KIP-516's partition.metadata) when the configuration has topic ids; without them it
    # is only the model's record of where the data came from, which no broker consults
    topic_id: int = 0

    @property
    def leo(self) -> int:
        return len(self.log)


class Broker(NamedTuple):
    status: int
    is_controller: bool
    controller_epoch: int  # highest controller epoch this broker has seen
    broker_epoch: int  # the czxid of its own registration, as it believes
    replicas: tuple[Replica, ...]  # by partition
    new_brokers: tuple[int, ...] = ()  # controller only: registrations whose onBrokerStartup is to run
    # controller only: the brokers that asked it for a controlled shutdown and are still
    # registered (Kafka's ``shuttingDownBrokerIds``): no election chooses one of them
    shutting_down: tuple[int, ...] = ()


class LeaderAndIsr(NamedTuple):
    """A LeaderAndISR request for one partition (seed 000 ``LeaderAndISRRequest``).

    Requests are kept as the set of requests ever sent: delivery may be delayed, repeated,
    reordered or never happen; brokers only guard on epochs (as hachikuji's TLA+ spec does)
    -- except across a StopReplica to the same broker, which keeps the order of the
    controller's channel (``model.actions.commands.waits_in_channel``).
    """

    to: int
    partition: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    controller_epoch: int
    max_broker_epoch: int
    topic_id: int = 0  # the incarnation the controller read (ignored without topic ids)


class StopReplica(NamedTuple):
    """A StopReplica request for one partition (seed 000 ``StopReplicaRequest``), sent by
    the reassignment agent to the replicas it removed (seed 000 F 3.2.4).

    It carries the controller epoch (seed 002: a broker acts only on the current
    controller) and the leader epoch the reassignment wrote, so a replica that has since
    taken a newer LeaderAndISR ignores it (Kafka's KIP-570 fence; seed 000 has none)."""

    to: int
    partition: int
    leader_epoch: int  # EPOCH_DURING_DELETE for a topic deletion: delete whatever the epoch
    controller_epoch: int
    topic_id: int = 0  # the incarnation to stop (ignored without topic ids)
    # False: a controlled shutdown's stop of a follower (Kafka 2.7's StopReplica with
    # deletePartition=false): the replica stops fetching and keeps its log
    delete: bool = True


EPOCH_DURING_DELETE = -2
"""The leader epoch a StopReplica of a topic deletion carries (Kafka's ``EpochDuringDelete``,
KIP-570): the replica is deleted whatever leader epoch it has."""

FETCH_REQUEST, FETCH_RESPONSE = 0, 1
OK, OUT_OF_RANGE = 0, 1


class Fetch(NamedTuple):
    """An in-flight ReplicaFetchRequest (follower → leader) or its response."""

    kind: int  # FETCH_REQUEST or FETCH_RESPONSE
    follower: int
    leader: int
    partition: int
    offset: int  # the fetch offset (the follower's LEO when it asked)
    epoch: int  # request: the follower's leader epoch; response: the leader's
    records: tuple[Entry, ...]  # response only
    hw: int  # response only: the leader's HW (OUT_OF_RANGE: the leader's LEO)
    error: int
    topic_id: int = 0  # the sender's incarnation of the topic (KIP-516's Fetch v13)


# AlterPartition.kind, and the controller's answers (KIP-497, Kafka's error names)
ALTER_REQUEST, ALTER_RESPONSE = 0, 1
FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, INELIGIBLE_REPLICA, STALE_BROKER_EPOCH, UNKNOWN_TOPIC_ID = 2, 3, 4, 5, 6


class AlterPartition(NamedTuple):
    """An ISR change the leader proposes to the controller (KIP-497's AlterPartition, the
    ZooKeeper-mode controller from IBP 2.7), or the controller's answer.

    The request carries the ISR the leader wants, its leader epoch and the partition epoch
    (the znode version) it knows, and its broker epoch; the answer, the znode as the
    controller left it (``isr``, ``zk_version``) or an error.  Like the fetches, a message
    is in flight once and consumed by its one receiver."""

    kind: int  # ALTER_REQUEST or ALTER_RESPONSE
    leader: int  # the proposing leader: the request's sender, the answer's receiver
    partition: int
    leader_epoch: int
    isr: tuple[int, ...]  # request: the proposed ISR; answer: the ISR written (or current)
    zk_version: int  # request: the version the leader knows; answer: the znode's
    broker_epoch: int  # request: the leader's broker epoch; answer: the same, echoed
    error: int = 0  # answer only: OK or one of the errors above
    topic_id: int = 0  # the leader's incarnation of the topic (AlterPartition v2 names topics by id)


class Ghost(NamedTuple):
    """History the properties need and no process can see."""

    committed: tuple[tuple[int, int, Entry], ...]  # (partition, offset, entry) ever below a leader's HW
    acked: tuple[tuple[int, int], ...]  # (partition, value) acknowledged to an acks=all producer
    led: tuple[tuple[int, int, int], ...]  # (partition, leader_epoch, broker) that became leader
    unclean: tuple[int, ...]  # partitions that have had an unclean election
    stale_accepts: int  # control requests acted on although from an older controller/broker epoch
    zombie_appends: tuple[tuple[int, int], ...]  # (partition, value) appended by a leader already superseded
    produced: int
    crashes: int
    pauses: int
    shutdowns: int
    reassignments: int = 0  # reassignments started, in all (bounded by Config.reassignments)
    # (partition, value) of zombie appends that a still-superseded leader moved its HW over
    zombie_commits: tuple[tuple[int, int], ...] = ()
    deletions: int = 0  # topic deletions, in all (bounded by Config.deletions)
    # (partition, value) of every record of a deleted incarnation: no leader may serve one
    retired: tuple[tuple[int, int], ...] = ()
    preferred_elections: int = 0  # preferred-replica elections, in all (bounded by Config.preferred_elections)
    partition_changes: int = 0  # partitions added or removed (seed 000 H), in all (bounded by Config.partition_changes)
    # partitions removed (seed 000 H): their ids are added again only with Config.reuse_partition_ids
    removed: tuple[int, ...] = ()
    expiries: int = 0  # session expiries of a running broker, in all (bounded by Config.max_expiries)


class State(NamedTuple):
    zk: Zk
    brokers: tuple[Broker, ...]
    leader_and_isr: tuple[LeaderAndIsr, ...]  # every request ever sent, sorted
    fetches: tuple[Fetch, ...]  # in flight, sorted
    ghost: Ghost
    stop_replica: tuple[StopReplica, ...] = ()  # in flight, sorted (only with reassignment)
    alter_partition: tuple[AlterPartition, ...] = ()  # in flight, sorted (only with Config.alter_partition)


def assigned(cfg: Config, p: int) -> tuple[int, ...]:
    """Partition p's initial AR: every broker, or with a replication factor below the
    broker count the ``rf`` brokers from ``p mod brokers`` on (so its leader is in it and
    the other brokers are free to be reassigned to)."""
    n = cfg.brokers
    rf = cfg.replication_factor or n
    return tuple(range(n)) if rf >= n else tuple(sorted((p + i) % n for i in range(rf)))


def initial(cfg: Config) -> State:
    """A freshly bootstrapped cluster: broker 0 is controller at controller epoch 1, each of
    the ``cfg.partitions`` partitions has been through ``init_leaders`` (leader ``p mod brokers``, epoch 1, ISR = AR
    = every broker, or ``assigned``'s brokers with a replication factor) and every assigned
    broker has acted on that LeaderAndISR; the others hold no replica.  Starting here rather
    than from an empty cluster keeps the search on the failure handling the bugs are in.
    The ids past them, up to ``cfg.partition_ids``, are not created yet (``NOT_CREATED``):
    ``add_partitions`` creates them, and no broker holds a replica of one."""
    n = cfg.brokers
    everyone = tuple(range(n))
    unknown = (UNKNOWN,) * n
    partitions = tuple(
        PartitionZnode(leader=p % n, leader_epoch=1, isr=assigned(cfg, p), zk_version=0, ar=assigned(cfg, p))
        for p in range(cfg.partitions)
    ) + (NOT_CREATED,) * (cfg.partition_ids - cfg.partitions)
    zk = Zk(
        controller=0,
        controller_epoch=1,
        live=everyone,
        broker_epochs=(1,) * n,  # registered together: equal epochs keep brokers interchangeable
        zxid=1,
        partitions=partitions,
    )

    def replica(b: int, p: int) -> Replica:
        leader = p % n
        if b not in partitions[p].ar:
            return Replica(NONE, NO_LEADER, 0, (), -1, (), 0, IDLE, unknown, 0)
        if b == leader:
            return Replica(LEADER, b, 1, partitions[p].isr, 0, (), 0, IDLE, unknown, 0)
        return Replica(FOLLOWER, leader, 1, (), -1, (), 0, FETCHING, unknown, 0)

    brokers = tuple(
        Broker(UP, b == 0, 1, 1, tuple(replica(b, p) for p in range(cfg.partition_ids)))
        for b in range(n)
    )
    led = tuple(sorted((p, 1, p % n) for p in range(cfg.partitions)))
    ghost = Ghost((), (), led, (), 0, (), 0, 0, 0, 0)
    return State(zk, brokers, (), (), ghost)
