"""The Node.js port (``ports/node``), written from docs/vectors.md and the vectors alone,
passes every rule-level vector: the proof that the vectors are language-neutral.

``epochal vectors`` writes them into a fresh directory -- through the command a porter
runs -- and ``node --test ports/node/`` runs them.  Node.js 20+ is part of the test setup
(the README's; .ci/run installs it): where it is absent these tests fail and say so.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]


def _node() -> str:
    node = shutil.which("node")
    assert node, "node (Node.js 20+) is not on PATH: the port cannot run (.ci/run installs it)"
    return node


def _vectors(out: Path) -> dict[str, int]:
    done = subprocess.run([sys.executable, "-m", "impl.harness.cli.main", "vectors", "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    index = json.loads((out / "index.json").read_text())
    return {name: f["cases"] for name, f in index["families"].items()}


@pytest.fixture(scope="module")
def vectors(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ``epochal vectors`` run the module's tests read (none writes into it)."""
    out = tmp_path_factory.mktemp("vectors") / "vectors"
    _vectors(out)
    return out


def _node_test(vectors: Path, port: Path) -> subprocess.CompletedProcess[str]:
    node = _node()
    return subprocess.run([node, "--test", f"{port}/"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={"PATH": str(Path(node).parent), "EPOCHAL_VECTORS": str(vectors)})


def test_the_node_port_passes_every_vector(vectors):
    index = json.loads((vectors / "index.json").read_text())
    counts = {name: f["cases"] for name, f in index["families"].items()}
    assert len(counts) >= 8 and all(counts.values()), counts
    done = _node_test(vectors, ROOT / "ports" / "node")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert f"# pass {len(counts) + 2}" in done.stdout and "# fail 0" in done.stdout, done.stdout[-2000:]


def test_the_node_port_fails_a_vector_whose_rule_it_gets_wrong(tmp_path, vectors):
    """The same run fails when the port takes an equal leader epoch as newer -- the mistake
    seed 000's "only if its epoc is larger" is there to prevent."""
    port = tmp_path / "port"
    shutil.copytree(ROOT / "ports" / "node", port)
    rules = port / "rules.js"
    text = rules.read_text()
    assert "request.leader_epoch <= replicaEpoch" in text
    rules.write_text(text.replace("request.leader_epoch <= replicaEpoch", "request.leader_epoch < replicaEpoch"))
    done = _node_test(vectors, port)
    assert done.returncode != 0
    assert "not ok" in done.stdout and "control: every case" in done.stdout, done.stdout[-2000:]


def test_the_vectors_are_the_same_bytes_on_every_run(tmp_path, vectors):
    """The module's run and a second one, each its own process (its own hash seed)."""
    _vectors(tmp_path / "b")
    files = sorted(p.name for p in vectors.iterdir())
    assert "index.json" in files and files == sorted(p.name for p in (tmp_path / "b").iterdir())
    assert all((vectors / f).read_bytes() == (tmp_path / "b" / f).read_bytes() for f in files)


def test_an_unwritable_directory_is_one_line_and_exit_2(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    done = subprocess.run([sys.executable, "-m", "impl.harness.cli.main", "vectors", "--out", str(blocker / "x")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "cannot write vectors" in done.stderr, done.stderr
