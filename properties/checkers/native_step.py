"""One model step taken by the compiled search's own rules: ``native/step.c``, loaded with ctypes.

The native search (``properties.checkers.native``) enumerates every successor of a state; the
trace judge asks for one step at a time -- the action an event names, with its arguments.
``CompiledStep`` takes that step with the same C functions the search's successor function
calls (``rules.c``, ``shutdown.c``, ``topics.c``, ``reassign.c``, ``expire.c``,
``alter_partition.c``, ``kafka_leader.c``; ``step.c`` only dispatches on the action's name),
so the judge and the search run one compiled copy of the rules, and the Python model
(``model.registry.apply``) stays the reference both are tested against
(``tests/conformance/test_compiled_step.py``).

The library is the search's sources built with ``-shared -DEPOCHAL_LIBRARY`` and larger
array capacities (a recorded run produces more records than a search's bound), cached like
the binary by a hash of the sources, compiler and flags.  A state crosses as its
order-preserving encoding (``native.encode`` / ``native.decode``); a message argument
(LeaderAndISR, fetch, StopReplica, AlterPartition) as its index in the state's sorted set,
an absent hold, checkpointed HW or offline replica as -1.

Whatever the C cannot take is taken by the Python model instead, so a step's result is the
model's either way: an action the native search does not run (partitions added or
removed), a state whose fields belong to such actions or whose numbers pass the C's 8-bit
fields, a message not in flight.
``CompiledStep.counts`` says how many steps went each way."""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from model.actions import Step
from model.actions.controller import NO_OFFLINE
from model.actions.replication import NO_HOLD
from model.config import Config
from model.registry import apply
from model.state import State
from properties.checkers.native import (
    MAX_RECORDS,
    NARROW_BROKERS,
    STRICT,
    StateReader,
    compiled,
    encode_part,
    state_parts,
    unsupported,
)

CAPACITIES = {"MAXREC": 48, "MAXCOMMIT": 96, "MAXSMALL": 96, "MAXLED": 48, "MAXLAI": 64, "MAXFETCH": 32,
              "MAXENC": 16384}
"""The library's array capacities (``native/state.h``): records in a log or a fetch answer,
committed and acknowledged records, leaders, requests in flight, encoded bytes."""

LIBRARY_FLAGS = ("-O3", *STRICT, "-shared", "-fPIC", "-DEPOCHAL_LIBRARY",
                 *(f"-D{name}={value}" for name, value in CAPACITIES.items()))

_TRUNCATION = {"hw": 0, "kip101": 1, "kip279": 2, "kip320": 3}
_BOUND = 1000  # an UNBOUNDED count: past the C's 8-bit counters, which the library then refuses


@functools.cache
def library(directory: Path | None = None) -> ctypes.CDLL:
    """The step library (of the sources in ``directory``, default ``native.SOURCE_DIR``),
    built now if these sources have not been built so before."""
    lib = ctypes.CDLL(str(compiled("epochal-step", LIBRARY_FLAGS, ".so", directory)))
    lib.epochal_step.restype = ctypes.c_int
    lib.epochal_step.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                                 ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    return lib


def step_unsupported(cfg: Config) -> str | None:
    """Why the compiled step cannot judge under ``cfg`` at all, or None.  The native search's
    own limits (``native.unsupported``), except two that bound or enable single actions
    rather than change a rule -- records, partitions added or removed: their steps, and the
    states they lead to, are the Python model's (see the module docstring).  Kafka's
    reassignment in phases is the search's (``native/reassign.c``) but not yet held to the
    Python judge step by step, so a configuration with it is the Python model's throughout."""
    if cfg.reassign_phases and cfg.reassignments:
        return "the compiled step supports seed 000 F's reassignment in one write (not Kafka's phases)"
    if cfg.replication_factor not in (0, cfg.brokers):
        return "the compiled step supports every broker a replica (no --replication-factor)"
    if cfg.brokers > NARROW_BROKERS:  # the search's wide build only
        return f"the compiled step supports at most {NARROW_BROKERS} brokers"
    if not (cfg.fence_controller_epoch and cfg.fence_broker_epoch):
        return "the compiled step supports fencing on"
    return unsupported(replace(cfg, records=min(cfg.records, MAX_RECORDS), partition_changes=0))


@functools.lru_cache(maxsize=64)
def c_config(cfg: Config) -> Any:
    """``native/state.h``'s Cfg for ``cfg``, its fields in order (``native.config_args``'s
    settings, as main.c derives them)."""
    kip320 = cfg.truncation == "kip320"
    fields = (cfg.brokers, min(cfg.records, _BOUND), min(cfg.max_epoch, _BOUND), min(cfg.max_crashes, _BOUND),
              min(cfg.max_pauses, _BOUND), cfg.min_insync, int(cfg.unclean), _TRUNCATION[cfg.truncation],
              int(kip320), int(kip320), min(cfg.preferred_elections, _BOUND), min(cfg.max_shutdowns, _BOUND),
              min(cfg.deletions, _BOUND), int(cfg.topic_ids), min(cfg.reassignments, _BOUND),
              min(cfg.max_expiries, _BOUND), cfg.fetch_max_records, 1, 0, int(cfg.alter_partition),
              int(cfg.startup_from_controller), int(cfg.offline_replica_writes), int(cfg.hw_waits_outside_isr),
              int(cfg.leader_keeps_follower_state),
              # the state's partition slots: its partitions alone, as the judge's states have them
              # (a state with more, of partitions added, fails to decode and is the model's)
              cfg.partitions, 0, cfg.partitions, int(cfg.reuse_partition_ids), int(cfg.partition_identity),
              int(cfg.reassign_phases), cfg.replication_factor,
              int(cfg.fence_controller_epoch), int(cfg.fence_broker_epoch))
    return (ctypes.c_int * len(fields))(*fields)


def _broker_args(n: int) -> Callable[[State, tuple], tuple[int, ...] | None]:
    """``n`` arguments ``(b, p, x...)`` -> ``(b, x...)`` on partition 0; ``(b,)`` as it is."""
    def convert(s: State, args: tuple) -> tuple[int, ...] | None:
        if len(args) != n or (n > 1 and args[1] != 0):
            return None
        return (args[0], *args[2:]) if n > 1 else tuple(args)
    return convert


def _as_they_are(s: State, args: tuple) -> tuple[int, ...] | None:
    """on_broker_startup (c, b): no partition among them"""
    return tuple(args)


def _held(s: State, args: tuple) -> tuple[int, ...] | None:
    """produce (b, p[, hold]) -> (b, hold)"""
    converted = _broker_args(2)(s, args[:2])
    return None if converted is None else (*converted, args[2] if len(args) == 3 else NO_HOLD)


def _restarted(s: State, args: tuple) -> tuple[int, ...] | None:
    """broker_restart (b[, checkpointed_hw]) -> (b, checkpointed_hw), -1 for none (a
    negative checkpointed HW is left to the Python model)"""
    hw = args[1] if len(args) == 2 else None
    if hw is not None and hw < 0:
        return None
    return (args[0], -1 if hw is None else hw)


def _elected(s: State, args: tuple) -> tuple[int, ...] | None:
    """elect_leader (c, p, leader[, offline]) -> (c, leader, offline)"""
    converted = _broker_args(3)(s, args[:3])
    return None if converted is None else (*converted, args[3] if len(args) == 4 else NO_OFFLINE)


def _index(messages: tuple, m: object) -> int | None:
    """m's index in a state's set of messages; None for a message not in flight, whose step
    is then the Python model's (not enabled)."""
    try:
        return messages.index(m)
    except ValueError:
        return None


def _message(field: str) -> Callable[[State, tuple], tuple[int, ...] | None]:
    """A message argument as its index in the state's set ``field``."""
    def convert(s: State, args: tuple) -> tuple[int, ...] | None:
        i = _index(getattr(s, field), args[0])
        return None if i is None else (i,)
    return convert


def _fetch_held(s: State, args: tuple) -> tuple[int, ...] | None:
    """handle_fetch (m[, hold]) -> (m's index, hold)"""
    i = _index(s.fetches, args[0])
    return None if i is None else (i, args[1] if len(args) == 2 else NO_HOLD)


def _answered(s: State, args: tuple) -> tuple[int, ...] | None:
    """alter_partition (c, m) -> (c, m's index)"""
    c, m = args
    i = _index(s.alter_partition, m)
    return None if i is None else (c, i)


def _bits(brokers: tuple) -> int | None:
    """A sorted set of brokers as a bit set; None for another tuple (the Python model's)."""
    if not brokers or list(brokers) != sorted(set(brokers)) or not 0 <= brokers[0] <= brokers[-1] < 8:
        return None
    return sum(1 << b for b in brokers)


def _created(s: State, args: tuple) -> tuple[int, ...] | None:
    """create_topic (c, p, ar, leader): the AR as a bit set"""
    c, p, ar, leader = args
    bits = _bits(ar)
    return None if p != 0 or bits is None else (c, bits, leader)


def _reassigned(s: State, args: tuple) -> tuple[int, ...] | None:
    """reassign_start (c, p, rar): the RAR as a bit set"""
    c, p, rar = args
    bits = _bits(rar)
    return None if p != 0 or bits is None else (c, bits)


_ARGS: dict[str, Callable[[State, tuple], tuple[int, ...] | None]] = {
    **{name: _broker_args(1) for name in ("broker_crash", "broker_pause", "broker_resume",
                                             "broker_reregister", "controller_elect", "controller_resign",
                                             "broker_stop")},
    "broker_restart": _restarted, "elect_leader": _elected, "on_broker_startup": _as_they_are,
    "controlled_shutdown": _broker_args(4), "truncate": _broker_args(2), "produce": _held,
    "send_fetch": _broker_args(2), "isr_update_failed": _broker_args(2), "shrink_isr": _broker_args(3),
    "expand_isr": _broker_args(3), "delete_topic": _broker_args(2), "preferred_election": _broker_args(2),
    "create_topic": _created, "reassign_start": _reassigned, "reassign_complete": _broker_args(3),
    "broker_expire": _broker_args(1), "reject_leader_and_isr": _message("leader_and_isr"),
    "become_leader": _message("leader_and_isr"), "become_follower": _message("leader_and_isr"),
    "handle_fetch": _fetch_held, "receive_fetch": _message("fetches"),
    "stop_replica": _message("stop_replica"), "propose_isr": _broker_args(3), "alter_partition": _answered,
    "apply_isr": _message("alter_partition"),
}
"""How each action ``step.c`` takes gets its int arguments from the model's ``Step.args``."""

_NAMES = {name: name.encode() for name in _ARGS}


class CompiledStep:
    """``model.registry.apply`` with the compiled rules: ``step(s, cfg, step)`` is the state
    the step leads to, or None if its guard does not hold -- the model's answer, taken by the
    C where it can (``counts``: "compiled" and "python" steps)."""

    def __init__(self, lib: ctypes.CDLL | None = None) -> None:
        self.lib = library() if lib is None else lib
        self.out = ctypes.create_string_buffer(CAPACITIES["MAXENC"])
        self.argv = (ctypes.c_int * 4)()
        self.counts = {"compiled": 0, "python": 0}
        self._last: tuple[State | None, bytes | None] = (None, None)  # the state encoded last, and its encoding
        self._parts: dict[int, tuple[object, bytes]] = {}  # id(part) -> (part, its encoding)
        self._config: tuple[Config | None, Any] = (None, None)  # the configuration used last, as the C's

    def __call__(self, s: State, cfg: Config, step: Step) -> State | None:
        t = self.compiled(s, cfg, step)
        if t is not False:
            self.counts["compiled"] += 1
            return t  # type: ignore[return-value]
        self.counts["python"] += 1
        return apply(s, cfg, step)

    def compiled(self, s: State, cfg: Config, step: Step) -> State | None | bool:
        """The compiled step's answer, or False where the C cannot take it."""
        convert = _ARGS.get(step.action)
        enc = self.encoding(s)
        if convert is None or enc is None:
            return False
        args = convert(s, step.args)
        if args is None:
            return False
        for i, a in enumerate(args):
            self.argv[i] = a
        known = self._config
        if known[0] is not cfg:
            known = self._config = (cfg, c_config(cfg))
        n = self.lib.epochal_step(known[1], enc, len(enc), _NAMES[step.action], self.argv, len(args), self.out,
                                  len(self.out))
        if n == 0:
            return None
        if n < 0:
            return False
        return self.decoded(ctypes.string_at(self.out, n), s)

    # A step changes a part or two of a state: the others keep their objects in the model's
    # successor, and their encodings here.  So a state is encoded part by part, each part's
    # encoding remembered by the part's identity, and the successor decoded against the state
    # it was stepped from: a part whose encoding is the same as the parent's is the parent's
    # object (the encoding of a part is self-delimiting, so equal bytes are an equal part).

    def encoding(self, s: State) -> bytes | None:
        """``native.encode(s)`` (None if the C cannot hold it), remembered for the last state:
        the judge tries every candidate step of a state in a row."""
        last, enc = self._last
        if last is not s:
            try:
                zk, brokers, lai, fetches, ghost, stops, alters = state_parts(s)
                enc = b"".join((self._part(zk), *(b"\x01" + self._part(b) for b in brokers), b"\x00",
                                self._part(lai), self._part(fetches), self._part(ghost), self._part(stops),
                                self._part(alters)))
            except ValueError:  # fields of actions the C does not run, or a number out of range
                enc = None
            self._last = (s, enc)
        return enc

    def _part(self, x: object) -> bytes:
        known = self._parts.get(id(x))
        if known is not None and known[0] is x:
            return known[1]
        enc = encode_part(x)
        self._remember(x, enc)
        return enc

    def _remember(self, x: object, enc: bytes) -> None:
        if len(self._parts) > 100_000:
            self._parts.clear()
        self._parts[id(x)] = (x, enc)

    def decoded(self, data: bytes, parent: State) -> State:
        """``native.decode(data)``, sharing the parts it has in common with ``parent``."""
        r = StateReader(data)
        zk = self._read(r, parent.zk, r.zk)
        brokers = []
        while r.more():
            k = len(brokers)
            brokers.append(self._read(r, parent.brokers[k] if k < len(parent.brokers) else None, r.broker))
        lai = self._read(r, parent.leader_and_isr, lambda: r.many(r.leader_and_isr))
        fetches = self._read(r, parent.fetches, lambda: r.many(r.fetch))
        ghost = self._read(r, parent.ghost, r.ghost)
        stops = self._read(r, parent.stop_replica, lambda: r.many(r.stop_replica))
        alters = self._read(r, parent.alter_partition, lambda: r.many(r.alter_partition))
        r.end()
        return State(zk, tuple(brokers), lai, fetches, ghost, stops, alters)

    def _read(self, r: StateReader, old: Any, read: Callable[[], Any]) -> Any:
        """The part at the reader: ``old`` if its encoding is there, else the part read."""
        if old is not None:
            enc = self._part(old)
            if r.data.startswith(enc, r.i):
                r.i += len(enc)
                return old
        start = r.i
        x = read()
        self._remember(x, r.data[start:r.i])
        return x
