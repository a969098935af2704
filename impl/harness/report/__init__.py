"""Self-contained HTML reports: what a run did, drawn as a space-time (Lamport) diagram.

One page per report, with inline SVG, CSS and JavaScript only -- no network access, no
external font or script -- so it opens from a CI artifact or an e-mail as it is.
"""

from impl.harness.report.model_run import ModelRun
from impl.harness.report.trace_run import TraceGroup
from impl.harness.report.write import (
    drive_run,
    result_run,
    trace_groups,
    write_conformance_report,
    write_drive_report,
    write_html_report,
)

__all__ = ["ModelRun", "TraceGroup", "drive_run", "result_run", "trace_groups", "write_conformance_report",
           "write_drive_report", "write_html_report"]
