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
        busy = taken.getsockname()[1]
        taken.listen()
        picks = iter([busy, busy + 1 if busy + 1 < 65536 else busy - 1])
        monkeypatch.setattr(zk, "_PORT_FLOOR", 1024)
        monkeypatch.setattr(zk, "_ephemeral_floor", lambda: 65536)
        monkeypatch.setattr(zk._PORT_PICKS, "randrange", lambda lo, hi: next(picks))
        assert zk.free_port() != busy


def test_without_room_below_the_ephemeral_range_the_kernel_chooses(monkeypatch) -> None:
    monkeypatch.setattr(zk, "_ephemeral_floor", lambda: zk._PORT_FLOOR + 10)
    port = zk.free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
