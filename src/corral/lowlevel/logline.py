"""corral's own log (`<home>/corral.log`): one line per event a person may need later (an
internal error of the hook or the status line, a ledger file skipped). Never raises.

`warn` is how lower layers report something skipped: on stderr through `logging` for the
CLI (one warning line), or into the log file once a program that must print nothing of its
own (the Claude hook) calls `to_log`.
"""

_WHO: str | None = None


def line(who: str, message: str) -> None:
    """Append `<time> <who>[<pid>] <message>` to corral's log; never raises."""
    import os
    import time

    from corral.lowlevel import locations

    try:
        home = locations.home_dir()
        os.makedirs(home, mode=0o700, exist_ok=True)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        text = " ".join(message.split("\n"))
        fd = os.open(f"{home}/corral.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, f"{stamp} {who}[{os.getpid()}] {text}\n".encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except OSError:
        pass


def to_log(who: str) -> None:
    """From now on, `warn` writes to corral's log as `who` instead of stderr."""
    global _WHO
    _WHO = who


def warn(message: str, logger: str = "corral") -> None:
    """Report something skipped: stderr (a `logging` warning), or corral's log after
    `to_log`."""
    if _WHO is not None:
        line(_WHO, message)
        return
    import logging

    logging.getLogger(logger).warning(message)
