"""A broker's side of authentication: what it loads at start, and one state per connection.

:class:`BrokerSecurity` is built once per broker process from its configuration: the
cluster secret (unless ``--insecure``), the SCRAM verifier, the keyring the broker's own
connections present (``broker-N``), its ZooKeeper ACL, the connection limiter and the
rate-limited log.  :class:`ConnectionSession` screens every frame of one connection
(:meth:`ConnectionSession.screen`): SASL frames are answered here; anything else before the
exchange succeeded is refused and the connection closed; afterwards each request goes
through :func:`impl.node.auth.rules.authorize`.  A refusal is answered with an error code and
logged (rate-limited), and the request is never handed to the broker's handlers.
"""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass
from typing import Any, Protocol

from impl.node.auth import credentials as creds
from impl.node.auth import tls
from impl.node.auth.connections import ConnectionLimiter, RateLimitedLog, Ticket
from impl.node.auth.credentials import ClusterSecret, Keyring, Kind, Principal
from impl.node.auth.rules import Refusal, authorize
from impl.node.auth.scram import MECHANISM, AuthenticationFailed, ServerExchange, Verifier
from impl.node.auth.zookeeper import ZkAcl
from impl.node.codes import PRE_AUTH_MAX_FRAME, ApiKey, ErrorCode

SASL_APIS = frozenset({ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})
FD_HEADROOM = 128  # file descriptors kept for logs, ZooKeeper and the broker's own connections


class SecurityConfig(Protocol):
    broker_id: int
    data_dir: Any
    insecure: bool
    tls: bool
    max_connections: int
    max_connections_per_ip: int
    connections_broker_reserve: int
    connections_max_idle_ms: int
    authentication_timeout_ms: int


@dataclass(frozen=True)
class Answer:
    """Answer the frame with this (and maybe close): it is not handed to the broker."""

    error: ErrorCode
    body: dict[str, Any]
    close: bool = False


def raise_fd_limit() -> int:
    """Raise the soft file-descriptor limit to the hard one; returns the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft


class BrokerSecurity:
    def __init__(self, config: SecurityConfig) -> None:
        self.insecure = bool(config.insecure)
        self.verifier: Verifier | None = None
        self.keyring: Keyring | None = None
        self.zk_acl: ZkAcl | None = None
        self.ssl = tls.server_context(config.data_dir) if config.tls else None
        client_tls = tls.client_context(config.data_dir) if config.tls else None
        if self.insecure and client_tls is not None:  # TLS without authentication
            self.keyring = Keyring(creds.broker_principal(config.broker_id), tls=client_tls)
        if not self.insecure:
            try:
                secret = ClusterSecret.load(config.data_dir)
            except FileNotFoundError:
                raise RuntimeError(
                    f"no cluster secret at {ClusterSecret.path(config.data_dir)} (the harness "
                    "generates it; run with --insecure true to run without authentication)"
                ) from None
            self.verifier = Verifier(secret)
            self.keyring = Keyring(creds.broker_principal(config.broker_id), secret, tls=client_tls)
            self.zk_acl = ZkAcl.from_secret(secret)
        soft = raise_fd_limit()
        cap = max(1, min(config.max_connections, soft - FD_HEADROOM))
        self.limiter = ConnectionLimiter(cap, min(cap, config.max_connections_per_ip),
                                         min(config.connections_broker_reserve, cap // 2))
        self.idle_timeout_s = config.connections_max_idle_ms / 1000
        self.auth_timeout_s = config.authentication_timeout_ms / 1000
        self.log = RateLimitedLog(f"broker {config.broker_id}")

    def server_kwargs(self) -> dict[str, Any]:
        """``asyncio.start_server``'s TLS arguments (none without TLS)."""
        if self.ssl is None:
            return {}
        return {"ssl": self.ssl, "ssl_handshake_timeout": self.auth_timeout_s}

    def install(self) -> None:
        """Every connection this process opens presents ``broker-N``'s credentials."""
        creds.set_default(self.keyring)

    def admit(self, peer: Any) -> ConnectionSession | None:
        """A session for a new connection, or None: refuse it (over the cap)."""
        host = str(peer[0]) if isinstance(peer, tuple) and peer else "?"
        ticket = self.limiter.admit(host)
        if ticket is None:
            self.log.log("connection_refused",
                         f"{self.limiter.refused} connections refused in all (cap "
                         f"{self.limiter.max_connections}, {self.limiter.max_per_address} per "
                         f"address; open {self.limiter.open}); latest from {host}")
            return None
        return ConnectionSession(self, ticket, peer)

    def release(self, session: ConnectionSession) -> None:
        self.limiter.release(session.ticket)

    def summary(self) -> None:
        """At stop: one line with every count the rate-limited lines held back."""
        counts = dict(self.log.counts)
        counts.pop("summary", None)
        if counts:
            self.log.log("summary", ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))


def session_principal(session: ConnectionSession) -> str | None:
    """The name a connection authenticated as (None: not authenticated, or --insecure)."""
    return None if session.principal is None else session.principal.name


class ConnectionSession:
    def __init__(self, security: BrokerSecurity, ticket: Ticket, peer: Any) -> None:
        self.security, self.ticket, self.peer = security, ticket, peer
        self.principal: Principal | None = None
        self._exchange: ServerExchange | None = None
        self.opened = time.monotonic()

    @property
    def authenticated(self) -> bool:
        return self.security.insecure or self.principal is not None

    def read_timeout(self) -> float:
        """How long the next frame may take: until authenticated, what is left of the
        authentication timeout (counted from the connection's start, so a peer cannot stay
        by sending a frame now and then); afterwards the idle limit."""
        if self.authenticated:
            return self.security.idle_timeout_s
        return max(0.0, self.opened + self.security.auth_timeout_s - time.monotonic())

    def timed_out(self) -> None:
        kind = "idle_timeout" if self.authenticated else "authentication_timeout"
        limit = self.security.idle_timeout_s if self.authenticated else self.security.auth_timeout_s
        self.security.log.log(kind, f"closed the connection from {self.peer}: "
                                    + (f"idle for {limit:g} s" if self.authenticated
                                       else f"not authenticated within {limit:g} s"))

    def frame_limit(self, max_frame: int) -> int:
        """The longest frame the next read may take, checked from its 4-byte length prefix
        before the body is read: until authenticated the SASL exchange's
        (:data:`~impl.node.codes.PRE_AUTH_MAX_FRAME`), so a connection that has not
        authenticated holds at most that much; afterwards the broker's ``max_frame``."""
        return max_frame if self.authenticated else min(max_frame, PRE_AUTH_MAX_FRAME)

    def screen_header(self, api_name: str, sasl: bool) -> Answer | None:
        """Until authenticated, a request that is not part of the SASL exchange (``sasl``)
        is refused on its header alone -- its body is never decoded -- and the connection
        closed.  None: read on."""
        if sasl or self.authenticated:
            return None
        reason = "authenticate first (SASL_HANDSHAKE, SCRAM-SHA-256)"
        self.security.log.log("request_refused", f"{api_name} from an unauthenticated peer at "
                                                 f"{self.peer} refused before its body was read "
                                                 f"(ILLEGAL_SASL_STATE): {reason}")
        return Answer(ErrorCode.ILLEGAL_SASL_STATE, {"message": reason}, close=True)

    def _refuse(self, api: ApiKey, error: ErrorCode, reason: str, close: bool) -> Answer:
        who = self.principal or "an unauthenticated peer"
        self.security.log.log("request_refused", f"{api.name} from {who} at {self.peer} refused "
                                                 f"({error.name}): {reason}")
        return Answer(error, {"message": reason}, close)

    def screen(self, api: ApiKey, body: dict[str, Any]) -> Answer | dict[str, Any]:
        """The body to hand to the broker, or the answer to send instead."""
        if api in SASL_APIS:
            return self._sasl(api, body)
        if self.security.insecure:
            return body
        if self.principal is None:
            return self._refuse(api, ErrorCode.ILLEGAL_SASL_STATE,
                                "authenticate first (SASL_HANDSHAKE, SCRAM-SHA-256)", close=True)
        verdict = authorize(self.principal, api, body)
        if isinstance(verdict, Refusal):
            return self._refuse(api, verdict.code, verdict.reason, close=False)
        return verdict

    def _sasl(self, api: ApiKey, body: dict[str, Any]) -> Answer:
        if self.security.insecure or self.security.verifier is None:
            return self._refuse(api, ErrorCode.ILLEGAL_SASL_STATE,
                                "this broker runs without authentication (--insecure)", close=True)
        if self.principal is not None:
            return self._refuse(api, ErrorCode.ILLEGAL_SASL_STATE, "already authenticated", True)
        if api == ApiKey.SASL_HANDSHAKE:
            if body.get("mechanism") != MECHANISM:
                return self._refuse(api, ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                    f"mechanism {body.get('mechanism')!r} (this broker: "
                                    f"{MECHANISM})", close=True)
            self._exchange = self.security.verifier.exchange()
            return Answer(ErrorCode.NONE, {"mechanisms": [MECHANISM]})
        if self._exchange is None:
            return self._refuse(api, ErrorCode.ILLEGAL_SASL_STATE, "SASL_HANDSHAKE first", True)
        raw = body.get("auth_bytes")
        try:
            if not isinstance(raw, bytes | str):
                raise AuthenticationFailed("auth_bytes missing")
            reply = self._exchange.step(raw.decode(errors="replace") if isinstance(raw, bytes) else raw)
        except AuthenticationFailed as exc:
            return self._refuse(api, ErrorCode.SASL_AUTHENTICATION_FAILED, str(exc), close=True)
        principal = self._exchange.principal
        if principal is None:
            return Answer(ErrorCode.NONE, {"auth_bytes": reply.encode()})
        if self.ticket.probation and principal.kind is Kind.CLIENT:
            # the last connections under the cap are kept for brokers (.connections)
            return self._refuse(api, ErrorCode.SASL_AUTHENTICATION_FAILED,
                                f"{principal}: connections are at the cap "
                                f"({self.security.limiter.open}); the rest are kept for brokers",
                                close=True)
        self.principal = principal
        return Answer(ErrorCode.NONE, {"auth_bytes": reply.encode(), "principal": principal.name})
