"""Writing: the job's outcome -- counts, verdicts, quarantined records -- to the driver, to
``--out`` (Parquet, JSON Lines and ``summary.json``) and as the table printed at the end."""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from typing import Any

from conformance.judge.words import property_words
from conformance.spark.verdict import summary_line


@dataclass
class Outcome:
    """What a run of the job found; ``exit_code`` follows the documented contract."""

    exit_code: int
    files: int = 0
    records: int = 0
    events: int = 0
    quarantined: dict[str, int] = field(default_factory=dict)
    out_of_order: int = 0
    groups: int = 0
    conforming: int = 0
    violating: int = 0
    errors: int = 0
    inconclusive: int = 0  # groups whose judge ran out of its budget
    runs: int = 0
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    """Non-conforming verdicts first, then conforming; at most ``keep_verdicts`` of them."""
    seconds: dict[str, float] = field(default_factory=dict)
    scenarios: dict[str, str] = field(default_factory=dict)
    """Run id -> the name of the directory its files are in (the recorded scenario, e.g.
    ``leader-kill``), where the driver listed the files; the run id is shown where not."""

    def as_dict(self) -> dict[str, Any]:
        """The counts and timings: ``summary.json`` and the counts of ``--json``."""
        d = {k: v for k, v in self.__dict__.items() if k not in ("verdicts", "scenarios")}
        d["malformed"] = sum(self.quarantined.values())
        return d

    def scenario(self, run: str) -> str:
        return self.scenarios.get(run, run)


CONFORMS, NOT_CONFORMING, UNUSABLE, INCONCLUSIVE = 0, 1, 2, 3
"""The job's exit codes -- the ``epochal`` convention (``impl.harness.cli.exits``), restated here
because the job runs under ``spark-submit`` without ``impl``."""


def exit_code(outcome: Outcome, strict: bool) -> int:
    """1 a group does not conform (or, with ``strict``, a record was quarantined); else 3 if
    some group could not be judged (the judge raised or ran out of its budget) or there was
    no group to judge --
    nothing says those traces conform; else 0.  Unusable input (no file, no readable
    record) is 2, raised before there is an outcome."""
    if outcome.violating or (strict and sum(outcome.quarantined.values())):
        return NOT_CONFORMING
    if outcome.errors or outcome.inconclusive or not outcome.groups:
        return INCONCLUSIVE
    return CONFORMS


def scenario_names(files: dict[str, set[str]]) -> dict[str, str]:
    """Run id -> the directory its files share (the scenario a recording was made under);
    runs whose files lie in several directories keep their id."""
    out = {}
    for run, uris in files.items():
        dirs = {u.rstrip("/").rsplit("/", 2)[-2] for u in uris if u.count("/") >= 2}
        if len(dirs) == 1:
            out[run] = dirs.pop()
    return out


def collect_facts(rows) -> dict[str, list[Any]]:
    """The few columns of every output row the driver counts, as Arrow (no shuffle): the
    row type, run, status (verdicts), quarantine reason code, per-run event and out-of-order
    counts, and for "seen" rows the file and task (``line``)."""
    from pyspark.sql import functions as F

    row = F.col("row")
    return _to_arrow(rows.select(
        "row", "run", "status", "run_events", "run_out_of_order",
        F.when(row == "seen", F.col("line")).alias("task"),
        F.when(row == "seen", F.col("file")).alias("file"),
        F.when(row == "quarantine", F.split(F.col("reason"), ":").getItem(0)).alias("code"),
    )).to_pydict()


@dataclass
class Tally:
    """Every count of the outcome: quarantined records by reason code, verdicts by status,
    and the runs with their events and out-of-order events."""

    quarantined: dict[str, int] = field(default_factory=dict)
    status: dict[str, int] = field(default_factory=dict)
    runs: int = 0
    events: int = 0
    out_of_order: int = 0
    files: dict[str, set[str]] = field(default_factory=dict)  # run -> its files ("seen" rows)

    def scenarios(self) -> dict[str, str]:
        return scenario_names(self.files)

    def add_facts(self, facts: dict[str, list[Any]], skip: frozenset[str] = frozenset()) -> None:
        """Count collected ``facts`` (``collect_facts``), leaving out the rows of runs in ``skip``
        (their rows from a first pass that judged them in pieces)."""
        cols = (facts["row"], facts["run"], facts["status"], facts["run_events"], facts["run_out_of_order"],
                facts["code"], facts["file"])
        for row, run, status, events, disorder, code, file in zip(*cols, strict=True):
            if row == "seen":
                self.files.setdefault(run, set()).add(file)
            elif row == "quarantine":
                self.quarantined[code] = self.quarantined.get(code, 0) + 1
            elif run in skip:
                continue
            elif row == "verdict":
                self.status[status] = self.status.get(status, 0) + 1
            elif row == "run":
                self.runs += 1
                self.events += events or 0
                self.out_of_order += disorder or 0

    def add_aggregate(self, judged_rows, quarantine) -> None:
        """Count on the executors (any filesystem: no per-run rows come to the driver), in
        one small aggregate -- each Spark action costs a fixed ~0.1-0.3 s."""
        from pyspark.sql import functions as F

        kind = (F.when(F.col("row") == "quarantine", F.split(F.col("reason"), ":").getItem(0))
                .when(F.col("row") == "verdict", F.col("status")).otherwise(F.lit("")))
        tally = (judged_rows.unionByName(quarantine)
                 .groupBy("row", kind.alias("kind"))
                 .agg(F.count("*").alias("n"), F.sum("run_events").alias("e"), F.sum("run_out_of_order").alias("o"))
                 .collect())
        for r in tally:
            if r["row"] == "quarantine":
                self.quarantined[r["kind"]] = r["n"]
            elif r["row"] == "verdict":
                self.status[r["kind"]] = r["n"]
            elif r["row"] == "run":
                self.runs, self.events, self.out_of_order = r["n"], int(r["e"] or 0), int(r["o"] or 0)


def _to_arrow(df):
    """A small DataFrame's rows on the driver as an Arrow table (``toArrow`` where this
    PySpark has it, else through pandas' Arrow path)."""
    import pyarrow as pa

    if hasattr(df, "toArrow"):
        return df.toArrow()
    return pa.Table.from_pandas(df.toPandas(), preserve_index=False)


def write_outputs(spark, out: str, verdicts, quarantine, outcome: Outcome) -> None:
    base = out.rstrip("/")
    verdicts.coalesce(1).write.mode("overwrite").parquet(f"{base}/verdicts.parquet")
    verdicts.coalesce(1).write.mode("overwrite").json(f"{base}/verdicts.json")
    quarantine.coalesce(1).write.mode("overwrite").parquet(f"{base}/quarantine.parquet")
    quarantine.coalesce(1).write.mode("overwrite").json(f"{base}/quarantine.json")


def write_summary(spark, out: str, outcome: Outcome) -> None:
    """``summary.json``: ``Outcome.as_dict()``, the counts and timings ``--json`` prints too.
    Written once the run's timings are final (``total`` ends before this write)."""
    summary = json.dumps(outcome.as_dict(), sort_keys=True)
    base = out.rstrip("/")
    spark.createDataFrame([(summary,)], "value string").coalesce(1).write.mode("overwrite").text(f"{base}/summary.json")


def _wrap(text: str, width: int, indent: str = "") -> list[str]:
    """``text`` in lines of at most ``width`` characters, continued under ``indent``: a
    verdict is wrapped between words, never cut (a single word longer than a line, which
    only a path or an identifier is, is the one thing split)."""
    return textwrap.wrap(text, width, subsequent_indent=indent, break_long_words=True,
                         break_on_hyphens=False) or [""]


def _spaced(event_json: str) -> str:
    """An event's compact JSON with a space after each separator, so that it wraps between
    fields rather than in the middle of one."""
    return event_json.replace('","', '", "').replace(',"', ', "').replace('":', '": ')


def render(outcome: Outcome, max_rows: int = 25, width: int = 120) -> str:
    """The readable summary table printed at the end of a run: one row per group (named by
    its scenario), the verdict wrapped in its column."""
    lines = []
    rows = outcome.verdicts[:max_rows]
    if rows:
        head = ("scenario", "topic/partition", "events", "ooo", "verdict")
        table = [head] + [
            (outcome.scenario(v["run"]), "-" if v["topic"] is None else f"{v['topic']}/{v['partition']}",
             str(v["total"]), str(v["out_of_order"]), summary_line(v))
            for v in rows
        ]
        widths = [max(len(r[i]) for r in table) for i in range(4)]
        lead = sum(widths) + 2 * 4
        room = max(40, width - lead)
        for r in table:
            first, *rest = _wrap(r[4], room)
            lines.append("  ".join(c.ljust(w) for c, w in zip(r[:4], widths, strict=True)) + "  " + first)
            lines.extend(" " * lead + more for more in rest)
        if len(outcome.verdicts) > max_rows or outcome.groups > len(rows):
            lines.append(f"... {outcome.groups - len(rows)} more groups (see verdicts under --out)")
        first = next((v for v in outcome.verdicts if v["status"] != "conforms"), None)
        if first:
            lines.append("")
            lines.extend(_wrap(f"first non-conforming step in {outcome.scenario(first['run'])} (run {first['run']}) "
                               f"{first['topic']}/{first['partition']}: {summary_line(first)}", width, "  "))
            if first.get("first_bad_file"):
                lines.append(f"  at {first['first_bad_file']}:{first['first_bad_line']} "
                             f"(node {first['first_bad_node']} seq {first['first_bad_seq']} {first['first_bad_kind']})")
            if first.get("property"):
                lines.append(f"  property violated: {property_words(first['property'])}")
            for b in first.get("before") or []:
                lines.extend(_wrap(f"before: {_spaced(b)}", width - 2, "    "))
            if first.get("observed"):
                lines.extend(_wrap(f"observed: {_spaced(first['observed'])}", width - 2, "    "))
            for s in (first.get("possible_states") or [])[:5]:
                lines.extend(_wrap(f"model allows: {s}", width - 2, "    "))
            if first.get("bound"):
                lines.append(f"  (internal steps searched up to bound {first['bound']})")
    malformed = sum(outcome.quarantined.values())
    lines.append("")
    lines.append(
        f"{outcome.files} files, {outcome.records} records: {outcome.events} events, {malformed} malformed"
        + (f" ({', '.join(f'{k} {v}' for k, v in outcome.quarantined.items())})" if malformed else "")
        + f", {outcome.out_of_order} out of order")
    lines.append(f"{outcome.groups} groups in {outcome.runs} runs: {outcome.conforming} conform, "
                 f"{outcome.violating} do not, {outcome.errors} judge errors"
                 + (f", {outcome.inconclusive} inconclusive" if outcome.inconclusive else "")
                 + f" -> exit {outcome.exit_code}")
    return "\n".join(lines)


def as_json(outcome: Outcome) -> dict[str, Any]:
    """``--json``: the counts and timings of ``summary.json`` (the same numbers) and, under
    ``verdicts``, each group's verdict kept on the driver, with its scenario."""
    verdicts = [{"scenario": outcome.scenario(v["run"]), **v} for v in outcome.verdicts]
    return {**outcome.as_dict(), "verdicts": verdicts}
