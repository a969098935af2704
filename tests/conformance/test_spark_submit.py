"""The packaged job (``epochal package-job``) runs under ``spark-submit`` as a data team runs it.

That is: from a directory that is not the repository, with a Python that has only what
``conformance.spark.package.REQUIREMENTS`` names -- not the project -- on the driver and the
executors alike, and it reaches the same verdicts as ``epochal conform`` on the same input.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import pytest

from conformance.spark import package
from conformance.spark.job import conform
from impl.harness.cli.main import main as epochal

DATA = Path(__file__).resolve().parents[2] / "traces" / "data"


def _zipped_modules(zip_path: Path) -> set[str]:
    names = set()
    for name in zipfile.ZipFile(zip_path).namelist():
        assert name.endswith(".py"), name
        module = name[:-3].replace("/", ".")
        names.add(module.removesuffix(".__init__"))
    return names


def test_the_zip_holds_every_module_the_job_imports_and_nothing_from_impl(tmp_path):
    """Every import in the zip -- lazy ones inside functions too -- is the standard library,
    another module of the zip, or one of ``IMPORTS``; grimp, which import-linter uses, finds
    no module the job reaches that the zip lacks."""
    import grimp

    zip_path, _ = package.build(tmp_path)
    zipped = _zipped_modules(zip_path)
    assert set(package.ROOTS) <= zipped
    assert not any(m == "impl" or m.startswith("impl.") for m in zipped)

    allowed = set(sys.stdlib_module_names) | set(package.IMPORTS)
    strays = {}
    for module, path in package.modules().items():
        for name in package.imported_names(module, path):
            parent = name.rpartition(".")[0]  # "from p import n": n is p's attribute or submodule
            if not (name in zipped or parent in zipped or name.split(".", 1)[0] in allowed):
                strays.setdefault(module, set()).add(name)
    assert strays == {}

    graph = grimp.build_graph(*package.PACKAGES, "impl", include_external_packages=True)
    reached = set(package.ROOTS).union(*(graph.find_upstream_modules(root) for root in package.ROOTS))
    project = {m for m in reached if m.split(".", 1)[0] in (*package.PACKAGES, "impl")}
    assert project <= zipped, sorted(project - zipped)
    assert {m.split(".", 1)[0] for m in reached - project} <= allowed


def test_package_job_writes_the_zip_and_its_entry_script(tmp_path, capsys):
    out = tmp_path / "new" / "dir"
    assert epochal(["package-job", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == [package.ENTRY_NAME, package.ZIP_NAME]
    printed = capsys.readouterr().out
    assert str(out / package.ZIP_NAME) in printed and "spark-submit" in printed


def test_package_job_refuses_an_out_that_is_a_file_in_one_line(tmp_path, capsys):
    taken = tmp_path / "file"
    taken.write_text("x")
    assert epochal(["package-job", "--out", str(taken)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("epochal package-job: error:") and "not a directory" in err
    assert len(err.strip().splitlines()) == 1
    assert taken.read_text() == "x"


@pytest.mark.integration
def test_the_entry_script_without_its_zip_says_how_to_submit_it(tmp_path):
    """Run where the job cannot be imported (``-S``: no site-packages, so no project either),
    the entry script says what is missing in one line and exits 2, not with a traceback."""
    package.build(tmp_path / "pkg")
    p = subprocess.run([sys.executable, "-S", str(tmp_path / "pkg" / package.ENTRY_NAME), str(DATA)],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1 and "--py-files epochal-job.zip" in p.stderr


def _bare_env(python: Path) -> dict[str, str]:
    """This process's environment with nothing pointing at this Python or its packages, and
    ``python`` as the driver's and the executors' Python."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "SPARK_HOME") and not k.startswith("PYSPARK_")}
    env.update(PYSPARK_PYTHON=str(python), PYSPARK_DRIVER_PYTHON=str(python),
               PATH=f"{python.parent}{os.pathsep}{env.get('PATH', '')}")
    return env


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> Path:
    """A new virtual environment with only ``REQUIREMENTS``, each at the version this one
    has (so pip takes the wheels it has cached): no project, no test tools."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    names = [re.split(r"[<>=!~ ]", req, maxsplit=1)[0] for req in package.REQUIREMENTS]
    pins = [f"{name}=={version(name)}" for name in names]
    p = subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *pins],
                       capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stderr[-2000:]
    project = subprocess.run([str(python), "-c", "import model"], cwd=venv, env=_bare_env(python),
                             capture_output=True, timeout=60)
    assert project.returncode != 0, "the bare environment must not see the project"
    return python


def _rows(directory: Path) -> list[dict]:
    rows = [json.loads(line) for part in sorted(directory.glob("part-*")) for line in part.read_text().splitlines()]
    for row in rows:
        row.pop("judge_seconds", None)
    return sorted(rows, key=lambda r: (r["run"], r.get("topic") or "", r.get("partition") or -1))


@pytest.mark.integration
@pytest.mark.slow
def test_spark_submit_from_anywhere_with_a_bare_python_judges_as_epochal_conform(bare_python, spark, tmp_path):
    """``spark-submit --py-files DIR/epochal-job.zip DIR/conform_job.py`` with the bare
    environment's own spark-submit, from an empty directory, on the recorded traces: exit 0,
    and verdicts and summary equal to ``epochal conform``'s (``conform`` on the test session)."""
    pkg, cwd, submitted, local = (tmp_path / d for d in ("pkg", "cwd", "submitted", "local"))
    cwd.mkdir()
    zip_path, entry = package.build(pkg)
    env = _bare_env(bare_python)
    inputs = str(DATA / "recorded")
    p = subprocess.run([str(bare_python.parent / "spark-submit"), "--master", "local[2]",
                        "--py-files", str(zip_path), str(entry), inputs, "--out", str(submitted)],
                       cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, "\n".join(line for line in p.stderr.splitlines()
                                        if " INFO " not in line and " WARN " not in line)[-3000:]
    # one group per scenario, and one more for the partition partition-changes adds
    groups = sum(1 for d in (DATA / "recorded").iterdir() if d.is_dir()) + (DATA / "recorded" / "partition-changes").is_dir()
    assert f"{groups} conform, 0 do not" in p.stdout

    expected = conform([inputs], str(local), spark=spark, log=lambda m: None)
    assert expected.exit_code == 0 and expected.groups == groups
    assert _rows(submitted / "verdicts.json") == _rows(local / "verdicts.json")
    summaries = [json.loads(next((d / "summary.json").glob("part-*")).read_text()) for d in (submitted, local)]
    for s in summaries:
        s.pop("seconds")
    assert summaries[0] == summaries[1]
