"""A small terminal line plot: improvement over steps (or a normalized score over seconds or
tokens), one marker per model. Plain text and no Textual, so the workbench's screens and the
headless CLI (``labcoat report compute --plot``) draw the same charts."""

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
               empty: str = EMPTY, zero: bool = True,
               x_range: tuple[float, float] | None = None) -> str:
    """Plot (x, value) series on a character grid with a y-axis and a legend.

    Pure text so it renders in any terminal, in snapshots, and in tests. ``x_label`` and
    ``y_label`` write the axes' end values (steps and percentages by default). ``zero``: the
    y-axis reaches 0 (improvements); False fits it to the values (scores such as an accuracy
    between 0.84 and 0.87, which a 0-based axis would flatten), with the 0 line only where it
    falls inside. ``x_range``: the x-axis's ends (default: the points' own), so series sampled
    once per column from a fixed start fill every column. A series with no points keeps its
    marker (so the same names get the same markers on several charts) but has no legend entry.
    """
    points = [(x, y) for pts in series.values() for x, y in pts]
    if not points:
        return empty
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1 = x_range if x_range is not None else (min(xs), max(xs))
    y0, y1 = (min(min(ys), 0.0), max(max(ys), 0.0)) if zero else (min(ys), max(ys))
    if y1 - y0 < 1e-12:
        y1 = y0 + (1.0 if zero else max(abs(y0) * 0.01, 1e-6))
    grid = [[" "] * width for _ in range(height)]

    def cell(x: float, y: float) -> tuple[int, int]:
        col = 0 if x1 == x0 else round((x - x0) / (x1 - x0) * (width - 1))
        row = height - 1 - round((y - y0) / (y1 - y0) * (height - 1))
        return min(max(row, 0), height - 1), min(max(col, 0), width - 1)  # x_range may cut a point

    zero_row = cell(x0, 0.0)[0] if y0 <= 0.0 <= y1 else None
    if zero_row is not None:
        grid[zero_row] = ["┄"] * width
    for (name, pts), marker in zip(sorted(series.items()), MARKERS * 4, strict=False):
        for x, y in pts:
            r, c = cell(x, y)
            grid[r][c] = marker
    labels = {0: y_label(y1), height - 1: y_label(y0)}
    if zero_row is not None:
        labels[zero_row] = y_label(0.0).lstrip("+")
    pad = "\u00a0"  # terminals and Textual keep non-breaking spaces at a line's start
    lines = [labels.get(i, "").rjust(7, pad) + " │" + "".join(row) for i, row in enumerate(grid)]
    lines.append(pad * 8 + "└" + "─" * width)
    lines.append(pad * 9 + x_label(x0).ljust(width - 8) + x_label(x1))
    legend = "   ".join(f"{m} {name}" for name, m in zip(sorted(series), MARKERS * 4, strict=False)
                         if series[name])
    return "\n".join(lines + ["", legend])
