"""The controller: one event queue, one thread (seed 000's controller, elected by seed 002).

ZooKeeper watches, the broker's session listener, a timer and controlled-shutdown requests
only enqueue events; one thread handles them in order, each with the section that owns it.
Why one thread: every decision reads and updates the controller's context, and handling
events one at a time makes each decision see the effects of the previous one, exactly as
the design's watcher callbacks are written.  Events that re-read state are coalesced (at
most one of each waits), so a burst of ISR changes cannot delay a broker failure behind
hundreds of refreshes.  When this broker is not the active controller, only election and
resignation events are handled.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from kazoo.exceptions import KazooException

from impl.node import zk as zkl
from impl.node.controller.context import COALESCED, ControllerMoved
from impl.node.controller.failover import Failover
from impl.node.controller.responses import ResponseActions
from impl.node.controller.shutdown import ControlledShutdown
from impl.node.wire import ApiKey, ErrorCode

log = logging.getLogger(__name__)


class Controller(Failover, ControlledShutdown):
    """The controller of one broker: every section's rules (mixins over
    :class:`impl.node.controller.context.ControllerContext`), driven by one event queue."""

    def start(self) -> None:
        """Start the event thread, the ``/controller`` watch and the timer."""
        self._thread = threading.Thread(target=self._run, daemon=True, name="controller")
        self._thread.start()
        self.zk.DataWatch(zkl.CONTROLLER, self._controller_watch)
        threading.Thread(target=self._ticker, daemon=True, name="controller-tick").start()

    def _ticker(self) -> None:
        while not self._stopped.wait(self.config.reassign_interval_s):
            # harness step mode (impl.node.step_gate): a scan, and the reassignment switch it
            # may make, waits for its permit
            if self.active and (not self.step_gate.on or self.step_gate.take("admin_tick")):
                self._post("tick")

    def stop(self) -> None:
        self._stopped.set()
        self.step_gate.closed = True
        if self.active:
            self.events.put(("resign", "shutdown"))
        self.events.put(None)
        if self._thread is not None:
            self._thread.join(5)
        for ch in self.channels.values():
            ch.close()

    def on_session_trouble(self, state: str) -> None:
        """kazoo thread: stop acting at SUSPENDED already; epochs fence anything in flight."""
        if self.active:
            self.active = False
            self.events.put(("resign", f"session_{str(state).lower()}"))

    def on_reconnected(self) -> None:
        self._post("elect")

    def request_controlled_shutdown(self, broker: int, broker_epoch: int) -> Future[dict[str, Any]]:
        """From the broker's loop: queue a controlled shutdown; the future gets the answer."""
        fut: Future[dict[str, Any]] = Future()
        self.events.put(("controlled_shutdown", (broker, broker_epoch, fut)))
        return fut

    def _on_control_error(self, arg: tuple[int, ApiKey, ResponseActions]) -> None:
        """A broker refused (part of) a control request: log it, and re-read from ZooKeeper
        what the refusal says this controller's view is missing (:mod:`.responses`)."""
        broker, api, actions = arg
        for line in actions.errors:
            log.warning("controller %d (epoch %d): broker %d: %s", self.id, self.epoch, broker, line)
        if actions.check_controller_epoch:
            stat = self.zk.exists(zkl.CONTROLLER_EPOCH)
            if stat is None or stat.version != self.epoch_version:
                raise ControllerMoved()  # a newer controller exists: resign
        if actions.reread_brokers:
            self._on_broker_change()
        if actions.reread_topics:
            self._read_assignments(only=actions.reread_topics)
        keys = [k for k in sorted(actions.reread_partitions) if k[1] in self.assignments.get(k[0], {})]
        if keys:
            self._read_states(keys)

    def _run(self) -> None:
        handlers: dict[str, Callable[[Any], None]] = {
            "elect": lambda _: self._elect(),
            "resign": self._resign,
            "broker_change": lambda _: self._on_broker_change(),
            "topic_change": lambda _: self._on_topic_change(),
            "admin": lambda _: self._scan_admin(),
            "tick": lambda _: self._scan_admin(),
            "isr_change": lambda _: self._on_isr_change(),
            "controlled_shutdown": self._on_controlled_shutdown,
            "control_error": self._on_control_error,
        }
        while True:
            event = self.events.get()
            if event is None:
                return
            name, arg = event
            if name in COALESCED:
                with self._pending_lock:
                    self._pending.discard(name)
            if name == "controlled_shutdown" and not self.active:
                if not arg[2].done():
                    arg[2].set_result({"error": int(ErrorCode.NOT_CONTROLLER)})
                continue
            if name not in ("elect", "resign") and not self.active:
                continue
            try:
                handlers[name](arg)
            except ControllerMoved:
                self._resign("epoch_fenced")
            except KazooException:
                traceback.print_exc()
                if name == "controlled_shutdown" and not arg[2].done():
                    arg[2].set_result({"error": int(ErrorCode.REQUEST_TIMED_OUT)})
            except Exception:  # noqa: BLE001 - one bad event must not kill the controller
                traceback.print_exc()
                if name == "controlled_shutdown" and not arg[2].done():
                    arg[2].set_result({"error": int(ErrorCode.UNKNOWN_SERVER_ERROR)})
