"""Mutation testing of the implementation's decision code: a mutant no test kills is a missing test.

A surviving mutant is a rule of the protocol that some one-token change breaks and no test
notices: the test still missing.  This command runs mutmut (PyPI, >= 3.3) over the PURE decision
functions of impl/node -- election, fencing, truncation, the HW and ISR rules, topic identity,
limits and the quota token bucket -- and against the fast unit-level tests only, so that every
mutant costs a fraction of a second.  Process-level code (the controller's event loop, the
broker's handlers) is left out on purpose: a mutant there needs a real cluster to kill.

It works on a scratch copy of the tracked files, never on the working tree (mutmut writes a
`mutants/` directory next to the sources, and other people run tests from this tree), and runs
each mutant in one child process (`--max-children 1`: the machine is shared).

    python bench/mutation.py                 # the current suite ("after")
    python bench/mutation.py --suite before  # the suite before the rule tests written for mutation testing
    python bench/mutation.py --suite both    # both, on the same mutants
    python bench/mutation.py --suite generated --sample 60   # against the generated drive cases

`--suite generated` (bench/mutation_generated.py) runs them, and the broker's and controller's
epoch fencing, against the cases `epochal drive --generate transitions` drives on real
processes instead; `--mutants NAME ...` runs named mutants alone, against either kind.

mutmut needs not be in the project's venv: `--python` names an interpreter that has it (and
pytest, pytest-xdist and this project's dependencies).  Exit 0 after a run, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The decision functions: module file -> the functions (or Class.method) whose mutants are run.
# mutmut names a mutant of function f in module m `m.x_f__mutmut_N`, of method C.f `m.xǁCǁf__mutmut_N`.
DECISION_FUNCTIONS: dict[str, list[str]] = {
    "impl/node/controller/broker_failure.py": ["choose_leader", "broker_change_choice", "changes"],
    "impl/node/controller/shutdown.py": ["shutdown_choice"],
    "impl/node/controller/preferred_election.py": ["preferred_choice"],
    "impl/node/controller/reassignment.py": ["reassignment_switch"],
    "impl/node/fencing.py": ["control_refusal", "leader_and_isr_verdict", "topic_ids_differ",
                             "fetch_refusal", "epoch_lookup_refusal"],
    "impl/node/truncation.py": ["normalise_rule", "hw_truncation_point", "epoch_truncation_point",
                                "leader_epoch_answer", "epoch_truncation_step", "truncate_round",
                                "kip101_truncation_point"],
    "impl/node/auth/rules.py": ["_claims", "is_replica_request", "_int", "authorize"],
    "impl/node/producer_state.py": ["classify", "next_block", "ProducerStateTable.record",
                                    "ProducerStateTable.check", "ProducerStateTable.last_sequence"],
    "impl/node/replica.py": ["advance_high_watermark", "follower_out_of_sync", "may_join_isr"],
    "impl/node/topic_identity.py": ["compare"],
    "impl/node/limits.py": ["record_size", "within", "check"],
    "impl/node/quota.py": ["TokenBucket.__init__", "TokenBucket.from_quota", "TokenBucket.refill",
                           "TokenBucket.throttle_ms", "TokenBucket.try_admit",
                           "TokenBucket.record"],
}

# The unit-level tests of those rules.  "before": as they were before the first mutation round;
# "after" adds the rule vectors and the rule tests that round wrote, and the tests written from
# this command's own survivors (tests/impl/node/test_decision_mutants.py).
TESTS_BEFORE = [
    "tests/impl/node/test_truncation.py",
    "tests/impl/node/test_truncation_matches_model.py",
    "tests/impl/node/test_quota.py",
    "tests/impl/node/test_controller_rules.py",
]
TESTS_NEW = [
    "tests/impl/node/test_vectors.py",
    "tests/impl/node/test_isr_rule.py",
    "tests/impl/node/test_fencing_rules.py",
    "tests/impl/node/test_topic_identity.py",
    "tests/impl/node/test_truncation_rounds.py",
    "tests/impl/node/test_limits.py",
    "tests/impl/node/test_decision_mutants.py",
    "tests/impl/node/test_security_rules.py",
    "tests/impl/node/test_log_durability.py",
]
SUITES = {"before": TESTS_BEFORE, "after": TESTS_BEFORE + TESTS_NEW}

# one process per mutant, no integration or slow tests (they start real ZooKeeper and brokers)
PYTEST_ARGS = ["-n", "0", "-p", "no:cacheprovider", "-m", "not integration and not slow"]

# what the tests import besides impl/ (copied into the scratch tree, never mutated)
ALSO_COPY = ["model", "traces", "properties", "conformance", "docs", "conftest.py"]


def mutant_patterns(decisions: dict[str, list[str]] = DECISION_FUNCTIONS) -> list[str]:
    """mutmut's name globs for the decision functions' mutants."""
    patterns = []
    for path, functions in decisions.items():
        module = path.removesuffix(".py").replace("/", ".")
        for f in functions:
            if "." in f:
                cls, method = f.split(".")
                patterns.append(f"{module}.x\u01c1{cls}\u01c1{method}__mutmut_*")
            else:
                patterns.append(f"{module}.x_{f}__mutmut_*")
    return patterns


def mutmut_config(tests: list[str], decisions: dict[str, list[str]] = DECISION_FUNCTIONS,
                  also_copy: list[str] = ALSO_COPY) -> str:
    """The [tool.mutmut] section written into the scratch copy's pyproject.toml."""
    def toml_list(items: list[str]) -> str:
        return "[" + ", ".join(json.dumps(i) for i in items) + "]"
    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["impl"]\n'
        f"only_mutate = {toml_list(list(decisions))}\n"
        f"also_copy = {toml_list(also_copy)}\n"
        f"pytest_add_cli_args = {toml_list(PYTEST_ARGS)}\n"
        f"pytest_add_cli_args_test_selection = {toml_list(tests)}\n"
        "use_git_change_detection = false\n"
    )


def scratch_copy(dest: Path) -> None:
    """The tracked files as they are in the working tree (uncommitted edits included)."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if not src.is_file():
            continue  # deleted in the working tree
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)


def run_suite(python: str, suite: str, workdir: Path, only: list[str] | None = None) -> dict[str, object]:
    """One mutmut run over the decision functions against one suite; its figures and survivors.
    ``only``: these mutants (mutmut names or globs) alone -- a generated-case run's survivors,
    whose functions may include the process-level ones that suite alone mutates."""
    tree = workdir / suite
    scratch_copy(tree)
    tests = [t for t in SUITES[suite] if (tree / t).is_file()]
    decisions = {**DECISION_FUNCTIONS, **_generated_extra()} if only else DECISION_FUNCTIONS
    patterns = only or mutant_patterns()
    with open(tree / "pyproject.toml", "a") as f:
        f.write(mutmut_config(tests, decisions))
    started = time.monotonic()
    run = subprocess.run([python, "-m", "mutmut", "run", "--max-children", "1", *patterns],
                         cwd=tree, capture_output=True, text=True)
    seconds = time.monotonic() - started
    if run.returncode != 0:
        sys.stderr.write(run.stdout[-3000:] + run.stderr[-3000:])
        raise SystemExit(f"mutation: mutmut run failed for suite {suite} (exit {run.returncode})")
    listed = subprocess.run([python, "-m", "mutmut", "results", "--all", "true"], cwd=tree,
                            capture_output=True, text=True, check=True).stdout
    selected = [re.compile(_glob_to_regex(p)) for p in patterns]
    status: dict[str, str] = {}
    for line in listed.splitlines():
        name, _, verdict = line.strip().rpartition(": ")
        if name and any(r.fullmatch(name) for r in selected):
            status[name] = verdict
    survivors = sorted(n for n, v in status.items() if v != "killed")
    diffs = {n: subprocess.run([python, "-m", "mutmut", "show", n], cwd=tree,
                               capture_output=True, text=True).stdout for n in survivors}
    killed = sum(v == "killed" for v in status.values())
    return {"suite": suite, "tests": tests, "mutants": len(status), "killed": killed,
            "survived": len(status) - killed,
            "rate": round(100.0 * killed / len(status), 1) if status else 0.0,
            "seconds": round(seconds, 1),
            "survivors": [{"name": n, "status": status[n], "diff": diffs[n]} for n in survivors]}


def _generated_extra() -> dict[str, list[str]]:
    from mutation_generated import GENERATED_EXTRA

    return GENERATED_EXTRA


def _glob_to_regex(pattern: str) -> str:
    return ".*".join(re.escape(part) for part in pattern.split("*"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--suite", choices=["before", "after", "both", "generated"], default="after")
    p.add_argument("--python", default=sys.executable,
                   help="an interpreter with mutmut, pytest and the project's dependencies")
    p.add_argument("--json", type=Path, help="also write the figures and survivors here")
    p.add_argument("--keep", action="store_true", help="keep the scratch copies (mutmut browse)")
    g = p.add_argument_group("--suite generated (bench/mutation_generated.py)")
    g.add_argument("--configs", nargs="+", default=None, help="the targets of drive/targets.py whose cases run "
                   "(default: kip320 zombie unclean)")
    g.add_argument("--cases", type=int, default=3, help="paths per target (default 3)")
    g.add_argument("--max-states", type=int, default=10_000, help="the search's bound (default 10,000)")
    g.add_argument("--sample", type=int, help="run K of the reached mutants, spread over the modules")
    g.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    g.add_argument("--paths", nargs="+", type=Path, default=(), help="driven tests' paths (epochal drive --path "
                   "files) run as cases too, e.g. bench/mutation_paths/*.json")
    g.add_argument("--workdir", type=Path, help="keep the scratch tree, cases and clean run here; given again, "
                   "reuse them (no new mutants, cases or clean run)")
    g.add_argument("--minutes", type=float, help="drive no mutant after so many minutes (the rest: not driven)")
    g.add_argument("--mutants", nargs="+", default=(), help="run these mutants (mutmut names or globs) instead; also with "
                   "--suite before/after")
    args = p.parse_args(argv)
    bad = _generated_args_error(args) if args.suite == "generated" else None
    if bad:
        print(f"mutation: {bad}", file=sys.stderr)
        return 2
    try:
        lacks_mutmut = subprocess.run([args.python, "-c", "import mutmut"], capture_output=True).returncode != 0
    except OSError as exc:  # no such interpreter, or not executable
        print(f"mutation: cannot run --python {args.python}: {exc.strerror}", file=sys.stderr)
        return 2
    if lacks_mutmut:
        print(f"mutation: {args.python} cannot import mutmut (pip install 'mutmut>=3.3')",
              file=sys.stderr)
        return 2
    if args.suite == "generated":
        return _generated(args)
    suites = ["before", "after"] if args.suite == "both" else [args.suite]
    workdir = Path(tempfile.mkdtemp(prefix="epochal-mutation-"))
    try:
        results = [run_suite(args.python, s, workdir, list(args.mutants) or None) for s in suites]
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    for r in results:
        print(f"{r['suite']}: {r['mutants']} mutants, {r['killed']} killed, {r['survived']} "
              f"survived, kill rate {r['rate']} % ({r['seconds']} s)")
    for r in results:
        if r["survivors"]:
            print(f"\nsurvivors ({r['suite']}):")
            for s in r["survivors"]:
                print(s["diff"].rstrip() or f"# {s['name']}: {s['status']}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    if args.keep:
        print(f"\nscratch copies kept in {workdir}")
    return 0


def _generated_args_error(args: argparse.Namespace) -> str | None:
    """Why the generated suite's arguments cannot run, before any interpreter is tried."""
    import mutation_generated as mg

    from impl.harness.drive.targets import TARGETS

    unknown = sorted(set(args.configs or mg.DEFAULT_CONFIGS) - {t.name for t in TARGETS})
    if unknown:
        return f"unknown target {unknown[0]!r}; choose from {', '.join(t.name for t in TARGETS)}"
    if args.cases < 1 or (args.sample is not None and args.sample < 1):
        return "--cases and --sample must be positive"
    from impl.harness.drive.paths import PathError

    for path in args.paths:
        try:
            mg.path_case(path)
        except PathError as exc:
            return str(exc)
    return None


def _generated(args: argparse.Namespace) -> int:
    """The decision code against the generated drive cases (bench/mutation_generated.py)."""
    import mutation_generated as mg


    configs = args.configs or list(mg.DEFAULT_CONFIGS)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="epochal-mutation-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        doc = mg.run_generated(args.python, workdir, configs, args.cases, args.max_states, args.sample,
                               args.seed, args.json, args.mutants, args.minutes, args.paths)
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    run, every = doc["run"], doc["all"]
    print(f"generated: {doc['mutants']} mutants, {len(doc['not_reached'])} not reached by a case; of "
          f"{run['mutants']} run: {run['killed']} killed, {run['survived']} survived, score {run['score']} % "
          f"({run['seconds']} s)" + (f"; counting the not reached as survivors: {every['score']} % of "
                                      f"{every['mutants']}" if run["mutants"] == doc["reached"] else ""))
    decision = doc["decision_code"]["run"]
    print(f"decision code the model states (leaving out {', '.join(mg.OUTSIDE_MODEL)}): of {decision['mutants']} "
          f"run: {decision['killed']} killed, {decision['survived']} survived, score {decision['score']} %")
    for r in doc["results"]:
        if r["status"] == "survived":
            print(f"survived: {r['name']} ({r.get('replay')})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
