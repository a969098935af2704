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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, make_acl, make_digest_acl

from impl.node.auth.credentials import ClusterSecret

ZK_USER = "epochal-cluster"


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
