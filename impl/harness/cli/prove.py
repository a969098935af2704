"""``epochal prove``: z3 proofs and bounded model checking over ``properties.checkers.symbolic``.

One line per property: ``proved`` (inductive, for every epoch, version and crash count),
``failed`` / ``unknown`` (not shown inductive: not preserved by some action -- its
counterexample to induction printed under it -- or z3 gave up, or it leaned on a failed one),
``holds to depth k`` (BMC found nothing), or ``counterexample`` (with the decoded steps,
replayed through the explicit model).

Exit codes (``impl.harness.cli.exits``): 0 every property proved (induction covers every reachable
state, so it holds), 1 BMC found a counterexample (a concrete run that breaks durability), 2
bad arguments, 3 inconclusive -- something is not proved: a proof failed or was undecided
(durability among them, ``DURABILITY``, which BMC then checks only to a depth).  A failed induction step is not a
violation: the state it starts from may be unreachable; only a counterexample is.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from impl.harness.cli.check import add_knob_arguments
from impl.harness.cli.errors import UsageError
from impl.harness.cli.exits import FOUND, HOLDS, INCONCLUSIVE, combined
from impl.harness.cli.heartbeat import Heartbeat
from impl.harness.cli.output import add_json_flag
from impl.harness.cli.verdict import (
    config_object,
    label_of,
    print_results,
    result_entry,
    step_objects,
    violation_object,
)
from model.config import NAMED
from model.registry import ACTIONS

# The explicit prefix BMC starts from: the record is replicated and committed (6 steps of
# the KAFKA-1211 scenario).  BMC time grows ~5x per depth, so the depth budget goes to
# what happens next: every interleaving of the following ``--depth`` steps is searched.
PREFIX_STEPS = 6


PROVE_KNOBS = tuple(dict.fromkeys(e.knob for e in ACTIONS.values() if e.knob is not None and e.coverage.z3.supported))
"""The knobs of the actions the encoding covers (crashes, pauses, expiries, preferred
elections): a proof takes an action whose knob is above 0 with no bound on how often, BMC
within the bound; the other knobs' actions are refused (``unsupported``)."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "prove",
        help="prove invariants by induction with z3 and bounded-model-check durability",
        description="Inductive proofs (Init => Inv, Inv /\\ Next => Inv', per action), durability included, "
                    "and BMC of durability as a cross-check. Exit 0: everything proved; 1: a counterexample; "
                    "3: something not proved (each failed consecution's counterexample to induction is printed).",
    )
    p.add_argument("--config", action="append", choices=sorted(NAMED), help="named configuration (repeatable; default: those epochal check checks by default that the encoding "
                        "covers -- kip320 and zombie)")
    p.add_argument("--brokers", type=int, default=2, help="brokers in the symbolic encoding (2 or 3; default 2)")
    p.add_argument("--depth", type=int, default=5, help="BMC depth after the explicit prefix (default 5)")
    p.add_argument("--from-initial", action="store_true", help="BMC from the initial state instead of the replicated prefix")
    p.add_argument("--no-bmc", action="store_true", help="proofs only")
    add_knob_arguments(p, PROVE_KNOBS, {k.field: "default: the configuration's" for k in PROVE_KNOBS})
    add_json_flag(p, "the proofs and BMC results")
    p.set_defaults(func=run)


DURABILITY = ("committed_durable", "acked_durable")
"""The durability properties: induction proves them with the lemmas of
``properties.checkers.symbolic.durability``, and BMC looks for their violations to a depth as
a cross-check -- where the induction fails, a BMC run that finds none is inconclusive."""


def run(args: argparse.Namespace) -> int:
    from model.config import named
    from properties.checkers.symbolic import COVERED, unsupported

    if args.brokers not in (2, 3):
        raise UsageError("--brokers must be 2 or 3")
    if not 1 <= args.depth <= 12:
        raise UsageError("--depth must be between 1 and 12")
    from impl.harness.cli.check import EXPECTED_TO_HOLD

    knobs = {k.field: getattr(args, k.field) for k in PROVE_KNOBS}
    try:
        names = args.config or [n for n in EXPECTED_TO_HOLD
                                if not unsupported(named(n, brokers=args.brokers, partitions=1, **knobs))]
        cfgs = [named(n, brokers=args.brokers, partitions=1, **knobs) for n in names]
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    beyond = [f"{c.name} ({unsupported(c)})" for c in cfgs if unsupported(c)]
    if beyond:
        raise UsageError(f"the symbolic encoding does not cover: {'; '.join(beyond)}")
    stream = sys.stderr if args.json else sys.stdout
    print(f"encoding: 1 partition, {args.brokers} brokers; actions: {', '.join(COVERED)}", file=stream)
    with Heartbeat(lambda m: print(f"  ... {m}", file=sys.stderr, flush=True)) as beat:
        results = [_prove_one(args, cfg, stream, beat) for cfg in cfgs]
    code = combined([r["exit_code"] for r in results])
    if args.json:
        return print_results(args, code, results)
    return code


def _prove_one(args: argparse.Namespace, cfg: Any, stream: Any, beat: Heartbeat) -> dict[str, Any]:
    """One configuration's proofs and BMC, printed as each finishes; its entry of ``results``."""
    from properties.checkers.symbolic import prove

    print(f"== {cfg.describe()}", file=stream)
    beat.phase(f"proving {cfg.name} by induction (z3, one action at a time)")

    def show(v: Any) -> None:  # printed as each proof finishes, not at the end
        print(f"  {v.status:<16} {v.kind:<9} {v.name:<24} {v.seconds:6.2f} s  {v.detail}", file=stream, flush=True)
        for line in v.cti:  # a failed consecution: the state pair that breaks it
            print(f"      {line}", file=stream, flush=True)
        beat.said()

    proofs = prove(cfg, args.brokers, progress=show)
    proved = {v.name for v in proofs if v.status == "proved"}
    bmc_json, violation = (None, None) if args.no_bmc else _bmc(args, cfg, stream, beat)
    not_proved = [v.name for v in proofs if v.status != "proved"]
    if violation is not None:
        code = FOUND
    elif not_proved:
        code = INCONCLUSIVE
        how = "" if all(p in proved for p in DURABILITY) else (
            " (durability not checked further: --no-bmc)" if args.no_bmc else f" (durability bounded-checked to depth {args.depth} only)")
        print(f"  INCONCLUSIVE: not proved: {', '.join(not_proved)}{how}", file=stream)
    else:
        code = HOLDS
    return result_entry(config_object(cfg), code, violation, brokers=args.brokers,
                        proofs=[{"name": v.name, "kind": v.kind, "status": v.status, "seconds": round(v.seconds, 3),
                                 "detail": v.detail, "cti": v.cti} for v in proofs],
                        not_proved=not_proved, bmc=bmc_json)


def _bmc(args: argparse.Namespace, cfg: Any, stream: Any,
         beat: Heartbeat) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """Bounded model checking of durability (after the explicit prefix, or from the initial
    state): its report, and the violation of the counterexample it found, replayed in the
    explicit model (None: none within the depth)."""
    from model.export.render import describe
    from properties.checkers.bfs import replay
    from properties.checkers.scenarios import play
    from properties.checkers.symbolic import bmc
    from properties.safety import all_violations

    prefix, start = [], None
    if not args.from_initial:
        out = play("kafka_1211", cfg)
        prefix = [s for s, _ in out.steps[:PREFIX_STEPS]]
        start = out.states[PREFIX_STEPS]
    started = time.perf_counter()
    beat.phase(f"bounded model checking of durability, depth 1 of {args.depth}")

    def depth_done(depth: int, seconds: float, found: bool) -> None:
        print(f"  ... bmc depth {depth}: {seconds:.2f} s{' (counterexample)' if found else ''}",
              file=sys.stderr, flush=True)
        beat.phase(f"bounded model checking of durability, depth {depth + 1} of {args.depth}")

    k, steps, times = bmc(cfg, args.depth, progress=depth_done, start=start)
    secs = time.perf_counter() - started
    per = ", ".join(f"{t:.2f}" for t in times)
    where = "from the initial state" if args.from_initial else f"after a {PREFIX_STEPS}-step explicit prefix"
    bmc_json: dict[str, Any] = {"depth": args.depth, "from_initial": args.from_initial,
                                "prefix_steps": len(prefix), "seconds": round(secs, 3),
                                "seconds_per_depth": [round(t, 3) for t in times], "counterexample": None}
    if k is None:
        print(f"  {'holds to depth ' + str(args.depth):<16} bmc       {'durability':<24} {secs:6.2f} s  ({where}; s per depth: {per})", file=stream)
        return bmc_json, None
    path = prefix + steps
    states = replay(cfg, path)
    bad = all_violations(states[-2], states[-1])
    described = [(step, describe(step, states[i - 1], states[i])) for i, step in enumerate(path, 1)]
    bmc_json["counterexample"] = {"depth": k, "violations": [n for n, _ in bad], "steps": step_objects(described)}
    print(f"  {'counterexample':<16} bmc       {'durability':<24} {secs:6.2f} s  (depth {k} {where}; s per depth: {per})", file=stream)
    print(f"    replayed in the explicit model: {', '.join(n for n, _ in bad) or 'NO VIOLATION (encoding bug)'}", file=stream)
    for i, (_, text) in enumerate(described, 1):
        print(f"    {i:3d}. {text}", file=stream)
    prop, message = bad[0] if bad else ("durability", "BMC's counterexample breaks nothing in the explicit model")
    violation = violation_object(prop, message, label_of(message), step_objects(described), bad[1:])
    return bmc_json, violation
