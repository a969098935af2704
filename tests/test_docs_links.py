"""Every relative link in the README and in docs/ leads somewhere: the file exists, and a
``#fragment`` into a markdown page names one of its headings (GitHub's heading anchors).

The README is short because it links to the rest; a link that leads nowhere is a page a
reader cannot reach.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), ROOT / "traces" / "SCHEMA.md"]

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")


def _prose(text: str) -> str:
    """The page without its fenced code blocks and inline code, where brackets are code."""
    lines, inside = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            lines.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(lines)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, markup and punctuation dropped, spaces to
    hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of a markdown page (repeated headings get -1, -2, ... as on GitHub)."""
    seen: dict[str, int] = {}
    out = set()
    inside = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            inside = not inside
            continue
        m = None if inside else HEADING.match(line)
        if m:
            a = anchor(m.group(1))
            n = seen.get(a, 0)
            seen[a] = n + 1
            out.add(a if n == 0 else f"{a}-{n}")
    return out


def relative_links(page: Path) -> list[str]:
    return [t for t in LINK.findall(_prose(page.read_text(encoding="utf-8")))
            if not re.match(r"[a-z][a-z0-9+.-]*:", t, re.I)]  # http:, https:, mailto: ...


def broken(page: Path) -> list[str]:
    """The relative links of ``page`` that lead nowhere, each with the reason."""
    out = []
    for target in relative_links(page):
        path, _, fragment = target.partition("#")
        dest = page if not path else (page.parent / unquote(path)).resolve()
        if not dest.exists():
            out.append(f"{target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            out.append(f"{target}: no heading #{fragment} in {os.path.relpath(dest, page.parent)}")
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(page: Path) -> None:
    assert broken(page) == []


def test_the_check_finds_a_missing_file_and_a_missing_heading(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("# Title\n\n## The `check` command: BFS\n", encoding="utf-8")
    page = tmp_path / "a.md"
    page.write_text("[ok](b.md#the-check-command-bfs) [top](b.md#title) [web](https://example.org/x)\n"
                    "[gone](c.md) [no heading](b.md#nothing)\n```\n[code](not-a-link.md)\n```\n",
                    encoding="utf-8")
    assert broken(page) == ["c.md: no such file", "b.md#nothing: no heading #nothing in b.md"]


def test_the_readme_fits_on_a_screen_or_two() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 200
