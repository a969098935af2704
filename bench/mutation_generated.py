"""Mutation testing of impl/'s decision code against the generated drive cases (``bench/mutation.py
--suite generated``): the cases ``epochal drive --generate transitions`` drives, on real
ZooKeeper and broker processes, judged against the model.

mutmut (>= 3.3) writes every mutant of a function into the scratch tree's ``mutants/`` copy at
once, behind a trampoline that picks the active one at call time from the environment variable
``MUTANT_UNDER_TEST`` (``mutmut.mutation.trampoline``).  The broker processes a driver starts
inherit its environment and import ``impl`` from its ``PYTHONPATH``: a case driven from the
scratch tree with the variable set runs the mutant in the driver, the controller and every broker.

The cost is kept bounded in three steps:

1. **Cases** (``select_cases``): per target of ``impl/harness/drive/targets.py`` named with
   ``--configs``, the model is searched as ``--generate transitions`` searches it, and the first
   ``--cases N`` paths that take a pair no case chosen before takes (in this target or an
   earlier one) are kept -- for a target other than the baseline ``kip320``, those that take a
   pair the baseline lacks first (``targets.sample_focus``).
2. **Reach** (the clean run): every case is driven once without a mutant, with the trampolines
   in mutmut's ``stats`` mode and their hits written, per case, to a file (``TRACE_HOOK``, a
   ``sitecustomize`` on the children's path).  A case that does not follow the model here is
   dropped; a mutant whose function no kept case reaches is *not reached*.
3. **Mutants**: each reached mutant (all, or a seeded ``--sample K`` spread over the modules)
   runs only the cases that reach its function, the quickest first, and stops at the first one
   that does not follow the model: *killed*.  A mutant every reaching case follows *survived*.

Each case is driven by a child process (this file, ``--child``), from the scratch tree.
"""

from __future__ import annotations

import json
import os
import pickle
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

try:
    from mutation_replay import RECORD_HOOK
except ImportError:  # imported as bench.mutation_generated (the tests)
    from bench.mutation_replay import RECORD_HOOK

Pair = tuple[str, str]  # (action, outcome), as drive.generate names them

# The process-level fencing that let a zombie controller's writes and stale control requests
# through when it was wrong: mutated for this suite only (a mutant here needs real brokers).
GENERATED_EXTRA: dict[str, list[str]] = {
    "impl/node/broker/control.py": ["ControlRequests._fence_control", "ControlRequests._refuse_if_stale"],
    "impl/node/controller/context.py": ["ControllerContext._txn", "ControllerContext._commit"],
}

# The decision functions of rules the model does not state, left out of the decision code's score
# (their mutants still run, and the unit suite, bench/mutation.py --suite after, scores them):
# a module file, or "file:function", -> why no model step can tell their mutants apart.  Not
# limits.within and record_size: the model's fetch_max_records is the byte limit's cut.
OUTSIDE_MODEL: dict[str, str] = {
    "impl/node/auth/rules.py": "authorization: the model has no principals, every driven request is allowed",
    "impl/node/producer_state.py": "the idempotent producer: the model's records have no producer id",
    "impl/node/limits.py:check": "the limits' validation at startup: the model has no configuration to refuse",
    "impl/node/quota.py": "the controller-mutation quota: the model has no quota and no clock (model/quota.py "
                          "is a reference rule held by vectors, no model step)",
}

# unclean adds one case, its unclean election: choose_leader's unclean branch is reached by no other;
# incarnation its LeaderAndISRs onto a deleted incarnation's records (topic_identity.compare)
DEFAULT_CONFIGS = ("kip320", "zombie", "unclean", "incarnation")
FOLLOWED = ("followed", "model_refused")

# Written as sitecustomize.py into a directory on the trace run's PYTHONPATH: every process
# of the run (driver, brokers) appends the decision functions it calls, once each, to the file
# EPOCHAL_MUTATION_TRACE names when the call is made (a crashed broker keeps what it wrote).
TRACE_HOOK = '''\
import os

if os.environ.get("EPOCHAL_MUTATION_TRACE"):
    import mutmut.mutation.trampoline as _trampoline

    _seen = {}

    def _hit(name, caller=None):
        path = os.environ["EPOCHAL_MUTATION_TRACE"]
        seen = _seen.setdefault(path, set())
        if name not in seen:
            seen.add(name)
            with open(path, "a") as f:
                f.write(name + "\\n")

    _trampoline.record_trampoline_hit = _hit
''' + RECORD_HOOK


# -- pure: which mutants, which cases --------------------------------------------------------------
def function_of(mutant: str) -> str:
    """The trampolined function a mutant belongs to, as the trampoline's stats name it:
    ``impl.node.fencing.x_control_refusal__mutmut_3`` -> ``impl.node.fencing.x_control_refusal``."""
    return mutant.partition("__mutmut_")[0]


def module_of(mutant: str) -> str:
    return function_of(mutant).rpartition(".")[0]


def cases_reaching(mutant: str, reach: dict[str, set[str]], seconds: dict[str, float]) -> list[str]:
    """The cases whose clean run called the mutant's function, the quickest first (ties by id)."""
    f = function_of(mutant)
    return sorted((c for c, fs in reach.items() if f in fs), key=lambda c: (seconds.get(c, 0.0), c))


def sample(mutants: Sequence[str], k: int | None, seed: int) -> list[str]:
    """``k`` mutants spread over the modules: a seeded shuffle of each module's, then one of
    each module in turn, in that order -- so that a run stopped early is still spread; all of
    them, as given, when ``k`` is None."""
    if k is None:
        return list(mutants)
    rng = random.Random(seed)
    by_module: dict[str, list[str]] = {}
    for m in mutants:
        by_module.setdefault(module_of(m), []).append(m)
    for ms in by_module.values():
        rng.shuffle(ms)
    chosen: list[str] = []
    while len(chosen) < min(k, len(mutants)):
        for ms in by_module.values():
            if ms and len(chosen) < k:
                chosen.append(ms.pop())
    return chosen


def score(results: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The figures of a run: killed, survived, not reached, and the score (killed over all)."""
    rs = list(results)
    n = {s: sum(r["status"] == s for r in rs) for s in ("killed", "survived", "not_reached")}
    return {"mutants": len(rs), **n, "score": round(100.0 * n["killed"] / len(rs), 1) if rs else 0.0}


def first_failure(lines: Sequence[dict[str, Any]], cases: Sequence[str]) -> dict[str, Any] | None:
    """What killed a mutant, from its child's lines: the first case that did not follow the
    model, or, when a case never reported (the child died first), ``no report``; None when
    every case followed."""
    for x in lines:
        if "case" in x and x.get("verdict") not in FOLLOWED:
            return {key: x[key] for key in ("case", "verdict", "divergence", "error") if x.get(key)}
    followed = {x["case"] for x in lines if x.get("case") and x.get("verdict") in FOLLOWED}
    missing = [c for c in cases if c not in followed]
    return {"case": missing[0], "verdict": "no report"} if missing else None


def selected_mutants(names: Iterable[str], patterns: Iterable[str]) -> list[str]:
    regexes = [re.compile(".*".join(re.escape(part) for part in p.split("*"))) for p in patterns]
    return sorted(n for n in names if any(r.fullmatch(n) for r in regexes))


def greedy_cover(order: Sequence[Pair], along: dict[Pair, set[Pair]], focus: frozenset[Pair] | set[Pair],
                 n: int, taken: frozenset[Pair] | set[Pair] = frozenset()) -> list[Pair]:
    """Up to ``n`` paths (named by the pair they were found for): each time the one that takes
    the most ``focus`` pairs not yet taken, then the most pairs not yet taken, the earlier in
    ``order`` (the search's cover order) on a tie; none that takes nothing new.  ``taken``:
    the pairs the run's earlier targets' cases already take (not new here either)."""
    chosen: list[Pair] = []
    covered: set[Pair] = set(taken)
    while len(chosen) < n:
        left = [p for p in order if p not in chosen and along[p] - covered]
        if not left:
            break
        best = max(left, key=lambda p: (len((along[p] & focus) - covered), len(along[p] - covered), -order.index(p)))
        chosen.append(best)
        covered |= along[best]
    return chosen


# -- the cases -------------------------------------------------------------------------------------
def select_cases(configs: Sequence[str], per_config: int, max_states: int) -> list[dict[str, Any]]:
    """Up to ``per_config`` generated paths of each target, each taking a pair no case chosen
    before it takes -- in this target or an earlier one of the same truncation rule: a target
    after the first adds its own pairs and what the others lack, not the baseline's paths
    again; a target of another rule (``design``, ``kip101``) runs that rule's code, so its
    pairs count afresh."""
    from impl.harness.drive.generate import pairs_along
    from impl.harness.drive.targets import TARGETS, found, sample_focus
    from model.config import named

    out = []
    taken: dict[str, set[Pair]] = {}  # per truncation rule: one rule's pairs run other code than another's
    for name in configs:
        target = next(t for t in TARGETS if t.name == name)
        cfg = named(target.config, brokers=target.brokers, **target.knobs)
        cases = found(name, max_states)
        focus = sample_focus(target, max_states) or frozenset()
        along = {c.pair: pairs_along(cfg, c.steps) for c in cases}
        rule = taken.setdefault(cfg.truncation, set())
        cover = greedy_cover([c.pair for c in cases], along, focus, per_config, rule)
        for c in cover:
            rule |= along[c]
        for n, c in enumerate(cover, 1):
            steps = next(x.steps for x in cases if x.pair == c)
            out.append({"id": f"{name}#{n}", "target": name, "config": target.config, "knobs": target.knobs,
                        "brokers": target.brokers, "pair": list(c), "steps": steps})
    return out


def path_case(file: Path) -> dict[str, Any]:
    """A driven test's path (a file ``epochal drive --path`` reads) as a case of the run."""
    from impl.harness.drive.paths import from_json
    from model.actions import Step

    run = from_json(file)
    doc = json.loads(file.read_text())
    config = doc.get("config", {}) if isinstance(doc, dict) else {}
    return {"id": f"path:{file.stem}", "target": "path", "config": config.get("name", "kip320"),
            "knobs": run.bounds, "brokers": run.brokers or 2, "pair": ["path", file.stem],
            "steps": [Step(action, tuple(choose(None))) for action, choose in run.steps]}


# -- the children ------------------------------------------------------------------------------------
def run_child(python: str, tree: Path, cases_file: Path, ids: list[str], data_dir: Path, mutant: str,
              timeout: float, trace_dir: Path | None = None) -> tuple[list[dict[str, Any]], float]:
    """Drive ``ids`` in one child from the scratch tree's mutants, ``mutant`` active (``stats``:
    the trace run); its per-case lines, and seconds.  A child past ``timeout`` is interrupted
    (Ctrl-C: the driver stops its cluster), then killed."""
    env = dict(os.environ, MUTANT_UNDER_TEST=mutant, PYTHONPATH=str(tree / "mutants"))
    env.pop("EPOCHAL_MUTATION_TRACE", None)
    # the scratch copy of this file: the tree may change while the run lasts
    argv = [python, str(tree / "bench" / Path(__file__).name), "--child", str(cases_file), str(data_dir), *ids]
    if trace_dir is not None:  # the clean run: every case, each one's reach
        env["PYTHONPATH"] += os.pathsep + str(trace_dir.parent / "hook")
        argv += ["--trace", str(trace_dir), "--keep-going"]
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=tree / "mutants", env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        out = _interrupt(proc) + json.dumps({"case": None, "verdict": "timeout"}) + "\n"
    except BaseException:  # Ctrl-C: nothing of the child's is left running
        _interrupt(proc)
        kill_leftovers(data_dir)
        raise
    kill_leftovers(data_dir)
    shutil.rmtree(data_dir, ignore_errors=True)  # the next child's cases start from nothing
    lines = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
    return lines, time.monotonic() - started


def _interrupt(proc: subprocess.Popen[str]) -> str:
    """Ctrl-C to a child (its driver stops the cluster), then, a minute on, SIGKILL; its output."""
    os.killpg(proc.pid, signal.SIGINT)
    try:
        return proc.communicate(timeout=60)[0]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.communicate()[0]


def kill_leftovers(data_dir: Path) -> None:
    """The processes a child left behind (brokers and ZooKeeper start sessions of their own):
    those whose command line names its data directory, by pid."""
    mark = str(data_dir).encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if mark in cmdline and int(pid) != os.getpid():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass


def child(cases_file: Path, data_dir: Path, ids: list[str], trace: Path | None, keep_going: bool) -> int:
    """Drive the named cases one after the other (fresh cluster each), stop at the first that
    does not follow the model; one JSON line per case on stdout.  Runs in the scratch tree."""
    import impl
    from impl.harness.drive.driver import Driver
    from impl.harness.drive.paths import ModelRun

    cases = {c["id"]: c for c in pickle.loads(cases_file.read_bytes())}
    print(json.dumps({"impl": impl.__file__}), flush=True)  # the tree the children import
    for cid in ids:
        c = cases[cid]
        safe = cid.replace("#", "-")
        if trace is not None:
            os.environ["EPOCHAL_MUTATION_TRACE"] = str(trace / f"{safe}.txt")
        run = ModelRun(cid, [(s.action, _fixed(s.args)) for s in c["steps"]], c["brokers"])
        started = time.monotonic()
        try:
            r = Driver(c["config"], data_dir=data_dir / safe, knobs=c["knobs"]).run(run)
            line = {"verdict": r.verdict, "divergence": r.divergence}
        except Exception as exc:  # a mutant may break the driver's own use of impl: a failed case
            line = {"verdict": "error", "error": f"{type(exc).__name__}: {exc}"[:300]}
        print(json.dumps({"case": cid, **line, "seconds": round(time.monotonic() - started, 1)},
                         default=str), flush=True)
        if line["verdict"] not in FOLLOWED and not keep_going:
            return 1
    return 0


def _fixed(args: tuple) -> Any:
    return lambda _s: args


# -- the run -----------------------------------------------------------------------------------------
GENERATE_MUTANTS = """
from os import makedirs
from pathlib import Path
from mutmut.__main__ import copy_also_copy_files, copy_src_dir, create_mutants, setup_source_paths
from mutmut.mutation.trampoline import set_mutant_under_test
set_mutant_under_test("mutant_generation")
makedirs(Path("mutants"), exist_ok=True)
copy_src_dir()
copy_also_copy_files()
setup_source_paths()
create_mutants(1)
"""
"""mutmut run's first step alone: the scratch tree's ``mutants/`` copy, every mutant in it."""


def decisions() -> dict[str, list[str]]:
    from mutation import DECISION_FUNCTIONS

    return {**DECISION_FUNCTIONS, **GENERATED_EXTRA}


def make_mutants(python: str, tree: Path) -> list[str]:
    """The scratch copy, its mutants written by mutmut; the names of the decision functions' mutants."""
    from mutation import ALSO_COPY, mutmut_config, scratch_copy

    scratch_copy(tree)
    with open(tree / "pyproject.toml", "a") as f:
        f.write(mutmut_config([], decisions(), ALSO_COPY))
    subprocess.run([python, "-c", GENERATE_MUTANTS], cwd=tree, check=True, capture_output=True)
    return listed_mutants(tree)


def listed_mutants(tree: Path) -> list[str]:
    """The decision functions' mutants mutmut wrote into the scratch tree."""
    from mutation import mutant_patterns

    names: list[str] = []
    for meta in (tree / "mutants").rglob("*.meta"):
        names += json.loads(meta.read_text())["exit_code_by_key"]
    return selected_mutants(names, mutant_patterns(decisions()))


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_generated(python: str, workdir: Path, configs: Sequence[str], per_config: int, max_states: int,
                  k: int | None, seed: int, json_out: Path | None, only: Sequence[str] = (),
                  minutes: float | None = None, paths: Sequence[Path] = ()) -> dict[str, Any]:
    """The clean run, then each chosen mutant (``only``: those matching these mutmut names or
    globs, else a sample of ``k``, else every reached one) replayed on the clean run's calls, and
    driven, through the cases where it answers differently, unless it answers none differently.
    ``minutes``: drive no mutant after so many minutes (the rest are *not driven*, left out of
    the score; they are driven spread over the modules, so a run stopped early is spread).
    ``paths``: the paths of driven tests (``epochal drive --path`` files), run as cases too."""
    interruptible()
    tree = workdir / "generated"
    started = time.monotonic()
    cases_file, trace, done = workdir / "cases.pkl", workdir / "trace", workdir / "clean.json"
    if done.exists():  # a kept workdir's mutants, cases and clean run, reused (--workdir)
        mutants = listed_mutants(tree)
        cases = pickle.loads(cases_file.read_bytes())
        lines = json.loads(done.read_text())
        say(f"mutation: reusing {workdir}'s {len(mutants)} mutants, {len(cases)} cases and clean run")
    else:
        mutants = make_mutants(python, tree)
        say(f"mutation: {len(mutants)} mutants of {len(decisions())} modules' decision functions")
        cases = select_cases(configs, per_config, max_states) + [path_case(p) for p in paths]
        cases_file.write_bytes(pickle.dumps(cases))
        (workdir / "hook").mkdir()
        (workdir / "hook" / "sitecustomize.py").write_text(TRACE_HOOK)
        trace.mkdir()
        names = ", ".join(f"{c['id']} {'/'.join(c['pair'])}" for c in cases)
        say(f"mutation: clean run of {len(cases)} cases: {names}")
        lines, _ = run_child(python, tree, cases_file, [c["id"] for c in cases], workdir / "data-clean", "stats",
                             150.0 * len(cases), trace)
        done.write_text(json.dumps(lines))
    ids = [c["id"] for c in cases]
    clean = {x["case"]: x for x in lines if x.get("case")}
    imported = next((x["impl"] for x in lines if "impl" in x), None)
    seconds = {c: x["seconds"] for c, x in clean.items() if x["verdict"] in FOLLOWED}
    reach = {c: set((trace / f"{c.replace('#', '-')}.txt").read_text().split()) for c in seconds
             if (trace / f"{c.replace('#', '-')}.txt").exists()}
    for c in ids:
        say(f"  {c}: {clean.get(c, {}).get('verdict', 'no report')} ({clean.get(c, {}).get('seconds')} s), "
            f"{len(reach.get(c, ()))} mutated functions called")
    results: list[dict[str, Any]] = [{"name": m, "status": "not_reached"} for m in mutants
                                     if not cases_reaching(m, reach, seconds)]
    reached = [m for m in mutants if cases_reaching(m, reach, seconds)]
    chosen = selected_mutants(reached, only) if only else sample(reached, k, seed)
    replayed = replay_child(python, tree, workdir, chosen, list(reach))
    quiet = [m for m in chosen if replayed[m]["recorded"] and not replayed[m]["differs"]]
    say(f"mutation: {len(reached)} mutants reached by a case, {len(results)} not; of {len(chosen)} chosen, "
        f"{len(quiet)} answer every recorded call as the original (survived, not driven)")
    results += [{"name": m, "status": "survived", "replay": "same answers", "calls": replayed[m]["calls"]}
                for m in quiet]
    doc: dict[str, Any] = {}
    rest = [m for m in chosen if m not in quiet]  # the decision code the model states first
    driven = (sample([m for m in rest if not outside_model(m)], len(rest), seed)
              + sample([m for m in rest if outside_model(m)], len(rest), seed))
    for i, m in enumerate(driven, 1):
        if minutes is not None and time.monotonic() - started > 60 * minutes:
            results += [{"name": n, "status": "not_driven"} for n in driven[i - 1:]]
            say(f"mutation: {minutes} minutes passed; {len(driven) - i + 1} mutants not driven")
            break
        todo = [c for c in cases_reaching(m, reach, seconds)
                if not replayed[m]["recorded"] or c in replayed[m]["differs"]]
        data = workdir / "data-mutant"
        lines, took = run_child(python, tree, cases_file, todo, data, m, 2 * sum(seconds[c] for c in todo) + 90)
        killed_by = first_failure(lines, todo)
        r = {"name": m, "status": "killed" if killed_by else "survived", "cases_run": len(lines) - 1,
             "cases_reaching": len(todo), "seconds": round(took, 1),
             "replay": "answers differ" if replayed[m]["recorded"] else "not recorded"}
        if killed_by:
            r["killed_by"] = killed_by
        results.append(r)
        say(f"mutant {i}/{len(driven)} {m}: {r['status']}"
            + (f" by {killed_by.get('case')} ({killed_by['verdict']})" if killed_by else f" ({len(todo)} cases)")
            + f", {took:.0f} s")
        doc = _document(configs, per_config, max_states, k, seed, mutants, reached, cases, clean, reach,
                        imported, results, time.monotonic() - started)
        if json_out is not None:
            json_out.write_text(json.dumps(doc, indent=1, default=str) + "\n")
    return doc or _document(configs, per_config, max_states, k, seed, mutants, reached, cases, clean, reach,
                            imported, results, time.monotonic() - started)


def replay_child(python: str, tree: Path, workdir: Path, mutants: list[str], cases: list[str]) -> dict[str, Any]:
    """bench/mutation_replay.py, from the scratch tree: per mutant, the cases whose recorded
    calls it answers differently, and whether its function's calls were all recorded."""
    ask, answer = workdir / "replay-in.json", workdir / "replay-out.json"
    ask.write_text(json.dumps({"mutants": mutants, "cases": cases}))
    env = dict(os.environ, PYTHONPATH=str(tree / "mutants"))
    env.pop("MUTANT_UNDER_TEST", None)
    subprocess.run([python, str(tree / "bench" / "mutation_replay.py"), str(workdir / "trace"), str(ask),
                    str(answer)], cwd=tree / "mutants", env=env, check=True)
    return json.loads(answer.read_text())


def decision_score(results: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The score of the decision code the model states: the mutants outside OUTSIDE_MODEL's modules."""
    return score(r for r in results if not outside_model(r["name"]))


def outside_model(mutant: str) -> str | None:
    """Why the mutant's function is outside the decision code the model states, or None."""
    for key, why in OUTSIDE_MODEL.items():
        path, _, function = key.partition(":")
        module = path.removesuffix(".py").replace("/", ".")
        if module_of(mutant) == module and (not function or function_of(mutant) == f"{module}.x_{function}"):
            return why
    return None


def _document(configs: Sequence[str], per_config: int, max_states: int, k: int | None, seed: int,
              mutants: list[str], reached: list[str], cases: list[dict[str, Any]], clean: dict[str, Any],
              reach: dict[str, set[str]], imported: str | None, results: list[dict[str, Any]],
              seconds: float) -> dict[str, Any]:
    ran = [r for r in results if r["status"] not in ("not_reached", "not_driven")]
    return {"suite": "generated", "configs": list(configs), "cases_per_config": per_config,
            "max_states": max_states, "sample": k, "seed": seed, "impl_imported_from": imported,
            "mutants": len(mutants), "reached": len(reached),
            "not_reached": sorted(r["name"] for r in results if r["status"] == "not_reached"),
            "not_driven": sorted(r["name"] for r in results if r["status"] == "not_driven"),
            "cases": [{"id": c["id"], "pair": c["pair"], "steps": len(c["steps"]), **clean.get(c["id"], {}),
                       "reaches": sorted(reach.get(c["id"], ()))} for c in cases],
            "run": {**score(ran), "seconds": round(seconds, 1)},
            "all": score(r for r in results if r["status"] != "not_driven"),
            "decision_code": {"run": decision_score(ran),
                              "all": decision_score(r for r in results if r["status"] != "not_driven")},
            "results": ran}


def interruptible() -> None:
    """Ctrl-C and SIGTERM raise KeyboardInterrupt, also in a process started in the background
    (which starts with SIGINT ignored): the driver then stops its cluster, the run its child."""
    def stop(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, stop)


def _child_main(argv: list[str]) -> int:
    import argparse

    interruptible()
    p = argparse.ArgumentParser()
    p.add_argument("cases_file", type=Path)
    p.add_argument("data_dir", type=Path)
    p.add_argument("ids", nargs="+")
    p.add_argument("--trace", type=Path)
    p.add_argument("--keep-going", action="store_true")
    a = p.parse_args(argv)
    return child(a.cases_file, a.data_dir, a.ids, a.trace, a.keep_going)


if __name__ == "__main__" and sys.argv[1:2] == ["--child"]:
    sys.exit(_child_main(sys.argv[2:]))
