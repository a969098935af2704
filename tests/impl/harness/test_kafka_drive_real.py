"""``epochal drive --engine kafka`` on real Apache Kafka: the leader-kill path at ibp-2.6 --
a follower's fetches held by the relay until the leader takes it out of the ISR, the leader
killed, the controller electing the follower in the ISR, the held one rejoining -- taken step
by step and judged against kafka26 (about 25 s, 10 of them the cluster's start)."""

from __future__ import annotations

from pathlib import Path

from impl_testing import REAL_KAFKA

from impl.harness.kafka.paths import PATHS

pytestmark = REAL_KAFKA


def test_the_leader_kill_path_is_followed_at_ibp26(tmp_path: Path) -> None:
    from impl.harness.kafka import fetch
    from impl.harness.kafka.drive import FOLLOWED, KafkaDriver, render
    from impl.harness.kafka.relay import read_log

    report = KafkaDriver("leader_kill_isr", "ibp-2.6", tmp_path / "run", jars=fetch()).run()
    assert report.verdict == FOLLOWED and report.exit_code == 0, render(report)
    steps = PATHS["leader_kill_isr"].steps("ibp-2.6")
    assert [s.step for s in report.steps] == steps and all(s.outcome == FOLLOWED for s in report.steps)
    judged = [s.event for s in report.steps if s.event is not None]
    assert len(judged) == len(steps) - 1  # the hold is the relay's alone
    assert report.cast is not None
    leader, held = report.cast(0), report.cast(2)
    shrink = next(s for s in report.steps if s.step.action == "shrink_isr")
    crash = next(s for s in report.steps if s.step.action == "broker_crash")
    assert shrink.event is not None and crash.event is not None and shrink.event < crash.event
    # the held follower's fetches reached the leader's relay and never the leader: no answer to any after the hold
    log = read_log(tmp_path / "run" / "relay" / f"broker-{leader}.jsonl")
    asked = [e for e in log if e.get("api") == "Fetch" and e["direction"] == "request" and e.get("src") == held]
    answered = {e["correlation_id"] for e in log if e.get("api") == "Fetch" and e["direction"] == "response"
                and e["conn"] == asked[-1]["conn"]}
    assert asked and asked[-1]["correlation_id"] not in answered
