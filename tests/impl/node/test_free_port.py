"""``free_port``: the ports the harness gives its servers are never ones the kernel may hand to
an outgoing connection meanwhile (a broker died with "address already in use" when it was)."""

from __future__ import annotations

import socket

from impl.node import zk


def test_ports_are_drawn_below_the_ephemeral_range_distinct_and_bindable() -> None:
    ports = [zk.free_port() for _ in range(50)]
    assert len(set(ports)) == 50
    floor = zk._ephemeral_floor()
    assert all(zk._PORT_FLOOR <= p < floor for p in ports), (floor, ports)
    for p in ports[:5]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))


def test_a_taken_port_is_skipped(monkeypatch) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = taken.getsockname()[1]
        picks = zk._port_picks()
        draw = picks.randrange
        first = [busy]
        monkeypatch.setattr(zk, "_PORT_FLOOR", 1024)
        monkeypatch.setattr(zk, "_ephemeral_floor", lambda: 65536)
        monkeypatch.setattr(picks, "randrange", lambda lo, hi: first.pop() if first else draw(lo, hi))
        port = zk.free_port()
        assert first == [] and port != busy  # the busy port was drawn first, and passed over


def test_each_process_draws_its_own_sequence(monkeypatch) -> None:
    """Two xdist workers, or a process and a child forked from it, must not draw alike."""
    monkeypatch.setattr(zk, "_PORT_PICKS", {})
    monkeypatch.setattr(zk.os, "getpid", lambda: 1001)
    one = zk._port_picks()
    assert zk._port_picks() is one  # the same generator for the life of the process
    a = [one.randrange(10_000, 32_768) for _ in range(5)]
    monkeypatch.setattr(zk.os, "getpid", lambda: 1002)
    b = [zk._port_picks().randrange(10_000, 32_768) for _ in range(5)]
    assert a != b


def test_without_room_below_the_ephemeral_range_the_kernel_chooses(monkeypatch) -> None:
    monkeypatch.setattr(zk, "_ephemeral_floor", lambda: zk._PORT_FLOOR + 10)
    port = zk.free_port()
    assert port >= zk._PORT_FLOOR + 10  # not drawn from the ten ports below the (pretended) range
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
