"""Reading shell lines (pure): see plan.decide."""

from corral.core.shell.plan import (
    Action,
    Decision,
    JobSpec,
    LiveJob,
    Mode,
    PortHolder,
    decide,
    explain_json,
    quote_for_wrapper,
)

__all__ = [
    "Action",
    "Decision",
    "JobSpec",
    "LiveJob",
    "Mode",
    "PortHolder",
    "decide",
    "explain_json",
    "quote_for_wrapper",
]
