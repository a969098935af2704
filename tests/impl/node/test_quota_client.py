"""The Admin client's handling of per-topic answers (seeds 001 and 004), with the controller
scripted: throttled topics are resent after their throttle time until the API timeout (or
not at all when opted out); topics a controller refused because it lost its role are resent
to the rediscovered controller.  No cluster, no real sleeping."""

from __future__ import annotations

from typing import Any

import pytest

from impl.node import client as client_module
from impl.node.client import Admin, ThrottlingQuotaExceeded
from impl.node.wire import ApiKey, ErrorCode

OK, THROTTLED, MOVED = 0, int(ErrorCode.THROTTLING_QUOTA_EXCEEDED), int(ErrorCode.NOT_CONTROLLER)


class ScriptedAdmin(Admin):
    """``to_controller`` answers from a script: one {topic: (error, throttle_ms)} per call."""

    def __init__(self, script: list[dict[str, tuple[int, int]]], **kw: Any) -> None:
        super().__init__("127.0.0.1:1", **kw)
        self.script, self.sent, self.rediscoveries = script, [], 0

    def to_controller(self, api: ApiKey, body: dict[str, Any],
                      deadline: float | None = None) -> dict[str, Any]:
        names = [t if isinstance(t, str) else t["topic"] for t in body["topics"]]
        self.sent.append(names)
        answer = self.script.pop(0)
        assert set(answer) == set(names), (answer, names)
        if self.controller_id == -1:
            self.rediscoveries += 1
        self.controller_id = 7
        return {"topics": [{"topic": t, "error": e, "throttle_time_ms": ms}
                           for t, (e, ms) in answer.items()],
                "throttle_time_ms": max(ms for _, ms in answer.values())}


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    slept: list[float] = []
    monkeypatch.setattr(client_module.time, "sleep", slept.append)
    return slept


def test_throttled_topics_alone_are_resent_after_the_throttle_time(sleeps):
    admin = ScriptedAdmin([{"a": (OK, 0), "b": (THROTTLED, 1200), "c": (THROTTLED, 800)},
                           {"b": (OK, 0), "c": (THROTTLED, 300)}, {"c": (OK, 0)}])
    results = admin.create_topics([{"topic": t, "partitions": 1} for t in "abc"])
    assert all(r["error"] == OK for r in results.values())
    assert admin.sent == [["a", "b", "c"], ["b", "c"], ["c"]]
    assert sleeps == [1.2, 0.3]


def test_opting_out_of_retries_hands_back_the_throttle_time(sleeps):
    admin = ScriptedAdmin([{"a": (THROTTLED, 4000)}], retry_on_quota_violation=False)
    with pytest.raises(ThrottlingQuotaExceeded) as exc:
        admin.create_topic("a", wait=0)
    assert exc.value.throttle_time_ms == 4000 and exc.value.code == THROTTLED
    assert "retry in 4.0s" in str(exc.value) and sleeps == []


def test_a_throttle_past_the_api_timeout_is_not_waited_for(sleeps):
    admin = ScriptedAdmin([{"a": (THROTTLED, 90_000)}], api_timeout_s=60)
    with pytest.raises(ThrottlingQuotaExceeded):
        admin.delete_topic("a", wait=0)
    assert sleeps == []


def test_topics_refused_by_a_former_controller_are_resent_after_rediscovery(sleeps):
    admin = ScriptedAdmin([{"a": (OK, 0), "b": (MOVED, 0)}, {"b": (OK, 0)}])
    admin.controller_id = 7
    results = admin.create_topics([{"topic": "a"}, {"topic": "b"}])
    assert results["b"]["error"] == OK and admin.sent == [["a", "b"], ["b"]]
    assert admin.rediscoveries == 1  # controller_id was reset before the resend
