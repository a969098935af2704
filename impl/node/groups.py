"""Kafka's classic consumer group protocol: one group's membership, as a pure state machine.

A group moves through Kafka's four phases:

* **EMPTY** -- no members (its committed offsets live on in ZooKeeper, not here).
* **PREPARING_REBALANCE** -- a member joined, left or timed out: every member must send
  JoinGroup again.  The rebalance completes when every member has, or at the rebalance
  deadline (the largest ``rebalance_timeout_ms`` of the members, from the rebalance's
  start), which drops the members that did not.
* **COMPLETING_REBALANCE** -- the generation is bumped, the protocol chosen and every
  JoinGroup answered: the leader (the previous leader if still a member, else the first to
  join) gets every member's metadata, and sends the assignment in its SyncGroup.
* **STABLE** -- the leader's assignment is in; every SyncGroup is answered with its
  member's share.  Heartbeats keep members in; a member silent for its
  ``session_timeout_ms`` is removed and the group rebalances.

Kafka's error codes, as Kafka's coordinator answers them: UNKNOWN_MEMBER_ID,
ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, INCONSISTENT_GROUP_PROTOCOL,
INVALID_SESSION_TIMEOUT, GROUP_MAX_SIZE_REACHED and, for JoinGroup v4+ (KIP-394),
MEMBER_ID_REQUIRED: a member that joins without an id is given one and must join again
with it.

Every action takes the group and the time (``now_ms``) and returns the new group and its
answer; new member ids are the caller's (``new_id``), so the actions are deterministic.
Who waits for what (a JoinGroup until the rebalance completes, a follower's SyncGroup
until the leader's) is the caller's (:mod:`impl.node.broker.kafka_groups`), which asks
:func:`join_answer` and :func:`sync_answer` after every action.
"""

from __future__ import annotations

import enum
import zlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace

from kio.schema.errors import ErrorCode as KafkaError

MIN_SESSION_TIMEOUT_MS = 1_000
MAX_SESSION_TIMEOUT_MS = 1_800_000  # Kafka's group.max.session.timeout.ms
MAX_GROUP_SIZE = 100
MAX_GROUP_ID = 249  # characters, as a topic name: a group id is a ZooKeeper path component


class Phase(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"


@dataclass(frozen=True)
class Member:
    member_id: str
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]  # (name, metadata), in the member's preference
    last_heard_ms: int
    joined: bool = True  # has sent JoinGroup in the current (or last) rebalance
    assignment: bytes = b""


@dataclass(frozen=True)
class Group:
    group_id: str
    phase: Phase = Phase.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str | None = None
    members: tuple[Member, ...] = ()  # in the order they joined
    pending: tuple[tuple[str, int], ...] = ()  # ids given with MEMBER_ID_REQUIRED, each's expiry
    rebalance_deadline_ms: int = 0

    def member(self, member_id: str) -> Member | None:
        return next((m for m in self.members if m.member_id == member_id), None)


@dataclass(frozen=True)
class JoinAnswer:
    error: int
    member_id: str
    generation: int = -1
    protocol_type: str | None = None
    protocol: str | None = None
    leader: str = ""
    members: tuple[tuple[str, bytes], ...] = ()  # the leader's only: each member's metadata


@dataclass(frozen=True)
class JoinRequest:
    member_id: str
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    require_known_id: bool  # JoinGroup v4+: a member without an id gets MEMBER_ID_REQUIRED


def coordinator(group_id: str, live_brokers: Iterable[int]) -> int:
    """The group's coordinator: the live broker at CRC-32 of the group id over the sorted
    live brokers (-1: none live).  Every broker with the same metadata names the same one."""
    brokers = sorted(live_brokers)
    if not brokers:
        return -1
    return brokers[zlib.crc32(group_id.encode()) % len(brokers)]


def valid_group_id(group_id: str | None) -> bool:
    """A group id that is one ZooKeeper path component (its offsets are stored under it)."""
    return bool(group_id) and group_id not in (".", "..") and len(group_id) <= MAX_GROUP_ID \
        and "/" not in group_id and all(c.isprintable() for c in group_id)


def join(group: Group, request: JoinRequest, new_id: str, now_ms: int) -> tuple[Group, JoinAnswer | None]:
    """A JoinGroup: the group with the member in it and a rebalance under way, and None
    (the answer waits for the rebalance: :func:`join_answer`), or an error answered now."""
    group = _drop_expired_pending(group, now_ms)
    refused = _join_refusal(group, request)
    if refused is not None:
        return group, JoinAnswer(refused, request.member_id)
    member_id = request.member_id
    if not member_id and request.require_known_id:
        if len(group.members) + len(group.pending) >= MAX_GROUP_SIZE:
            return group, JoinAnswer(KafkaError.group_max_size_reached, "")
        pending = (*group.pending, (new_id, now_ms + request.session_timeout_ms))
        return replace(group, pending=pending), JoinAnswer(KafkaError.member_id_required, new_id)
    known = group.member(member_id) if member_id else None
    is_pending = any(p == member_id for p, _ in group.pending)
    if member_id and known is None and not is_pending:
        return group, JoinAnswer(KafkaError.unknown_member_id, member_id)
    if known is None and len(group.members) >= MAX_GROUP_SIZE:
        return group, JoinAnswer(KafkaError.group_max_size_reached, member_id)
    member_id = member_id or new_id
    member = Member(member_id, request.client_id, request.client_host,
                    request.session_timeout_ms, request.rebalance_timeout_ms,
                    request.protocols, now_ms)
    members = tuple(member if m.member_id == member_id else m for m in group.members) \
        if known is not None else (*group.members, member)
    group = replace(group, members=members, protocol_type=request.protocol_type,
                    pending=tuple(p for p in group.pending if p[0] != member_id))
    if group.phase is not Phase.PREPARING_REBALANCE:
        group = _prepare_rebalance(group, now_ms, keep_joined=member_id)
    return _maybe_complete(group, now_ms), None


def _join_refusal(group: Group, request: JoinRequest) -> int | None:
    if not MIN_SESSION_TIMEOUT_MS <= request.session_timeout_ms <= MAX_SESSION_TIMEOUT_MS:
        return KafkaError.invalid_session_timeout
    if not request.protocol_type or not request.protocols:
        return KafkaError.inconsistent_group_protocol
    others = [m for m in group.members if m.member_id != request.member_id]
    if others and (request.protocol_type != group.protocol_type
                   or not _common_protocols([*others, request])):
        return KafkaError.inconsistent_group_protocol
    return None


def _common_protocols(members: Iterable[Member | JoinRequest]) -> set[str]:
    sets = [{name for name, _ in m.protocols} for m in members]
    return set.intersection(*sets) if sets else set()


def _prepare_rebalance(group: Group, now_ms: int, keep_joined: str = "") -> Group:
    """Every member must join again, within the largest rebalance timeout."""
    members = tuple(replace(m, joined=m.member_id == keep_joined) for m in group.members)
    deadline = now_ms + max((m.rebalance_timeout_ms for m in members), default=0)
    return replace(group, phase=Phase.PREPARING_REBALANCE, members=members,
                   rebalance_deadline_ms=deadline)


def _maybe_complete(group: Group, now_ms: int) -> Group:
    """Complete the rebalance once every member has joined, or at its deadline (dropping
    the members that did not): a new generation, its protocol and its leader."""
    if group.phase is not Phase.PREPARING_REBALANCE:
        return group
    if not all(m.joined for m in group.members) and now_ms < group.rebalance_deadline_ms:
        return group
    members = tuple(replace(m, last_heard_ms=now_ms, assignment=b"")
                    for m in group.members if m.joined)
    if not members:
        return replace(group, phase=Phase.EMPTY, generation=group.generation + 1, members=(),
                       protocol=None, protocol_type=None, leader=None)
    leader = group.leader if any(m.member_id == group.leader for m in members) \
        else members[0].member_id
    return replace(group, phase=Phase.COMPLETING_REBALANCE, generation=group.generation + 1,
                   members=members, leader=leader, protocol=_choose_protocol(members, leader))


def _choose_protocol(members: tuple[Member, ...], leader: str) -> str:
    """Kafka's vote: each member votes for its most preferred protocol that every member
    supports; most votes wins, a tie going to the leader's preference."""
    common = _common_protocols(members)
    votes = Counter(next(name for name, _ in m.protocols if name in common) for m in members)
    order = [name for m in members if m.member_id == leader for name, _ in m.protocols]
    return max(common, key=lambda name: (votes[name], -order.index(name)))


def join_answer(group: Group | None, member_id: str) -> JoinAnswer | None:
    """A waiting JoinGroup's answer (None: the rebalance is still under way)."""
    if group is not None and group.phase is Phase.PREPARING_REBALANCE:
        return None
    member = group.member(member_id) if group is not None else None
    if group is None or member is None:
        return JoinAnswer(KafkaError.unknown_member_id, member_id)
    everyone = tuple((m.member_id, dict(m.protocols)[group.protocol or ""])
                     for m in group.members) if member_id == group.leader else ()
    return JoinAnswer(KafkaError.none, member_id, group.generation, group.protocol_type,
                      group.protocol, group.leader or "", everyone)


def _member_check(group: Group | None, member_id: str, generation: int) -> int | None:
    """UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION, as Kafka checks a member's request."""
    if group is None or group.member(member_id) is None:
        return KafkaError.unknown_member_id
    if generation != group.generation:
        return KafkaError.illegal_generation
    return None


def _heard(group: Group, member_id: str, now_ms: int) -> Group:
    return replace(group, members=tuple(replace(m, last_heard_ms=now_ms)
                                        if m.member_id == member_id else m
                                        for m in group.members))


def sync(group: Group | None, member_id: str, generation: int,
         assignments: dict[str, bytes], now_ms: int) -> tuple[Group | None, int | None]:
    """A SyncGroup: None (the answer is :func:`sync_answer`'s, once the leader's assignment
    is in) or an error now.  The leader's ``assignments`` make the group STABLE."""
    refused = _member_check(group, member_id, generation)
    if refused is not None:
        return group, refused
    assert group is not None
    if group.phase is Phase.PREPARING_REBALANCE:
        return group, KafkaError.rebalance_in_progress
    group = _heard(group, member_id, now_ms)
    if group.phase is Phase.COMPLETING_REBALANCE and member_id == group.leader:
        members = tuple(replace(m, assignment=assignments.get(m.member_id, b""))
                        for m in group.members)
        group = replace(group, phase=Phase.STABLE, members=members)
    return group, None


def sync_answer(group: Group | None, member_id: str, generation: int) -> tuple[int, bytes] | None:
    """A waiting SyncGroup's answer: (error, assignment), or None while the leader's is awaited."""
    refused = _member_check(group, member_id, generation)
    if refused is not None:
        return refused, b""
    assert group is not None
    if group.phase is Phase.PREPARING_REBALANCE:
        return KafkaError.rebalance_in_progress, b""
    if group.phase is Phase.COMPLETING_REBALANCE:
        return None
    member = group.member(member_id)
    assert member is not None
    return KafkaError.none, member.assignment


def heartbeat(group: Group | None, member_id: str, generation: int,
              now_ms: int) -> tuple[Group | None, int]:
    refused = _member_check(group, member_id, generation)
    if refused is not None:
        return group, refused
    assert group is not None
    group = _heard(group, member_id, now_ms)
    if group.phase is Phase.PREPARING_REBALANCE:
        return group, KafkaError.rebalance_in_progress
    return group, KafkaError.none


def leave(group: Group | None, member_id: str, now_ms: int) -> tuple[Group | None, int]:
    """A LeaveGroup: the member is removed and the others rebalance."""
    if group is None or group.member(member_id) is None:
        return group, KafkaError.unknown_member_id
    return _remove(group, {member_id}, now_ms), KafkaError.none


def _remove(group: Group, gone: set[str], now_ms: int) -> Group:
    rest = replace(group, members=tuple(m for m in group.members if m.member_id not in gone))
    if group.phase is Phase.PREPARING_REBALANCE:
        return _maybe_complete(rest, now_ms)
    if not rest.members:
        return replace(rest, phase=Phase.EMPTY, generation=group.generation + 1,
                       protocol=None, protocol_type=None, leader=None)
    return _maybe_complete(_prepare_rebalance(rest, now_ms), now_ms)


def _drop_expired_pending(group: Group, now_ms: int) -> Group:
    return replace(group, pending=tuple(p for p in group.pending if p[1] > now_ms))


def expire(group: Group, now_ms: int) -> Group:
    """Time passes: members silent past their session timeout are removed (a member
    waiting in JoinGroup is not silent), ids given with MEMBER_ID_REQUIRED but not used
    expire, and a rebalance past its deadline completes without the members that did
    not join."""
    group = _drop_expired_pending(group, now_ms)
    waiting = group.phase is Phase.PREPARING_REBALANCE
    gone = {m.member_id for m in group.members if not (waiting and m.joined)
            and now_ms - m.last_heard_ms > m.session_timeout_ms}
    group = _remove(group, gone, now_ms) if gone else group
    return _maybe_complete(group, now_ms)


def commit_check(group: Group | None, member_id: str, generation: int) -> int:
    """May this OffsetCommit be stored?  A commit outside any generation (-1, no member:
    a consumer that assigns its partitions itself) only while the group has no members;
    a member's only for its current generation, and not while the leader's assignment is
    awaited (Kafka's REBALANCE_IN_PROGRESS)."""
    if generation < 0 and not member_id and (group is None or not group.members):
        return KafkaError.none
    refused = _member_check(group, member_id, generation)
    if refused is not None:
        return refused
    assert group is not None
    if group.phase is Phase.COMPLETING_REBALANCE:
        return KafkaError.rebalance_in_progress
    return KafkaError.none
