"""Tool calls in flight, as corral's hooks report them: a running daemon keeps its snapshot
fresher while one is in flight. The hooks' half (`tool_call`) is on their fast path: importing
this module loads nothing, and the daemon's half loads what it needs when called."""

TYPE_CHECKING = False  # no `typing` at run time: the hooks' start-up budget
if TYPE_CHECKING:
    from corral.adapters.notify import Events as ToolCallEvents
    from corral.adapters.notify import InFlight

    __all__ = ["InFlight", "ToolCallEvents", "in_flight", "tool_call", "tool_call_events"]


def tool_call(home: str, phase: str, session_id: str, tool_use_id: str) -> None:
    """Report that a tool call started (`phase` "start") or ended ("end"); never raises, and
    costs next to nothing when no daemon listens."""
    from corral.adapters import notify

    notify.tool_call(home, phase, session_id, tool_use_id)


def tool_call_events() -> "ToolCallEvents":
    """Bind the daemon's tool-call socket in corral's home (the caller holds the daemon lock):
    the hooks' reports arrive there."""
    from corral import paths
    from corral.adapters import notify

    return notify.Events(paths.home_dir())


def in_flight() -> "InFlight":
    """An empty table of the tool calls in flight, fed with the reports `tool_call_events`
    receives."""
    from corral.adapters import notify

    return notify.InFlight()
