"""SCRAM-SHA-256 (RFC 5802, RFC 7677), as Kafka's SASL/SCRAM, on the ``scramp`` library.

The exchange rides the broker protocol as Kafka's does: one SaslHandshake naming the
mechanism, then SaslAuthenticate frames carrying the SCRAM messages::

    client-first  ->   <- server-first (salt, iterations, nonce)
    client-final (proof)  ->   <- server-final (the server's signature)

The client checks the server's signature too, so authentication is mutual: a listener that
does not know the cluster's secret cannot pass for a broker.  Without TLS the frames after
the exchange are not integrity-protected (Kafka's SASL_PLAINTEXT): docs/security.md says
what that leaves open.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Generator

from scramp import ScramClient, ScramException, ScramMechanism

from impl.node.auth.credentials import ClusterSecret, Credentials, Principal, valid_name

MECHANISM = "SCRAM-SHA-256"
ITERATIONS = 4096  # Kafka's default and RFC 7677's minimum
NEW_USERS_PER_S = 20.0  # PBKDF2 runs a broker allows itself for names it has not seen
_RESERVED = re.compile(r"operator|broker-\d{1,4}")  # never held back by that budget
_mechanism = ScramMechanism(MECHANISM)


class AuthenticationFailed(Exception):
    """The exchange failed: wrong password, unknown user, or a server that could not prove
    it knows the secret."""


def client_exchange(creds: Credentials) -> Generator[str, str, None]:
    """The client's side: yields each message to send, is sent each answer; returns once
    the server's signature is verified (AuthenticationFailed otherwise)."""
    try:
        client = ScramClient([MECHANISM], creds.user, creds.password)
        server_first = yield client.get_client_first()
        client.set_server_first(server_first)
        server_final = yield client.get_client_final()
        client.set_server_final(server_final)
    except ScramException as exc:
        raise AuthenticationFailed(f"SCRAM: {exc}") from None


class Verifier:
    """The broker's side: checks proofs against keys derived from the cluster secret
    (cached per user: one PBKDF2 per user, not per connection).

    Deriving a user's keys costs a PBKDF2 (about 3 ms), and the user name comes from an
    unauthenticated peer: a peer cycling through new names could keep the broker's loop
    busy.  So names not yet cached get a budget, ``NEW_USERS_PER_S`` a second (a token
    bucket); beyond it the exchange is refused and the peer may try again.  The operator
    and ``broker-N`` are never held back."""

    def __init__(self, secret: ClusterSecret, clock: Callable[[], float] = time.monotonic) -> None:
        self.secret = secret
        self._cache: dict[str, tuple[bytes, bytes, bytes, int]] = {}
        self._lock = threading.Lock()
        self._clock = clock
        self._tokens, self._refilled = NEW_USERS_PER_S, clock()

    def _may_derive(self, user: str) -> bool:
        if _RESERVED.fullmatch(user):
            return True
        now = self._clock()
        self._tokens = min(NEW_USERS_PER_S, self._tokens + (now - self._refilled) * NEW_USERS_PER_S)
        self._refilled = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True

    def _auth_info(self, user: str) -> tuple[bytes, bytes, bytes, int]:
        if not valid_name(user):
            raise ScramException("unknown user")
        with self._lock:
            info = self._cache.get(user)
            if info is None:
                if not self._may_derive(user):
                    raise ScramException("too many new users at once; try again")
                if len(self._cache) > 10_000:  # bounded: names are chosen by the peer
                    self._cache.clear()
                info = self._cache[user] = _mechanism.make_auth_info(
                    self.secret.password(user), ITERATIONS, self.secret.salt(user))
        return info

    def exchange(self) -> ServerExchange:
        return ServerExchange(self)


class ServerExchange:
    """One connection's exchange, step by step: :meth:`step` takes the client's message and
    returns the answer; :attr:`principal` is set once the proof checked."""

    def __init__(self, verifier: Verifier) -> None:
        self.users: list[str] = []

        def auth_fn(user: str) -> tuple[bytes, bytes, bytes, int]:
            self.users.append(user)
            return verifier._auth_info(user)

        self._server = _mechanism.make_server(auth_fn)
        self._step = 0
        self.principal: Principal | None = None

    def step(self, message: str) -> str:
        try:
            if self._step == 0:
                self._step = 1
                self._server.set_client_first(message)
                return str(self._server.get_server_first())
            if self._step == 1:
                self._step = 2
                self._server.set_client_final(message)
                self.principal = Principal(self.users[-1])
                return str(self._server.get_server_final())
        except ScramException as exc:
            self._step = 3
            raise AuthenticationFailed(str(exc)) from None
        raise AuthenticationFailed("the SCRAM exchange is over")
