"""The native search: ``properties/checkers/native/``, the checker's breadth-first search compiled.

The Python checker (``properties.checkers.bfs``) is the reference: it runs the model as written.  At
three brokers the kip320 space is far beyond what it explores in minutes (about 10,000
states/s), so the same search -- the rules of ``model.actions``, the reduction of
``properties.checkers.reduction``, the canonical representative of ``properties.checkers.symmetry``, the properties of
``properties`` -- is also written in C and run as a subprocess (``epochal check --native``).

It is a second copy of the rules, so three tests hold it to the model
(``tests/properties/test_native.py``):

* **States.**  The two exchange states in one encoding (``encode``): the ``State`` tuple
  flattened, each int ``v`` written as the byte ``v + 2`` and each variable-length tuple as
  ``(1, element)* 0``.  Comparing encodings bytewise orders them exactly as Python orders the
  tuples, so the native search picks the same canonical representative as
  ``properties.checkers.symmetry.canonical`` -- the smallest candidate renaming -- and the same ample step.
* **Successors.**  For every state of the two-broker searches and a sample of three-broker
  ones, the native successors (as canonical encodings, in order) and the property verdict
  equal the Python model's.
* **Searches.**  Whole searches reach the same distinct states, transitions, depth and
  verdict, and a counterexample found natively is replayed through the Python model (the
  native search reports the fingerprints along its path; ``properties.checkers.bfs.replay_path``
  follows them through ``model.registry.successors``), so every step printed is the model's.

The C is split by concern, each unit named after the Python it ports (``state.h`` lists
them): ``rules.c`` (``model.actions``), ``symmetry.c``, ``reduction.c``, ``properties.c``,
``encoding.c``, ``store.c`` and ``search.c`` (the loop), ``main.c`` (the command line).  The
binary is compiled on first use with the machine's C compiler (``$CC`` or ``cc``), into
``$EPOCHAL_CACHE`` (default ``~/.cache/epochal``), keyed by a hash of every source file: no
build step at install time, and an edited unit is rebuilt on its next use.  A source that
does not compile is an error naming the compiler's first error, never a skipped check.

Supported: every partition count (``Config.partition_ids``: the partitions at the start and
one slot per partition change) and up to five brokers (past three partition ids or four
brokers, a build of wider states, ``WIDE_FLAGS``), any replication factor, up to six records, with or without fencing -- and
of the admin actions, partitions added and removed (``--partition-changes``, ``native/partitions.c``,
with reused ids and their identities), preferred-replica elections
(``--preferred-elections``), controlled shutdowns
with the clean stop after them and their StopReplica (``--max-shutdowns``,
``native/shutdown.c``), topic deletion and re-creation with or without topic ids
(``--deletions``, ``native/topics.c``) and reassignments with their StopReplica
(``--reassignments``, ``native/reassign.c``: seed 000 F's, or Kafka's phases with
``Config.reassign_phases``); of the failures, session
expiries of a running broker (``--max-expiries``, ``native/expire.c``) too; and the Kafka
configurations: ISR changes through the controller (``--alter-partition``,
``native/alter_partition.c``) and the rules of Kafka's brokers (``model.config.KAFKA_BROKER``;
the HW held outside the ISR and the write per dead replica in ``native/kafka_leader.c``,
the others where the rule they change lives in ``rules.c``).  Other configurations get a
clear error naming what is not supported.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from model.config import Config
from model.registry import unsupported_features
from model.state import (
    AlterPartition,
    Broker,
    Entry,
    Fetch,
    Ghost,
    LeaderAndIsr,
    PartitionZnode,
    Replica,
    State,
    StopReplica,
    Zk,
    initial,
)
from properties.checkers.bfs import (
    DEFAULT_SEARCH,
    Result,
    SearchOptions,
    Violation,
    replay_path,
    search_key,
)
from properties.safety import first_violation

SOURCE_DIR = Path(__file__).parent / "native"
STRICT = ("-Wall", "-Werror=incompatible-pointer-types")
"""Warnings, and the one made an error: an array of another row length passed for a function's
(a caller left behind when a function's argument rows grew) reads the wrong numbers and
builds all the same under a compiler older than GCC 14."""
CFLAGS = ("-O3", "-pthread", *STRICT)
MAX_BROKERS = 5  # the wide build's native/state.h MAXB (the model's most too)
NARROW_BROKERS = 4  # native/state.h MAXB: the brokers of a state of the usual build
MAX_RECORDS = 6
NARROW_PARTITION_IDS = 3  # native/state.h MAXP: the partition slots of a state of the usual build
WIDE_FLAGS = ("-DMAXP=5", "-DMAXB=5", "-DMAXENC=4096", "-DMAXLAI=96", "-DMAXLED=40", "-DMAXSTOP=32")
"""The build for more partition ids (up to the model's five: three partitions, two changes)
or five brokers: a state with slots for them and room for their requests in flight -- a
larger state every step copies, so the configurations that fit the usual build keep it."""


class NativeUnavailable(Exception):
    """The native search cannot run here or for this configuration (the message says why)."""


class NoCompiler(NativeUnavailable):
    """No C compiler here: the one reason a caller may quietly fall back to Python.  A build
    that fails is a broken source tree, never a reason to skip."""


# ---------------------------------------------------------------------------------------
# The shared encoding
# ---------------------------------------------------------------------------------------


_NATIVE_FIELDS = {PartitionZnode: 7, Replica: 11, LeaderAndIsr: 9, StopReplica: 6, Ghost: 18, Fetch: 10, Broker: 7, State: 7}
"""How many leading fields of each state tuple the native search holds (``native/state.h``):
all of them but for what belongs to actions the native search does not run
(``unsupported``), which is at its default in every state it can be given and left out of
the encoding, so that ``decode`` (which rebuilds it from the defaults) round-trips.  Every
partition slot of the state is encoded (``native/state.h``'s ``zn`` and ``rp``)."""


def _native_part(x: tuple) -> tuple:
    n = _NATIVE_FIELDS.get(type(x))
    if n is None:
        return x
    defaults = type(x)._field_defaults  # type: ignore[attr-defined]
    for name, value in zip(x._fields[n:], x[n:], strict=True):  # type: ignore[attr-defined]
        if value != defaults[name]:
            raise ValueError(f"{type(x).__name__}.{name}={value!r}: the native search does not run the action behind it")
    return x[:n]


def _put(x: object, out: bytearray) -> None:
    if isinstance(x, int):  # bool included: False < True as 0 < 1
        v = int(x) + 2
        if not 0 <= v <= 255:
            raise ValueError(f"value {int(x)} out of the encoding's range")
        out.append(v)
    elif hasattr(x, "_fields"):  # a NamedTuple: fixed fields, no markers
        for field in _native_part(x):  # type: ignore[arg-type]
            _put(field, out)
    else:  # a variable-length tuple: (1, element)* 0 -- shorter sorts first, as in Python
        for element in x:  # type: ignore[union-attr]
            out.append(1)
            _put(element, out)
        out.append(0)


def encode(s: State) -> bytes:
    """The order-preserving encoding of a state: ``encode(a) < encode(b)`` exactly when
    ``a < b`` as Python tuples (see the module docstring)."""
    out = bytearray()
    _put(s, out)
    return bytes(out)


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.i = 0

    def int(self) -> int:
        v = self.data[self.i] - 2
        self.i += 1
        return v

    def more(self) -> bool:
        m = self.data[self.i]
        self.i += 1
        if m > 1:
            raise ValueError(f"bad state encoding at byte {self.i - 1}: expected a tuple marker")
        return m == 1

    def ints(self) -> tuple[int, ...]:
        out = []
        while self.more():
            out.append(self.int())
        return tuple(out)

    def many(self, read: Callable[[], object]) -> tuple:
        out = []
        while self.more():
            out.append(read())
        return tuple(out)


_RUNS: dict[tuple[int, bytes], tuple] = {}
"""Tuples of fixed-size elements read before (logs, committed records, broker sets, ...),
by their element size and bytes: most of a state's bytes, and shared -- a follower's log is
its leader's, a successor's parts are mostly its parent's."""


class StateReader(_Reader):
    """Reads the parts of a state's encoding, each as ``encode`` wrote it."""

    def entry(self) -> Entry:
        return Entry(self.int(), self.int())

    def ints(self) -> tuple[int, ...]:
        """A tuple of ints: ``(1 v)* 0``."""
        return self._run(2, lambda d, k: d[k + 1] - 2, ())

    def log(self) -> tuple[Entry, ...]:
        """A tuple of entries: ``(1 value epoch)* 0``."""
        return self._run(3, lambda d, k: Entry(d[k + 1] - 2, d[k + 2] - 2), ())

    def pairs(self) -> tuple[tuple[int, int], ...]:
        """A tuple of int pairs: ``(1 (1 a 1 b 0))* 0``."""
        return self._run(6, lambda d, k: (d[k + 2] - 2, d[k + 4] - 2), (1, 3))

    def triples(self) -> tuple[tuple[int, int, int], ...]:
        """A tuple of int triples: ``(1 (1 a 1 b 1 c 0))* 0``."""
        return self._run(8, lambda d, k: (d[k + 2] - 2, d[k + 4] - 2, d[k + 6] - 2), (1, 3, 5))

    def committed(self) -> tuple[tuple[int, int, Entry], ...]:
        """The ghost's committed records ``(partition, offset, entry)``: ``(1 (1 p 1 o 1 v e 0))* 0``."""
        return self._run(9, lambda d, k: (d[k + 2] - 2, d[k + 4] - 2, Entry(d[k + 6] - 2, d[k + 7] - 2)), (1, 3, 5))

    def _run(self, size: int, element: Callable[[bytes, int], Any], markers: tuple[int, ...]) -> tuple:
        """A tuple of fixed-size elements, each behind its marker 1, remembered by its bytes.
        ``markers``: where within an element a plain tuple's markers 1 are; the element's last
        byte then closes that tuple (0)."""
        data, i = self.data, self.i
        j = i
        while j < len(data) and data[j] == 1:
            j += size
        if j >= len(data) or data[j] != 0:
            raise ValueError(f"bad state encoding at byte {j}: expected the end of a tuple")
        key = (size, data[i:j])
        run = _RUNS.get(key)
        if run is None:
            for k in range(i, j, size):
                if any(data[k + m] != 1 for m in markers) or (markers and data[k + size - 1] != 0):
                    raise ValueError(f"bad state encoding at byte {k}: expected a tuple marker")
            run = tuple(element(data, k) for k in range(i, j, size))
            if len(_RUNS) > 50_000:
                _RUNS.clear()
            _RUNS[key] = run
        self.i = j + 1
        return run

    def zk(self) -> Zk:
        return Zk(self.int(), self.int(), self.ints(), self.ints(), self.int(), self.many(self.znode))

    def znode(self) -> PartitionZnode:
        return PartitionZnode(self.int(), self.int(), self.ints(), self.int(), self.ints(), self.ints(), self.int())

    def replica(self) -> Replica:
        return Replica(self.int(), self.int(), self.int(), self.ints(), self.int(), self.log(), self.int(),
                       self.int(), self.ints(), self.int(), self.int())

    def broker(self) -> Broker:
        return Broker(self.int(), bool(self.int()), self.int(), self.int(), self.many(self.replica), self.ints(),
                      self.ints())

    def leader_and_isr(self) -> LeaderAndIsr:
        return LeaderAndIsr(self.int(), self.int(), self.int(), self.int(), self.ints(), self.int(), self.int(),
                            self.int(), self.int())

    def fetch(self) -> Fetch:
        return Fetch(self.int(), self.int(), self.int(), self.int(), self.int(), self.int(), self.log(),
                     self.int(), self.int(), self.int())

    def ghost(self) -> Ghost:
        int_, pairs = self.int, self.pairs
        return Ghost(self.committed(), pairs(), self.triples(), self.ints(), int_(), pairs(), int_(), int_(), int_(),
                     int_(), int_(), pairs(), int_(), pairs(), int_(), int_(), self.ints(), int_())

    def stop_replica(self) -> StopReplica:
        return StopReplica(self.int(), self.int(), self.int(), self.int(), self.int(), bool(self.int()))

    def alter_partition(self) -> AlterPartition:
        return AlterPartition(self.int(), self.int(), self.int(), self.int(), self.ints(), self.int(), self.int(),
                              self.int(), self.int())

    def end(self) -> None:
        if self.i != len(self.data):
            raise ValueError("bad state encoding: trailing bytes")


def decode(data: bytes) -> State:
    """The state ``encode`` wrote."""
    r = StateReader(data)
    s = State(r.zk(), r.many(r.broker), r.many(r.leader_and_isr), r.many(r.fetch), r.ghost(), r.many(r.stop_replica),
              r.many(r.alter_partition))
    r.end()
    return s


def encode_part(x: object) -> bytes:
    """The encoding of one part of a state: ``encode(s)`` is its parts' (``state_parts``),
    one after the other."""
    out = bytearray()
    _put(x, out)
    return bytes(out)


def state_parts(s: State) -> tuple:
    """The fields of ``s`` the native search holds, in the encoding's order (ValueError if
    a field after them is not at its default)."""
    return _native_part(s)


_M64 = (1 << 64) - 1


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def fingerprint(data: bytes) -> int:
    """The native search's 64-bit fingerprint of an encoding -- the same function as
    ``fingerprint`` in native/encoding.c: MurmurHash3's 64-bit body and finaliser over
    little-endian 8-byte words.  (A plain multiply-xorshift per word, tried first, merged two of the
    then 4,049,903 states of the three-broker kip101 search: small differences in two words
    cancelled.  The test pinning that count would catch a weak function again.)"""
    h = 0x243F6A8885A308D3 ^ len(data)
    for i in range(0, len(data), 8):
        w = int.from_bytes(data[i : i + 8], "little")
        w = (w * 0x87C37B91114253D5) & _M64
        w = _rotl(w, 31)
        w = (w * 0x4CF5AD432745937F) & _M64
        h ^= w
        h = (_rotl(h, 27) * 5 + 0x52DCE729) & _M64
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & _M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & _M64
    h ^= h >> 33
    return h or 1


def key_bytes(s: State, cfg: Config, symmetry: bool, reduction: bool) -> bytes:
    """The encoding of the state a search stores for ``s`` (``properties.checkers.bfs.search_key``)."""
    return encode(search_key(s, cfg, symmetry, reduction))


# ---------------------------------------------------------------------------------------
# What it supports, and the binary
# ---------------------------------------------------------------------------------------


def unsupported(cfg: Config) -> str | None:
    """Why the native search cannot run ``cfg``, or None.  The actions ``native/rules.c`` leaves
    out, and the configuration knob each needs, are the registry's (``model.registry``)."""
    reasons = []
    if cfg.brokers > MAX_BROKERS:
        reasons.append(f"at most {MAX_BROKERS} brokers")
    if cfg.records > MAX_RECORDS:
        reasons.append(f"at most {MAX_RECORDS} records")
    reasons += [f"no {feature}" for feature in unsupported_features("native", cfg)]  # actions not in rules.c
    return None if not reasons else "the native search supports " + ", ".join(reasons)


def _cache_dir() -> Path:
    env = os.environ.get("EPOCHAL_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "epochal"


def sources(directory: Path | None = None) -> list[Path]:
    """Every file the binary is built from (in ``directory``, default ``SOURCE_DIR``): the
    units (``*.c``) and the header they share."""
    return sorted(p for p in (directory or SOURCE_DIR).iterdir() if p.suffix in (".c", ".h"))


def build_key(compiler: str, flags: tuple[str, ...] = CFLAGS, directory: Path | None = None) -> str:
    """The cache key of a build: every source file's name and text, the compiler and the flags."""
    h = hashlib.sha256()
    for path in sources(directory):
        text = path.read_bytes()
        h.update(f"{path.name}\0{len(text)}\0".encode())
        h.update(text)
    h.update(" ".join((compiler, *flags)).encode())
    return h.hexdigest()[:16]


def _first_error(stderr: str) -> str:
    """The line of a compiler's output that says what is wrong: its first error (a unit's, or
    the linker's undefined reference), else its last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line or "undefined reference" in line]
    if errors:
        return errors[0]
    return lines[-1] if lines else "no message"


def binary(cfg: Config | None = None) -> Path:
    """The compiled search (for ``cfg``: the wide build if it has more partition ids or
    brokers than the usual one holds), built now if these sources have not been built so before."""
    if cfg is not None and (cfg.partition_ids > NARROW_PARTITION_IDS or cfg.brokers > NARROW_BROKERS):
        return compiled("epochal-search-wide", CFLAGS + WIDE_FLAGS)
    return compiled("epochal-search", CFLAGS)


def compiled(name: str, flags: tuple[str, ...], suffix: str = "", directory: Path | None = None) -> Path:
    """The sources (of ``directory``) built with ``flags`` into the cache as
    ``name``-KEY``suffix``, built now if they have not been built so before: the search
    binary, and the judge's step library of ``properties.checkers.native_step``, which builds
    the same units as a shared library (a test builds it from altered sources too)."""
    compiler = os.environ.get("CC", "cc")
    directory = directory or SOURCE_DIR
    target = _cache_dir() / f"{name}-{build_key(compiler, flags, directory)}{suffix}"
    if target.exists():
        return target
    if shutil.which(compiler) is None:
        raise NoCompiler(f"the native search is compiled on first use and needs a C compiler: {compiler!r} was not found (set $CC, or drop --native)")
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".build-")
    os.close(fd)
    units = [p.name for p in sources(directory) if p.suffix == ".c"]
    try:  # in the source directory, so that an error names its unit (rules.c:12:3: error: ...)
        done = subprocess.run([compiler, *flags, "-o", tmp, *units], cwd=directory, capture_output=True, text=True)
        if done.returncode != 0:
            raise NativeUnavailable(f"compiling the native search ({directory}) with {compiler} failed: {_first_error(done.stderr)}")
        os.replace(tmp, target)  # atomic: a concurrent build finds a whole binary or none
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return target


def config_args(cfg: Config, symmetry: bool, reduction: bool) -> list[str]:
    """The binary's options for ``cfg`` (after ``unsupported`` said yes)."""
    return [
        "--brokers", str(cfg.brokers),
        "--records", str(cfg.records),
        "--max-epoch", str(cfg.max_epoch),
        "--max-crashes", str(cfg.max_crashes),
        "--max-pauses", str(cfg.max_pauses),
        "--min-insync", str(cfg.min_insync),
        "--unclean", str(int(cfg.unclean)),
        "--preferred-elections", str(cfg.preferred_elections),
        "--max-shutdowns", str(cfg.max_shutdowns),
        "--deletions", str(cfg.deletions),
        "--reassignments", str(cfg.reassignments),
        "--max-expiries", str(cfg.max_expiries),
        "--topic-ids", str(int(cfg.topic_ids)),
        "--alter-partition", str(cfg.alter_partition),
        "--startup-from-controller", str(int(cfg.startup_from_controller)),
        "--offline-replica-writes", str(int(cfg.offline_replica_writes)),
        "--hw-waits-outside-isr", str(int(cfg.hw_waits_outside_isr)),
        "--leader-keeps-follower-state", str(int(cfg.leader_keeps_follower_state)),
        "--fetch-max-records", str(cfg.fetch_max_records),
        "--partitions", str(cfg.partitions),
        "--partition-changes", str(cfg.partition_changes),
        "--reuse-partition-ids", str(cfg.reuse_partition_ids),
        "--partition-identity", str(cfg.partition_identity),
        "--reassign-phases", str(int(cfg.reassign_phases)),
        "--replication-factor", str(cfg.replication_factor),
        "--fence-controller-epoch", str(int(cfg.fence_controller_epoch)),
        "--fence-broker-epoch", str(int(cfg.fence_broker_epoch)),
        "--truncation", cfg.truncation,
        "--symmetry", str(int(symmetry)),
        "--reduction", str(int(reduction)),
    ]  # fmt: skip


# ---------------------------------------------------------------------------------------
# Running a search
# ---------------------------------------------------------------------------------------


def check_native(cfg: Config, options: SearchOptions = DEFAULT_SEARCH, dump: Path | None = None) -> Result:
    """``properties.checkers.bfs.check``, run by the native search: the same options and the
    same ``Result`` (its counterexample replayed through the Python model).  ``workers``
    are threads of one process here.  ``dump``: also write every state reached, one hex
    encoding per line (for the tests that compare state sets)."""
    reason = unsupported(cfg)
    if reason is not None:
        raise NativeUnavailable(reason)
    symmetry, reduction, workers = options.symmetry, options.reduction, options.workers
    exe = binary(cfg)
    args = [str(exe), "search", *config_args(cfg, symmetry, reduction), "--workers", str(workers)]
    if options.max_states is not None:
        args += ["--max-states", str(options.max_states)]
    if options.max_depth is not None:
        args += ["--max-depth", str(options.max_depth)]
    if options.max_seconds is not None:
        args += ["--max-seconds", repr(float(options.max_seconds))]
    if options.max_memory is not None:
        args += ["--max-memory", str(int(options.max_memory))]
    if options.progress is None:
        args.append("--quiet")
    if dump is not None:
        args += ["--dump", str(dump)]
    with tempfile.TemporaryDirectory(prefix="epochal-native-") as workdir:
        args += ["--workdir", workdir]
        out, err = _run(args, options.progress)
    if not out.strip():
        raise RuntimeError(f"the native search failed: {err.strip().splitlines()[-1] if err.strip() else 'no output'}")
    data = json.loads(out)
    violation = _violation(cfg, symmetry, reduction, data["violation"]) if data["violation"] else None
    return Result(
        cfg,
        symmetry,
        data["states"],
        data["transitions"],
        data["depth"],
        data["seconds"],
        violation,
        data["complete"],
        workers,
        reduction,
        data["stopped_by"],
        data["checked_depth"],
        data["peak_memory_bytes"],
        native=True,
    )


def _run(args: list[str], progress: Callable[[str], None] | None) -> tuple[str, str]:
    """Run the binary, passing its progress lines on as they come.  Ctrl-C reaches it too
    (one process group): it stops and reports, and we wait for that report."""
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    errors: list[str] = []

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            line = line.rstrip("\n")
            if line.startswith("  ") and progress is not None:
                progress(line)
            elif not line.startswith("  "):
                errors.append(line)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    out = ""
    while True:
        try:
            out = proc.stdout.read() if proc.stdout is not None else ""
            proc.wait()
            break
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGINT)  # in case it was not in our process group
    reader.join()
    if proc.returncode != 0:
        raise RuntimeError(f"the native search failed (exit {proc.returncode}): {errors[-1] if errors else 'no message'}")
    return out, "\n".join(errors)


def _violation(cfg: Config, symmetry: bool, reduction: bool, found: dict) -> Violation:
    """The native search's counterexample, replayed through the Python model."""
    init = initial(cfg)
    if found.get("initial"):
        bad = first_violation(None, init)
        assert bad is not None, "the native search and the model disagree about the initial state"
        return Violation(bad[0], bad[1], [], [init])
    chain = [int(h, 16) for h in found["chain"]]
    return replay_path(cfg, chain[1:], int(found["bad"], 16), lambda y: fingerprint(key_bytes(y, cfg, symmetry, reduction)))


def native_expansions(cfg: Config, states: list[bytes], symmetry: bool = True, reduction: bool = False) -> list[tuple[bytes, bool, str, list[bytes]]]:
    """How the native search expands each of ``states`` (encodings): the state's own key,
    whether it breaks a property, ``"free"`` with its ample step's successor or ``"all"``
    with every successor -- as keys, in order.  For the differential tests, which compare
    this with the Python model's expansion of the same states."""
    reason = unsupported(cfg)
    if reason is not None:
        raise NativeUnavailable(reason)
    args = [str(binary(cfg)), "successors", *config_args(cfg, symmetry, reduction)]
    stdin = "".join(s.hex() + "\n" for s in states)
    done = subprocess.run(args, input=stdin, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the native search failed: {done.stderr.strip()}")
    out = []
    for line in done.stdout.splitlines():
        own, bad, rest = line.split(" | ")
        kind, *keys = rest.split()
        out.append((bytes.fromhex(own), bad == "1", kind, [bytes.fromhex(k) for k in keys]))
    return out


def native_rejects(cfg: Config, states: list[bytes]) -> list[list[bool]]:
    """For each of ``states`` (encodings), whether the native search's
    ``reject_leader_and_isr`` refuses each of its LeaderAndISR requests, in the state's order
    -- a self-loop no search takes, so the tests ask for it on its own."""
    reason = unsupported(cfg)
    if reason is not None:
        raise NativeUnavailable(reason)
    args = [str(binary(cfg)), "rejects", *config_args(cfg, True, False)]
    done = subprocess.run(args, input="".join(s.hex() + "\n" for s in states), capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the native search failed: {done.stderr.strip()}")
    return [[c == "1" for c in line] for line in done.stdout.splitlines()]
