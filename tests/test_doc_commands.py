"""Every shell command the README and ``docs/`` give runs as written, from a fresh clone.

The commands are read from the pages' fenced ``sh`` blocks (a ``\\``-continued line is one
command; every fence names its language, so a command block cannot hide in a bare one), so a command added to a page is held here without a line of this file changing --
except that each must match one rule of ``RULES``, which says where it runs: the default
suite (a few seconds each), the slow suite, or nowhere, with the reason.  A command runs in a
directory that looks like a fresh clone set up as the README says (the checkout's files and a
``.venv`` that is this interpreter's environment, never activated: the virtualenv's ``bin/``
is not on ``PATH``), and must exit with the code its comment gives (``exit 1``), 0 if none.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_FENCE = re.compile(r"^```(sh|bash|shell)\s*$")
EXPECTED_EXIT = re.compile(r"#.*?\bexit (\d)\b")

DEFAULT, SLOW = "default", "slow"

# (pattern searched in the command, where it runs or why it does not); the first match decides
RULES: list[tuple[str, str]] = [
    (r"\[--|\bNAME\b|PATH\.\.\.|--out DIR$", "a synopsis with placeholders, not a command"),
    (r"my-broker", "a template: my-broker is the porter's own binary"),
    (r"ports/python/stand_in_broker\.py", "a chaos run with the stand-in broker: tests/impl/harness/test_broker_cmd.py"),
    (r"ports/go/bin/", "the Go broker, built by ports/go/build.sh: tests/ports/test_go_broker.py runs seed 1 with it"),
    (r"--master (yarn|k8s)|epochal-env", "a YARN or Kubernetes cluster, and the environment packed for it"),
    (r"^spark-submit ", "the spark-submit of an activated environment: the page's clone form (.venv/bin/) runs"),
    (r"^\./\.ci/run$", "the whole test command: it runs this file"),
    (r"epochal demo$", "the demo: tests/impl/test_demo.py runs it"),
    (r"^\.venv/bin/lint-imports$", "the import contract: .ci/run runs it before the tests"),
    (r"^python3 -m venv", "creates the virtualenv this suite runs in"),
    (r"bench/", "a benchmark: minutes each, its numbers go to docs/benchmarks.md"),
    (r"epochal cluster start", "a cluster that runs until Ctrl-C"),
    (r"epochal (topics|produce|consume|broker|quotas)\b|cluster client-config|^java |^CP=|"
     r"^printf .* java", "needs the cluster the page starts in the block above"),
    (r"epochal kafka (fetch|record)|runs/kafka",
     "real Kafka from Maven Central: tests/conformance/kafka/test_record_real.py records and judges such runs"),
    (r"drive --engine kafka", "real Kafka: tests/impl/harness/test_kafka_drive_real.py drives leader_kill_isr at ibp-2.6"),
    (r"chaos --engine kafka", "real Kafka: tests/impl/harness/test_kafka_chaos.py runs these seeds and durations"),
    (r"epochal chaos --seed 1 --duration (60|22 --admin)", "a minute of chaos: bench/bench_chaos_seeds.py runs seed 1 for 60 s (CI: test_chaos.py's 12-s seeds); "
     "the --admin run: tests/impl/harness/test_chaos_admin.py, seed 1 for 22 s"),
    (r"epochal chaos --seed 6 --duration 8 --acks 1\s|epochal chaos --seed 21 --duration 10 --unclean-leader-election\s",
     "acks=1 (seed 6, 8 s) and unclean election (seed 21, 10 s) losing writes with their causes named: "
     "tests/impl/harness/test_chaos.py runs both seeds at these durations (exit 1)"),
    (r"epochal chaos (--client confluent --seed 5 --duration 12|--seed 5 --duration 12 --client confluent)",
     "seed 5 for 12 s through each client: tests/impl/harness/test_chaos.py (test_kafka_clients_...)"),
    (r"epochal check --config design\s+#", DEFAULT),
    # a command a stronger test already runs is held there, not run a second time here
    (r"epochal conform traces/data/recorded|package-job --out dist/job|conform_job\.py traces/data/recorded",
     "the recorded samples judged, and the job packed and submitted: tests/conformance/test_spark_submit.py packs "
     "it, submits it with spark-submit on them and finds its verdicts equal to conform's (exit 0); package-job's "
     "output: tests/conformance/test_spark_submit.py (test_package_job_writes_the_zip_...)"),
    (r"spark-submit .*main\.py check --spark --config design",
     "tests/properties/test_distributed.py submits this file from another directory and finds the native "
     "search's violation in its verdict (exit 1)"),
    (r"check --config kip320 --json\s",
     "kip320 exhausted, as JSON: tests/model/test_cli_check.py's plain check --json (kip320 and zombie, exit 0)"),
    (r"fuzz --config kip320 --profile ci\s",
     "tests/properties/test_stateful.py runs it (nothing found at FUZZ_SCALE: exit 3)"),
    (r"check --config kip320 --deletions 1 --no-topic-ids\s",
     "tests/model/test_topic_deletion.py runs it (exit 1) and reads its counterexample"),
    (r"epochal vectors --out /tmp/vectors|node --test ports/node/",
     "the vectors written and the Node.js port run on them: tests/test_port_vectors.py"),
    (r"drive --config kip320 --scenario topic_recreation --deletions 1\s",
     "tests/impl/harness/test_drive_admin.py drives it (exit 0, the model's run to the step it refuses)"),
    (r"--native|--brokers 3", "a three-broker search: tests/properties/test_*three* (slow)"),
    (r"--budget (300|600)|--partition-changes 2", "a generated drive of five minutes or more"),
    (r"drive --config (design|kip320) --scenario kafka_1211\s",
     "KAFKA-1211 driven under the design and kip320: tests/impl/harness/test_drive.py runs both "
     "(the default suite), with their exit codes"),
    (r"drive --config kip320 --generate transitions --budget 120",
     "kip320's generated cases: tests/impl/harness/test_drive.py drives them with a preferred election "
     "allowed (every pair of these and one more) and checks each pair covered and followed"),
    (r".", SLOW),
]


class Command(NamedTuple):
    page: str
    line: int
    text: str

    @property
    def where(self) -> str:
        return next(where for pattern, where in RULES if re.search(pattern, self.text))

    @property
    def expected_exit(self) -> int:
        found = EXPECTED_EXIT.search(self.text)
        return int(found.group(1)) if found else 0


def bare_fences() -> Iterator[str]:
    """Each fence that opens a block without naming its language (``sh``, ``text``, ...)."""
    for page in PAGES:
        in_block = False
        for number, line in enumerate(page.read_text().splitlines(), 1):
            if line.startswith("```"):
                if not in_block and line.strip() == "```":
                    yield f"{page.relative_to(ROOT)}:{number}"
                in_block = not in_block


def documented_commands() -> Iterator[Command]:
    """Each command of each page's fenced shell blocks, comment-only lines left out."""
    for page in PAGES:
        in_block, pending, start = False, "", 0
        for number, line in enumerate(page.read_text().splitlines(), 1):
            if line.startswith("```"):
                in_block = bool(SHELL_FENCE.match(line)) and not in_block
                continue
            if not in_block or (not pending and (not line.strip() or line.lstrip().startswith("#"))):
                continue
            if not pending:
                start = number
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            yield Command(str(page.relative_to(ROOT)), start, " ".join((pending + line).split()))
            pending = ""


COMMANDS = list(documented_commands())
WRITES = re.compile(r"(?:--out|>) (\S+)")


def chain(command: Command) -> list[Command]:
    """The commands of its page that ``command`` reads the output of (``--out X``, ``> X``;
    read as an argument or as a variable's value, ``VAR=X``), each after what it reads in
    turn, then ``command``: what it needs to run as written."""
    earlier = COMMANDS[:COMMANDS.index(command)]
    own = set(WRITES.findall(command.text))
    for writer in reversed(earlier):
        written = set(WRITES.findall(writer.text)) - own
        if writer.page == command.page and any(re.search(rf"(^|[\s=]){re.escape(w)}(/|\s|$)", command.text)
                                               for w in written):
            return [*chain(writer), command]
    return [command]


def _id(c: Command) -> str:
    return f"{c.page}:{c.line}"


def steps(command: Command) -> tuple[str, ...]:
    """What running ``command`` as written runs: each command of its chain, split at ``&&``,
    without its comment, and with where it writes (``--out``) left out -- two runs that differ
    only in the directory they write show the same thing."""
    return tuple(re.sub(r"--out \S+", "--out DIR", part).strip()
                 for c in chain(command) for part in c.text.split("#")[0].split("&&"))


def _runs(where: str) -> list[Command]:
    """The commands run in ``where``: a command two pages give alike runs once (alike: the
    same ``steps``), and one whose steps are the first of another command's runs in that
    command's run -- a command that only feeds a later one, or that a page gives alone and
    another page gives with what follows it (``package-job``, then ``spark-submit`` of what
    it packed)."""
    runnable = [c for c in COMMANDS if c.where in (DEFAULT, SLOW)]
    seen: set[tuple[str, ...]] = set()
    out = []
    for c in COMMANDS:
        own = steps(c)
        first_of_another = any(len(steps(later)) > len(own) and steps(later)[:len(own)] == own for later in runnable)
        if c.where == where and not first_of_another and own not in seen:
            seen.add(own)
            out.append(c)
    return out


@pytest.fixture
def fresh_clone(tmp_path: Path) -> Path:
    """The checkout's top-level entries linked into an empty directory, and ``.venv`` the
    environment running these tests: what the README's first command leaves behind."""
    clone = tmp_path / "clone"
    clone.mkdir()
    for entry in ROOT.iterdir():
        if entry.name not in {".venv", ".git", "dist", "runs", "out"}:
            (clone / entry.name).symlink_to(entry)
    (clone / ".venv").symlink_to(Path(sys.prefix))
    return clone


def run_as_written(command: Command, clone: Path) -> None:
    venv_bin = str(Path(sys.prefix) / "bin")
    path = os.pathsep.join(p for p in os.environ.get("PATH", "").split(os.pathsep) if p != venv_bin)
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "SPARK_HOME", "PYSPARK_PYTHON"}}
    env.update(PATH=path, PWD=str(clone), PYTHONPATH=str(ROOT))
    done = subprocess.run(["bash", "-c", command.text], cwd=clone, env=env, capture_output=True,
                          text=True, timeout=900, check=False)
    assert done.returncode == command.expected_exit, (
        f"{_id(command)}: `{command.text}` exited {done.returncode}, the page says "
        f"{command.expected_exit}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def test_the_pages_give_commands_and_each_has_a_rule() -> None:
    assert len(COMMANDS) > 40, [c.text for c in COMMANDS]
    assert any(c.page == "README.md" and "spark-submit" in c.text for c in COMMANDS)
    assert {c.where for c in COMMANDS} >= {DEFAULT, SLOW}
    # a command that reads what an earlier one writes runs after it
    assert [c.text for c in chain(next(c for c in COMMANDS if "--path cex.json" in c.text))][0].split("#")[0].rstrip().endswith("> cex.json")
    # the catch-all rule is the last: every rule before it matches some command
    for pattern, _ in RULES[:-1]:
        assert any(re.search(pattern, c.text) for c in COMMANDS), f"rule {pattern!r} matches no command"


def test_every_block_names_its_language() -> None:
    """A command in a bare block would be read by no test: every block says ``sh`` (run
    here), or what else it holds (``text``, ``json``, ``python``, ``dockerfile``)."""
    assert list(bare_fences()) == []


def test_no_page_writes_build_output_into_the_checkout() -> None:
    """A page's ``--out`` is ``dist/...``, outside the checkout or on a cluster's file system
    (``hdfs://``, ``s3a://``), and no two commands of one page write the same ``--out``."""
    outs: dict[tuple[str, str], str] = {}
    for c in COMMANDS:
        for out in re.findall(r"--out (\S+)", c.text):
            assert out.startswith(("/", "dist/", "runs/", "DIR")) or "://" in out, f"{_id(c)}: --out {out}"
            earlier = outs.setdefault((c.page, out), _id(c))
            assert earlier == _id(c) or out == "DIR", f"{_id(c)} writes {out} as {earlier} does"


@pytest.mark.integration
@pytest.mark.parametrize("command", _runs(DEFAULT), ids=_id)
def test_quick_command_runs_as_written(command: Command, fresh_clone: Path) -> None:
    for step in chain(command):
        run_as_written(step, fresh_clone)


LONGEST = re.compile(r"record-traces")
"""The commands of a minute or more on the CI machine (real runs of every scenario, then Spark):
marked ``longest``, so the slow run starts them first (conftest.py)."""


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("command", [pytest.param(c, marks=pytest.mark.longest)
                                     if any(LONGEST.search(step.text) for step in chain(c)) else c
                                     for c in _runs(SLOW)], ids=_id)
def test_command_runs_as_written(command: Command, fresh_clone: Path) -> None:
    for step in chain(command):
        run_as_written(step, fresh_clone)
