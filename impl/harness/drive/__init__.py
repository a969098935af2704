"""Model-driven testing, so the implementation is held to the model step by step: the model chooses the schedule, real brokers run it
behind the harness's relay, and the trace judge checks every step (docs/drive.md).

``Driver(config).run(ModelRun)`` returns a :class:`DriveReport`; ``paths`` reads the runs
(named scenarios, ``epochal check --json`` counterexamples); ``operations`` maps each model
action to the harness operation that makes the implementation take it."""

from impl.harness.drive.driver import DriveError, Driver, DriveReport, StepReport
from impl.harness.drive.operations import OPERATIONS, operation_names
from impl.harness.drive.paths import ModelRun, PathError, from_json, scenario

__all__ = ["OPERATIONS", "DriveError", "DriveReport", "Driver", "ModelRun", "PathError", "StepReport",
           "from_json", "operation_names", "scenario"]
