"""Every test that starts a process carries the ``integration`` marker.

A process -- ZooKeeper, a broker, Spark's JVM, the ``epochal`` command, node, a compiler, the
native search -- makes a test slower, dependent on the machine and able to leave something
running; ``-m "not integration"`` (bench/mutation.py runs so) must select exactly the tests
that start none.  A checker's worker processes (forks of the test's own interpreter, running
its code) are not such a process: they need nothing the machine may lack.  A test starts a process when it requests one of ``PROCESS_FIXTURES``, or
calls one of ``PROCESS_CALLS``, directly or through a fixture or a function of its own module.
It is marked when its module's ``pytestmark`` or one of its decorators names
``pytest.mark.integration``.

The scan reads the source (no test runs), so it costs a second; the fixtures and calls it
knows are listed here and nowhere else.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"

# the conftest fixtures that start a process, each with the conftest that defines it
PROCESS_FIXTURES = {
    "zookeeper": "tests/conftest.py",  # a ZooKeeper server (a JVM)
    "zk_chroot": "tests/impl/conftest.py",  # a chroot of that server
    "make_cluster": "tests/impl/conftest.py",  # broker processes
    "spark": "tests/conftest.py",  # a Spark session (a JVM)
}

# the calls that start a process, by the module that defines them
PROCESS_CALLS = {
    "subprocess": {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput"},
    "os": {"system", "popen", "posix_spawn", "posix_spawnp",
           "execv", "execve", "execvp", "execvpe", "spawnv", "spawnve", "spawnvp", "spawnvpe"},
    "impl.node.zk": {"EmbeddedZooKeeper"},
    "properties.checkers.native": {"binary", "check_native", "native_expansions"},  # gcc, then the search
    "impl.harness.cluster": {"LocalCluster"},
    "impl.harness.drive": {"Driver"},  # its own ZooKeeper and brokers for each run
    "impl.harness.drive.driver": {"Driver"},
    "conformance.spark.job": {"spark_session"},
}


def _names_the_integration_mark(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Attribute) and n.attr == "integration"
               and isinstance(n.value, ast.Attribute) and n.value.attr == "mark" for n in ast.walk(node))


def _imports(tree: ast.Module) -> dict[str, tuple[str, str | None]]:
    """Each local name a module imports: ``(module, None)`` for a module, ``(module, name)``
    for a name from one."""
    names: dict[str, tuple[str, str | None]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    names[alias.asname] = (alias.name, None)
                else:
                    top = alias.name.split(".")[0]
                    names[top] = (top, None)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = (node.module, alias.name)
    return names


def _dotted(node: ast.expr) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; None for anything but names and attributes."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *parts]


def _starts_a_process(call: ast.Call, imports: dict[str, tuple[str, str | None]]) -> bool:
    parts = _dotted(call.func)
    if not parts or parts[0] not in imports:
        return False
    module, name = imports[parts[0]]
    qualified = [*module.split("."), *([name] if name else []), *parts[1:]]
    return any(qualified[:-1] == m.split(".") and qualified[-1] in calls for m, calls in PROCESS_CALLS.items())


def _fixtures_requested(fn: ast.FunctionDef) -> set[str]:
    args = fn.args
    requested = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    for node in ast.walk(fn):
        is_call = isinstance(node, ast.Call)
        parts = _dotted(node.func) if is_call else None
        if parts and parts[-1] in ("usefixtures", "getfixturevalue"):
            requested |= {a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    return requested


class _Module:
    def __init__(self, source: str) -> None:
        self.tree = ast.parse(source)
        self.imports = _imports(self.tree)
        self.functions = {n.name: n for n in self.tree.body if isinstance(n, ast.FunctionDef)}
        self.marked = any(isinstance(n, ast.Assign) and any(getattr(t, "id", None) == "pytestmark" for t in n.targets)
                          and _names_the_integration_mark(n.value) for n in self.tree.body)

    def starts_a_process(self, fn: ast.FunctionDef, seen: frozenset[str] = frozenset()) -> bool:
        """Whether ``fn`` starts a process: requests a process fixture, calls a process call,
        or reaches one through a fixture or a function of this module."""
        seen = seen | {fn.name}
        nested = {n for n in self._reached(fn) if n not in seen}
        return (bool(_fixtures_requested(fn) & PROCESS_FIXTURES.keys())
                or any(isinstance(n, ast.Call) and _starts_a_process(n, self.imports) for n in ast.walk(fn))
                or any(self.starts_a_process(self.functions[n], seen) for n in nested))

    def _reached(self, fn: ast.FunctionDef) -> set[str]:
        used = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
        return (used | _fixtures_requested(fn)) & self.functions.keys()

    def unmarked(self) -> Iterator[str]:
        """The names of this module's tests that start a process without the marker."""
        if self.marked:
            return
        for name, fn in self.functions.items():
            if (name.startswith("test") and not any(_names_the_integration_mark(d) for d in fn.decorator_list)
                    and self.starts_a_process(fn)):
                yield name


def _test_modules() -> list[Path]:
    return sorted(TESTS.rglob("test_*.py"))


def test_every_test_that_starts_a_process_is_marked_integration() -> None:
    unmarked = [f"{path.relative_to(ROOT)}::{name}" for path in _test_modules()
                for name in _Module(path.read_text(encoding="utf-8")).unmarked()]
    assert not unmarked, "start a process without @pytest.mark.integration:\n  " + "\n  ".join(unmarked)


def test_the_process_fixtures_are_the_conftests_that_start_one() -> None:
    """The list is the conftests' truth both ways: each named fixture is defined where it
    says, and every conftest fixture that starts a process is named."""
    found: dict[str, str] = {}
    for path in sorted(TESTS.rglob("conftest.py")):
        module = _Module(path.read_text(encoding="utf-8"))
        for name, fn in module.functions.items():
            if _is_fixture(fn) and module.starts_a_process(fn):
                found[name] = path.relative_to(ROOT).as_posix()
    assert found == PROCESS_FIXTURES


def _is_fixture(fn: ast.FunctionDef) -> bool:
    return any((_dotted(d.func if isinstance(d, ast.Call) else d) or [""])[-1] == "fixture" for d in fn.decorator_list)


SAMPLE = '''
import subprocess
import pytest
from impl.harness.cluster import LocalCluster

@pytest.fixture
def cluster_of_two(make_cluster):
    return make_cluster(2)

def _run_the_command():
    return subprocess.run(["true"])

def test_through_a_fixture(cluster_of_two): ...
def test_through_a_helper(): _run_the_command()
def test_directly(tmp_path): LocalCluster(tmp_path, brokers=1)
@pytest.mark.integration
def test_marked(make_cluster): ...
def test_without_a_process(tmp_path): assert tmp_path
'''


def test_the_scan_finds_a_process_through_a_fixture_a_helper_or_a_direct_call() -> None:
    assert list(_Module(SAMPLE).unmarked()) == ["test_through_a_fixture", "test_through_a_helper", "test_directly"]
    assert not list(_Module("import pytest\npytestmark = [pytest.mark.integration]\n" + SAMPLE).unmarked())
