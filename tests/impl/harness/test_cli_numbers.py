"""Every numeric option of every command refuses a value out of its range in one line, exit 2.

A port above 65535 once gave a traceback (``bind``'s OverflowError) and a partition count
beyond 32 bits another (``struct.error`` on the wire).  The parser built by
``impl.harness.cli.main`` is walked: each command's numeric options get values out of their
range, and parsing alone -- nothing is started -- must end in exit 2 with one line on stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from impl.harness.cli.main import build_parser, main
from impl.harness.cli.option_ranges import PORT_MAX, FloatRange, IntRange, numeric_options

PARSER = build_parser()
OPTIONS = list(numeric_options(PARSER))


def _valid(action: argparse.Action) -> list[str]:
    """A value the action accepts (its flag first, for an option)."""
    if action.nargs == 0:
        value: list[str] = []
    elif action.choices:
        value = [str(next(iter(action.choices)))]
    elif isinstance(action.type, IntRange | FloatRange):
        value = [str(action.type.low if action.type.low > 0 else 1)]
    else:
        value = ["t"]
    return [action.option_strings[0], *value] if action.option_strings else value


def _argv(parser: argparse.ArgumentParser, tested: argparse.Action, value: str | None) -> list[str]:
    """The command's words, every required option and positional valid, ``tested`` given
    ``value`` (None: a valid one)."""
    argv = parser.prog.split()[1:]
    groups = [g for g in parser._mutually_exclusive_groups if g.required]
    satisfied = {id(a) for g in groups if tested in g._group_actions for a in g._group_actions}
    for g in groups:
        if id(g._group_actions[0]) not in satisfied:
            argv += _valid(g._group_actions[0])
            satisfied.update(id(a) for a in g._group_actions)
    for a in parser._actions:
        if a is tested or not a.option_strings or not a.required or id(a) in satisfied:
            continue
        argv += _valid(a)
    if tested.option_strings:
        argv += [f"{tested.option_strings[0]}={value}"] if value is not None else _valid(tested)
    for a in parser._actions:
        if not a.option_strings and not isinstance(a, argparse._SubParsersAction):
            argv += [value] if a is tested and value is not None else _valid(a)
    return argv


def _out_of(kind: IntRange | FloatRange) -> st.SearchStrategy[str]:
    """Values outside ``kind``'s range: below it, above it, past 32 bits, huge, not finite."""
    ints = st.one_of(st.integers(max_value=int(kind.low) - 1),
                     st.integers(min_value=int(kind.high) + 1),
                     st.sampled_from([2**31, 2**32 + 1, 2**63, 10**30, -(2**31) - 1]))
    if isinstance(kind, IntRange):
        return ints.map(str)
    return st.one_of(ints.map(str), st.floats(allow_nan=True).filter(
        lambda f: not kind.low <= f <= kind.high).map(repr))


def _parse(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            PARSER.parse_args(argv)
        except SystemExit as exc:
            return int(exc.code or 0), err.getvalue()
    return 0, err.getvalue()


def test_every_command_with_a_numeric_option_is_walked() -> None:
    names = {(p.prog, a.dest) for p, a in OPTIONS}
    assert ("epochal cluster start", "port_base") in names
    assert ("epochal topics create", "partitions") in names
    assert ("epochal topics add-partitions", "count") in names
    assert len(names) >= 40


@pytest.mark.parametrize("parser, action", OPTIONS, ids=[f"{p.prog[8:]} {a.dest}" for p, a in OPTIONS])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_value_out_of_range_is_one_line_and_exit_2(parser: argparse.ArgumentParser,
                                                     action: argparse.Action, data: st.DataObject) -> None:
    assert _parse(_argv(parser, action, None)) == (0, "")  # the rest of the words are valid
    value = data.draw(_out_of(action.type), label="value")
    code, err = _parse(_argv(parser, action, value))
    assert code == 2
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert "error:" in err


def test_ports_are_refused_above_65535_where_parsed_and_where_combined(capsys: pytest.CaptureFixture[str]) -> None:
    assert _parse(["cluster", "start", f"--port-base={PORT_MAX + 1}"])[0] == 2
    assert _parse(["topics", "describe", "--bootstrap", f"127.0.0.1:{PORT_MAX + 1}"])[0] == 2
    # a base whose brokers' ports would pass 65535: refused by the command, before it starts
    assert main(["cluster", "start", "--brokers", "3", "--port-base", str(PORT_MAX - 2),
                 "--data-dir", "/nonexistent/never-created"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "65535" in err
