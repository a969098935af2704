"""The figures of docs/benchmarks.md as PNG charts, drawn from the tables themselves.

    .venv/bin/python bench/charts.py [--doc docs/benchmarks.md]
        [--journal docs/journal/test-command-runs.md] [--out docs/charts]

Each chart names the table it draws by the table's header row; the numbers are read from
the document, so a chart is as current as its table and says nothing the table does not.
A chart of runs over time (the test command's, by commit) is drawn from the journal page
that logs them, not from the benchmarks page, which keeps only the current figures.
A table that is gone or has changed shape is an error naming it, not a wrong picture.
The output is deterministic: the same document and matplotlib give the same bytes (no
timestamps, fixed size, fonts and hash salt), so regenerating the charts shows in a diff
only when a figure changed.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "benchmarks.md"
JOURNAL = ROOT / "docs" / "journal" / "test-command-runs.md"
OUT = ROOT / "docs" / "charts"


class TableMissing(ValueError):
    pass


def table(doc: str, header: str, where: str = "the benchmarks document") -> list[list[str]]:
    """The body rows of the Markdown table whose header row starts with ``header``; ``where``
    names the document in the error when there is none."""
    lines = doc.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and line.strip("| ").startswith(header):
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip().strip("|").split("|")])
            return rows
    raise TableMissing(f"no table with header {header!r} in {where}")


def number(cell: str) -> float:
    """The first number in a cell: ``11,566`` -> 11566, ``4.5 s`` -> 4.5, ``0.44 (0.54)`` -> 0.44."""
    m = re.search(r"-?\d[\d,]*(?:\.\d+)?", cell)
    if m is None:
        raise ValueError(f"no number in table cell {cell!r}")
    return float(m.group().replace(",", ""))


def numbers(cell: str) -> list[float]:
    return [float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*(?:\.\d+)?", cell)]


@dataclass(frozen=True)
class Chart:
    name: str  # the PNG's file name, without .png
    header: str  # the table it draws
    draw: Callable  # (axes, rows) -> None
    journal: bool = False  # the table is the test-command journal's, not the benchmarks page's


def _bars(ax, labels, series: dict[str, list[float]], ylabel: str, log: bool = False, fmt: str = "{:,.0f}") -> None:
    width = 0.8 / len(series)
    for k, (name, values) in enumerate(series.items()):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(labels))]
        bars = ax.bar(xs, values, width, label=name)
        ax.bar_label(bars, labels=[fmt.format(v) for v in values], fontsize=7, padding=2)
    ax.set_xticks(range(len(labels)), labels)
    ax.set_ylabel(ylabel)
    if log:
        ax.set_yscale("log")
    if len(series) > 1:
        ax.legend(fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)


def checker_states(ax, rows) -> None:
    labels = [r[0] for r in rows]
    on, off = [number(r[1]) for r in rows], [number(r[2]) for r in rows]
    _bars(ax, labels, {"symmetry reduction on": on, "off": off}, "distinct states (log scale)", log=True)
    ax.set_title("Exhaustive checker: states per configuration, two brokers")


def checker_rate(ax, rows) -> None:
    labels, rate = [], []
    for r in rows:
        walls = numbers(r[4])
        if walls and walls[0] > 0:
            labels.append(r[0])
            rate.append(number(r[1]) / walls[0])
    _bars(ax, labels, {"states/s (symmetry on)": rate}, "states per second")
    ax.set_title("Exhaustive checker: states per second (Python search, one core)")


def native_vs_python(ax, rows) -> None:
    labels = [r[0].split(" (")[0] for r in rows]
    _bars(ax, ["one core", "two cores"], {lab: [number(r[1]), number(r[2])] for lab, r in zip(labels, rows, strict=True)},
          "seconds", fmt="{:.1f} s")
    ax.set_title("kip320, three brokers: Python against the native search")


def conformance(ax, rows) -> None:
    labels = [f"{r[0].strip('`').split(':')[-1]}\n{number(r[1]):,.0f} events" for r in rows]
    read = [number(r[1]) / number(r[3]) for r in rows]
    job = [number(r[5]) for r in rows]
    _bars(ax, labels, {"plain Spark read-and-count": read, "conformance job (judged)": job}, "events per second")
    ax.set_title("Conformance: events per second, local[2]")


def controller_failover(ax, rows) -> None:
    parts = [1000, 10000]
    for r in rows:
        ax.plot(parts, [number(r[1]), number(r[2])], marker="o", label=r[0])
    ax.set_xscale("log")
    ax.set_xticks(parts, ["1,000", "10,000"])
    ax.set_xlabel("partitions")
    ax.set_ylabel("seconds from the old controller's session ending")
    ax.legend(fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title("Controller failover against partition count (3 brokers)")


def broker_failover(ax, rows) -> None:
    timed = [r for r in rows if r[1] and r[2] and "transactions" not in r[0]]
    _bars(ax, [r[0].replace(", ", ",\n") for r in timed],
          {"one ZooKeeper write per partition": [number(r[1]) for r in timed], "multi of 500": [number(r[2]) for r in timed]},
          "seconds from the failure", fmt="{:.2f}")
    ax.tick_params(axis="x", labelsize=7)
    ax.set_title("Broker failover, 10,000 partitions: leader elections written one by one or batched")


def test_command(ax, rows) -> None:
    # A run that stopped before its slow suites has no total to draw; the table still says why.
    rows = [r for r in rows if re.search(r"\d", r[2])]
    labels = [r[0].split(",")[0] + "\n" + r[0].split(",")[1].split()[0] for r in rows]

    def minutes(cell: str) -> float:
        m = re.search(r"(\d+):(\d\d)", cell)
        return int(m.group(1)) + int(m.group(2)) / 60 if m else number(cell)

    default = [minutes(r[1]) for r in rows]
    slow = [minutes(r[2]) for r in rows]
    ax.bar(range(len(rows)), default, label="default suite")
    ax.bar(range(len(rows)), slow, bottom=default, label="slow suites")
    ax.set_xticks(range(len(rows)), labels, fontsize=7)
    ax.set_ylabel("minutes")
    ax.legend(fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title("The test command (.ci/run), by commit")


CHARTS = (
    Chart("checker-states", "config | states (symmetry on) | off", checker_states),
    Chart("checker-states-per-second", "config | states (symmetry on) | off", checker_rate),
    Chart("native-vs-python", "search | one core | two cores | memory", native_vs_python),
    Chart("conformance-events-per-second", "judge | events | files | Spark read-and-count", conformance),
    Chart("controller-failover", "seconds from the old controller's session ending | 1,000 partitions", controller_failover),
    Chart("broker-failover", "seconds from the failure | one write per partition", broker_failover),
    Chart("test-command", "date, commit | default suite | slow suites", test_command, journal=True),
)


def render(doc: str, journal: str, out: Path) -> list[Path]:
    """Every chart of ``CHARTS`` from its table, in the benchmarks document ``doc`` or the
    test-command journal ``journal``, as ``out/NAME.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.hashsalt": "epochal", "font.family": "DejaVu Sans", "font.size": 9,
                         "axes.prop_cycle": matplotlib.cycler(color=["#0b62c4", "#e07b39", "#2e7d32", "#7b4fa6"])})
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for chart in CHARTS:
        rows = table(journal, chart.header, "the test-command journal") if chart.journal else table(doc, chart.header)
        fig, ax = plt.subplots(figsize=(8, 4.2), dpi=100)
        chart.draw(ax, rows)
        fig.tight_layout()
        path = out / f"{chart.name}.png"
        fig.savefig(path, format="png", metadata={"Software": None})
        plt.close(fig)
        written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--doc", type=Path, default=DOC, help="the benchmarks document (default docs/benchmarks.md)")
    ap.add_argument("--journal", type=Path, default=JOURNAL,
                    help="the test command's run log (default docs/journal/test-command-runs.md)")
    ap.add_argument("--out", type=Path, default=OUT, help="where the PNGs go (default docs/charts)")
    args = ap.parse_args(argv)
    try:
        doc, journal = (path.read_text(encoding="utf-8") for path in (args.doc, args.journal))
    except OSError as exc:
        print(f"charts: error: {exc.filename}: {exc.strerror}", file=sys.stderr)
        return 2
    try:
        for path in render(doc, journal, args.out):
            print(path)
    except (TableMissing, ValueError) as exc:
        print(f"charts: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
