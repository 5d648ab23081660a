"""corral explain: why a line would (or would not) be supervised, and how it is rewritten.

It consults the live ledger and listening ports as the Claude Code hook does, but reserves
nothing: it is a dry run.
"""

from __future__ import annotations

import argparse
import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from corral.core.shell.decision import InPlace


def configure(parser: argparse.ArgumentParser) -> None:
    parser.usage = "corral explain [--background] [--cwd DIR] [--json] -- LINE"
    parser.add_argument(
        "--background",
        action="store_true",
        help="as if the agent asked to run it in the background",
    )
    parser.add_argument("--cwd", metavar="DIR", help="the folder the line runs in (default: here)")
    parser.add_argument("--json", action="store_true", help="print the versioned JSON envelope")
    parser.add_argument("line", nargs=argparse.REMAINDER, help="the line, after --")


def main(args: argparse.Namespace) -> int:
    from corral.core.shell.plan import explain_json, started_by_corral
    from corral.errors import UsageError
    from corral.service.admission import admit

    words = list(args.line)
    if words and words[0] == "--":
        words = words[1:]
    if not words:
        raise UsageError("give the line after --, e.g. corral explain -- 'npm run dev'")
    line = words[0] if len(words) == 1 else " ".join(words)
    cwd = os.path.abspath(args.cwd or os.getcwd())
    if not os.path.isdir(cwd):
        raise UsageError(f"--cwd {cwd}: no such folder")
    from corral.service.claude import wrapper

    decision = admit(line, background=args.background, cwd=cwd, wrapper=wrapper(), reserve=False)
    data = explain_json(decision)
    if args.json:
        from corral.core.envelope import dumps

        print(dumps(data))
        return 0
    from corral.core.text import printable

    out = sys.stdout
    if not data["readable"]:
        out.write(
            "untouched: corral cannot read this line with certainty "
            f"({printable(data['reason'])});\n"
            "it runs exactly as written, neither recorded nor refused.\n"
        )
        return 0
    if data["action"] == "refuse":
        out.write(f"refused: {printable(data['refusal'])}\n")
    elif data["action"] == "wrap" and data["mode"] == "in-place":
        out.write(
            "supervised in place: each long runner the line sends to the background runs\n"
            "under a supervisor of its own; every other byte of the line runs as written.\n"
            f"The agent's shell runs:\n  {printable(data['rewritten'])}\n"
        )
    elif data["action"] == "wrap":
        out.write(
            f"supervised ({data['mode']} mode). The agent's shell runs:\n"
            f"  {printable(data['rewritten'])}\n"
        )
    elif any(job["note"] for job in data["jobs"]):
        out.write(
            "untouched: it runs as written; corral cannot move the job it sends to the\n"
            "background under a supervisor exactly (see below). No job below duplicates a\n"
            "running one.\n"
        )
    elif data["jobs"]:
        # `a & b`: corral wraps a line whose `&` ends it; here the jobs were only checked
        out.write(
            "untouched: it runs as written (corral supervises a job sent to the background\n"
            "only when `&` ends the line, or a long runner sent there mid-line); no job\n"
            "below duplicates a running one.\n"
        )
    elif started_by_corral(line, cwd, os.path.expanduser("~")):
        out.write(
            "untouched: corral's own `run` starts the job under its supervisor and refuses a\n"
            "duplicate or a held port itself; no second supervisor wraps it. It runs as written.\n"
        )
    else:
        out.write("untouched: no long-running job to supervise; it runs as written.\n")
    kept = {w.job: w for w in decision.in_place if w.head is not None}
    for index, job in enumerate(data["jobs"]):
        port = f", port {job['port']}" if job["port"] else ""
        where = f"(in {job['cwd']}{port}, identity {job['identity']})"
        out.write(printable(f"  job: {job['display']}  {where}") + "\n")
        if job["rewritten"]:
            out.write(printable(f"    rewritten in place: {job['rewritten']}") + "\n")
            if index in kept:
                out.write(_kept(kept[index]))
        elif job["note"]:
            out.write(printable(f"    runs as written: {job['note']}") + "\n")
    return 0


def _kept(wrap: InPlace) -> str:
    """How a command that keeps its text reaches its supervisor (core.shell.heads)."""
    if wrap.form == "hash":
        return (
            "    (its text is kept: bash or zsh find a program of corral's for its command\n"
            "    word, which runs the supervisor; where they cannot (a function of yours in\n"
            "    the list, the word not on PATH, another shell), the list runs as written)\n"
        )
    if wrap.shim:
        return (
            "    (its text is kept: bash finds a program of corral's for its command word,\n"
            "    which runs the supervisor; where it cannot (a function of yours in the\n"
            "    list, the word not on PATH) or in zsh, a function of that word does, and\n"
            "    bash's notice of it killed by a signal then names the supervisor)\n"
        )
    if wrap.form == "child":
        return (
            "    (its text is kept: a function of its command word runs the supervisor in\n"
            "    its place; in bash the list's own process runs it as a command of its\n"
            "    own, and names the supervisor if it is killed by a signal)\n"
        )
    return (
        "    (its text is kept, so the shell's job notices name it as written: a\n"
        "    function of its command word runs the supervisor in its place)\n"
    )
