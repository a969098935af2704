"""The exhaustive checker: breadth-first search over every reachable state.

* **Shortest counterexamples.**  The search goes level by level and stops at the first
  level where a property breaks, so the path it prints is a shortest one.
* **Compact.**  Visited states are kept as 64-bit fingerprints (Python's tuple hash, which
  is deterministic for the ints-and-tuples states are made of) with a pointer to the parent's
  fingerprint; only two BFS levels are held as full states (or pickled: "Packed levels").
  The path is rebuilt by replaying
  the model from the initial state, choosing at each level the successor with the recorded
  fingerprint -- so every counterexample printed has been re-executed step by step.
* **Symmetry.**  With ``symmetry=True`` states are reduced to a canonical broker naming
  (``properties.checkers.symmetry``) before fingerprinting.
* **Partial-order reduction.**  With ``reduction=True`` (and fenced fetching) a state in
  which a free fetch step is enabled -- one that changes only the messages in flight, which
  no property reads -- is expanded by that step alone (``properties.checkers.reduction``, which argues why
  no visible state is lost).  Counterexamples are then shortest in the reduced graph.
* **Both cores.**  A large level is expanded by the search's own process and ``workers - 1``
  worker processes forked afresh for it: they read the level's states and the fingerprints
  seen so far from the memory they share with the search at the fork (nothing is pickled
  to them but chunk numbers) and send back only successors not seen before, while the
  search expands every ``workers``-th range itself, unpickled.  A worker sends its new
  states pickled in one piece beside their fingerprints, so the search tells new from seen
  without unpickling them (and with packed levels keeps the piece unopened).  Two cores
  give x1.53 on the reduced three-broker kip320 search within 19 steps, x1.59 with packed
  levels (x1.3-1.36 when the search unpickled every state a worker sent; x1.26 with a pool
  forked once, sent the states and sending every successor back): the rest goes to
  pickling and to the two processes sharing the memory bus.
* **Duplicates first.**  Most successors are states already seen (two independent steps
  taken in either order); a per-process memo from a successor's own hash to its canonical
  fingerprint lets those skip canonicalisation, the dearest part of a step at 3 brokers.
* **Budgets, never a lost run.**  A search too large for the machine (three-broker kip320)
  stops cleanly -- at ``max_seconds``, at ``max_memory`` (the search's own memory, workers
  included, measured as the proportional set size the kernel reports), or on Ctrl-C -- and
  reports how far it got: ``checked_depth`` is the number of steps within which every run
  has been tried, the one honest statement an unfinished breadth-first search can make.
  Otherwise the kernel's out-of-memory killer ends it after an hour with nothing to show.
* **Packed levels when memory runs short.**  The two levels held as full states are most of
  the memory of a large search.  Once the search has used ``PACK_SHARE`` of its memory budget, each new level
  is kept as pickled chunks of ``CHUNK`` states, unpickled when expanded.  Measured
  (``bench_checker.py --three-brokers --configs kip320 --modes por,packed --max-depth 19``,
  1,073,150 states, one core): 320 MB against 735 MB in all, 113 s against 106 s -- bought only by
  searches that would otherwise stop for memory.  The states, their order and so every
  result are the same either way.
* **A compiled twin.**  ``properties.checkers.native`` runs this same search from C (``epochal check
  --native``), x31 faster on one core (``bench_checker.py --modes por,native``); tests hold it to this one state by state, and its
  counterexamples are replayed through ``replay_path`` below.
* **No cycle collector.**  States are trees of tuples and frozen dataclasses -- they hold no
  reference cycles, so reference counting frees everything the search drops -- yet with the
  collector on Python re-scans the two levels of full states held, over and over, as they
  grow: about a quarter of the time at three brokers (18.0 against 24.6 CPU-s for the first
  208 k states of the reduced kip320 search).  It is off for the search and restored after.
"""

from __future__ import annotations

import gc
import multiprocessing as mp
import pickle
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from model.actions import Step
from model.config import Config
from model.export.render import describe, state_text
from model.registry import successors
from model.state import State, initial
from properties.checkers.budget import Budget, size_text
from properties.checkers.reduction import free_step, normal_form
from properties.checkers.symmetry import candidate_permutations, canonical
from properties.safety import (
    UNCLEAN_LABEL,
    all_violations,
    first_violation,
    state_violation,
    transition_violation,
)

PARALLEL_THRESHOLD = 4000  # frontier size above which worker processes expand it
CHUNK = 500
PACK_SHARE = 0.4  # of max_memory: once used, new levels are held pickled (see "Packed levels")


@dataclass(frozen=True)
class SearchOptions:
    """How a search runs and when it stops -- everything but the configuration it explores.

    The same options drive the Python search (``check``) and the compiled one
    (``properties.checkers.native.check_native``); ``Result`` records the ones that shape
    what was found (symmetry, reduction, workers).

    * ``symmetry``: reduce states to a canonical broker naming (``properties.checkers.symmetry``).
    * ``reduction``: the partial-order reduction of fetch bookkeeping
      (``properties.checkers.reduction``; a no-op without fenced fetching).  Counterexamples
      are then shortest in the reduced graph.
    * ``workers``: processes expanding a large level (threads, natively); at least 1.
    * ``max_states``, ``max_depth``, ``max_seconds``, ``max_memory`` (bytes; see
      ``properties.checkers.budget.search_memory``): the budget.  A search they stop is
      reported incomplete, with the depth it checked.
    * ``progress``: called with a line of progress every few seconds (None: silent).
    """

    symmetry: bool = True
    reduction: bool = False
    workers: int = 1
    max_states: int | None = None
    max_depth: int | None = None
    max_seconds: float | None = None
    max_memory: int | None = None
    progress: Callable[[str], None] | None = None

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        for name in ("max_states", "max_depth", "max_seconds", "max_memory"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be above 0, got {value}")


DEFAULT_SEARCH = SearchOptions()
"""Every state, symmetry-reduced, one process, no budget, silent."""


@dataclass
class Violation:
    property: str
    message: str
    steps: list[tuple[Step, str]]  # the step and its description, from the initial state
    states: list[State]  # initial state, then the state after each step
    label: str | None = None
    also: list[tuple[str, str]] = field(default_factory=list)  # other properties broken there

    @property
    def properties(self) -> list[str]:
        return [self.property] + [name for name, _ in self.also]

    def text(self) -> str:
        lines = [f"VIOLATION of {self.property}: {self.message}"]
        lines += [f"     also {name}: {msg}" for name, msg in self.also]
        lines += ["", "Shortest counterexample:"]
        for i, (_, desc) in enumerate(self.steps, 1):
            lines.append(f"{i:3d}. {desc}")
        lines += ["", "State that breaks it:", state_text(self.states[-1])]
        return "\n".join(lines)


@dataclass
class Result:
    config: Config
    symmetry: bool
    states: int
    transitions: int
    depth: int
    seconds: float
    violation: Violation | None = None
    complete: bool = True  # False when cut short (``stopped_by``)
    workers: int = 1
    reduction: bool = False  # partial-order reduction (properties.checkers.reduction) was on
    # why the search was cut short -- "max_states", "max_depth", "max_seconds", "max_memory"
    # or "interrupted" (Ctrl-C) -- or None when it ran to the end
    stopped_by: str | None = None
    # every run of at most this many steps has been tried (all of them, when complete)
    checked_depth: int = 0
    peak_memory: int = 0  # bytes: the largest memory the search was measured using (0: not measured)
    packed_chunks: int = 0  # chunks of levels held pickled because memory ran short (0: none)
    native: bool = False  # found by the compiled search (properties.checkers.native)

    @property
    def holds(self) -> bool:
        return self.violation is None and self.complete

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else float("inf")


# -- expanding one state (also run inside worker processes) ---------------------------

_CFG: Config | None = None
_SYM = True
_RED = False
_SEEN: dict[int, int] | set[int] = set()  # the parent map, visible to forked workers as of the fork
# hash of a successor as generated -> its canonical fingerprint (see "Duplicates first");
# cleared when it grows past MEMO_LIMIT, so memory stays bounded whatever the search size
_MEMO: dict[int, int] = {}
MEMO_LIMIT = 1 << 20
# the level being expanded, as chunks of states or of pickled states, visible to workers forked for it
_FRONTIER: list[list[State] | bytes | tuple[bytes, list[int] | None]] = []


def _init_worker(cfg: Config, symmetry: bool, reduction: bool = False) -> None:
    global _CFG, _SYM, _RED
    _CFG, _SYM, _RED = cfg, symmetry, reduction
    _MEMO.clear()


def _expand_range(i: int) -> tuple[list[tuple[int, int, State]], tuple | None, int]:
    """``_expand_chunk`` of the level's ``i``-th chunk, unpacked if it was packed (in a worker
    forked for this level, the search's settings, level, fingerprints and memo are already
    in its memory)."""
    chunk = _FRONTIER[i]
    if isinstance(chunk, bytes):
        return _expand_chunk(pickle.loads(chunk))
    if isinstance(chunk, tuple):  # a worker's piece, and which of its states the search kept
        piece, keep = chunk
        states = pickle.loads(piece)
        return _expand_chunk(states if keep is None else [states[j] for j in keep])
    return _expand_chunk(chunk)


def _worker_range(i: int) -> tuple[list[tuple[int, int]], bytes, tuple | None, int]:
    """In a worker: ``_expand_range``, with the new states pickled in one piece beside their
    (parent, child) fingerprints -- so the search tells new from seen by fingerprint alone,
    and with packed levels keeps the piece as it came, never unpickling it until the next
    level is expanded."""
    out, violation, n = _expand_range(i)
    piece = pickle.dumps([c for _, _, c in out], protocol=pickle.HIGHEST_PROTOCOL)
    return [(hp, h) for hp, h, _ in out], piece, violation, n


class _Level:
    """The next level as it is found: chunks of ``CHUNK`` states, each a list or -- once
    memory runs short -- the list pickled (see "Packed levels"), or a worker's pickled piece
    with the indices of its states the search kept."""

    def __init__(self) -> None:
        self.chunks: list[list[State] | bytes | tuple[bytes, list[int] | None]] = []
        self.buffer: list[State] = []
        self.count = 0
        self.packed = 0  # chunks held pickled

    def add(self, state: State, pack: bool) -> None:
        self.buffer.append(state)
        self.count += 1
        if len(self.buffer) >= CHUNK:
            self._flush(pack)

    def add_piece(self, piece: bytes, keep: list[int] | None, kept: int, pack: bool) -> None:
        """A worker's new states, pickled in one piece, of which the indices ``keep`` (None:
        all, ``kept`` of them) were new to the search too.  Packed, the piece is kept as it
        is (after the states before it, so the level's order is the same either way)."""
        if not pack:
            states = pickle.loads(piece)
            for j in range(len(states)) if keep is None else keep:
                self.add(states[j], False)
            return
        if self.buffer:
            self._flush(True)
        self.chunks.append((piece, keep))
        self.count += kept
        self.packed += 1

    def close(self, pack: bool) -> list[list[State] | bytes | tuple[bytes, list[int] | None]]:
        if self.buffer:
            self._flush(pack)
        return self.chunks

    def _flush(self, pack: bool) -> None:
        if pack:
            self.chunks.append(pickle.dumps(self.buffer, protocol=pickle.HIGHEST_PROTOCOL))
            self.packed += 1
        else:
            self.chunks.append(self.buffer)
        self.buffer = []


def _expand_chunk(chunk: list[State]) -> tuple[list[tuple[int, int, State]], tuple | None, int]:
    """Successors of a chunk of states: (parent fp, child fp, canonical child) for children
    new within the chunk and not in ``_SEEN`` (as this process sees it), the first violation
    found (parent fp, step, child), and the number of transitions."""
    assert _CFG is not None
    out: list[tuple[int, int, State]] = []
    local: set[int] = set()
    transitions = 0
    memo = _MEMO
    for s in chunk:
        hs = hash(s)
        if _RED:
            pair = free_step(s, _CFG)
            if pair is not None:
                # The ample step alone.  It changes only messages in flight, which no
                # property reads, so s's clean verdict carries over to t; and a frontier
                # state is canonical, so when its brokers' signatures (which ignore
                # messages) tell them apart t is canonical as it stands.
                transitions += 1
                t = normal_form(pair[1], _CFG)
                c = t if not _SYM or len(candidate_permutations(s, _CFG)) == 1 else canonical(t, _CFG)
                h = hash(c)
                if h not in local:
                    local.add(h)
                    if h not in _SEEN:
                        out.append((hs, h, c))
                continue
        for step, t in successors(s, _CFG):
            transitions += 1
            if transition_violation(s, t) is not None:
                return out, (hs, step, t), transitions
            if _SYM:
                ht = hash(t)
                h = memo.get(ht)
                if h is not None and (h in local or h in _SEEN):
                    continue  # seen before: no need to canonicalise it again
                c = canonical(normal_form(t, _CFG) if _RED else t, _CFG)
                h = hash(c)
                if len(memo) >= MEMO_LIMIT:
                    memo.clear()
                memo[ht] = h
            else:
                c = normal_form(t, _CFG) if _RED else t
                h = hash(c)
            if h not in local:
                local.add(h)
                if h in _SEEN:
                    continue
                if state_violation(c) is not None:
                    return out, (hs, step, t), transitions
                out.append((hs, h, c))
    return out, None, transitions


def _ignore_interrupts() -> None:
    """Pool initialiser: Ctrl-C reaches the whole process group; the search's own process
    handles it (stops and reports), so a worker must not die of it with a traceback.  The
    worker is forked with SIGINT blocked (:class:`_ForkedPool`): ignore it, then unblock."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


class _ForkedPool:
    """A pool of forked workers that no Ctrl-C can kill before they ignore it, and that is
    always terminated, whenever the Ctrl-C comes.

    A SIGINT landing between a worker's fork and its initialiser would kill that worker
    with the task it had taken, and the search would wait for that task's result for ever
    (a Ctrl-C test hung so, once in a CI run).  So SIGINT is blocked across the fork: the
    workers start with it blocked, and this process gets a Ctrl-C that came meanwhile as
    soon as it is unblocked -- which is why the pool is held in ``self.pool`` *before* the
    unblocking: a KeyboardInterrupt raised there must not lose the pool, or nobody
    terminates it before the exit."""

    def __init__(self) -> None:
        self.pool: mp.pool.Pool | None = None

    def start(self, processes: int) -> mp.pool.Pool:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            self.pool = mp.get_context("fork").Pool(processes, initializer=_ignore_interrupts)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
        return self.pool

    def terminate(self) -> None:
        """Terminate the pool, if one runs; SIGINT is blocked meanwhile, so a Ctrl-C cannot
        leave it half terminated."""
        pool, self.pool = self.pool, None
        if pool is None:
            return
        old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            pool.terminate()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _shared(pool, ranges: list[int], workers: int) -> Iterator:
    """The results of expanding the chunks ``ranges`` in order, the search's own process
    taking one chunk in ``workers`` and the pool's ``workers - 1`` processes the rest: what
    the search expands itself is never pickled, and no third process competes for two
    cores.  Each result is (found, piece, violation, transitions): ``found`` the (parent,
    child, state) triples and ``piece`` None for the search's own chunks, the (parent, child)
    fingerprints and the states pickled in one piece for a worker's (``_worker_range``)."""
    theirs = pool.imap(_worker_range, [r for i, r in enumerate(ranges) if i % workers])
    for i in range(len(ranges)):
        if i % workers == 0:
            found, violation, n = _expand_range(ranges[i])
            yield found, None, violation, n
        else:
            yield next(theirs)


def _own(ranges: list[int]) -> Iterator:
    """``_shared``'s results with no workers: every chunk expanded by the search itself."""
    for i in ranges:
        found, violation, n = _expand_range(i)
        yield found, None, violation, n


PROGRESS_SECONDS = 2.0
"""How often a search says how far it has got."""


class _Progress:
    def __init__(self, out: Callable[[str], None] | None) -> None:
        self.out = out
        self.last = time.monotonic()
        self.start = self.last

    def tick(self, depth: int, states: int, frontier: int, memory: int = 0) -> None:
        now = time.monotonic()
        if self.out is None or now - self.last < PROGRESS_SECONDS:
            return
        self.last = now
        rate = states / max(now - self.start, 1e-9)
        mem = f"  {size_text(memory):>8}" if memory else ""
        self.out(f"  searching: depth {depth:3d}  states {states:>10,}  frontier {frontier:>9,}  {rate:>9,.0f} states/s{mem}")

    def final(self, checked_depth: int, states: int, memory: int = 0, stopped_by: str | None = None) -> None:
        """The last line: how deep every run has been tried, and at what cost -- ``done``
        for a search that finished or reached its bound, ``interrupted`` after Ctrl-C."""
        if self.out is None:
            return
        now = time.monotonic()
        rate = states / max(now - self.start, 1e-9)
        mem = f"  peak {size_text(memory)}" if memory else ""
        word = "interrupted" if stopped_by == "interrupted" else "done"
        self.out(f"  {word}: every run of up to {checked_depth} steps tried  states {states:>10,}  {rate:>9,.0f} states/s{mem}")


def check(cfg: Config, options: SearchOptions = DEFAULT_SEARCH) -> Result:
    """Explore every reachable state of ``cfg`` (up to ``options.max_states``, or every
    state within ``options.max_depth`` steps of the initial one); stop at the first
    property violation and return it with a shortest path to it.

    A depth bound is the one honest statement a search too large to finish can make: "no
    run of at most ``max_depth`` steps breaks a property" (breadth-first, every such run
    has been tried) -- reported as incomplete, never as the property holding.  A search
    stopped by ``max_seconds``, ``max_memory`` or Ctrl-C makes the same statement for
    ``Result.checked_depth``, the deepest level it finished."""
    symmetry, reduction, workers = options.symmetry, options.reduction, options.workers
    max_states, max_depth = options.max_states, options.max_depth
    max_memory = options.max_memory
    started = time.perf_counter()
    _init_worker(cfg, symmetry, reduction)
    init = initial(cfg)
    root = search_key(init, cfg, symmetry, reduction)
    bad = first_violation(None, init)
    if bad is not None:
        v = Violation(bad[0], bad[1], [], [init])
        return Result(cfg, symmetry, 1, 0, 0, time.perf_counter() - started, v)
    global _SEEN
    parent: dict[int, int] = {hash(root): 0}
    _SEEN = parent
    frontier: list = [[root]]  # the level being expanded, in chunks
    size = 1  # states in ``frontier``
    depth = 0  # the depth of ``frontier``: every state within ``depth`` steps is in ``parent``
    transitions = 0
    found: tuple | None = None
    stopped_by: str | None = None
    packed = 0  # chunks of levels held pickled, in all
    meter = _Progress(options.progress)
    budget = Budget(started, options.max_seconds, max_memory)
    collector_was_on = gc.isenabled()
    gc.disable()  # (see "No cycle collector"; forked workers inherit it)
    global _FRONTIER
    forked = _ForkedPool()
    try:
        while size:
            nxt = _Level()
            _FRONTIER = frontier
            ranges = list(range(len(frontier)))
            if workers > 1 and size > PARALLEL_THRESHOLD:
                # forked now, so the workers see this level and everything seen before it
                results = _shared(forked.start(workers - 1), ranges, workers)
            else:
                results = _own(ranges)
            for found_here, piece, violation, n in results:
                transitions += n
                pack = budget.short(PACK_SHARE)
                if piece is None:  # expanded here: (parent fp, fp, state)
                    for hp, h, c in found_here:
                        if h not in parent:
                            parent[h] = hp
                            nxt.add(c, pack)
                else:  # by a worker: (parent fp, fp), and the states in one pickled piece
                    keep = []
                    for j, (hp, h) in enumerate(found_here):
                        if h not in parent:
                            parent[h] = hp
                            keep.append(j)
                    if keep:
                        nxt.add_piece(piece, None if len(keep) == len(found_here) else keep, len(keep), pack)
                if violation is not None:
                    found = violation
                    break
                stopped_by = budget.exceeded(forked.pool)
                meter.tick(depth + 1, len(parent), nxt.count, memory=budget.used)
                if stopped_by is not None:
                    break
            forked.terminate()
            if found is not None or stopped_by is not None:
                break
            if max_states is not None and len(parent) >= max_states:
                stopped_by = "max_states"
                depth += 1 if nxt.count else 0  # this level is finished: its successors are all known
                break
            if nxt.count:
                depth += 1
                if max_depth is not None and depth >= max_depth:
                    # every state within max_depth steps is in ``parent`` and has been
                    # checked; those at the last level are not expanded
                    stopped_by = "max_depth"
                    break
            frontier, size = nxt.close(budget.short(PACK_SHARE)), nxt.count
            packed += nxt.packed
    except KeyboardInterrupt:
        stopped_by = "interrupted"
    finally:
        _FRONTIER = []
        forked.terminate()
        if collector_was_on:
            gc.enable()
    if max_memory is not None:
        budget.exceeded(force=True)  # the peak, for the report
    complete = stopped_by is None
    meter.final(depth, len(parent), memory=budget.peak, stopped_by=stopped_by)
    seconds = time.perf_counter() - started
    violation = _counterexample(cfg, symmetry, reduction, parent, found, hash(root)) if found else None
    reported_depth = depth + (1 if found else 0)
    # a violation at level depth+1 means every run of at most ``depth`` steps was clean
    return Result(cfg, symmetry, len(parent), transitions, reported_depth, seconds, violation, complete, workers, reduction, stopped_by, depth, budget.peak, packed)


def search_key(s: State, cfg: Config, symmetry: bool, reduction: bool) -> State:
    """The state the search stores for s: its normal form (with the reduction) made
    canonical (with symmetry)."""
    if reduction:
        s = normal_form(s, cfg)
    return canonical(s, cfg) if symmetry else s


def _counterexample(cfg: Config, symmetry: bool, reduction: bool, parent: dict[int, int], found: tuple, root_fp: int) -> Violation:
    """Rebuild a concrete path from the initial state by replaying the model."""
    hp, _step, bad_child = found
    chain = [hp]
    while chain[-1] != root_fp:
        chain.append(parent[chain[-1]])
    chain.reverse()  # root_fp ... hp

    def key(y: State) -> int:
        return hash(search_key(y, cfg, symmetry, reduction))

    return replay_path(cfg, chain[1:], key(bad_child), key)


def replay_path(cfg: Config, chain: list[int], target: int, key: Callable[[State], int]) -> Violation:
    """The counterexample a search found, re-executed through the model: from the initial
    state, take at each level the successor whose ``key`` (the fingerprint the search stored)
    is the next of ``chain``, then the step to a state with key ``target`` that breaks a
    property.  So every counterexample printed is a run of ``model.actions``, whichever
    search found it (this one, or the native one of ``properties.checkers.native``)."""
    x = initial(cfg)
    states = [x]
    steps: list[tuple[Step, str]] = []
    for h in chain:
        for step, y in successors(x, cfg):
            if key(y) == h:
                steps.append((step, describe(step, x, y)))
                x = y
                states.append(y)
                break
        else:  # pragma: no cover - would mean the model is not deterministic
            raise RuntimeError("counterexample replay diverged from the search")
    for step, y in successors(x, cfg):
        if key(y) == target:
            bad = first_violation(x, y)
            if bad is not None:
                steps.append((step, describe(step, x, y)))
                states.append(y)
                label = UNCLEAN_LABEL if UNCLEAN_LABEL in bad[1] else None
                also = [v for v in all_violations(x, y) if v[0] != bad[0]]
                return Violation(bad[0], bad[1], steps, states, label, also)
    raise RuntimeError("counterexample replay could not reproduce the violation")  # pragma: no cover


def replay(cfg: Config, steps: list[Step]) -> list[State]:
    """Apply steps from the initial state, failing loudly on a disabled one (for tests and
    for tools that consume ``--json`` counterexamples)."""
    from model.registry import apply

    x = initial(cfg)
    out = [x]
    for i, step in enumerate(steps, 1):
        y = apply(x, cfg, step)
        if y is None:
            raise ValueError(f"step {i} ({step.action}{step.args}) is not enabled")
        x = y
        out.append(x)
    return out
