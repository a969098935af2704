"""The judge's search for a run of events, taken in C (``properties/checkers/native/judge.c``).

``judge(..., compiled=True)`` hands the C whole runs of events at a time: the states the
system may be in (their encodings), each event as a row of ints (``CompiledSearch.row``:
the action, the broker, the fields the event observed, record values as ids of the
judge's value map) and the value map.  The C matches the actions of ``ACTIONS_TAKEN`` --
produces and fetches, LeaderAndISR requests applied, a broker's start, crash and clean stop,
its StopReplica, a truncation, an ISR expansion, a controller's election or controlled
shutdown's move -- after the silent internal steps the Python judge would search before
them, checks every property of each match, and goes on until the run ends or it *declines*
an event -- no match, a match that breaks a property, an internal step it does not take, a
number past its fields: it never guesses.  The judge takes
a declined event, and every event of another kind, with the Python search from the states
the C left, then hands the next run back.  So the verdict is the Python judge's in every
case (``tests/conformance/test_compiled_judge.py``).
"""

from __future__ import annotations

import ctypes
import functools
import struct
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from conformance.judge.observation import (
    HARNESS,
    ID_FIELDS,
    ID_LIST_FIELDS,
    LIST_IDS,
    REGISTRATIONS,
    SCALAR_IDS,
    UNSEEN,
    Event,
    Observation,
    event_action,
    value_key,
)
from conformance.judge.search import FREEZING, Hypothesis
from model.actions.views import ERRORS, FENCED
from model.config import Config
from model.registry import ACTIONS
from model.state import NO_LEADER, OUT_OF_RANGE, ROLE_NAMES
from properties.checkers.native import SOURCE_DIR, STRICT, NativeUnavailable, NoCompiler, compiled
from properties.checkers.native_step import (
    CAPACITIES,
    CompiledStep,
    c_config,
    library,
    step_unsupported,
)
from traces.schema import FIELDS, PARAMS, POST, SCHEMA_ID, TYPES, FieldSpec
from traces.vocabulary import KINDS

ACTIONS_TAKEN = {"produce": 0, "send_fetch": 1, "handle_fetch": 2, "receive_fetch": 3, "become_leader": 5,
                 "become_follower": 6, "broker_restart": 7, "controller_elect": 8, "broker_crash": 9,
                 "create_topic": 10, "stop_replica": 11, "broker_stop": 12, "truncate": 13, "expand_isr": 14,
                 "controlled_shutdown": 15, "elect_leader": 16}
"""The actions ``judge.c`` matches (its J_ constants); NO_STEP: an event that is no step."""
NO_STEP = 4
NO_STEP_ROW = (NO_STEP, 0, 0, 0, 0)
"""The row of an event that is no step (``CompiledSearch.row(None)``)."""
FREEZING_TAKEN = {"become_leader", "become_follower", "broker_crash", "stop_replica", "broker_stop"}
"""The freezing ones among them (judge.c ``freezing``)."""

KEYS = {"leader": 0, "follower": 1, "fetch_offset": 2, "leader_epoch": 3, "post.hw": 4, "post.leo": 5,
        "post.isr": 6, "offset": 7, "error": 8, "leader_hw": 9, "records": 10, "post.role": 11, "post.leader": 12,
        "post.leader_epoch": 13, "post.log_end_epoch": 14, "isr": 15, "zk_version": 16, "controller_epoch": 17,
        "truncated_to": 18, "unclean": 19, "delete": 21}
K_INIT = 20  # the partition's first znode (judge.c init_partition's numbers), not a field
K_CURRENT = 22  # not a field: a replica's act renumbered as the current incarnation's (``current``)
"""Every field of these actions' views (``judge.c`` K_ constants; a produce's "value" is
mapped after the step, never compared)."""

V_INT, V_NONE, V_STR, V_LIST, V_OTHER, V_RECORDS = range(6)
STRINGS = {ERRORS[OUT_OF_RANGE]: 1, FENCED: 2, **{name: 3 + role for role, name in ROLE_NAMES.items()}}
"""The strings a view of these actions may hold, as ``judge.c`` names them."""

assert not any(ACTIONS[a].from_event for a in ACTIONS_TAKEN), "judge.c takes no step from an event's fields"
assert set(ACTIONS_TAKEN) & set(FREEZING) == FREEZING_TAKEN, "judge.c's freezing actions are the registry's"

MAX_STATES = 256  # judge.c MAXFOUND
_INT = 1 << 31
_LOW = (1 << 64) - 1


@functools.lru_cache(maxsize=64)
def unsupported(cfg: Config) -> str | None:
    """Why ``judge.c`` cannot judge under ``cfg``, or None: the compiled step's limits, and
    the holds of Kafka's HW outside the ISR, whose extra arguments it does not enumerate."""
    why = step_unsupported(cfg)
    if why is None and cfg.hw_waits_outside_isr:
        why = "the HW held outside the ISR (hw_waits_outside_isr): its steps' hold arguments"
    if why is None and cfg.startup_from_controller:
        why = "Kafka's broker start (startup_from_controller): its restarts' checkpointed HW"
    if why is None and cfg.alter_partition:
        why = "AlterPartition: its internal steps"
    return why


@functools.cache
def _entry() -> Any:
    fn = library().epochal_judge
    p_int = ctypes.POINTER(ctypes.c_int)
    fn.restype = ctypes.c_int
    fn.argtypes = [p_int, ctypes.c_int, ctypes.c_char_p, p_int, p_int, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int,
                   ctypes.POINTER(ctypes.c_uint64), ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int, p_int, p_int, p_int]
    return fn


@functools.cache
def _unbuilt() -> NativeUnavailable | None:
    """Why the library does not build here, or None: asked once a process, not once a
    judgement (``library`` itself does not cache a failed build).  A packaged job
    (``epochal package-job``: Python modules in a zip) has no C sources to build."""
    if not SOURCE_DIR.is_dir():
        return _NoSources(f"no C sources at {SOURCE_DIR} (a packaged job ships Python modules only)")
    try:
        _entry()
    except NativeUnavailable as exc:
        return exc
    return None


class _NoSources(NativeUnavailable):
    """The C sources are not on this machine's filesystem: nothing to build."""


def available() -> bool:
    """Whether the library builds here: False only where there is no C compiler
    (``NoCompiler``) or no C sources (a packaged job).  A build that fails is a broken
    source tree, never a reason to judge in Python instead: it raises, with the build's error."""
    why = _unbuilt()
    if why is None:
        return True
    if isinstance(why, (NoCompiler, _NoSources)):
        return False
    raise NativeUnavailable(str(why))


_RECORDS = KEYS["records"]


def _plain(key: int, v: object) -> list[int] | None:
    """A field of a plain type as judge.c reads it; None for another type."""
    t = type(v)
    if t is int:
        return [key, V_INT, 1, v] if -_INT <= v < _INT else None  # type: ignore[list-item,operator]
    if v is None:
        return [key, V_NONE, 0]
    if t is str:
        sid = STRINGS.get(v)  # type: ignore[arg-type]
        return [key, V_OTHER, 0] if sid is None else [key, V_STR, 1, sid]
    if t is list and all(type(x) is int and -_INT <= x < _INT for x in v):  # type: ignore[attr-defined]
        return [key, V_LIST, len(v), *v]  # type: ignore[arg-type]
    return None


_PLAIN, _ID, _ID_LIST, _RECORDS_FIELD, _CUT = range(5)
"""How ``event_row`` reads a field: as it is, a broker id, a list of them, records, a cut."""
_HANDLE_FETCH, _PRODUCE = ACTIONS_TAKEN["handle_fetch"], ACTIONS_TAKEN["produce"]


def _plans() -> dict[str, tuple[int, Any]]:
    """Per trace kind whose model action judge.c takes, whatever its params: the action, and
    a function that appends to a row the schema's params and post fields that are keys of
    its view (``observe``'s fields) and says how many (-1: a field ``row`` must read)."""
    plans = {}
    for kind in PARAMS.keys() | POST.keys():
        action = event_action(kind, {})
        if action not in ACTIONS_TAKEN or any(event_action(kind, {"reason": r, "state": r}) != action
                                              for r in ("", "init", "stop_replica", "IN_PROGRESS", "shutdown")):
            continue
        fields = [(False, spec.name, KEYS[spec.name],
                   _ID if spec.name in ID_FIELDS else _ID_LIST if spec.name in ID_LIST_FIELDS
                   else _RECORDS_FIELD if spec.name == "records" else _CUT if spec.name == "truncated_to" else _PLAIN)
                  for spec in PARAMS.get(kind, ()) if spec.name in KEYS]
        fields += [(True, spec.name, KEYS["post." + spec.name],
                    _ID if spec.name == "leader" else _ID_LIST if spec.name == "isr" else _PLAIN)
                   for spec in POST.get(kind, ()) if "post." + spec.name in KEYS]
        plans[kind] = (ACTIONS_TAKEN[action], _filler(fields))
        ROW_FIELDS[kind] = (ACTIONS_TAKEN[action], tuple(fields))
    return plans


ROW_FIELDS: dict[str, tuple[int, tuple[tuple[bool, str, int, int], ...]]] = {}
"""Per kind of ``_plans``: the action and its fields as ``_filler`` reads them (in the
params or the post, name, key, how), the plan ``native/rows/rows.c`` writes a row by."""


def _filler(fields: list[tuple[bool, str, int, int]]) -> Any:
    """The straight-line reader of these fields (as the schema's validators are generated):
    ``observe``'s translation of broker ids, then ``_plain`` or ``_records``."""
    lines = ["def fill(self, params, post, ids, row):", "    n = 0"]
    for in_post, name, key, how in fields:
        d = "post" if in_post else "params"
        lookup = "ids.get(v, UNSEEN)" if in_post else "ids[v]"
        lines += [f"    if {name!r} in {d}:", f"        v = {d}[{name!r}]", "        if type(v) is int:"]
        if how == _ID:
            lines.append(f"            if v >= 0: v = {lookup}")
        lines += ["            if not -_INT <= v < _INT: return -1", f"            row += ({key}, V_INT, 1, v)",
                  "            n += 1", "        else:"]
        pad = "            "
        if how == _ID_LIST:  # (model ids, so ints _plain would take as they are)
            each = "ids.get(x, UNSEEN)" if in_post else "ids[x]"
            lines += ["            if type(v) is list:", f"                v = sorted([{each} for x in v])",
                      f"                row += ({key}, V_LIST, len(v), *v)", "                n += 1",
                      "            else:"]
            pad += "    "
        if how == _CUT:  # (mismatch skips a cut named as none)
            lines.append("            if v is not None:")
            pad += "    "
        read = "self._records(v)" if how == _RECORDS_FIELD else f"_plain({key}, v)"
        lines += [f"{pad}f = {read}", f"{pad}if f is None: return -1", f"{pad}row += f", f"{pad}n += 1"]
    lines.append("    return n")
    scope = {"UNSEEN": UNSEEN, "_INT": _INT, "V_INT": V_INT, "V_LIST": V_LIST, "_plain": _plain}
    exec("\n".join(lines), scope)  # noqa: S102 -- code of the schema's own field names
    return scope["fill"]


def _int(v: object) -> int | None:
    """``v`` as the int it equals in Python (a bool, a whole float), or None."""
    if isinstance(v, int):
        return int(v) if -_INT <= v < _INT else None
    if isinstance(v, float) and v.is_integer() and -_INT <= v < _INT:
        return int(v)
    return None


class CompiledSearch:
    """One judgement's runs of events in C: the value ids of its value map, and the rows."""

    def __init__(self, cfg: Config, limit: int, bound: int) -> None:
        self.cfg, self.limit, self.bound = cfg, min(limit, MAX_STATES), bound
        self.ids: dict[Any, int] = {}  # value_key -> the id judge.c knows it by
        self.keys: list[Any] = []
        self.flat = bytearray()  # the rows of the events encoded so far, one after the other (C ints)
        self.at: list[int] = []  # event index -> its row's offset (in ints) in flat, -1: no row
        # (rows are added in the order of the events: ``at`` is the prefix of them written)

    def _value(self, v: object) -> int | None:
        try:
            k = value_key(v)
            known = self.ids.get(k)
        except TypeError:  # unhashable: the Python judge's to fail on
            return None
        if known is None:
            known = self.ids[k] = len(self.keys)
            self.keys.append(k)
        return known

    def _field(self, key: str, v: Any) -> list[int] | None:
        """The field as judge.c reads it: key, tag, length, payload; None if it cannot say
        what Python's ``==`` would."""
        if key == "records":
            return self._records(v)
        if v is None:
            return [KEYS[key], V_NONE, 0]
        if isinstance(v, list):
            ints = [_int(x) for x in v]
            if any(x is None or isinstance(y, bool) for x, y in zip(ints, v, strict=True)):
                return None
            return [KEYS[key], V_LIST, len(ints), *ints]  # type: ignore[list-item]
        if isinstance(v, str):
            sid = STRINGS.get(v)
            return [KEYS[key], V_OTHER, 0] if sid is None else [KEYS[key], V_STR, 1, sid]
        i = _int(v)
        if i is None:
            return [KEYS[key], V_OTHER, 0] if isinstance(v, (int, float, dict)) else None
        return [KEYS[key], V_INT, 1, i]

    def _records(self, v: Any) -> list[int] | None:
        """Records (offset, epoch, value id)*; a list that matches no records as V_OTHER.
        Records of plain ints and a hashable value (all of them, as a broker writes them)
        are read straight; any other list by ``_odd_records``, from its start."""
        if type(v) is list:
            ids, keys = self.ids, self.keys
            out = [_RECORDS, V_RECORDS, 3 * len(v)]
            for rec in v:
                if type(rec) is not list or len(rec) != 3:
                    break
                offset, epoch, value = rec
                if type(offset) is not int or type(epoch) is not int or not -_INT <= offset < _INT \
                        or not -_INT <= epoch < _INT:
                    break
                k = (type(value).__name__, value)  # value_key, inlined: once per record
                try:
                    known = ids.get(k)
                except TypeError:
                    break
                if known is None:
                    known = ids[k] = len(keys)
                    keys.append(k)
                out += (offset, epoch, known)
            else:
                return out
        return self._odd_records(v)

    def _odd_records(self, v: Any) -> list[int] | None:
        """``_records`` of any value: one record at a time, as Python's ``==`` compares it."""
        if not isinstance(v, list):
            return [KEYS["records"], V_OTHER, 0]
        out: list[int] = []
        for rec in v:
            if not (isinstance(rec, list) and len(rec) == 3):
                return [KEYS["records"], V_OTHER, 0]
            offset, epoch, value = _int(rec[0]), _int(rec[1]), self._value(rec[2])
            if value is None:
                return None
            if offset is None or epoch is None:
                return [KEYS["records"], V_OTHER, 0]
            out += (offset, epoch, value)
        return [KEYS["records"], V_RECORDS, len(out), *out]

    def event_row(self, e: Event, params: dict[str, Any], ids: dict[int, int]) -> list[int] | None:
        """``row(observe(i, e, ids))`` without building the observation, for an event of a
        kind whose action is fixed and whose fields are of the plain types (``params``: the
        event's, or {}); None where it cannot say (then ``row`` says)."""
        plan = _PLANS.get(e["kind"])
        post = e.get("post") or {}
        if plan is None or type(params) is not dict or type(post) is not dict:
            return None
        action, fill = plan
        node = e["node"]
        try:
            actor = ids.get(params.get("broker") if node == HARNESS else node, UNSEEN)  # type: ignore[arg-type]
            row = [action, actor, 0, 0, 0]
            n = fill(self, params, post, ids, row)
        except (KeyError, TypeError):  # an id no broker has, an unhashable one: observe's to say
            return None
        if n < 0:
            return None
        if type(actor) is not int:
            return None
        row[4] = n
        if action == _HANDLE_FETCH:
            answer = params.get("records")
            row[2] = len(answer) if type(answer) is list else 0
        elif action == _PRODUCE:
            value = self._value(params.get("value"))
            if value is None:
                return None
            row[3] = value
        return row

    def row(self, obs: Observation | None) -> Sequence[int] | None:
        """The event as judge.c reads it (None: an event that is no step), or None where the
        C cannot judge it: another action, a field it cannot compare as Python does."""
        if obs is None or not obs.action:
            return NO_STEP_ROW
        action = ACTIONS_TAKEN.get(obs.action)
        if action is None:
            return None
        fields: list[int] = []
        n = 0
        for key, v in obs.fields.items():
            if key not in KEYS or (key == "truncated_to" and v is None):  # (mismatch skips such a cut)
                continue
            f = self._field(key, v)
            if f is None:
                return None
            fields += f
            n += 1
        if obs.action == "create_topic":
            init = self._init(obs.fields)
            if init is None:
                return None
            fields += (K_INIT, V_LIST, len(init), *init)
            n += 1
        answer = obs.fields.get("records")
        cut = len(answer) if obs.action == "handle_fetch" and isinstance(answer, list) else 0
        value = 0
        if obs.action == "produce":
            value = self._value((obs.event.get("params") or {}).get("value"))  # type: ignore[assignment]
            if value is None:
                return None
        return [action, obs.actor, cut, value, n, *fields]

    def _init(self, f: dict[str, Any]) -> list[int] | None:
        """The topic's creation as ``search.init_partition`` writes it from the fields --
        leader, leader epoch, ISR and version, the AR (as bits) -- or None where the C cannot
        hold them."""
        isr, ar = f.get("isr") or [], f.get("_ar") or list(range(self.cfg.brokers))
        numbers = [f.get("leader", NO_LEADER), f.get("leader_epoch", 0), f.get("zk_version", 0)]
        if not all(type(x) is int and -2 <= x <= 100 for x in numbers):
            return None
        bits = []
        for brokers in (isr, ar):
            if type(brokers) is not list or any(type(b) is not int or not 0 <= b < self.cfg.brokers for b in brokers) \
                    or brokers != sorted(set(brokers)):
                return None
            bits.append(sum(1 << b for b in brokers))
        return [numbers[0], numbers[1], bits[0], numbers[2], bits[1]]

    @staticmethod
    def current(row: Sequence[int] | None) -> Sequence[int] | None:
        """The row of a broker's act on its replica whose numbers were renumbered as the
        current incarnation's (``replay._renumbering``) before the run reaches it: judge.c
        declines it where, in the first state before it, the broker's replica is of an older
        incarnation -- a zombie's act, which the Python judge reads unrenumbered."""
        if row is None or row[0] == NO_STEP:
            return row
        return [*row[:4], row[4] + 1, *row[5:], K_CURRENT, V_NONE, 0]

    def write_rows(self, events: list[Event], first: int, tables: tuple[Any, ...]) -> int:
        """The rows of ``events[first:]`` (``first``: the next event without a row) written
        in C (``rows_written``), up to the first whose row is ``event_row``'s caller's to
        write: as many rows as ``add`` would get from ``event_row``, the same ints.  The
        index of that event (``len(events)`` if none; ``first`` where no row is written in C)."""
        write = _rows_entry()
        return first if write is None else write(events, first, tables, self.ids, self.keys, self.flat, self.at)

    def forget_after(self, i: int) -> None:
        """Forget the rows of the events after ``i`` (written with numbers since renumbered)."""
        del self.at[i + 1:]

    def add(self, row: Sequence[int] | None) -> int:
        """Remember the next event's row (None: the Python judge's event): its offset, -1 for none."""
        at = -1
        if row is not None:
            try:  # (one struct call per row: an array's extend converts item by item, 3x slower)
                packed = _packed(len(row)).pack(*row)
            except struct.error:  # a number past a C int: the Python judge's event
                packed = None
            if packed is not None:
                at = len(self.flat) // 4
                self.flat += packed
        self.at.append(at)
        return at

    def run(self, hyps: list[Hypothesis], first: int, end: int, values: dict[Any, set[int]],
            last: bool = False) -> tuple[int, list[Hypothesis]] | None:
        """Judge the rows of events ``first`` .. ``end`` - 1 (``add``) from ``hyps``: how
        many were judged (all, or up to the one the C declined) and the states after them;
        ``values`` updated with what their produces wrote.  None if the C cannot hold these
        states (the Python judge goes on).  ``last``: no event follows ``end``, so when all
        are judged nobody asks for the states after them, and they are not decoded (the
        answer's states are then ``hyps``)."""
        if len(hyps) > MAX_STATES:
            return None
        encs = []
        for h in hyps:
            enc = _parts().encoding(h.state)
            if enc is None:  # fields of actions the C does not run, or a number past its own
                return None
            encs.append(enc)
        offsets = _packed(end - first).pack(*self.at[first:end])
        given: list[int] = []  # each value id's model values as two 64-bit sets
        for k in self.keys:
            bits = 0
            for v in values.get(k, ()):
                if 0 <= v < 128:
                    bits |= 1 << v
            given += (bits & _LOW, bits >> 64)
        table = (ctypes.c_uint64 * max(2, len(given)))(*given)
        out, outlens, outspec, nout = _buffers()
        judged = _entry()(c_config(self.cfg), len(hyps), b"".join(encs), _ints([len(e) for e in encs]),
                          _ints([int(h.speculative) for h in hyps]), bytes(self.flat), offsets, end - first, table,
                          self.limit, self.bound, out, len(out), outlens, outspec, ctypes.byref(nout))
        if judged <= 0:
            return None if judged < 0 else (0, hyps)
        now = table[:len(given)]
        for vid in range(len(self.keys)):
            bits = (now[2 * vid] ^ given[2 * vid]) | (now[2 * vid + 1] ^ given[2 * vid + 1]) << 64
            if bits:  # the model values its produces added
                added = values.setdefault(self.keys[vid], set())
                while bits:
                    low = bits & -bits
                    added.add(low.bit_length() - 1)
                    bits ^= low
        if last and judged == end - first:
            return judged, hyps
        after, at = [], 0
        for h in range(nout.value):
            after.append(Hypothesis(_parts().decoded(out[at:at + outlens[h]], hyps[0].state), bool(outspec[h])))
            at += outlens[h]
        return judged, after


ROWS_SOURCE = SOURCE_DIR / "rows"
"""``rows.c``: each event's row written from the decoded event, built on its own (it reads
Python objects, so against the running interpreter's headers)."""


def rows_tables(kinds: dict[str, Any], ids: dict[int, int]) -> tuple[Any, ...]:
    """What ``rows.c`` reads a judgement's rows with: per kind, None (a row of no step) or
    its ``ROW_FIELDS``; the broker-id map; the strings of a view; its numbers."""
    return kinds, ids, STRINGS, HARNESS, UNSEEN, _HANDLE_FETCH, _PRODUCE, NO_STEP


def _rows_entry() -> Any:
    """``rows.c``'s ``epochal_rows``, or None where the interpreter has no C headers (its
    rows are then written in Python, the same ints) or there are no C sources.  A build
    that fails raises (a broken source tree), every time, but is tried once a process."""
    lib = _rows_library()
    return None if lib is None else lib.epochal_rows


def _rows_library() -> Any:
    """``rows.c`` loaded, or None (``_rows_entry``); a failed build raises."""
    built = _rows_built()
    if isinstance(built, NativeUnavailable):
        raise built
    return built


@functools.cache
def _rows_built() -> Any:
    include = Path(sysconfig.get_paths()["include"])
    if not (include / "Python.h").is_file() or not ROWS_SOURCE.is_dir():
        return None
    flags = ("-O2", *STRICT, "-shared", "-fPIC", f"-I{include}")
    try:
        lib = ctypes.PyDLL(str(compiled("epochal-rows", flags, ".so", ROWS_SOURCE)))
    except NoCompiler:
        return None
    except NativeUnavailable as exc:
        return exc
    lib.epochal_rows.restype = ctypes.c_ssize_t
    lib.epochal_rows.argtypes = [ctypes.py_object, ctypes.c_ssize_t, *[ctypes.py_object] * 5]
    lib.epochal_group_ids.restype = ctypes.py_object
    lib.epochal_group_ids.argtypes = [ctypes.py_object, ctypes.py_object]
    lib.epochal_valid_events.restype = ctypes.c_ssize_t
    lib.epochal_valid_events.argtypes = [ctypes.py_object] * 3
    lib.epochal_read_lines.restype = ctypes.py_object
    lib.epochal_read_lines.argtypes = [ctypes.py_object] * 3
    return lib


_ID_NAMES = (SCALAR_IDS, LIST_IDS, REGISTRATIONS)


def group_ids(events: list[Event]) -> tuple[dict[int, int], list[int]] | None:
    """``(broker_ids(events), registration_epochs(events))`` read by ``rows.c`` in one pass
    over the group's events, or None where they are the Python side's to read: no C rows
    here (``_rows_entry``), or an event ``rows.c`` does not read as they do (a field of a
    type or size JSON does not give them as: an int subclass, an id past 64 bits)."""
    lib = _rows_library()
    return None if lib is None else lib.epochal_group_ids(events, _ID_NAMES)


SCHEMA_TYPES = ("string", "int", "bool", "number", "object", "value", "list<int>", "list<record>")
"""``traces.schema``'s types, as ``rows.c`` numbers them."""
assert set(SCHEMA_TYPES) == {t for t in TYPES if not t.endswith("?")}, "rows.c checks every type of the schema"


def _specs(specs: tuple[FieldSpec, ...]) -> tuple[tuple[str, int, bool, bool], ...]:
    return tuple((s.name, SCHEMA_TYPES.index(s.type.rstrip("?")), s.type.endswith("?"), s.required) for s in specs)


_EVENT_TABLES = (SCHEMA_ID, _specs(FIELDS), {kind: (spec.scope == "partition", _specs(PARAMS.get(kind, ())),
                                                    _specs(POST.get(kind, ()))) for kind, spec in KINDS.items()})
"""What ``rows.c`` recognises a valid event by: the schema's id, its top-level fields, and
per kind its scope and the fields of its params and post (each: name, type, nullable,
required), as ``traces.schema``'s generated checks read them."""


def valid_events(objs: list[Any]) -> bytearray:
    """Per decoded line, 1 where ``rows.c`` finds it a valid event (``traces.schema.validate``
    says None), normalized in place as ``normalize`` does; 0 where it is ``validate``'s to say
    (``traces.reader.Recognise``).  All 0 where no rows are written in C."""
    valid = bytearray(len(objs))
    lib = _rows_library()
    if lib is not None:
        lib.epochal_valid_events(objs, _EVENT_TABLES, valid)
    return valid


def read_lines(data: bytes, file: str) -> tuple[list[Event], list[tuple[int, int, bytes]], str | None] | None:
    """A plain JSON Lines file's bytes read by ``rows.c``'s reader (``lines.c``) in one call,
    or None where no rows are written in C: ``(events, others, run)`` -- its valid events in
    line order, each normalized and tagged with ``_file`` (``file``) and ``_line``; every
    other non-blank line as ``(events before it, line number, its bytes)``, for
    ``traces.reader.line_record`` to decode, validate and word the reason of; and the run of
    every event where they share one.  Each event is the one ``iter_file`` gives for its
    line, and the others are its other lines (``tests/conformance/test_compiled_rows.py``)."""
    lib = _rows_library()
    return None if lib is None else lib.epochal_read_lines(data, _EVENT_TABLES, file)


def recognise() -> Any:
    """``valid_events`` where the rows are written in C (``rows_written``), else None: the
    reader validates each line in Python alone."""
    return valid_events if rows_written() else None


def rows_written() -> bool:
    """Whether the rows are written in C here (``_rows_entry``)."""
    return _rows_entry() is not None


@functools.cache
def _parts() -> CompiledStep:
    """The compiled step's encoder: a state's parts' encodings remembered, so that a state
    handed back and forth is encoded and decoded only where it changed."""
    return CompiledStep()


@functools.cache
def _packed(n: int) -> struct.Struct:
    """n C ints, as judge.c reads a row (one call: faster than an array's item by item)."""
    return struct.Struct(f"={n}i")


@functools.cache
def _buffers() -> tuple[Any, Any, Any, Any]:
    """The output buffers of every call (one process judges one group at a time)."""
    return (ctypes.create_string_buffer(CAPACITIES["MAXENC"] * (MAX_STATES + 1)), (ctypes.c_int * MAX_STATES)(),
            (ctypes.c_int * MAX_STATES)(), ctypes.c_int())


_PLANS = _plans()


def _ints(xs: list[int]) -> Any:
    return (ctypes.c_int * max(1, len(xs)))(*xs)
