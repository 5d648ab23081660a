"""One way to print a benchmark figure: beside its target, as a ratio (≤ 1 is good); one
way to read a benchmark's `--quick`."""

from __future__ import annotations

import argparse


def row(name: str, figure: float, target: float | None, unit: str, better: str = "≤") -> None:
    """Print `figure` against `target` (`better` is "≤" or "≥"); no target: the figure only."""
    if target is None:
        print(f"{name:<56} {figure:9.3f} {unit}")
        return
    ratio = figure / target if better == "≤" else target / max(figure, 1e-9)
    print(f"{name:<56} {figure:9.3f} {unit:<3} target {better} {target:g} {unit:<3} "
          f"ratio {ratio:5.2f}")  # fmt: skip


def quick(doc: str | None) -> bool:
    """Parse a benchmark's command line, described by its docstring's first line: whether
    `--quick` (shorter runs, for a smoke check) was given."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs (for a smoke check)")
    return bool(parser.parse_args().quick)
