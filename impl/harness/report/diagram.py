"""A space-time (Lamport) diagram as inline SVG: one lane per participant, one row per step.

Time runs down the page: row ``i`` is the ``i``-th step of the run, drawn on the lane of
the participant that took it (a broker, the controller, or -- for a fault -- its victim).
An arrow goes from the step that sent a message to the step that received it; a message
still in flight when the run ends points at the bottom of its addressee's lane, and one
that was lost on the way (its addressee crashed) ends in a cross at the step that lost it.
A ZooKeeper write is an arrow across the same row to the ZooKeeper lane.  The text of each
step stands beside the lanes, level with its row, so the numbered list and the picture read
together.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

ROW_H = 24
LANE_W = 104
TOP = 48  # room for the lane names
LEFT = 16
TEXT_W = 400  # the column of step texts, right of the lanes: at least this wide, wider for long texts
CHAR_W = 7.0  # about one character of the step text, for sizing that column (it scrolls)
LABEL_H = 13  # one line of an arrow's label (10.5 px text), and the stagger between labels
LABEL_CHAR_W = 6.2  # about one character of a label, for sizing its background
LABEL_GAP = 10  # from the sending lane's line to a label's first letter

GLYPHS = ("dot", "crash", "pause", "resume", "restart", "stop")
"""How a step is marked on its lane: a dot for an ordinary step; faults and their ends
(a kill -9, a GC pause, its end, a restart, a clean stop) have shapes of their own."""


@dataclass(frozen=True)
class Row:
    """One step of the run, on one lane."""

    lane: int
    text: str  # what the step did, beside the diagram
    glyph: str = "dot"
    bad: bool = False  # where the property broke / the first event the model does not allow
    note: str = ""  # a short tag shown after the text (e.g. "breaks committed_durable")


@dataclass(frozen=True)
class Arrow:
    """A message (``kind`` "message"), a ZooKeeper write ("zk") or a ZooKeeper session's end
    ("session"), from the step at ``src`` to the one at ``dst`` -- or, with ``dst`` None,
    a message still in flight when the run ends."""

    kind: str
    label: str
    src: int  # row
    src_lane: int
    dst: int | None  # row
    dst_lane: int
    lost: bool = False  # dropped at ``dst`` without being received (its addressee went away)


@dataclass
class Diagram:
    lanes: list[str]
    rows: list[Row]
    arrows: list[Arrow]
    first_number: int = 1  # the number of the first row (steps are numbered from 1)


def _lane_x(lane: int) -> float:
    return LEFT + LANE_W * lane + LANE_W / 2


def _row_y(row: int) -> float:
    return TOP + ROW_H * row + ROW_H / 2


def _glyph(kind: str, x: float, y: float, bad: bool) -> str:
    cls = "glyph bad" if bad else "glyph"
    if kind == "crash":
        d = 7
        return (f'<path class="{cls} crash" d="M{x - d},{y - d}L{x + d},{y + d}M{x - d},{y + d}L{x + d},{y - d}">'
                "<title>crash (kill -9)</title></path>")
    if kind == "pause":
        return (f'<g class="{cls} pause"><rect x="{x - 6}" y="{y - 7}" width="4" height="14"/>'
                f'<rect x="{x + 2}" y="{y - 7}" width="4" height="14"/><title>GC pause</title></g>')
    if kind == "resume":
        return (f'<path class="{cls} resume" d="M{x - 5},{y - 7}L{x + 7},{y}L{x - 5},{y + 7}Z">'
                "<title>pause ends</title></path>")
    if kind == "restart":
        return (f'<circle class="{cls} restart" cx="{x}" cy="{y}" r="7"><title>restart</title></circle>')
    if kind == "stop":
        return (f'<rect class="{cls} stop" x="{x - 6}" y="{y - 6}" width="12" height="12">'
                "<title>clean stop</title></rect>")
    return f'<circle class="{cls}" cx="{x}" cy="{y}" r="{6 if bad else 4.5}"/>'


def breaking_anchor(ident: str) -> str:
    """The id of the step where the run breaks (the property, or the first event the model
    does not allow) in the diagram ``ident``: the page opens scrolled to it."""
    return f"{ident}-breaking-step"


def svg(d: Diagram, ident: str) -> str:
    """The diagram as one ``<svg>`` element; ``ident`` makes its marker ids unique on a page
    that holds several diagrams."""
    n_lanes = len(d.lanes)
    lanes_w = LEFT + LANE_W * n_lanes
    longest = max((len(r.text) + len(r.note) + 6 for r in d.rows), default=0)
    width = lanes_w + max(TEXT_W, min(2400, int(CHAR_W * longest) + 40))
    bottom = TOP + ROW_H * len(d.rows) + ROW_H
    height = bottom + 12
    out = [f'<svg class="lamport" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="space-time diagram">']
    out.append("<defs>" + "".join(
        f'<marker id="{ident}-{kind}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" markerUnits="userSpaceOnUse" '
        f'orient="auto-start-reverse"><path class="head {kind}" d="M0,0L10,5L0,10Z"/></marker>'
        for kind in ("message", "zk", "session")) + "</defs>")
    for i, name in enumerate(d.lanes):
        x = _lane_x(i)
        cls = "lane zk" if name == "ZooKeeper" else "lane"
        out.append(f'<g class="{cls}" data-lane="{i}"><text class="lane-name" x="{x}" y="{TOP - 22}">{escape(name)}</text>'
                   f'<line x1="{x}" y1="{TOP - 12}" x2="{x}" y2="{bottom}"/></g>')
    for i, row in enumerate(d.rows):
        y = _row_y(i)
        n = i + d.first_number
        cls = "step bad" if row.bad else "step"
        note = f' <tspan class="note">{escape(row.note)}</tspan>' if row.note else ""
        anchor = f' id="{breaking_anchor(ident)}"' if row.bad else ""
        out.append(
            f'<g class="{cls}"{anchor} data-step="{n}" tabindex="0">'
            f'<rect class="hit" x="0" y="{y - ROW_H / 2}" width="{width}" height="{ROW_H}"/>'
            f'<text class="num" x="{lanes_w + 4}" y="{y + 4}">{n}.</text>'
            f'<text class="text" x="{lanes_w + 36}" y="{y + 4}">{escape(row.text)}{note}</text>'
            f"{_glyph(row.glyph, _lane_x(row.lane), y, row.bad)}</g>")
    from_row: dict[int, int] = {}  # arrows drawn so far from each row: their labels are staggered
    for a in d.arrows:
        k = from_row[a.src] = from_row.get(a.src, -1) + 1
        x1, y1 = _lane_x(a.src_lane), _row_y(a.src)
        x2 = _lane_x(a.dst_lane)
        y2 = bottom if a.dst is None else _row_y(a.dst)
        state = "lost" if a.lost else ("in-flight" if a.dst is None else "delivered")
        # stop short of the lane so the head is not hidden under the receiving step's glyph
        dx, dy = x2 - x1, y2 - y1
        length = max((dx * dx + dy * dy) ** 0.5, 1.0)
        shrink = 0 if a.lost or a.dst is None else 6
        x2s, y2s = x2 - dx / length * shrink, y2 - dy / length * shrink
        marker = "" if a.lost else f' marker-end="url(#{ident}-{a.kind})"'
        # labels stand above their sending step, one line each, so a step's arrows never
        # write over each other; they show only while a step they touch is selected.  Each
        # starts past the sending lane's line and sits on a background of its own, so the
        # lines it crosses (lanes, other arrows) run behind it, not through its letters
        lx, ly = min(x1, x2) + LABEL_GAP, y1 - 7 - LABEL_H * k
        bg = (f'<rect class="label-bg" x="{lx - 2:.1f}" y="{ly - LABEL_H + 2:.1f}" '
              f'width="{LABEL_CHAR_W * len(a.label) + 4:.1f}" height="{LABEL_H}" rx="2"/>')
        cross = (f'<path class="lost-x" d="M{x2 - 5},{y2 - 5}L{x2 + 5},{y2 + 5}M{x2 - 5},{y2 + 5}L{x2 + 5},{y2 - 5}"/>'
                 if a.lost else "")
        out.append(
            f'<g class="arrow {a.kind} {state}" data-kind="{a.kind}" data-from="{a.src + d.first_number}" '
            f'data-to="{"" if a.dst is None else a.dst + d.first_number}">'
            f"<title>{escape(a.label)}</title>"
            f'<line x1="{x1}" y1="{y1}" x2="{x2s:.1f}" y2="{y2s:.1f}"{marker}/>{cross}'
            f'{bg}<text class="label" x="{lx:.1f}" y="{ly:.1f}">{escape(a.label)}</text></g>')
    out.append("</svg>")
    return "".join(out)
