"""The cluster's ZooKeeper ACLs: digest authentication, as Kafka's ``zookeeper.set.acl``.

Every znode the cluster writes is created with two entries: ``world:anyone`` READ (anyone
may read, as Kafka allows: the metadata is not secret) and ``digest:epochal-cluster:<hash>``
ALL, the identity every broker -- and so the controller -- and the operator's harness sign in
with.  The password is derived from the cluster secret (:mod:`.credentials`); kazoo's
``make_digest_acl`` computes ZooKeeper's SHA-1 digest of it (ZooKeeper's own scheme, not ours).

The cluster's root -- its chroot, or ``/`` -- gets the same ACL (:func:`secure_root`), so
another client can neither delete ``/controller`` or ``/controller_epoch`` (deleting needs
DELETE on the parent) nor create them first under its own ACL.  The admin paths
(``/admin/...``, ``/config/quotas``) are written only by the controller, on behalf of admin
requests whose principal it authenticated, so the same identity covers them.

The server itself is closed to clients that have not signed in and bounded
(:data:`SERVER_LIMITS`): ZooKeeper's ``enforce.auth`` answers any request of a session that
has not authenticated with a listed scheme -- a read, a watch, a ping -- by closing it.
Every Epochal client signs in: as the cluster where it holds the secret, else as
:data:`GUEST`, which the cluster's ACLs grant nothing beyond ``world:anyone`` READ.
ZooKeeper's digest scheme accepts any ``name:password`` at sign-in (it checks passwords only
against ACLs), so the gate keeps out clients that do not sign in at all; against one that
signs in with made-up credentials the bounds are what hold (docs/security.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, make_acl, make_digest_acl

from impl.node.auth.credentials import ClusterSecret

ZK_USER = "epochal-cluster"
# the sign-in of a client without the cluster secret: it passes ZooKeeper's enforce.auth gate
# and names an identity no ACL grants anything
GUEST = ("digest", "epochal-guest:epochal-guest")


@dataclass(frozen=True)
class ZkServerLimits:
    """The embedded ZooKeeper's bounds (docs/security.md, section 4).

    ``enforce.auth`` with the digest scheme: a session must sign in before any other request.
    ``maxClientCnxns`` bounds the connections from one address -- every process on this host
    shares 127.0.0.1, so it leaves room for many clusters' brokers, harnesses and CLIs.
    ``jute.maxbuffer`` bounds one request (and so one path a watch is kept for): 512 KiB, half
    ZooKeeper's default and far above the largest znode or transaction the cluster writes (a
    1,000-partition topic's assignment is about 15 KB).  The heap holds the cluster's znodes
    and sessions many times over."""

    enforce_auth_schemes: tuple[str, ...] = ("digest",)
    max_client_cnxns: int = 256
    jute_maxbuffer: int = 512 * 1024
    heap_mb: int = 256

    def jvm_options(self) -> list[str]:
        return [f"-Xmx{self.heap_mb}m",
                "-Dzookeeper.enforce.auth.enabled=true",
                f"-Dzookeeper.enforce.auth.schemes={','.join(self.enforce_auth_schemes)}",
                f"-Djute.maxbuffer={self.jute_maxbuffer}"]


SERVER_LIMITS = ZkServerLimits()


@dataclass(frozen=True)
class ZkAcl:
    """What a ZooKeeper client of the cluster signs in with and writes its znodes with."""

    auth_data: tuple[tuple[str, str], ...]
    default_acl: tuple[ACL, ...]

    @classmethod
    def from_secret(cls, secret: ClusterSecret) -> ZkAcl:
        password = secret.zk_password()
        return cls(auth_data=(("digest", f"{ZK_USER}:{password}"),),
                   default_acl=(make_digest_acl(ZK_USER, password, all=True),
                                make_acl("world", "anyone", read=True)))

    def client_kwargs(self) -> dict[str, Any]:
        """KazooClient's arguments: every create (transactions included) uses default_acl."""
        return {"auth_data": list(self.auth_data), "default_acl": list(self.default_acl)}


def client_kwargs(acl: ZkAcl | None) -> dict[str, Any]:
    """A KazooClient's sign-in: the cluster's where ``acl`` is given, else :data:`GUEST`."""
    return acl.client_kwargs() if acl is not None else {"auth_data": [GUEST]}


def secure_root(zk: Any, acl: ZkAcl) -> None:
    """Give the cluster's root (``/`` of this client: the chroot if there is one) the
    cluster's ACL, if it does not have it yet (idempotent; ZooKeeper allows the first
    setter because a new node's ACL is ``world:anyone`` ALL)."""
    current, _ = zk.get_acls("/")
    if sorted(map(repr, current)) != sorted(map(repr, acl.default_acl)):
        try:
            zk.set_acls("/", list(acl.default_acl))
        except NoAuthError:
            raise RuntimeError("the ZooKeeper root (chroot) is another cluster's: its ACL "
                               "names another secret (give this cluster its own chroot)") from None
