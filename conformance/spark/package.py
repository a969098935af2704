"""Package the conformance job for ``spark-submit``: one zip of the code it runs, one entry script.

    epochal package-job --out DIR        (or: python -m conformance.spark.package --out DIR)
    spark-submit --master URL --py-files DIR/epochal-job.zip DIR/conform_job.py PATH... --out OUT

The zip holds exactly the project's modules the job imports -- on the driver and, through
the default judge (``conformance.spark.verdict.default_judge``), on the executors -- found by
following every ``import`` statement, those inside functions too, from the job's entry points
(``ROOTS``).  They come from ``traces``, ``model``, ``properties`` and ``conformance``; nothing
from ``impl`` (the ``epochal`` command and the brokers) runs in the job, so nothing of it is
shipped.  Besides the standard library those modules import only ``IMPORTS``; the Python
of the driver and of every executor needs ``REQUIREMENTS``
(``tests/conformance/test_spark_submit.py`` runs the job with a Python that has nothing else).

The entry script stays outside the zip because ``spark-submit`` wants a file to run; it
imports the job from the zip, which ``--py-files`` puts on the path of the driver and the
executors alike, so it works from any working directory.  See ``docs/spark-submit.md``.
"""

from __future__ import annotations

import argparse
import ast
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
PACKAGES = ("traces", "model", "properties", "conformance")
"""The top-level packages whose modules may be shipped (``impl`` never is)."""
ROOTS = ("conformance.spark.cli", "conformance.spark.job")
"""Where the job's imports start: the command line it runs and the driver (the default judge
is imported by ``conformance.spark.verdict``, where the executors run it)."""
IMPORTS = ("pyspark", "pyarrow", "msgspec")
"""The third-party packages the shipped modules import (besides the standard library)."""
REQUIREMENTS = (*IMPORTS, "pandas>=2.2,<3")
"""What the Python of the driver and of every executor needs: ``IMPORTS``, and pandas, which
no shipped module imports but PySpark's ``mapInArrow`` insists on (without it the job stops
with ``PACKAGE_NOT_INSTALLED``; measured with PySpark 4.3).  The pin is PySpark 4.3's."""
ZIP_NAME = "epochal-job.zip"
ENTRY_NAME = "conform_job.py"

ENTRY_SCRIPT = '''\
"""The Epochal conformance job, for spark-submit (written by `epochal package-job`).

    spark-submit --master URL --py-files epochal-job.zip conform_job.py PATH... --out DIR

The job's code is in epochal-job.zip, which --py-files puts on the Python path of the driver
and of every executor; their Python needs pyspark (the cluster's version), pyarrow, msgspec
and pandas (pyspark's Arrow path asks for it).
"""

import sys

try:
    from conformance.spark.cli import standalone_main
except ModuleNotFoundError as exc:
    print(f"conform_job.py: error: cannot import the job ({exc}); pass its zip to "
          "spark-submit with --py-files epochal-job.zip", file=sys.stderr)
    raise SystemExit(2) from None

raise SystemExit(standalone_main(sys.argv[1:]))
'''


class PackageError(Exception):
    """The package cannot be written where it was asked to be (a one-line reason)."""


def source_of(module: str) -> Path | None:
    """The source file of a project module (a package's ``__init__.py``), None if not one."""
    if module.split(".", 1)[0] not in PACKAGES:
        return None
    base = ROOT.joinpath(*module.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def imported_names(module: str, path: Path) -> set[str]:
    """Every module name an ``import`` statement of ``path`` may load, wherever the statement
    stands (lazy imports inside functions count: executors run them).  ``from p import n``
    names both ``p`` and ``p.n``, since ``n`` may be a submodule."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[:len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


def modules(roots: tuple[str, ...] = ROOTS) -> dict[str, Path]:
    """The project modules the roots import, transitively, with every package above them
    (importing ``a.b.c`` runs ``a/__init__.py`` and ``a/b/__init__.py``): name -> source."""
    found: dict[str, Path] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in found:
            continue
        path = source_of(name)
        if path is None:
            continue
        found[name] = path
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        todo.extend(imported_names(name, path))
    return dict(sorted(found.items()))


def build(out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``ZIP_NAME`` and ``ENTRY_NAME`` into ``out_dir`` (made if missing); returns their
    paths.  Raises ``PackageError`` if ``out_dir`` cannot be a directory."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise PackageError(f"{out} exists and is not a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
        zip_path, entry = out / ZIP_NAME, out / ENTRY_NAME
        with zipfile.ZipFile(zip_path, "w", zipfile.ZIP_DEFLATED) as z:
            for path in modules().values():
                z.write(path, path.relative_to(ROOT).as_posix())
        entry.write_text(ENTRY_SCRIPT)
    except OSError as exc:
        raise PackageError(f"cannot write to {out}: {exc.strerror or exc}") from None
    return zip_path, entry


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m conformance.spark.package", description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, metavar="DIR", help=f"directory for {ZIP_NAME} and {ENTRY_NAME}")
    try:
        for path in build(ap.parse_args(argv).out):
            print(path)
    except PackageError as exc:
        print(f"package: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
