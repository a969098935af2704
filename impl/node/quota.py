"""The controller-mutation quota of seed 001 (KIP-599): a token bucket per principal.

Why a token bucket and not Kafka's older sampled ``Rate``: a single large burst (one request
creating 7 topics x 80 partitions) would hold a sampled average above the quota until the
sample expires (``S * W`` seconds), while the bucket lets the burst through and then charges
it back at rate ``R``.  The bucket may go negative, so a topic with more partitions than the
burst is still admitted once; the debt is the throttle time.

Algorithm (seed 001, "Throttling Algorithm"), with ``K`` tokens, ``T`` the last update::

    K = min(K + (now - T) * R, B)
    admit a request worth N mutations iff K >= 0, then K -= N
    otherwise reject with throttle_time_ms = -K / R * 1000

configured from the quota ``Q`` (mutations/s), samples ``S`` (default 11) and window ``W``
(default 1 s): ``R = Q`` and ``B = Q * S * W``.

Quota resolution follows Kafka's ``DefaultQuotaCallback`` precedence; the first match wins
(``<default>`` is a default entity)::

    1. user=U,         client-id=C            5. user=<default>, client-id=<default>
    2. user=U,         client-id=<default>    6. user=<default>
    3. user=U                                 7. client-id=C
    4. user=<default>, client-id=C            8. client-id=<default>

The bucket is shared by every principal the matching entry covers *by name*: a quota set
for ``user=U`` alone is one bucket for all of U's client ids; a default applies to each
principal separately (each user gets its own bucket under ``user=<default>``), as Kafka's
metric tags do.  No matching entry means no quota (unlimited).  Clocks are injectable, so
tests are deterministic.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

DEFAULT = "<default>"
DEFAULT_SAMPLES = 11
DEFAULT_WINDOW_S = 1.0
ANONYMOUS = "ANONYMOUS"
EPSILON = 1e-9  # refills are float sums: a K of -1e-12 is a K of 0

Clock = Callable[[], float]
# an entity: (user or None, client id or None); either may be DEFAULT
Entity = tuple[str | None, str | None]


class TokenBucket:
    """K tokens, refilled at ``rate`` per second up to ``burst``; K may go negative."""

    def __init__(self, rate: float, burst: float, now: float) -> None:
        if rate <= 0 or burst <= 0:
            raise ValueError(f"rate and burst must be positive, got {rate} and {burst}")
        self.rate, self.burst = float(rate), float(burst)
        self.tokens = float(burst)
        self.last = now

    @classmethod
    def from_quota(cls, quota: float, now: float, samples: int = DEFAULT_SAMPLES,
                   window_s: float = DEFAULT_WINDOW_S) -> TokenBucket:
        """Seed 001: R = Q, B = Q * S * W (reusing Kafka's existing quota settings)."""
        return cls(quota, quota * samples * window_s, now)

    def refill(self, now: float) -> float:
        """K = min(K + (now - T) * R, B); a clock going backwards adds nothing."""
        if now > self.last:
            self.tokens = min(self.tokens + (now - self.last) * self.rate, self.burst)
            self.last = now
        return self.tokens

    def throttle_ms(self, now: float) -> int:
        """How long until K is back at 0 (0 when K >= 0): -K / R, in milliseconds, rounded
        up so that a client waiting exactly this long finds K >= 0."""
        k = self.refill(now)
        return 0 if k >= -EPSILON else max(1, math.ceil(-k / self.rate * 1000 - 1e-6))

    def try_admit(self, n: int, now: float) -> int:
        """New clients: admit N mutations iff K >= 0 (then K -= N) and return 0; otherwise
        leave K alone and return the throttle time in ms."""
        if self.refill(now) < -EPSILON:
            return self.throttle_ms(now)
        self.tokens -= n
        return 0

    def record(self, n: int, now: float) -> int:
        """Old clients cannot be told "no": always admit, K -= N, and return the resulting
        throttle time (how long their connection is muted)."""
        self.refill(now)
        self.tokens -= n
        return self.throttle_ms(now)


@dataclass
class PrincipalMetrics:
    """Seed 001's per-principal metrics: ``rate`` (admitted mutations/s over the last
    ``S * W`` seconds), ``tokens`` (< 0 means throttled) and ``throttle-time`` (average
    throttle time in ms of the requests that were throttled)."""

    admitted: list[tuple[float, int]] = field(default_factory=list)  # (time, mutations)
    throttled: int = 0
    throttle_ms_total: int = 0


def resolution_order(user: str, client_id: str) -> list[tuple[Entity, Entity]]:
    """Kafka's precedence as (quota entity to look up, metric tags of the bucket)."""
    u, c, d = user, client_id, DEFAULT
    return [
        ((u, c), (u, c)), ((u, d), (u, c)), ((u, None), (u, None)),
        ((d, c), (u, c)), ((d, d), (u, c)), ((d, None), (u, None)),
        ((None, c), (None, c)), ((None, d), (None, c)),
    ]


class ControllerMutationQuotaManager:
    """Quotas per (user, client-id), (user), (client-id) and their defaults, a bucket per
    metric tag set, and the seed's metrics.  Runs only on the active controller."""

    def __init__(self, clock: Clock = time.monotonic, samples: int = DEFAULT_SAMPLES,
                 window_s: float = DEFAULT_WINDOW_S) -> None:
        self.clock, self.samples, self.window_s = clock, samples, window_s
        self.quotas: dict[Entity, float] = {}
        self.buckets: dict[Entity, TokenBucket] = {}
        self.metrics: dict[Entity, PrincipalMetrics] = {}

    # -- configuration ------------------------------------------------------------------
    def set_quota(self, entity: Entity, rate: float | None) -> None:
        """Set (or with None remove) the controller_mutation_rate of one entity; buckets
        whose quota changed start again from a full burst at the new rate."""
        quotas = dict(self.quotas)
        if rate is None:
            quotas.pop(entity, None)
        else:
            if rate <= 0:
                raise ValueError(f"controller_mutation_rate must be positive, got {rate}")
            quotas[entity] = float(rate)
        self.replace_all(quotas)

    def replace_all(self, quotas: dict[Entity, float]) -> None:
        """Load the whole configuration (from ZooKeeper); keep the buckets whose quota did
        not change, so an unrelated alteration does not hand everyone a fresh burst."""
        if quotas == self.quotas:
            return
        old = self.quotas
        self.quotas = dict(quotas)
        for tags in list(self.buckets):
            if self._resolve_for_tags(tags, old) != self._resolve_for_tags(tags, self.quotas):
                del self.buckets[tags]

    def _resolve_for_tags(self, tags: Entity, quotas: dict[Entity, float]) -> float | None:
        user, client = tags
        for entity, t in resolution_order(user or "", client or ""):
            if t == tags and entity in quotas:
                return quotas[entity]
        return None

    def resolve(self, user: str, client_id: str) -> tuple[Entity, float] | None:
        """(metric tags of the bucket, quota) of the first matching entry, or None."""
        for entity, tags in resolution_order(user, client_id):
            if entity in self.quotas:
                return tags, self.quotas[entity]
        return None

    # -- enforcement ----------------------------------------------------------------------
    def _bucket(self, tags: Entity, quota: float, now: float) -> TokenBucket:
        b = self.buckets.get(tags)
        if b is None or b.rate != quota:
            b = self.buckets[tags] = TokenBucket.from_quota(quota, now, self.samples, self.window_s)
        return b

    def check(self, user: str, client_id: str, mutations: int, strict: bool) -> int:
        """Charge ``mutations`` to the principal; returns the throttle time in ms.

        ``strict`` (new-version clients): 0 means admitted, > 0 means rejected (nothing
        charged).  Not strict (old clients): always admitted and charged; > 0 is how long
        the client is throttled.  Zero mutations (validate-only) never touch the bucket."""
        found = self.resolve(user, client_id)
        if found is None or mutations <= 0:
            return 0
        tags, quota = found
        now = self.clock()
        bucket = self._bucket(tags, quota, now)
        m = self.metrics.setdefault(tags, PrincipalMetrics())
        throttle = bucket.try_admit(mutations, now) if strict else bucket.record(mutations, now)
        if not strict or throttle == 0:
            m.admitted.append((now, mutations))
        if throttle > 0:
            m.throttled += 1
            m.throttle_ms_total += throttle
        return throttle

    def describe_metrics(self) -> dict[str, dict[str, float]]:
        """``{"user=U,client-id=C": {"rate", "tokens", "throttle-time"}}`` per bucket."""
        now = self.clock()
        horizon = self.samples * self.window_s
        out = {}
        for tags, m in self.metrics.items():
            m.admitted = [(t, n) for t, n in m.admitted if now - t <= horizon]
            bucket = self.buckets.get(tags)
            out[tag_name(tags)] = {
                "rate": sum(n for _, n in m.admitted) / horizon,
                "tokens": bucket.refill(now) if bucket else float("nan"),
                "throttle-time": m.throttle_ms_total / m.throttled if m.throttled else 0.0,
            }
        return out


def tag_name(entity: Entity) -> str:
    user, client = entity
    parts = []
    if user is not None:
        parts.append(f"user={user}")
    if client is not None:
        parts.append(f"client-id={client}")
    return ",".join(parts) or "(none)"


# -- ZooKeeper layout ---------------------------------------------------------------------
# /config/quotas/users/U, /config/quotas/users/U/clients/C, /config/quotas/clients/C, with
# "<default>" as the name of a default; each holds {"controller_mutation_rate": Q}.

def entity_path(root: str, entity: Entity) -> str:
    user, client = entity
    if user is not None and client is not None:
        return f"{root}/users/{user}/clients/{client}"
    if user is not None:
        return f"{root}/users/{user}"
    if client is not None:
        return f"{root}/clients/{client}"
    raise ValueError("a quota entity needs a user, a client id or both")


def validate_entity_name(name: str | None, what: str) -> None:
    """Names become znode path segments: no slashes, not empty, not '.' or '..'."""
    if name is None or name == DEFAULT:
        return
    if not name or "/" in name or name in (".", "..") or len(name) > 200:
        raise ValueError(f"invalid {what} {name!r}")
