"""A failed log directory: the broker stops rather than append after a fragment.

A write to a log fails when the disk is full (ENOSPC) or failing (EIO).  The log has already
cut the failed append back to its last whole record and gone offline
(:class:`impl.node.log.LogDirFailure`); this module decides what the *broker* does, by
Kafka's rule for a log directory that fails (``LogDirFailureChannel``): every replica in that
directory goes offline, and a broker with no live log directory left halts ("Shutdown broker
because all log dirs in ... have failed").  A broker here has one log directory, so:

1. the request whose append failed is answered KAFKA_STORAGE_ERROR -- never acknowledged --
   and so is every produce after it (nothing more is appended, by this log or any other);
2. the broker stops fetching, stops its controller, and ends its ZooKeeper session at once,
   so the controller elects new leaders from the ISR without waiting for a session timeout
   (an acknowledged record is on every ISR member, so none is lost);
3. it records ``broker_crash`` for itself (with the zxid at which its registration vanished,
   as the harness does for a ``kill -9``: for the protocol a halt is a crash) and exits
   with :data:`EXIT_LOG_DIR_FAILED`.

Restarted once the disk has room again, the broker recovers its logs (nothing to cut: the
fragment is gone already), rejoins as a follower, truncates as the epoch lookup says and
catches up (docs/durability.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time

from impl.node import zk as zkl
from impl.node.broker.core import BrokerCore, RequestError
from impl.node.wire import ErrorCode
from traces import events

EXIT_LOG_DIR_FAILED = 4
"""The broker's exit code after a log directory failure (0: clean stop, 3: stop without a
completed controlled shutdown)."""


class LogDirFailures(BrokerCore):
    """What an append's :class:`impl.node.log.LogDirFailure` does to the broker."""

    log_dir_failure: OSError | None = None

    def storage_failed(self, exc: OSError) -> RequestError:
        """An append failed: take the broker down (once) and return the error to answer."""
        if self.log_dir_failure is None:
            self.log_dir_failure = exc
            print(f"broker {self.id}: log directory {self.config.log_dir} failed ({exc}); every "
                  f"replica in it is offline, and the broker halts", file=sys.stderr, flush=True)
            asyncio.get_running_loop().create_task(self._halt_for_log_dir())
        return RequestError(ErrorCode.KAFKA_STORAGE_ERROR, f"log directory failed: {exc}")

    def refuse_if_log_dir_failed(self) -> None:
        """Nothing is appended once the log directory has failed."""
        if self.log_dir_failure is not None:
            raise RequestError(ErrorCode.KAFKA_STORAGE_ERROR,
                               f"log directory failed: {self.log_dir_failure}")

    async def _halt_for_log_dir(self) -> None:
        await asyncio.sleep(0.05)  # the KAFKA_STORAGE_ERROR answers in flight go out first
        self.stopping = True
        for task in list(self._fetchers.values()):
            task.cancel()
        # From here on the loop is blocked on purpose: no other step of this broker may be
        # recorded after its crash.
        with contextlib.suppress(Exception):
            self.controller.stop()
        zookeeper = self.config.zookeeper
        with contextlib.suppress(Exception):
            self.zk.stop()  # the session ends: /brokers/ids/N (and /controller) vanish now
            self.zk.close()
        zxid = _registration_end_zxid(zookeeper, self.id, self.zk_client_options())
        with contextlib.suppress(Exception):
            self.recorder.emit(events.broker_crash(zxid=zxid, broker=self.id, informational={
                "pid": os.getpid(), "reason": "log_dir_failure"}))
            self.recorder.close()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_LOG_DIR_FAILED)

    def zk_client_options(self) -> dict[str, object]:
        """Keyword arguments for a second, short ZooKeeper client (signed in as the broker)."""
        security = getattr(self, "security", None)
        return {"acl": security.zk_acl} if security is not None else {}


def _registration_end_zxid(zookeeper: str, broker: int, options: dict[str, object]) -> int | None:
    """The zxid at which ``/brokers/ids/<broker>`` vanished (the pzxid of ``/brokers/ids``),
    read by a fresh client: it orders the crash before the controller's reaction to it."""
    try:
        zk = zkl.connect(zookeeper, session_timeout=4.0, **options)  # type: ignore[arg-type]
    except Exception:  # noqa: BLE001 - ZooKeeper unreachable: order by clock alone
        return None
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if zk.exists(zkl.broker_path(broker)) is None:
                stat = zk.exists(zkl.BROKER_IDS)
                return stat.pzxid if stat is not None else None
            time.sleep(0.05)
        return None
    except Exception:  # noqa: BLE001
        return None
    finally:
        with contextlib.suppress(Exception):
            zk.stop()
            zk.close()
