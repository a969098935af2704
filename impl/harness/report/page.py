"""One self-contained HTML page: sections of diagrams beside the state after each step.

A *section* is one run (a counterexample, a conformance group, a driven schedule): its
summary (what broke, where), its diagram and one state panel per step.  Clicking a step
(or moving over it) shows the state after it, with what the step changed highlighted and
the value before it struck through; "only what changed" hides the rest.  Everything the page
needs is inline -- CSS, SVG, a few lines of JavaScript -- and it names no URL, so it opens
offline, from a file, anywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

from impl.harness.report.diagram import Diagram, svg

Snapshot = dict[tuple[str, str], str]
"""A state as the page shows it: (part, field) -> value text, in display order -- e.g.
``("broker 1", "p0 log") -> "[a@1]"``.  Two snapshots are diffed key by key."""


@dataclass
class Section:
    ident: str  # unique on the page (HTML ids, SVG markers)
    title: str
    summary: str  # HTML: what the run shows (the property that broke, the records lost...)
    diagram: Diagram | None
    snapshots: list[tuple[str, Snapshot]]  # (heading, state): initial, then after each row
    selected: int = 0  # the step shown when the page opens
    highlight: dict[int, set[tuple[str, str]]] = field(default_factory=dict)  # keys shown as lost, per snapshot
    extra: dict[int, str] = field(default_factory=dict)  # HTML under a snapshot (what the model allowed)
    first_state: int = 0  # the number of the first snapshot (a long trace is drawn from a later row on)


CSS = """
:root { color-scheme: light; --ink: #1d232b; --muted: #6a737d; --line: #c9d1d9; --accent: #0b62c4;
  --bad: #c62828; --zk: #7b4fa6; --changed: #fff3c4; --lost: #ffd6d6; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink);
  background: #fafbfc; }
header.page { padding: 14px 22px; background: #24292f; color: #fff; }
header.page h1 { margin: 0; font-size: 19px; }
header.page p { margin: 4px 0 0; color: #c9d1d9; }
main { padding: 10px 22px 40px; }
section.run { margin: 18px 0 34px; border-top: 2px solid var(--line); padding-top: 8px; }
section.run > h2 { font-size: 17px; margin: 6px 0; }
.summary { margin: 6px 0 10px; }
.verdict { padding: 8px 12px; border-radius: 6px; margin: 6px 0; }
.verdict.bad { background: #fdecea; border-left: 5px solid var(--bad); }
.verdict.good { background: #e8f5e9; border-left: 5px solid #2e7d32; }
.verdict.unknown { background: #fff8e1; border-left: 5px solid #f9a825; }
.lost-records { color: var(--bad); font-weight: 600; }
code, .mono, td.value { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
.body { display: flex; gap: 18px; align-items: flex-start; }
.diagram { flex: 1 1 auto; overflow: auto; max-height: 88vh; background: #fff; border: 1px solid var(--line);
  border-radius: 6px; }
.panel { flex: 0 0 420px; position: sticky; top: 8px; max-height: 88vh; overflow: auto; background: #fff;
  border: 1px solid var(--line); border-radius: 6px; padding: 8px 10px; }
.panel h3 { font-size: 14px; margin: 2px 0 6px; }
.panel .tools { display: flex; gap: 10px; align-items: center; font-size: 12.5px; color: var(--muted); }
.panel button { font: inherit; font-size: 12px; padding: 1px 8px; }
table.state { border-collapse: collapse; width: 100%; margin-top: 6px; table-layout: fixed; }
table.state th.part { text-align: left; background: #f0f3f6; padding: 3px 6px; font-size: 12.5px; }
table.state td { padding: 2px 6px; border-bottom: 1px solid #eef1f4; vertical-align: top; }
table.state td.key { color: var(--muted); width: 30%; overflow-wrap: anywhere; font-size: 12.5px; }
table.state td.value { overflow-wrap: anywhere; }
tr.changed td { background: var(--changed); }
tr.removed td { background: #f3f3f3; color: var(--muted); }
tr.lost td { background: var(--lost); }
del { color: var(--muted); }
section.changes-only table.state tr.same { display: none; }
section.changes-only table.state tr.part.same { display: none; }
svg.lamport { display: block; }
svg .lane line { stroke: var(--line); stroke-width: 2; }
svg .lane.zk line { stroke: var(--zk); stroke-dasharray: 2 3; }
svg .lane-name { font-size: 12.5px; font-weight: 600; text-anchor: middle; fill: var(--ink); }
svg .lane.zk .lane-name { fill: var(--zk); }
svg .step .hit { fill: transparent; }
svg .step:hover .hit, svg .step:focus .hit { fill: #eef4fc; }
svg .step.selected .hit { fill: #dbe9fb; }
svg .step.bad .hit { fill: #fdecea; }
svg .step.bad.selected .hit { fill: #f9d0cc; }
svg .step { cursor: pointer; outline: none; }
svg .step .num { font-size: 12px; fill: var(--muted); font-family: ui-monospace, Menlo, Consolas, monospace; }
svg .step .text { font-size: 12.5px; fill: var(--ink); }
svg .step.bad .text { fill: var(--bad); font-weight: 600; }
svg .step .note { fill: var(--bad); font-weight: 700; }
svg .glyph { fill: var(--accent); stroke: #fff; stroke-width: 1; }
svg .glyph.bad { fill: var(--bad); }
svg .glyph.crash { stroke: var(--bad); stroke-width: 3; fill: none; }
svg .glyph.pause rect { fill: #e65100; }
svg .glyph.resume { fill: #2e7d32; }
svg .glyph.restart { fill: #fff; stroke: #2e7d32; stroke-width: 3; }
svg .glyph.stop { fill: #555; }
svg .arrow { pointer-events: none; }
svg .arrow line { stroke: var(--accent); stroke-width: 1.4; opacity: .75; }
svg .arrow.zk line { stroke: var(--zk); }
svg .arrow.session line { stroke: var(--zk); stroke-dasharray: 3 3; }
svg .arrow.in-flight line { stroke-dasharray: 6 4; }
svg .arrow.lost line { stroke: var(--bad); stroke-dasharray: 6 4; }
svg .arrow .lost-x { stroke: var(--bad); stroke-width: 2.5; }
svg .arrow .label { font-size: 10.5px; fill: var(--muted); opacity: 0; paint-order: stroke; stroke: #fff;
  stroke-width: 3px; stroke-linejoin: round; }
svg .arrow.hot line { stroke-width: 2.6; opacity: 1; }
svg .arrow.hot .label { opacity: 1; fill: var(--ink); }
svg .arrow .label-bg { fill: #fff; opacity: 0; stroke: var(--line); stroke-width: .8; }
svg .arrow.hot .label-bg { opacity: .92; }
svg .head.message { fill: var(--accent); }
svg .head.zk, svg .head.session { fill: var(--zk); }
table.index { border-collapse: collapse; margin: 8px 0; }
table.index td, table.index th { border-bottom: 1px solid var(--line); padding: 4px 8px; text-align: left;
  vertical-align: top; }
table.index td.verdict-text { max-width: 760px; }
.legend { font-size: 12.5px; color: var(--muted); margin: 4px 0 8px; }
.legend span { margin-right: 14px; }
"""

SCRIPT = """
(function () {
  document.querySelectorAll('section.run').forEach(function (run) {
    var selected = run.getAttribute('data-selected') || '0';
    var states = run.querySelectorAll('div.state');
    var steps = run.querySelectorAll('g.step');
    var arrows = run.querySelectorAll('g.arrow');
    function show(n) {
      n = String(n);
      states.forEach(function (s) { s.hidden = s.getAttribute('data-state') !== n; });
      steps.forEach(function (g) { g.classList.toggle('selected', g.getAttribute('data-step') === n); });
      arrows.forEach(function (a) {
        a.classList.toggle('hot', a.getAttribute('data-from') === n || a.getAttribute('data-to') === n);
      });
    }
    run.querySelectorAll('[data-step]').forEach(function (g) {
      g.addEventListener('click', function () { selected = g.getAttribute('data-step'); show(selected); });
      g.addEventListener('mouseenter', function () { show(g.getAttribute('data-step')); });
      g.addEventListener('mouseleave', function () { show(selected); });
      g.addEventListener('keydown', function (e) {
        var k = Number(g.getAttribute('data-step'));
        var next = e.key === 'ArrowDown' ? k + 1 : e.key === 'ArrowUp' ? k - 1 : null;
        var target = next === null ? null : run.querySelector('g.step[data-step="' + next + '"]');
        if (target) { e.preventDefault(); target.focus(); selected = String(next); show(selected); }
      });
    });
    run.querySelectorAll('input.only-changes').forEach(function (box) {
      box.addEventListener('change', function () {
        run.classList.toggle('changes-only', box.checked);
        run.querySelectorAll('input.only-changes').forEach(function (o) { o.checked = box.checked; });
      });
    });
    show(selected);
    // open at the breaking step: its row in the middle of the diagram's scrolling box
    var breaking = run.querySelector('g.step.bad');
    var box = run.querySelector('div.diagram');
    if (breaking && box) {
      var hit = breaking.querySelector('rect.hit');
      var y = hit ? Number(hit.getAttribute('y')) : 0;
      box.scrollTop = Math.max(0, y - box.clientHeight / 2);
    }
  });
  // a page of one run opens at it when it breaks (a page of several keeps its index in
  // view), unless a link named a place to open at
  var first = document.querySelector('g.step.bad');
  if (first && document.querySelectorAll('section.run').length === 1 && !window.location.hash) {
    first.closest('section.run').scrollIntoView({block: 'start'});
  }
})();
"""

LEGEND = ('<div class="legend"><span>&#9679; a step</span><span style="color:#c62828">&#10005; crash</span>'
          '<span style="color:#e65100">&#10074;&#10074; GC pause</span><span style="color:#2e7d32">&#9654; pause ends'
          '</span><span style="color:#2e7d32">&#9675; restart</span><span>&#9632; clean stop</span>'
          '<span style="color:#0b62c4">&#8594; message (dashed: still in flight at the end)</span>'
          '<span style="color:#c62828">- - &#10005; never delivered (its addressee went down, or it went stale)</span>'
          '<span style="color:#7b4fa6">&#8594; ZooKeeper write (dashed: a session ends)</span></div>')


def _state_table(snap: Snapshot, before: Snapshot | None, lost: set[tuple[str, str]]) -> str:
    rows: list[str] = []
    part = None
    parts_changed = {k[0] for k, v in snap.items() if before is not None and before.get(k) != v}
    if before is not None:
        parts_changed |= {k[0] for k in before if k not in snap}
    for key, value in snap.items():
        if key[0] != part:
            part = key[0]
            cls = "part" if part in parts_changed or before is None else "part same"
            rows.append(f'<tr class="{cls}"><th class="part" colspan="2">{escape(part)}</th></tr>')
        old = None if before is None else before.get(key)
        if key in lost:
            cls, shown = "lost", escape(value)
        elif before is None or old == value:
            cls, shown = "same" if before is not None else "", escape(value)
        elif old is None:
            cls, shown = "changed", escape(value) + " <em>(new)</em>"
        else:
            cls, shown = "changed", f"<del>{escape(old)}</del> &#8594; {escape(value)}"
        rows.append(f'<tr class="{cls}"><td class="key">{escape(key[1])}</td><td class="value">{shown}</td></tr>')
    for key, old in (before or {}).items():
        if key not in snap:
            rows.append(f'<tr class="removed"><td class="key">{escape(key[0])} {escape(key[1])}</td>'
                        f'<td class="value"><del>{escape(old)}</del> (gone)</td></tr>')
    return '<table class="state">' + "".join(rows) + "</table>"


def _panel(s: Section) -> str:
    out = ['<aside class="panel">']
    first = s.first_state
    tools = (f'<div class="tools"><button type="button" data-step="{first}">'
             f'{"first state shown" if first else "initial state"}</button>'
             '<label><input type="checkbox" class="only-changes"> only what changed</label></div>')
    for i, (heading, snap) in enumerate(s.snapshots):
        k = first + i
        before = s.snapshots[i - 1][1] if i > 0 else None
        out.append(f'<div class="state" data-state="{k}"{"" if k == s.selected else " hidden"}>'
                   f"{tools}<h3>{escape(heading)}</h3>{s.extra.get(k, '')}"
                   f"{_state_table(snap, before, s.highlight.get(k, set()))}</div>")
    out.append("</aside>")
    return "".join(out)


def section_html(s: Section) -> str:
    body = ""
    if s.diagram is not None:
        body = (f'{LEGEND}<div class="body"><div class="diagram">{svg(s.diagram, s.ident)}</div>'
                f"{_panel(s)}</div>")
    elif s.snapshots:
        body = f'<div class="body">{_panel(s)}</div>'
    return (f'<section class="run" id="{escape(s.ident)}" data-selected="{s.selected}">'
            f"<h2>{escape(s.title)}</h2><div class=\"summary\">{s.summary}</div>{body}</section>")


def page(title: str, subtitle: str, sections: Sequence[Section], preface: str = "") -> str:
    """The whole document: no ``<link>``, no ``src=``, no URL -- it loads nothing."""
    return ("<!DOCTYPE html>\n"
            f'<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<style>{CSS}</style></head><body>"
            f'<header class="page"><h1>{escape(title)}</h1><p>{escape(subtitle)}</p></header>'
            f"<main>{preface}{''.join(section_html(s) for s in sections)}</main>"
            f"<script>{SCRIPT}</script></body></html>\n")
