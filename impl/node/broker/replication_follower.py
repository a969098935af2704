"""Seed 000 G at the follower: the ReplicaFetcherThread.

"A follower keeps sending ReplicaFetcherRequests to the leader", appends what comes back and
takes the leader's HW.  Choices the design leaves open, and why they are made so:

* **One fetcher per leader broker**, fetching every partition this broker follows there in
  one request (Kafka's fetcher threads do the same): a fetcher per partition would cost a
  connection and a long poll each, and the order of their steps would be arbitrary.
* **The follower's HW is ``min(leader HW, own LEO)``**: a follower never claims as committed
  an offset it does not hold.
* **Where a new follower truncates** is the rule the broker runs with
  (:mod:`impl.node.truncation`): seed 000 C's "truncate the log to r.hw" (``hw``, done by
  :meth:`Replica.become_follower`), or the leader-epoch lookup (``kip320``), which asks the
  leader where the follower's latest epoch ends before the first fetch (in as many
  rounds as it takes to reach an epoch both logs have).  The ``hw`` rule is
  the one the model's ``design`` configuration shows losing committed records (KIP-101's
  scenario); it is kept so the implementation can reproduce that.
* **Fetches and epoch lookups name the replica's topic id** (KIP-516): the leader refuses
  one for another incarnation of the topic (INCONSISTENT_TOPIC_ID), and the follower drops a
  response whose id is not its replica's -- a re-created topic's epochs repeat the deleted
  one's, so the epoch alone cannot tell them apart.
* **Fetches are fenced by leader epoch** under ``kip320`` (the leader refuses a mismatch),
  and under either rule a response for a replica whose role or epoch changed while it was in
  flight is dropped.  NOT_LEADER / FENCED / UNKNOWN_LEADER_EPOCH are not retried blindly:
  the controller's next LeaderAndISR says what to do.
"""

from __future__ import annotations

import asyncio
from typing import Any

from kazoo.exceptions import NoNodeError

from impl.node.broker.log_dir import LogDirFailures
from impl.node.fencing import topic_ids_differ
from impl.node.log import LogDirFailure, Record
from impl.node.producer_state import NO_PRODUCER
from impl.node.replica import FOLLOWER, Replica
from impl.node.topic_identity import UNKNOWN
from impl.node.tracing import records_digest
from impl.node.truncation import truncate_round
from impl.node.wire import ApiKey, AsyncConnection, ErrorCode, ProtocolError
from traces import events
from traces.events import RETENTION_MARK, TRUNCATION_COMPLETE


class ReplicationFollower(LogDirFailures):
    """Seed 000 G, follower side: fetch from each leader, append, take its HW, truncate."""

    async def _leader_connection(self, leader: int) -> AsyncConnection:
        """The one connection to ``leader`` shared by all our fetchers from it."""
        if leader not in self.endpoints:
            # a broker that recovered its role from ZooKeeper at startup (seed 000 E) reads its
            # leader's address there too, rather than wait for the controller's requests
            try:
                self.endpoints[leader] = await self._zk(lambda: self._endpoint_from_zk(leader))
            except NoNodeError:
                raise ConnectionError(f"leader {leader} is not registered") from None
        host, port = self.endpoints[leader]
        conn = self._fetch_conns.get(leader)
        if conn is None or conn.closed or self._fetch_conn_addr.get(leader) != (host, port):
            if conn is not None:
                conn.close()
            lock = self._fetch_conn_locks.setdefault(leader, asyncio.Lock())
            async with lock:
                conn = self._fetch_conns.get(leader)
                if conn is None or conn.closed or self._fetch_conn_addr.get(leader) != (host, port):
                    conn = await AsyncConnection.open(host, port)
                    self._fetch_conns[leader] = conn
                    self._fetch_conn_addr[leader] = (host, port)
        return conn

    def _ensure_fetcher(self, leader: int) -> None:
        if self.stopping:
            return
        task = self._fetchers.get(leader)
        if task is None or task.done():
            self._fetchers[leader] = asyncio.create_task(self._fetcher(leader))

    async def _fetcher(self, leader: int) -> None:
        """Seed 000 G ReplicaFetcherThread: one per leader broker, fetching every partition
        this broker follows there in one request; appends, takes the leader's HW."""
        conn: AsyncConnection | None = None
        backoff = 0.05
        turn = 0
        try:
            while not self.stopping:
                parts = [r for r in self.replicas.values()
                         if r.role == FOLLOWER and r.leader == leader]
                if not parts:
                    return
                # a response is bounded in bytes and its first partitions fill it first:
                # start each request at the next partition, so none waits behind the others
                turn = (turn + 1) % len(parts)
                parts = parts[turn:] + parts[:turn]
                try:
                    if conn is None or conn.closed:
                        conn = await self._leader_connection(leader)
                    lookups = [r for r in parts if r.needs_epoch_lookup]
                    if lookups:
                        await asyncio.gather(*(self._truncate_by_epoch(r, conn, leader, r.leader_epoch)
                                               for r in lookups))
                        continue
                    if self.step_gate.on and not await self._send_fetch_permit(leader, parts, conn):
                        continue
                    sent: dict[tuple[str, int], tuple[int, int]] = {}
                    asked: dict[tuple[str, int], Replica] = {}
                    reqs = []
                    for r in parts:
                        offset = r.leo
                        sent[(r.topic, r.partition)] = (r.leader_epoch, offset)
                        asked[(r.topic, r.partition)] = r
                        if r.last_sent_fetch != (offset, r.hw):
                            r.emit(events.send_fetch, leader=leader, fetch_offset=offset,
                                   leader_epoch=r.leader_epoch, post={"hw": r.hw, "leo": r.leo})
                            r.last_sent_fetch = (offset, r.hw)
                        reqs.append({"topic": r.topic, "partition": r.partition,
                                     "fetch_offset": offset, "hw": r.hw,
                                     "leader_epoch": r.leader_epoch if self.rule == "kip320" else -1,
                                     "topic_id": r.log.topic_id or UNKNOWN})
                    error, clock, resp = await conn.request(
                        ApiKey.FETCH, {"replica_id": self.id, "broker_epoch": self.broker_epoch,
                                       "partitions": reqs,
                                       "max_records": 1000,
                                       "max_bytes": self.config.fetch_max_bytes,
                                       "partition_max_bytes": self.config.fetch_partition_max_bytes,
                                       "max_wait_ms": self.config.fetch_max_wait_ms},
                        self.recorder.tick(), timeout=self._fetch_timeout())
                    self.recorder.observe(clock)
                    if error != ErrorCode.NONE:
                        raise ConnectionError(f"fetch refused: {error}")
                    stalled = True
                    for item in resp["partitions"]:
                        key = (str(item["topic"]), int(item["partition"]))
                        r = self.replicas.get(key)
                        if r is None or key not in sent or r is not asked[key] or \
                                r.role != FOLLOWER or r.leader != leader or \
                                r.leader_epoch != sent[key][0]:
                            # the replica changed while the request was in flight (or is a
                            # new incarnation's, impl.node.topic_identity)
                            continue
                        if topic_ids_differ(int(item.get("topic_id", UNKNOWN)), r.log.topic_id):
                            continue  # the leader answered for another incarnation of the topic
                        code = int(item["error"])
                        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
                            await self._handle_out_of_range(r, leader, int(item.get("leo", 0)),
                                                            int(item.get("log_start_offset", 0)))
                        elif code == ErrorCode.NONE:
                            stalled = False
                            self._apply_fetched(r, leader, sent[key][1], item)
                        # NOT_LEADER / FENCED / UNKNOWN_LEADER_EPOCH: wait for the controller
                    if stalled:
                        await asyncio.sleep(backoff)
                        backoff = min(1.0, backoff * 2)
                    else:
                        backoff = 0.05
                except (OSError, ConnectionError, ProtocolError, TimeoutError, KeyError):
                    if conn is not None:
                        conn.close()
                        conn = None
                    await asyncio.sleep(backoff)
                    backoff = min(1.0, backoff * 2)
        except asyncio.CancelledError:
            pass
        finally:
            if self._fetchers.get(leader) is asyncio.current_task():
                del self._fetchers[leader]

    async def _send_fetch_permit(self, leader: int, parts: list[Replica], conn: AsyncConnection) -> bool:
        """Harness step mode: fetch when the harness says -- unless, while waiting, a
        partition's follower state moved (another leader, or a new leader epoch whose epoch
        lookup comes first) or the connection closed: False, and the fetcher starts over.
        A fetcher that only waited for ``send_fetch`` sat on it through a LeaderAndISR, and
        the model's next step, the new epoch's ``truncate``, never came (docs/drive.md)."""
        while True:
            if conn.closed or any(r.role != FOLLOWER or r.leader != leader or r.needs_epoch_lookup
                                  for r in parts):
                return False
            if self.step_gate.take("send_fetch"):
                return True
            await asyncio.sleep(0.005)

    def _fetch_timeout(self) -> float | None:
        """How long a fetch waits for its answer: the long poll plus a margin -- or, in
        harness step mode, until the harness's relay delivers it (the model's messages wait
        in flight as long as a run says)."""
        return None if self.step_gate.on else self.config.fetch_max_wait_ms / 1000 + 5

    def _apply_fetched(self, r: Replica, leader: int, offset: int, resp: dict[str, Any]) -> None:
        # KIP-98: the producer id and sequence of each record an idempotent producer wrote
        # travel with it, so this log -- a future leader's -- knows every batch it holds
        producers = {int(o): (int(p), int(s)) for o, p, s in resp.get("producers") or ()}
        records = [Record(int(o), int(e), bytes(v), *producers.get(int(o), (NO_PRODUCER, -1)))
                   for o, e, v in resp["records"]]
        appended = []
        for rec in records:
            if rec.offset != r.leo:
                break
            try:
                r.log.append_replicated(rec)
            except LogDirFailure as exc:  # the log directory failed: .log_dir halts the broker
                self.storage_failed(exc)
                return
            appended.append(rec)
        new_hw = min(int(resp["hw"]), r.leo)
        hw_changed = new_hw != r.hw
        if hw_changed:
            r.log.set_hw(new_hw)
        if appended or hw_changed:
            r.emit(events.receive_fetch, leader=leader, fetch_offset=offset, leader_epoch=r.leader_epoch,
                   records=records_digest(appended), leader_hw=int(resp["hw"]), error=None)
            r.notify()

    async def _truncate_by_epoch(self, r: Replica, conn: AsyncConnection, leader: int,
                                 epoch: int) -> None:
        """KIP-101/279/320: ask the leader where our latest epoch ends, truncate there -- one
        round; the fetcher runs rounds until one is complete (:mod:`impl.node.truncation`)."""
        requested = r.log.epochs.latest_epoch()
        if r.leo == 0 or requested < 0:
            r.needs_epoch_lookup = False
            return
        if self.step_gate.on:  # harness step mode: the lookup when the harness says
            await self.step_gate.wait("truncate")
            if r.role != FOLLOWER or r.leader_epoch != epoch or conn.closed:
                self.step_gate.give_back("truncate")
                return
        error, clock, resp = await conn.request(
            ApiKey.OFFSETS_FOR_LEADER_EPOCH,
            {"topic": r.topic, "partition": r.partition, "leader_epoch": requested,
             "current_leader_epoch": epoch, "replica_id": self.id,
             "topic_id": r.log.topic_id or UNKNOWN},
            self.recorder.tick(), timeout=self._fetch_timeout())
        self.recorder.observe(clock)
        if r.role != FOLLOWER or r.leader_epoch != epoch or \
                self.replicas.get((r.topic, r.partition)) is not r:
            return
        if error != ErrorCode.NONE:
            await asyncio.sleep(0.1)
            return
        # a round that is not complete leaves the lookup pending: the fetcher asks again
        # (with an older epoch) before it fetches, until the leader answers one we have
        point, complete = truncate_round(r.log, requested, int(resp["leader_epoch"]),
                                         int(resp["end_offset"]), self.rule)
        r.needs_epoch_lookup = not complete
        r.emit(events.truncate, leader=leader, truncated_to=point,
               informational={"requested_epoch": requested, "leader_epoch_found": int(resp["leader_epoch"]),
                              "leader_end_offset": int(resp["end_offset"]),
                              TRUNCATION_COMPLETE: complete},
               post={"hw": r.hw, "leo": r.leo, "log_end_epoch": r.log_end_epoch()})

    async def _handle_out_of_range(self, r: Replica, leader: int, leader_leo: int,
                                   leader_log_start: int) -> None:
        if r.leo < leader_log_start:  # retention deleted what we would fetch: start there
            r.log.truncate_fully_and_start_at(leader_log_start)
            r.emit(events.truncate, leader=leader, truncated_to=leader_log_start,
                   informational={RETENTION_MARK: leader_log_start},
                   post={"hw": r.hw, "leo": r.leo, "log_end_epoch": r.log_end_epoch()})
            return
        if self.rule == "kip320":
            r.needs_epoch_lookup = True
            return
        point = min(leader_leo, r.leo)
        r.log.truncate_to(point)
        r.emit(events.truncate, leader=leader, truncated_to=point,
               post={"hw": r.hw, "leo": r.leo, "log_end_epoch": r.log_end_epoch()})
