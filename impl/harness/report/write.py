"""The reports the commands write: ``--html FILE`` of ``check``, ``fuzz``, ``conform`` and
``drive``, and ``report.html`` under ``conform --out``."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from pathlib import Path
from typing import Any

from conformance.spark.order import causal_order, split_groups
from conformance.spark.verdict import summary_line
from impl.harness.report import model_run, trace_run
from impl.harness.report.model_run import ModelRun
from impl.harness.report.page import Section, page
from impl.harness.report.trace_run import TraceGroup
from traces.reader import read_traces

Run = ModelRun | TraceGroup
MAX_DRAWN = 50
"""A conformance report draws at most this many failing groups (every group is in its index)."""


def sections(runs: Iterable[Run]) -> list[Section]:
    out = []
    for i, r in enumerate(runs):
        if isinstance(r, ModelRun):
            out.append(model_run.section(r, f"run-{i}"))
        else:
            out.append(trace_run.section(r, f"group-{i}"))
    return out


def write_html_report(path: str | Path, run: Run | Sequence[Run], title: str = "epochal report",
                      subtitle: str = "", preface: str = "") -> Path:
    """Write one self-contained page for a model run (``ModelRun``: a counterexample, a
    driven schedule) or a recorded trace group (``TraceGroup``), or several of them."""
    runs = list(run) if isinstance(run, list | tuple) else [run]
    p = Path(path)
    if p.parent != Path(""):
        p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(page(title, subtitle, sections(runs), preface), encoding="utf-8")
    return p


def result_run(result: Any, note: str = "") -> ModelRun:
    """A ``check``/``fuzz`` result as a model run: its counterexample, or no steps."""
    v = result.violation
    if v is None:
        return ModelRun(result.config, [], title=f"{result.config.name}: no violation", note=note)
    return ModelRun(result.config, [step for step, _ in v.steps], v.property, v.message, list(v.also),
                    title=f"{result.config.name}: {v.property} breaks after {len(v.steps)} steps", note=note)


def trace_groups(paths: Sequence[str], verdicts: Sequence[dict[str, Any]],
                 scenarios: dict[str, str] | None = None) -> list[TraceGroup]:
    """The groups of ``verdicts`` with their events, read again from ``paths`` (local files)
    and put in the order the job judged them in (``causal_order``, ``split_groups``)."""
    wanted: dict[tuple[str, str | None, int | None], dict[str, Any]] = {
        (v["run"], v["topic"], v["partition"]): v for v in verdicts}
    runs = {run for run, _, _ in wanted}
    by_run: dict[str, list[dict[str, Any]]] = {}
    for e in read_traces(paths).events:
        if e["run"] in runs:
            by_run.setdefault(e["run"], []).append(e)
    out = []
    for run, events in sorted(by_run.items()):
        ordered, _ = causal_order(events)
        for (topic, partition), group in split_groups(ordered).items():
            v = wanted.get((run, topic, partition))
            if v is not None:
                out.append(TraceGroup(run, topic, partition, group, v, (scenarios or {}).get(run, run)))
    return out


def write_conformance_report(path: str | Path, paths: Sequence[str], verdicts: Sequence[dict[str, Any]],
                             scenarios: dict[str, str], counts: str) -> Path:
    """``report.html`` of a conformance run: an index of every group's verdict, then each
    non-conforming group drawn up to its first divergence."""
    failing = [v for v in verdicts if v["status"] != "conforms"]
    groups = trace_groups(paths, failing[:MAX_DRAWN], scenarios)
    drawn = {(g.run, g.topic, g.partition): f"group-{i}" for i, g in enumerate(groups)}
    rows = []
    for v in verdicts:
        key = (v["run"], v["topic"], v["partition"])
        name = escape(scenarios.get(v["run"], v["run"]))
        where = "-" if v["topic"] is None else f"{escape(v['topic'])}/{v['partition']}"
        link = f'<a href="#{drawn[key]}">{name}</a>' if key in drawn else name
        rows.append(f'<tr class="{escape(v["status"])}"><td>{link}</td><td>{where}</td><td>{v["total"]}</td>'
                    f'<td>{escape(v["status"])}</td><td class="verdict-text">{escape(summary_line(v))}</td></tr>')
    if len(failing) > MAX_DRAWN:
        counts += f"; the first {MAX_DRAWN} of the {len(failing)} groups that do not conform are drawn"
    index = (f"<p>{escape(counts)}</p><table class=\"index\"><tr><th>scenario</th><th>topic/partition</th>"
             f"<th>events</th><th>status</th><th>verdict</th></tr>{''.join(rows)}</table>")
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(page("epochal conform", f"{len(verdicts)} groups, {len(failing)} not conforming",
                      sections(groups), index), encoding="utf-8")
    return p


def drive_run(path_run: Any, report: Any) -> ModelRun:
    """An ``epochal drive`` run (``impl.harness.drive``) as a model run to draw: the run's
    steps as the model takes them, up to the last one driven -- the one that diverged or
    reproduced the model's violation is marked, with what the implementation did."""
    from impl.harness.drive.paths import step_of
    from model.config import named
    from model.registry import apply
    from model.state import initial

    cfg = named(report.config, brokers=report.brokers)
    driven = max((s.n for s in report.steps if s.n and s.outcome != "model_refused"), default=0)
    steps = []
    s = initial(cfg)
    for action, choose in path_run.steps[:driven]:
        step = step_of(action, choose, s)
        t = apply(s, cfg, step) if step is not None else None
        if t is None:
            break
        steps.append(step)
        s = t
    prop = message = None
    d = report.divergence or {}
    if report.verdict == "diverged":
        prop = f"diverged at step {d.get('step')}" + (f" ({report.property})" if report.property else "")
        message = f"the implementation: {d.get('implementation_did')}; the model allowed: {d.get('model_allowed')}"
    elif report.verdict == "reproduced":
        prop, message = report.property, report.model_violation
    note = (f"epochal drive: {report.verdict}, {len(report.steps)} steps driven against real brokers "
            f"({report.config}, truncation {report.truncation}) in {report.seconds:.1f} s")
    return ModelRun(cfg, steps, prop, message, title=f"drive {report.run}: {report.verdict}", note=note)


def write_drive_report(path: str | Path, path_run: Any, report: Any) -> Path:
    """``epochal drive --html FILE``: the driven run drawn as the model took it."""
    return write_html_report(path, drive_run(path_run, report), title=f"epochal drive: {report.run}",
                             subtitle=f"{report.verdict} (exit {report.exit_code})")
