"""What the registry says about one action: the shape of an entry, its knob and its decisions."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from model.state import State

if TYPE_CHECKING:
    from model.config import Config


Args = tuple


View = dict[str, Any]


class Supported(NamedTuple):
    """The backend runs this action as the model does (a test holds it to that)."""

    note: str = ""

    @property
    def supported(self) -> bool:
        return True


class Unsupported(NamedTuple):
    """The backend does not run this action, and why.  "Not yet" is a decision too."""

    reason: str

    @property
    def supported(self) -> bool:
        return False


Decision = Supported | Unsupported


class Knob(NamedTuple):
    """The ``Config`` bound that limits an action: how many times, in all, a run may take it
    -- or, for ``fetch_max_records``, how much of its answer one step carries.

    ``model.config.Config`` has one field per knob (``field``, with its ``default``), and
    ``model.config.validate`` holds it to ``low`` .. ``high`` (no upper limit when ``high`` is
    None); every model command takes it as ``flag``, with ``help`` as its --help text.  A
    backend that does not run the action refuses a configuration whose knob is above 0, and
    says so by ``feature``."""

    field: str  # the ``Config`` field: the action fires only when it is above 0
    feature: str  # as a refusal names it: "GC pauses", "reassignments"
    default: int
    help: str
    low: int = 0
    high: int | None = None
    # how ``Config.describe`` shows it: a failure bound stands with the search's bounds (and
    # ``always``, even at 0: every named configuration's failures are part of its name);
    # the others follow, each only when above 0
    failure: bool = False
    always: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.field.replace("_", "-")

    def asked(self, cfg: Config) -> bool:
        return getattr(cfg, self.field) > 0

    def check(self, value: int) -> None:
        """Reject a value out of range, with a message a user can act on."""
        if self.high is None and value < self.low:
            raise ValueError(f"{self.flag} must be >= {self.low}")
        if self.high is not None and not self.low <= value <= self.high:
            raise ValueError(f"{self.flag} must be between {self.low} and {self.high}")


class Traced(NamedTuple):
    """How a step of the action appears in a trace (``traces/SCHEMA.md``): its event kind,
    and -- when several actions share a kind -- the ``reason`` params that say it is this one."""

    kind: str
    reasons: tuple[str, ...] = ()


SILENT = None
"""``trace`` of an action no implementation records (it shows only in what follows it)."""


class Emitted(NamedTuple):
    """The event an exported step becomes: its node (``HARNESS`` for injected faults), its
    params and post-state, and whether it is a ZooKeeper write (it then carries a zxid)."""

    node: int
    params: dict[str, Any]
    post: dict[str, Any] | None = None
    zk: bool = False


class Coverage(NamedTuple):
    """One decision per backend that runs the model's actions."""

    native: Decision  # properties/checkers/native/rules.c (the compiled search's rules)
    z3: Decision  # properties/checkers/symbolic/
    judge: Decision  # conformance/judge: replaying recorded traces
    driver: Decision  # the model-driven harness driver: real brokers take the model's step


def _first_arg(args: Args) -> int:
    return args[0]


class Entry(NamedTuple):
    """One action of the protocol, declared once.

    ``fn`` is the guard and effect (``model.actions``), ``args`` enumerates the arguments
    worth trying in a state.  ``explored``: whether a search tries it at all (False for a
    self-loop; see ``model.registry.explored`` for the reassignment actions).  ``section``
    is the design section it implements (``000 A`` .. ``000 H`` of seed 000, ``001`` ..
    ``004``), ``impl`` the dotted name of the implementation's method that performs it
    (a string: the model never imports the implementation).

    The judge's view of a step: ``actor`` (the broker whose trace records it), ``view``
    (every field an event of it could carry, in model terms -- model broker ids and model
    record values, post-state keys as ``post.<name>``, partition 0), ``event`` (the event
    it exports as), ``silent`` (None: always recorded; else when an implementation may take
    it without recording it, which makes it an *internal* step the judge may insert),
    ``cut_short`` (a kill -9 may land between its effect and its trace line) and
    ``freezing`` (its broker cannot take silent steps right after it) and ``from_event``
    (for a self-loop the model forgets: its arguments rebuilt from the observed fields, the
    acting broker and the state).
    """

    name: str
    fn: Callable[..., State | None]
    args: Callable[[State, Config], Iterable[tuple]]
    section: str
    impl: str
    trace: Traced | None
    describe: Callable[[Args, State, State], str]
    view: Callable[[Args, State, State], View]
    event: Callable[[Args, State, State], Emitted | None]
    coverage: Coverage
    explored: bool = True
    knob: Knob | None = None
    actor: Callable[[Args], int] = _first_arg
    silent: Callable[[Args, State, State], bool] | None = None
    cut_short: bool = False
    freezing: bool = False
    from_event: Callable[[dict[str, Any], int, State], Args] | None = None
    also_enabled_by: tuple[Knob, ...] = ()  # more knobs that turn exploring it on
    # knobs that change the action's rule rather than enable it (``reuse_partition_ids``):
    # a backend that does not run the action refuses them as it refuses ``knob``
    modifiers: tuple[Knob, ...] = ()

    def explored_in(self, cfg: Config) -> bool:
        """Whether a search of ``cfg`` tries this action: always, or when a knob it needs
        (``knob``, ``also_enabled_by``) is on -- so that every configuration with those
        knobs off keeps exactly the state space it had."""
        if self.explored:
            return True
        knobs = ((self.knob,) if self.knob is not None else ()) + self.also_enabled_by
        return any(f.asked(cfg) for f in knobs)

    @property
    def summary(self) -> str:
        """The first line of the action's docstring."""
        return (self.fn.__doc__ or "").strip().split("\n")[0]


DRIVEN = Supported()
"""The model-driven harness (``epochal drive``) runs the action: its harness operation is
``impl.harness.drive.operations.OPERATIONS[name]`` (named there, since the model does not
know the implementation; ``tests/impl/harness/test_drive.py`` holds the two to each other)."""
