"""``bench/charts.py``: the charts of docs/benchmarks.md are drawn from its own tables (the
test command's runs from their journal), the same bytes every time, each one shown on the
page its table is on, and a table that is gone is a one-line error naming it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "benchmarks.md"
JOURNAL = ROOT / "docs" / "journal" / "test-command-runs.md"


def _charts():
    from bench import charts

    return charts


def _shown(page: str) -> set[str]:
    """The charts a page shows: images under docs/charts/, from docs/ or from docs/journal/."""
    return set(re.findall(r"!\[[^\]]*\]\((?:\.\./)?charts/([^)]+)\)", page))


def test_every_chart_is_drawn_from_a_table_of_its_page_and_shown_on_it(tmp_path):
    charts = _charts()
    doc, journal = DOC.read_text(encoding="utf-8"), JOURNAL.read_text(encoding="utf-8")
    written = charts.render(doc, journal, tmp_path)
    assert [p.name for p in written] == [f"{c.name}.png" for c in charts.CHARTS]
    assert _shown(doc) == {f"{c.name}.png" for c in charts.CHARTS if not c.journal}
    assert _shown(journal) == {f"{c.name}.png" for c in charts.CHARTS if c.journal}
    for p in written:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert (ROOT / "docs" / "charts" / p.name).exists()  # committed beside the page


def test_the_charts_are_the_same_bytes_every_time(tmp_path):
    charts = _charts()
    doc, journal = DOC.read_text(encoding="utf-8"), JOURNAL.read_text(encoding="utf-8")
    first = {p.name: p.read_bytes() for p in charts.render(doc, journal, tmp_path / "a")}
    second = {p.name: p.read_bytes() for p in charts.render(doc, journal, tmp_path / "b")}
    assert first == second


def test_a_chart_reads_its_numbers_from_the_table():
    charts = _charts()
    doc = "| config | states (symmetry on) | off | ratio |\n|---|---|---|---|\n| design | 12,345 | 14,319 | 1.2 |\n"
    rows = charts.table(doc, "config | states (symmetry on) | off")
    assert rows == [["design", "12,345", "14,319", "1.2"]]
    assert charts.number(rows[0][1]) == 12345 and charts.numbers("1.1 / 0.9 s") == [1.1, 0.9]


def test_a_missing_table_is_a_one_line_error(tmp_path, capsys):
    charts = _charts()
    doc = tmp_path / "empty.md"
    doc.write_text("# nothing measured\n")
    assert charts.main(["--doc", str(doc), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no table with header" in err and "benchmarks document" in err


def test_a_test_command_table_missing_from_the_journal_is_a_one_line_error_naming_it(tmp_path, capsys):
    charts = _charts()
    journal = tmp_path / "runs.md"
    journal.write_text("# no runs yet\n")
    assert charts.main(["--journal", str(journal), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'date, commit | default suite" in err and "test-command journal" in err


def test_a_missing_journal_is_a_one_line_error_naming_the_file(tmp_path, capsys):
    charts = _charts()
    missing = tmp_path / "nowhere.md"
    assert charts.main(["--journal", str(missing), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(missing) in err


def test_a_test_command_run_that_stopped_before_its_slow_suites_has_no_bar(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    charts = _charts()
    doc = ("| date, commit | default suite | slow suites | in all |\n|---|---|---|---|\n"
           "| 2026-11-26, aaaaaaa | 6:11 | 19:50 | 27:18 |\n"
           "| 2026-11-26, bbbbbbb (stopped) | 7:35 (1 failed) | not run (the failure stopped it) | -- |\n")
    fig, ax = plt.subplots()
    charts.test_command(ax, charts.table(doc, "date, commit | default suite | slow suites"))
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2026-11-26\naaaaaaa"]
    plt.close(fig)
