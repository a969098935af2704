"""Controlled shutdown: before it stops, a broker asks the controller to move its
leaderships away and take it out of every ISR it shares (later Kafka; seed 000's broker
failure handling, section A, done ahead of the failure instead of after it).

Why: a leader that simply stops leaves its partitions without a leader until the controller
notices the lost registration; asked first, the controller elects new leaders while this
one still serves.  Only when the controller confirms nothing remains is the stop clean; a
broker that could not leave every ISR stops, for the protocol, as abruptly as a crash.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import Future
from typing import Any

from impl.node import zk as zkl
from impl.node.broker.core import BrokerCore, RequestError
from impl.node.wire import ApiKey, BlockingConnection, ErrorCode


class Shutdown(BrokerCore):
    """Both ends of ControlledShutdown: the request a stopping broker sends, and relaying one
    to this broker's controller thread."""

    async def on_controlled_shutdown(self, body: dict[str, Any]) -> dict[str, Any]:
        """A stopping broker's request: the controller thread decides, we answer."""
        fut: Future[dict[str, Any]] = self.controller.request_controlled_shutdown(
            int(body["broker_id"]), int(body["broker_epoch"]))  # mandatory (KIP-380)
        result = await asyncio.wait_for(asyncio.wrap_future(fut), 10)
        if "error" in result:
            raise RequestError(ErrorCode(result["error"]))
        return result

    async def _controlled_shutdown(self) -> bool:
        """Ask the controller to move our leaderships away before we stop (Ctrl-C / SIGTERM).
        True when it did: we lead nothing and the controller took us out of every ISR we
        share (its ``remaining_leaderships`` and ``remaining_isr`` are empty).  Otherwise
        the stop is, for the protocol, as abrupt as a crash -- the exit code says so (3),
        and the harness records it as one."""
        assert self.loop is not None

        def ask() -> bool:
            for _ in range(3):
                try:
                    data, _ = self.zk.get(zkl.CONTROLLER)
                    cid = int(zkl.decode(data)["brokerid"])
                    host, port = self.endpoints.get(cid) or self._endpoint_from_zk(cid)
                    conn = BlockingConnection(host, port, timeout=5)
                    try:
                        error, _, resp = conn.send(ApiKey.CONTROLLED_SHUTDOWN,
                                                {"broker_id": self.id,
                                                 "broker_epoch": self.broker_epoch},
                                                clock=self.recorder.tick())
                    finally:
                        conn.close()
                    if error == ErrorCode.NONE:
                        return not resp.get("remaining_leaderships") and not resp.get("remaining_isr")
                except Exception:  # noqa: BLE001 - best effort, then plain shutdown
                    pass
                time.sleep(0.3)
            return False

        try:
            return bool(await asyncio.wait_for(self.loop.run_in_executor(None, ask), 12))
        except Exception:  # noqa: BLE001 - no controller reachable: a plain (abrupt) stop
            return False
