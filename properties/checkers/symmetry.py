"""Symmetry reduction: brokers are interchangeable, so states that differ only by a
renaming of broker ids are explored once.

``canonical(s)`` picks one representative of s's orbit under broker permutations: brokers
are ordered by a signature that does not mention broker ids, and only the permutations
consistent with that order (all of them within groups of equal signatures) are tried; the
smallest permuted state wins.  Two states in one orbit have the same sorted signatures and
the same candidate set, hence the same representative -- the reduction is exact.

Brokers are interchangeable only while no action can read the order of their ids: a
preferred-replica election moves the leadership to the lowest id of the AR
(``model.actions.preferred_election.reads_broker_order``).  While one may still happen, the
only renaming tried is the identity, so the reduction never merges states that a
preferred election tells apart; after the last one the full reduction applies again.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import permutations, product
from typing import TYPE_CHECKING

from model.actions.preferred_election import reads_broker_order
from model.state import (
    NO_LEADER,
    Broker,
    Fetch,
    LeaderAndIsr,
    PartitionZnode,
    Replica,
    State,
    StopReplica,
    Zk,
)

if TYPE_CHECKING:
    from model.config import Config


def _map(perm: tuple[int, ...], b: int) -> int:
    return b if b == NO_LEADER else perm[b]


@lru_cache(maxsize=1 << 16)
def _map_set(perm: tuple[int, ...], bs: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(sorted(perm[b] for b in bs))


def _reorder(perm: tuple[int, ...], by_broker: tuple) -> tuple:
    out = [None] * len(by_broker)
    for old, v in enumerate(by_broker):
        out[perm[old]] = v
    return tuple(out)


def permute(s: State, perm: tuple[int, ...]) -> State:
    """Rename broker ``b`` to ``perm[b]`` everywhere in the state."""
    zk = s.zk
    zk = Zk(
        _map(perm, zk.controller),
        zk.controller_epoch,
        _map_set(perm, zk.live),
        _reorder(perm, zk.broker_epochs),
        zk.zxid,
        tuple(PartitionZnode(_map(perm, z.leader), z.leader_epoch, _map_set(perm, z.isr), z.zk_version, _map_set(perm, z.ar), _map_set(perm, z.rar), z.topic_id) for z in zk.partitions),
    )
    brokers = _reorder(
        perm,
        tuple(
            Broker(
                br.status,
                br.is_controller,
                br.controller_epoch,
                br.broker_epoch,
                tuple(
                    Replica(r.role, _map(perm, r.leader), r.leader_epoch, _map_set(perm, r.isr), r.zk_version, r.log, r.hw, r.fetch_state, _reorder(perm, r.follower_leo), r.epoch_start, r.topic_id)
                    for r in br.replicas
                ),
                _map_set(perm, br.new_brokers),
                _map_set(perm, br.shutting_down),
            )
            for br in s.brokers
        ),
    )
    lai = tuple(sorted(LeaderAndIsr(perm[m.to], m.partition, _map(perm, m.leader), m.leader_epoch, _map_set(perm, m.isr), m.zk_version, m.controller_epoch, m.max_broker_epoch, m.topic_id) for m in s.leader_and_isr))
    fetches = tuple(sorted(Fetch(m.kind, perm[m.follower], perm[m.leader], m.partition, m.offset, m.epoch, m.records, m.hw, m.error, m.topic_id) for m in s.fetches))
    ghost = s.ghost._replace(led=tuple(sorted((p, e, perm[b]) for p, e, b in s.ghost.led)))
    if not s.stop_replica and not s.alter_partition:
        return State(zk, brokers, lai, fetches, ghost)
    stops = tuple(sorted(StopReplica(perm[m.to], m.partition, m.leader_epoch, m.controller_epoch, m.topic_id, m.delete) for m in s.stop_replica))
    if not s.alter_partition:
        return State(zk, brokers, lai, fetches, ghost, stops)
    alters = tuple(sorted(m._replace(leader=perm[m.leader], isr=_map_set(perm, m.isr)) for m in s.alter_partition))
    return State(zk, brokers, lai, fetches, ghost, stops, alters)


def _signature(s: State, b: int) -> tuple:
    """What broker b looks like without mentioning any broker id."""
    br = s.brokers[b]
    zk = s.zk
    return (
        br.status,
        br.is_controller,
        br.controller_epoch,
        br.broker_epoch,
        b in zk.live,
        zk.controller == b,
        tuple(
            (r.role, r.leader == b, r.leader_epoch, r.log, r.hw, r.fetch_state, len(r.isr), zn.leader == b, b in zn.isr)
            for r, zn in zip(br.replicas, zk.partitions, strict=True)
        ),
    )


def candidate_permutations(s: State, cfg: Config | None = None) -> list[tuple[int, ...]]:
    """The renamings ``canonical`` tries: those that order brokers by signature, or only the
    identity while ``cfg`` lets an action read the order of broker ids."""
    n = len(s.brokers)
    if cfg is not None and reads_broker_order(s, cfg):
        return [tuple(range(n))]
    sigs = [_signature(s, b) for b in range(n)]
    order = sorted(range(n), key=sigs.__getitem__)  # order[new position] = old id
    groups: list[list[int]] = []
    for old in order:
        if groups and sigs[groups[-1][0]] == sigs[old]:
            groups[-1].append(old)
        else:
            groups.append([old])
    perms = []
    for choice in product(*(permutations(g) for g in groups)):
        flat = [old for g in choice for old in g]
        perm = [0] * n
        for new, old in enumerate(flat):
            perm[old] = new
        perms.append(tuple(perm))
    return perms


def rename_versions(s: State) -> State:
    """Renumber ZooKeeper versions (``zk_version``) and zxids (broker epochs) densely, in
    order.  The protocol only compares these for equality and order and makes fresh ones by
    adding one to the largest (ZooKeeper's current value is always the largest present), so
    states that differ only in how far the counters have run behave identically."""
    versions = {zn.zk_version for zn in s.zk.partitions}
    versions.update(r.zk_version for br in s.brokers for r in br.replicas if r.zk_version >= 0)
    versions.update(m.zk_version for m in s.leader_and_isr)
    versions.update(m.zk_version for m in s.alter_partition)
    vmap = {v: i for i, v in enumerate(sorted(versions))}
    zxids = set(s.zk.broker_epochs) | {br.broker_epoch for br in s.brokers} | {m.max_broker_epoch for m in s.leader_and_isr}
    zxids.update(m.broker_epoch for m in s.alter_partition)
    zxids.add(s.zk.zxid)
    zmap = {z: i + 1 for i, z in enumerate(sorted(zxids))}
    if all(k == v for k, v in vmap.items()) and all(k == v for k, v in zmap.items()):
        return s
    zk = s.zk._replace(
        zxid=zmap[s.zk.zxid],
        broker_epochs=tuple(zmap[z] for z in s.zk.broker_epochs),
        partitions=tuple(zn._replace(zk_version=vmap[zn.zk_version]) for zn in s.zk.partitions),
    )
    brokers = tuple(
        br._replace(
            broker_epoch=zmap[br.broker_epoch],
            replicas=tuple(r._replace(zk_version=vmap[r.zk_version]) if r.zk_version >= 0 else r for r in br.replicas),
        )
        for br in s.brokers
    )
    lai = tuple(sorted(m._replace(zk_version=vmap[m.zk_version], max_broker_epoch=zmap[m.max_broker_epoch]) for m in s.leader_and_isr))
    if not s.alter_partition:
        return s._replace(zk=zk, brokers=brokers, leader_and_isr=lai)
    alters = tuple(sorted(m._replace(zk_version=vmap[m.zk_version], broker_epoch=zmap[m.broker_epoch]) for m in s.alter_partition))
    return s._replace(zk=zk, brokers=brokers, leader_and_isr=lai, alter_partition=alters)


def canonical(s: State, cfg: Config | None = None) -> State:
    """The representative of s's orbit under renaming of brokers (and of version counters);
    with ``cfg``, under the renamings its actions cannot tell apart (see the module doc)."""
    s = rename_versions(s)
    perms = candidate_permutations(s, cfg)
    if len(perms) == 1:
        perm = perms[0]
        return s if perm == tuple(range(len(perm))) else permute(s, perm)
    return min(permute(s, p) for p in perms)
