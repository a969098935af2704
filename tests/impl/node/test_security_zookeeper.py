"""ZooKeeper open only to the cluster: SASL sign-in against the server's own user list
(docs/security.md, 4).

An anonymous process once ran the embedded ZooKeeper out of memory with tens of thousands
of watches on long paths; the cluster could then neither fail over nor create topics.  A
gate that required any sign-in was not enough: ZooKeeper's digest scheme accepts any
``name:password``.  Here a stranger speaks ZooKeeper's protocol on a raw socket -- the
connect request, a digest sign-in with made-up credentials or none, then one request -- and
every request, a read, a write or a watch, is answered ``SESSIONCLOSEDREQUIRESASLAUTH`` and
the connection closed; a SASL sign-in with a wrong password is refused too.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

import pytest
from impl_testing import wait_until, zk_session_reads
from kazoo.protocol.serialization import Auth, Connect, Create, Exists, GetData
from kazoo.security import OPEN_ACL_UNSAFE

from impl.node import zk as zkl
from impl.node.auth.zookeeper import SERVER_LIMITS
from impl.node.client import Admin
from impl.node.layout import ZooKeeperDir

pytestmark = pytest.mark.integration

SESSION_CLOSED_REQUIRE_AUTH = -124  # ZooKeeper's KeeperException.Code.SESSIONCLOSEDREQUIRESASLAUTH
AUTH_XID = -4  # the xid of ZooKeeper's auth packet
MADE_UP = Auth(0, "digest", "epochal-cluster:a-guess")  # the cluster's name, a made-up password


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _read_frame(s: socket.socket) -> bytes | None:
    """One length-prefixed frame, or None if the server closed the connection first."""
    head = _read_exactly(s, 4)
    if head is None:
        return None
    return _read_exactly(s, struct.unpack(">i", head)[0])


def _read_exactly(s: socket.socket, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def _connect(s: socket.socket, sign_in: Auth | None) -> bool:
    """Open a session on ``s`` and, with ``sign_in``, add that auth (ZooKeeper answers the
    digest scheme's with success whatever the password): whether the session opened."""
    s.sendall(_frame(bytes(Connect(0, 0, 4000, 0, b"\x00" * 16, False).serialize())))
    if _read_frame(s) is None:
        return False
    if sign_in is not None:
        s.sendall(_frame(struct.pack(">ii", AUTH_XID, Auth.type) + bytes(sign_in.serialize())))
        reply = _read_frame(s)
        if reply is None or struct.unpack(">iqi", reply[:16])[2] != 0:
            return False
    return True


def _stranger_request(hosts: str, request: Any, sign_in: Auth | None) -> tuple[int | None, bool]:
    """Open a session, sign in with ``sign_in`` (None: not at all), send ``request``: (its
    error code, or None if no answer came, and whether the server then closed the connection)."""
    host, port = hosts.split("/", 1)[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5.0) as s:
        if not _connect(s, sign_in):
            return None, True
        s.sendall(_frame(struct.pack(">ii", 1, request.type) + bytes(request.serialize())))
        reply = _read_frame(s)
        error = struct.unpack(">iqi", reply[:16])[2] if reply is not None else None
        try:
            closed = _read_frame(s) is None
        except OSError:
            closed = True
        return error, closed


def _mntr(zookeeper: zkl.EmbeddedZooKeeper) -> dict[str, str]:
    text = zkl.four_letter_word(zookeeper.host, zookeeper.port, "mntr")
    return dict(line.split("\t", 1) for line in text.splitlines() if "\t" in line)


def _controller(zk: Any) -> tuple[int, int]:
    return int(json.loads(zk.get(zkl.CONTROLLER)[0])["brokerid"]), int(zk.get(zkl.CONTROLLER_EPOCH)[0])


@pytest.mark.parametrize("sign_in", [None, MADE_UP], ids=["anonymous", "made-up-digest"])
def test_a_stranger_can_neither_read_nor_write_nor_watch(zookeeper: zkl.EmbeddedZooKeeper,
                                                         sign_in: Auth | None) -> None:
    watches_before = int(_mntr(zookeeper)["zk_watch_count"])
    for request in (GetData("/", None), Exists("/nowhere", True), GetData("/", True),
                    Create("/squatter", b"x", OPEN_ACL_UNSAFE, 0)):
        assert _stranger_request(zookeeper.hosts, request, sign_in) == (SESSION_CLOSED_REQUIRE_AUTH, True)
    signed_in = zkl.connect(zookeeper.hosts, acl=zookeeper.acl)
    try:
        assert signed_in.exists("/squatter") is None
    finally:
        signed_in.stop()
        signed_in.close()
    assert int(_mntr(zookeeper)["zk_watch_count"]) == watches_before


# kazoo's connection thread ends a refused SASL exchange by raising
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_sasl_sign_in_with_a_wrong_password_is_refused(zookeeper: zkl.EmbeddedZooKeeper) -> None:
    """The server checks the password against its JAAS user list at sign-in: the cluster's
    name with a made-up password opens no session; the cluster's own password does.  The
    user list is readable by its owner only."""
    assert zookeeper.acl is not None
    assert ZooKeeperDir(zookeeper.data_dir).jaas.stat().st_mode & 0o777 == 0o600
    right = zookeeper.acl.client_kwargs()["sasl_options"]
    assert not zk_session_reads(zookeeper.hosts, sasl_options={**right, "password": "a-guess"})
    assert zk_session_reads(zookeeper.hosts, sasl_options=right)


def test_a_flood_of_strangers_watches_leaves_zookeeper_serving_and_failover_working(
        make_cluster: Any, zookeeper: zkl.EmbeddedZooKeeper) -> None:
    """2,000 watch requests on 64 KiB paths, 50 connections at a time, each after a digest
    sign-in with made-up credentials (which ZooKeeper's digest scheme accepts): each is
    refused, none is kept, and the controller's death is still followed by a new one."""
    c = make_cluster(3)
    zk = c.zk_client()
    holder, epoch = _controller(zk)
    long_path = "/" + "w" * (64 * 1024)
    assert len(long_path) < SERVER_LIMITS.jute_maxbuffer
    refused = 0
    for _ in range(40):
        batch = [socket.create_connection((zookeeper.host, zookeeper.port), timeout=5.0) for _ in range(50)]
        try:
            for s in batch:
                if not _connect(s, MADE_UP):
                    continue
                s.sendall(_frame(struct.pack(">ii", 1, Exists.type) + bytes(Exists(long_path, True).serialize())))
            for s in batch:
                try:
                    reply = _read_frame(s)
                except OSError:
                    reply = None
                refused += reply is None or struct.unpack(">iqi", reply[:16])[2] == SESSION_CLOSED_REQUIRE_AUTH
        finally:
            for s in batch:
                s.close()
    assert refused == 2000
    assert int(_mntr(zookeeper)["zk_watch_count"]) < 100  # the cluster's own, no flood's
    c.kill(holder)
    new_holder, new_epoch = wait_until(lambda: _try_controller(zk, holder), 20.0, "a new controller")
    assert new_holder != holder and new_epoch > epoch
    with Admin(c.bootstrap) as admin:
        admin.create_topic("after-the-flood", assignment={0: [b for b in range(3) if b != holder]})
    zk.stop()
    zk.close()


def _try_controller(zk: Any, old: int) -> tuple[int, int] | None:
    try:
        holder, epoch = _controller(zk)
    except Exception:  # noqa: BLE001 - /controller is absent between the death and the election
        return None
    return (holder, epoch) if holder != old else None
