"""Seed 000 A: failover during broker failure -- and the leader election every later rule uses.

When ``/brokers/ids`` changes, the controller re-reads the live brokers and elects new
leaders for the partitions whose leader died or whose ISR lost a member (on_broker_change).
The election is A 3.1-4, kept here in one place for every caller (broker change, preferred
election, controlled shutdown):

* **Choice of leader** (A 3.2, :func:`choose_leader`): keep a live leader that is in the ISR,
  else the first live ISR member in AR order.  When no ISR member lives, the design picks a
  live AR member and accepts "potential data loss"; here that unclean choice happens only if
  ``unclean_leader_election`` allows it, and otherwise the partition stays leaderless with
  its ISR unchanged, so that a returning ISR member can be elected without loss.
* **Conditional writes** (A 3.3): each new leaderAndISR is written on the zk_version read;
  a partition whose version moved meanwhile (its leader changed the ISR) is re-read and
  decided again.
* **Batched** (question 1: ZooKeeper multi): up to 500 partitions per fenced multi (one,
  the unbatched baseline, with ``controller_batch_zk_writes`` off).  A multi
  is all or nothing and ZooKeeper names only its first failing item, so the partitions whose
  version moved are found by a re-read, taken out, and the rest committed again.
* **Then LeaderAndISR to the replicas** (A 4), one request per broker.  A broker that is new
  or came back is sent the state of every partition it replicates, since it may have missed
  any number of decisions while away.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kazoo.exceptions import BadVersionError, NoNodeError

from impl.node import zk as zkl
from impl.node.controller.context import ControllerMoved, Key
from impl.node.controller.requests import ControlRequestSender


@dataclass(frozen=True)
class Decision:
    leader: int
    isr: tuple[int, ...]
    unclean: bool = False


def choose_leader(assigned: list[int], current: zkl.LeaderAndIsr, live: set[int],
                  unclean_allowed: bool, exclude: frozenset[int] = frozenset()) -> Decision:
    """Seed 000 A 3.2: keep a live ISR leader, else the first live ISR member (AR order);
    else, only if unclean election is allowed, a live AR member alone in the ISR; else no
    leader (-1) with the ISR left as it was so a returning member can be elected."""
    order = list(assigned) + sorted(set(current.isr) - set(assigned))
    eligible = live - exclude
    live_isr = [b for b in order if b in current.isr and b in eligible]
    if live_isr:
        leader = current.leader if current.leader in live_isr else live_isr[0]
        return Decision(leader, tuple(sorted(live_isr)))
    live_ar = [b for b in assigned if b in eligible]
    if unclean_allowed and live_ar:
        return Decision(live_ar[0], (live_ar[0],), unclean=True)
    return Decision(-1, tuple(sorted(current.isr)))


def broker_change_choice(assigned: list[int], current: zkl.LeaderAndIsr, live: set[int],
                         unclean_allowed: bool, shutting_down: frozenset[int] = frozenset()
                         ) -> Decision | None:
    """Seed 000 A on_broker_change for one partition: nothing to decide while its leader and
    every ISR member live; else :func:`choose_leader`.  A live leader in the ISR stays (even
    one shutting down: it could not leave); a new one is never a broker that asked to shut
    down, nor does one stay in the ISR."""
    if current.leader in live and set(current.isr) <= live:
        return None
    keep = current.leader in live and current.leader in current.isr
    return choose_leader(assigned, current, live, unclean_allowed,
                         exclude=frozenset() if keep else shutting_down)


class Reconsider:
    """A decision deferred: decide again from the partition's state read afresh from ZooKeeper."""


RECONSIDER = Reconsider()


def changes(d: Decision, current: zkl.LeaderAndIsr) -> bool:
    """Whether decision ``d`` is a write: a new leader or a new ISR (else nothing is written)."""
    return not (d.leader == current.leader and tuple(sorted(d.isr)) == tuple(current.isr))


class BrokerFailure(ControlRequestSender):
    """Seed 000 A: on_broker_change, and the conditional election it and others use."""

    def _on_broker_change(self) -> None:
        """Seed 000 A on_broker_change: re-read the live brokers, elect where a leader
        died or an ISR lost a member, tell new and returning brokers their partitions."""
        new_live = self._read_live()
        old = self.live
        born = {b for b, v in new_live.items() if b not in old or old[b][2] != v[2]}
        self.live = new_live
        self.shutting_down &= set(new_live) - born
        self._sync_channels()
        # no re-read of the assignments: only topic, partition and reassignment events change
        # them, and those handlers keep self.assignments current -- a broker failure costs
        # the partitions it affects, not a read of every topic (seed 001's motivation)
        live = set(new_live)

        permitted: set[Key] = set()  # step mode: the partitions whose election has its permit

        def decide(key: Key, st: zkl.LeaderAndIsr) -> Decision | None | Reconsider:
            nonlocal live
            choice = broker_change_choice(self._replicas(key), st, live,
                                          self.config.unclean_leader_election,
                                          frozenset(self.shutting_down))
            if not self.step_gate.on:
                return choice
            if key not in permitted:
                # harness step mode: elect when the harness says -- then read what the model's
                # elect_leader reads when it is taken, the live brokers and the partition's
                # state.  Decided from this event's first read, the election wrote back, as
                # in sync, a broker that died while it waited (docs/journal/drive-findings.md)
                if choice is None or not changes(choice, st) or \
                        not self.step_gate.wait_blocking("elect_leader"):
                    return None
                permitted.add(key)
                live = set(self._read_live())
                return RECONSIDER
            if choice is None or not changes(choice, st):
                self.step_gate.give_back("elect_leader")  # nothing left to elect
                permitted.discard(key)
            return choice

        changed = self._elect_partitions(self._all_keys(), decide, "broker_change")
        if born:  # new or bounced brokers learn every partition they replicate
            states = self._known_states(self._all_keys())
            for b in born:
                keys = [k for k in states if b in self._replicas(k) and k not in changed]
                self._send_leader_and_isr(b, keys, states)
        if changed or born or set(old) != live:
            self._send_update_metadata()

    def _elect_partitions(self, keys: Iterable[Key],
                          decide: Callable[[Key, zkl.LeaderAndIsr], Decision | None | Reconsider],
                          reason: str, extra_targets: Iterable[int] = (), fresh: bool = False) -> list[Key]:
        """Seed 000 A 3.1-4: read, decide, write conditionally (re-read and retry the
        partitions whose zk_version moved meanwhile, A 3.3), then send LeaderAndISR.

        The first decision is made from the context (``_known_states``): a stale entry makes
        its write fail and is re-read.  ``fresh`` reads ZooKeeper first instead -- for a
        caller to whom "nothing to do" matters, since no conditional write checks that."""
        pending = list(keys)
        done: list[Key] = []
        states: dict[Key, Any] = {}
        for attempt in range(20):
            if not pending:
                break
            # first from the context; partitions whose write conflicted, from ZooKeeper
            current = (self._known_states(pending) if attempt == 0 and not fresh
                       else self._read_states(pending))
            plans = []
            again: list[Key] = []  # deferred (RECONSIDER): decided again from ZooKeeper
            for key in pending:
                cur = current.get(key)
                if cur is None:
                    continue
                st, version = cur
                d = decide(key, st)
                if isinstance(d, Reconsider):
                    again.append(key)
                    continue
                if d is None or not changes(d, st):
                    continue
                new = zkl.LeaderAndIsr(d.leader, st.leader_epoch + 1, tuple(sorted(d.isr)), self.epoch)
                plans.append((key, new, version, d.unclean))
            written, conflicted = self._write_states(plans, reason)
            for k, new, ver in written:
                states[k] = (new, ver)
                done.append(k)
            pending = conflicted + again
        if pending:
            raise RuntimeError(f"could not elect leaders for {pending} after retries")
        targets: dict[int, list[Key]] = {}
        for k in done:
            for b in set(self._replicas(k)) | set(extra_targets):
                targets.setdefault(b, []).append(k)
        for b, ks in targets.items():
            self._send_leader_and_isr(b, ks, states)
        return done

    def _write_states(self, plans: list[tuple[Key, zkl.LeaderAndIsr, int, bool]], reason: str
                      ) -> tuple[list[tuple[Key, zkl.LeaderAndIsr, int]], list[Key]]:
        """Batched conditional writes (seed 000 question 1: ZK multi), each multi fenced by
        the controller epoch.  A multi is all-or-nothing, so the items whose version moved are
        taken out and the rest committed again; returns (written, conflicted keys)."""
        written: list[tuple[Key, zkl.LeaderAndIsr, int]] = []
        conflicted: list[Key] = []
        size = 500 if self.config.controller_batch_zk_writes else 1  # 1: the unbatched baseline
        for i in range(0, len(plans), size):
            chunk = plans[i:i + size]
            while chunk:
                txn = self._txn()
                for (t, p), new, version, _ in chunk:
                    txn.set_data(zkl.leader_and_isr_path(t, p), new.to_json(), version=version)
                results = txn.commit()
                if results and isinstance(results[0], BadVersionError | NoNodeError):
                    raise ControllerMoved()
                failed = {j for j, r in enumerate(results[1:])
                          if isinstance(r, BadVersionError | NoNodeError)}
                if failed:
                    # ZooKeeper reports only the first failing item: find every moved version
                    now = self._read_states([c[0] for c in chunk])
                    failed |= {j for j, c in enumerate(chunk)
                               if now.get(c[0]) is None or now[c[0]][1] != c[2]}
                    conflicted += [chunk[j][0] for j in sorted(failed)]
                    chunk = [c for j, c in enumerate(chunk) if j not in failed]
                    continue
                if any(isinstance(r, BaseException) for r in results):
                    raise zkl.TransactionFailed([r for r in results if isinstance(r, BaseException)])
                for ((t, p), new, _v, unclean), stat in zip(chunk, results[1:], strict=True):
                    written.append(((t, p), new, stat.version))
                    self.states[(t, p)] = (new, stat.version)
                    self._emit_elect(t, p, new, stat.version, stat.mzxid, reason, unclean)
                break
        return written, conflicted
