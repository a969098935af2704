"""Replication (seed 000 G): a client's write to the leader, the follower's fetch round trip,
the high watermark, and the leader's conditional ISR updates in ZooKeeper."""

from __future__ import annotations

from collections.abc import Callable

from model.actions import (
    broker_partitions_args,
    expand_isr,
    fetch_messages_args,
    handle_fetch,
    isr_changes_args,
    isr_update_failed,
    produce,
    receive_fetch,
    replica,
    send_fetch,
    shrink_isr,
)
from model.registry.entry import (
    DRIVEN,
    Args,
    Coverage,
    Emitted,
    Entry,
    Supported,
    Traced,
    View,
)
from model.registry.views import ERRORS, FENCED, entries, new_response, records
from model.state import OUT_OF_RANGE, State
from model.text import brokers_text, log_text, record, value_text

COVERED_EVERYWHERE = Coverage(native=Supported(), z3=Supported(), judge=Supported(), driver=DRIVEN)


def _always(args: Args, before: State, after: State) -> bool:
    return True


# -- a client's write -------------------------------------------------------------------------


def _produce_text(args: Args, before: State, after: State) -> str:
    b, p = args
    r = replica(after, b, p)
    return f"client writes {record(r.log[-1])} to leader {b} (p{p}): log {log_text(r.log)}, hw={r.hw}"


def _produce_view(args: Args, before: State, after: State) -> View:
    r = after.brokers[args[0]].replicas[0]
    return {"offset": r.leo - 1, "leader_epoch": r.log[-1].epoch, "value": r.log[-1].value,
            "post.hw": r.hw, "post.leo": r.leo}


def _produce_event(args: Args, before: State, after: State) -> Emitted:
    b, p = args
    r = after.brokers[b].replicas[p]
    return Emitted(b, {"offset": r.leo - 1, "value": value_text(r.log[-1].value), "leader_epoch": r.log[-1].epoch},
                   {"hw": r.hw, "leo": r.leo})


PRODUCE = Entry(
    "produce", produce, broker_partitions_args,
    section="000 G", impl="impl.node.broker.Broker.on_produce", trace=Traced("produce"),
    describe=_produce_text, view=_produce_view, event=_produce_event, coverage=COVERED_EVERYWHERE,
)


# -- the fetch round trip ---------------------------------------------------------------------


def _send_fetch_text(args: Args, before: State, after: State) -> str:
    f, p = args
    r = replica(before, f, p)
    return f"broker {f} sends fetch(p{p}, offset={r.leo}, epoch {r.leader_epoch}) to leader {r.leader}"


def _send_fetch_view(args: Args, before: State, after: State) -> View:
    r = before.brokers[args[0]].replicas[0]
    return {"leader": r.leader, "fetch_offset": r.leo, "leader_epoch": r.leader_epoch,
            "post.hw": r.hw, "post.leo": r.leo}


def _send_fetch_event(args: Args, before: State, after: State) -> Emitted:
    f, p = args
    r = before.brokers[f].replicas[p]
    return Emitted(f, {"leader": r.leader, "fetch_offset": r.leo, "leader_epoch": r.leader_epoch}, {"hw": r.hw, "leo": r.leo})


SEND_FETCH = Entry(
    "send_fetch", send_fetch, broker_partitions_args,
    section="000 G", impl="impl.node.broker.Broker._fetcher", trace=Traced("send_fetch"),
    describe=_send_fetch_text, view=_send_fetch_view, event=_send_fetch_event, coverage=COVERED_EVERYWHERE,
    silent=_always,  # a request changes nothing a trace shows
)


def _fetch_leader(args: Args) -> int:
    return args[0].leader


def _handle_fetch_text(args: Args, before: State, after: State) -> str:
    m = args[0]
    rb, ra = replica(before, m.leader, m.partition), replica(after, m.leader, m.partition)
    r = new_response(before, after, m)
    if r is None:
        return f"leader {m.leader} refuses fetch from {m.follower} (request epoch {m.epoch} ≠ its epoch {rb.leader_epoch})"
    if r.error == OUT_OF_RANGE:
        return f"leader {m.leader} answers fetch from {m.follower} at offset {m.offset} with OFFSET_OUT_OF_RANGE (its LEO is {rb.leo})"
    hw = f"HW {rb.hw} → {ra.hw}, commits {log_text(ra.log[rb.hw:ra.hw])}" if ra.hw != rb.hw else f"hw={ra.hw}"
    return f"leader {m.leader} handles fetch from {m.follower} at offset {m.offset} (epoch {m.epoch}): {hw}; replies {log_text(r.records)}"


def _handle_fetch_view(args: Args, before: State, after: State) -> View:
    m = args[0]
    lr = after.brokers[m.leader].replicas[0]
    resp = new_response(before, after, m)
    view = {"follower": m.follower, "fetch_offset": m.offset, "leader_epoch": lr.leader_epoch,
            "post.hw": lr.hw, "post.leo": lr.leo, "post.isr": list(lr.isr)}
    if resp is None:
        view.update(error=FENCED, records=[], leader_hw=None)
    else:
        view.update(error=ERRORS.get(resp.error), records=entries(m.offset, resp.records), leader_hw=resp.hw)
    return view


def _handle_fetch_event(args: Args, before: State, after: State) -> Emitted:
    m = args[0]
    lr = after.brokers[m.leader].replicas[m.partition]
    resp = new_response(before, after, m)
    params: dict = {"follower": m.follower, "fetch_offset": m.offset, "leader_epoch": lr.leader_epoch}
    if resp is None:
        params.update(records=[], leader_hw=None, error=FENCED)
    else:
        params.update(records=records(m.offset, resp.records), leader_hw=resp.hw, error=ERRORS.get(resp.error))
    return Emitted(m.leader, params, {"hw": lr.hw, "leo": lr.leo, "isr": list(lr.isr)})


def _answered_without_news(args: Args, before: State, after: State) -> bool:
    """The leader's replica did not change and the answer carries no records."""
    m = args[0]
    resp = new_response(before, after, m)
    same = before.brokers[m.leader].replicas[0] == after.brokers[m.leader].replicas[0]
    return same and (resp is None or not resp.records)


HANDLE_FETCH = Entry(
    "handle_fetch", handle_fetch, fetch_messages_args,
    section="000 G", impl="impl.node.broker.Broker._replica_fetch", trace=Traced("handle_fetch"),
    describe=_handle_fetch_text, view=_handle_fetch_view, event=_handle_fetch_event, coverage=COVERED_EVERYWHERE,
    actor=_fetch_leader, silent=_answered_without_news,
)


def _fetch_follower(args: Args) -> int:
    return args[0].follower


def _receive_fetch_text(args: Args, before: State, after: State) -> str:
    m = args[0]
    rb, ra = replica(before, m.follower, m.partition), replica(after, m.follower, m.partition)
    if ra == rb:
        return f"broker {m.follower} discards a stale fetch response from {m.leader}"
    if m.error == OUT_OF_RANGE:
        return f"broker {m.follower} gets OFFSET_OUT_OF_RANGE from {m.leader} and truncates: {log_text(rb.log)} → {log_text(ra.log)}"
    return f"broker {m.follower} appends {log_text(m.records)} from leader {m.leader} and takes hw={ra.hw}: log {log_text(ra.log)}"


def _receive_fetch_view(args: Args, before: State, after: State) -> View:
    m = args[0]
    rb, ra = before.brokers[m.follower].replicas[0], after.brokers[m.follower].replicas[0]
    appended = ra.log[rb.leo:] if ra.log[: rb.leo] == rb.log else ()
    return {"leader": m.leader, "fetch_offset": m.offset, "leader_epoch": ra.leader_epoch,
            "records": entries(rb.leo, appended), "leader_hw": m.hw, "error": ERRORS.get(m.error),
            "post.hw": ra.hw, "post.leo": ra.leo}


def _receive_fetch_event(args: Args, before: State, after: State) -> Emitted:
    m = args[0]
    rb, ra = before.brokers[m.follower].replicas[m.partition], after.brokers[m.follower].replicas[m.partition]
    appended = ra.log[rb.leo:] if ra.log[: rb.leo] == rb.log else ()
    return Emitted(m.follower, {"leader": m.leader, "fetch_offset": m.offset, "leader_epoch": ra.leader_epoch,
                                "records": records(rb.leo, appended), "leader_hw": m.hw,
                                "error": ERRORS.get(m.error)}, {"hw": ra.hw, "leo": ra.leo})


def _follower_unchanged(args: Args, before: State, after: State) -> bool:
    """A response dropped, or one that brought nothing new."""
    f = args[0].follower
    return before.brokers[f].replicas[0] == after.brokers[f].replicas[0]


RECEIVE_FETCH = Entry(
    "receive_fetch", receive_fetch, fetch_messages_args,
    section="000 G", impl="impl.node.broker.Broker._apply_fetched", trace=Traced("receive_fetch"),
    describe=_receive_fetch_text, view=_receive_fetch_view, event=_receive_fetch_event, coverage=COVERED_EVERYWHERE,
    actor=_fetch_follower, silent=_follower_unchanged,
)


# -- the leader's ISR updates -------------------------------------------------------------------


def _isr_change_text(verb: str) -> Callable[[Args, State, State], str]:
    def text(args: Args, before: State, after: State) -> str:
        b, p, f = args
        rb, ra = replica(before, b, p), replica(after, b, p)
        hw = f", HW {rb.hw} → {ra.hw}" if ra.hw != rb.hw else ""
        return (f"leader {b} {verb} {f} {'from' if verb == 'removes' else 'to'} the ISR of p{p} by conditional ZK write: "
                f"{brokers_text(ra.isr)} (zk_version {rb.zk_version} → {ra.zk_version}){hw}")

    return text


def _isr_change_view(args: Args, before: State, after: State) -> View:
    zn = after.zk.partitions[0]
    return {"follower": args[2], "isr": list(zn.isr), "zk_version": zn.zk_version}


def _isr_change_event(args: Args, before: State, after: State) -> Emitted:
    b, p, f = args
    zn = after.zk.partitions[p]
    return Emitted(b, {"follower": f, "isr": list(zn.isr), "zk_version": zn.zk_version}, zk=True)


SHRINK_ISR = Entry(
    "shrink_isr", shrink_isr, isr_changes_args,
    section="000 G", impl="impl.node.broker.Broker._isr_checker", trace=Traced("shrink_isr"),
    describe=_isr_change_text("removes"), view=_isr_change_view, event=_isr_change_event,
    coverage=COVERED_EVERYWHERE, cut_short=True,
)

EXPAND_ISR = Entry(
    "expand_isr", expand_isr, isr_changes_args,
    section="000 G", impl="impl.node.broker.Broker._replica_fetch", trace=Traced("expand_isr"),
    describe=_isr_change_text("adds"), view=_isr_change_view, event=_isr_change_event,
    coverage=COVERED_EVERYWHERE, cut_short=True,
)


def _isr_failed_text(args: Args, before: State, after: State) -> str:
    b, p = args
    rb = replica(before, b, p)
    return (f"leader {b}'s conditional ISR write for p{p} fails (ZK at version {before.zk.partitions[p].zk_version}, "
            f"it knew {rb.zk_version}): it stops acting as leader")


ISR_UPDATE_FAILED = Entry(
    "isr_update_failed", isr_update_failed, broker_partitions_args,
    section="000 G", impl="impl.node.broker.Broker._write_isr", trace=Traced("isr_update_failed"),
    describe=_isr_failed_text,
    view=lambda args, before, after: {"expected_zk_version": before.brokers[args[0]].replicas[0].zk_version},
    event=lambda args, before, after: Emitted(args[0], {"expected_zk_version": before.brokers[args[0]].replicas[args[1]].zk_version}),
    coverage=COVERED_EVERYWHERE,
)
