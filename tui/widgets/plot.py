"""A small terminal line plot: improvement over steps (or a normalized score over seconds or
tokens), one marker per model."""

from __future__ import annotations

from collections.abc import Callable

MARKERS = "●▲■◆✚✖★"
EMPTY = "No scored steps yet: run `labcoat score --all-steps` on these runs."


def step_label(x: float) -> str:
    return f"step {x}"


def percent(y: float) -> str:
    return f"{y:+.0%}"


def ascii_plot(series: dict[str, list[tuple[float, float]]], width: int = 60, height: int = 12, *,
               x_label: Callable[[float], str] = step_label, y_label: Callable[[float], str] = percent,
               empty: str = EMPTY) -> str:
    """Plot (x, value) series on a character grid with a y-axis and a legend.

    Pure text so it renders in any terminal, in snapshots, and in tests. ``x_label`` and
    ``y_label`` write the axes' end values (steps and percentages by default).
    """
    points = [(x, y) for pts in series.values() for x, y in pts]
    if not points:
        return empty
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(min(ys), 0.0), max(max(ys), 0.0)
    if y1 - y0 < 1e-12:
        y1 = y0 + 1.0
    grid = [[" "] * width for _ in range(height)]

    def cell(x: float, y: float) -> tuple[int, int]:
        col = 0 if x1 == x0 else round((x - x0) / (x1 - x0) * (width - 1))
        row = height - 1 - round((y - y0) / (y1 - y0) * (height - 1))
        return row, col

    zero_row, _ = cell(x0, 0.0)
    grid[zero_row] = ["┄"] * width
    for (name, pts), marker in zip(sorted(series.items()), MARKERS * 4, strict=False):
        for x, y in pts:
            r, c = cell(x, y)
            grid[r][c] = marker
    labels = {0: y_label(y1), height - 1: y_label(y0), zero_row: y_label(0.0).lstrip("+")}
    pad = "\u00a0"  # terminals and Textual keep non-breaking spaces at a line's start
    lines = [labels.get(i, "").rjust(7, pad) + " │" + "".join(row) for i, row in enumerate(grid)]
    lines.append(pad * 8 + "└" + "─" * width)
    lines.append(pad * 9 + x_label(x0).ljust(width - 8) + x_label(x1))
    legend = "   ".join(f"{m} {name}" for name, m in zip(sorted(series), MARKERS * 4, strict=False))
    return "\n".join(lines + ["", legend])
