"""The fault layer of the RPC transport: network partitions and slow links between brokers.

A broker's *outgoing* connections -- its replica fetchers' connections to leaders and the
controller's channels to every broker -- consult this module before they connect and before
every request they send.  The faults themselves live in a small JSON file in the cluster's
data dir (``<data-dir>/faults.json``) that a harness (``epochal chaos``) rewrites while the
cluster runs; every broker process re-reads it whenever it changes, so a fault takes effect
at the next request, on connections already open as well as new ones:

* a *partition* between brokers A and B refuses every request A sends to B and B sends to
  A (``ConnectionRefusedError``, which the fetcher and the controller channel already treat
  as an unreachable peer: they close the connection, back off and retry);
* a *slow link* from A to B delays every request A sends to B by a number of seconds (a
  slow follower: its fetches reach the leader late, so it lags and may leave the ISR).

Clients (producers, consumers, admin tools) are never affected: the partition is between
two brokers, as in seed 000's ISR discussion, and the harness itself is outside the cluster.
Connections are named by address, so the file also carries each broker's endpoint.

A second fault lives here because it needs the broker's cooperation too: ZooKeeper session
expiry.  ZooKeeper expires a session when any client holding its id and password closes
it (field notes), so each broker publishes its session's credentials in its directory when
it registers, and :func:`expire_session` uses them.

A third, disk faults (a full or failing disk mid-append), is at the end of the module.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from impl.node.layout import DataDir, write_atomic


@dataclass(frozen=True)
class FaultPlan:
    """The faults in force: which links are cut and which are slow."""

    endpoints: dict[int, tuple[str, int]] = field(default_factory=dict)
    partitions: frozenset[frozenset[int]] = frozenset()
    delays: dict[tuple[int, int], float] = field(default_factory=dict)

    def blocked(self, src: int, dst: int) -> bool:
        """A partition cuts a link in both directions."""
        return frozenset((src, dst)) in self.partitions

    def delay(self, src: int, dst: int) -> float:
        return self.delays.get((src, dst), 0.0)

    def broker_at(self, host: str, port: int) -> int | None:
        for b, (h, p) in self.endpoints.items():
            if p == port and h == host:
                return b
        return None

    def with_partition(self, a: int, b: int) -> FaultPlan:
        return FaultPlan(self.endpoints, self.partitions | {frozenset((a, b))}, self.delays)

    def without_partition(self, a: int, b: int) -> FaultPlan:
        return FaultPlan(self.endpoints, self.partitions - {frozenset((a, b))}, self.delays)

    def with_delay(self, src: int, dst: int, seconds: float) -> FaultPlan:
        return FaultPlan(self.endpoints, self.partitions, {**self.delays, (src, dst): seconds})

    def without_delay(self, src: int, dst: int) -> FaultPlan:
        return FaultPlan(self.endpoints, self.partitions,
                         {k: v for k, v in self.delays.items() if k != (src, dst)})

    def healed(self) -> FaultPlan:
        """Every link whole and fast again (the endpoints stay known)."""
        return FaultPlan(self.endpoints)

    def to_json(self) -> str:
        return json.dumps({
            "endpoints": {str(b): [h, p] for b, (h, p) in sorted(self.endpoints.items())},
            "partitions": sorted(sorted(link) for link in self.partitions),
            "delays": [[s, d, secs] for (s, d), secs in sorted(self.delays.items())],
        })

    @staticmethod
    def from_json(text: str) -> FaultPlan:
        d = json.loads(text)
        return FaultPlan(
            {int(b): (str(h), int(p)) for b, (h, p) in d.get("endpoints", {}).items()},
            frozenset(frozenset(int(x) for x in link) for link in d.get("partitions", [])),
            {(int(s), int(t)): float(secs) for s, t, secs in d.get("delays", [])})


def faults_path(data_dir: str | os.PathLike[str]) -> Path:
    return DataDir.of(data_dir).fault_plan


def write_plan(data_dir: str | os.PathLike[str], plan: FaultPlan) -> None:
    """Write-then-rename, so a broker reads the old plan or the new one, never half of one."""
    path = faults_path(data_dir)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(plan.to_json())
    os.replace(tmp, path)


class FaultLayer:
    """One broker's view of the plan, re-read only when the file changed (one ``stat`` per
    request otherwise: fetch requests are frequent and must stay cheap)."""

    def __init__(self, path: Path, me: int) -> None:
        self.path, self.me = path, me
        self._stamp: tuple[int, int, int] | None = None
        self._plan = FaultPlan()

    def plan(self) -> FaultPlan:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._stamp, self._plan = None, FaultPlan()
            return self._plan
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        if stamp != self._stamp:
            try:
                self._plan = FaultPlan.from_json(self.path.read_text())
                self._stamp = stamp
            except (OSError, ValueError, KeyError, TypeError):
                pass  # replaced while we read it: keep the previous plan, re-read next time
        return self._plan

    def gate(self, host: str, port: int) -> float:
        """Raise ConnectionRefusedError if our link to ``host:port`` is cut; else the delay
        (seconds) our requests to it must suffer."""
        plan = self.plan()
        dst = plan.broker_at(host, port)
        if dst is None or dst == self.me:
            return 0.0
        if plan.blocked(self.me, dst):
            raise ConnectionRefusedError(f"fault injected: link {self.me}<->{dst} partitioned")
        return plan.delay(self.me, dst)


_layer: FaultLayer | None = None


def install(data_dir: str | os.PathLike[str], broker_id: int) -> None:
    """Make this process's outgoing broker connections obey ``<data_dir>/faults.json``
    (called once by a broker process; clients and harnesses never install it)."""
    global _layer
    _layer = FaultLayer(faults_path(data_dir), broker_id)
    install_disk_faults(data_dir, broker_id)


def gate(host: str, port: int) -> float:
    return _layer.gate(host, port) if _layer is not None else 0.0


def before_request(host: str, port: int) -> None:
    """Blocking connections (the controller's channels): refuse or delay one request."""
    delay = gate(host, port)
    if delay > 0:
        time.sleep(delay)


async def before_request_async(host: str, port: int) -> None:
    """Asyncio connections (replica fetchers): refuse or delay one request."""
    delay = gate(host, port)
    if delay > 0:
        await asyncio.sleep(delay)


# -- ZooKeeper session expiry ------------------------------------------------------------------

def session_path(data_dir: str | os.PathLike[str], broker: int) -> Path:
    return DataDir.of(data_dir).broker(broker).zk_session


def publish_session(data_dir: str | os.PathLike[str], broker: int, client_id: Any) -> None:
    """Record the broker's current ZooKeeper session (id, password) for :func:`expire_session`.
    Best effort: a broker must not fail to register because of a harness convenience."""
    try:
        session_id, password = client_id
        write_atomic(session_path(data_dir, broker),
                     json.dumps({"session_id": int(session_id), "password": bytes(password).hex()}))
    except (OSError, TypeError, ValueError):
        pass


def read_session(data_dir: str | os.PathLike[str], broker: int) -> tuple[int, bytes]:
    d = json.loads(session_path(data_dir, broker).read_text())
    return int(d["session_id"]), bytes.fromhex(d["password"])


def expire_session(zookeeper: str, data_dir: str | os.PathLike[str], broker: int,
                   timeout: float = 10.0) -> int:
    """Expire broker ``broker``'s ZooKeeper session now: attach a second client to the same
    session and close it (ZooKeeper then ends the session for both).  Returns the session id."""
    from kazoo.client import KazooClient

    from impl.node.auth.zookeeper import acl_of, client_kwargs

    session_id, password = read_session(data_dir, broker)
    # any request of a session that has not signed in closes it, and a secure cluster's
    # ZooKeeper admits only the cluster (impl.node.auth.zookeeper)
    zk = KazooClient(hosts=zookeeper, client_id=(session_id, password), timeout=timeout,
                     **client_kwargs(acl_of(data_dir)))
    zk.start(timeout=timeout)
    try:
        zk.stop()
    finally:
        zk.close()
    return session_id


# -- disk faults: a full disk or a failing one, mid-append ----------------------------------
#
# A harness arms a fault with :func:`arm_disk_fault`; the broker's next log append (leader
# or follower, any partition) writes the first ``after_bytes`` bytes of its record and then
# fails with ``OSError(errno)`` -- what ``write(2)`` does when the disk fills up mid-record
# (ENOSPC) or fails (EIO).  The fault fires once: the file is consumed by the append that
# takes it.  Outside a broker process (no :func:`install`) nothing is ever injected.

def disk_fault_path(data_dir: str | os.PathLike[str], broker: int) -> Path:
    return DataDir.of(data_dir).broker(broker).disk_fault


def arm_disk_fault(data_dir: str | os.PathLike[str], broker: int, error: int = 28,
                   after_bytes: int = 0) -> None:
    """Make broker ``broker``'s next append fail with ``OSError(error)`` (28: ENOSPC) after
    writing ``after_bytes`` bytes of the record (write-then-rename)."""
    write_atomic(disk_fault_path(data_dir, broker),
                 json.dumps({"errno": int(error), "after_bytes": int(after_bytes)}))


_disk_fault: Path | None = None


def install_disk_faults(data_dir: str | os.PathLike[str], broker_id: int) -> None:
    """Let a harness inject disk faults into this broker process (see :func:`arm_disk_fault`)."""
    global _disk_fault
    _disk_fault = disk_fault_path(data_dir, broker_id)


def disk_fault() -> tuple[int, int] | None:
    """The armed disk fault, consumed: (errno, after_bytes), or None (one ``stat``)."""
    if _disk_fault is None or not os.path.exists(_disk_fault):
        return None
    try:
        d = json.loads(_disk_fault.read_text())
        _disk_fault.unlink()
        return int(d["errno"]), max(0, int(d.get("after_bytes", 0)))
    except (OSError, ValueError, KeyError, TypeError):
        return None  # half-written or taken already: no fault this time
