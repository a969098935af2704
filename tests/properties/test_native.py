"""The native search is held to the Python model: same encoding order, same successors,
same searches, same counterexamples (``properties.checkers.native``; ``properties/checkers/native/``).

The strongest check is on whole state spaces: the states the native search reaches form a
set that contains the initial state and is closed under the *Python* model's expansion
(every successor the model computes for each of them is in it), so it holds every state the
Python search reaches -- and it is exactly as large as the Python search's, so the two sets
are equal.  On every one of those states the native expansion (its successors, in order, and
the property verdict) is the Python one.  State by state, a whole space is tens of thousands
of expansions in Python: the slow suite expands every state, the default suite a seeded
sample of each space (the same sample on every run).
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import tomllib
from dataclasses import replace
from fnmatch import fnmatch
from pathlib import Path

import pytest

from impl.harness.cli.main import main as cli_main
from model.config import named
from model.registry import successors
from model.state import initial
from model.three_brokers import three_brokers
from properties.checkers import native
from properties.checkers.bfs import SearchOptions, check, replay, search_key
from properties.checkers.native import (
    NativeUnavailable,
    binary,
    build_key,
    check_native,
    config_args,
    decode,
    encode,
    fingerprint,
    key_bytes,
    native_expansions,
    sources,
    unsupported,
)
from properties.checkers.reduction import free_step
from properties.safety import state_violation
from tests.ctrl_c import as_from_a_terminal
from tests.pinned import pinned
from tests.searched import searched


def _python_expansion(s, cfg, symmetry: bool, reduction: bool):
    """How ``properties.checkers.bfs`` expands a state: its free step alone, or every successor."""
    own = key_bytes(s, cfg, symmetry, reduction)
    bad = state_violation(s) is not None
    pair = free_step(s, cfg) if reduction else None
    if pair is not None:
        return own, bad, "free", [key_bytes(pair[1], cfg, symmetry, reduction)]
    return own, bad, "all", [key_bytes(t, cfg, symmetry, reduction) for _, t in successors(s, cfg)]


def _reached(cfg, tmp_path, **kw) -> tuple[list[bytes], object]:
    dump = tmp_path / "states.hex"
    r = check_native(cfg, SearchOptions(**kw), dump=dump)
    return [bytes.fromhex(line) for line in dump.read_text().split()], r


# nearly every test here compiles the search or runs its binary
pytestmark = pytest.mark.integration


# -- the encoding ---------------------------------------------------------------------


def test_the_encoding_orders_states_exactly_as_python_orders_the_tuples(tmp_path):
    states, _ = _reached(three_brokers("kip320"), tmp_path, reduction=True, max_depth=9)
    decoded = [decode(e) for e in states]
    rng = random.Random(7)
    for _ in range(20000):
        a, b = rng.sample(range(len(states)), 2)
        assert (states[a] < states[b]) == (decoded[a] < decoded[b])
    assert all(encode(s) == e for s, e in zip(decoded, states, strict=True))


@pytest.mark.parametrize("knobs", [{"max_shutdowns": 1}, {"deletions": 1}, {"alter_partition": 1}],
                         ids=["shutdown", "deletion", "alter-partition"])
def test_decode_inverts_encode_for_every_state_field(knobs):
    cfg = named("zombie", **knobs)
    s = initial(cfg)
    assert decode(encode(s)) == s
    for _, t in successors(s, cfg):
        assert decode(encode(t)) == t
        for _, u in successors(t, cfg):  # a broker shutting down, a StopReplica in flight
            assert decode(encode(u)) == u
            for _, w in successors(u, cfg):  # a re-created topic: a new topic id, a retired record
                assert decode(encode(w)) == w
    if cfg.alter_partition:  # a proposal, then the controller's answer, in flight
        assert any(w.alter_partition for _, t in successors(s, cfg) for _, w in successors(t, cfg))


def test_the_fingerprint_is_the_native_ones(tmp_path):
    """The native search reports its path as fingerprints; Python computes the same ones:
    the first of the path is the initial state's key, fingerprinted on each side."""
    cfg = named("design")
    args = [str(binary()), "search", *config_args(cfg, True, False), "--quiet", "--workdir", str(tmp_path)]
    found = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)["violation"]
    assert int(found["chain"][0], 16) == fingerprint(key_bytes(initial(cfg), cfg, True, False))
    assert int(found["bad"], 16) != int(found["chain"][-1], 16)


# -- successors, state by state, and whole state spaces --------------------------------

# (configuration, symmetry, reduction) -> the bounds of its row in docs/pinned-counts.md
FULL_SPACES = {
    ("kip320", True, True): "default, reduced",
    ("kip320", True, False): "default",
    ("kip320", False, True): "default, reduced, no symmetry",
    ("zombie", True, True): "default, reduced",
    ("kip101", True, False): "default",
}


SAMPLE = 1500  # states per space in the default suite


def _the_native_space_is_the_models(tmp_path, name: str, symmetry: bool, reduction: bool, sample: int | None) -> None:
    """The native search's reached set is the Python search's: as large (the pinned count,
    which the Python checker's own tests pin too -- and, expanding every state, the Python
    search run here), and closed under the model's successors on every state expanded; each
    expanded state -- all of them, or a seeded sample of ``sample`` -- expands natively
    exactly as in Python."""
    cfg = named(name)
    states, r = _reached(cfg, tmp_path, symmetry=symmetry, reduction=reduction)
    assert r.holds
    assert r.states == len(states) == pinned(name, FULL_SPACES[name, symmetry, reduction], "states")
    if sample is None:
        python = check(cfg, SearchOptions(symmetry=symmetry, reduction=reduction))
        assert (r.states, r.transitions, r.depth) == (python.states, python.transitions, python.depth)
    reached = set(states)
    if sample is not None:
        states = random.Random(f"{name}/{symmetry}/{reduction}").sample(states, min(sample, len(states)))
    native = native_expansions(cfg, states, symmetry, reduction)
    for enc, got in zip(states, native, strict=True):
        want = _python_expansion(decode(enc), cfg, symmetry, reduction)
        assert got == want, decode(enc)
        assert set(want[3]) <= reached  # closed under the model's own successors


@pytest.mark.parametrize(("name", "symmetry", "reduction"), sorted(FULL_SPACES))
def test_the_native_state_space_is_the_models_on_a_sample_of_its_states(tmp_path, name, symmetry, reduction):
    _the_native_space_is_the_models(tmp_path, name, symmetry, reduction, sample=SAMPLE)


@pytest.mark.whole_space  # bench/bench_whole_space.py; CI runs the sampled twin above
@pytest.mark.parametrize(("name", "symmetry", "reduction"), sorted(FULL_SPACES))
def test_the_native_state_space_is_the_models_on_every_state(tmp_path, name, symmetry, reduction):
    _the_native_space_is_the_models(tmp_path, name, symmetry, reduction, sample=None)


@pytest.mark.parametrize("name", ["design", "unclean"])
def test_native_expansions_match_the_model_where_a_property_breaks(tmp_path, name):
    """Every fifth state the native search reached, expanded both ways (a seeded sample: the
    whole space is the slow suite's, through the searches' equal counts)."""
    cfg = named(name)
    for reduction in (False, True):
        states, r = _reached(cfg, tmp_path, reduction=reduction)
        states = states[::5]
        native = native_expansions(cfg, states, reduction=reduction)
        for enc, got in zip(states, native, strict=True):
            assert got == _python_expansion(decode(enc), cfg, True, reduction)


def test_native_expansions_match_the_model_on_a_sample_of_three_broker_states(tmp_path):
    """A sample of the states within 14 steps, expanded both ways.  (That the two searches
    reach the same three-broker states is pinned at 20 steps: the pinned count below, which
    the Python checker reaches too in tests/properties/test_history.py.)"""
    cfg = three_brokers("kip320")
    states, r = _reached(cfg, tmp_path, reduction=True, max_depth=14)
    assert r.states == len(states) and r.checked_depth == 14
    sample = random.Random(11).sample(states, 1500)
    for reduction in (True, False):
        native = native_expansions(cfg, sample, reduction=reduction)
        for enc, got in zip(sample, native, strict=True):
            assert got == _python_expansion(decode(enc), cfg, True, reduction)


@pytest.mark.parametrize("name", ["kip101", "kip279", "design", "zombie", "unclean"])
def test_each_named_configuration_at_three_brokers_expands_alike_on_a_sample(tmp_path, name):
    """Pauses, re-registration and unclean elections at three brokers too (zombie's and
    unclean's own bounds, with the third broker): the reduced expansion where fetching is
    fenced, the full one everywhere."""
    cfg = named(name, brokers=3) if name in ("zombie", "unclean") else three_brokers(name)
    reductions = (False, True) if cfg.fenced_fetch else (False,)
    for reduction in reductions:
        states, _ = _reached(cfg, tmp_path, reduction=reduction, max_depth=9)
        sample = random.Random(5).sample(states, min(600, len(states)))
        for enc, got in zip(sample, native_expansions(cfg, sample, reduction=reduction), strict=True):
            assert got == _python_expansion(decode(enc), cfg, True, reduction)


# -- searches -------------------------------------------------------------------------


# kip320's space is the largest of the four: the default suite compares the three others,
# the slow suite all four both ways
@pytest.mark.parametrize("name", ["design", "unclean", pytest.param("kip320", marks=pytest.mark.slow), "zombie"])
@pytest.mark.parametrize("reduction", [pytest.param(False, marks=pytest.mark.slow), True])
def test_native_and_python_searches_agree(name, reduction):
    cfg = named(name)
    a, b = searched(cfg, SearchOptions(reduction=reduction)), check_native(cfg, SearchOptions(reduction=reduction))
    assert (b.states, b.transitions, b.depth, b.checked_depth, b.holds) == (a.states, a.transitions, a.depth, a.checked_depth, a.holds)
    assert b.native and not a.native
    if a.violation is not None:
        assert b.violation is not None
        assert [s for s, _ in b.violation.steps] == [s for s, _ in a.violation.steps]
        assert (b.violation.property, b.violation.label) == (a.violation.property, a.violation.label)


# -- the admin actions a knob turns on ---------------------------------------------------

# (configuration, knob) -> the Python checker's figures, compared here, not pinned: each
# knob's family is a second copy of its rules, held to the model by these searches
ADMIN_FAMILIES = [("design", {"preferred_elections": 1}), ("zombie", {"preferred_elections": 1}),
                  # not an action but its answer: a fetch answered one record at a time
                  pytest.param("kip320", {"fetch_max_records": 1}, marks=pytest.mark.slow),
                  # a controlled shutdown, its StopReplica and the clean stop after it; with a
                  # preferred election, which must pass over the broker shutting down
                  pytest.param("design", {"max_shutdowns": 1}, marks=pytest.mark.slow), ("unclean", {"max_shutdowns": 1}),
                  pytest.param("design", {"max_shutdowns": 1, "preferred_elections": 1}, marks=pytest.mark.slow),
                  # a topic deleted and created again: topic ids, StopReplica with delete, DELETED
                  # replicas, retired records; with a preferred election on the new assignment
                  ("kip320", {"deletions": 1, "records": 1, "max_crashes": 1}), ("unclean", {"deletions": 1, "records": 1}),
                  pytest.param("design", {"deletions": 1, "records": 1, "max_crashes": 1, "preferred_elections": 1},
                               marks=pytest.mark.slow)]


@pytest.mark.parametrize(("name", "knobs"), ADMIN_FAMILIES, ids=lambda v: v if isinstance(v, str) else "+".join(v))
def test_each_admin_family_searches_alike_natively_and_in_python(tmp_path, name, knobs):
    """The family's whole space both ways (reduced and not): the same states, transitions,
    depth and verdict; and a seeded sample of its states expands natively exactly as in
    Python (successors in order, the canonical keys -- the identity renaming while a
    preferred election may still read the order of broker ids)."""
    _searches_and_expands_alike(tmp_path, named(name, **knobs), name)


def _searches_and_expands_alike(tmp_path, cfg, seed: str) -> None:
    """``cfg``'s whole space both ways, reduced and not: the same states, transitions, depth
    and verdict (and counterexample); and a seeded sample of its states expands natively
    exactly as in Python."""
    for reduction in (False, True):
        a, b = check(cfg, SearchOptions(reduction=reduction)), check_native(cfg, SearchOptions(reduction=reduction))
        assert (b.states, b.transitions, b.depth, b.holds) == (a.states, a.transitions, a.depth, a.holds)
        if a.violation is not None:
            assert [s for s, _ in b.violation.steps] == [s for s, _ in a.violation.steps]
        states, _ = _reached(cfg, tmp_path, reduction=reduction)
        sample = random.Random(f"{seed}/{reduction}").sample(states, min(500, len(states)))
        for enc, got in zip(sample, native_expansions(cfg, sample, reduction=reduction), strict=True):
            assert got == _python_expansion(decode(enc), cfg, True, reduction)


# -- Kafka's rules: AlterPartition and the rules of Kafka's brokers ----------------------

# each rule of model.config.KAFKA_BROKER and AlterPartition on kip320 alone, then the Kafka
# configurations themselves, at bounds the Python checker searches in a second or two (the
# slow suite: kafka39's pinned bounds and kafka26's, about ten times as many states)
KAFKA_RULES = [("kip320", {"alter_partition": 1, "records": 1, "max_crashes": 0}),
               ("kip320", {"startup_from_controller": True, "records": 1, "max_crashes": 1}),
               ("kip320", {"offline_replica_writes": True, "records": 1, "max_crashes": 1}),
               ("kip320", {"offline_replica_writes": True, "unclean": True, "records": 1, "max_crashes": 1}),
               ("kip320", {"hw_waits_outside_isr": True, "records": 1, "max_crashes": 1}),
               ("kip320", {"leader_keeps_follower_state": True, "records": 1, "max_crashes": 1}),
               ("kafka39", {"max_crashes": 0}), ("kafka39-unclean", {"records": 1}), ("kafka26-unclean", {"records": 1}),
               pytest.param("kafka39", {"records": 1, "max_crashes": 1}, marks=pytest.mark.slow),
               pytest.param("kafka26", {"records": 1, "max_crashes": 1}, marks=pytest.mark.slow)]


@pytest.mark.parametrize(("name", "knobs"), KAFKA_RULES, ids=lambda v: v if isinstance(v, str) else "+".join(v))
def test_each_kafka_rule_searches_alike_natively_and_in_python(tmp_path, name, knobs):
    """The rule's whole space both ways (its refusals, holds and waits included), and a
    sample of its states expanded both ways."""
    _searches_and_expands_alike(tmp_path, named(name, **knobs), name + "/" + "+".join(knobs))


def test_the_pinned_kafka39_count_natively():
    r = check_native(named("kafka39", records=1, max_crashes=1))
    assert r.holds and r.states == pinned("kafka39", "one record, one crash", "states")


def test_kafka39_at_three_brokers_expands_alike_on_a_sample(tmp_path):
    """Two followers: a proposal about one while the other is in or out of the ISR, and the
    symmetry renaming followers with AlterPartition messages in flight -- a sample of the
    states within eight steps, expanded both ways."""
    cfg = named("kafka39", brokers=3, records=1, max_crashes=1)
    for reduction in (False, True):
        states, _ = _reached(cfg, tmp_path, reduction=reduction, max_depth=8)
        sample = random.Random(3).sample(states, min(500, len(states)))
        for enc, got in zip(sample, native_expansions(cfg, sample, reduction=reduction), strict=True):
            assert got == _python_expansion(decode(enc), cfg, True, reduction)


SMALL_SHUTDOWNS = named("kip320", records=1, max_crashes=0, max_shutdowns=1)
"""Shutdowns as the only failure, small enough for the whole space in Python both ways."""


@pytest.mark.parametrize("reduction", [False, True])
def test_controlled_shutdowns_search_alike_with_and_without_symmetry(reduction):
    """Symmetry keeps the verdict with shutdowns on (the brokers shutting down and the
    StopReplica requests are renamed with the brokers): each way the native figures are the
    Python checker's, and the reduced space is no larger than the full one."""
    found = {}
    for symmetry in (True, False):
        options = SearchOptions(symmetry=symmetry, reduction=reduction)
        a, b = check(SMALL_SHUTDOWNS, options), check_native(SMALL_SHUTDOWNS, options)
        assert (b.states, b.transitions, b.depth, b.holds) == (a.states, a.transitions, a.depth, a.holds)
        found[symmetry] = b
    assert found[True].holds and found[False].holds
    assert found[True].states < found[False].states


@pytest.mark.parametrize("cfg", [named("unclean", deletions=1, records=1),
                                 named("kip320", deletions=1, records=1, max_crashes=1, topic_ids=False)],
                         ids=["unclean", "kip320-no-topic-ids"])
def test_deletions_search_alike_without_symmetry(cfg):
    """Without symmetry (every broker named as it is) a deletion's space is the Python
    checker's too, reduced and not, and so is its counterexample, step for step."""
    for reduction in (False, True):
        options = SearchOptions(symmetry=False, reduction=reduction)
        a, b = check(cfg, options), check_native(cfg, options)
        assert (b.states, b.transitions, b.depth, b.holds) == (a.states, a.transitions, a.depth, a.holds)
        assert not b.holds and [s for s, _ in b.violation.steps] == [s for s, _ in a.violation.steps]


def test_the_pinned_deletion_figures_natively():
    """kip320 with one deletion holds in the pinned number of states; without topic ids the
    native counterexample is the pinned one (a stale replica of the deleted incarnation in
    the re-created topic), replayed through the model."""
    r = check_native(named("kip320", deletions=1))
    assert (r.holds, r.states, r.depth) == (True, pinned("kip320", "deletions 1", "states"), pinned("kip320", "deletions 1", "depth"))
    cfg = named("kip320", deletions=1, topic_ids=False)
    v = check_native(cfg).violation
    assert v is not None and len(v.steps) == pinned("kip320", "deletions 1, no topic ids", "counterexample steps")
    assert {"delete_topic", "create_topic"} <= {s.action for s, _ in v.steps}
    assert replay(cfg, [s for s, _ in v.steps]) == v.states


def test_a_native_counterexample_through_a_clean_stop_replays_through_the_model():
    """With unclean elections and no crash, a clean stop is the only failure: the native
    counterexample takes it, with and without symmetry, is the Python checker's, and
    replays through the model step by step."""
    cfg = named("kip320", unclean=True, max_crashes=0, max_shutdowns=1)
    for symmetry in (True, False):
        options = SearchOptions(symmetry=symmetry)
        v, w = check_native(cfg, options).violation, check(cfg, options).violation
        assert v is not None and w is not None and v.property == w.property
        assert [s for s, _ in v.steps] == [s for s, _ in w.steps]
        assert "broker_stop" in [s.action for s, _ in v.steps]
        assert replay(cfg, [s for s, _ in v.steps]) == v.states


def test_a_native_counterexample_replays_through_the_model():
    cfg = named("design")
    v = check_native(cfg).violation
    assert v is not None and v.property == "committed_durable"
    assert len(v.steps) == pinned("design", "default", "counterexample steps")
    assert replay(cfg, [s for s, _ in v.steps]) == v.states


def test_two_threads_find_what_one_finds():
    for cfg in (three_brokers("kip320"), named("design")):
        one = check_native(cfg, SearchOptions(reduction=True, max_depth=16))
        two = check_native(cfg, SearchOptions(reduction=True, max_depth=16, workers=2))
        assert (one.states, one.transitions, one.depth) == (two.states, two.transitions, two.depth)
        if one.violation:
            assert [s for s, _ in one.violation.steps] == [s for s, _ in two.violation.steps]


def test_budgets_stop_a_native_search_with_the_depth_checked():
    cfg = three_brokers("kip320")
    r = check_native(cfg, SearchOptions(reduction=True, max_states=50_000))
    assert r.stopped_by == "max_states" and not r.complete and r.states >= 50_000
    r = check_native(cfg, SearchOptions(reduction=True, max_seconds=0.5))
    assert r.stopped_by == "max_seconds" and not r.holds and r.checked_depth > 5
    bounded = check_native(cfg, SearchOptions(reduction=True, max_depth=r.checked_depth))
    assert bounded.violation is None and bounded.states <= r.states


# -- what it does not support, and when it cannot run ----------------------------------


def test_unsupported_configurations_are_named():
    assert unsupported(named("kip320")) is None
    assert unsupported(named("kip320", max_shutdowns=1, preferred_elections=1)) is None
    assert unsupported(named("kip320", deletions=1)) is None
    assert unsupported(named("kip320", deletions=1, topic_ids=False)) is None
    assert all(unsupported(named(name)) is None for name in ("kafka26", "kafka39", "kafka26-unclean", "kafka39-unclean"))
    assert unsupported(named("kip320", partitions=2, preferred_elections=1, alter_partition=1)) is None
    assert unsupported(named("kip320", partition_changes=2, reuse_partition_ids=1, partition_identity=1)) is None
    assert unsupported(named("kip320", partitions=2, reassignments=1)) is None
    assert unsupported(named("kip320", partition_changes=1, max_shutdowns=1)) is None
    assert unsupported(named("kip320", partitions=2, deletions=1)) is None
    assert unsupported(named("kafka26", partitions=2, reassignments=1)) is None  # Kafka's phases
    assert unsupported(named("kip320", partitions=3, partition_changes=2)) is None  # the wide build
    assert unsupported(named("kip320", reassignments=1, max_expiries=1)) is None
    assert unsupported(named("kip320", brokers=3, replication_factor=2, reassignments=1)) is None
    assert unsupported(named("kip320", brokers=5)) is None  # the wide build
    assert unsupported(replace(named("kip320"), fence_controller_epoch=False, fence_broker_epoch=False)) is None


NOT_IN_C = ["frobnication"]
"""What is left to refuse: an action of the registry the C does not take (none today)."""


def test_an_action_the_c_does_not_take_is_named(monkeypatch):
    monkeypatch.setattr(native, "unsupported_features", lambda engine, cfg: NOT_IN_C)
    assert unsupported(named("kip320")) == "the native search supports no frobnication"
    with pytest.raises(NativeUnavailable, match="no frobnication"):
        check_native(named("kip320"))


@pytest.mark.parametrize("flag", ["--native", "--spark"])
def test_the_command_line_says_what_native_cannot_do_in_one_line(monkeypatch, capsys, flag):
    """Refused before any search starts (or a Spark session): one line, exit 2."""
    monkeypatch.setattr(native, "unsupported_features", lambda engine, cfg: NOT_IN_C)
    assert cli_main(["check", "--config", "kip320", flag]) == 2
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if line.startswith("epochal check: error:")]
    assert len(errors) == 1 and f"{flag}: the native search supports no frobnication" in errors[0], err
    assert "Traceback" not in err


def test_without_a_compiler_the_error_says_so(monkeypatch, tmp_path):
    monkeypatch.setenv("EPOCHAL_CACHE", str(tmp_path))
    monkeypatch.setenv("CC", "no-such-compiler")
    with pytest.raises(NativeUnavailable, match="needs a C compiler"):
        binary()


def test_the_binary_is_built_once_and_reused(monkeypatch, tmp_path):
    monkeypatch.setenv("EPOCHAL_CACHE", str(tmp_path))
    first = binary()
    stamp = first.stat().st_mtime_ns
    assert binary() == first and first.stat().st_mtime_ns == stamp
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # no build leftovers


def test_a_unit_that_does_not_compile_is_an_error_naming_the_compiler_error(monkeypatch, tmp_path):
    """A native search that cannot be built fails whatever needed it (never a skip), with the
    compiler's first error -- its unit, line and message -- and no build left behind."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "main.c").write_text("int main(void) { return undeclared_count; }\n")
    monkeypatch.setattr(native, "SOURCE_DIR", src)
    monkeypatch.setenv("EPOCHAL_CACHE", str(tmp_path / "cache"))
    with pytest.raises(NativeUnavailable, match=r"compiling the native search .* failed: main\.c:1:\d+: error: .*undeclared_count"):
        binary()
    assert list((tmp_path / "cache").iterdir()) == []


def test_an_edit_to_any_unit_or_the_header_is_a_new_build(monkeypatch, tmp_path):
    """The cache key covers every source file, so an edited unit is rebuilt on its next use."""
    names = [p.name for p in sources()]
    assert "state.h" in names and {"rules.c", "search.c", "main.c"} <= set(names)
    src = tmp_path / "src"
    shutil.copytree(native.SOURCE_DIR, src)
    monkeypatch.setattr(native, "SOURCE_DIR", src)
    keys = {build_key("cc")}
    for name in names:
        text = (src / name).read_text()
        (src / name).write_text(text + "/* edited */\n")
        keys.add(build_key("cc"))
        (src / name).write_text(text)
    assert len(keys) == len(names) + 1 and build_key("cc") in keys and build_key("cc") != build_key("gcc")


def test_an_installed_package_carries_every_source_file():
    """The package data (pyproject.toml) takes every unit and the header: an installed
    epochal builds the search from what it was shipped."""
    root = Path(__file__).resolve().parents[2]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["properties"]
    shipped = [p.name for p in sources() if any(fnmatch(f"checkers/native/{p.name}", pattern) for pattern in patterns)]
    assert shipped == [p.name for p in sources()]


def test_the_key_is_the_python_checkers_key():
    cfg = named("kip320")
    s = initial(cfg)
    for _, t in successors(s, cfg):
        assert decode(key_bytes(t, cfg, True, True)) == search_key(t, cfg, True, True)


@pytest.mark.slow
def test_the_native_search_finds_kip101_diverging_at_three_brokers_as_the_checker_does():
    """The Python checker's slow three-broker search (tests/properties/test_history.py: some 3.9 M
    states, 17 steps, 6-9 minutes), natively in seconds -- the same count, so no two states
    share a fingerprint here (a weaker hash, tried first, merged two of them)."""
    cfg = three_brokers("kip101")
    r = check_native(cfg, SearchOptions(workers=2))
    assert r.states == pinned("kip101", "three brokers", "states")
    v = r.violation
    assert v is not None and v.property == "replicas_consistent"
    assert len(v.steps) == pinned("kip101", "three brokers", "counterexample steps")
    assert replay(cfg, [s for s, _ in v.steps]) == v.states


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="process groups and SIGINT are POSIX")
def test_ctrl_c_stops_a_native_search_which_reports_how_deep_it_got():
    """Ctrl-C reaches the command and the native process (one process group): the native
    search stops after the batch in hand and reports, the command prints the inconclusive
    verdict and exits 3 (inconclusive), with no traceback."""
    import os
    import signal
    import time

    cmd = [sys.executable, "-m", "impl.harness.cli.main", "check", "--config", "kip320", "--brokers", "3", "--reduction", "--native", "--workers", "2"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         preexec_fn=as_from_a_terminal)
    deadline = time.monotonic() + 60
    line = ""
    while time.monotonic() < deadline and "level  25 done" not in line:  # deep in the search
        line = p.stderr.readline()
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 3, err
    assert "INCONCLUSIVE: stopped by Ctrl-C" in out and "every run that long was tried" in out and "native search" in out
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert "interrupted: every run of up to" in err and "done:" not in err
