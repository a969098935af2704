"""Bounded model checking, and the differential check of the relation against the explicit model."""

from __future__ import annotations

from collections.abc import Callable

import z3

from model.config import Config
from model.state import (
    State,
    initial,
)
from properties.checkers.symbolic.coverage import COVERED
from properties.checkers.symbolic.encoding import Disjunct, Encoding, Params
from properties.checkers.symbolic.props import (
    STATE_PROPERTIES,
    durable,
    prop_epoch_monotonic,
    prop_log_epochs_monotonic,
)
from properties.checkers.symbolic.state import (
    ALTER_ACTIONS,
    FETCH_KINDS,
    Shape,
    Term,
    alter_decode,
    encode,
    eq_states,
    fetch_message,
    req_decode,
    stop_decode,
)


def sample_states(cfg: Config, count: int, explore: int = 5000, enabling: str | None = None) -> list[State]:
    """``count`` reachable states spread evenly over the first ``explore`` states of a
    breadth-first search (no symmetry), so that deep states are sampled, not just the
    first few levels -- with ``enabling``, only states in which that action is enabled
    (an action that a deep prefix enables, which an even spread would rarely meet)."""
    from model.registry import successors

    first = initial(cfg)
    seen, queue, found = {first}, [first], [first]
    while queue and len(found) < explore:
        nxt = []
        for s in queue:
            for _, t in successors(s, cfg):
                if t not in seen and len(found) < explore:
                    seen.add(t)
                    found.append(t)
                    nxt.append(t)
        queue = nxt
    if enabling is not None:
        from model.registry import ACTIONS

        entry = ACTIONS[enabling]
        found = [s for s in found if any(entry.fn(s, cfg, *args) not in (None, s) for args in entry.args(s, cfg))]
    stride = max(1, len(found) // count)
    return found[::stride][:count]


def differential(cfg: Config, states: list[State], encoding: type[Encoding] = Encoding) -> list[str]:
    """Mismatches between this relation and ``model.registry.successors`` (restricted to
    ``COVERED``) on each state, and between the symbolic and explicit properties.

    The relation and the properties are built once over symbolic states ``S`` and ``X``;
    each sampled state is then pinned (``S == encode(s)``) inside a push/pop scope.
    ``encoding`` is the relation's class (a test passes a mutated one).
    """
    from model.registry import successors
    from properties.safety import BY_NAME, epoch_monotonic, epoch_monotonic_state

    shape = Shape.of(cfg)
    enc = encoding(shape, Params.of(cfg))
    S, X = shape.fresh("s"), shape.fresh("x")
    nxt, ds = enc.step(S, X, COVERED)
    rel = z3.Solver()
    rel.add(nxt)
    props = z3.Solver()
    formulas = {name: f(shape, S) for name, f in STATE_PROPERTIES.items() if name in BY_NAME}
    formulas["epoch_monotonic (log epochs)"] = prop_log_epochs_monotonic(shape, S)
    explicit = {name: BY_NAME[name].check for name in formulas if name in BY_NAME}
    explicit["epoch_monotonic (log epochs)"] = epoch_monotonic_state
    mono = prop_epoch_monotonic(shape, S, X)
    problems: list[str] = []
    for k, s in enumerate(states):
        pin = eq_states(shape, S, encode(shape, s))
        succ = [(st, t) for st, t in successors(s, cfg) if st.action in COVERED]
        rel.push()
        rel.add(pin)
        for st, t in succ:
            rel.push()
            rel.add(eq_states(shape, X, encode(shape, t)))
            allowed = rel.check()
            rel.pop()
            if allowed == z3.unknown:  # the quantifiers of other cases: ask that action's cases alone
                alone = z3.Solver()
                alone.add(enc.step(S, X, (st.action,))[0], pin, eq_states(shape, X, encode(shape, t)))
                allowed = alone.check()
            if allowed != z3.sat:
                problems.append(f"state {k}: explicit step {st.action}{st.args} not allowed by the z3 relation")
        rel.add(z3.Not(eq_states(shape, X, S)))
        for _, t in succ:
            rel.add(z3.Not(eq_states(shape, X, encode(shape, t))))
        if rel.check() == z3.sat:
            model = rel.model()
            which = [d.action + str(d.args) for d in ds
                     if z3.is_true(model.eval(z3.And(d.guard, eq_states(shape, d.post, X)), model_completion=True))]
            problems.append(f"state {k}: the z3 relation allows a step the model does not: {which}")
        rel.pop()
        props.push()
        props.add(pin)
        for name, f in formulas.items():
            props.push()
            props.add(z3.Not(f))
            sym_holds = props.check() == z3.unsat
            props.pop()
            if sym_holds != (explicit[name](s) is None):
                problems.append(f"state {k}: property {name} disagrees")
        for st, t in succ:
            props.push()
            props.add(eq_states(shape, X, encode(shape, t)), z3.Not(mono))
            sym_holds = props.check() == z3.unsat
            props.pop()
            if sym_holds != (epoch_monotonic(s, t) is None):
                problems.append(f"state {k}: epoch_monotonic disagrees on step {st.action}")
        props.pop()
    return problems


def bmc(cfg: Config, depth: int, progress: Callable[[int, float, bool], None] | None = None,
        start: State | None = None) -> tuple[int | None, list, list[float]]:
    """Look for a state violating ``durable`` within ``depth`` steps of the initial state
    (or of ``start``, a state the explicit model reached: the solver's time grows about 5x
    per depth -- 0.8 s at 4, 3.8 s at 5, 25 s at 6 -- so deep bugs are reached from a
    replayed explicit prefix).

    Returns (depth of the counterexample or None, decoded explicit steps, seconds per depth).
    The counterexample is decoded into ``model.actions.Step``s by replaying the explicit
    model alongside the z3 trace, choosing at each step the action case z3 took."""
    import time

    from model.actions import Step
    from model.registry import apply

    shape = Shape.of(cfg)
    enc = Encoding(shape, Params.of(cfg))
    first = initial(cfg) if start is None else start
    states = [encode(shape, first)]
    cases: list[list[Disjunct]] = []
    sels: list[Term] = []
    trans: list[Term] = []
    times: list[float] = []
    for k in range(1, depth + 1):
        started = time.perf_counter()
        nxt = shape.fresh(f"s{k}")
        rel, ds, sel = enc.merged_step(states[-1], nxt, str(k))
        trans.append(rel)
        states.append(nxt)
        cases.append(ds)
        sels.append(sel)
        # A fresh, non-incremental solver per depth: z3 then runs its preprocessing
        # (solve-eqs eliminates the per-step state equations), which incremental mode skips.
        sol = z3.Solver()
        sol.add(*trans, z3.Not(durable(shape, nxt)))
        r = sol.check()
        times.append(time.perf_counter() - started)
        if progress:
            progress(k, times[-1], r == z3.sat)
        if r == z3.sat:
            model = sol.model()
            x = first
            steps = []
            for i in range(k):
                d = cases[i][model.eval(sels[i], model_completion=True).as_long()]
                if d.action in ALTER_ACTIONS:
                    m = alter_decode(shape, model, d.msg, x.zk.partitions[0].topic_id)
                    args: tuple = (*d.args[:1], m) if d.action == "alter_partition" else (m,)
                elif d.msg is not None:
                    stop = d.action == "stop_replica"
                    args = (stop_decode(shape, model, d.msg, d.args[0]) if stop else req_decode(shape, model, d.msg),)
                elif d.action in FETCH_KINDS:
                    args = (fetch_message(x, *d.args),)
                else:
                    args = d.args
                step = Step(d.action, args)
                y = apply(x, cfg, step)
                if y is None:
                    raise RuntimeError(f"decoded step {i + 1} {step} is not enabled in the explicit model")
                steps.append(step)
                x = y
            return k, steps, times
    return None, [], times
