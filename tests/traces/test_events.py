"""Trace events are typed when written: each kind's constructor is made from the schema's
tables, checks names and types at the call, and every ``emit`` in impl/ goes through one."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from traces import events, schema
from traces.events import Event, EventError
from traces.recorder import TraceRecorder
from traces.vocabulary import KINDS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_kind_has_a_constructor_whose_parameters_are_the_schema(kind):
    params = inspect.signature(events.CONSTRUCTORS[kind]).parameters
    required = {n for n, p in params.items() if p.default is inspect.Parameter.empty}
    declared = {f.name for f in schema.PARAMS.get(kind, ())}
    assert {f.name for f in schema.PARAMS.get(kind, ()) if f.required} <= required
    assert declared <= set(params)
    assert ("topic" in required) == (KINDS[kind].scope == "partition")
    assert ("zxid" in required) == (schema.ZXID[kind] == schema.ZXID_REQUIRED)
    assert ("zxid" in params) == (schema.ZXID[kind] != schema.ZXID_ABSENT)
    assert getattr(events, kind) is events.CONSTRUCTORS[kind]


def _fetch(**fields):
    return events.send_fetch(topic="t", partition=0, leader=1, leader_epoch=2, post={"hw": 3, "leo": 4}, **fields)


def test_a_wrong_field_or_kind_raises_at_the_emit_site(tmp_path):
    rec = TraceRecorder(tmp_path / "n.jsonl", "run", 1)
    with pytest.raises(TypeError, match="fetch_ofset"):
        rec.emit(_fetch(fetch_ofset=4))  # a misspelt name
    with pytest.raises(EventError, match="params.fetch_offset should be int"):
        rec.emit(_fetch(fetch_offset="4"))  # a wrong type
    with pytest.raises(TypeError, match="fetch_offset"):
        rec.emit(events.send_fetch(topic="t", partition=0, leader_epoch=2))  # a required field missing
    with pytest.raises(EventError, match="post.leo"):
        rec.emit(events.send_fetch(topic="t", partition=0, fetch_offset=4, leader_epoch=2, post={"hw": 3}))
    with pytest.raises(EventError, match="declared parameters"):
        rec.emit(_fetch(fetch_offset=4, informational={"leader_epoch": 9}))  # informational shadows a field
    with pytest.raises(TypeError, match="zxid"):
        rec.emit(events.broker_resume(broker=1, zxid=5))  # a kind that must not carry a zxid
    with pytest.raises(TypeError, match="topic"):
        rec.emit(events.produce(offset=0, value="v", leader_epoch=1))  # partition scope without one
    with pytest.raises(AttributeError, match="become_zombie"):
        rec.emit(events.become_zombie(broker=1))  # an unknown kind
    with pytest.raises(EventError, match="unknown_kind"):
        Event("become_zombie")
    with pytest.raises(TypeError, match="traces.events.Event"):
        rec.emit({"kind": "note"})  # type: ignore[arg-type]
    rec.close()
    assert (tmp_path / "n.jsonl").read_text() == ""  # nothing invalid was written


def test_what_a_constructor_makes_the_reader_accepts(tmp_path):
    rec = TraceRecorder(tmp_path / "n.jsonl", "run", 1)
    written = [rec.emit(_fetch(fetch_offset=4, informational={"extra": [1]})),
               rec.emit(events.elect_leader(topic="t", partition=0, zxid=7, leader=1, leader_epoch=1, isr=[1],
                                            zk_version=0, controller_epoch=1, reason="init", unclean=False)),
               rec.emit(events.broker_crash(broker=2))]
    rec.close()
    assert [schema.validate(e) for e in written] == [None, None, None]
    assert written[0]["params"] == {"leader": 1, "fetch_offset": 4, "leader_epoch": 2, "extra": [1]}
    assert written[2]["zxid"] is None and "pid" not in written[2]["params"]


def _emit_calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "emit":
            yield node


def _raw(call: ast.Call) -> str | None:
    """What makes ``call`` an emit of a hand-written event, or None."""
    if not call.args:
        return "no event"
    first = call.args[0]
    if isinstance(first, ast.Constant):
        return f"a kind given as {first.value!r}"
    if any(isinstance(a, (ast.Dict, ast.DictComp)) or (isinstance(a, ast.Call) and getattr(a.func, "id", "") == "dict")
           for a in call.args):
        return "a raw dict"
    if any(k.arg == "params" for k in call.keywords):
        return "params="
    return None


def test_no_emit_in_impl_passes_a_raw_dict():
    found, bad = 0, []
    for path in sorted((ROOT / "impl").rglob("*.py")):
        for call in _emit_calls(ast.parse(path.read_text(), str(path))):
            found += 1
            why = _raw(call)
            if why:
                bad.append(f"{path.relative_to(ROOT)}:{call.lineno}: {why}")
    assert found >= 30  # the scan sees the emit sites
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize(("source", "why"), [
    ('rec.emit("produce", params={"offset": 0})', "a kind given as 'produce'"),
    ('r.emit(kind, {"offset": 0})', "a raw dict"),
    ("rec.emit(kind, params=p)", "params="),
])
def test_the_scan_reports_a_hand_written_event(source, why):
    (call,) = _emit_calls(ast.parse(source))
    assert _raw(call) == why
