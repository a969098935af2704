"""Branch coverage of ``impl/`` across every process a test suite starts.

    python bench/impl_coverage.py [--label NAME] [--out DIR] [--drive-generate SECONDS]
                                  [-- PYTEST ARGS...]
    python bench/impl_coverage.py --union NAME NAME [--label NAME] [--out DIR]

The brokers and the controller run as separate processes (``impl.harness.cluster``), so
coverage of the test process alone says nothing about them.  This command runs pytest with
coverage.py's subprocess hook switched on for every Python process the run starts: it puts a
``sitecustomize`` that calls ``coverage.process_startup()`` on the ``PYTHONPATH`` the broker
processes inherit, and points ``COVERAGE_PROCESS_START`` at a generated rc file (branch
coverage, ``source = impl``, parallel data files, data saved on SIGTERM as well as at exit).
It then combines the data files and prints branch coverage of ``impl/node`` (the broker and
the controller: the code the protocol's rules live in) and of all of ``impl/``.

A broker killed with ``kill -9`` (a crash the tests inject on purpose) cannot save its data:
its lines count only if another process ran them too.  The figure is therefore a lower bound,
and the same lower bound for every suite measured the same way -- which is what a before /
after comparison needs.

Default pytest arguments: the integration tests of ``tests/impl`` (the default suite's
real-process tests).  ``--drive-generate SECONDS`` also runs the model-generated test cases
(``epochal drive --config kip320 --generate transitions --budget SECONDS``, and the same at
three brokers) under the same hook, so one figure says what the generated cases add to the
suite (``-- --co -q`` runs no test, so that measures the generated cases alone).
``--union`` runs nothing: it combines two earlier measurements' data into the coverage of
both together.  Progress is pytest's and drive's own.  Exit status: 1 if pytest or a generated case
failed, 2 on bad input, else 0.
Figures: docs/benchmarks.md ("Branch coverage of impl/").
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PYTEST = ["tests/impl", "-q", "-p", "no:cacheprovider"]

RCFILE = """\
[run]
branch = True
parallel = True
sigterm = True
source = impl
data_file = {data}
omit =
    */impl/harness/cli/*
"""

SITECUSTOMIZE = "import coverage\ncoverage.process_startup()\n"


def measure(pytest_args: list[str], out: Path, label: str, drive_seconds: float = 0) -> dict[str, object]:
    """Run pytest (and, given seconds, the generated drive cases) under the subprocess hook;
    return the combined figures."""
    import coverage  # imported here: a missing dev extra is a one-line error in main()

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="impl-coverage-") as tmp:
        hook = Path(tmp)
        (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
        data = out / f".coverage.{label}"
        for old in [data, *out.glob(f".coverage.{label}.*")]:
            old.unlink(missing_ok=True)
        rc = hook / "coveragerc"
        rc.write_text(RCFILE.format(data=data))
        env = dict(os.environ)
        env["COVERAGE_PROCESS_START"] = str(rc)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(hook), str(ROOT), env.get("PYTHONPATH")) if p)
        t0 = time.perf_counter()
        status = subprocess.call([sys.executable, "-m", "pytest", *pytest_args], cwd=ROOT, env=env)
        drive_status = 0
        for brokers in ("2", "3") if drive_seconds else ():
            drive_status |= subprocess.call(
                [sys.executable, "-m", "impl.harness.cli.main", "drive", "--config", "kip320", "--generate", "transitions",
                 "--brokers", brokers, "--budget", str(drive_seconds)], cwd=ROOT, env=env)
        seconds = time.perf_counter() - t0
        cov = coverage.Coverage(data_file=str(data), config_file=str(rc))
        cov.combine(data_paths=[str(out)], strict=False, keep=False)
        cov.save()
        figures = {"label": label, "pytest_args": pytest_args, "pytest_status": status,
                   "drive_generate_seconds": drive_seconds, "drive_status": drive_status,
                   "seconds": round(seconds, 1)}
        for name, sub in (("impl_node", "impl/node"), ("impl", "impl")):
            figures[name] = _branch_figures(cov, str(ROOT / sub) + "/*", out / f"{label}-{name}.json")
        (out / f"{label}.json").write_text(json.dumps(figures, indent=2) + "\n")
        return figures


def union(out: Path, labels: list[str], label: str) -> dict[str, object]:
    """The coverage of two measurements together: their data files combined (kept)."""
    import coverage

    with tempfile.TemporaryDirectory(prefix="impl-coverage-") as tmp:
        rc = Path(tmp) / "coveragerc"
        data = out / f".coverage.{label}"
        rc.write_text(RCFILE.format(data=data))
        cov = coverage.Coverage(data_file=str(data), config_file=str(rc))
        cov.combine(data_paths=[str(out / f".coverage.{n}") for n in labels], strict=True, keep=True)
        cov.save()
        figures: dict[str, object] = {"label": label, "union_of": labels}
        for name, sub in (("impl_node", "impl/node"), ("impl", "impl")):
            figures[name] = _branch_figures(cov, str(ROOT / sub) + "/*", out / f"{label}-{name}.json")
        (out / f"{label}.json").write_text(json.dumps(figures, indent=2) + "\n")
        return figures


def _branch_figures(cov: object, include: str, report: Path) -> dict[str, object]:
    """Statements and branches covered, from coverage's own JSON report of the files under
    ``include`` (the report is kept beside the figures, per file, for finding what no test runs)."""
    cov.json_report(outfile=str(report), include=[include])  # type: ignore[attr-defined]
    totals = json.loads(report.read_text())["totals"]
    branches, taken = totals["num_branches"], totals["covered_branches"]
    return {"statements": totals["num_statements"], "statements_run": totals["covered_lines"],
            "branches": branches, "branches_taken": taken,
            "branch_percent": round(100.0 * taken / branches, 1) if branches else 0.0}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    pytest_args = DEFAULT_PYTEST
    if "--" in argv:
        cut = argv.index("--")
        argv, pytest_args = argv[:cut], argv[cut + 1:]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--label", default="suite", help="name of this measurement (file names in --out)")
    ap.add_argument("--out", type=Path, default=ROOT / "out" / "coverage")
    ap.add_argument("--union", nargs=2, metavar="NAME", help="combine two earlier measurements of --out")
    ap.add_argument("--drive-generate", type=float, default=0, metavar="SECONDS",
                    help="also run the generated drive cases, this budget at 2 and at 3 brokers")
    args = ap.parse_args(argv)
    if args.drive_generate < 0:
        print("impl_coverage: error: --drive-generate must be 0 or more seconds", file=sys.stderr)
        return 2
    if not args.label.replace("-", "").replace("_", "").isalnum():
        print(f"impl_coverage: error: --label {args.label!r}: letters, digits, - and _ only", file=sys.stderr)
        return 2
    try:
        import coverage  # noqa: F401
    except ImportError:
        print("impl_coverage: error: coverage is not installed (pip install -e '.[dev]')", file=sys.stderr)
        return 2
    if args.union:
        missing = [n for n in args.union if not (args.out / f".coverage.{n}").is_file()]
        if missing:
            print(f"impl_coverage: error: no measurement {missing[0]!r} in {args.out}", file=sys.stderr)
            return 2
        f = union(args.out, args.union, args.label)
    else:
        f = measure(pytest_args, args.out, args.label, args.drive_generate)
    for name in ("impl_node", "impl"):
        g = f[name]
        assert isinstance(g, dict)
        print(f"{args.label}: {name.replace('_', '/')}: {g['branches_taken']}/{g['branches']} branches "
              f"({g['branch_percent']} %), {g['statements_run']}/{g['statements']} statements")
    if args.union:
        return 0
    print(f"{args.label}: pytest exit {f['pytest_status']}, drive exit {f['drive_status']}, in {f['seconds']} s; "
          f"figures in {args.out}/{args.label}.json")
    return 1 if f["pytest_status"] or f["drive_status"] else 0


if __name__ == "__main__":
    sys.exit(main())
