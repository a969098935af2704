"""Files private to the cluster, and no password in them (docs/security.md, 1).

Log segments were world-readable (0644 in 0755 folders).  A broker now runs under umask 077
and the harness creates what it writes under a data directory 0600 / 0700
(impl.node.layout: make_private, private_dir, private_opener).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from impl.node.client import Admin, Producer

pytestmark = pytest.mark.integration


def _modes(root: Path) -> dict[str, set[str]]:
    """Every file's and directory's permission bits under ``root`` (itself included)."""
    found: dict[str, set[str]] = {"files": set(), "dirs": {oct(root.stat().st_mode & 0o777)}}
    for path in root.rglob("*"):
        kind = "dirs" if path.is_dir() else "files"
        found[kind].add(f"{oct(path.stat().st_mode & 0o777)} {path.relative_to(root)}")
    return found


def test_the_data_directory_is_private_and_holds_no_password(make_cluster: Any) -> None:
    """Segments were 0644 in 0755 folders: anyone on the host could read every record.  Now
    every file under the data directory is 0600 and every directory 0700; and no file but
    the secret's own holds the secret or a password derived from it."""
    c = make_cluster(2)
    with Admin(c.bootstrap) as admin:
        admin.create_topic("private", assignment={0: [0, 1]})
    with Producer(c.bootstrap, acks=-1) as producer:
        producer.send("private", "a record", partition=0)
    c.stop(graceful=True)
    modes = _modes(c.data_dir)
    assert {m.split()[0] for m in modes["files"]} == {"0o600"}, sorted(modes["files"])
    assert len(modes["files"]) > 15, sorted(modes["files"])
    assert {m.split()[0] for m in modes["dirs"]} == {"0o700"}, sorted(modes["dirs"])
    assert any("/logs/private-0/" in m and m.endswith(".log") for m in modes["files"])
    secret = c.keyring.secret
    never = {secret.zk_password(), secret.password("operator"), secret.password("broker-0"),
             secret.password("broker-1"), secret.password("alice")}
    never.add((c.data_dir / "security" / "cluster.secret").read_text().strip())
    for path in c.data_dir.rglob("*"):
        if path.is_file() and path.name != "cluster.secret":
            text = path.read_bytes().decode(errors="replace")
            assert not [s for s in never if s in text], path
