"""Where the judge's C can be tested: a skip for machines without a compiler or headers."""

from __future__ import annotations

import pytest


def skip_unless_rows_written(without: str) -> None:
    """Skip only where there is no C compiler or no interpreter headers (``without``: what
    the test's side does then); a library that fails to build fails the test."""
    import conformance.judge.compiled_batch as compiled_batch
    from properties.checkers.native import NoCompiler

    try:
        compiled_batch._entry()
    except NoCompiler as e:
        pytest.skip(f"no C compiler: {without} ({e})")
    if not compiled_batch.rows_written():
        pytest.skip(f"no C headers for this interpreter: {without}")
