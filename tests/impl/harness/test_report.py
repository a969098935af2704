"""The HTML reports (``impl.harness.report``) as a reader gets them: rendered from real runs -- the
design's KAFKA-1211 counterexample from ``epochal check`` and the non-conforming sample
traces from ``epochal conform`` -- and parsed back with the standard library's HTML parser.

What is held: one lane per participant (ZooKeeper, the controller, each broker with the
trace's own ids), one row per step, an arrow for every message the path sends (to its
receipt, its loss, or still in flight) and for every ZooKeeper write, the broken property
named, and a page that loads nothing from anywhere."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from impl.harness.cli.main import main
from impl.harness.report.model_run import messages, received
from model.config import named
from model.registry import ACTIONS
from tests.searched import searched

ROOT = Path(__file__).resolve().parents[3]
NONCONFORMING = ROOT / "traces" / "data" / "nonconforming"


class Page(HTMLParser):
    """The parts of a report page the tests read: per section its lanes, steps and arrows,
    plus every attribute value and text seen (for the no-network check)."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[dict[str, Any]] = []
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.texts: list[str] = []
        self._lane_name = False
        self._property = False
        self.properties: list[str] = []
        self.index_rows = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.tags.append((tag, a))
        classes = a.get("class", "").split()
        if tag == "section" and "run" in classes:
            self.sections.append({"id": a["id"], "lanes": [], "steps": [], "arrows": [], "states": 0})
        elif not self.sections:
            if tag == "tr" and classes and classes[0] in ("conforms", "violates", "error"):
                self.index_rows += 1
            return
        s = self.sections[-1] if self.sections else None
        if tag == "text" and "lane-name" in classes:
            self._lane_name = True
        elif tag == "g" and "step" in classes and s is not None:
            s["steps"].append({"n": int(a["data-step"]), "bad": "bad" in classes, "id": a.get("id")})
        elif tag == "g" and "arrow" in classes and s is not None:
            s["arrows"].append({"kind": a["data-kind"], "from": a["data-from"], "to": a["data-to"],
                                "state": classes[2]})
        elif tag == "div" and "state" in classes and s is not None:
            s["states"] += 1
        elif tag == "b" and "property" in classes:
            self._property = True

    def handle_data(self, data: str) -> None:
        self.texts.append(data)
        if self._lane_name:
            self.sections[-1]["lanes"].append(data)
            self._lane_name = False
        if self._property:
            self.properties.append(data)
            self._property = False


def parse(path: Path) -> Page:
    p = Page()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def assert_self_contained(path: Path, page: Page) -> None:
    """No URL, no element that loads anything, no external font or stylesheet."""
    text = path.read_text(encoding="utf-8")
    assert not re.search(r"https?:|//[a-z0-9.-]+\.[a-z]{2,}/", text, re.I)
    for tag, attrs in page.tags:
        assert tag not in ("link", "img", "iframe", "object", "embed", "image", "use"), tag
        assert "src" not in attrs and "srcset" not in attrs, (tag, attrs)
        assert not attrs.get("href", "#").strip() or attrs.get("href", "#").startswith("#"), attrs
    assert "@import" not in text and "@font-face" not in text
    assert all(u.startswith("#") for u in re.findall(r"url\(([^)]*)\)", text))


def expected_arrows(cfg_name: str) -> tuple[Any, list[tuple[str, int, int | None]], int]:
    """The design's shortest counterexample, and from its states alone: (message, row sent,
    row received or None) for every delivery, loss and message still in flight, and the
    number of steps whose event is a ZooKeeper write."""
    r = searched(named(cfg_name))
    v = r.violation
    states = v.states
    sent: dict[Any, int] = {}
    delivered: set[Any] = set()
    out: list[tuple[str, int, int | None]] = []
    zk = 0
    for i, (step, _) in enumerate(v.steps):
        before, after = states[i], states[i + 1]
        m = received(step)
        if m is not None:
            out.append(("delivered", sent[m], i))
            delivered.add(m)
        for gone in messages(before) - messages(after) - {m}:
            if gone not in delivered:
                out.append(("lost", sent.pop(gone), i))
        for new in messages(after) - messages(before):
            sent[new] = i
            delivered.discard(new)
        event = ACTIONS[step.action].event(step.args, before, after)
        zk += bool(event is not None and event.zk)
    out += [("in-flight", row, None) for m, row in sent.items() if m not in delivered and m in messages(states[-1])]
    return v, out, zk


def test_check_report_draws_every_message_of_the_kafka_1211_counterexample(tmp_path, capsys):
    path = tmp_path / "cx.html"
    assert main(["check", "--config", "design", "--quiet", "--html", str(path)]) == 1
    assert "report written to" in capsys.readouterr().err
    page = parse(path)
    v, arrows, zk_writes = expected_arrows("design")
    [section] = page.sections
    assert section["lanes"] == ["ZooKeeper", "controller", "broker 0", "broker 1"]
    assert [s["n"] for s in section["steps"]] == list(range(1, len(v.steps) + 1))
    assert [s["bad"] for s in section["steps"]] == [False] * (len(v.steps) - 1) + [True]
    assert section["states"] == len(v.steps) + 1  # the initial state, then one per step
    drawn = sorted((a["state"], int(a["from"]) - 1, int(a["to"]) - 1 if a["to"] else None)
                   for a in section["arrows"] if a["kind"] == "message")
    assert drawn == sorted(arrows, key=lambda t: (t[0], t[1], -1 if t[2] is None else t[2]))
    assert sum(1 for a in section["arrows"] if a["kind"] == "zk") == zk_writes > 0
    assert {"delivered", "lost", "in-flight"} <= {a[0] for a in arrows}  # the path shows all three
    assert page.properties[0] == v.property == "committed_durable"
    assert any("records lost: p0[0]=a@1 (committed)" in t for t in page.texts)
    assert_self_contained(path, page)


def test_a_check_that_finds_nothing_still_writes_a_report_with_the_initial_state(tmp_path):
    path = tmp_path / "inconclusive.html"
    assert main(["check", "--config", "kip320", "--quiet", "--max-depth", "2", "--html", str(path)]) == 3
    page = parse(path)
    [section] = page.sections
    assert section["steps"] == [] and section["states"] == 1
    assert any("inconclusive" in t for t in page.texts)


def test_html_to_a_directory_or_an_unwritable_place_is_a_usage_error(tmp_path, capsys):
    assert main(["check", "--config", "design", "--quiet", "--html", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["check", "--config", "design", "--quiet", "--html", str(blocker / "x.html")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--html" in err


def _judged_groups() -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The sample traces judged as the job judges them, without Spark."""
    from conformance.spark.report import scenario_names
    from conformance.spark.verdict import judge_run, load_judge
    from traces.reader import read_traces

    read = read_traces([NONCONFORMING])
    by_run: dict[str, list[dict[str, Any]]] = {}
    for e in read.events:
        by_run.setdefault(e["run"], []).append(e)
    judge = load_judge(None)
    verdicts = [v for run, events in sorted(by_run.items()) for v in judge_run(run, events, judge, "kip320")]
    files: dict[str, set[str]] = {}
    for e in read.events:
        files.setdefault(e["run"], set()).add(e["_file"])
    return verdicts, scenario_names(files)


def test_conformance_report_draws_each_failing_group_up_to_its_first_divergence(tmp_path):
    from impl.harness.report import trace_groups, write_conformance_report

    verdicts, scenarios = _judged_groups()
    failing = [v for v in verdicts if v["status"] != "conforms"]
    assert failing and len(failing) < len(verdicts)
    path = write_conformance_report(tmp_path / "report.html", [str(NONCONFORMING)], verdicts, scenarios, "counts")
    page = parse(path)
    assert page.index_rows == len(verdicts)
    assert len(page.sections) == len(failing)
    groups = {(g.run, g.topic, g.partition): g for g in trace_groups([str(NONCONFORMING)], failing, scenarios)}
    for section, v in zip(page.sections, sorted(failing, key=lambda v: (v["run"], v["topic"], v["partition"])),
                          strict=True):
        g = groups[(v["run"], v["topic"], v["partition"])]
        brokers = sorted({e["node"] for e in g.events if e["node"] >= 0})
        assert section["lanes"][:2] == ["ZooKeeper", "controller"]
        assert section["lanes"][2:2 + len(brokers)] == [f"broker {b}" for b in brokers]  # the trace's own ids
        assert len(section["steps"]) == v["first_bad"] + 1  # drawn up to the first divergence
        assert [s["n"] for s in section["steps"] if s["bad"]] == [v["first_bad"] + 1]
        zk = sum(1 for e in g.events[: v["first_bad"] + 1] if e.get("zxid") is not None)
        assert sum(1 for a in section["arrows"] if a["kind"] in ("zk", "session")) == zk
        for a in section["arrows"]:
            assert a["kind"] != "message" or not a["to"] or int(a["from"]) < int(a["to"])  # sends before receipts
    assert {1, 2, 3} <= {int(lane.split()[1]) for s in page.sections for lane in s["lanes"] if lane.startswith("broker")}
    assert_self_contained(path, page)


def test_a_failing_trace_opens_at_its_breaking_step_with_labels_off_the_arrows(tmp_path):
    """Each failing group's breaking step is the diagram's anchor, the page's script scrolls
    the diagram to it, and every arrow label has a background and starts clear of its lane."""
    from impl.harness.report import write_conformance_report
    from impl.harness.report.diagram import LABEL_GAP, breaking_anchor
    from impl.harness.report.page import SCRIPT

    verdicts, scenarios = _judged_groups()
    path = write_conformance_report(tmp_path / "report.html", [str(NONCONFORMING)], verdicts, scenarios, "counts")
    page = parse(path)
    assert page.sections
    for section in page.sections:
        [bad] = [s for s in section["steps"] if s["bad"]]
        assert bad["id"] == breaking_anchor(section["id"])
        assert all(s["id"] is None for s in section["steps"] if not s["bad"])
    html = path.read_text()
    assert SCRIPT in html and "querySelector('g.step.bad')" in SCRIPT and "scrollTop" in SCRIPT
    labels = [a for tag, a in page.tags if tag == "text" and a.get("class") == "label"]
    backgrounds = [a for tag, a in page.tags if tag == "rect" and a.get("class") == "label-bg"]
    assert labels and len(backgrounds) == len(labels)
    lanes = {float(a["x1"]) for tag, a in page.tags if tag == "line" and "y1" in a and a.get("x1") == a.get("x2")}
    assert all(min(abs(float(t["x"]) - x) for x in lanes) >= LABEL_GAP - 0.1 for t in labels)


@pytest.mark.slow
@pytest.mark.spark
def test_conform_out_writes_report_html_beside_the_verdicts(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["conform", str(NONCONFORMING), "--out", str(out), "--html", str(tmp_path / "copy.html")]) == 1
    report = out / "report.html"
    assert report.exists() and (out / "summary.json").exists()
    page = parse(report)
    assert page.sections and page.index_rows >= len(page.sections)
    assert report.read_text() == (tmp_path / "copy.html").read_text()
    assert "report written to" in capsys.readouterr().err


def test_a_drive_report_draws_the_run_up_to_the_step_that_diverged(tmp_path):
    from impl.harness.drive import scenario
    from impl.harness.drive.driver import DriveReport, StepReport
    from impl.harness.drive.paths import brokers_needed
    from impl.harness.report import write_drive_report

    run = scenario("kafka_1211")
    n = brokers_needed(run, "design")
    upto = len(run.steps) - 2
    steps = [StepReport(i, a, "", "", "op", "followed") for i, (a, _) in enumerate(run.steps[:upto], 1)]
    steps[-1].outcome = "diverged"
    report = DriveReport(run.name, "design", n, "hw", "diverged", 1, steps=steps,
                         divergence={"step": upto, "implementation_did": "appended b@2", "model_allowed": "nothing"})
    path = write_drive_report(tmp_path / "drive.html", run, report)
    page = parse(path)
    [section] = page.sections
    assert section["lanes"] == ["ZooKeeper", "controller"] + [f"broker {b}" for b in range(n)]
    assert [s["n"] for s in section["steps"]] == list(range(1, upto + 1))
    assert [s["n"] for s in section["steps"] if s["bad"]] == [upto]
    assert page.properties == [f"diverged at step {upto}"]
    assert any("the implementation: appended b@2" in t for t in page.texts)
    assert_self_contained(path, page)


def test_fuzz_writes_its_counterexample_as_a_report(tmp_path):
    path = tmp_path / "fuzz.html"
    assert main(["fuzz", "--config", "unclean", "--no-shrink", "--html", str(path)]) == 1
    page = parse(path)
    [section] = page.sections
    assert section["steps"] and section["steps"][-1]["bad"]
    assert section["states"] == len(section["steps"]) + 1
    assert page.properties and page.properties[0] in ("committed_durable", "acked_durable")
    assert_self_contained(path, page)


def test_a_long_group_is_drawn_from_a_window_before_its_first_divergence(tmp_path, monkeypatch):
    from impl.harness.report import trace_groups, trace_run, write_html_report

    verdicts, scenarios = _judged_groups()
    longest = max((v for v in verdicts if v["status"] != "conforms"), key=lambda v: v["first_bad"])
    window = 20
    assert longest["first_bad"] + 1 > window
    monkeypatch.setattr(trace_run, "WINDOW", window)
    [group] = trace_groups([str(NONCONFORMING)], [longest], scenarios)
    page = parse(write_html_report(tmp_path / "window.html", group))
    [section] = page.sections
    bad = longest["first_bad"] + 1
    assert [s["n"] for s in section["steps"]] == list(range(bad - window + 1, bad + 1))  # numbered as in the group
    assert [s["n"] for s in section["steps"] if s["bad"]] == [bad]
    assert section["states"] == window + 1
    shown = {s["n"] for s in section["steps"]}
    assert all(int(a["from"]) in shown and (not a["to"] or int(a["to"]) in shown) for a in section["arrows"])
