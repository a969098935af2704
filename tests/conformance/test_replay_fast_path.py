"""The judge's shortcuts are held to the plain method.

``conformance.judge.replay.judge`` by default builds candidate arguments from the observed broker,
evaluates only the properties a step could break, and remembers steps already matched (the
memo); ``fast=False`` is the plain method: every argument enumerated and filtered, every
property evaluated, no memo.  The conformance benchmark's figures are only worth something
if the two give the same verdicts -- not just the same yes/no, the same reason, property,
index and states -- on conforming traces, on the traces that must fail and on mutants,
with the memo cold and warm (a mutant judged right after its conforming original is where
a wrong memo would answer from the original's steps).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

import conformance.judge.replay as replay
from conformance.judge.replay import events_from_steps, judge
from conformance.mutations import MUTATIONS
from conformance.spark.order import causal_order, split_groups
from model.config import named
from model.registry import successors
from model.state import initial
from properties.safety import all_violations
from traces.reader import read_traces
from traces.synthetic import generate_run

DATA = Path(__file__).resolve().parents[2] / "traces" / "data"
CONFIGS = ("kip320", "design")


def _groups(events: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Per (run, topic, partition), in causal order, as the conformance job judges them."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        runs.setdefault(e["run"], []).append(e)
    out = []
    for run, evs in sorted(runs.items()):
        ordered, _ = causal_order(evs)
        out.extend((f"{run} {key}", group) for key, group in split_groups(ordered).items())
    return out


def _recorded_runs() -> dict[str, list[dict[str, Any]]]:
    runs: dict[str, list[dict[str, Any]]] = {}
    for e in read_traces([DATA / "recorded"]).events:
        runs.setdefault(e["run"], []).append(e)
    return runs


def _cases() -> list[tuple[str, list[dict[str, Any]]]]:
    cases = _groups(read_traces([DATA / "recorded"]).events)
    cases += _groups(read_traces([DATA / "nonconforming"]).events)
    originals = [generate_run(f"fp{i}", partitions=2, records=4, kill_leader=True, seed=i) for i in range(3)]
    originals += list(_recorded_runs().values())
    for run in originals[:3]:
        cases += _groups(run)  # judged before their mutants, so the memo has their steps
    for name, mutate in MUTATIONS.items():
        for i, run in enumerate(originals):
            for j in range(2):
                mutant = mutate(run, random.Random(100 * i + j))
                if mutant is not None:
                    cases += [(f"{name}/{i}/{j} {key}", g) for key, g in _groups(mutant)]
    cases.append(("design-kafka-1211", replay.design_bug_events()))
    return cases


def _walk(config: str, seed: int, steps: int = 40) -> list[Any]:
    """A random run of the model (self-loops excluded), small bounds."""
    cfg = named(config, brokers=3, records=3)
    rnd = random.Random(seed)
    s = initial(cfg)
    taken = []
    for _ in range(steps):
        options = list(successors(s, cfg))
        if not options:
            break
        step, s = options[rnd.randrange(len(options))]
        taken.append(step)
    return taken


@pytest.fixture
def cold_memo():
    """A memo that starts empty (tests must not depend on what ran before them)."""
    replay.Memo.forget_all()
    yield
    replay.Memo.forget_all()


@pytest.mark.parametrize("config", [pytest.param(c, marks=pytest.mark.slow) if c in ("kip320", "design") else c
                                    for c in CONFIGS])
def test_fast_and_memo_give_the_plain_verdicts(config: str, cold_memo: None) -> None:
    cases = _cases()
    plain = [judge(g, config, fast=False) for _, g in cases]
    assert any(v["conforms"] for v in plain) and any(not v["conforms"] for v in plain)
    unmemoized = [judge(g, config, memo=False) for _, g in cases]
    cold = [judge(g, config) for _, g in cases]  # the memo fills as it goes: mutants after originals
    warm = [judge(g, config) for _, g in cases]  # everything seen before
    for (name, _), p, u, c, w in zip(cases, plain, unmemoized, cold, warm, strict=True):
        assert u == p, f"fast path differs on {name}"
        assert c == p, f"memo (cold) differs on {name}"
        assert w == p, f"memo (warm) differs on {name}"


def test_memo_on_model_runs_exported_as_traces(cold_memo: None) -> None:
    """Random runs of the model, including the design's (whose states break properties):
    exported traces and their prefixes judged with and without every shortcut."""
    for config in CONFIGS:
        for seed in range(6):
            steps = _walk(config, seed)
            for cut in (len(steps), len(steps) // 2):
                events = events_from_steps(named(config, brokers=3, records=3), steps[:cut])
                for judged_as in CONFIGS:
                    plain = judge(events, judged_as, fast=False)
                    assert judge(events, judged_as) == plain
                    assert judge(events, judged_as, memo=False) == plain


def test_the_memo_answers_runs_that_differ_only_in_values(cold_memo: None) -> None:
    """Two runs of the same shape with different record values: the second is answered
    from the memo (values are matched as the model values they stand for, not as text),
    and still conforms; a run whose fetched value was never produced does not."""
    first = generate_run("a", partitions=1, records=5, seed=1)
    second = generate_run("b", partitions=1, records=5, seed=2)
    assert [e["params"].get("value") for e in first] != [e["params"].get("value") for e in second]
    assert judge(first)["conforms"]
    before = dict(replay.MEMO_STATS)
    assert judge(second)["conforms"]
    hits = replay.MEMO_STATS["hits"] - before["hits"]
    misses = replay.MEMO_STATS["misses"] - before["misses"]
    assert hits > 0.9 * (hits + misses), (hits, misses)
    forged = [dict(e) for e in second]
    i = next(i for i, e in enumerate(forged) if e["kind"] == "receive_fetch" and e["params"]["records"])
    params = dict(forged[i]["params"])
    params["records"] = [[o, ep, "never-produced"] for o, ep, _ in params["records"]]
    forged[i] = {**forged[i], "params": params}
    verdict = judge(forged)
    assert not verdict["conforms"] and verdict["first_bad"] == i
    assert verdict == judge(forged, fast=False)


def test_may_break_is_true_whenever_a_property_breaks() -> None:
    """``may_break`` skips property checks; it must never skip one that fails.  Every step
    of random walks of every configuration, from a state that holds every property."""
    checked = broke = 0
    for config in ("design", "kip101", "kip279", "kip320", "unclean", "zombie"):
        cfg = named(config, brokers=3, records=3)
        for seed in range(8):
            rnd = random.Random(seed)
            s = initial(cfg)
            for _ in range(60):
                options = list(successors(s, cfg))
                if not options:
                    break
                for _, t in options:
                    bad = all_violations(s, t)
                    checked += 1
                    broke += bool(bad)
                    assert replay.may_break(s, t) or not bad, (config, bad)
                healthy = [t for _, t in options if not all_violations(s, t)]
                if not healthy:
                    break
                s = healthy[rnd.randrange(len(healthy))]
    assert checked > 1000 and broke > 0, (checked, broke)


# -- the job's fast decoding, held to the plain reader ------------------------------------------


@pytest.mark.parametrize("text", [
    '{"a": 123456789012345678901234567890}', '{"a": 1e400}', '{"a": NaN}', '{"a": -Infinity}',
    '{"a": "\\ud800"}', '{"a": 1, "a": 2}', '[1, 2', '{"a": 1}x', '\ufeff{}', '{"a": "x\ty"}', " {} ",
    '{"a": 01}', '{"a": .5}', '{"a": -0}', '{"\\u0000": 1.5E-3}', "", "nul",
])
def test_loads_is_json_loads(text: str) -> None:
    """``traces.schema.loads`` (msgspec first) answers exactly as ``json.loads``: the same
    value, or a ValueError with the same message (a quarantine reason quotes it)."""
    import json
    import math

    from traces.schema import loads

    try:
        want: Any = json.loads(text)
    except ValueError as exc:
        with pytest.raises(ValueError) as got:
            loads(text)
        assert str(got.value) == str(exc)
        return
    value = loads(text)
    if isinstance(want, dict) and any(isinstance(v, float) and math.isnan(v) for v in want.values()):
        assert json.dumps(value) == json.dumps(want)
    else:
        assert value == want and type(value) is type(want)


@pytest.mark.slow
def test_generated_validators_agree_with_the_loop() -> None:
    """``_fast_check`` (generated straight-line code) says "valid" exactly when the generic
    loop finds nothing wrong, on random objects for every spec table."""
    from traces import schema

    tables = [schema.FIELDS, *schema.PARAMS.values(), *schema.POST.values()]
    values = [None, 0, 7, -1, True, 1.5, "x", [], [1, 2], [1, True], [[0, 1, "a"]], [[0, 1]],
              [[0, True, "a"]], [[0, 1, [1]]], {}, {"a": 1}]
    rnd = random.Random(5)
    valid = 0
    for _ in range(20000):
        specs = rnd.choice(tables)
        obj = {s.name: rnd.choice(values) for s in specs if rnd.random() > 0.1}
        fast = schema._fast_check(specs)(obj)
        schema._FAST_CHECKS.pop(id(specs), None)
        loop = schema._check_fields(obj, specs, "") is None  # rebuilds its fast check, then loops
        assert fast == loop, (specs, obj)
        valid += fast
    assert valid > 100


def test_the_generated_event_check_accepts_exactly_what_validate_accepts() -> None:
    """``validate`` accepts a valid event through one generated function per kind
    (``_event_check``) and words reasons with its rules (``_reason``): on recorded events of
    every kind, each mutated at random (fields dropped, set to null, to a value of another
    type, negative, its kind or schema changed), the two say "valid" for the same events."""
    import copy

    from traces import schema
    from traces.reader import read_traces

    events = [{k: v for k, v in e.items() if not k.startswith("_")} for e in read_traces([DATA / "recorded"]).events]
    by_kind: dict[str, list] = {}
    for e in events:
        by_kind.setdefault(e["kind"], []).append(e)
    values = [None, 0, 7, -1, True, 1.5, "x", [], [1, 2], [1, True], [[0, 1, "a"]], [[0, 1]],
              [[0, True, "a"]], {}, {"a": 1}, schema.SCHEMA_ID]
    rnd = random.Random(11)
    accepted = rejected = 0
    for _ in range(30000):
        e = copy.deepcopy(rnd.choice(rnd.choice(list(by_kind.values()))))
        for _ in range(rnd.choice([0, 1, 1, 2])):
            where = rnd.choice(["top", "params", "post"])
            d = e if where == "top" else e.get(where)
            if not isinstance(d, dict):
                continue
            key = rnd.choice([*d, "extra"]) if d else "extra"
            if where == "top" and rnd.random() < 0.1:
                key = "kind"
                d[key] = rnd.choice([*schema.KINDS, "nope", 3])
            elif rnd.random() < 0.2:
                d.pop(key, None)
            else:
                d[key] = rnd.choice(values)
        fast = schema.validate(e) is None
        assert fast == (schema._reason(e) is None), e
        accepted += fast
        rejected += not fast
    assert accepted > 3000 and rejected > 3000
    assert {e["kind"] for e in events} >= {"produce", "send_fetch", "handle_fetch", "become_leader", "elect_leader"}


def test_job_stages_read_what_the_plain_reader_reads() -> None:
    """The job's decode stage (one row per file and run) and judge stage, fed Arrow batches
    without Spark: the same events (same fields, files and lines) and quarantined records
    as ``traces.reader.read_traces``, and the same verdicts as judging its events."""
    import pyarrow as pa

    from conformance.spark.read import decode_files
    from conformance.spark.tasks import judge_partitions
    from conformance.spark.verdict import judge_run

    files = sorted(p for d in ("recorded", "malformed", "nonconforming") for p in (DATA / d).rglob("*")
                   if p.is_file() and p.name != "README.md")
    batch = pa.RecordBatch.from_pylist([{"path": "file:" + str(f), "content": f.read_bytes()} for f in files])
    decoded = pa.Table.from_batches(list(decode_files(iter([batch]))))
    decoded = decoded.sort_by([("run", "ascending"), ("file", "ascending"), ("line", "ascending")])
    seen: list[dict[str, Any]] = []

    def spy(events: list[dict[str, Any]], config: str) -> dict[str, Any]:
        seen.extend(events)
        return judge(events, config)

    rows = pa.Table.from_batches(list(judge_partitions(spy, "kip320")(iter(decoded.to_batches())))).to_pylist()
    plain = read_traces([str(f) for f in files])
    quarantined = sorted((r["file"], r["line"], r["reason"], r["raw"]) for r in rows if r["row"] == "quarantine")
    assert quarantined == sorted((q.file, q.line, q.reason, q.raw[:300]) for q in plain.quarantined)
    key = lambda e: (e["_file"], e["_line"])  # noqa: E731
    unique = {key(e): e for e in seen}
    assert sorted(unique.values(), key=key) == sorted(plain.events, key=key)
    by_run: dict[str, list[dict[str, Any]]] = {}
    for e in plain.events:
        by_run.setdefault(e["run"], []).append(e)
    want = [v for run, evs in sorted(by_run.items()) for v in judge_run(run, evs, judge, "kip320")]
    got = [r for r in rows if r["row"] == "verdict"]
    strip = lambda v: {k: v[k] for k in ("run", "topic", "partition", "status", "matched", "total", "first_bad",  # noqa: E731
                                         "first_bad_file", "first_bad_line", "reason", "property")}
    assert sorted(map(str, map(strip, got))) == sorted(map(str, map(strip, want)))
    assert any(v["status"] == "violates" for v in got) and any(v["status"] == "conforms" for v in got)
