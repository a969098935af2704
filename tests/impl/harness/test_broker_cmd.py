"""``--broker-cmd``: a port's broker joins the harness (docs/ports.md).

The template's placeholders are substituted and the command split without a shell; a bad
template is one line and exit 2; and the Python broker, started through the template by
the stand-in ``ports/python/stand_in_broker.py`` as a port would be, runs a chaos run and a
recording whose traces conform -- judged like any other."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.spark.verdict import judge_run, load_judge
from impl.harness.chaos.run import ChaosRun
from impl.harness.chaos.schedule import PARTITIONS
from impl.harness.cli.main import main
from impl.harness.cluster import BrokerCommand, BrokerCommandError, LocalCluster
from impl.harness.recordings import record
from impl.node.config import BrokerConfig

STAND_IN = Path(__file__).resolve().parents[3] / "ports" / "python" / "stand_in_broker.py"
TEMPLATE = (f"{sys.executable} {STAND_IN} {{id}} {{port}} {{zookeeper}} {{data_dir}} "
            "--config {config_json}")


def _cfg(data_dir: Path) -> BrokerConfig:
    return BrokerConfig(broker_id=2, port=9093, zookeeper="127.0.0.1:2181/chroot",
                        data_dir=data_dir, run_id="r-1")


# -- the template --------------------------------------------------------------------------------

def test_placeholders_are_substituted_then_split_without_a_shell(tmp_path: Path) -> None:
    cmd = BrokerCommand("my-broker --id={id} -p {port} {zookeeper} {data_dir} {run_id} {config_json}")
    argv = cmd.argv(_cfg(tmp_path), tmp_path / "c.json")
    assert argv == ["my-broker", "--id=2", "-p", "9093", "127.0.0.1:2181/chroot", str(tmp_path),
                    "r-1", str(tmp_path / "c.json")]


def test_a_path_with_spaces_or_shell_characters_stays_one_argument(tmp_path: Path) -> None:
    odd = tmp_path / "a dir; $(rm -rf x) 'q'"
    argv = BrokerCommand("b {data_dir} {id}").argv(_cfg(odd), odd / "c.json")
    assert argv == ["b", str(odd), "2"]


def test_quotes_in_the_template_group_words_and_double_braces_are_literal(tmp_path: Path) -> None:
    argv = BrokerCommand("b --opts 'x y' --json '{{\"id\": {id}}}'").argv(_cfg(tmp_path), tmp_path)
    assert argv == ["b", "--opts", "x y", "--json", '{"id": 2}']


def test_broker_cmd_for_picks_the_brokers_and_the_rest_stay_python() -> None:
    everyone = BrokerCommand.parse("b {id}")
    some = BrokerCommand.parse("b {id}", "1,2")
    assert all(everyone.starts(b) for b in range(5))
    assert [b for b in range(3) if some.starts(b)] == [1, 2]


@pytest.mark.parametrize("template, message", [
    ("", "--broker-cmd is empty"),
    ("   ", "--broker-cmd is empty"),
    ("b {id} {host}", "unknown placeholder {host}"),
    ("b {}", "unknown placeholder {}"),
    ("b {id", "expected '}' before end of string"),
    ("b id}", "Single '}' encountered"),
    ("b {port:05d}", "placeholder {port} takes no format spec or conversion"),
    ("b 'unclosed {id}", "No closing quotation"),
])
def test_a_bad_template_is_refused_before_anything_starts(template: str, message: str) -> None:
    with pytest.raises(BrokerCommandError, match=".*" + message.replace("{", r"\{").replace("}", r"\}")
                       .replace("(", r"\(").replace(")", r"\)")):
        BrokerCommand(template)


@pytest.mark.integration
def test_a_cluster_refuses_a_broker_cmd_for_a_broker_it_does_not_have(tmp_path: Path) -> None:
    with pytest.raises(BrokerCommandError, match=r"names broker\(s\) \[3\]"):
        LocalCluster(tmp_path, brokers=3, broker_cmd=BrokerCommand.parse("b {id}", "0,3"))


@pytest.mark.parametrize("argv, message", [
    (["chaos", "--seed", "1", "--duration", "5", "--broker-cmd", "b {nope}"], "unknown placeholder {nope}"),
    (["chaos", "--seed", "1", "--duration", "5", "--broker-cmd", ""], "--broker-cmd is empty"),
    (["chaos", "--seed", "1", "--duration", "5", "--broker-cmd", "b {id}", "--broker-cmd-for", "1,x"],
     "--broker-cmd-for takes broker ids separated by commas"),
    (["chaos", "--seed", "1", "--duration", "5", "--broker-cmd", "b {id}", "--broker-cmd-for", "5"],
     "but the cluster has brokers 0 to 2"),
    (["chaos", "--seed", "1", "--duration", "5", "--broker-cmd-for", "1"], "--broker-cmd-for needs --broker-cmd"),
    (["record-traces", "--scenario", "leader-kill", "--broker-cmd", "b {zk}"], "unknown placeholder {zk}"),
])
def test_bad_broker_cmd_input_is_one_line_and_exit_2(argv: list[str], message: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


@pytest.mark.integration  # the chaos run starts its ZooKeeper before it finds no broker command
def test_a_command_that_does_not_exist_is_one_line_and_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["chaos", "--seed", "1", "--duration", "5", "--out", str(tmp_path / "run"),
            "--broker-cmd", str(tmp_path / "no-such-broker") + " {id}"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "could not run the cluster" in err[0] and "no-such-broker" in err[0], err


# -- the stand-in: the Python broker started as a port ---------------------------------------------

@pytest.mark.integration
def test_the_stand_in_brokers_join_a_cluster_and_cluster_json_records_their_command(
        tmp_path: Path, zk_chroot: str) -> None:
    """Broker 1 through the template, 0 and 2 Python; ``config.json`` holds every setting."""
    cmd = BrokerCommand.parse(TEMPLATE, "1")
    with LocalCluster(tmp_path, brokers=3, zookeeper=zk_chroot, broker_cmd=cmd,
                      zk_session_timeout_s=2.0) as cluster:
        state = json.loads((tmp_path / "cluster.json").read_text())
        assert state["brokers"]["1"]["argv"][:2] == [sys.executable, str(STAND_IN)]
        assert state["brokers"]["0"]["argv"][1:3] == ["-m", "impl.node.broker"]
        written = json.loads((tmp_path / "broker-1" / "config.json").read_text())
        assert written["zk_session_timeout_s"] == 2.0 and written["run_id"] == cluster.run_id
        assert not (tmp_path / "broker-0" / "config.json").exists()
        assert {int(b) for b in cluster.metadata(1)["brokers"]} == {0, 1, 2}


@pytest.mark.integration
@pytest.mark.slow
def test_a_chaos_run_of_stand_in_brokers_loses_nothing_and_conforms(
        tmp_path: Path, zk_chroot: str, spark: Any) -> None:
    """Seed 1, every broker started through ``--broker-cmd``: the same verdict and the same
    conformance as the Python brokers' run of the same seed (tests/impl/harness/test_chaos.py)."""
    report = ChaosRun(1, 20, data_dir=tmp_path / "run", zookeeper=zk_chroot, spark=spark,
                      broker_cmd=BrokerCommand.parse(TEMPLATE),
                      log=lambda m: print(m, flush=True)).run()
    v = report.verdict
    assert all((tmp_path / "run" / f"broker-{b}" / "config.json").exists() for b in range(3))
    assert report.recovered and v.passed, "\n".join(v.findings)
    assert v.lost == 0 and v.duplicated == 0 and v.acknowledged > 100
    c = report.conformance
    assert c.get("groups", 0) >= PARTITIONS and c["conforming"] == c["groups"], c.get("render")
    assert report.exit_code == 0


@pytest.mark.slow  # the default suite keeps to about six minutes
def test_a_leader_kill_recorded_with_stand_in_brokers_conforms(tmp_path: Path) -> None:
    dest = record("leader-kill", tmp_path, log=print, broker_cmd=BrokerCommand.parse(TEMPLATE))
    events = [json.loads(line) for f in sorted(dest.glob("*.jsonl"))
              for line in f.read_text().splitlines() if line.strip()]
    assert {e["node"] for e in events} == {-1, 0, 1, 2}
    assert any(e["kind"] == "broker_crash" for e in events)
    verdicts = judge_run(events[0]["run"], events, load_judge(None), "kip320")
    assert verdicts and all(v["conforms"] for v in verdicts), [v["reason"] for v in verdicts]
