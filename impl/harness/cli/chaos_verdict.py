"""``chaos --json`` and ``demo --json`` in the one verdict object (``impl.harness.cli.verdict``).

A chaos run is judged two ways -- the Jepsen-style count of acknowledged writes against the
final logs (``impl.harness.chaos.verdict``), and the conformance of its traces to the model
-- and the document says which broke in the same words ``check`` uses: the property each
finding breaks as the judge recorded it (``impl.harness.chaos.verdict.Finding``:
``acked_durable`` for a lost acknowledged write, labelled as the model labels the loss an
unclean election causes by design), or ``follows_model`` for traces the model refuses.  The
counts themselves are the document's ``writes``; a run is no model run, so a violation's
``steps`` are empty.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from impl.harness.chaos.run import ChaosReport
from impl.harness.chaos.verdict import LOST, Finding
from impl.harness.cli.verdict import FOLLOWS_MODEL, violation_object

if TYPE_CHECKING:  # the Kafka engine is imported by the command that runs it, only
    from impl.harness.chaos.kafka_run import KafkaChaosReport


def chaos_violation(found: list[Finding], conformance: dict[str, Any]) -> dict[str, Any] | None:
    """The verdict object's ``violation`` of a chaos run: the first of a lost write, any other
    finding in the order the judge made them, traces that do not conform; the rest in ``also``.
    Each finding names the property it breaks, as the judge recorded it; a loss carries the
    model's label only when every loss carries it."""
    losses = [f for f in found if f.property == LOST]
    first = losses[:1]
    broken = [(f.property, f.text) for f in first + [f for f in found if not any(f is g for g in first)]]
    if conformance.get("problem"):
        broken.append((FOLLOWS_MODEL, str(conformance["problem"])))
    if not broken:
        return None
    (prop, message), also = broken[0], broken[1:]
    labels = {f.label for f in losses}
    label = labels.pop() if prop == LOST and len(labels) == 1 else None
    return violation_object(prop, message, label, [], also)


def _kafka_writes(report: KafkaChaosReport, found: list[Finding]) -> dict[str, Any]:
    """The Kafka engine's counts in the Python engine's shape: its lost values, the values
    read back elsewhere and its read-back problems as findings."""
    return {"acknowledged": len(report.acked), "lost": len(report.lost),
            "findings": [f.text for f in found], "causes": report.causes}


def chaos_document(report: ChaosReport | KafkaChaosReport) -> tuple[dict[str, Any], dict[str, Any] | None,
                                                                    dict[str, Any]]:
    """A chaos run's report (the Python engine's or the Kafka engine's) as the verdict
    object's ``config`` (what was run), ``violation``, and the other fields: the counts as
    ``writes``, the report's other fields as they are."""
    as_dict = report.as_dict()
    if isinstance(report, ChaosReport):
        engine, found = "epochal", report.verdict.found
        writes = as_dict["verdict"]
    else:
        engine, found = "kafka", report.findings()
        writes = _kafka_writes(report, found)
    config = {"name": "chaos", "engine": engine,
              **{k: as_dict[k] for k in ("seed", "duration", "brokers", "acks", "unclean", "admin", "client",
                                         "profile") if k in as_dict}}
    violation = chaos_violation(found, as_dict.get("conformance") or {})
    rest = {k: v for k, v in as_dict.items() if k not in ("verdict", "exit_code", "engine")}
    return config, violation, {"writes": writes, **rest}


def demo_violation(model_as_expected: bool, system_conforms: bool) -> dict[str, Any] | None:
    """The demonstration's violation: a history scenario whose verdict is not the expected
    one, or the real system's traces refused by the model."""
    broken: list[tuple[str, str]] = []
    if not model_as_expected:
        broken.append(("expected_verdict", "a history scenario's verdict is not the one the demo expects"))
    if not system_conforms:
        broken.append((FOLLOWS_MODEL, "the real cluster's traces do not conform to the model"))
    if not broken:
        return None
    return violation_object(broken[0][0], broken[0][1], None, [], broken[1:])
