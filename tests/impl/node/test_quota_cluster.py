"""Integration: the controller-mutation quota (seed 001) on a real cluster, and the
``epochal topics create`` / ``epochal quotas`` command lines.

Clusters run with ``controller_quota_window_num=1`` so a quota of R mutations/s has a burst
of R and a debt of D mutations is D/R seconds of throttle: seconds, not minutes.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest
from impl_testing import wait_until

from impl.harness.cli.main import main
from impl.node import zk as zkl
from impl.node.client import Admin, ThrottlingQuotaExceeded
from impl.node.wire import ApiKey, BlockingConnection, ErrorCode


def controller_id(zk: Any) -> int:
    data, _ = zk.get(zkl.CONTROLLER)
    return int(json.loads(data)["brokerid"])


def to_controller(c: Any, zk: Any, body: dict[str, Any],
                  api: ApiKey = ApiKey.CREATE_TOPICS) -> tuple[int, dict[str, Any]]:
    conn = BlockingConnection(*c.endpoint(controller_id(zk)), timeout=10)
    try:
        error, _, resp = conn.send(api, body)
        return error, resp
    finally:
        conn.close()


@pytest.mark.integration
def test_new_clients_get_per_topic_throttling_and_the_admin_client_waits_it_out(make_cluster):
    c = make_cluster(3, controller_quota_window_num=1)
    zk = c.zk_client()
    with Admin(c.bootstrap) as admin:
        admin.alter_quota("bob", None, 5)  # R = 5/s, B = 5
    # one request, two topics: the first is admitted (K = 5 >= 0, then K = -5), the second
    # is refused on its own with the time until K is back at 0
    error, resp = to_controller(c, zk, {"user": "bob", "topics": [
        {"topic": "big", "partitions": 10}, {"topic": "small", "partitions": 1}]})
    assert error == ErrorCode.NONE
    big, small = resp["topics"]
    assert big["error"] == ErrorCode.NONE and small["error"] == ErrorCode.THROTTLING_QUOTA_EXCEEDED
    assert 800 <= small["throttle_time_ms"] <= 1000 and resp["throttle_time_ms"] == small["throttle_time_ms"]
    assert zk.exists(zkl.topic_path("big")) and not zk.exists(zkl.topic_path("small"))
    # validate-only requests are exempt: checked, not created, not charged
    error, resp = to_controller(c, zk, {"user": "bob", "validate_only": True,
                                        "topics": [{"topic": "probe", "partitions": 50}]})
    assert resp["topics"][0]["error"] == ErrorCode.NONE and not zk.exists(zkl.topic_path("probe"))
    # another principal has no quota: never throttled
    error, resp = to_controller(c, zk, {"user": "eve", "topics": [{"topic": "free", "partitions": 40}]})
    assert resp["topics"][0]["error"] == ErrorCode.NONE
    # the admin client honours the throttle time and retries until admitted
    with Admin(c.bootstrap, user="bob") as admin:
        t0 = time.monotonic()
        admin.create_topic("small", partitions=1, wait=0)
        waited = time.monotonic() - t0
        assert zk.exists(zkl.topic_path("small")) and waited > 0.1  # it waited, then retried
        admin.create_topic("big2", partitions=10, wait=0)  # K was >= 0: admitted, K = -10
    # ... unless told not to: then the caller gets the throttle time
    with Admin(c.bootstrap, user="bob", retry_on_quota_violation=False) as admin:
        with pytest.raises(ThrottlingQuotaExceeded) as exc:
            admin.create_topic("small2", partitions=1, wait=0)
    assert exc.value.throttle_time_ms > 1000 and exc.value.topics == ["small2"]
    # ... or when the wait would outlast the API timeout
    with Admin(c.bootstrap, user="bob", api_timeout_s=0.5) as admin:
        with pytest.raises(ThrottlingQuotaExceeded):
            admin.create_topic("small3", partitions=1, wait=0)
    # deletions are mutations too
    with Admin(c.bootstrap, user="bob", retry_on_quota_violation=False) as admin:
        with pytest.raises(ThrottlingQuotaExceeded):
            admin.delete_topic("big", wait=0)
    assert zk.exists(zkl.topic_path("big"))
    zk.stop()


@pytest.mark.integration
def test_a_new_controller_reads_the_quotas_from_zookeeper(make_cluster):
    c = make_cluster(3, controller_quota_window_num=1)
    zk = c.zk_client()
    with Admin(c.bootstrap) as admin:
        admin.alter_quota("<default>", None, 2)  # every user: R = 2/s, B = 2
    old = controller_id(zk)
    zk.delete(zkl.CONTROLLER)  # seed 002: an election; the old controller backs off
    wait_until(lambda: zk.exists(zkl.CONTROLLER) and controller_id(zk) != old or None, 20,
               "another controller")
    with Admin(c.bootstrap, user="frank", retry_on_quota_violation=False) as admin:
        admin.create_topic("first", partitions=6, wait=0)  # K = 2 -> -4
        with pytest.raises(ThrottlingQuotaExceeded) as exc:
            admin.create_topic("second", partitions=1, wait=0)
        assert 1500 <= exc.value.throttle_time_ms <= 2000
        described = admin.describe_quotas()
    assert described["controller_id"] == controller_id(zk) != old
    assert described["quotas"] == [{"user": "<default>", "client_id": None,
                                    "controller_mutation_rate": 2.0}]
    # (the describe waited out the mute on this connection, so the debt is repaid by now)
    assert described["metrics"]["user=frank"]["throttle-time"] >= 1500
    zk.stop()


@pytest.mark.integration
def test_topics_create_command_does_not_retry_and_says_how_long_to_wait(make_cluster, capsys):
    c = make_cluster(1, controller_quota_window_num=1)
    boot = c.bootstrap
    assert main(["quotas", "alter", "--user", "gina", "--client-id", "cli",
                 "--controller-mutation-rate", "3", "--bootstrap", boot]) == 0
    assert main(["quotas", "alter", "--default", "--controller-mutation-rate", "100",
                 "--bootstrap", boot]) == 0
    out = capsys.readouterr().out
    assert "controller_mutation_rate for user=gina,client-id=cli: set to 3 mutations/s" in out
    assert main(["topics", "create", "t1", "--partitions", "5", "--user", "gina",
                 "--client-id", "cli", "--bootstrap", boot]) == 0
    capsys.readouterr()
    assert main(["topics", "create", "t2", "--user", "gina", "--client-id", "cli",
                 "--bootstrap", boot]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "quota" in err[0], err
    wait = re.search(r"retry in (\d+\.\d)s$", err[0])
    assert wait and 0 < float(wait.group(1)) <= 0.7, err  # K = 3 - 5 = -2: 2/3 s at most
    assert main(["topics", "create", "t3", "--partitions", "99", "--validate-only",
                 "--user", "gina", "--client-id", "cli", "--bootstrap", boot]) == 0
    assert "nothing created" in capsys.readouterr().out
    assert main(["quotas", "describe", "--bootstrap", boot]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "user=<default>  controller_mutation_rate=100" in lines
    assert "user=gina,client-id=cli  controller_mutation_rate=3" in lines
    assert any(line.startswith("metrics user=gina,client-id=cli  rate=") for line in lines)
    assert main(["quotas", "alter", "--user", "gina", "--client-id", "cli", "--delete",
                 "--bootstrap", boot]) == 0
    assert main(["quotas", "describe", "--user", "gina", "--bootstrap", boot]) == 0
    assert "(no quotas)" in capsys.readouterr().out


@pytest.mark.parametrize("argv, expected", [
    (["quotas", "alter", "--controller-mutation-rate", "5"], "name the quota's entity"),
    (["quotas", "alter", "--user", "a", "--controller-mutation-rate", "0"], "must be positive"),
    (["quotas", "alter", "--user", "a/b", "--controller-mutation-rate", "1"], "invalid user"),
    (["quotas", "alter", "--user", "a", "--user-default", "--delete"], "not both"),
    (["quotas", "describe", "--bootstrap", "127.0.0.1:1"], "cannot reach the cluster"),
])
def test_quotas_command_errors_are_one_line(capsys, argv, expected):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0] and "Traceback" not in err[0], err
