"""The judge's explanations in words: an event, a field's value, the rule an event is a step of.

A refusal says the event, the rule it broke, which field and which values -- never a Python
repr a reader has to parse: ``send_fetch by broker 2 (leader 1, fetch_offset 1, leader_epoch
0; afterwards hw 2, leo 1) breaks rule send_fetch (design section 000 G): it does not match
any step the model allows -- post.hw is 2 where the model's step gives 0``.

``REFINEMENT`` is the property a refusal for a step names when no safety property is why:
every event of a trace is a step the model allows (the trace *refines* the model).
"""

from __future__ import annotations

from typing import Any

from model.actions.views import HARNESS
from model.registry import ACTIONS, REPLAYED

REFINEMENT = "refinement"
"""Every event is a step the model allows: the property a trace breaks at an event no
step of the model matches (the rule named in the reason)."""

DIFFERS = ": it does not match any step the model allows -- "
"""Between a refused event and how the model's steps differ from it (the driver reads it)."""


def value_words(v: Any) -> str:
    """One field's value as a reader writes it: ``none``, ``"text"``, ``1, 2 and 3``
    spelled ``[1, 2, 3]``, a record ``offset 1 (epoch 0, "v1")``, a map ``a 1, b 2``."""
    if v is None:
        return "none"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} {value_words(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        if v and all(_is_record(r) for r in v):
            return "[" + "; ".join(_record_words(r) for r in v) + "]"
        return "[" + ", ".join(value_words(x) for x in v) + "]"
    return str(v)


def _is_record(r: Any) -> bool:
    return isinstance(r, (list, tuple)) and len(r) >= 3 and all(isinstance(x, int) for x in r[:2])


def _record_words(r: Any) -> str:
    return f"offset {r[0]} (epoch {r[1]}, {value_words(r[2])})"


def fields_words(fields: dict[str, Any]) -> str:
    return ", ".join(f"{k} {value_words(v)}" for k, v in fields.items())


def event_words(e: dict[str, Any]) -> str:
    """``kind by broker N (field value, ...; afterwards field value, ...)``."""
    params = dict(e.get("params") or {})
    who = f"the harness (broker {params.get('broker')})" if e["node"] == HARNESS else f"broker {e['node']}"
    parts = [fields_words(params)] if params else []
    if e.get("post"):
        parts.append(f"afterwards {fields_words(e['post'])}")
    shown = f" ({'; '.join(parts)})" if parts else ""
    return f"{e['kind']} by {who}{shown}"


def rule_words(kind: str) -> str:
    """The model's rule an event of ``kind`` is a step of, with its design section."""
    action = REPLAYED.get(kind)
    if action is None:
        return f"no rule of the model (kind {kind!r} is not replayed)"
    return f"rule {action} (design section {ACTIONS[action].section})"


def field_mismatch_words(key: str, seen: Any, want: Any) -> str:
    """One field the model's step disagrees on: ``post.hw is 2 where the model's step gives 0``."""
    return f"{key} is {value_words(seen)} where the model's step gives {value_words(want)}"


def property_words(name: str) -> str:
    """A property as a report names it: ``REFINEMENT`` with what it means."""
    return f"{name} (every event is a step the model allows)" if name == REFINEMENT else name
