"""What the controller sends: LeaderAndISR, StopReplica and UpdateMetadata, and how.

Seed 000 has the controller publish each decision in ZooKeeper first, then send it to the
affected brokers over direct RPC (question 2: one RPC instead of a ZooKeeper queue's six).
Choices, and why:

* **One channel per broker, each with its own sender thread**, so a slow or paused broker
  never blocks the controller's event queue or the other brokers' requests.  A channel
  belongs to one broker epoch: a broker that re-registered gets a new channel, and a
  request queued by an older controller epoch is dropped, not retried.
* **Fencing fields on every request** (seeds 002, 003): the controller's id and epoch, and
  either the largest broker epoch the controller has read (``max_broker_epoch``, one value
  for all brokers) or, in the older KIP-380 format, the recipient's own broker epoch.
* **UpdateMetadata is built and encoded once** per change and the same bytes go to every
  broker (seed 004's cached UpdateMetadata; ``cache_update_metadata``), instead of one
  request object and buffer per broker.  ``partial`` updates carry only the partitions that
  changed -- a topic creation then costs the size of the topic, not of the cluster.
* **A refused request is not a request done**: the channel hands the response's error codes
  to the controller's queue, which logs them and re-reads what they say is stale
  (:mod:`.responses`).
* **Leaders' ISR changes reach the metadata through notices** (``/isr_change_notification``):
  the controller re-reads only the partitions they name and sends a partial UpdateMetadata.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from typing import Any

from kazoo.exceptions import NoNodeError

from impl.node import zk as zkl
from impl.node.controller.context import ControllerContext, Key
from impl.node.controller.responses import response_actions
from impl.node.wire import ApiKey, BlockingConnection, EncodedBody, encoded_body


class ControllerChannel:
    """One sender thread per broker, so a slow or paused broker never blocks the queue."""

    def __init__(self, controller: ControllerContext, broker: int, host: str, port: int,
                 epoch: int) -> None:
        self.controller, self.broker, self.host, self.port = controller, broker, host, port
        self.epoch = epoch  # the broker epoch this channel talks to
        self.queue: queue.Queue[tuple[ApiKey, dict[str, Any] | EncodedBody, int] | None] = queue.Queue()
        self.closed = False
        self.thread = threading.Thread(target=self._run, daemon=True,
                                       name=f"controller-channel-{broker}")
        self.thread.start()

    def send(self, api: ApiKey, body: dict[str, Any] | EncodedBody, epoch: int | None = None) -> None:
        """Queue one request; ``body`` may be pre-encoded (the cached UpdateMetadata payload,
        shared by every channel) -- then ``epoch`` says which controller epoch sent it."""
        if epoch is None:
            assert isinstance(body, dict)
            epoch = int(body.get("controller_epoch", -1))
        self.queue.put((api, body, epoch))

    def close(self) -> None:
        self.closed = True
        self.queue.put(None)

    def _run(self) -> None:
        conn: BlockingConnection | None = None
        rec = self.controller.recorder
        timeout = self.controller.config.controller_request_timeout_s
        while True:
            item = self.queue.get()
            if item is None:
                break
            api, body, epoch = item
            deadline = time.monotonic() + 4 * timeout
            while not self.closed and self.controller.active and self.controller.epoch == epoch:
                try:
                    if conn is None:
                        conn = BlockingConnection(self.host, self.port, timeout=timeout)
                    error, clock, resp = conn.send(api, body, clock=rec.tick())
                    rec.observe(clock)
                    actions = response_actions(api, error, resp)
                    if actions:  # refused: the controller's view is missing something
                        self.controller._post("control_error", (self.broker, api, actions))
                    break
                except (OSError, ConnectionError, ValueError):
                    if conn is not None:
                        conn.close()
                        conn = None
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.1)
        if conn is not None:
            conn.close()



class ControlRequestSender(ControllerContext):
    """The controller's requests to brokers, over one :class:`ControllerChannel` per broker."""

    def _sync_channels(self) -> None:
        """One channel per live broker epoch: close the ones whose broker left or
        re-registered, open the missing ones."""
        for b in list(self.channels):
            ch = self.channels[b]
            if b not in self.live or (ch.host, ch.port) != self.live[b][:2] or \
                    ch.epoch != self.live[b][2]:
                ch.close()
                del self.channels[b]
        for b, (host, port, epoch) in self.live.items():
            if b not in self.channels:
                self.channels[b] = ControllerChannel(self, b, host, port, epoch)

    def max_broker_epoch(self) -> int:
        """Seed 003: the largest broker epoch (czxid of ``/brokers/ids/N``) among the live
        brokers this controller has read.  Every zxid the controller has seen is at most this
        value (e0 <= e1), and any later registration gets a larger zxid (e1 < e2), so a broker
        whose own epoch exceeds it knows the request was computed before it registered."""
        return max((epoch for _, _, epoch in self.live.values()), default=-1)

    def _control_fields(self, broker: int | None) -> dict[str, Any]:
        """The fencing fields of every control request.  With ``cache_update_metadata`` (the
        seed 003 format) they are the same for every broker -- controller id, controller
        epoch and the max broker epoch -- which is what lets one UpdateMetadata payload be
        built once and sent to all; otherwise (the KIP-380 format) each request carries its
        recipient's own broker epoch."""
        fields: dict[str, Any] = {"controller_id": self.id, "controller_epoch": self.epoch}
        if self.config.cache_update_metadata:
            fields["max_broker_epoch"] = self.max_broker_epoch()
        else:
            assert broker is not None, "the per-broker format names its recipient"
            fields["broker_epoch"] = self.live[broker][2]
        return fields

    def _send(self, broker: int, api: ApiKey, body: dict[str, Any]) -> None:
        """Queue one control request for ``broker``, with the fencing fields."""
        ch = self.channels.get(broker)
        if ch is not None and broker in self.live:
            ch.send(api, dict(body, **self._control_fields(broker)))

    def _send_leader_and_isr(self, broker: int, keys: list[Key],
                             states: dict[Key, Any], init: bool = False,
                             reassigning: bool = False) -> None:
        """One LeaderAndISR for ``keys`` (seed 000 C), with the leaders' endpoints and each
        topic's id (its incarnation, :mod:`impl.node.topic_identity`).

        After an election a broker shutting down is told only of partitions it still leads
        (Kafka 2.7's elections send LeaderAndISR to live replicas, which exclude
        shutting-down brokers): as a follower it would fetch again and its leader would put
        it back into the ISR it just left.  The partitions it follows get StopReplica
        instead (:mod:`.controlled_shutdown`).  A reassignment (``reassigning``) tells every
        replica it names, shutting down or not: Kafka 2.7's ``onPartitionReassignment``
        sends to ORS + TRS (then TRS), which ``sendRequestsToBrokers`` filters only by
        ``liveOrShuttingDownBrokerIds``."""
        entries, leaders = [], {}
        for t, p in keys:
            cur = states.get((t, p))
            if cur is None:
                continue
            st, version = cur
            if broker in self.shutting_down and st.leader != broker and not reassigning:
                continue
            entries.append({"topic": t, "partition": p, "leader": st.leader,
                            "leader_epoch": st.leader_epoch, "isr": list(st.isr),
                            "replicas": self._replicas((t, p)), "zk_version": version,
                            "topic_id": self.topic_ids.get(t, 0)})
            if st.leader in self.live:
                leaders[str(st.leader)] = list(self.live[st.leader][:2])
        if entries or init:
            self._send(broker, ApiKey.LEADER_AND_ISR,
                       {"init": init, "partitions": entries, "leaders": leaders})

    def _send_update_metadata(self, states: dict[Key, Any] | None = None,
                              partial: bool = False) -> None:
        """UpdateMetadata to every live broker: every partition (a full refresh, the default),
        or with ``partial`` only ``states``' partitions, which brokers merge into what they
        have -- a topic creation then costs the size of the topic, not of the cluster."""
        if states is None:
            states = self._known_states(self._all_keys())
        topics: dict[str, dict[str, Any]] = {}
        for (t, p), cur in sorted(states.items()):
            st = cur[0] if cur else None
            topics.setdefault(t, {})[str(p)] = {
                "leader": st.leader if st else -1, "leader_epoch": st.leader_epoch if st else -1,
                "isr": list(st.isr) if st else [], "replicas": self._replicas((t, p))}
        if not partial:
            # a full refresh names every topic, one whose every partition was removed (seed
            # 000 H) too: it exists, with no partitions, until it is deleted
            for t in self.assignments:
                topics.setdefault(t, {})
        brokers = {str(b): [h, port] for b, (h, port, _) in self.live.items()}
        body: dict[str, Any] = {"brokers": brokers, "topics": topics}
        if partial:
            body["partial"] = True
        if not self.config.cache_update_metadata:
            for b in self.live:  # KIP-380: one request object and one buffer per broker
                self._send(b, ApiKey.UPDATE_METADATA, body)
            return
        # seed 003: one payload per metadata change, encoded once, the same bytes to all
        payload = encoded_body(ApiKey.UPDATE_METADATA, dict(body, **self._control_fields(None)))
        for b in self.live:
            ch = self.channels.get(b)
            if ch is not None:
                ch.send(ApiKey.UPDATE_METADATA, payload, self.epoch)

    def _stop_replicas(self, per_broker: dict[int, list[Key]], delete: bool) -> None:
        """One StopReplica per broker (seed 000 C stopReplica; ``delete`` removes the logs).
        Each partition names its topic's incarnation, ``[topic, partition, topic_id]``, so a
        delayed request cannot delete the log of a topic re-created since."""
        for b, keys in per_broker.items():
            self._send(b, ApiKey.STOP_REPLICA, {"delete": delete, "partitions": [
                [t, p, self.topic_ids.get(t, 0)] for t, p in keys]})

    def _on_isr_change(self) -> None:
        """Leaders changed ISRs in ZooKeeper behind the context's back: re-read the partitions
        their notices name and send every broker an UpdateMetadata for those alone."""
        children = self._children(zkl.ISR_CHANGE)
        # each notice names the partitions whose ISR its leader changed (seed 000 G): read
        # those again (they moved behind the context's back), not every partition
        changed: set[Key] = set()
        notices = [self.zk.get_async(f"{zkl.ISR_CHANGE}/{c}") for c in children]
        for a in notices:
            with contextlib.suppress(NoNodeError, ValueError, TypeError):
                data, _ = a.get(timeout=10)
                changed |= {(str(t), int(p)) for t, p in zkl.decode(data)}
        # one delete each (pipelined): a batch would fail whole on one notice already gone
        deletes = [self.zk.delete_async(f"{zkl.ISR_CHANGE}/{c}") for c in children]
        for d in deletes:
            with contextlib.suppress(NoNodeError):
                d.get(timeout=10)
        known = [k for k in sorted(changed) if k[1] in self.assignments.get(k[0], {})]
        if known:
            self._send_update_metadata(self._read_states(known), partial=True)
