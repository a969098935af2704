"""The judge's step taken by the compiled search's rules (``properties.checkers.native_step``).

``judge(..., compiled=True)`` searches each event's steps as the plain judge does -- the same
candidates, internal steps, views and properties, in the same order -- but computes each
step with the C functions the native search's successor function calls, instead of the
Python model's.  The verdicts are the same (``tests/conformance/test_compiled_step.py``
holds the two judges to it, and every step of a corpus to the model's); a configuration the
compiled step cannot judge is stepped by the Python model, whose answers it gives anyway.
"""

from __future__ import annotations

import functools

from conformance.judge.search import Stepper
from model.config import Config
from model.registry import apply
from properties.checkers.native import NativeUnavailable
from properties.checkers.native_step import CompiledStep, step_unsupported


@functools.cache
def compiled_step() -> CompiledStep:
    """The process's compiled step (one library, one set of buffers)."""
    return CompiledStep()


def stepper(cfg: Config) -> Stepper:
    """The compiled step for ``cfg``, or the Python model's where it cannot judge ``cfg``
    (``step_unsupported``) or cannot be built here (no C compiler)."""
    if step_unsupported(cfg) is not None:
        return apply
    try:
        return compiled_step()
    except NativeUnavailable:
        return apply
