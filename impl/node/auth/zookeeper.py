"""The cluster's ZooKeeper sign-in and ACLs: SASL DIGEST-MD5, as Kafka's ``zookeeper.set.acl``.

**Sign-in.**  The embedded ZooKeeper of a cluster with a secret accepts a session only once
it has authenticated by SASL DIGEST-MD5 against the server's own user list: a JAAS file
(:func:`server_jaas`, mode 0600 in the ZooKeeper's data directory) that names one user,
``epochal-cluster``, with a password derived from the cluster secret (:mod:`.credentials`).
``enforce.auth`` with the ``sasl`` scheme (:class:`ZkServerLimits`) answers any request of a
session that has not -- a read, a watch, a ping -- by closing it, and a SASL exchange with a
wrong password ends the session.  Unlike ZooKeeper's ``digest`` scheme, which accepts any
``name:password`` at sign-in and checks passwords only against ACLs, this checks the
password at the gate: a client without the cluster secret cannot open a session at all, so
it can neither read nor set a watch.  Every client of the cluster -- brokers and so the
controller, the harness, the CLI, drive, chaos, the session-expiry fault, real Kafka brokers
(impl.harness.kafka) -- signs in so (kazoo's ``sasl_options``, with ``pure-sasl``).

**ACLs.**  Every znode the cluster writes is created with two entries: ``world:anyone`` READ
(a signed-in client may read, as Kafka allows) and ``sasl:epochal-cluster`` ALL.  The
cluster's root -- its chroot, or ``/`` -- gets the same ACL (:func:`secure_root`), so no
other identity an ensemble admits (an ensemble shared with other users) can delete
``/controller`` or ``/controller_epoch`` (deleting needs DELETE on the parent) or create
them first under its own ACL.  The admin paths (``/admin/...``, ``/config/quotas``) are
written only by the controller, on behalf of admin requests whose principal it
authenticated, so the same identity covers them.

**Insecure clusters** (no secret) run their ZooKeeper as before: ``enforce.auth`` with the
``digest`` scheme, which any ``name:password`` passes; their clients sign in as
:data:`GUEST` and write znodes without ACLs.  Against a client that signs in with made-up
digest credentials only the bounds hold there (docs/security.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, Id, Permissions, make_acl

from impl.node.auth.credentials import ClusterSecret

ZK_USER = "epochal-cluster"
# the sign-in of a client of an insecure cluster's ZooKeeper (no secret): it passes the digest
# gate; that ZooKeeper checks no password
GUEST = ("digest", "epochal-guest:epochal-guest")
SASL_MECHANISM = "DIGEST-MD5"


def server_jaas(password: str) -> str:
    """The ZooKeeper server's JAAS file: the one user it accepts over SASL, and its password."""
    return ("Server {\n  org.apache.zookeeper.server.auth.DigestLoginModule required\n"
            f'  user_{ZK_USER}="{password}";\n}};\n')


def write_server_jaas(path: Path, secret: ClusterSecret) -> Path:
    """Write :func:`server_jaas` for ``secret`` to ``path``, readable by its owner only
    (created 0600: the password is never in a file another user can read)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(server_jaas(secret.zk_password()))
    os.chmod(path, 0o600)  # the file may have existed with other bits
    return path


@dataclass(frozen=True)
class ZkServerLimits:
    """The embedded ZooKeeper's gate and bounds (docs/security.md, section 4).

    ``enforce.auth``: a session must sign in before any other request -- by SASL against the
    server's JAAS user list where the cluster has a secret (:func:`server_jaas`), else by any
    digest.  ``maxClientCnxns`` bounds the connections from one address -- every process on
    this host shares 127.0.0.1, so it leaves room for many clusters' brokers, harnesses and
    CLIs.  ``jute.maxbuffer`` bounds one request (and so one path a watch is kept for):
    512 KiB, half ZooKeeper's default and far above the largest znode or transaction the
    cluster writes (a 1,000-partition topic's assignment is about 15 KB).  The heap holds the
    cluster's znodes and sessions many times over."""

    max_client_cnxns: int = 256
    jute_maxbuffer: int = 512 * 1024
    heap_mb: int = 256

    def jvm_options(self, jaas: Path | None) -> list[str]:
        """The server's options; ``jaas``: the SASL user list (None: an insecure cluster's)."""
        gate = ([f"-Djava.security.auth.login.config={jaas}",
                 "-Dzookeeper.authProvider.sasl="
                 "org.apache.zookeeper.server.auth.SASLAuthenticationProvider",
                 "-Dzookeeper.enforce.auth.schemes=sasl"] if jaas is not None
                else ["-Dzookeeper.enforce.auth.schemes=digest"])
        return [f"-Xmx{self.heap_mb}m", "-Dzookeeper.enforce.auth.enabled=true", *gate,
                f"-Djute.maxbuffer={self.jute_maxbuffer}"]


SERVER_LIMITS = ZkServerLimits()


@dataclass(frozen=True)
class ZkAcl:
    """What a ZooKeeper client of the cluster signs in with and writes its znodes with."""

    password: str
    default_acl: tuple[ACL, ...]

    @classmethod
    def from_secret(cls, secret: ClusterSecret) -> ZkAcl:
        return cls(password=secret.zk_password(),
                   default_acl=(ACL(Permissions.ALL, Id("sasl", ZK_USER)),
                                make_acl("world", "anyone", read=True)))

    def __repr__(self) -> str:  # never print a password
        return "ZkAcl(sasl:epochal-cluster)"

    def client_kwargs(self) -> dict[str, Any]:
        """KazooClient's arguments: the SASL sign-in; every create (transactions included)
        uses default_acl."""
        return {"sasl_options": {"mechanism": SASL_MECHANISM, "username": ZK_USER,
                                 "password": self.password},
                "default_acl": list(self.default_acl)}


def client_kwargs(acl: ZkAcl | None) -> dict[str, Any]:
    """A KazooClient's sign-in: the cluster's where ``acl`` is given, else (an insecure
    cluster's ZooKeeper) :data:`GUEST`."""
    return acl.client_kwargs() if acl is not None else {"auth_data": [GUEST]}


def acl_of(data_dir: str | os.PathLike[str]) -> ZkAcl | None:
    """The ZooKeeper sign-in of the cluster in ``data_dir``: from its secret, None if it
    has none (a cluster run insecure)."""
    try:
        return ZkAcl.from_secret(ClusterSecret.load(data_dir))
    except FileNotFoundError:
        return None


def secure_root(zk: Any, acl: ZkAcl) -> None:
    """Give the cluster's root (``/`` of this client: the chroot if there is one) the
    cluster's ACL, if it does not have it yet (idempotent; ZooKeeper allows the first
    setter because a new node's ACL is ``world:anyone`` ALL)."""
    current, _ = zk.get_acls("/")
    if sorted(map(repr, current)) != sorted(map(repr, acl.default_acl)):
        try:
            zk.set_acls("/", list(acl.default_acl))
        except NoAuthError:
            raise RuntimeError("the ZooKeeper root (chroot) is another identity's: its ACL "
                               "names another user (give this cluster its own chroot)") from None
