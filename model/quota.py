"""The controller-mutation quota's token bucket (seed 001, KIP-599), as a pure reference rule.

The model checks the replication protocol and has no quota; this is the rule a port (and
``impl.node.quota``) is held to by the rule-level vectors (``model.export.vectors``).  Seed 001,
"Throttling Algorithm", with ``K`` tokens, ``T`` the time of the last update::

    K = min(K + (now - T) * R, B)
    a request worth N mutations is admitted iff K >= 0, then K = K - N
    the throttle time is -K / R ("The burst of 560 mutations brings the number of tokens
    to -60.  The throttle time is -(-60) / 5 = 12s")

configured from Kafka's existing quota settings: ``R = Q`` and ``B = Q * S * W`` (quota,
samples, window).  K may go negative, so one request larger than the burst is still
admitted once; the debt is the throttle time.  Seed 001's "Handling of old Clients": an old
client cannot be told no, so its request is always admitted and charged, and the throttle
time says how long its channel is muted.  "Handling of ValidateOnly": a request worth no
mutation does not touch the bucket.  A bucket starts full when its first mutation arrives
(``impl.node.quota`` creates it then), and a clock going backwards adds no tokens.

Arithmetic is exact (``Fraction``): the throttle time is ``ceil(-K / R * 1000)`` milliseconds,
rounded up so a client that waits exactly that long finds ``K >= 0``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction
from typing import NamedTuple


class QuotaRequest(NamedTuple):
    """One request: when it arrives (seconds), how many partition mutations it is worth, and
    whether its client is new (``strict``: can be rejected with THROTTLING_QUOTA_EXCEEDED)."""

    time_s: Fraction
    mutations: int
    strict: bool


class QuotaAnswer(NamedTuple):
    """What the controller answers: admitted or not, the throttle time in milliseconds, and
    the tokens left in the bucket (``None``: the request did not touch it)."""

    admitted: bool
    throttle_ms: int
    tokens: Fraction | None


def throttle_ms(tokens: Fraction, rate: Fraction) -> int:
    """-K / R in milliseconds, rounded up; 0 when K >= 0."""
    return 0 if tokens >= 0 else math.ceil(-tokens / rate * 1000)


def token_bucket(quota: Fraction, samples: int, window_s: Fraction,
                 requests: Sequence[QuotaRequest]) -> list[QuotaAnswer]:
    """Seed 001's bucket (R = Q, B = Q * S * W) answering ``requests`` in order."""
    rate, burst = Fraction(quota), Fraction(quota) * samples * Fraction(window_s)
    tokens: Fraction | None = None  # no bucket until the first mutation
    last = Fraction(0)
    answers = []
    for req in requests:
        if req.mutations <= 0:  # ValidateOnly: no load on the controller, no charge
            answers.append(QuotaAnswer(True, 0, None))
            continue
        now = Fraction(req.time_s)
        if tokens is None:
            tokens, last = burst, now
        elif now > last:
            tokens, last = min(tokens + (now - last) * rate, burst), now
        if req.strict and tokens < 0:  # new clients: rejected, nothing charged
            answers.append(QuotaAnswer(False, throttle_ms(tokens, rate), tokens))
            continue
        tokens -= req.mutations
        # a new client's admitted request is not throttled; an old client is muted
        answers.append(QuotaAnswer(True, 0 if req.strict else throttle_ms(tokens, rate), tokens))
    return answers
