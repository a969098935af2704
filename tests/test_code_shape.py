"""The command line stays in pieces a reader can hold: no function of ``impl/harness/cli``
over McCabe complexity 15 (ruff's C901) and no module over 800 lines.

The check is not one that cannot fail: the same ruff invocation, run over a function one
branch past the limit, reports exactly that function.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # runs ruff as a subprocess

ROOT = Path(__file__).resolve().parents[1]
RUFF = Path(sys.executable).with_name("ruff")  # a dev dependency (pyproject.toml)
MAX_COMPLEXITY = 15
MAX_LINES = 800
KEPT_SIMPLE = ("impl/harness/cli", "conformance")
"""The trees held to MAX_COMPLEXITY and MAX_LINES."""


def _too_complex(*paths: Path) -> list[str]:
    """ruff's C901 findings over ``paths`` at MAX_COMPLEXITY: one ``path:line: message`` each."""
    done = subprocess.run(
        [str(RUFF), "check", "--no-cache", "--isolated", "--select", "C901", "--output-format", "concise",
         "--config", f"lint.mccabe.max-complexity = {MAX_COMPLEXITY}", *map(str, paths)],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode in (0, 1), done.stderr  # 1: findings; anything else: ruff itself failed
    return [line for line in done.stdout.splitlines() if "C901" in line]


@pytest.mark.parametrize("tree", KEPT_SIMPLE)
def test_no_function_is_over_the_complexity_limit(tree: str) -> None:
    assert _too_complex(ROOT / tree) == []


@pytest.mark.parametrize("tree", KEPT_SIMPLE)
def test_no_module_is_over_the_line_limit(tree: str) -> None:
    modules = sorted((ROOT / tree).rglob("*.py"))
    assert modules
    too_long = {str(m.relative_to(ROOT)): n for m in modules
                if (n := len(m.read_text().splitlines())) > MAX_LINES}
    assert too_long == {}


def _branches(n: int) -> str:
    """A function of complexity ``n + 1``: ``n`` ifs."""
    body = "".join(f"    if x == {i}:\n        return {i}\n" for i in range(n))
    return f"def branchy(x: int) -> int:\n{body}    return -1\n"


def test_the_complexity_check_reports_a_function_one_past_the_limit(tmp_path: Path) -> None:
    (tmp_path / "at_limit.py").write_text(_branches(MAX_COMPLEXITY - 1))
    (tmp_path / "past_limit.py").write_text(_branches(MAX_COMPLEXITY))
    found = _too_complex(tmp_path)
    assert len(found) == 1
    assert "past_limit.py" in found[0] and f"`branchy` is too complex ({MAX_COMPLEXITY + 1} > {MAX_COMPLEXITY})" in found[0]


def test_no_module_of_the_command_line_shadows_the_standard_library() -> None:
    """``spark-submit impl/harness/cli/main.py`` (and ``python impl/harness/cli/main.py``) put
    that directory first on ``sys.path``: a ``numbers.py`` there replaced the standard
    library's, and ``import decimal`` failed before the command parsed its arguments."""
    cli = ROOT / "impl" / "harness" / "cli"
    assert sorted(p.name for p in cli.glob("*.py") if p.stem in sys.stdlib_module_names) == []
