"""Harness step mode: the steps a broker takes on a timer or on its own wait for a permit.

A model run is a sequence of steps, and a driver that executes one against real brokers
(``epochal drive``, docs/drive.md) must decide *when* each step happens.  Messages it
controls with its relay; but some steps no message starts:

* ``send_fetch`` -- a follower's ReplicaFetcherThread sends its next fetch as soon as the
  previous answer is in (or, idle, after a back-off);
* ``truncate`` -- a new follower's OffsetsForLeaderEpoch round before its first fetch;
* ``shrink_isr`` -- the leader's ISR check runs on a timer (replica.lag.time.max.ms);
* ``expand_isr`` -- the leader adds a caught-up follower to the ISR when it answers its fetch;
* ``controller_elect`` -- every broker campaigns for ``/controller`` the moment it is gone;
* ``elect_leader`` -- the controller elects new leaders the moment a broker's registration
  goes (seed 000 A on_broker_change);
* ``broker_reregister`` -- a broker whose ZooKeeper session expired while it ran re-creates
  ``/brokers/ids/N`` as soon as its client has a new session; the model lets it run
  unregistered meanwhile (``broker_expire``, then ``broker_reregister`` when it likes), while
  the controller may fail it over;
* ``admin_tick`` -- the controller's periodic scan of the admin paths
  (``reassign_interval_s``), which is what switches a reassignment to RAR once it caught up
  (seed 000 F 3.2); admin requests still start at once, on their watches;
* ``isr_write_as_is`` -- harness only, nothing waits for it normally: a leader attempts its
  conditional ISR write only to shrink or expand the ISR, while the model's
  ``isr_update_failed`` lets a leader whose zk_version is behind fail that write whether or
  not it has a change to propose.  Given this permit and no ``shrink_isr``/``expand_isr`` one,
  the leader writes the ISR as it stands, conditionally on its zk_version (the driver grants
  it only where the model says the write fails).

With ``BrokerConfig.harness_step_mode`` each of these waits, at the point the step would
begin, for one permit of its name.  The harness grants permits by rewriting
``<data-dir>/broker-N/step-permits.json``: ``{"pid": P, "granted": {"send_fetch": 3, ...}}``,
counts that only grow.  A permit file names the broker process it is for (``pid``), so a
restarted broker never inherits its previous incarnation's permits.  ``shrink_isr`` and
``expand_isr`` permits name their follower (``shrink_isr:2``, as the model's steps do); the
ISR check, given one, treats the lag time as passed (the model's ``shrink_isr`` has no clock).

Off -- the default, and in every normal run -- nothing waits and nothing reads the file.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from pathlib import Path

from impl.node.layout import DataDir

GATES = ("send_fetch", "truncate", "shrink_isr", "expand_isr", "controller_elect", "elect_leader", "admin_tick",
         "isr_write_as_is", "broker_reregister")
_POLL_S = 0.005


def permits_path(data_dir: str | os.PathLike[str], broker: int) -> Path:
    return DataDir.of(data_dir).broker(broker).step_permits


def permit_name(gate: str, target: int | None = None) -> str:
    """A permit's name: the gate's, or for one follower ``shrink_isr:2`` (the model's
    ``shrink_isr`` and ``expand_isr`` name the follower they move)."""
    return gate if target is None else f"{gate}:{target}"


def grant(data_dir: str | os.PathLike[str], broker: int, pid: int, gate: str, count: int = 1,
          target: int | None = None) -> None:
    """The harness's side: grant ``count`` more permits of ``gate`` (for ``target``) to the
    broker process ``pid`` (write-then-rename: the broker reads the old file or the new one)."""
    if gate not in GATES:
        raise ValueError(f"unknown step gate {gate!r} (known: {', '.join(GATES)})")
    path = permits_path(data_dir, broker)
    granted = _read(path, pid)
    name = permit_name(gate, target)
    granted[name] = granted.get(name, 0) + count
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"pid": pid, "granted": granted}))
    os.replace(tmp, path)


def _read(path: Path, pid: int) -> dict[str, int]:
    try:
        d = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(d, dict) or d.get("pid") != pid:
        return {}
    return {str(k): int(v) for k, v in dict(d.get("granted") or {}).items()}


class StepGate:
    """One broker's permits.  ``on`` is False outside step mode: every wait returns at once."""

    def __init__(self, data_dir: str | os.PathLike[str], broker: int, on: bool) -> None:
        self.on = on
        self.path = permits_path(data_dir, broker)
        self.pid = os.getpid()
        self.used: dict[str, int] = {}
        self._lock = threading.Lock()
        self.closed = False

    def take(self, gate: str) -> bool:
        """Take one permit named ``gate`` (see :func:`permit_name`) if one is granted and
        unused; never waits."""
        with self._lock:
            if _read(self.path, self.pid).get(gate, 0) > self.used.get(gate, 0):
                self.used[gate] = self.used.get(gate, 0) + 1
                return True
            return False

    def give_back(self, gate: str) -> None:
        """A permit taken for a step that, by the time it was granted, no longer applied."""
        with self._lock:
            self.used[gate] = self.used.get(gate, 0) - 1

    async def wait(self, gate: str) -> None:
        """From the event loop: return once a permit of ``gate`` is taken (at once when off)."""
        while self.on and not self.take(gate):
            await asyncio.sleep(_POLL_S)

    def wait_blocking(self, gate: str) -> bool:
        """From a thread (the controller's): False if the gate was closed while waiting."""
        while self.on and not self.take(gate):
            if self.closed:
                return False
            time.sleep(_POLL_S)
        return True
