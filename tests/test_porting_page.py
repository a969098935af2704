"""docs/porting.md is the code's ZooKeeper layout: every znode path the code names is on the
page, every path and JSON key the page gives is one the code writes.

The code's side is read from the source, not listed here: the module-level constants of
``impl/node`` that name a znode (a string starting with ``/``), the ``*_path`` functions of
``impl.node.zk`` called with the page's placeholders, and the keys of every JSON object the
broker and controller encode for a znode (``zk.encode(...)``, and ``json.dumps`` in a function
that names a znode constant).
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

from impl.node import zk as zkl
from impl.node.auth.credentials import ClusterSecret
from impl.node.segment import SEGMENT_MAGIC, segment_header

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "porting.md"
DESIGN = ROOT / "docs" / "design.md"
NODE = ROOT / "impl" / "node"
PLACEHOLDERS = {"broker": "N", "topic": "T", "partition": "P"}
PAGE_PLACEHOLDERS = {"N", "T", "P", "U", "C", "G", "<default>"}


def _modules() -> list[tuple[Path, ast.Module]]:
    return [(f, ast.parse(f.read_text())) for f in sorted(NODE.rglob("*.py"))]


MODULES = _modules()


def _constants(tree: ast.Module) -> dict[str, str]:
    return {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Name) and isinstance(n.value, ast.Constant)
            and isinstance(n.value.value, str)}


def znode_constants() -> dict[str, str]:
    """Every ``NAME = "/..."`` of impl/node: the roots the code writes under."""
    return {name: value for _, tree in MODULES for name, value in _constants(tree).items()
            if name.isupper() and re.fullmatch(r"(/[a-z_]+)+", value)}


def path_functions() -> set[str]:
    """``zk.*_path`` rendered with the page's placeholders."""
    out = set()
    for name, fn in inspect.getmembers(zkl, inspect.isfunction):
        if name.endswith("_path") and fn.__module__ == zkl.__name__:
            params = inspect.signature(fn).parameters
            out.add(fn(**{p: PLACEHOLDERS[p] for p in params}))
    return out


def code_paths() -> set[str]:
    return set(znode_constants().values()) | path_functions()


def _dict_keys(node: ast.Dict, constants: dict[str, str]) -> set[str]:
    keys = set()
    for k in node.keys:
        if isinstance(k, ast.Constant) and isinstance(k.value, str):
            keys.add(k.value)
        elif isinstance(k, ast.Name) and k.id in constants:
            keys.add(constants[k.id])
    return keys


def _is_payload_encoder(call: ast.Call, in_znode_function: bool) -> bool:
    f = call.func
    if isinstance(f, ast.Name) and f.id == "encode":
        return True
    if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
        return (f.value.id, f.attr) == ("zkl", "encode") or (
            in_znode_function and (f.value.id, f.attr) == ("json", "dumps"))
    return False


def code_payload_keys() -> set[str]:
    """The keys of every JSON object encoded for a znode, directly or through a variable
    built in the same function (``x = {...}``, ``x["k"] = ...``)."""
    roots = set(znode_constants())
    keys: set[str] = set()
    for _, tree in MODULES:
        constants = _constants(tree)
        for fn in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]:
            names = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
            in_znode_function = bool(names & roots)
            built: dict[str, set[str]] = {}
            for n in ast.walk(fn):
                if isinstance(n, (ast.Assign, ast.AnnAssign)) and isinstance(n.value, ast.Dict):
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                        if isinstance(t, ast.Name):
                            built.setdefault(t.id, set()).update(_dict_keys(n.value, constants))
                if isinstance(n, ast.Assign):
                    for t in n.targets:
                        if (isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name)
                                and isinstance(t.slice, ast.Constant) and isinstance(t.slice.value, str)):
                            built.setdefault(t.value.id, set()).add(t.slice.value)
            for call in [n for n in ast.walk(fn) if isinstance(n, ast.Call)]:
                if not call.args or not _is_payload_encoder(call, in_znode_function):
                    continue
                arg = call.args[0]
                if isinstance(arg, ast.Dict):
                    keys |= _dict_keys(arg, constants)
                elif isinstance(arg, ast.Name):
                    keys |= built.get(arg.id, set())
    return keys


def code_path_segments() -> set[str]:
    """Every path segment a string or f-string of impl/node spells out."""
    segments = set()
    for _, tree in MODULES:
        for n in ast.walk(tree):
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and "/" in n.value:
                segments |= set(n.value.split("/"))
    return segments - {""}


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:end if end >= 0 else len(text)]


def page_paths(text: str) -> set[str]:
    return set(re.findall(r"`(/[A-Za-z_<>/0-9-]*)`", text))


ZOOKEEPER_SECTION = _section(PAGE.read_text(), "## ZooKeeper")


def page_payload_keys() -> set[str]:
    snippets = re.findall(r"`(\{[^`]*\})`", ZOOKEEPER_SECTION)
    return {k for s in snippets for k in re.findall(r'"([a-z_]+)":', s)}


def test_every_znode_the_code_names_is_on_the_page() -> None:
    missing = code_paths() - page_paths(ZOOKEEPER_SECTION)
    assert not missing, f"docs/porting.md does not give {sorted(missing)}"


def _written_by_the_code(path: str, known: set[str], segments: set[str]) -> bool:
    """``path`` is a code path, or one below it whose further segments are placeholders or
    names the code spells (a sequential node's counter aside)."""
    for root in known:
        if path == root:
            return True
        if path.startswith(root + "/"):
            rest = path[len(root) + 1:].split("/")
            if all(s in PAGE_PLACEHOLDERS or s in segments or re.sub(r"\d+$", "", s) in segments
                   for s in rest):
                return True
    return False


def test_every_path_on_the_page_and_in_the_design_is_one_the_code_writes() -> None:
    known, segments = code_paths(), code_path_segments() | {"change-"}
    for page in (PAGE, DESIGN):
        text = page.read_text()
        if page == PAGE:
            text = ZOOKEEPER_SECTION
        stray = {p for p in page_paths(text) if not _written_by_the_code(p, known, segments)}
        assert not stray, f"{page.name} gives znode paths the code does not write: {sorted(stray)}"


def test_the_design_gives_the_leader_and_isr_path_the_code_uses() -> None:
    assert f"`{zkl.leader_and_isr_path('T', 'P')}`" in DESIGN.read_text()


def test_the_payload_keys_on_the_page_are_the_codes() -> None:
    code, page = code_payload_keys(), page_payload_keys()
    assert "leader_epoch" in code and "brokerid" in code, code  # the scan finds the writers
    assert code - page == set(), f"keys the code writes and the page omits: {sorted(code - page)}"
    assert page - code == set(), f"keys on the page the code does not write: {sorted(page - code)}"


def test_the_derivations_on_the_page_give_the_codes_secrets() -> None:
    """The page's formulas, computed here as a port would, equal the code's values."""
    import base64
    import hashlib
    import hmac

    key = bytes(range(32))
    secret = ClusterSecret(key)
    text = PAGE.read_text()

    def b64url(purpose: str) -> str:
        assert f'"{purpose}' in text, purpose
        mac = hmac.new(key, purpose.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(mac).decode().rstrip("=")

    assert secret.password("broker-1") == b64url("scram-user:broker-1")
    assert secret.zk_password() == b64url("zookeeper-digest")
    assert secret.salt("alice") == hmac.new(key, b"scram-salt:alice", hashlib.sha256).digest()[:16]


def test_the_segment_header_on_the_page_is_the_codes() -> None:
    text = " ".join(PAGE.read_text().split())
    header = segment_header()
    assert f'b"{SEGMENT_MAGIC.decode()}" | u8 version ({header[len(SEGMENT_MAGIC)]})' in text
    assert len(header) == 8 and "8-byte header" in text
