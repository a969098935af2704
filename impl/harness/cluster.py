"""A local cluster: one embedded ZooKeeper (or an external one) and N broker processes.

Used by ``epochal cluster start`` and by the integration tests.  Brokers are real OS
processes (``python -m impl.node.broker``); faults are real signals (``kill -9``, SIGSTOP,
SIGCONT), each recorded by the harness (trace node -1) as ``broker_crash`` /
``broker_pause`` / ``broker_resume``, and a running broker's session expired through
ZooKeeper (``broker_expire``).  ``<data-dir>/cluster.json`` records the run id, the
ZooKeeper address and each broker's pid, endpoint and command line, so that
``epochal broker kill|pause|resume|start ID`` work from another shell.

A broker need not be the Python one: a :class:`BrokerCommand` (``--broker-cmd``) starts a
port's broker from a command template in place of some or all of them (docs/ports.md).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import string
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from impl.node.auth import credentials as auth
from impl.node.auth import tls
from impl.node.auth.scram import MECHANISM as SCRAM_MECHANISM
from impl.node.auth.zookeeper import ZkAcl, acl_of
from impl.node.config import BrokerConfig
from impl.node.faults import expire_session
from impl.node.layout import DataDir, private_dir, private_opener, write_atomic
from impl.node.tracing import observe_node, open_harness_recorder
from impl.node.wire import ApiKey, BlockingConnection, ErrorCode
from impl.node.zk import BROKER_IDS, EmbeddedZooKeeper, broker_path, connect, free_port
from traces import events

PLACEHOLDERS: dict[str, str] = {
    "id": "the broker id",
    "port": "the TCP port to listen on (127.0.0.1 unless config_json's host says otherwise)",
    "zookeeper": "the ZooKeeper connect string (host:port[,host:port...][/chroot])",
    "data_dir": "the cluster's data directory: logs in broker-{id}/logs, traces in traces/",
    "config_json": "a JSON file with every broker setting (BrokerConfig's fields)",
    "run_id": "the run id every trace event of this run carries",
}
"""The placeholders a ``--broker-cmd`` template may use (docs/ports.md)."""


class BrokerCommandError(ValueError):
    """A ``--broker-cmd`` template or broker selection the harness cannot use."""


@dataclass(frozen=True)
class BrokerCommand:
    """How to start a port's broker: a command template and the brokers it starts.

    The template's placeholders (:data:`PLACEHOLDERS`, ``{{``/``}}`` for literal braces)
    are substituted with shell-quoted values, then the command is split as a POSIX shell
    would (``shlex``) and run directly, without a shell: the process started *is* the
    broker, so the harness's signals (SIGKILL, SIGSTOP/SIGCONT, SIGTERM) reach it.  A path
    with spaces stays one argument; a placeholder must therefore not be quoted again."""

    template: str
    brokers: frozenset[int] | None = None  # None: every broker

    def __post_init__(self) -> None:
        if not self.template.strip():
            raise BrokerCommandError("--broker-cmd is empty")
        try:
            fields = list(string.Formatter().parse(self.template))
        except ValueError as exc:  # a lone { or }
            raise BrokerCommandError(f"--broker-cmd {self.template!r}: {exc} "
                                     "(write {{ and }} for literal braces)") from None
        for _, name, spec, conversion in fields:
            if name is None:
                continue
            if name not in PLACEHOLDERS:
                raise BrokerCommandError(
                    f"--broker-cmd {self.template!r}: unknown placeholder {{{name}}} "
                    f"(known: {', '.join('{' + k + '}' for k in PLACEHOLDERS)})")
            if spec or conversion:
                raise BrokerCommandError(f"--broker-cmd {self.template!r}: placeholder "
                                         f"{{{name}}} takes no format spec or conversion")
        try:
            shlex.split(self.template)
        except ValueError as exc:  # an unclosed quote
            raise BrokerCommandError(f"--broker-cmd {self.template!r}: {exc}") from None

    @classmethod
    def parse(cls, template: str, brokers: str | None = None) -> BrokerCommand:
        """From the command line: ``brokers`` is ``--broker-cmd-for``'s comma list, or None."""
        if brokers is None:
            return cls(template)
        try:
            ids = frozenset(int(b) for b in brokers.split(","))
        except ValueError:
            raise BrokerCommandError(f"--broker-cmd-for takes broker ids separated by commas, "
                                     f"got {brokers!r}") from None
        if any(b < 0 for b in ids):
            raise BrokerCommandError(f"--broker-cmd-for: broker ids are >= 0, got {brokers!r}")
        return cls(template, ids)

    def check_brokers(self, n: int) -> None:
        """Every broker named exists in a cluster of ``n`` brokers."""
        missing = sorted(b for b in self.brokers or () if b >= n)
        if missing:
            raise BrokerCommandError(f"--broker-cmd-for names broker(s) {missing}, but the "
                                     f"cluster has brokers 0 to {n - 1}")

    def starts(self, broker: int) -> bool:
        return self.brokers is None or broker in self.brokers

    def argv(self, cfg: BrokerConfig, config_json: Path) -> list[str]:
        values = {"id": cfg.broker_id, "port": cfg.port, "zookeeper": cfg.zookeeper,
                  "data_dir": cfg.data_dir, "config_json": config_json, "run_id": cfg.run_id}
        quoted = {k: shlex.quote(str(v)) for k, v in values.items()}
        return shlex.split(self.template.format_map(quoted))


def write_config_json(cfg: BrokerConfig, path: Path) -> Path:
    """Every setting of one broker, for a port's broker to read (``{config_json}``)."""
    data = {k: (str(v) if isinstance(v, Path) else v) for k, v in asdict(cfg).items()}
    write_atomic(path, json.dumps(data, indent=2) + "\n")
    return path


def read_state(data_dir: str | os.PathLike[str]) -> dict[str, Any]:
    return DataDir.of(data_dir).read_cluster_state()


def kafka_client_properties(data_dir: str, user: str) -> list[tuple[str, str]]:
    """A Kafka client's properties for the cluster in ``data_dir``, in order, as
    ``epochal cluster client-config`` prints them: ``bootstrap.servers`` from
    ``cluster.json``, and -- unless the cluster runs ``--insecure`` -- SCRAM-SHA-256 with
    ``user``'s password derived from the cluster's secret, and the cluster CA where it runs
    TLS.  ValueError for a data dir without a cluster that has a Kafka listener."""
    try:
        state = read_state(data_dir)
    except (FileNotFoundError, ValueError) as exc:
        raise ValueError(f"{exc} (start one with `epochal cluster start --data-dir {data_dir}`)") from None
    brokers = state.get("brokers", {})
    listeners = [f"{b['host']}:{b['kafka_port']}" for _, b in sorted(brokers.items(), key=lambda kv: int(kv[0]))
                 if b.get("kafka_port")]
    if not listeners:
        raise ValueError(f"the cluster in {data_dir} has no Kafka listener (started by an older "
                         "epochal? restart it)")
    has_tls = tls.has_material(data_dir)
    try:
        secret = auth.ClusterSecret.load(data_dir)
    except FileNotFoundError:  # --insecure
        return [("bootstrap.servers", ",".join(listeners)),
                ("security.protocol", "SSL" if has_tls else "PLAINTEXT")] + _ca(data_dir, has_tls)
    return [("bootstrap.servers", ",".join(listeners)),
            ("security.protocol", "SASL_SSL" if has_tls else "SASL_PLAINTEXT"),
            ("sasl.mechanism", SCRAM_MECHANISM), ("sasl.username", user),
            ("sasl.password", secret.password(user))] + _ca(data_dir, has_tls)


def _ca(data_dir: str, has_tls: bool) -> list[tuple[str, str]]:
    return [("ssl.ca.location", str(tls.tls_dir(data_dir) / tls.CA))] if has_tls else []


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def wait_stopped(pid: int, timeout: float = 2.0) -> None:
    """SIGSTOP is delivered asynchronously: wait until the process is stopped (state T in
    /proc), so that its trace file already holds everything it recorded before the pause
    and the harness's ``broker_pause`` takes a clock past all of it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return  # gone, or no /proc: nothing better to wait for
        if state in ("T", "t"):
            return
        time.sleep(0.001)


def session_end_zxid(zookeeper: str, broker: int, timeout: float,
                     acl: ZkAcl | None) -> int | None:
    """The zxid at which a killed or frozen broker's ZooKeeper session ended (its
    ``/brokers/ids/N`` vanished), or None if it did not within ``timeout``.

    The model's ``broker_crash`` / ``broker_pause`` include the session's end, and the
    controller reacts to exactly that ZooKeeper change, so the harness's event carries its
    zxid: that orders the fault before the controller's reaction (SCHEMA.md section 4).
    ``acl``: the cluster's ZooKeeper sign-in (None: an insecure cluster's)."""
    zk = connect(zookeeper, session_timeout=10.0, acl=acl)
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if zk.exists(broker_path(broker)) is None:
                stat = zk.exists(BROKER_IDS)
                return stat.pzxid if stat is not None else None
            time.sleep(0.05)
        return None
    finally:
        zk.stop()
        zk.close()


def stop_then_observe(rec: Any, data_dir: str | os.PathLike[str], brokers: Iterable[int],
                      stop: Callable[[], None]) -> None:
    """Stop the victim (``stop`` returns once a kill or a SIGSTOP has taken effect), *then*
    take every broker's clock, so that the fault event orders after everything recorded
    before the victim stopped.

    The order matters because a victim's last steps are often silent.  Say a leader answers
    the victim's fetch and records it; the victim takes the answer and fetches again, and
    records neither (nothing changed for it).  Then it stops, and the leader answers the
    second fetch.  The trace must place the pause after the leader's first answer, or the
    judge sees a frozen follower's second fetch that it could never have sent.  Reading
    the other brokers' clocks *before* the signal leaves a window of a few milliseconds in
    which that first answer can be recorded unseen (chaos seed 3 hit it once in CI).
    Read after the stop, the clocks cover everything the victim could have reacted to.
    Events the other brokers recorded after the stop may order before the fault too; they
    are concurrent with it and commute with it in the model.  None of them is a reaction
    to the fault, because the clocks are read before the victim's ZooKeeper session ends,
    and the controller reacts only to that end (the fault event carries its zxid)."""
    stop()
    for b in brokers:  # the victim's too: its last line, now that it can write no more
        observe_node(rec, data_dir, b)


def signal_broker(data_dir: str | os.PathLike[str], broker: int, action: str,
                  wait_session_s: float = 15.0) -> int:
    """kill / pause / resume a broker of a cluster described by ``cluster.json``."""
    state = read_state(data_dir)
    info = state["brokers"].get(str(broker))
    if info is None:
        raise KeyError(f"no broker {broker} in this cluster (brokers: {sorted(state['brokers'])})")
    pid = int(info["pid"])
    if not pid_alive(pid):
        raise ProcessLookupError(f"broker {broker} (pid {pid}) is not running")
    sig, kind = {"kill": (signal.SIGKILL, "broker_crash"), "pause": (signal.SIGSTOP, "broker_pause"),
                 "resume": (signal.SIGCONT, "broker_resume")}[action]
    rec = open_harness_recorder(data_dir, state["run_id"])
    if action == "resume":  # recorded first: the broker reads it when it wakes (SIGCONT)
        observe_node(rec, data_dir, broker)
        rec.emit(events.CONSTRUCTORS[kind](broker=broker, informational={"pid": pid}))
        os.kill(pid, sig)
    else:
        def stop() -> None:
            os.kill(pid, sig)
            deadline = time.monotonic() + 1  # (a zombie not yet reaped stays "alive": bounded)
            while action == "kill" and pid_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.01)
            if action == "pause":
                wait_stopped(pid)

        stop_then_observe(rec, data_dir, [int(b) for b in state["brokers"]], stop)
        zxid = session_end_zxid(state["zookeeper"], broker, wait_session_s, acl_of(data_dir))
        rec.emit(events.CONSTRUCTORS[kind](zxid=zxid, broker=broker, informational={"pid": pid}))
    rec.close()
    return pid


def cluster_keyring(data_dir: str | os.PathLike[str], create: bool = False
                    ) -> tuple[auth.Keyring | None, ZkAcl | None]:
    """The operator's keyring and ZooKeeper ACL of the cluster in ``data_dir`` (the cluster's own identity):
    from its secret, generated first if ``create``, and its TLS CA if it has one; (None,
    None) if it has no secret (a cluster run insecure)."""
    ctx = tls.client_context(data_dir) if tls.has_material(data_dir) else None
    try:
        secret = auth.ClusterSecret.ensure(data_dir) if create else auth.ClusterSecret.load(data_dir)
    except FileNotFoundError:
        return (auth.Keyring(auth.OPERATOR, tls=ctx) if ctx else None), None
    return auth.Keyring(auth.OPERATOR, secret, tls=ctx), ZkAcl.from_secret(secret)


class LocalCluster:
    def __init__(self, data_dir: str | os.PathLike[str], brokers: int = 3,
                 zookeeper: str | None = None, zk_port: int | None = None,
                 port_base: int | None = None, run_id: str | None = None,
                 tick_time_ms: int = 200, broker_cmd: BrokerCommand | None = None,
                 **broker_settings: Any) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.files = DataDir(self.data_dir)
        self.n = brokers
        self.external_zk = zookeeper
        self.zk_port = zk_port
        self.port_base = port_base
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.tick_time_ms = tick_time_ms
        self.broker_settings = broker_settings
        # authentication is on unless insecure=True: only the cluster may change the cluster (docs/security.md)
        self.insecure = bool(broker_settings.get("insecure", False))
        self.tls = bool(broker_settings.get("tls", False))  # also TLS (impl.node.auth.tls)
        self.keyring: auth.Keyring | None = None
        self.zk_acl: ZkAcl | None = None
        if broker_cmd is not None:
            broker_cmd.check_brokers(brokers)
        self.broker_cmd = broker_cmd
        self.cwd = Path.cwd()  # a port's command resolves relative paths as the user typed them
        self.argvs: dict[int, list[str]] = {}
        self.cwds: dict[int, Path] = {}  # where each broker was started: a restart starts it there again
        self.zk_server: EmbeddedZooKeeper | None = None
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.configs: dict[int, BrokerConfig] = {}
        self._harness = None

    # -- lifecycle ------------------------------------------------------------------------------
    @property
    def zookeeper(self) -> str:
        if self.external_zk:
            return self.external_zk
        assert self.zk_server is not None
        return self.zk_server.hosts

    def start(self, timeout: float = 60.0) -> LocalCluster:
        private_dir(self.data_dir)
        if self.tls:
            tls.ensure_material(self.data_dir)
        elif tls.has_material(self.data_dir):  # the data dir's tls/ says how its cluster runs
            shutil.rmtree(tls.tls_dir(self.data_dir))
        if not self.insecure:
            self.keyring, self.zk_acl = cluster_keyring(self.data_dir, create=True)
        elif self.tls:  # TLS without authentication
            self.keyring = auth.Keyring(auth.OPERATOR, tls=tls.client_context(self.data_dir))
        if not self.external_zk:
            # a secure cluster's own ZooKeeper admits only the cluster (impl.node.auth.zookeeper)
            secret = None if self.insecure else auth.ClusterSecret.load(self.data_dir)
            self.zk_server = EmbeddedZooKeeper(port=self.zk_port, data_dir=self.files.zookeeper.path,
                                               tick_time_ms=self.tick_time_ms, secret=secret).start()
        for i in range(self.n):
            port = self.port_base + i if self.port_base else free_port()
            # the Kafka listener (docs/kafka-protocol.md): the n ports after the brokers'
            kafka_port = self.port_base + self.n + i if self.port_base else free_port()
            self.configs[i] = BrokerConfig(broker_id=i, port=port, zookeeper=self.zookeeper,
                                           data_dir=self.data_dir, run_id=self.run_id,
                                           kafka_port=kafka_port, **self.broker_settings)
        try:
            for i in range(self.n):
                self.start_broker(i)
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def start_broker(self, broker: int) -> subprocess.Popen[bytes]:
        cfg = self.configs[broker]
        files = self.files.broker(broker)
        private_dir(files.path)
        if self.broker_cmd is not None and self.broker_cmd.starts(broker):
            argv = self.broker_cmd.argv(cfg, write_config_json(cfg, files.config_json))
            cwd = self.cwd
        else:
            argv = [sys.executable, "-m", "impl.node.broker", *cfg.to_argv()]
            cwd = Path(__file__).resolve().parent.parent
        with open(files.out, "ab", opener=private_opener) as out:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True,
                                    cwd=str(cwd))
        self.procs[broker] = proc
        self.argvs[broker] = argv
        self.cwds[broker] = cwd
        # this process's connections to the broker sign in as the operator
        auth.register([self.endpoint(broker)], self.keyring)
        self._write_state()
        return proc

    def _write_state(self) -> None:
        state = {
            "run_id": self.run_id, "zookeeper": self.zookeeper, "data_dir": str(self.data_dir),
            "supervisor_pid": os.getpid(),
            "zookeeper_pid": self.zk_server.proc.pid if self.zk_server and self.zk_server.proc else None,
            "brokers": {str(b): {"pid": p.pid, "host": self.configs[b].host,
                                 "port": self.configs[b].port,
                                 "kafka_port": self.configs[b].kafka_port,
                                 "argv": self.argvs[b], "cwd": str(self.cwds[b])}
                        for b, p in self.procs.items()},
        }
        self.files.write_cluster_state(state)

    def endpoint(self, broker: int) -> tuple[str, int]:
        return self.configs[broker].host, self.configs[broker].port

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{h}:{p}" for h, p in (self.endpoint(b) for b in sorted(self.configs)))

    @property
    def kafka_bootstrap(self) -> str:
        """Every broker's Kafka listener, as Kafka clients' ``bootstrap.servers``."""
        return ",".join(f"{self.configs[b].host}:{self.configs[b].kafka_port}"
                        for b in sorted(self.configs))

    def metadata(self, broker: int) -> dict[str, Any] | None:
        try:
            conn = BlockingConnection(*self.endpoint(broker), timeout=2)
        except OSError:
            return None
        try:
            error, _, body = conn.send(ApiKey.METADATA, {})
            return body if error == ErrorCode.NONE else None
        except OSError:
            return None
        finally:
            conn.close()

    def wait_ready(self, timeout: float = 60.0, brokers: list[int] | None = None) -> None:
        """Every broker listed answers metadata naming all of them and a controller."""
        want = set(brokers if brokers is not None else self.configs)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for b, p in self.procs.items():
                if b in want and p.poll() is not None:
                    out = self.files.broker(b).out
                    raise RuntimeError(f"broker {b} exited with {p.returncode}: {_last_line(out)} (see {out})")
            ok = True
            for b in want:
                meta = self.metadata(b)
                if not meta or meta.get("controller_id", -1) < 0 or \
                        not want <= {int(x) for x in meta.get("brokers", {})}:
                    ok = False
                    break
            if ok:
                return
            time.sleep(0.1)
        raise TimeoutError(f"cluster not ready within {timeout}s")

    # -- faults ---------------------------------------------------------------------------------
    def harness(self, victim: int | None = None) -> Any:
        """The fault injector's recorder; with ``victim``, its clock past the victim's."""
        if self._harness is None:
            self._harness = open_harness_recorder(self.data_dir, self.run_id)
        if victim is not None:
            observe_node(self._harness, self.data_dir, victim)
        return self._harness

    def _session_wait(self, broker: int) -> float:
        return 3 * self.configs[broker].zk_session_timeout_s + 2

    def kill(self, broker: int) -> None:
        """kill -9; returns once the broker's ZooKeeper session has ended (broker_crash)."""
        proc = self.procs[broker]

        def stop() -> None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)

        rec = self.stop_then_observe(stop)
        zxid = session_end_zxid(self.zookeeper, broker, self._session_wait(broker), self.zk_acl)
        rec.emit(events.broker_crash(zxid=zxid, broker=broker, informational={"pid": proc.pid}))

    def stop_then_observe(self, stop: Callable[[], None]) -> Any:
        """``stop`` the victim, then take every broker's clock (see ``stop_then_observe``);
        returns the harness recorder, ready to record the fault."""
        rec = self.harness()
        stop_then_observe(rec, self.data_dir, self.configs, stop)
        return rec

    def sigstop(self, broker: int) -> Any:
        """SIGSTOP, once it has taken effect, then every clock (``stop_then_observe``)."""
        pid = self.procs[broker].pid

        def stop() -> None:
            self.procs[broker].send_signal(signal.SIGSTOP)
            wait_stopped(pid)

        return self.stop_then_observe(stop)

    def pause(self, broker: int, wait_for_expiry: bool = True) -> None:
        """SIGSTOP; by default returns once its session has expired (broker_pause)."""
        rec = self.sigstop(broker)
        zxid = session_end_zxid(self.zookeeper, broker, self._session_wait(broker), self.zk_acl) \
            if wait_for_expiry else None
        rec.emit(events.broker_pause(zxid=zxid, broker=broker))

    def resume(self, broker: int) -> None:
        # recorded before the signal: the broker reads the harness clock when it wakes
        self.harness(victim=broker).emit(events.broker_resume(broker=broker))
        self.procs[broker].send_signal(signal.SIGCONT)

    def expire(self, broker: int) -> None:
        """End the running broker's ZooKeeper session -- not the process -- and return once
        ``/brokers/ids/N`` is gone (broker_expire).  Every clock is taken first: the broker,
        still running, then reacts to the expiry (a controller resigns), and those steps
        must order after the fault; its zxid orders the controller's reaction after it."""
        rec = self.stop_then_observe(lambda: None)
        expire_session(self.zookeeper, self.data_dir, broker)
        zxid = session_end_zxid(self.zookeeper, broker, self._session_wait(broker), self.zk_acl)
        rec.emit(events.broker_expire(zxid=zxid, broker=broker))

    def stop_broker(self, broker: int, timeout: float = 20.0) -> int | None:
        """SIGTERM: the broker performs a controlled shutdown, then exits."""
        proc = self.procs[broker]
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
            # recorded after the exit so the event follows the broker's own last events; its
            # zxid (the session's end) orders it before the controller's reaction to it
            try:
                zxid = session_end_zxid(self.zookeeper, broker, 5.0, self.zk_acl)
            except Exception:  # noqa: BLE001 - ZooKeeper already gone: order by clock alone
                zxid = None
            # a stop whose controlled shutdown did not complete (exit code 3: it still led
            # or was still in a shared ISR: see Broker._controlled_shutdown) is, for the
            # protocol, a crash
            kind = "broker_stop" if proc.returncode == 0 else "broker_crash"
            self.harness(victim=broker).emit(events.CONSTRUCTORS[kind](zxid=zxid, broker=broker,
                                                                       informational={"pid": proc.pid}))
        return proc.returncode

    def restart(self, broker: int, **overrides: Any) -> None:
        if overrides:
            self.configs[broker] = replace(self.configs[broker], **overrides)
        self.start_broker(broker)

    def stop(self, graceful: bool = True) -> None:
        """Stop every broker -- by SIGTERM, each with its controlled shutdown, or, not
        ``graceful``, by SIGKILL (a test's teardown: nothing is judged after it, and the
        controlled shutdowns of a whole cluster at once take seconds each)."""
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.send_signal(signal.SIGTERM if graceful else signal.SIGKILL)
        deadline = time.monotonic() + 20
        for p in self.procs.values():
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        if self.zk_server is not None:
            self.zk_server.stop()
            self.zk_server = None
        if self._harness is not None:
            self._harness.close()
            self._harness = None
        self.files.cluster_state.unlink(missing_ok=True)
        auth.register([self.endpoint(b) for b in self.configs], None)

    def zk_client(self, session_timeout: float = 4.0) -> Any:
        """A ZooKeeper client signed in as the cluster (it may write the cluster's znodes)."""
        return connect(self.zookeeper, session_timeout=session_timeout, acl=self.zk_acl)

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _last_line(path: Path) -> str:
    """The last line a process wrote, which names why it ended (a test's tmp directory may be
    gone by the time anyone reads the file)."""
    try:
        lines = [x for x in path.read_text(errors="replace").splitlines() if x.strip()]
    except OSError:
        return "no output"
    return lines[-1].strip()[:300] if lines else "no output"
