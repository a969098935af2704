"""``epochal prove`` as a user runs it: each configuration's verdicts as the z3 proofs returned
them and as the command prints them, from one z3 run each (a proof takes 20-30 s): kip320's
every invariant and durability proved by induction, exit 0 and its verdict object; the
design's durability not proved, exit 3, each failed consecution's counterexample to
induction printed, with BMC's bound, and its verdict object; a configuration or option it
cannot encode refused in one line."""

from __future__ import annotations

import pytest
from impl_testing import verdict_object

from impl.harness.cli.main import main
from properties.checkers.symbolic import durability, proofs, prove


def _proved_by_the_cli(monkeypatch: pytest.MonkeyPatch, *argv: str) -> tuple[int, dict]:
    """``epochal prove`` run as a user runs it, and the verdicts its proofs returned -- one
    z3 run checked both as printed and as proved (each proof takes 20-30 s)."""
    import properties.checkers.symbolic as symbolic  # what the command imports when it runs

    got: dict = {}

    def kept(*args, **kwargs):
        verdicts = prove(*args, **kwargs)
        got.update({v.name: v for v in verdicts})
        return verdicts

    monkeypatch.setattr(symbolic, "prove", kept)
    return main(list(argv)), got


def _holds_base_lemmas(verdicts: dict) -> None:
    base = {*proofs.LEMMAS, *proofs.STATE_GOALS, *proofs.STEP_GOALS}
    assert base >= {"hw_le_leo", "isr_well_formed", "one_leader_per_epoch",
                    "single_controller", "epoch_monotonic", "q3_stale_leader_frozen"}
    assert [n for n in base if verdicts[n].status != "proved"] == []
    assert set(verdicts) == base | {*durability.LEMMAS, *durability.GOALS, *durability.STEPS}


def test_kip320_proves_every_invariant_and_durability_by_induction(monkeypatch, capsys):
    """kip320 with its knobbed actions: test_exit_codes; its verdict object is the one every
    model command prints (tests/impl/harness/cli/test_verdict_schema.py)."""
    code, verdicts = _proved_by_the_cli(monkeypatch, "prove", "--config", "kip320", "--no-bmc", "--json")
    doc = verdict_object(capsys.readouterr().out)
    assert code == doc["exit_code"] == 0 and doc["command"] == "prove" and doc["verdict"] == "holds"
    assert doc["config"] == doc["results"][0]["config"] and doc["violation"] == doc["results"][0]["violation"]
    _holds_base_lemmas(verdicts)
    tier = {*durability.LEMMAS, *durability.GOALS, *durability.STEPS}
    assert [n for n in tier if verdicts[n].status != "proved"] == []


def test_prove_cli(monkeypatch, capsys):
    """Where durability's induction fails (the design: it truncates to its own HW, below what it
    shares with the leader) and BMC finds no loss within its depth (1), prove answers 3,
    prints each failed consecution's counterexample to induction (on stderr under --json)
    and its exit 3's verdict object (kip320's 0: above and test_exit_codes)."""
    code, verdicts = _proved_by_the_cli(monkeypatch, "prove", "--config", "design", "--depth", "1", "--json")
    printed = capsys.readouterr()
    doc, out = verdict_object(printed.out), printed.err
    assert code == doc["exit_code"] == 3 and doc["command"] == "prove" and doc["verdict"] == "inconclusive"
    about = next(r for r in doc["results"] if r["exit_code"] == 3)
    assert doc["config"] == about["config"] and doc["violation"] == about["violation"] is None
    assert "proved" in out and "counterexample to induction:" in out and "    action: truncate(" in out
    assert "committed_durable" in out.split("INCONCLUSIVE: not proved:")[1]
    assert "holds to depth 1" in out and "bounded-checked to depth 1 only" in out
    _holds_base_lemmas(verdicts)
    assert verdicts["committed_durable"].status != "proved"
    failed = [v for v in verdicts.values() if v.status == "failed"]
    assert failed and all(v.cti[0] == "counterexample to induction:" for v in failed if "Init" not in v.detail)
    cut = verdicts["truncation_keeps_common_prefix"]
    assert cut.status == "failed" and any(line.startswith("  action: truncate(") for line in cut.cti)
    assert main(["prove", "--config", "kafka39"]) == 2
    assert main(["prove", "--brokers", "5"]) == 2
    assert main(["prove", "--config", "kip320", "--max-pauses", "-1"]) == 2
    assert "--max-pauses" in capsys.readouterr().err  # one line, no traceback
    assert main(["prove", "--config", "kip320", "--deletions", "1", "--alter-partition", "1"]) == 2
    assert capsys.readouterr().err.strip().endswith("(topic deletion with AlterPartition)")
    assert main(["prove", "--config", "kip320", "--reassignments", "1", "--alter-partition", "1"]) == 2
    assert capsys.readouterr().err.strip().endswith("(reassignment with AlterPartition)")
