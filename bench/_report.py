"""One way to print a benchmark figure: beside its target, as a ratio (≤ 1 is good)."""

from __future__ import annotations


def row(name: str, figure: float, target: float | None, unit: str, better: str = "≤") -> None:
    """Print `figure` against `target` (`better` is "≤" or "≥"); no target: the figure only."""
    if target is None:
        print(f"{name:<56} {figure:9.3f} {unit}")
        return
    ratio = figure / target if better == "≤" else target / max(figure, 1e-9)
    print(f"{name:<56} {figure:9.3f} {unit:<3} target {better} {target:g} {unit:<3} "
          f"ratio {ratio:5.2f}")  # fmt: skip
