"""Brokers and their ZooKeeper sessions: failures, startup, pauses, clean stops.

Seed 000 A (a broker failure is what the controller's ``on_broker_change`` reacts to) and
E (startup); seed 003 (a new session is a new broker epoch).  Failures are injected by the
harness, so their implementation is the harness's and their events are the harness's.
"""

from __future__ import annotations

from model.actions import (
    broker_crash,
    broker_pause,
    broker_reregister,
    broker_restart,
    broker_resume,
    broker_stop,
    brokers_args,
)
from model.registry.entry import (
    DRIVEN,
    PAUSES,
    SHUTDOWNS,
    Args,
    Coverage,
    Entry,
    Supported,
    Traced,
    Unsupported,
)
from model.registry.views import harness_event, nothing_observed, registration_event
from model.state import ROLE_NAMES, TRUNCATING, State
from model.text import leader_text, log_text

NO_PAUSES_IN_Z3 = Unsupported("GC pauses are not encoded (no named configuration but zombie pauses)")
NO_SHUTDOWN_IN_C = Unsupported("controlled shutdown is not ported to native/rules.c (no named configuration shuts down)")
NO_SHUTDOWN_IN_Z3 = Unsupported("controlled shutdown is not encoded (no named configuration shuts down)")


def _restart_text(args: Args, before: State, after: State) -> str:
    b = args[0]
    parts = [f"broker {b} restarts and registers (broker epoch {after.brokers[b].broker_epoch}); recovers from ZK:"]
    for p, (rb, ra) in enumerate(zip(before.brokers[b].replicas, after.brokers[b].replicas, strict=True)):
        role = ROLE_NAMES[ra.role]
        cut = f", truncates log to hw={rb.hw}: {log_text(rb.log)} → {log_text(ra.log)}" if ra.log != rb.log else ""
        wait = ", will reconcile by epoch before fetching" if ra.fetch_state == TRUNCATING else ""
        parts.append(f"p{p} {role} of {leader_text(ra.leader)} at epoch {ra.leader_epoch}{cut}{wait}")
    return " ".join(parts)


CRASH = Entry(
    "broker_crash", broker_crash, brokers_args,
    section="000 A", impl="impl.harness.cluster.LocalCluster.kill", trace=Traced("broker_crash"),
    describe=lambda args, before, after: f"broker {args[0]} crashes (kill -9); its ZK registration expires",
    view=nothing_observed, event=harness_event,
    coverage=Coverage(native=Supported(), z3=Supported(), judge=Supported(), driver=DRIVEN),
    freezing=True,
)

RESTART = Entry(
    "broker_restart", broker_restart, brokers_args,
    section="000 E", impl="impl.node.broker.Broker.register", trace=Traced("broker_restart"),
    describe=_restart_text, view=nothing_observed, event=registration_event,
    coverage=Coverage(native=Supported(), z3=Supported(), judge=Supported(), driver=DRIVEN),
)

PAUSE = Entry(
    "broker_pause", broker_pause, brokers_args,
    section="000 A", impl="impl.harness.cluster.LocalCluster.pause", trace=Traced("broker_pause"),
    describe=lambda args, before, after: f"broker {args[0]} pauses (GC); its ZK session expires while it is frozen",
    view=nothing_observed, event=harness_event,
    coverage=Coverage(native=Supported(), z3=NO_PAUSES_IN_Z3, judge=Supported(), driver=DRIVEN),
    feature=PAUSES, freezing=True,
)

RESUME = Entry(
    "broker_resume", broker_resume, brokers_args,
    section="000 A", impl="impl.harness.cluster.LocalCluster.resume", trace=Traced("broker_resume"),
    describe=lambda args, before, after: f"broker {args[0]} resumes, still believing its old state",
    view=nothing_observed, event=harness_event,
    coverage=Coverage(native=Supported(), z3=NO_PAUSES_IN_Z3, judge=Supported(), driver=DRIVEN),
    feature=PAUSES,
)

REREGISTER = Entry(
    "broker_reregister", broker_reregister, brokers_args,
    section="003", impl="impl.node.broker.Broker._after_reconnect", trace=Traced("broker_reregister"),
    describe=lambda args, before, after: (
        f"broker {args[0]} opens a new ZK session and re-registers (broker epoch {after.brokers[args[0]].broker_epoch})"),
    view=nothing_observed, event=registration_event,
    coverage=Coverage(native=Supported(), z3=NO_PAUSES_IN_Z3, judge=Supported(), driver=DRIVEN),
    feature=PAUSES,
)

STOP = Entry(
    "broker_stop", broker_stop, brokers_args,
    section="000 A", impl="impl.harness.cluster.LocalCluster.stop_broker", trace=Traced("broker_stop"),
    describe=lambda args, before, after: f"broker {args[0]} stops cleanly after its controlled shutdown",
    view=nothing_observed, event=harness_event,
    coverage=Coverage(native=NO_SHUTDOWN_IN_C, z3=NO_SHUTDOWN_IN_Z3, judge=Supported(), driver=DRIVEN),
    feature=SHUTDOWNS, freezing=True,
)
