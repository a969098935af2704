"""Every repository path the docs write in code spans exists: ``impl/node/fencing.py``,
``tests/impl/node/test_wire_doc.py::test_...``, ``traces/data/recorded/``.

A page that names a file which moved or was split sends its reader to nothing, and no link
check sees it (a path in backticks is not a link).  A path here is a code span with no
spaces or placeholders, whose first part is one of the repository's own top-level entries,
and which ends in a file extension or in ``/``; a ``::test`` suffix is dropped.  Paths
relative to a package the sentence names (``auth/rules.py``) are not checked.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), ROOT / "traces" / "SCHEMA.md"]

# the repository's top-level entries: a path that starts with one is the repository's
TOP = ("model", "properties", "impl", "traces", "conformance", "tests", "bench", "docs", "ports",
       ".ci", "README.md", "pyproject.toml", "conftest.py")

CODE_SPAN = re.compile(r"`([^`\n]+)`")
REPO_PATH = re.compile(r"[\w.][\w.\-/]*(?:\.[A-Za-z0-9]+|/)")


def paths(text: str) -> list[str]:
    """The repository paths of a page's code spans, in order."""
    found = []
    for span in CODE_SPAN.findall(text):
        path = span.strip().split("::")[0]
        if REPO_PATH.fullmatch(path) and "/" in path and path.split("/")[0] in TOP:
            found.append(path)
    return found


def missing(page: Path) -> list[str]:
    return [p for p in paths(page.read_text(encoding="utf-8")) if not (ROOT / p).exists()]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_a_page_names_exists(page: Path) -> None:
    assert missing(page) == []


def test_a_path_is_a_code_span_under_a_top_level_entry() -> None:
    text = ("`impl/node/fencing.py` `tests/impl/node/test_wire.py::test_x` `docs/` "
            "`auth/rules.py` `traces/data/recorded/<scenario>/` `epochal check --config kip320` "
            "`model/gone.py` `.ci/run` plain impl/node/log.py")
    assert paths(text) == ["impl/node/fencing.py", "tests/impl/node/test_wire.py", "docs/", "model/gone.py"]
    assert [p for p in paths(text) if not (ROOT / p).exists()] == ["model/gone.py"]
