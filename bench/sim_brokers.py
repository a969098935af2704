"""A real ZooKeeper, the real controller, and simulated broker endpoints: the harness for the
failover-at-scale and controller-failover benchmarks (seed 000's benchmarks).

Ten thousand partition logs on real broker processes are too heavy for a 2-core machine,
and they are not what those benchmarks time: the controller's ZooKeeper reads and writes and
its LeaderAndISR/UpdateMetadata fan-out are.  So:

* **real**: the embedded ZooKeeper server (:class:`impl.node.zk.EmbeddedZooKeeper`, with its
  transaction log fsync), the :class:`impl.node.controller.Controller` class itself -- election,
  ``_failover``, ``_on_broker_change``, ``_elect_partitions``, ``_write_states``, its
  ControllerChannel threads and the wire protocol of :mod:`impl.node.wire` -- run in this
  process on a kazoo session of its own, writing its trace like a broker does;
* **simulated**: each broker is a small process (``python bench/sim_brokers.py serve``)
  that registers ``/brokers/ids/N`` on its own ZooKeeper session, listens on a TCP port,
  decodes every request frame and answers it with NONE, and timestamps each partition it is
  told about.  It has no logs, fetchers or ISR.  "Serving" means: the new leader has
  received (and decoded) the LeaderAndISR naming it leader.
* **a broker dies** by closing its ZooKeeper session (its ephemeral registration vanishes at
  once) and its listener.  A ``kill -9`` would add the ZooKeeper session timeout before
  that (``zk_session_timeout_s``, 6 s by default) -- the same constant for every variant, so
  every figure here starts at the session's end.

Timestamps are ``time.monotonic()`` (CLOCK_MONOTONIC, system-wide on Linux), so the
simulated brokers' receive times and this process's times are on one clock.

The scenarios (:func:`broker_failover`, :func:`controller_failover`) are plain functions so a
test can run them at a small size and compare end states.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

from kazoo.client import KazooClient

from impl.node import zk as zkl
from impl.node.config import BrokerConfig
from impl.node.controller import Controller
from impl.node.wire import (
    ApiKey,
    ErrorCode,
    ProtocolError,
    decode_request_body,
    decode_request_header,
    encode_response,
    read_frame,
)
from traces.events import Event
from traces.recorder import TraceRecorder

if TYPE_CHECKING:
    from impl.node.broker import Broker

BROKERS = (1, 2, 3)  # the simulated brokers; every partition is replicated on all three
VICTIM = 1  # leads every partition before the failure
REAL_VS_SIMULATED = (
    "real: ZooKeeper server (embedded, fsync on), the impl.node.controller.Controller class with its "
    "channels and wire protocol, kazoo sessions; simulated: broker endpoints (one process each, "
    "registered in ZooKeeper, decoding and acknowledging every request, no logs or replication); "
    "a failure = the victim's ZooKeeper session closed (a kill -9 adds the session timeout)"
)


# -- the simulated broker (runs in its own process) -----------------------------------------

class _SimState:
    """What one simulated broker has been told, with the time it was told."""

    def __init__(self, broker_id: int) -> None:
        self.id = broker_id
        self.min_epoch = -1
        self.seen: dict[str, float] = {}  # "topic/partition" -> first LeaderAndISR naming it
        self.led: dict[str, float] = {}  # ... naming this broker its leader
        self.um: list[tuple[float, int]] = []  # UpdateMetadata: (time, partitions in it)

    def reset(self, min_epoch: int) -> None:
        self.min_epoch, self.seen, self.led, self.um = min_epoch, {}, {}, []

    def record(self, api: int, body: dict[str, Any], t: float) -> None:
        if int(body.get("controller_epoch", -1)) < self.min_epoch:
            return
        if api == ApiKey.LEADER_AND_ISR:
            for e in body.get("partitions", []):
                key = f"{e['topic']}/{e['partition']}"
                self.seen.setdefault(key, t)
                if int(e["leader"]) == self.id:
                    self.led.setdefault(key, t)
        elif api == ApiKey.UPDATE_METADATA:
            self.um.append((t, sum(len(p) for p in body.get("topics", {}).values())))

    def reached(self, what: str, want: int) -> float | None:
        """The time at which ``want`` partitions had been received, or None if not yet."""
        if what == "um":
            return next((t for t, n in self.um if n >= want), None)
        got = self.seen if what == "seen" else self.led
        return max(got.values(), default=0.0) if len(got) >= want else None


async def _serve(zk_hosts: str, broker_id: int) -> None:
    state = _SimState(broker_id)
    writers: set[asyncio.StreamWriter] = set()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.add(writer)
        try:
            while True:
                payload = await read_frame(reader)
                if payload is None:
                    break
                api, _version, cid, _clock = decode_request_header(payload)
                body = decode_request_body(payload)
                state.record(api, body, time.monotonic())
                writer.write(encode_response(cid, 0, ErrorCode.NONE, {}, api, body))
                await writer.drain()
        except (ProtocolError, OSError, ConnectionError):
            pass
        finally:
            writers.discard(writer)
            writer.close()

    server = await asyncio.start_server(connection, "127.0.0.1", 0)
    port = int(server.sockets[0].getsockname()[1])
    zk = zkl.connect(zk_hosts, session_timeout=6.0)
    zk.create(zkl.broker_path(broker_id),
              zkl.encode({"host": "127.0.0.1", "port": port, "version": 1}),
              ephemeral=True, makepath=True)
    loop = asyncio.get_running_loop()
    done = asyncio.Event()

    async def handle(cmd: dict[str, Any]) -> dict[str, Any]:
        op = cmd["op"]
        if op == "reset":
            state.reset(int(cmd.get("min_epoch", -1)))
            return {"ok": True}
        if op == "kill":
            t0 = time.monotonic()
            await loop.run_in_executor(None, zk.stop)  # the session ends: registration gone
            t1 = time.monotonic()
            server.close()
            for w in list(writers):
                w.close()
            return {"t0": t0, "t1": t1}
        if op == "wait":
            deadline = time.monotonic() + float(cmd["timeout"])
            while True:
                t = state.reached(cmd["what"], int(cmd["want"]))
                if t is not None or time.monotonic() > deadline:
                    return {"t": t, "seen": len(state.seen), "led": len(state.led),
                            "um": len(state.um)}
                await asyncio.sleep(0.002)
        if op == "stop":
            done.set()
            return {"ok": True}
        return {"error": f"unknown op {op}"}

    def control() -> None:
        for line in sys.stdin:
            if not line.strip():
                continue
            reply = asyncio.run_coroutine_threadsafe(handle(json.loads(line)), loop).result()
            print(json.dumps(reply), flush=True)
            if done.is_set():
                return
        loop.call_soon_threadsafe(done.set)

    print(json.dumps({"ready": port}), flush=True)
    threading.Thread(target=control, daemon=True).start()
    await done.wait()
    server.close()
    if zk.connected:
        zk.stop()
    zk.close()


# -- driving the simulated brokers from the benchmark ---------------------------------------

class SimBrokers:
    """One ``serve`` process per simulated broker, driven over stdin/stdout JSON lines."""

    def __init__(self, zk_hosts: str, ids: tuple[int, ...], log_dir: Path) -> None:
        self.procs: dict[int, subprocess.Popen[str]] = {}
        log_dir.mkdir(parents=True, exist_ok=True)
        for b in ids:
            with open(log_dir / f"sim-broker-{b}.log", "w") as err:
                self.procs[b] = subprocess.Popen(
                    [sys.executable, str(Path(__file__).resolve()), "serve", zk_hosts, str(b)],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True,
                    cwd=str(Path(__file__).resolve().parent.parent))
        self.ports = {b: int(self._read(b)["ready"]) for b in ids}

    def _read(self, b: int) -> dict[str, Any]:
        out = cast(IO[str], self.procs[b].stdout)
        line = out.readline()
        if not line:
            raise RuntimeError(f"simulated broker {b} exited ({self.procs[b].poll()})")
        return cast(dict[str, Any], json.loads(line))

    def call(self, ops: dict[int, dict[str, Any]]) -> dict[int, dict[str, Any]]:
        """Send one command to each broker named, then collect the replies (in parallel)."""
        for b, cmd in ops.items():
            stdin = cast(IO[str], self.procs[b].stdin)
            stdin.write(json.dumps(cmd) + "\n")
            stdin.flush()
        return {b: self._read(b) for b in ops}

    def reset(self, ids: tuple[int, ...], min_epoch: int = -1) -> None:
        self.call({b: {"op": "reset", "min_epoch": min_epoch} for b in ids})

    def kill(self, b: int) -> float:
        """End broker ``b``'s ZooKeeper session; returns the time just before it ended."""
        return float(self.call({b: {"op": "kill"}})[b]["t0"])

    def wait(self, what: str, want: dict[int, int], timeout: float) -> float:
        """Block until every broker named has received ``want[b]`` partitions (``seen``: in
        LeaderAndISR, ``led``: as their leader, ``um``: in one UpdateMetadata); returns the
        latest of their receive times."""
        replies = self.call({b: {"op": "wait", "what": what, "want": n, "timeout": timeout}
                             for b, n in want.items()})
        missing = {b: r for b, r in replies.items() if r["t"] is None}
        if missing:
            raise TimeoutError(f"simulated brokers did not get {what} {want} in {timeout}s: {missing}")
        return max(float(r["t"]) for r in replies.values())

    def close(self) -> None:
        for b, p in self.procs.items():
            if p.poll() is None:
                try:
                    self.call({b: {"op": "stop"}})
                    p.wait(10)
                except (OSError, RuntimeError, subprocess.TimeoutExpired, ValueError):
                    p.kill()
                    p.wait(5)


# -- the real controller, in this process -------------------------------------------------------

class TimingRecorder(TraceRecorder):
    """The controller's real trace recorder, also timestamping its elections: an
    ``elect_leader`` event is emitted right after the multi that wrote it committed, so the
    last one marks the moment every new leader is in ZooKeeper."""

    def __init__(self, path: Path, run_id: str, node: int) -> None:
        super().__init__(path, run_id, node)
        self.elected: dict[str, int] = {}
        self.zxids: dict[str, set[int]] = {}  # one zxid per ZooKeeper transaction (multi)
        self.first_write: dict[str, float] = {}
        self.last_write: dict[str, float] = {}
        self.controller_elected: float | None = None

    def emit(self, step: Event) -> dict[str, Any]:
        event = super().emit(step)
        now = time.monotonic()
        kind = step.kind
        if kind == "elect_leader":
            reason = str(event["params"].get("reason"))
            self.elected[reason] = self.elected.get(reason, 0) + 1
            self.zxids.setdefault(reason, set()).add(int(event["zxid"]))
            self.first_write.setdefault(reason, now)
            self.last_write[reason] = now
        elif kind == "controller_elect":
            self.controller_elected = now
        return event


@dataclass
class ControllerHost:
    """What :class:`Controller` needs of its broker: an id, a ZooKeeper session, the
    configuration and a recorder.  The host registers no broker endpoint of its own."""

    id: int
    zk: KazooClient
    config: BrokerConfig
    recorder: TimingRecorder
    controller: Controller = field(init=False)
    # (reason, start, end, partitions) of every Controller._write_states call: the ZooKeeper
    # write phase alone (seed 000 A step 3), apart from the reads before and the sends after
    write_calls: list[tuple[str, float, float, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.controller = Controller(cast("Broker", self))
        write_states = self.controller._write_states

        def timed(plans: list[Any], reason: str) -> Any:
            start = time.monotonic()
            try:
                return write_states(plans, reason)
            finally:
                self.write_calls.append((reason, start, time.monotonic(), len(plans)))

        self.controller._write_states = timed  # type: ignore[method-assign]

    def on_controller_elected(self, controller_epoch: int,
                              announce: Callable[[], None] = lambda: None) -> None:
        """No broker behind this host fences control requests: nothing to learn."""
        announce()

    @classmethod
    def start(cls, broker_id: int, zk_hosts: str, work: Path, **settings: Any) -> ControllerHost:
        config = BrokerConfig(broker_id=broker_id, port=0, zookeeper=zk_hosts, data_dir=work,
                              **settings)
        zk = zkl.connect(zk_hosts, session_timeout=config.zk_session_timeout_s)
        zkl.ensure_layout(zk)
        rec = TimingRecorder(work / "traces" / f"controller-{broker_id}.jsonl", "bench", broker_id)
        host = cls(broker_id, zk, config, rec)
        host.controller.start()
        return host

    def barrier(self, timeout: float = 600.0) -> None:
        """Return once the controller has handled every event queued before this call (a
        controlled-shutdown request for a broker that does not exist is answered at once,
        in queue order)."""
        self.controller.request_controlled_shutdown(10_000, -1).result(timeout)

    def kill(self) -> float:
        """End the controller's ZooKeeper session (``/controller`` vanishes at once) and stop
        it acting; returns the time just before the session ended."""
        t0 = time.monotonic()
        self.controller._stopped.set()
        self.zk.stop()
        self.controller.stop()
        return t0

    def close(self) -> None:
        self.controller.stop()
        if self.zk.connected:
            self.zk.stop()
        self.zk.close()
        self.recorder.close()


# -- ZooKeeper contents -----------------------------------------------------------------------

def replicas_of(partition: int) -> list[int]:
    """Broker 1 first (it leads everything); the next preferred alternates between 2 and 3,
    so after broker 1 dies the new leaderships split evenly."""
    return [1, 2, 3] if partition % 2 == 0 else [1, 3, 2]


def chroot(zk_hosts: str, name: str) -> str:
    """A fresh chroot per scenario run, so runs on one server never see each other."""
    root = f"/bench-{name}-{uuid.uuid4().hex[:8]}"
    zk = zkl.connect(zk_hosts)
    try:
        zk.ensure_path(root)
    finally:
        zk.stop()
        zk.close()
    return zk_hosts + root


def populate(zk_hosts: str, topics: int, partitions: int) -> list[tuple[str, int]]:
    """Write ``partitions`` partitions spread over ``topics`` topics, all led by broker 1 with
    ISR {1, 2, 3}, as a previous controller would have left them (not timed)."""
    per = -(-partitions // topics)
    keys = [(f"t{t:03d}", p) for t in range(topics) for p in range(per)][:partitions]
    zk = zkl.connect(zk_hosts)
    try:
        zkl.ensure_layout(zk)
        by_topic: dict[str, dict[str, list[int]]] = {}
        for t, p in keys:
            by_topic.setdefault(t, {})[str(p)] = replicas_of(p)
        txn = zk.transaction()
        for t, parts in by_topic.items():
            txn.create(zkl.topic_path(t), zkl.encode({"partitions": parts}))
        zkl.commit_checked(txn)
        state = zkl.LeaderAndIsr(VICTIM, 0, BROKERS, 0).to_json()
        for i in range(0, len(keys), 250):
            txn = zk.transaction()
            for t, p in keys[i:i + 250]:
                txn.create(zkl.partition_path(t, p), b"")
                txn.create(zkl.leader_and_isr_path(t, p), state)
            zkl.commit_checked(txn)
    finally:
        zk.stop()
        zk.close()
    return keys


def read_end_state(zk_hosts: str, keys: list[tuple[str, int]]
                   ) -> dict[tuple[str, int], tuple[int, int, tuple[int, ...], int]]:
    """(leader, leader_epoch, isr, zk_version) of every partition, as ZooKeeper has it."""
    zk = zkl.connect(zk_hosts)
    try:
        asyncs = [zk.get_async(zkl.leader_and_isr_path(t, p)) for t, p in keys]
        out = {}
        for key, a in zip(keys, asyncs, strict=True):
            data, stat = a.get(timeout=30)
            st = zkl.LeaderAndIsr.from_json(data)
            out[key] = (st.leader, st.leader_epoch, st.isr, stat.version)
        return out
    finally:
        zk.stop()
        zk.close()


# -- the scenarios ------------------------------------------------------------------------------

def _startup(zk_hosts: str, sims: SimBrokers, host: ControllerHost, n: int, timeout: float) -> None:
    """The controller's own failover (seed 000 D) has told every broker about every partition."""
    sims.wait("seen", dict.fromkeys(BROKERS, n), timeout)
    sims.wait("um", dict.fromkeys(BROKERS, n), timeout)
    host.barrier(timeout)


def broker_failover(zk_server: str, partitions: int, topics: int, batched: bool, work: Path,
                    timeout: float = 600.0) -> dict[str, Any]:
    """Benchmark 1: broker 1 leads every partition and dies.  Returns the times from its
    session's end to (a) the first and last new leader written in ZooKeeper and (b) the last
    new leader having received its LeaderAndISR, and the ZooKeeper end state."""
    hosts = chroot(zk_server, "batched" if batched else "unbatched")
    keys = populate(hosts, topics, partitions)
    work.mkdir(parents=True, exist_ok=True)
    sims = SimBrokers(hosts, BROKERS, work / "sim")
    host = None
    try:
        host = ControllerHost.start(0, hosts, work, controller_batch_zk_writes=batched)
        _startup(hosts, sims, host, len(keys), timeout)
        sims.reset(BROKERS)
        t0 = sims.kill(VICTIM)
        want = {b: sum(1 for _, p in keys if replicas_of(p)[1] == b) for b in (2, 3)}
        serving = sims.wait("led", want, timeout) - t0
        host.barrier(timeout)
        rec = host.recorder
        calls = [c for c in host.write_calls if c[0] == "broker_change" and c[3]]
        written = rec.elected.get("broker_change", 0)
        end = read_end_state(hosts, keys)
        return {
            "partitions": len(keys), "batched": batched, "written": written,
            "transactions": len(rec.zxids.get("broker_change", ())),
            "first_write": rec.first_write["broker_change"] - t0,
            "writes_start": min(c[1] for c in calls) - t0,
            "writes_end": max(c[2] for c in calls) - t0,
            "zk_written": rec.last_write["broker_change"] - t0,
            "serving": serving, "end_state": end,
        }
    finally:
        if host is not None:
            host.close()
        sims.close()


def controller_failover(zk_server: str, partitions: int, topics: int, work: Path,
                        timeout: float = 600.0) -> dict[str, Any]:
    """Benchmark 4: controller A (id 100) has started up; controller B (id 101) stands by.
    A dies; returns the times from its session's end to B being elected, to every broker
    having received B's LeaderAndISR for all its partitions, and to B's UpdateMetadata."""
    hosts = chroot(zk_server, f"ctl{partitions}")
    keys = populate(hosts, topics, partitions)
    work.mkdir(parents=True, exist_ok=True)
    sims = SimBrokers(hosts, BROKERS, work / "sim")
    old = new = None
    try:
        old = ControllerHost.start(100, hosts, work)
        _startup(hosts, sims, old, len(keys), timeout)
        new = ControllerHost.start(101, hosts, work)
        new.barrier(timeout)
        assert not new.controller.active, "the standby must not be the controller yet"
        sims.reset(BROKERS, min_epoch=old.controller.epoch + 1)
        t0 = old.kill()
        leader_and_isr = sims.wait("seen", dict.fromkeys(BROKERS, len(keys)), timeout) - t0
        update_metadata = sims.wait("um", dict.fromkeys(BROKERS, len(keys)), timeout) - t0
        new.barrier(timeout)
        elected = new.recorder.controller_elected
        assert elected is not None
        return {"partitions": len(keys), "elected": elected - t0,
                "leader_and_isr": leader_and_isr, "update_metadata": update_metadata,
                "idle": time.monotonic() - t0, "epoch": new.controller.epoch}
    finally:
        for h in (new, old):
            if h is not None:
                h.close()
        sims.close()


def median_of(rows: list[dict[str, Any]], key: str) -> float:
    return float(statistics.median(float(r[key]) for r in rows))


def quiet_kazoo() -> None:
    """Closing sessions on purpose makes kazoo log warnings; they are not news here."""
    import logging

    logging.getLogger("kazoo").setLevel(logging.ERROR)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "serve":
        quiet_kazoo()
        asyncio.run(_serve(sys.argv[2], int(sys.argv[3])))
        os._exit(0)
    print("usage: sim_brokers.py serve ZK_HOSTS BROKER_ID  (started by the benchmarks)")
    sys.exit(2)
