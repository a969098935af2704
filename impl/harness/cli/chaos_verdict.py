"""``chaos --json`` and ``demo --json`` in the one verdict object (``impl.harness.cli.verdict``).

A chaos run is judged two ways -- the Jepsen-style count of acknowledged writes against the
final logs (``impl.harness.chaos.verdict``), and the conformance of its traces to the model
-- and the document says which broke in the same words ``check`` uses: the model property
the run broke (``acked_durable`` for a lost acknowledged write, labelled as the model labels
the loss an unclean election causes by design), or ``follows_model`` for traces the model
refuses.  The counts themselves are the document's ``writes``; a run is no model run, so a
violation's ``steps`` are empty.
"""

from __future__ import annotations

from typing import Any

from impl.harness.cli.verdict import FOLLOWS_MODEL, violation_object
from properties.safety import UNCLEAN_LABEL

LOST = "acked_durable"
"""The model's property an acknowledged write missing from the final logs breaks."""
DUPLICATED = "writes_once"
"""An idempotent producer's write found twice, or acknowledged twice: the model has no such
property (it does not model retries), so the chaos verdict names its own."""
LOG_CONSISTENT = "replicas_consistent"
"""What every other finding is about: a replica's log that differs from the committed one,
an offset moved, writes out of acknowledgement order."""

UNCLEAN_CAUSE = "unclean election"
"""How ``impl.harness.chaos.verdict.explain_loss`` starts the cause of a loss it pins on an
unclean election: the one loss the model labels (``properties.safety.UNCLEAN_LABEL``)."""


def loss_label(causes: dict[str, int]) -> str | None:
    """The model's label of a run's losses: unclean-election loss when every lost write is
    explained by an unclean election, else none (a loss the design does not excuse)."""
    if causes and all(c.startswith(UNCLEAN_CAUSE) for c in causes):
        return UNCLEAN_LABEL
    return None


def chaos_violation(writes: dict[str, Any], conformance: dict[str, Any]) -> dict[str, Any] | None:
    """The verdict object's ``violation`` of a chaos run: the first of a lost write, a
    duplicated write, any other finding about the logs, traces that do not conform; the rest
    in ``also``."""
    findings: list[str] = list(writes.get("findings") or [])
    broken: list[tuple[str, str]] = []
    lost = next((f for f in findings if f.startswith("lost ")), None)
    if writes.get("lost") and lost is not None:
        broken.append((LOST, lost))
    for f in findings:
        if f is lost:
            continue
        prop = DUPLICATED if (" times" in f and "value " in f) or "more duplicated" in f \
            or "more than once" in f else LOG_CONSISTENT
        broken.append((prop, f))
    if conformance.get("problem"):
        broken.append((FOLLOWS_MODEL, str(conformance["problem"])))
    if not broken:
        return None
    (prop, message), also = broken[0], broken[1:]
    label = loss_label(writes.get("causes") or {}) if prop == LOST else None
    return violation_object(prop, message, label, [], also)


def _kafka_writes(report: dict[str, Any]) -> dict[str, Any]:
    """The Kafka engine's counts in the Python engine's shape: its lost values, the values
    read back elsewhere and its read-back problems as findings."""
    lost = report.get("lost") or []
    findings = ([f"lost {len(lost)} acknowledged write{'s' if len(lost) != 1 else ''}: "
                 + ", ".join(map(str, lost[:10]))] if lost else [])
    findings += [f"value {v} read back at another offset than acknowledged" for v in report.get("misplaced") or []]
    return {"acknowledged": report.get("acknowledged"), "lost": len(lost),
            "findings": findings + list(report.get("problems") or []), "causes": report.get("causes") or {}}


def chaos_document(report: dict[str, Any], engine: str) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any]]:
    """A chaos report (``ChaosReport.as_dict`` or the Kafka engine's) as the verdict
    object's ``config`` (what was run), ``violation``, and the other fields: the counts as
    ``writes``, the report's other fields as they are."""
    writes = report.get("verdict")
    if not isinstance(writes, dict):  # the Kafka engine reports its counts at the top level
        writes = _kafka_writes(report)
    config = {"name": "chaos", "engine": engine,
              **{k: report[k] for k in ("seed", "duration", "brokers", "acks", "unclean", "admin", "client",
                                        "profile") if k in report}}
    violation = chaos_violation(writes, report.get("conformance") or {})
    rest = {k: v for k, v in report.items() if k not in ("verdict", "exit_code", "engine")}
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
