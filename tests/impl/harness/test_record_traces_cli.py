"""``epochal record-traces``: an unusable output directory is one line and exit 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def test_unwritable_output_directory_is_one_clear_line_and_exit_2():
    p = subprocess.run([sys.executable, "-m", "impl.harness.cli.main", "record-traces", "--out", "/proc/epochal-cannot-write"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr
    assert p.stderr.strip().startswith("epochal record-traces: error: could not record traces")
