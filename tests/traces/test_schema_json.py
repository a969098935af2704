"""traces/schema.json is normative: generated from traces/schema.py, it accepts every recorded
event and every example of SCHEMA.md (checked with the off-the-shelf ``jsonschema``
validator), and it declares every field the judge reads -- recorded traces stripped to the
declared fields are judged exactly as before."""

from __future__ import annotations

import copy
import functools
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from conformance.spark.verdict import judge_run, load_judge
from traces.schema import (
    FIELD_BY_NAME,
    PARAMS,
    POST,
    ZXID,
    ZXID_ABSENT,
    ZXID_REQUIRED,
    json_schema_text,
)
from traces.vocabulary import KINDS

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_FILE = ROOT / "traces" / "schema.json"
DOC = (ROOT / "traces" / "SCHEMA.md").read_text(encoding="utf-8")
SAMPLES = ROOT / "traces" / "data"
RUNS = sorted(d for part in ("recorded", "nonconforming") for d in (SAMPLES / part).iterdir() if d.is_dir())
RECORDED = [d for d in RUNS if d.parent.name == "recorded"]


def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=1)
def _validator() -> Any:
    schema = _schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@functools.cache
def _lines(run: Path) -> tuple[str, ...]:
    return tuple(line for f in sorted(run.glob("*.jsonl"))
                 for line in f.read_text(encoding="utf-8").splitlines() if line.strip())


def _events(run: Path) -> list[dict[str, Any]]:
    """The run's events, freshly decoded (callers may change them)."""
    return [json.loads(line) for line in _lines(run)]


def _errors(validator: Any, event: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(event)]


def test_the_file_is_what_the_code_generates():
    """``python -m traces.schema --json-schema > traces/schema.json`` after a change to the tables."""
    assert SCHEMA_FILE.read_text(encoding="utf-8") == json_schema_text()


def test_the_file_is_a_valid_json_schema_2020_12_with_one_definition_per_kind():
    schema = _schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert list(schema["$defs"]) == list(KINDS)
    assert schema["properties"]["kind"]["enum"] == list(KINDS)


@pytest.mark.parametrize("run", RUNS, ids=[f"{d.parent.name}/{d.name}" for d in RUNS])
def test_every_sample_event_validates(run: Path):
    validator = _validator()
    bad = {f"{e['kind']} node {e['node']} seq {e['seq']}": _errors(validator, e)
           for e in _events(run) if not validator.is_valid(e)}
    assert not bad


def _doc_examples() -> dict[str, list[dict[str, Any]]]:
    """The ```json blocks of SCHEMA.md section 8, by the kind whose section holds them."""
    section = DOC.split("\n## 8.", 1)[1].split("\n## 9.", 1)[0]
    out: dict[str, list[dict[str, Any]]] = {}
    for block in section.split("\n### `")[1:]:
        name = block.split("`", 1)[0]
        out[name] = [json.loads(text) for text in re.findall(r"```json\n(.*?)\n```", block, re.S)]
    return out


def test_every_kind_has_exactly_one_example_of_its_own_kind():
    examples = _doc_examples()
    assert list(examples) == list(KINDS)
    for name, found in examples.items():
        assert [e["kind"] for e in found] == [name], name


@pytest.mark.parametrize("name", list(KINDS))
def test_the_example_of_each_kind_validates_and_is_complete(name: str):
    [example] = _doc_examples()[name]
    assert not _errors(_validator(), example)
    assert set(FIELD_BY_NAME) <= set(example), "an example shows every top-level field"
    assert {s.name for s in PARAMS.get(name, ()) if s.required} <= set(example["params"])
    assert {s.name for s in POST.get(name, ()) if s.required} <= set(example["post"])


# -- what the schema refuses: each rule it states beyond the reader's types ---------------


def _recorded(kind: str) -> dict[str, Any]:
    return copy.deepcopy(next(e for run in RECORDED for e in _events(run) if e["kind"] == kind))


@pytest.mark.parametrize(("what", "kind", "change"), [
    ("a value outside an enumeration", "elect_leader", lambda e: e["params"].update(reason="because")),
    ("a role outside its enumeration", "become_leader", lambda e: e["post"].update(role="observer")),
    ("a missing required param", "elect_leader", lambda e: e["params"].pop("zk_version")),
    ("a param of the wrong type", "produce", lambda e: e["params"].update(offset="3")),
    ("a missing zxid on a ZooKeeper write", "expand_isr", lambda e: e.update(zxid=None)),
    ("a zxid on a step without a write", "become_follower", lambda e: e.update(zxid=12)),
    ("a partition-scope kind without a topic", "produce", lambda e: e.update(topic=None)),
    ("a negative seq", "produce", lambda e: e.update(seq=-1)),
    ("an unknown kind", "produce", lambda e: e.update(kind="become_zombie")),
    ("a record that is not [offset, epoch, value]", "receive_fetch",
     lambda e: e["params"].update(records=[[0, 0]])),
])
def test_the_schema_refuses(what: str, kind: str, change: Any):
    event = _recorded(kind)
    assert not _errors(_validator(), event)
    change(event)
    assert _errors(_validator(), event), what


def test_which_kinds_must_carry_a_zxid_is_declared_for_every_kind():
    assert set(ZXID) == set(KINDS)
    defs = _schema()["$defs"]
    for name, rule in ZXID.items():
        assert ("zxid" in defs[name]["required"]) == (rule == ZXID_REQUIRED), name
        assert (defs[name]["properties"].get("zxid") == {"type": "null"}) == (rule == ZXID_ABSENT), name


# -- the strip test: the judge reads nothing the schema leaves out -------------------------


def _declared(schema: dict[str, Any]) -> dict[str, tuple[set[str], set[str]]]:
    """Per kind, the params and post keys ``schema.json`` declares."""
    out = {}
    for name, d in schema["$defs"].items():
        post = next(a for a in d["properties"]["post"]["anyOf"] if a.get("type") == "object")
        out[name] = (set(d["properties"]["params"]["properties"]), set(post["properties"]))
    return out


def _stripped(events: list[dict[str, Any]], declared: dict[str, tuple[set[str], set[str]]],
              top: set[str]) -> list[dict[str, Any]]:
    out = []
    for e in events:
        params, post = declared[e["kind"]]
        s = {k: v for k, v in e.items() if k in top}
        s["params"] = {k: v for k, v in e["params"].items() if k in params}
        s["post"] = {k: v for k, v in (e.get("post") or {}).items() if k in post}
        out.append(s)
    return out


def _verdicts(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(v["topic"], v["partition"], v["conforms"], v["first_bad"], v["reason"])
            for v in judge_run(events[0]["run"], events, load_judge(None), "kip320")]


def test_stripping_removes_something_from_every_recorded_run():
    """Else the strip test below proves nothing: the samples carry extra fields (pid, the
    truncation's lookup answers, a follower's role after a fetch) the schema leaves out."""
    schema = _schema()
    declared, top = _declared(schema), set(schema["properties"])
    for run in RECORDED:
        events = _events(run)
        assert _stripped(events, declared, top) != events, run.name


@pytest.mark.parametrize("run", RUNS, ids=[f"{d.parent.name}/{d.name}" for d in RUNS])
def test_traces_stripped_to_the_declared_fields_are_judged_as_before(run: Path):
    """Every recorded run still conforms, every non-conforming sample fails at the same event
    for the same reason: the judge reads no field ``schema.json`` does not declare."""
    schema = _schema()
    events = _events(run)
    stripped = _stripped(events, _declared(schema), set(schema["properties"]))
    before, after = _verdicts(events), _verdicts(stripped)
    if run.parent.name == "recorded":
        assert all(conforms for _, _, conforms, _, _ in after), after
    assert [v[:4] for v in after] == [v[:4] for v in before]


def test_the_strip_test_can_fail_a_field_the_judge_reads_is_missed():
    """Stripping one more field the judge reads -- ``controller_resign.reason``, which tells a
    stopping controller from a superseded one -- makes a recorded run fail."""
    schema = _schema()
    declared = _declared(schema)
    declared["controller_resign"] = (declared["controller_resign"][0] - {"reason"}, declared["controller_resign"][1])
    events = _stripped(_events(SAMPLES / "recorded" / "leader-kill"), declared, set(schema["properties"]))
    assert not all(v[2] for v in _verdicts(events))
