"""The counterexample report in a real headless browser (Debian's ``chromium``; the README's
test command installs it): the page loads with no console message at all, its script runs
(the broken step is selected when the page opens), and a screenshot shows the diagram --
its arrows' blue, the crash and broken step's red -- not a blank page.

Where no chromium is installed the test skips and says why; it never passes without one."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from impl.harness.cli.main import main

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)
pytestmark = [pytest.mark.integration, pytest.mark.skipif(CHROMIUM is None, reason="no chromium on this machine (apt-get install chromium)")]

ARROW_BLUE = (11, 98, 196)  # --accent in impl/harness/report/page.py
BAD_RED = (198, 40, 40)  # --bad


def _chromium(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--disable-extensions", "--enable-logging=stderr", "--v=0", *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("report") / "cx.html"
    assert main(["check", "--config", "design", "--quiet", "--html", str(path)]) == 1
    return path


def test_the_page_loads_with_no_console_message_and_its_script_runs(report):
    done = _chromium("--dump-dom", report.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
    # the script selected the step where the property broke, and hid every other state
    assert done.stdout.count('class="step bad selected"') == 1
    assert done.stdout.count('<div class="state" data-state=') == done.stdout.count(" hidden=") + 1


def _near(rgb: tuple[int, int, int], target: tuple[int, int, int], tolerance: int = 30) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(rgb, target, strict=True))


def test_a_screenshot_shows_the_diagram(report, tmp_path):
    image = pytest.importorskip("PIL.Image", reason="Pillow (a dependency of matplotlib, in the dev extra)")
    shot = tmp_path / "cx.png"
    done = _chromium("--hide-scrollbars", "--window-size=1400,900", f"--screenshot={shot}", report.as_uri())
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    with image.open(shot) as png:
        rgb = png.convert("RGB")
        colors = rgb.getcolors(maxcolors=1 << 20) or []
    assert len(colors) > 100  # a page with text and lines, not a blank one
    assert sum(n for n, c in colors if _near(c, ARROW_BLUE)) > 200  # the message arrows and step dots
    assert sum(n for n, c in colors if _near(c, BAD_RED)) > 200  # crashes, the broken step, the verdict


def test_the_conformance_report_loads_with_no_console_message(tmp_path):
    from test_report import NONCONFORMING, _judged_groups

    from impl.harness.report import write_conformance_report

    verdicts, scenarios = _judged_groups()
    path = write_conformance_report(tmp_path / "report.html", [str(NONCONFORMING)], verdicts, scenarios, "counts")
    done = _chromium("--dump-dom", path.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    assert [line for line in done.stderr.splitlines() if ":CONSOLE" in line] == []
    failing = sum(v["status"] != "conforms" for v in verdicts)
    assert done.stdout.count('class="step bad selected"') == failing  # each drawn group opens on its divergence
