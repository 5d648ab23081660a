"""Tool calls in flight, as corral's hooks report them: a running daemon keeps its snapshot
fresher while one is in flight. On the hook's fast path: imports nothing but the adapter."""


def tool_call(home: str, phase: str, session_id: str, tool_use_id: str) -> None:
    """Report that a tool call started (`phase` "start") or ended ("end"); never raises, and
    costs next to nothing when no daemon listens."""
    from corral.adapters import notify

    notify.tool_call(home, phase, session_id, tool_use_id)
