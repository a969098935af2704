"""Build the zip that ships the job's Python code to Spark executors.

    python -m conformance.spark.package [--out dist/epochal-py.zip]
    spark-submit --master URL --py-files dist/epochal-py.zip conformance/spark/job.py PATH... --out DIR

The zip holds the packages the executors import: ``traces`` (reading and validation),
``conformance`` (ordering, judging) and ``model`` + ``properties`` (the default judge,
``conformance.judge.replay.judge``).  Executors also need pyarrow (Spark's Arrow exchange) on the
cluster's Python; nothing else is imported there.  A wheel works too
(``python -m build --wheel``, then ``--py-files dist/epochal-*.whl``), but the zip needs no
build backend and holds only what the executors run.
"""

from __future__ import annotations

import argparse
import zipfile
from pathlib import Path

PACKAGES = ("traces", "conformance", "model", "properties")
ROOT = Path(__file__).resolve().parent.parent


def build(out: str | Path = ROOT / "dist" / "epochal-py.zip") -> Path:
    """Write the zip (Python sources and trace schema docs only); returns its path."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for pkg in PACKAGES:
            base = ROOT / pkg
            if not (base / "__init__.py").exists():
                continue
            for f in sorted(base.rglob("*")):
                if f.suffix in (".py", ".md") and "__pycache__" not in f.parts:
                    z.write(f, f.relative_to(ROOT).as_posix())
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m conformance.spark.package", description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "dist" / "epochal-py.zip"))
    path = build(ap.parse_args(argv).out)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
