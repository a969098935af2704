"""What several sections share: the immutable-update helpers, the rules on one replica, the
controller's standing, and the arguments every broker-level action tries."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

from model.state import (
    DELETED,
    FETCH_RESPONSE,
    FETCHING,
    FOLLOWER,
    IDLE,
    NO_LEADER,
    NONE,
    TRUNCATING,
    UNKNOWN,
    UP,
    Broker,
    PartitionZnode,
    Replica,
    State,
    StopReplica,
    Zk,
)
from model.truncation import to_high_watermark

if TYPE_CHECKING:
    from model.config import Config


def brokers_args(s: State, cfg: Config) -> Iterator[tuple]:
    return ((b,) for b in range(cfg.brokers))


def broker_partitions_args(s: State, cfg: Config) -> Iterator[tuple]:
    # every partition id of the state (``Config.partition_ids``), created or not: a guard
    # refuses what a replica of an absent partition cannot do
    return ((b, p) for b in range(cfg.brokers) for p in range(len(s.zk.partitions)))


class Step(NamedTuple):
    """One transition: the action's name and its arguments (after ``state, cfg``)."""

    action: str
    args: tuple


def put_at(t: tuple, i: int, v: object) -> tuple:
    return t[:i] + (v,) + t[i + 1 :]


def added(t: tuple, v: object) -> tuple:
    return t if v in t else tuple(sorted(t + (v,)))


def removed(t: tuple, v: object) -> tuple:
    return tuple(x for x in t if x != v)


def replica(s: State, b: int, p: int) -> Replica:
    return s.brokers[b].replicas[p]


def set_replica(s: State, b: int, p: int, r: Replica) -> State:
    broker = s.brokers[b]
    return s._replace(brokers=put_at(s.brokers, b, broker._replace(replicas=put_at(broker.replicas, p, r))))


def set_znode(s: State, p: int, zn: PartitionZnode) -> State:
    return s._replace(zk=s.zk._replace(partitions=put_at(s.zk.partitions, p, zn)))


def unknown_leos(cfg: Config) -> tuple[int, ...]:
    return (UNKNOWN,) * cfg.brokers


def drop_responses_to(s: State, b: int, p: int) -> State:
    """Stopping a ReplicaFetcherThread: responses not yet read are never read.  Requests it
    already sent stay in the network -- the old leader may still act on them."""
    kept = tuple(m for m in s.fetches if not (m.kind == FETCH_RESPONSE and m.follower == b and m.partition == p))
    return s._replace(fetches=kept) if len(kept) != len(s.fetches) else s


def deleted_replica(cfg: Config, r: Replica) -> Replica:
    """Seed 000 C ``stopReplica``: "stop the ReplicaFetcherThread ... delete the partition
    directory locally".  The log and HW go; the highest leader epoch seen is kept, as a
    broker never accepts an older LeaderAndISR again (and ``epoch_monotonic`` asks it)."""
    return Replica(NONE, NO_LEADER, r.leader_epoch, (), -1, (), 0, IDLE, unknown_leos(cfg), 0, r.topic_id)


def following(cfg: Config, r: Replica, leader: int, epoch: int, topic_id: int) -> Replica:
    """Seed 000 C ``becomeFollower``: stop leading; then either truncate to the HW at once
    (the design) or first reconcile with the leader by epoch (KIP-101 onwards)."""
    if cfg.truncation == "hw":
        cut = to_high_watermark(r.log, r.hw)
        return Replica(FOLLOWER, leader, epoch, (), -1, r.log[:cut], min(r.hw, cut), FETCHING, (UNKNOWN,) * len(r.follower_leo), 0, topic_id)
    return Replica(FOLLOWER, leader, epoch, (), -1, r.log, r.hw, TRUNCATING, (UNKNOWN,) * len(r.follower_leo), 0, topic_id)


def for_incarnation(cfg: Config, r: Replica, topic_id: int) -> Replica:
    """The replica a broker acts on for a request (or startup state) of incarnation
    ``topic_id``.  With topic ids, a local replica of an older incarnation belongs to a
    deleted topic: it is deleted first (KIP-516: a local log whose id differs is removed),
    so nothing of the old incarnation survives into the new one.  Without them the broker
    cannot tell, and carries on with whatever its directory holds -- seed 000's argument
    that "no partition version is needed"."""
    if cfg.topic_ids and topic_id > r.topic_id:
        return topic_deleted(cfg, r, topic_id)._replace(role=NONE)
    return r


def topic_deleted(cfg: Config, r: Replica, topic_id: int) -> Replica:
    """Seed 000 B 2 / C ``stopReplica`` for a deleted topic: the partition's directory goes,
    and with it everything the replica knew -- log, HW and leader-epoch cache.  Unlike a
    reassignment's StopReplica, the leader epoch is forgotten too: a re-created topic starts
    its epochs again.  With topic ids the replica remembers which incarnation it deleted."""
    return Replica(DELETED, NO_LEADER, 0, (), -1, (), 0, IDLE, unknown_leos(cfg), 0, topic_id)


def is_current(s: State, p: int, r: Replica) -> bool:
    """Whether replica r acts for p's current incarnation (the topic exists and r took its
    LeaderAndISR or startup state): only that incarnation's commits and acknowledgements are
    the ones the properties hold durable."""
    zn = s.zk.partitions[p]
    return bool(zn.ar) and r.topic_id == zn.topic_id


def stops_controlling(broker: Broker) -> Broker:
    """The broker no longer acts as controller (it crashed, resigned or learned of a newer
    controller epoch), and what it knew as controller goes with it: the registrations it
    still owed an onBrokerStartup are the next controller's to cover, by its INIT requests,
    and the brokers that asked it to shut down ask the next one again (as in Kafka)."""
    return broker._replace(is_controller=False, new_brokers=(), shutting_down=())


def shutting_down(s: State) -> tuple[int, ...]:
    """The brokers the acting controller knows to be shutting down (Kafka's
    ``shuttingDownBrokerIds``; empty without a controller): every election leaves them
    out, as Kafka's ``liveBrokerIds`` does."""
    c = s.zk.controller
    return () if c == NO_LEADER else s.brokers[c].shutting_down


def stopped_replica(cfg: Config, r: Replica) -> Replica:
    """Kafka 2.7's StopReplica without delete (a controlled shutdown's follower): the
    fetcher stops and the replica no longer follows anyone; its log, HW and leader epoch
    stay on disk for the broker's next start."""
    return r._replace(role=NONE, leader=NO_LEADER, isr=(), zk_version=-1, fetch_state=IDLE,
                      follower_leo=unknown_leos(cfg), epoch_start=0)


def acting_controller(s: State, c: int) -> bool:
    """The controller's writes carry a check of /controller_epoch, so only the broker that
    holds /controller at the current epoch can write; a zombie controller's writes fail."""
    broker = s.brokers[c]
    return (
        broker.status == UP
        and broker.is_controller
        and s.zk.controller == c
        and broker.controller_epoch == s.zk.controller_epoch
    )


def max_broker_epoch(zk: Zk) -> int:
    return max((zk.broker_epochs[b] for b in zk.live), default=0)


def stop_removed_replicas(s: State, p: int, removed_from: tuple[int, ...], leader_epoch: int) -> State:
    """A reassignment's StopReplica (delete) to each replica of p it removed, with the
    leader epoch of the write that removed it -- to the registered brokers only: Kafka's
    controller has a channel only to a live broker and drops a request to any other
    (``ControllerChannelManager.sendRequest``: "since it is offline"); a broker that comes
    back holds the removed replica as one of a partition no longer assigned to it."""
    stops = s.stop_replica
    for b in removed_from:
        if b in s.zk.live:
            stops = added(stops, StopReplica(b, p, leader_epoch, s.zk.controller_epoch, s.zk.partitions[p].topic_id))
    return s._replace(stop_replica=stops)
