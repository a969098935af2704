"""The import contract (``[tool.importlinter]`` in pyproject.toml) holds for the tree, and it
is not a contract that cannot fail: the same check, run over a copy of the packages with one
upward import added, reports exactly that import.

The layers are what keeps the model free of the checkers and the checkers free of the
harness, and the trace judge free of the Spark job that runs it; a contract that silently
passed whatever was imported would keep nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("model", "properties", "impl", "traces", "conformance")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with ``root`` first on the path and its pyproject.toml as the contract:
    the packages it analyses are the ones under ``root`` (the installed project is found after
    it, so a copy shadows it)."""
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--no-logo", str(root / "pyproject.toml")],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)


def _copy_of_the_packages(dest: Path) -> Path:
    """The five packages' Python sources and the contract, nothing else (no data, no caches)."""

    def not_python(directory: str, names: list[str]) -> list[str]:
        return [n for n in names if n == "__pycache__" or (not n.endswith(".py") and not Path(directory, n).is_dir())]

    for package in PACKAGES:
        shutil.copytree(ROOT / package, dest / package, ignore=not_python)
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


def _contracts() -> int:
    """How many contracts pyproject.toml states."""
    return (ROOT / "pyproject.toml").read_text().count("[[tool.importlinter.contracts]]")


def test_the_tree_keeps_the_one_way_layers():
    done = _lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{_contracts()} kept, 0 broken" in done.stdout


@pytest.mark.parametrize(("module", "upward", "message"), [
    # the broker reaching up to the harness that runs it
    ("impl/node/replica.py", "impl.harness.cluster", "impl.node is not allowed to import impl.harness"),
    # a report reaching up to the command that writes it
    ("impl/harness/report/page.py", "impl.harness.cli.main", "impl.harness.report is not allowed to import impl.harness.cli"),
    # authentication reaching up to the codec whose connections sign in through it
    ("impl/node/auth/rules.py", "impl.node.wire", "impl.node.auth is not allowed to import impl.node.wire"),
    # the model's actions reaching up to the text a counterexample prints
    ("model/actions/partitions.py", "model.export.render", "model.actions is not allowed to import model.export"),
])
def test_each_layer_boundary_is_checked(tmp_path, module, upward, message):
    """The tree's sub-packages are layers too: an import across each boundary the folders show
    (node below harness, reports below the command, the model below its exports) is reported."""
    copy = _copy_of_the_packages(tmp_path)
    target = copy / module
    target.write_text(target.read_text() + f"\n\ndef _upward():\n    import {upward}  # upward\n")
    done = _lint_imports(copy)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{_contracts() - 1} kept, 1 broken" in done.stdout
    assert message in done.stdout


@pytest.mark.parametrize("where", ["module", "function"])
def test_the_contract_reports_the_model_importing_a_checker(tmp_path, where):
    """One upward import -- the model reaching up to the checkers, at module level or lazily
    inside a function -- breaks the contract, and the report names the importing module, the
    imported one and the line."""
    copy = _copy_of_the_packages(tmp_path)
    assert "model is not allowed to import" not in _lint_imports(copy).stdout
    state = copy / "model" / "state.py"
    lines = state.read_text().splitlines()
    if where == "module":
        added = "import properties.checkers.bfs  # upward: the model must not know its checkers"
    else:
        added = "def _upward():\n    import properties.checkers.bfs  # lazily, still upward\n"
    state.write_text("\n".join([*lines, "", added, ""]))
    line = len(lines) + 2 + (where == "function")

    done = _lint_imports(copy)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "broken" in done.stdout
    assert "model is not allowed to import properties.checkers" in done.stdout
    assert f"model.state -> properties.checkers.bfs (l.{line})" in done.stdout


def test_the_contract_sees_the_job_import_its_judge_and_reports_the_judge_importing_the_job(tmp_path):
    """The job's default judge is an import (``conformance.spark.verdict.default_judge``),
    so the conformance contract covers that edge; the judge reaching up to the job breaks it."""
    import grimp

    assert "conformance.judge.diagnose" in grimp.build_graph("conformance").find_modules_directly_imported_by(
        "conformance.spark.verdict")
    copy = _copy_of_the_packages(tmp_path)
    replay = copy / "conformance" / "judge" / "replay.py"
    lines = replay.read_text().splitlines()
    replay.write_text("\n".join([*lines, "", "import conformance.spark.order  # upward: the judge needs no job", ""]))

    done = _lint_imports(copy)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{_contracts() - 1} kept, 1 broken" in done.stdout
    assert "conformance.judge is not allowed to import conformance.spark" in done.stdout
    assert f"conformance.judge.replay -> conformance.spark.order (l.{len(lines) + 2})" in done.stdout
