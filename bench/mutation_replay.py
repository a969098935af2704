"""Which mutants can change a generated case at all: the clean run's calls, replayed on each mutant.

The decision functions mutated here are pure: what a driven case does depends on them only
through their answers.  The clean run (``bench/mutation_generated.py``) records, per case and
in every process, each distinct call of a plain decision function -- its arguments and its
answer (a value, or the exception's type) -- through a wrapper the ``sitecustomize`` hook puts
around mutmut's trampolines.  ``replay`` then calls every mutant of a recorded function on the
recorded arguments, in one process: a mutant that answers every recorded call of every case as
the original did leaves each case's run as it was (the same answers, so the same next inputs)
and cannot be killed by these cases -- it *survived* without being driven.  A mutant that
answers some call differently is driven, through the cases where it does.

Methods (the quota bucket, the producer-state table, the broker's control-request fencing, the
controller's ZooKeeper transactions) hold state and are not recorded, nor is ``truncate_round``,
which cuts the log it is given: their mutants are driven through every case that reaches them.  A call whose arguments or answer cannot be pickled
leaves its function unrecorded in that case, which then drives its mutants too.

The replay says what the clean run's inputs show; a case driven again under load may take its
steps with other timing and call a function with inputs the clean run did not (a fetch
answering more records, say).  That is the same uncertainty a driven mutant run has.
"""

from __future__ import annotations

import importlib
import json
import pickle
import signal
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

# Appended to the trace hook (bench/mutation_generated.TRACE_HOOK): when EPOCHAL_MUTATION_TRACE
# is set, every plain (module-level) mutated function records its distinct calls to
# "<trace file>.calls.<pid>" -- (function, pickled (args, kwargs), answer) -- or, when a call
# cannot be pickled, (function, None, None): the function is then unrecorded in that case.
RECORD_HOOK = '''
    import functools as _functools
    import hashlib as _hashlib
    import inspect as _inspect
    import pickle as _pickle

    _wrap = _trampoline.wrap_in_trampoline
    _written = set()

    def _save(mutants, call, answer):
        orig = mutants["_mutmut_orig"]
        function = orig.__module__ + "." + orig.__name__.removesuffix("__mutmut_orig")
        try:
            blob = _pickle.dumps((function, call, answer))
        except Exception:
            blob = _pickle.dumps((function, None, None))
        key = (os.environ["EPOCHAL_MUTATION_TRACE"], _hashlib.sha1(blob).digest())
        if key not in _written:
            _written.add(key)
            with open(key[0] + ".calls." + str(os.getpid()), "ab") as f:
                f.write(blob)

    def _recording(mutants, is_classmethod=False):
        decorate = _wrap(mutants, is_classmethod)

        def outer(f):
            inner = decorate(f)
            if "." in f.__qualname__ or _inspect.isgeneratorfunction(f):
                return inner

            @_functools.wraps(inner)
            def recorded(*args, **kwargs):
                try:
                    call = _pickle.dumps((args, kwargs))
                except Exception:
                    call = None
                try:
                    answer = inner(*args, **kwargs)
                except Exception as exc:
                    _save(mutants, call, ("raise", type(exc).__name__))
                    raise
                _save(mutants, call, ("return", answer))
                return answer
            return recorded
        return outer

    _trampoline.wrap_in_trampoline = _recording
'''

Call = tuple[bytes, tuple[str, Any]]  # pickled (args, kwargs), the original's answer

# Plain decision functions that act on an argument besides answering: an answer alone does not
# say what they did, so their mutants are driven like a method's.
ACTS_ON_ARGUMENTS = frozenset({"impl.node.truncation.x_truncate_round"})  # cuts the log it is given


def read_calls(trace_file: Path) -> tuple[dict[str, list[Call]], set[str]]:
    """One case's recorded calls, per function, and the functions with a call not recorded."""
    calls: dict[str, list[Call]] = {}
    unrecorded: set[str] = set()
    for part in sorted(trace_file.parent.glob(trace_file.name + ".calls.*")):
        with open(part, "rb") as f:
            while True:
                try:
                    function, call, answer = pickle.load(f)
                except EOFError:
                    break
                except Exception:  # a process killed mid-write: the rest of its file is lost
                    unrecorded.add("*")
                    break
                if call is None:
                    unrecorded.add(function)
                else:
                    calls.setdefault(function, []).append((call, answer))
    return calls, unrecorded


def answer_of(function: Any, call: bytes, seconds: float = 2.0) -> tuple[str, Any]:
    """What ``function`` answers to the pickled call: ("return", value) or ("raise", type);
    ("raise", "Timeout") past ``seconds`` (a mutant may loop for ever)."""
    args, kwargs = pickle.loads(call)  # fresh arguments for every call: a mutant may change them

    def timeout(signum: int, frame: Any) -> None:
        raise TimeoutError

    old = signal.signal(signal.SIGALRM, timeout)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return ("return", function(*args, **kwargs))
    except TimeoutError:
        return ("raise", "Timeout")
    except Exception as exc:
        return ("raise", type(exc).__name__)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def same(a: tuple[str, Any], b: tuple[str, Any]) -> bool:
    try:
        return bool(a[0] == b[0] and a[1] == b[1])
    except Exception:  # an answer that cannot be compared is taken as different
        return False


def mutant_callable(mutant: str) -> Any:
    """The mutant's own function, from the mutated module (imported from the scratch tree):
    ``impl.node.fencing.x_control_refusal__mutmut_3`` -> that module's
    ``mutants_x_control_refusal__mutmut["x_control_refusal__mutmut_3"]``."""
    module, _, name = mutant.rpartition(".")
    mangled = name.partition("__mutmut_")[0]
    return getattr(importlib.import_module(module), f"mutants_{mangled}__mutmut")[name]


def replay(mutants: Iterable[str], traces: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """Per mutant: whether every case reaching its function recorded all its calls
    (``recorded``; never a method's) and, if so, the cases whose recorded calls it answers
    differently (``differs``)."""
    per_case = {case: read_calls(path) for case, path in traces.items()}
    out: dict[str, dict[str, Any]] = {}
    for m in mutants:
        function = m.partition("__mutmut_")[0]
        reached = {c: v for c, v in per_case.items() if function in v[0] or function in v[1]}
        recorded = all(function not in u and "*" not in u for _, u in reached.values())
        if "ǁ" in m or function in ACTS_ON_ARGUMENTS or not reached or not recorded:  # driven everywhere
            out[m] = {"recorded": False}
            continue
        f = mutant_callable(m)
        differs = [c for c, (calls, _) in sorted(reached.items())
                   if any(not same(answer_of(f, call), answer) for call, answer in calls[function])]
        out[m] = {"recorded": True, "differs": differs,
                  "calls": sum(len(calls[function]) for calls, _ in reached.values())}
    return out


def _main(argv: list[str]) -> int:
    """Child: ``mutation_replay.py TRACE_DIR MUTANTS_JSON OUT_JSON``, run from the scratch
    tree's ``mutants/`` copy; the trace files are TRACE_DIR/<case>.txt."""
    trace_dir, mutants_file, out_file = map(Path, argv)
    cases = json.loads(mutants_file.read_text())
    traces = {c: trace_dir / f"{c.replace('#', '-')}.txt" for c in cases["cases"]}
    out_file.write_text(json.dumps(replay(cases["mutants"], traces)))
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
