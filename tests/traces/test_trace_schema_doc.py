"""traces/SCHEMA.md is normative: it must list exactly what schema.py and vocabulary.py implement."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from traces import SCHEMA_ID
from traces.schema import FIELDS, PARAMS, POST, REASONS, TYPES, ZXID
from traces.vocabulary import KINDS, OBSERVES_ZXID

DOC = (Path(__file__).resolve().parents[2] / "traces" / "SCHEMA.md").read_text(encoding="utf-8")
ROW = re.compile(r"^\| `([^`]+)` \| `([^`]+)` \| (yes|no) \| .+ \|$")


def _section(text: str, start: str, end: str) -> str:
    return text.split(start, 1)[1].split(end, 1)[0]


def _rows(text: str) -> dict[str, tuple[str, bool]]:
    rows = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            rows[m.group(1)] = (m.group(2), m.group(3) == "yes")
    return rows


def _doc_kinds() -> dict[str, dict]:
    kinds = {}
    for block in _section(DOC, "## 8.", "\n## 9.").split("\n### `")[1:]:
        name, body = block.split("`", 1)
        action = re.search(r"^- model action: (?:`(\w+)`|none)", body, re.M)
        scope = re.search(r"^- scope: (\w+)", body, re.M)
        params = body.split("params:", 1)[1].split("post:", 1)[0]
        post = body.split("post:", 1)[1]
        kinds[name] = {
            "action": action.group(1) if action else "?",
            "scope": scope.group(1) if scope else "?",
            "params": _rows(params),
            "post": _rows(post),
        }
    return kinds


def _spec(specs) -> dict[str, tuple[str, bool]]:
    return {s.name: (s.type, s.required) for s in specs}


def test_document_names_the_schema_version_it_describes():
    assert f"(`{SCHEMA_ID}`)" in DOC.splitlines()[0]


def test_every_top_level_field_is_documented_with_the_same_type_and_requiredness():
    assert _rows(_section(DOC, "## 3.", "## 4.")) == _spec(FIELDS)


def test_every_kind_is_documented_with_its_model_action_and_scope():
    """The action column is the registry's (``model.registry.REPLAYED``, derived from each
    action's trace kind): the format's page says it, the format's code does not know it."""
    from model.registry import REPLAYED

    doc = _doc_kinds()
    assert list(doc) == list(KINDS)
    for name, kind in KINDS.items():
        assert doc[name]["action"] == REPLAYED.get(name), name
        assert doc[name]["scope"] == kind.scope, name


@pytest.mark.parametrize("name", list(KINDS))
def test_every_kind_documents_the_same_params_and_post_fields(name):
    doc = _doc_kinds()[name]
    assert doc["params"] == _spec(PARAMS.get(name, ())), f"params of {name}"
    assert doc["post"] == _spec(POST.get(name, ())), f"post of {name}"


def test_code_only_uses_documented_types_and_kinds():
    for specs in [FIELDS, *PARAMS.values(), *POST.values()]:
        for s in specs:
            assert s.type in TYPES, s
    assert set(PARAMS) <= set(KINDS) and set(POST) <= set(KINDS)


def test_every_quarantine_reason_is_documented():
    table = _section(DOC, "## 6.", "## 7.")
    assert re.findall(r"^\| `(\w+)` \|", table, re.M) == list(REASONS)


def test_every_replayed_kind_is_a_kind_of_the_format_and_names_an_action_of_the_model():
    from model.registry import ACTIONS as actions
    from model.registry import REPLAYED

    assert set(REPLAYED) <= set(KINDS)
    assert set(REPLAYED.values()) <= set(actions)


def test_the_kinds_that_observe_a_zxid_are_the_ones_the_ordering_rule_names():
    """§4 rule 2 orders an event that carries another's write's zxid after that write; the
    kinds it names are the ones the ordering code treats so."""
    rule = _section(DOC, "\n2. among the run's events", "\n3. for ")
    assert {k for k in re.findall(r"`(\w+)`", rule) if k in KINDS} == set(OBSERVES_ZXID)


@pytest.mark.parametrize("name", list(KINDS))
def test_every_kind_documents_whether_it_carries_a_zxid(name):
    block = _section(DOC, f"\n### `{name}`\n", "\n### ")
    rule = re.search(r"^- zxid: (\w+)", block, re.M)
    assert rule is not None and rule.group(1) == ZXID[name], name


def test_every_enumeration_is_documented_value_by_value():
    """An enumerated field's row names each value it allows (``one of `a`, `b```)."""
    doc = _doc_kinds()
    for table, part in ((PARAMS, "params"), (POST, "post")):
        for kind, specs in table.items():
            block = _section(DOC, f"\n### `{kind}`\n", "\n### ")
            section = block.split("params:", 1)[1] if part == "params" else block.split("post:", 1)[1]
            for spec in specs:
                if not spec.values:
                    continue
                assert spec.name in doc[kind][part], (kind, spec.name)
                row = next(line for line in section.splitlines() if line.startswith(f"| `{spec.name}` |"))
                assert all(f"`{v}`" in row for v in spec.values), (kind, spec.name, row)
